//! Resend and recover on PostgreSQL: the SQLite store's `requeue.rs`, with the locks of
//! an enqueue. A resend is placed like a publish: it takes the subscription's row `FOR
//! SHARE` (a pause waits for it, and it for a pause) and the advisory lock of its
//! (subscription, key) queue before it looks whether the key is open, so a concurrent
//! publish, resend or outcome of another process cannot give the queue two heads.

use deadpool_postgres::Transaction;

use super::queue::{INSERT_DELIVERY_SQL, KEY_OPEN_SQL, notify_due, queue_lock};
use super::*;
use crate::model::DeliveryId;
use crate::ordering::{self, Placement};
use crate::routing::Routed;
use crate::store::RequeueError;

/// Failed deliveries of subscription $1 finished at or after $2, not resent yet, in the
/// order they finished, at most $3 (the partial index `deliveries_failed`).
const RECOVERABLE_SQL: &str = "SELECT seq, event_seq, okey FROM deliveries
     WHERE sub_seq = $1 AND state = 3 AND finished_at >= $2 AND resent_as IS NULL
     ORDER BY finished_at, seq LIMIT $3 FOR UPDATE";

/// Delivery $1 was resent as delivery $2.
const MARK_RESENT_SQL: &str = "UPDATE deliveries SET resent_as = $2 WHERE seq = $1";

/// The row and pause state of subscription `id`, locked against a pause or a resume.
async fn subscription_row(tx: &Transaction<'_>, id: &str) -> Result<Option<(i64, bool)>, PgErr> {
    let st = tx
        .prepare_cached("SELECT seq, paused_reason IS NOT NULL FROM subscriptions WHERE id = $1 FOR SHARE")
        .await?;
    Ok(match tx.query_opt(&st, &[&id]).await? {
        Some(r) => Some((r.try_get(0)?, r.try_get(1)?)),
        None => None,
    })
}

/// Adds a new delivery of event `event_seq` with key `okey` to subscription `sub`,
/// placed as a new one; returns its row and whether it is a due head.
async fn requeue(
    tx: &Transaction<'_>,
    sub: i64,
    paused: bool,
    event_seq: i64,
    okey: Option<i64>,
    now_ms: i64,
) -> Result<(i64, bool), PgErr> {
    let routed = if paused { Routed::Hold } else { Routed::Deliver };
    let has_unfinished = match okey {
        Some(k) if !paused => {
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&queue_lock(sub, k)])
                .await?;
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
                let Some((sub, paused)) = subscription_row(&tx, &subscription_id).await? else {
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
                let (seq, due) = requeue(&tx, sub, paused, event_seq, okey, now.unix_millis()).await?;
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
                let Some((sub, paused)) = subscription_row(&tx, &subscription_id).await? else {
                    return Ok(None);
                };
                let st = tx.prepare_cached(RECOVERABLE_SQL).await?;
                let limit = limit.min(i64::MAX as usize) as i64;
                let failed = tx.query(&st, &[&sub, &since.unix_millis(), &limit]).await?;
                if !paused {
                    // The queues' locks in one order for every process, as a publish takes
                    // them (`requeue` takes each again, which costs nothing in the same
                    // transaction).
                    let mut locks = std::collections::BTreeSet::new();
                    for r in &failed {
                        if let Some(k) = r.try_get::<_, Option<i64>>(2)? {
                            locks.insert(queue_lock(sub, k));
                        }
                    }
                    let locks: Vec<i64> = locks.into_iter().collect();
                    tx.execute(
                        "SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) WITH ORDINALITY AS t(k, n) ORDER BY n",
                        &[&locks],
                    )
                    .await?;
                }
                let mark = tx.prepare_cached(MARK_RESENT_SQL).await?;
                let now_ms = now.unix_millis();
                let mut any_due = false;
                for r in &failed {
                    let (old, event_seq, okey): (i64, i64, Option<i64>) =
                        (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?);
                    let (seq, due) = requeue(&tx, sub, paused, event_seq, okey, now_ms).await?;
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
