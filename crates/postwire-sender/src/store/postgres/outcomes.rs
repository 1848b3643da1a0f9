//! Recording attempts: attempt rows, delivery states (leases cleared), the promotion of
//! the next delivery of a queue when its head finishes, and subscription health with
//! the pauses it decides, all in the transaction of the batch. The batch's subscription
//! rows are locked first (`FOR UPDATE`, in row order): health counters are read and
//! written by one process at a time, and no publish places a delivery in their queues
//! meanwhile.
//!
//! The statements act on the whole batch at once (arrays), so a batch costs the same few
//! round trips at any size. The end state is the one recording the attempts one by one
//! would leave: a successor promoted in a subscription that a later attempt of the batch
//! pauses is held by that pause, as it would have been held one by one.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::queue::{PROMOTE_MANY_SQL, hold_unfinished, notify_due};
use super::*;
use crate::health::{Health, Verdict};
use crate::model::{AttemptOutcome, Notification};
use crate::ordering;
use crate::store::NextState;

/// A subscription of the batch: row, workspace, health, paused.
type Loaded = (i64, String, Health, bool);

/// The batch as arrays, one per column of each statement.
#[derive(Default)]
struct Columns<'a> {
    seqs: Vec<i64>,
    numbers: Vec<i64>,
    started: Vec<i64>,
    durations: Vec<i64>,
    statuses: Vec<Option<i64>>,
    errors: Vec<Option<&'a str>>,
    bodies: Vec<Option<&'a str>>,
    end_seqs: Vec<i64>,
    end_states: Vec<i64>,
    end_attempts: Vec<i64>,
    retry_seqs: Vec<i64>,
    retry_states: Vec<i64>,
    retry_attempts: Vec<i64>,
    retry_due: Vec<i64>,
}

fn columns<'a>(attempts: &'a [FinishedAttempt], subs: &HashMap<String, Loaded>) -> Columns<'a> {
    let mut c = Columns::default();
    for a in attempts {
        // A deleted subscription took its deliveries with it: nothing to record.
        let Some((_, _, _, paused)) = subs.get(&a.subscription_id) else {
            continue;
        };
        let (status, error, body) = match &a.outcome {
            AttemptOutcome::Response { status, body_prefix } => {
                (Some(i64::from(*status)), None, Some(body_prefix.as_str()))
            }
            AttemptOutcome::Error { error } => (None, Some(error.as_str()), None),
        };
        c.seqs.push(a.delivery.0);
        c.numbers.push(i64::from(a.attempt));
        c.started.push(a.started_at.unix_millis());
        c.durations.push(a.duration_ms.min(i64::MAX as u64) as i64);
        c.statuses.push(status);
        c.errors.push(error);
        c.bodies.push(body);
        if ordering::ends_delivery(a.next) {
            c.end_seqs.push(a.delivery.0);
            c.end_states.push(if a.next == NextState::Delivered {
                DELIVERED
            } else {
                FAILED
            });
            c.end_attempts.push(i64::from(a.attempt));
        } else if let NextState::RetryAt(at) = a.next {
            c.retry_seqs.push(a.delivery.0);
            c.retry_states.push(if *paused { HELD } else { PENDING });
            c.retry_attempts.push(i64::from(a.attempt));
            c.retry_due.push(at.unix_millis());
        }
    }
    c
}

