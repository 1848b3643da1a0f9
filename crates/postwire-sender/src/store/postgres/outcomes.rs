//! Recording attempts: attempt rows, delivery states and queue heads (leases cleared),
//! the promotion of the next delivery of a queue when its head finishes, and subscription health with
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
use std::sync::atomic::{AtomicBool, Ordering};

use super::queue::{hold_unfinished, notify_due};
use super::*;
use postwire_core::SubscriptionRef;

use crate::health::{Health, Verdict};
use crate::model::{AttemptOutcome, Notification};
use crate::notices;
use crate::ordering;
use crate::store::NextState;

/// Marks a row of [`RECORD_SQL`]'s answer as a successor made head.
const PROMOTED: i32 = 2;

/// The whole batch's attempts and delivery states in one statement (arrays: attempts
/// $1..$7; deliveries that end $8, with state $9 and attempts $10; retries $11, state
/// $12, attempts $13, due $14; now $15; the batch's subscriptions that are not paused
/// $16, as locked and read by this transaction). An attempt row per attempt; a delivery that
/// ends is finished and its `queue_heads` row deleted; a retry gets its new due time
/// in its row (lease cleared), or loses the row when held (its subscription is paused);
/// only unfinished deliveries change. The successor of each keyed delivery that ended,
/// in a subscription that is not paused, becomes its queue's head (row included): in
/// this transaction, and seeing the deliveries as they were before the statement, so
/// the waiting ones (state 5) are what it finds. Returns the deliveries changed (0 for
/// ended, 1 for retried) and the successors made heads ([`PROMOTED`]).
///
/// Attempt rows are plain inserts ([`RECORD_SQL`]): an attempt is recorded once, except
/// when its lease ran out while its outcome was being written and the same attempt was
/// made again (by another process, or after the lease ended). That second write fails
/// on the attempt's key and the batch is written again with [`RECORD_AGAIN_SQL`], whose
/// rows replace the ones already there. (An `ON CONFLICT` clause on every batch cost
/// PostgreSQL about 2 µs a delivery, a speculative insertion per row, for a case that
/// comes only from an expired lease.)
macro_rules! record_sql {
    ($on_conflict:literal) => {
        concat!(
            "WITH ins AS (
         INSERT INTO attempts (delivery_seq, number, started_at, duration_ms, status, error, body_prefix)
         SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[],
                              $5::bigint[], $6::text[], $7::text[])",
            $on_conflict,
            "),
     fin AS (
         UPDATE deliveries d SET state = u.state, attempts = u.attempts, finished_at = $15
         FROM unnest($8::bigint[], $9::bigint[], $10::bigint[]) AS u(seq, state, attempts)
         WHERE d.seq = u.seq AND d.finished_at IS NULL
         RETURNING d.seq, d.sub_seq, d.okey),
     ret AS (
         UPDATE deliveries d SET state = u.state, attempts = u.attempts, due_at = u.due
         FROM unnest($11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[]) AS u(seq, state, attempts, due)
         WHERE d.seq = u.seq AND d.finished_at IS NULL
         RETURNING d.seq, d.sub_seq, d.state, d.due_at, d.event_seq, d.attempts, d.created_at),
     gone AS (
         DELETE FROM queue_heads WHERE delivery_seq = ANY(ARRAY(
             SELECT seq FROM fin UNION ALL SELECT seq FROM ret WHERE state <> 0))),
     again AS (
         INSERT INTO queue_heads (delivery_seq, sub_seq, due_at, event_seq, attempts, created_at)
         SELECT seq, sub_seq, due_at, event_seq, attempts, created_at FROM ret WHERE state = 0
         ON CONFLICT (delivery_seq) DO UPDATE SET due_at = excluded.due_at, attempts = excluded.attempts,
             owner = NULL),
     promoted AS (
         UPDATE deliveries SET state = 0, due_at = $15 WHERE seq IN (
             SELECT (SELECT w.seq FROM deliveries w
                     WHERE w.sub_seq = f.sub_seq AND w.okey = f.okey AND w.finished_at IS NULL AND w.state = 5
                     ORDER BY w.seq LIMIT 1)
             FROM fin f
             WHERE f.okey IS NOT NULL AND f.sub_seq = ANY($16::bigint[]))
         RETURNING seq, sub_seq, due_at, event_seq, attempts, created_at),
     heads AS (
         INSERT INTO queue_heads (delivery_seq, sub_seq, due_at, event_seq, attempts, created_at)
         SELECT * FROM promoted)
     SELECT seq, 0 FROM fin UNION ALL SELECT seq, 1 FROM ret UNION ALL SELECT seq, 2 FROM promoted"
        )
    };
}

