//! Recording attempts: attempt rows, delivery states (leases cleared), the promotion of
//! the next delivery of a queue when its head finishes, and subscription health with
//! the pauses it decides, all in the transaction of the batch. The batch's subscription
//! rows are locked first (`FOR UPDATE`, in row order): health counters are read and
//! written by one process at a time, and no publish places a delivery in their queues
//! meanwhile.

use std::collections::HashMap;
use std::sync::Arc;

use super::queue::{PROMOTE_SQL, hold_unfinished, notify_due};
use super::*;
use crate::health::{Health, Verdict};
use crate::model::{AttemptOutcome, Notification};
use crate::ordering;
use crate::store::NextState;

/// A subscription of the batch: row, workspace, health, paused.
type Loaded = (i64, String, Health, bool);

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
                // A deleted subscription took its deliveries with it: nothing to record.
                let mut subs: HashMap<String, Loaded> = HashMap::new();
                for r in tx.query(&load, &[&ids]).await? {
                    let health = Health {
                        consecutive_failures: r.try_get::<_, i64>(3)?.clamp(0, u32::MAX as i64) as u32,
                        last_success_at: opt_ts(r.try_get(4)?),
                        failing_since: opt_ts(r.try_get(5)?),
                    };
                    subs.insert(r.try_get(0)?, (r.try_get(1)?, r.try_get(2)?, health, r.try_get(6)?));
                }
                let insert_attempt = tx
                    .prepare_cached(
                        "INSERT INTO attempts (delivery_seq, number, started_at, duration_ms, status, error, body_prefix)
                         VALUES ($1, $2, $3, $4, $5, $6, $7)
                         ON CONFLICT (delivery_seq, number) DO UPDATE SET started_at = excluded.started_at,
                           duration_ms = excluded.duration_ms, status = excluded.status, error = excluded.error,
                           body_prefix = excluded.body_prefix",
                    )
                    .await?;
                // Only an unfinished delivery is changed: an outcome recorded twice (a
                // lease that ran out while the first write was slow) must not finish it
                // twice, nor promote a second successor.
                let finish = tx
                    .prepare_cached(
                        "UPDATE deliveries SET state = $2, attempts = $3, finished_at = $4,
                           lease_owner = NULL, lease_until = NULL
                         WHERE seq = $1 AND finished_at IS NULL RETURNING okey",
                    )
                    .await?;
                let retry = tx
                    .prepare_cached(
                        "UPDATE deliveries SET state = $2, attempts = $3, due_at = $4,
                           lease_owner = NULL, lease_until = NULL
                         WHERE seq = $1 AND finished_at IS NULL",
                    )
                    .await?;
                let promote = tx.prepare_cached(PROMOTE_SQL).await?;
                let mut paused_now = Vec::new();
                let mut became_due_now = false;
                for a in attempts.iter() {
                    let Some((seq, workspace_id, health, paused)) = subs.get_mut(&a.subscription_id) else {
                        continue;
                    };
                    let (status, error, body) = match &a.outcome {
                        AttemptOutcome::Response { status, body_prefix } => {
                            (Some(i64::from(*status)), None, Some(body_prefix.as_str()))
                        }
                        AttemptOutcome::Error { error } => (None, Some(error.as_str()), None),
                    };
                    tx.execute(
                        &insert_attempt,
                        &[
                            &a.delivery.0,
                            &i64::from(a.attempt),
                            &a.started_at.unix_millis(),
                            &(a.duration_ms.min(i64::MAX as u64) as i64),
                            &status,
                            &error,
                            &body,
                        ],
                    )
                    .await?;
                    if ordering::ends_delivery(a.next) {
                        let state = if a.next == NextState::Delivered {
                            DELIVERED
                        } else {
                            FAILED
                        };
                        let Some(row) = tx
                            .query_opt(&finish, &[&a.delivery.0, &state, &i64::from(a.attempt), &now_ms])
                            .await?
                        else {
                            continue; // finished already
                        };
                        // Its successor, if any, heads the queue from now on: in this
                        // transaction. (While paused, every unfinished delivery is held.)
                        let okey: Option<i64> = row.try_get(0)?;
                        if let Some(k) = okey
                            && !*paused
                            && tx.execute(&promote, &[&*seq, &k, &now_ms]).await? > 0
                        {
                            became_due_now = true;
                        }
                    } else if let NextState::RetryAt(at) = a.next {
                        let state = if *paused { HELD } else { PENDING };
                        let n = tx
                            .execute(&retry, &[&a.delivery.0, &state, &i64::from(a.attempt), &at.unix_millis()])
                            .await?;
                        if n == 0 {
                            continue; // finished already
                        }
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
                            .get(0);
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
                let save = tx
                    .prepare_cached(
                        "UPDATE subscriptions SET consecutive_failures = $2, last_success_at = $3, failing_since = $4
                         WHERE seq = $1",
                    )
                    .await?;
                for (seq, _, h, _) in subs.values() {
                    tx.execute(
                        &save,
                        &[
                            seq,
                            &i64::from(h.consecutive_failures),
                            &h.last_success_at.map(|t| t.unix_millis()),
                            &h.failing_since.map(|t| t.unix_millis()),
                        ],
                    )
                    .await?;
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
