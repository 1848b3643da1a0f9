//! Resend and recover: new attempt series of events a subscription already had.
//!
//! A resend adds a new delivery row for the same event (so the same `webhook-id` and
//! body) to the same subscription, with the same ordering key, placed exactly like a
//! freshly published delivery ([`crate::ordering::place`]): the head of its queue when
//! its key has nothing unfinished, waiting behind the key's unfinished deliveries
//! otherwise, held while the subscription is paused. The original row keeps its
//! attempts, so the delivery log shows both series. Recover does the same for every
//! failed delivery of a subscription finished since a time, oldest first, bounded,
//! skipping deliveries that were resent or recovered already (a resent delivery names
//! its new delivery in `resent_as`), so running recover twice queues nothing the
//! second time. Recover reads the partial index of failed deliveries only. An event
//! whose payload was erased is never sent again: its resend is refused, recover skips it.

use std::sync::atomic::Ordering;

use postwire_core::Timestamp;
use rusqlite::{OptionalExtension, Transaction, params};

use super::queue::KEY_OPEN_SQL;
use super::*;
use crate::model::DeliveryId;
use crate::ordering::{self, Placement};
use crate::routing::Routed;
use crate::store::{BoxFuture, RequeueError, StoreResult};

/// Failed deliveries of subscription ?1 finished at or after ?2, not resent yet, in
/// the order they finished, skipping those whose payload was erased, at most ?3 (the partial index `deliveries_failed`; the
/// state is a literal so that SQLite may use it). Deliveries of one ordering key finish
/// in publish order (only a queue's head is attempted), so this keeps each key's order.
pub(super) const RECOVERABLE_SQL: &str = "SELECT seq, event_seq, okey FROM deliveries INDEXED BY deliveries_failed
     WHERE sub_seq = ?1 AND state = 3 AND finished_at >= ?2 AND resent_as IS NULL
       AND NOT EXISTS (SELECT 1 FROM events e WHERE e.seq = event_seq AND e.erased_at IS NOT NULL)
     ORDER BY finished_at, seq LIMIT ?3";

/// Delivery ?1 was resent as delivery ?2.
const MARK_RESENT_SQL: &str = "UPDATE deliveries SET resent_as = ?2 WHERE seq = ?1";

/// Adds a new delivery of event `event_seq` with key `okey` to subscription `sub`,
/// placed as a new one; returns its row and whether it is a due head.
fn requeue(
    tx: &Transaction<'_>,
    next_delivery: &AtomicI64,
    sub: i64,
    paused: bool,
    event_seq: i64,
    okey: Option<i64>,
    now_ms: i64,
) -> rusqlite::Result<(i64, bool)> {
    let routed = if paused { Routed::Hold } else { Routed::Deliver };
    let has_unfinished = match okey {
        Some(k) if !paused => tx.prepare_cached(KEY_OPEN_SQL)?.exists(params![sub, k])?,
        _ => false,
    };
    let state = match ordering::place(routed, has_unfinished) {
        Placement::Head => PENDING,
        Placement::Waiting => WAITING,
        Placement::Held => HELD,
    };
    let seq = next_delivery.fetch_add(1, Ordering::Relaxed);
    tx.prepare_cached(
        "INSERT INTO deliveries (seq, sub_seq, event_seq, okey, state, due_at, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![seq, sub, event_seq, okey, state, now_ms, now_ms])?;
    Ok((seq, state == PENDING))
}

/// The row and pause state of subscription `id`.
fn subscription_row(tx: &Transaction<'_>, id: &str) -> rusqlite::Result<Option<(i64, bool)>> {
    tx.query_row(
        "SELECT seq, paused_reason IS NOT NULL FROM subscriptions WHERE id = ?1",
        [id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .optional()
}

pub(super) fn resend(
    store: &SqliteStore,
    subscription_id: String,
    delivery: DeliveryId,
    now: Timestamp,
) -> BoxFuture<'_, StoreResult<Result<DeliveryId, RequeueError>>> {
    let (hints, next_delivery) = (store.due.clone(), store.next_delivery.clone());
    let write = move |tx: &Transaction<'_>| {
        let Some((sub, paused)) = subscription_row(tx, &subscription_id)? else {
            return Ok(Err(RequeueError::NoSubscription));
        };
        let found: Option<(i64, Option<i64>, Option<i64>)> = tx
            .query_row(
                "SELECT event_seq, okey, finished_at FROM deliveries WHERE seq = ?1 AND sub_seq = ?2",
                params![delivery.0, sub],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        let Some((event_seq, okey, finished_at)) = found else {
            return Ok(Err(RequeueError::NoDelivery));
        };
        if finished_at.is_none() {
            return Ok(Err(RequeueError::Unfinished));
        }
        let erased: bool = tx.query_row(
            "SELECT erased_at IS NOT NULL FROM events WHERE seq = ?1",
            [event_seq],
            |r| r.get(0),
        )?;
        if erased {
            return Ok(Err(RequeueError::Erased));
        }
        let now_ms = now.unix_millis();
        let (seq, due) = requeue(tx, &next_delivery, sub, paused, event_seq, okey, now_ms)?;
        tx.prepare_cached(MARK_RESENT_SQL)?.execute(params![delivery.0, seq])?;
        Ok(Ok((seq, due.then_some(sub))))
    };
    store.write_then(write, move |out| {
        out.map(|(seq, due)| {
            if let Some(sub) = due {
                hints
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .lower(sub, now.unix_millis());
            }
            DeliveryId(seq)
        })
    })
}

pub(super) fn recover_failed(
    store: &SqliteStore,
    subscription_id: String,
    since: Timestamp,
    now: Timestamp,
    limit: usize,
) -> BoxFuture<'_, StoreResult<Option<u64>>> {
    let (hints, next_delivery) = (store.due.clone(), store.next_delivery.clone());
    let write = move |tx: &Transaction<'_>| {
        let Some((sub, paused)) = subscription_row(tx, &subscription_id)? else {
            return Ok(None);
        };
        // Failed deliveries finished since `since`, oldest first (per key, publish
        // order), not resent or recovered already.
        let failed: Vec<(i64, i64, Option<i64>)> = tx
            .prepare_cached(RECOVERABLE_SQL)?
            .query_map(params![sub, since.unix_millis(), limit as i64], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let now_ms = now.unix_millis();
        let mut any_due = false;
        let mut mark = tx.prepare_cached(MARK_RESENT_SQL)?;
        for (old, event_seq, okey) in &failed {
            let (seq, due) = requeue(tx, &next_delivery, sub, paused, *event_seq, *okey, now_ms)?;
            mark.execute(params![old, seq])?;
            any_due |= due;
        }
        Ok(Some((failed.len() as u64, any_due.then_some(sub))))
    };
    store.write_then(write, move |out| {
        out.map(|(n, due)| {
            if let Some(sub) = due {
                hints
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .lower(sub, now.unix_millis());
            }
            n
        })
    })
}
