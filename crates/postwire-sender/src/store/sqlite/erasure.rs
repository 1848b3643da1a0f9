//! Erasure of one subject's payloads (a post's or an account's events), for a
//! data-protection request.
//!
//! One write transaction replaces each event's body by the tombstone (an empty body and
//! `erased_at`; its external-id key goes too), cancels the event's unfinished deliveries
//! (state 6, finished), and in each (subscription, key) queue left without a head makes
//! the earliest waiting delivery the head, as a final outcome does (`outcomes.rs`).
//! After the commit the bodies also leave memory (the first-claim cache, `fresh.rs`)
//! and the files: the writer connection runs with `secure_delete=ON`, so the bytes a
//! shorter body frees in its page (or an overflow page it frees) are zeroed, and a
//! truncating checkpoint copies the new pages into the database file and empties the
//! WAL, whose older page versions held the body.

use std::collections::BTreeSet;

use postwire_core::Timestamp;
use rusqlite::{OptionalExtension, Transaction, params};

use super::queue::PROMOTE_SQL;
use super::*;
use crate::model::{Erased, ErasureSubject};
use crate::store::{BoxFuture, StoreResult};

/// The events of workspace ?1 about post ?2 whose payload is still stored.
pub(super) const POST_EVENTS_SQL: &str =
    "SELECT seq FROM events WHERE workspace_id = ?1 AND post_id = ?2 AND erased_at IS NULL ORDER BY seq";
/// The events of workspace ?1 about account ?2 whose payload is still stored.
pub(super) const ACCOUNT_EVENTS_SQL: &str =
    "SELECT seq FROM events WHERE workspace_id = ?1 AND account_id = ?2 AND erased_at IS NULL ORDER BY seq";

/// The tombstone: what an erased event keeps is its row without body or external key.
const TOMBSTONE_SQL: &str = "UPDATE events SET body = '', external_key = NULL, erased_at = ?2 WHERE seq = ?1";

/// Cancels the unfinished deliveries of event ?1 at ?2; returns them.
pub(super) const CANCEL_SQL: &str = "UPDATE deliveries SET state = 6, finished_at = ?2
     WHERE event_seq = ?1 AND finished_at IS NULL RETURNING seq, sub_seq, okey";

/// Does (subscription ?1, key ?2) still have a head (a pending delivery, maybe in flight)?
const HAS_HEAD_SQL: &str = "SELECT 1 FROM deliveries INDEXED BY deliveries_open
     WHERE sub_seq = ?1 AND okey = ?2 AND finished_at IS NULL AND state = 0 LIMIT 1";

/// What the write tells the caller to do after the commit: the cancelled delivery rows
/// (out of the first-claim cache) and the subscriptions with a new head (due now).
struct Done {
    erased: Erased,
    cancelled: Vec<i64>,
    became_due: BTreeSet<i64>,
}

fn erase(tx: &Transaction<'_>, workspace_id: &str, subject: &ErasureSubject, now_ms: i64) -> rusqlite::Result<Done> {
    let (sql, id) = match subject {
        ErasureSubject::Post(id) => (POST_EVENTS_SQL, id),
        ErasureSubject::Integration(id) => (ACCOUNT_EVENTS_SQL, id),
    };
    let events: Vec<i64> = tx
        .prepare_cached(sql)?
        .query_map(params![workspace_id, id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut tombstone = tx.prepare_cached(TOMBSTONE_SQL)?;
    let mut cancel = tx.prepare_cached(CANCEL_SQL)?;
    let mut cancelled = Vec::new();
    let mut queues: BTreeSet<(i64, i64)> = BTreeSet::new();
    for seq in &events {
        tombstone.execute(params![seq, now_ms])?;
        let rows = cancel.query_map(params![seq, now_ms], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, Option<i64>>(2)?))
        })?;
        for row in rows {
            let (delivery, sub, okey) = row?;
            cancelled.push(delivery);
            if let Some(k) = okey {
                queues.insert((sub, k));
            }
        }
    }
    // Each queue that lost its head: the next waiting delivery heads it now (a paused
    // subscription's are all held, and resume orders them).
    let mut became_due = BTreeSet::new();
    let mut has_head = tx.prepare_cached(HAS_HEAD_SQL)?;
    let mut paused = tx.prepare_cached("SELECT paused_reason IS NOT NULL FROM subscriptions WHERE seq = ?1")?;
    let mut promote = tx.prepare_cached(PROMOTE_SQL)?;
    for (sub, k) in queues {
        // A subscription that is gone has no queue to move on.
        let is_paused: bool = paused.query_row([sub], |r| r.get(0)).optional()?.unwrap_or(true);
        if is_paused || has_head.exists(params![sub, k])? {
            continue;
        }
        if promote.execute(params![sub, k, PENDING, now_ms])? > 0 {
            became_due.insert(sub);
        }
    }
    Ok(Done {
        erased: Erased {
            events: events.len() as u64,
            cancelled: cancelled.len() as u64,
        },
        cancelled,
        became_due,
    })
}

pub(super) fn erase_payloads(
    store: &SqliteStore,
    workspace_id: String,
    subject: ErasureSubject,
    now: Timestamp,
) -> BoxFuture<'_, StoreResult<Erased>> {
    let now_ms = now.unix_millis();
    let (hints, fresh) = (store.due.clone(), store.fresh.clone());
    let write = store.write_then(
        move |tx| erase(tx, &workspace_id, &subject, now_ms),
        move |done| {
            let mut fresh = fresh.lock().unwrap_or_else(|p| p.into_inner());
            for row in &done.cancelled {
                fresh.take(*row);
            }
            drop(fresh);
            let mut hints = hints.lock().unwrap_or_else(|p| p.into_inner());
            for sub in &done.became_due {
                hints.lower(*sub, now_ms);
            }
            done.erased
        },
    );
    Box::pin(async move {
        let erased = write.await?;
        // The WAL's older versions of the pages still hold the bodies: copy the new
        // pages into the file and empty the log (waits for readers on older snapshots,
        // up to the busy timeout). Also on a repeat, which so finishes what an earlier
        // call's checkpoint could not.
        let busy: i64 = store
            .read(|c| c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0)))
            .await?;
        if busy != 0 {
            tracing::warn!("the checkpoint after an erasure could not finish; erase again to empty the log");
        }
        Ok(erased)
    })
}
