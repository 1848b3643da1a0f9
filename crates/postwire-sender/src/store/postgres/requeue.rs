//! Resend and recover on PostgreSQL: the SQLite store's `requeue.rs`, with the locks of
//! an enqueue. A resend is placed like a publish: it takes the subscription's row `FOR
//! SHARE` (a pause waits for it, and it for a pause) and the advisory lock of its
//! (subscription, key) queue before it looks whether the key is open, so a concurrent
//! publish, resend or outcome of another process cannot give the queue two heads. A
//! recovery (up to [`MAX_RECOVER`](crate::sender::MAX_RECOVER) deliveries, each in a
//! queue of its own, more than PostgreSQL's lock table holds) locks the subscription's
//! row `FOR UPDATE` instead, which keeps every other placement out of all its queues.

use deadpool_postgres::Transaction;

use super::queue::{INSERT_DELIVERY_SQL, KEY_OPEN_SQL, QueueLocking, notify_due, queue_lock};
use super::*;
use crate::model::DeliveryId;
use crate::ordering::{self, Placement};
use crate::routing::Routed;
use crate::store::RequeueError;

/// Failed deliveries of subscription $1 finished at or after $2, not resent yet, in the
/// order they finished, skipping those whose payload was erased, at most $3 (the partial
/// index `deliveries_failed`).
const RECOVERABLE_SQL: &str = "SELECT seq, event_seq, okey FROM deliveries
     WHERE sub_seq = $1 AND state = 3 AND finished_at >= $2 AND resent_as IS NULL
       AND NOT EXISTS (SELECT 1 FROM events e WHERE e.seq = event_seq AND e.erased_at IS NOT NULL)
     ORDER BY finished_at, seq LIMIT $3 FOR UPDATE";

/// Delivery $1 was resent as delivery $2.
const MARK_RESENT_SQL: &str = "UPDATE deliveries SET resent_as = $2 WHERE seq = $1";

/// The row and pause state of subscription `id`, locked against a pause or a resume
/// (`FOR SHARE`), or against every other placement too (`FOR UPDATE`).
async fn subscription_row(tx: &Transaction<'_>, id: &str, locking: QueueLocking) -> Result<Option<(i64, bool)>, PgErr> {
    let st = tx
        .prepare_cached(match locking {
            QueueLocking::PerQueue => {
                "SELECT seq, paused_reason IS NOT NULL FROM subscriptions WHERE id = $1 FOR SHARE"
            }
            QueueLocking::WholeSubscriptions => {
                "SELECT seq, paused_reason IS NOT NULL FROM subscriptions WHERE id = $1 FOR UPDATE"
            }
        })
        .await?;
    Ok(match tx.query_opt(&st, &[&id]).await? {
        Some(r) => Some((r.try_get(0)?, r.try_get(1)?)),
        None => None,
    })
}

/// Adds a new delivery of event `event_seq` with key `okey` to subscription `sub`
/// (whose row the transaction locked as `locking` says), placed as a new one; returns
/// its row and whether it is a due head.
async fn requeue(
    tx: &Transaction<'_>,
    (sub, locking): (i64, QueueLocking),
    paused: bool,
    event_seq: i64,
    okey: Option<i64>,
    now_ms: i64,
) -> Result<(i64, bool), PgErr> {
    let routed = if paused { Routed::Hold } else { Routed::Deliver };
    let has_unfinished = match okey {
        Some(k) if !paused => {
            if locking == QueueLocking::PerQueue {
                tx.execute("SELECT pg_advisory_xact_lock($1)", &[&queue_lock(sub, k)])
                    .await?;
            }
            let st = tx.prepare_cached(KEY_OPEN_SQL).await?;
            tx.query_opt(&st, &[&sub, &k]).await?.is_some()
        }
        _ => false,
    };
    let state = match ordering::place(routed, has_unfinished) {
        Placement::Head => PENDING,
        Placement::Waiting => WAITING,
        Placement::Held => HELD,
    };
    let st = tx.prepare_cached(INSERT_DELIVERY_SQL).await?;
    let seq: i64 = tx
        .query_one(&st, &[&sub, &event_seq, &okey, &state, &now_ms])
        .await?
        .try_get(0)?;
    Ok((seq, state == PENDING))
}

