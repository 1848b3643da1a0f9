//! Erasure of one subject's payloads on PostgreSQL: the SQLite store's `erasure.rs`,
//! with the locks of a queue move and a `VACUUM` for the old row versions.
//!
//! The transaction first locks the workspace's subscription rows `FOR UPDATE`, in row
//! order, like a recovery: no publish, resend or outcome moves their queues meanwhile,
//! and a resend that already holds its subscription's row finishes first (so it never
//! waits on an event row this transaction holds while holding a row this one needs).
//! Then each event's body becomes the tombstone, its unfinished deliveries are
//! cancelled (their `queue_heads` rows go, a lease in flight included: its outcome
//! changes nothing, as for any finished delivery), and each queue left without a head
//! gets the next waiting delivery as head, with its row.
//!
//! An `UPDATE` in PostgreSQL writes a new row version and leaves the old one, body
//! included, in the table's pages until a vacuum prunes it. So after the commit the
//! store runs `VACUUM events`, which prunes the versions no snapshot can see any more
//! (one older transaction still open keeps them until it ends; a repeated erasure runs
//! the vacuum again): no query, backup by `pg_dump` or logical replica sees the bodies
//! after that. PostgreSQL does not zero the space a pruned version took, though: its
//! bytes stay in the table's data file until new rows reuse the space. Removing them
//! from the files takes `VACUUM FULL events` (a rewrite of the table under an exclusive
//! lock: publishes wait for it), which the docs give as a maintenance step; the
//! backend's tests check both facts. Outside the table's files: the write-ahead log
//! segments that recorded the original insert (recycled after later checkpoints, or
//! kept by WAL archiving and replication slots), physical standbys until they replay,
//! and backups.

use std::collections::BTreeSet;

use super::queue::notify_due;
use super::*;
use crate::model::{Erased, ErasureSubject};

/// Locks the workspace $1's subscriptions in row order; returns each with whether it is
/// paused.
const LOCK_SUBSCRIPTIONS_SQL: &str =
    "SELECT seq, paused_reason IS NOT NULL FROM subscriptions WHERE workspace_id = $1 ORDER BY seq FOR UPDATE";

/// The tombstone for the events of workspace $1 about post $2 still holding a body, at $3.
const ERASE_POST_SQL: &str = "UPDATE events SET body = '', external_key = NULL, erased_at = $3
     WHERE workspace_id = $1 AND post_id = $2 AND erased_at IS NULL RETURNING seq";
/// The tombstone for the events of workspace $1 about account $2, at $3.
const ERASE_ACCOUNT_SQL: &str = "UPDATE events SET body = '', external_key = NULL, erased_at = $3
     WHERE workspace_id = $1 AND account_id = $2 AND erased_at IS NULL RETURNING seq";

/// Cancels the unfinished deliveries of the events $1 at $2, and deletes their queue
/// heads; returns the cancelled ones.
const CANCEL_SQL: &str = "WITH c AS (
         UPDATE deliveries SET state = 6, finished_at = $2
         WHERE event_seq = ANY($1::bigint[]) AND finished_at IS NULL RETURNING seq, sub_seq, okey),
     gone AS (DELETE FROM queue_heads WHERE delivery_seq IN (SELECT seq FROM c))
     SELECT seq, sub_seq, okey FROM c";

/// In each queue (subscription $1[i], key $2[i]) without a head, the earliest waiting
/// delivery becomes the head, due at $3, with its `queue_heads` row; returns how many.
const PROMOTE_SQL: &str =
    "WITH k AS (SELECT DISTINCT sub, okey FROM unnest($1::bigint[], $2::bigint[]) AS k(sub, okey)),
     promoted AS (
         UPDATE deliveries SET state = 0, due_at = $3 WHERE seq IN (
             SELECT (SELECT w.seq FROM deliveries w
                     WHERE w.sub_seq = k.sub AND w.okey = k.okey AND w.finished_at IS NULL AND w.state = 5
                     ORDER BY w.seq LIMIT 1)
             FROM k
             WHERE NOT EXISTS (SELECT 1 FROM deliveries h
                               WHERE h.sub_seq = k.sub AND h.okey = k.okey AND h.finished_at IS NULL
                                 AND h.state = 0))
         RETURNING seq, sub_seq, due_at, event_seq, attempts, created_at),
     heads AS (
         INSERT INTO queue_heads (delivery_seq, sub_seq, due_at, event_seq, attempts, created_at)
         SELECT * FROM promoted)
     SELECT count(*) FROM promoted";

pub(super) async fn erase_payloads(
    store: &PostgresStore,
    workspace_id: String,
    subject: ErasureSubject,
    now: Timestamp,
) -> StoreResult<Erased> {
    let now_ms = now.unix_millis();
    let erased = store
        .run("erase payloads", move |mut c: Client| {
            let (workspace_id, subject) = (workspace_id.clone(), subject.clone());
            Box::pin(async move {
                let tx = c.transaction().await?;
                let mut unpaused = BTreeSet::new();
                for r in tx.query(LOCK_SUBSCRIPTIONS_SQL, &[&workspace_id]).await? {
                    if !r.try_get::<_, bool>(1)? {
                        unpaused.insert(r.try_get::<_, i64>(0)?);
                    }
                }
                let (sql, id) = match &subject {
                    ErasureSubject::Post(id) => (ERASE_POST_SQL, id),
                    ErasureSubject::Integration(id) => (ERASE_ACCOUNT_SQL, id),
                };
                let events: Vec<i64> = tx
                    .query(sql, &[&workspace_id, id, &now_ms])
                    .await?
                    .iter()
                    .map(|r| r.try_get(0))
                    .collect::<Result<_, _>>()?;
                let cancelled = tx.query(CANCEL_SQL, &[&events, &now_ms]).await?;
                // The queues that may have lost their head (a paused subscription's
                // deliveries are all held; resume orders them).
                let (mut subs, mut keys) = (Vec::new(), Vec::new());
                for r in &cancelled {
                    let (sub, okey): (i64, Option<i64>) = (r.try_get(1)?, r.try_get(2)?);
                    if let Some(k) = okey
                        && unpaused.contains(&sub)
                    {
                        subs.push(sub);
                        keys.push(k);
                    }
                }
                if !subs.is_empty() {
                    let promoted: i64 = tx.query_one(PROMOTE_SQL, &[&subs, &keys, &now_ms]).await?.try_get(0)?;
                    if promoted > 0 {
                        notify_due(&tx).await?;
                    }
                }
                tx.commit().await.map_err(PgErr::Commit)?;
                Ok(Erased {
                    events: events.len() as u64,
                    cancelled: cancelled.len() as u64,
                })
            })
        })
        .await?;
    // The old row versions still hold the bodies: prune them (also on a repeat, which so
    // finishes what an earlier vacuum could not).
    if let Err(e) = store
        .run("vacuum events after an erasure", |c: Client| {
            Box::pin(async move {
                c.batch_execute("VACUUM events").await?;
                Ok(())
            })
        })
        .await
    {
        tracing::warn!(error = %e, "the vacuum after an erasure failed; erase again to run it again");
    }
    Ok(erased)
}