/// [`record_sql!`] with attempt rows inserted: the batch as it is written first.
const RECORD_SQL: &str = record_sql!("");

/// [`record_sql!`] with attempt rows replacing any of the same attempt: the batch
/// written again after [`RECORD_SQL`] found one of its attempts recorded already.
const RECORD_AGAIN_SQL: &str = record_sql!(
    "
         ON CONFLICT (delivery_seq, number) DO UPDATE SET started_at = excluded.started_at,
           duration_ms = excluded.duration_ms, status = excluded.status,
           error = excluded.error, body_prefix = excluded.body_prefix"
);

/// The batch's subscriptions ($1: ids), locked in row order: row, workspace, health,
/// paused.
const LOAD_SQL: &str = "SELECT id, seq, workspace_id, consecutive_failures, last_success_at, failing_since,
       paused_reason IS NOT NULL, name, pause_warned FROM subscriptions WHERE id = ANY($1) ORDER BY seq FOR UPDATE";

/// The subscriptions' health (arrays: row $1, consecutive failures $2, last success $3,
/// failing since $4, warned $5).
const SAVE_SQL: &str = "UPDATE subscriptions s SET consecutive_failures = u.failures,
       last_success_at = u.success, failing_since = u.failing, pause_warned = u.warned
     FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bool[])
          AS u(seq, failures, success, failing, warned)
     WHERE s.seq = u.seq";

