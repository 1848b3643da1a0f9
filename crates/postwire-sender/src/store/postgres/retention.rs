//! Retention on PostgreSQL: the SQLite store's `retention.rs` in two statements. One
//! call removes at most one batch of finished deliveries (with their attempts) and one
//! batch of events no delivery refers to, in one short transaction. Several processes
//! may purge at once: a row deleted by one is simply not counted by the other. Held,
//! pending and waiting deliveries are never removed, nor the events they refer to (a
//! resend that is adding a delivery to an old event locks the delivery it copies, so the
//! event's last reference cannot go first).

use super::*;
use crate::store::Purged;

pub(super) async fn purge(
    store: &PostgresStore,
    finished_before: Timestamp,
    events_before: Timestamp,
    batch: usize,
) -> StoreResult<Purged> {
    let batch = batch.clamp(1, 100_000) as i64;
    let (finished_ms, events_ms) = (finished_before.unix_millis(), events_before.unix_millis());
    store
        .run("purge", move |mut c: Client| {
            Box::pin(async move {
                let tx = c.transaction().await?;
                let st = tx
                    .prepare_cached(
                        "WITH old AS (
                             SELECT seq FROM deliveries WHERE finished_at < $1 ORDER BY finished_at LIMIT $2
                             FOR UPDATE SKIP LOCKED),
                         a AS (DELETE FROM attempts WHERE delivery_seq IN (SELECT seq FROM old) RETURNING 1),
                         d AS (DELETE FROM deliveries WHERE seq IN (SELECT seq FROM old) RETURNING 1)
                         SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM a)",
                    )
                    .await?;
                let row = tx.query_one(&st, &[&finished_ms, &batch]).await?;
                let (deliveries, attempts): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
                // Events are written in creation order: candidates are the ones before
                // the first event created at or after the cut-off.
                let st = tx
                    .prepare_cached(
                        "DELETE FROM events WHERE seq IN (
                             SELECT e.seq FROM events e
                             WHERE e.seq < COALESCE((SELECT seq FROM events WHERE created_at >= $1 ORDER BY seq LIMIT 1),
                                                    (SELECT COALESCE(MAX(seq), 0) + 1 FROM events))
                               AND e.created_at < $1
                               AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_seq = e.seq)
                             ORDER BY e.seq LIMIT $2)",
                    )
                    .await?;
                let events = tx.execute(&st, &[&events_ms, &batch]).await?;
                let st = tx
                    .prepare_cached(
                        "DELETE FROM notifications WHERE id IN (
                             SELECT id FROM notifications WHERE created_at < $1 AND relayed_at IS NOT NULL
                             ORDER BY id LIMIT $2)",
                    )
                    .await?;
                let notifications = tx.execute(&st, &[&events_ms, &batch]).await?;
                tx.commit().await.map_err(PgErr::Commit)?;
                Ok(Purged {
                    deliveries: deliveries.max(0) as u64,
                    attempts: attempts.max(0) as u64,
                    events,
                    notifications,
                })
            })
        })
        .await
}
