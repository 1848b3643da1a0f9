//! Recording attempts: attempt rows, delivery states, the promotion of the next
//! delivery of a queue when its head finishes, and subscription health with the pauses
//! it decides, all in the transaction of the batch.

use std::collections::HashMap;

use postwire_core::{SubscriptionRef, Timestamp};
use rusqlite::{OptionalExtension, Transaction, params};

use super::queue::{PROMOTE_SQL, hold_unfinished};
use super::*;
use crate::health::{Health, Verdict};
use crate::model::{AttemptOutcome, Notification};
use crate::notices;
use crate::ordering;
use crate::store::{BoxFuture, FinishedAttempt, NextState, StoreResult};

pub(super) fn record_attempts(
    store: &SqliteStore,
    attempts: Vec<FinishedAttempt>,
    now: Timestamp,
) -> BoxFuture<'_, StoreResult<Vec<Notification>>> {
    let leases = store.leases.clone();
    let recorded: Vec<i64> = attempts.iter().map(|a| a.delivery.0).collect();
    let due = store.due.clone();
    store.write_then(
        move |tx| record(tx, attempts, now),
        move |(noticed, became_due)| {
            // Committed: successors and retries may be claimed, and the leases have
            // done their job. (After a failed write the leases stay, and the
            // deliveries are attempted again when they end.)
            let mut due = due.lock().unwrap_or_else(|p| p.into_inner());
            for (sub, at) in became_due {
                due.lower(sub, at);
            }
            drop(due);
            let mut map = leases.lock().unwrap_or_else(|p| p.into_inner());
            for seq in recorded {
                map.remove(&seq);
            }
            noticed
        },
    )
}

/// A subscription of the batch: row, workspace, health, paused, name.
type Loaded = (i64, String, Health, bool, String);

/// What [`record`] tells the caller to do once committed: the subscriptions whose
/// queues may have something claimable (a successor, a retry), and from when.
pub(super) type BecameDue = Vec<(i64, i64)>;

/// Records finished attempts in `tx`: attempt rows, delivery states, health counters,
/// pauses by failures, and the notices of the health changes (`crate::notices`).
/// Returns the notices stored, and the queues to mark due once the write has committed.
pub(super) fn record(
    tx: &Transaction<'_>,
    attempts: Vec<FinishedAttempt>,
    now: Timestamp,
) -> rusqlite::Result<(Vec<Notification>, BecameDue)> {
    let mut became_due: BecameDue = Vec::new();
    let now_ms = now.unix_millis();
    // Subscription id -> its row, if it still exists.
    let mut subs: HashMap<String, Option<Loaded>> = HashMap::new();
    let mut noticed = Vec::new();
    let mut insert_attempt = tx.prepare_cached(
        "INSERT OR REPLACE INTO attempts (delivery_seq, number, started_at, duration_ms, status, error, body_prefix)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    // Only an unfinished delivery is changed: an outcome recorded twice (a lease that ran
    // out while the first write was slow) must not finish it twice, nor promote a second
    // successor, which would put two deliveries of one key in flight.
    let mut finish = tx.prepare_cached(
        "UPDATE deliveries SET state = ?2, attempts = ?3, finished_at = ?4
         WHERE seq = ?1 AND finished_at IS NULL RETURNING okey",
    )?;
    let mut retry = tx.prepare_cached(
        "UPDATE deliveries SET state = ?2, attempts = ?3, due_at = ?4 WHERE seq = ?1 AND finished_at IS NULL",
    )?;
    let mut promote = tx.prepare_cached(PROMOTE_SQL)?;
    for a in attempts {
        if !subs.contains_key(&a.subscription_id) {
            let loaded = tx
                .prepare_cached(
                    "SELECT seq, workspace_id, consecutive_failures, last_success_at, failing_since,
                       paused_reason IS NOT NULL, name, pause_warned FROM subscriptions WHERE id = ?1",
                )?
                .query_row([&a.subscription_id], |r| {
                    let health = Health {
                        consecutive_failures: r.get::<_, i64>(2)?.clamp(0, u32::MAX as i64) as u32,
                        last_success_at: opt_ts(r.get(3)?),
                        failing_since: opt_ts(r.get(4)?),
                        pause_warned: r.get(7)?,
                    };
                    Ok((r.get(0)?, r.get(1)?, health, r.get(5)?, r.get(6)?))
                })
                .optional()?;
            subs.insert(a.subscription_id.clone(), loaded);
        }
        // A deleted subscription took its deliveries with it: nothing to record.
        let Some(Some((seq, workspace_id, health, paused, name))) = subs.get_mut(&a.subscription_id) else {
            continue;
        };
        let (status, error, body) = match &a.outcome {
            AttemptOutcome::Response { status, body_prefix } => {
                (Some(*status as i64), None, Some(body_prefix.as_str()))
            }
            AttemptOutcome::Error { error } => (None, Some(error.as_str()), None),
        };
        insert_attempt.execute(params![
            a.delivery.0,
            a.attempt,
            a.started_at.unix_millis(),
            a.duration_ms as i64,
            status,
            error,
            body
        ])?;
        if ordering::ends_delivery(a.next) {
            let state = if a.next == NextState::Delivered {
                DELIVERED
            } else {
                FAILED
            };
            let finished: Option<Option<i64>> = finish
                .query_row(params![a.delivery.0, state, a.attempt, now_ms], |r| r.get(0))
                .optional()?;
            let Some(okey) = finished else { continue }; // finished already
            // Its successor, if any, heads the queue from now on: in this transaction.
            // (While paused, every unfinished delivery is held; resume orders them.)
            if let Some(k) = okey
                && !*paused
                && promote.execute(params![*seq, k, PENDING, now_ms])? > 0
            {
                became_due.push((*seq, now_ms));
            }
        } else if let NextState::RetryAt(at) = a.next {
            let state = if *paused { HELD } else { PENDING };
            if retry.execute(params![a.delivery.0, state, a.attempt, at.unix_millis()])? == 0 {
                continue; // finished already
            }
            if state == PENDING {
                became_due.push((*seq, at.unix_millis()));
            }
        }
        let verdict = Verdict::of(a.next);
        let (pause, changes) = health.apply_noting(verdict, a.started_at);
        let paused_now = pause.filter(|_| !*paused);
        if let Some(cause) = paused_now {
            *paused = true;
            tx.execute(
                "UPDATE subscriptions SET paused_reason = ?2 WHERE seq = ?1",
                params![*seq, cause.reason()],
            )?;
            hold_unfinished(tx, *seq)?;
        }
        let about = SubscriptionRef {
            id: a.subscription_id.clone(),
            name: name.clone(),
        };
        for n in notices::after_attempt(workspace_id, about, changes, paused_now, health, now).map_err(conversion)? {
            let id = super::notices::insert(tx, &n)?;
            noticed.push(n.stored(id));
        }
    }
    let mut save = tx.prepare_cached(
        "UPDATE subscriptions SET consecutive_failures = ?2, last_success_at = ?3, failing_since = ?4,
             pause_warned = ?5 WHERE seq = ?1",
    )?;
    for (seq, _, h, _, _) in subs.into_values().flatten() {
        save.execute(params![
            seq,
            h.consecutive_failures,
            h.last_success_at.map(|t| t.unix_millis()),
            h.failing_since.map(|t| t.unix_millis()),
            h.pause_warned
        ])?;
    }
    Ok((noticed, became_due))
}