/// A subscription of the batch: row, workspace, health, paused, name.
type Loaded = (i64, String, Health, bool, String);

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
        let Some((_, _, _, paused, _)) = subs.get(&a.subscription_id) else {
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
) -> StoreResult<Vec<Notification>> {
    let attempts = Arc::new(attempts);
    // Set when the batch holds an attempt recorded already: it is written again with
    // `RECORD_AGAIN_SQL`.
    let again = Arc::new(AtomicBool::new(false));
    let write = |c: Client| {
        let attempts = attempts.clone();
        let again = again.clone();
        Box::pin(async move {
            let now_ms = now.unix_millis();
            let mut ids: Vec<String> = attempts.iter().map(|a| a.subscription_id.clone()).collect();
            ids.sort();
            ids.dedup();
            // Three round trips: `BEGIN` with the subscriptions locked, the batch, the
            // health with `COMMIT` (more only when the batch pauses a subscription).
            let load = c.prepare_cached(LOAD_SQL).await?;
            let replace = again.load(Ordering::Relaxed);
            let record = c
                .prepare_cached(if replace { RECORD_AGAIN_SQL } else { RECORD_SQL })
                .await?;
            let save = c.prepare_cached(SAVE_SQL).await?;
            let tx = PipelinedTx::new(c);
            let mut subs: HashMap<String, Loaded> = HashMap::new();
            for r in tx.begin_with(tx.client().query(&load, &[&ids])).await? {
                let health = Health {
                    consecutive_failures: r.try_get::<_, i64>(3)?.clamp(0, u32::MAX as i64) as u32,
                    last_success_at: opt_ts(r.try_get(4)?),
                    failing_since: opt_ts(r.try_get(5)?),
                    pause_warned: r.try_get(8)?,
                };
                subs.insert(
                    r.try_get(0)?,
                    (r.try_get(1)?, r.try_get(2)?, health, r.try_get(6)?, r.try_get(7)?),
                );
            }
            let cols = columns(&attempts, &subs);
            // Only an unfinished delivery is changed: an outcome recorded twice (a
            // lease that ran out while the first write was slow) must not finish it
            // twice, nor promote a second successor.
            let mut changed: HashSet<i64> = HashSet::new();
            let mut became_due_now = false;
            if !cols.seqs.is_empty() {
                let active: Vec<i64> = subs
                    .values()
                    .filter(|(_, _, _, paused, _)| !*paused)
                    .map(|(seq, ..)| *seq)
                    .collect();
                let rows = tx
                    .client()
                    .query(
                        &record,
                        &[
                            &cols.seqs,
                            &cols.numbers,
                            &cols.started,
                            &cols.durations,
                            &cols.statuses,
                            &cols.errors,
                            &cols.bodies,
                            &cols.end_seqs,
                            &cols.end_states,
                            &cols.end_attempts,
                            &cols.retry_seqs,
                            &cols.retry_states,
                            &cols.retry_attempts,
                            &cols.retry_due,
                            &now_ms,
                            &active,
                        ],
                    )
                    .await
                    .inspect_err(|e| {
                        if !replace && is_duplicate_attempt(e) {
                            again.store(true, Ordering::Relaxed);
                        }
                    })?;
                for r in rows {
                    match r.try_get::<_, i32>(1)? {
                        PROMOTED => became_due_now = true,
                        _ => {
                            changed.insert(r.try_get(0)?);
                        }
                    }
                }
            }
            // Health, attempt by attempt in the batch's order (the rules are pure), and
            // the notices of its changes.
            let mut noticed = Vec::new();
            for a in attempts.iter() {
                let Some((seq, workspace_id, health, paused, name)) = subs.get_mut(&a.subscription_id) else {
                    continue;
                };
                // An outcome for a delivery finished already changes nothing (and a
                // row counts once).
                if !changed.remove(&a.delivery.0) {
                    continue;
                }
                let (pause, changes) = health.apply_noting(Verdict::of(a.next), a.started_at);
                let paused_now = pause.filter(|_| !*paused);
                if let Some(cause) = paused_now {
                    *paused = true;
                    tx.client()
                        .execute(
                            "UPDATE subscriptions SET paused_reason = $2 WHERE seq = $1",
                            &[&*seq, &cause.reason()],
                        )
                        .await?;
                    hold_unfinished(tx.client(), *seq).await?;
                }
                let about = SubscriptionRef {
                    id: a.subscription_id.clone(),
                    name: name.clone(),
                };
                let notes =
                    notices::after_attempt(workspace_id, about, changes, paused_now, health, now).map_err(data)?;
                for n in notes {
                    let id = super::notices::insert(tx.client(), &n).await?;
                    noticed.push(n.stored(id));
                }
            }
            let (mut h_seq, mut h_failures, mut h_success, mut h_failing, mut h_warned) =
                (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for (seq, _, h, _, _) in subs.values() {
                h_seq.push(*seq);
                h_failures.push(i64::from(h.consecutive_failures));
                h_success.push(h.last_success_at.map(|t| t.unix_millis()));
                h_failing.push(h.failing_since.map(|t| t.unix_millis()));
                h_warned.push(h.pause_warned);
            }
            if became_due_now {
                notify_due(tx.client()).await?;
            }
            if h_seq.is_empty() {
                tx.commit().await?;
            } else {
                tx.commit_with(
                    tx.client()
                        .execute(&save, &[&h_seq, &h_failures, &h_success, &h_failing, &h_warned]),
                )
                .await?;
            }
            Ok(noticed)
        }) as BoxFuture<'static, Result<_, PgErr>>
    };
    match store.run("record attempts", &write).await {
        Err(_) if again.load(Ordering::Relaxed) => {
            tracing::debug!("an attempt of the batch was recorded already: writing the batch again");
            store.run("record attempts", &write).await
        }
        done => done,
    }
}

/// Whether `e` is the attempt key's violation: an attempt of the batch is recorded
/// already (see [`RECORD_SQL`]).
fn is_duplicate_attempt(e: &tokio_postgres::Error) -> bool {
    e.as_db_error().is_some_and(|d| {
        *d.code() == tokio_postgres::error::SqlState::UNIQUE_VIOLATION && d.constraint() == Some("attempts_pkey")
    })
}