pub(super) async fn record_attempts(
    store: &PostgresStore,
    attempts: Vec<FinishedAttempt>,
    now: Timestamp,
) -> StoreResult<Vec<PausedByFailures>> {
    let attempts = Arc::new(attempts);
    store
        .run("record attempts", move |mut c: Client| {
            let attempts = attempts.clone();
            Box::pin(async move {
                let now_ms = now.unix_millis();
                let tx = c.transaction().await?;
                let mut ids: Vec<String> = attempts.iter().map(|a| a.subscription_id.clone()).collect();
                ids.sort();
                ids.dedup();
                let load = tx
                    .prepare_cached(
                        "SELECT id, seq, workspace_id, consecutive_failures, last_success_at, failing_since,
                           paused_reason IS NOT NULL FROM subscriptions WHERE id = ANY($1) ORDER BY seq FOR UPDATE",
                    )
                    .await?;
                let mut subs: HashMap<String, Loaded> = HashMap::new();
                for r in tx.query(&load, &[&ids]).await? {
                    let health = Health {
                        consecutive_failures: r.try_get::<_, i64>(3)?.clamp(0, u32::MAX as i64) as u32,
                        last_success_at: opt_ts(r.try_get(4)?),
                        failing_since: opt_ts(r.try_get(5)?),
                    };
                    subs.insert(r.try_get(0)?, (r.try_get(1)?, r.try_get(2)?, health, r.try_get(6)?));
                }
                let cols = columns(&attempts, &subs);
                if !cols.seqs.is_empty() {
                    let insert = tx
                        .prepare_cached(
                            "WITH ended AS (DELETE FROM leases WHERE delivery_seq = ANY($1))
                             INSERT INTO attempts (delivery_seq, number, started_at, duration_ms, status, error, body_prefix)
                             SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[],
                                                  $5::bigint[], $6::text[], $7::text[])
                             ON CONFLICT (delivery_seq, number) DO UPDATE SET started_at = excluded.started_at,
                               duration_ms = excluded.duration_ms, status = excluded.status,
                               error = excluded.error, body_prefix = excluded.body_prefix",
                        )
                        .await?;
                    tx.execute(
                        &insert,
                        &[
                            &cols.seqs,
                            &cols.numbers,
                            &cols.started,
                            &cols.durations,
                            &cols.statuses,
                            &cols.errors,
                            &cols.bodies,
                        ],
                    )
                    .await?;
                }
                // Only an unfinished delivery is changed: an outcome recorded twice (a
                // lease that ran out while the first write was slow) must not finish it
                // twice, nor promote a second successor.
                let mut changed: HashSet<i64> = HashSet::new();
                let (mut promote_subs, mut promote_keys) = (Vec::new(), Vec::new());
                if !cols.end_seqs.is_empty() {
                    let finish = tx
                        .prepare_cached(
                            "UPDATE deliveries d SET state = u.state, attempts = u.attempts, finished_at = $4
                             FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS u(seq, state, attempts)
                             WHERE d.seq = u.seq AND d.finished_at IS NULL
                             RETURNING d.seq, d.sub_seq, d.okey",
                        )
                        .await?;
                    let rows = tx
                        .query(&finish, &[&cols.end_seqs, &cols.end_states, &cols.end_attempts, &now_ms])
                        .await?;
                    for r in rows {
                        changed.insert(r.try_get(0)?);
                        let sub: i64 = r.try_get(1)?;
                        // Its successor, if any, heads the queue from now on: in this
                        // transaction. (While paused, every unfinished delivery is held.)
                        if let Some(k) = r.try_get::<_, Option<i64>>(2)?
                            && subs.values().any(|(seq, _, _, paused)| *seq == sub && !*paused)
                        {
                            promote_subs.push(sub);
                            promote_keys.push(k);
                        }
                    }
                }
                if !cols.retry_seqs.is_empty() {
                    let retry = tx
                        .prepare_cached(
                            "UPDATE deliveries d SET state = u.state, attempts = u.attempts, due_at = u.due
                             FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[])
                                  AS u(seq, state, attempts, due)
                             WHERE d.seq = u.seq AND d.finished_at IS NULL
                             RETURNING d.seq",
                        )
                        .await?;
                    let rows = tx
                        .query(
                            &retry,
                            &[&cols.retry_seqs, &cols.retry_states, &cols.retry_attempts, &cols.retry_due],
                        )
                        .await?;
                    for r in rows {
                        changed.insert(r.try_get(0)?);
                    }
                }
                let mut became_due_now = false;
                if !promote_subs.is_empty() {
                    let promote = tx.prepare_cached(PROMOTE_MANY_SQL).await?;
                    became_due_now = tx.execute(&promote, &[&promote_subs, &promote_keys, &now_ms]).await? > 0;
                }
                // Health, attempt by attempt in the batch's order (the rules are pure).
                let mut paused_now = Vec::new();
                for a in attempts.iter() {
                    let Some((seq, workspace_id, health, paused)) = subs.get_mut(&a.subscription_id) else {
                        continue;
                    };
                    // An outcome for a delivery finished already changes nothing (and a
                    // row counts once).
                    if !changed.remove(&a.delivery.0) {
                        continue;
                    }
                    if let Some(cause) = health.apply(Verdict::of(a.next), a.started_at)
                        && !*paused
                    {
                        *paused = true;
                        tx.execute(
                            "UPDATE subscriptions SET paused_reason = $2 WHERE seq = $1",
                            &[&*seq, &cause.reason()],
                        )
                        .await?;
                        hold_unfinished(&tx, *seq).await?;
                        let message = crate::health::pause_notice(&a.subscription_id, cause);
                        let id: i64 = tx
                            .query_one(
                                "INSERT INTO notifications (workspace_id, subscription_id, cause, message, created_at)
                                 VALUES ($1, $2, $3, $4, $5) RETURNING id",
                                &[&*workspace_id, &a.subscription_id, &cause.as_str(), &message, &now_ms],
                            )
                            .await?
                            .try_get(0)?;
                        paused_now.push(PausedByFailures {
                            notification: Notification {
                                id,
                                workspace_id: workspace_id.clone(),
                                subscription_id: a.subscription_id.clone(),
                                cause,
                                message,
                                created_at: now,
                            },
                            cause,
                        });
                    }
                }
                let (mut h_seq, mut h_failures, mut h_success, mut h_failing) =
                    (Vec::new(), Vec::new(), Vec::new(), Vec::new());
                for (seq, _, h, _) in subs.values() {
                    h_seq.push(*seq);
                    h_failures.push(i64::from(h.consecutive_failures));
                    h_success.push(h.last_success_at.map(|t| t.unix_millis()));
                    h_failing.push(h.failing_since.map(|t| t.unix_millis()));
                }
                if !h_seq.is_empty() {
                    let save = tx
                        .prepare_cached(
                            "UPDATE subscriptions s SET consecutive_failures = u.failures,
                               last_success_at = u.success, failing_since = u.failing
                             FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[])
                                  AS u(seq, failures, success, failing)
                             WHERE s.seq = u.seq",
                        )
                        .await?;
                    tx.execute(&save, &[&h_seq, &h_failures, &h_success, &h_failing]).await?;
                }
                if became_due_now {
                    notify_due(&tx).await?;
                }
                tx.commit().await.map_err(PgErr::Commit)?;
                Ok(paused_now)
            })
        })
        .await
}
