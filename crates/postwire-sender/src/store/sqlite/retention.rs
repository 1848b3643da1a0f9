//! Retention: removing finished deliveries, their attempts, and events no delivery
//! refers to any more, once they are older than the retention period.
//!
//! One call removes at most one batch of each, in one short write transaction, so the
//! dispatcher's writes (which share the connection thread) wait for at most one batch.
//! Deliveries are found through the partial index on `finished_at` (only finished ones
//! have it), so a call costs the same however many live deliveries there are. Events go
//! when no delivery refers to them (index `deliveries_event`) and they were created
//! before the cut-off; candidates are the events before the first one created at or
//! after the cut-off (event rows are written in creation order), so a call reads only
//! the old end of the table. Held, pending and waiting deliveries are never removed, nor
//! the events they refer to.

use rusqlite::params;

use super::SqliteStore;
use crate::store::{BoxFuture, Purged, StoreResult};

pub(super) fn purge(
    store: &SqliteStore,
    finished_before_ms: i64,
    events_before_ms: i64,
    batch: usize,
) -> BoxFuture<'_, StoreResult<Purged>> {
    let batch = batch.clamp(1, 100_000) as i64;
    store.write(move |tx| {
        let seqs: Vec<i64> = tx
            .prepare_cached("SELECT seq FROM deliveries WHERE finished_at < ?1 ORDER BY finished_at LIMIT ?2")?
            .query_map(params![finished_before_ms, batch], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        let mut attempts = 0u64;
        let mut deliveries = 0u64;
        {
            let mut del_attempts = tx.prepare_cached("DELETE FROM attempts WHERE delivery_seq = ?1")?;
            let mut del_delivery = tx.prepare_cached("DELETE FROM deliveries WHERE seq = ?1")?;
            for seq in &seqs {
                attempts += del_attempts.execute([seq])? as u64;
                deliveries += del_delivery.execute([seq])? as u64;
            }
        }
        let bound: i64 = tx
            .prepare_cached(
                "SELECT COALESCE((SELECT seq FROM events WHERE created_at >= ?1 ORDER BY seq LIMIT 1),
                                 (SELECT COALESCE(MAX(seq), 0) + 1 FROM events))",
            )?
            .query_row([events_before_ms], |r| r.get(0))?;
        let events = tx
            .prepare_cached(
                "DELETE FROM events WHERE seq IN (
                SELECT e.seq FROM events e
                WHERE e.seq < ?1 AND e.created_at < ?2
                  AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_seq = e.seq)
                ORDER BY e.seq LIMIT ?3)",
            )?
            .execute(params![bound, events_before_ms, batch])? as u64;
        let notifications = tx
            .prepare_cached(
                "DELETE FROM notifications WHERE id IN (
                     SELECT id FROM notifications WHERE created_at < ?1 AND relayed_at IS NOT NULL ORDER BY id LIMIT ?2)",
            )?
            .execute(params![events_before_ms, batch])? as u64;
        Ok(Purged {
            deliveries,
            attempts,
            events,
            notifications,
        })
    })
}