pub(super) async fn resend(
    store: &PostgresStore,
    subscription_id: String,
    delivery: DeliveryId,
    now: Timestamp,
) -> StoreResult<Result<DeliveryId, RequeueError>> {
    store
        .run("resend", move |mut c: Client| {
            let subscription_id = subscription_id.clone();
            Box::pin(async move {
                let tx = c.transaction().await?;
                let Some((sub, paused)) = subscription_row(&tx, &subscription_id, QueueLocking::PerQueue).await? else {
                    return Ok(Err(RequeueError::NoSubscription));
                };
                let st = tx
                    .prepare_cached(
                        "SELECT event_seq, okey, finished_at FROM deliveries WHERE seq = $1 AND sub_seq = $2 FOR UPDATE",
                    )
                    .await?;
                let Some(row) = tx.query_opt(&st, &[&delivery.0, &sub]).await? else {
                    return Ok(Err(RequeueError::NoDelivery));
                };
                let (event_seq, okey, finished_at): (i64, Option<i64>, Option<i64>) =
                    (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
                if finished_at.is_none() {
                    return Ok(Err(RequeueError::Unfinished));
                }
                // Waits for an erasure of the event in progress (it holds the row).
                let st = tx
                    .prepare_cached("SELECT erased_at IS NOT NULL FROM events WHERE seq = $1 FOR SHARE")
                    .await?;
                if tx.query_one(&st, &[&event_seq]).await?.try_get::<_, bool>(0)? {
                    return Ok(Err(RequeueError::Erased));
                }
                let (seq, due) = requeue(
                    &tx,
                    (sub, QueueLocking::PerQueue),
                    paused,
                    event_seq,
                    okey,
                    now.unix_millis(),
                )
                .await?;
                let mark = tx.prepare_cached(MARK_RESENT_SQL).await?;
                tx.execute(&mark, &[&delivery.0, &seq]).await?;
                if due {
                    notify_due(&tx).await?;
                }
                tx.commit().await.map_err(PgErr::Commit)?;
                Ok(Ok(DeliveryId(seq)))
            })
        })
        .await
}

pub(super) async fn recover_failed(
    store: &PostgresStore,
    subscription_id: String,
    since: Timestamp,
    now: Timestamp,
    limit: usize,
) -> StoreResult<Option<u64>> {
    store
        .run("recover failed deliveries", move |mut c: Client| {
            let subscription_id = subscription_id.clone();
            Box::pin(async move {
                let tx = c.transaction().await?;
                let locking = QueueLocking::WholeSubscriptions;
                let Some((sub, paused)) = subscription_row(&tx, &subscription_id, locking).await? else {
                    return Ok(None);
                };
                let st = tx.prepare_cached(RECOVERABLE_SQL).await?;
                let limit = bigint(limit);
                let failed = tx.query(&st, &[&sub, &since.unix_millis(), &limit]).await?;
                let mark = tx.prepare_cached(MARK_RESENT_SQL).await?;
                let now_ms = now.unix_millis();
                let mut any_due = false;
                for r in &failed {
                    let (old, event_seq, okey): (i64, i64, Option<i64>) = (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?);
                    let (seq, due) = requeue(&tx, (sub, locking), paused, event_seq, okey, now_ms).await?;
                    tx.execute(&mark, &[&old, &seq]).await?;
                    any_due |= due;
                }
                if any_due {
                    notify_due(&tx).await?;
                }
                tx.commit().await.map_err(PgErr::Commit)?;
                Ok(Some(failed.len() as u64))
            })
        })
        .await
}
