//! The dispatcher: claims due deliveries, runs attempts concurrently, records outcomes.
//!
//! One loop claims deliveries from the store — only the head of each (subscription,
//! ordering key) queue, only when due by the injected clock, never more than the free
//! room — and starts one task per attempt. The room is twice the request limits
//! (`max_in_flight` overall, `max_in_flight_per_subscription` each): each attempt waits
//! for a request slot (a semaphore per subscription, one overall), so when a request
//! ends, the next claimed attempt starts at once instead of after a trip to the store.
//! The limits on requests hold exactly; claiming ahead only hides the claim's latency.
//! An attempt that waited so long that its request could outlast its lease is not
//! started (another process could claim it meanwhile); it is claimed again when the
//! lease ends.
//! An attempt whose request has ended takes no room, even before its outcome is written:
//! each claim tells the store how many attempts this process has claimed per
//! subscription, and a store shared by several processes adds only the other processes'
//! leases to that.
//! Finished attempts go through a channel to one writer task, which
//! records all the outcomes that arrived while it was busy in one write (the store may
//! commit it together with other writes: see the SQLite store's group commit) and then
//! wakes the loop: a successor in the same ordering queue becomes claimable only once its
//! predecessor's outcome is on disk. A subscription that a claim gave all its room (its
//! queue may hold more), or a full dispatcher, wakes the loop once a quarter of that room
//! has come free, or at once if requests ended while the claim ran. While more than three
//! quarters of the dispatcher's room is claimed and every request slot is busy, the loop
//! claims nothing, whatever woke it: a claim costs the store about as much for 10 rows as
//! for 200, and with slow receivers requests end a few at a time, so claiming at every
//! write took a dozen rows a claim; the attempts claimed ahead keep the request slots
//! busy meanwhile. An idle request slot lifts the rule (endpoints that hang, each holding
//! its own slots, leave slots free for the others).
//!
//! The loop sleeps until a publish or a finished batch wakes it (or, on a store shared by
//! several processes, another process's notice: [`Store::wakeups`]), the next due time comes
//! (by the clock), or `idle_poll` passes. Nothing here is needed to recover from a
//! crash: claimed deliveries carry a lease in the store, released at start-up (SQLite
//! keeps them in memory) or, on a store shared by several processes, claimable again by
//! any of them once the lease ends. A stopping dispatcher releases its own.
//!
//! For tests, [`Sender::wait_idle`](crate::Sender::wait_idle) wakes the loop and waits
//! until it has seen nothing in flight and nothing due at the clock's current time:
//! tests move a [`ManualClock`](postwire_core::ManualClock) and then wait for idle, and
//! cover a day of retries in milliseconds.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc};

use postwire_core::{Clock, Timestamp};

use crate::config::SenderConfig;
use crate::delivery::{AttemptReport, HttpDeliverer};
use crate::error::SenderError;
use crate::model::AttemptOutcome;
use crate::schedule::{NextStep, RetrySchedule};
use crate::signals::{Owners, Signals};
use crate::store::{ClaimRequest, ClaimedDelivery, FinishedAttempt, NextState, Store};

/// What the dispatcher's loop and tasks need, and nothing of the [`Sender`](crate::Sender):
/// the store, the clock, the settings, the HTTP client, the retry schedule, this run's
/// lease owner name, and the [`Signals`] it shares with the sender.
pub(crate) struct Dispatcher {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    config: SenderConfig,
    deliverer: HttpDeliverer,
    schedule: RetrySchedule,
    owner: String,
    signals: Arc<Signals>,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

impl Dispatcher {
    /// A dispatcher over `store` that takes leases as `owner`; not running until [`start`].
    /// Fails if the HTTP client cannot be built from `config`.
    pub(crate) fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        config: SenderConfig,
        owner: String,
        signals: Arc<Signals>,
    ) -> Result<Dispatcher, SenderError> {
        let deliverer = HttpDeliverer::new(&config)?;
        let schedule = RetrySchedule::new(config.jitter, config.jitter_seed);
        Ok(Dispatcher {
            store,
            clock,
            config,
            deliverer,
            schedule,
            owner,
            signals,
        })
    }

    /// The name under which this run takes leases.
    pub(crate) fn owner(&self) -> &str {
        &self.owner
    }
}

/// Most outcomes written in one transaction.
const MAX_WRITE_BATCH: usize = 1024;

/// Claimed deliveries per request slot: one waiting behind each request. (Four per slot
/// of a subscription made the one-subscription drain's claims twice as large, and its
/// CPU per delivery on PostgreSQL 10-15 % smaller, but with a slow receiver and 100
/// subscriptions it made claims half as large and twice as frequent: 4.80k → 4.41k
/// deliveries/s, 240 → 275 µs per delivery. Measured 2026-11-27, not kept.)
const CLAIM_AHEAD: usize = 2;

/// The dispatcher's limits, from its config.
#[derive(Debug, Clone, Copy)]
struct Limits {
    /// Requests in flight at once, overall and to one subscription.
    requests: usize,
    requests_per_subscription: usize,
}

impl Limits {
    fn of(config: &crate::config::SenderConfig) -> Self {
        Limits {
            requests: config.max_in_flight.max(1),
            requests_per_subscription: config.max_in_flight_per_subscription.max(1),
        }
    }

    /// Claimed, unfinished attempts allowed overall and to one subscription.
    fn claimed(self) -> (usize, usize) {
        (
            self.requests * CLAIM_AHEAD,
            self.requests_per_subscription * CLAIM_AHEAD,
        )
    }
}

/// One subscription's claimed attempts, and its request slots.
#[derive(Debug)]
struct SubscriptionSlots {
    claimed: usize,
    /// The last claim gave it all the room it had, so its queue may hold more; it asks
    /// for a refill once a quarter of its room is free.
    full: bool,
    requests: Arc<Semaphore>,
}

/// Attempts in this process: claimed attempts whose request has not ended (which bound
/// the room for new claims) and attempts whose outcome is not yet recorded (which keep
/// the dispatcher from calling itself idle).
#[derive(Debug)]
pub(crate) struct InFlight {
    limits: Limits,
    total: usize,
    /// The dispatcher had all the claimed attempts it may have, and has not yet asked for
    /// a refill.
    full: bool,
    per_subscription: HashMap<String, SubscriptionSlots>,
    unrecorded: usize,
}

/// A full subscription, or a full dispatcher, asks for a refill once this share of its
/// room has come free: claiming several at once is cheaper than one per finished request,
/// and the room claimed ahead keeps the requests busy while the claim runs.
const REFILL_AT: usize = 4;

impl InFlight {
    fn new(limits: Limits) -> Self {
        InFlight {
            limits,
            total: 0,
            full: false,
            per_subscription: HashMap::new(),
            unrecorded: 0,
        }
    }

    /// Counts a claimed attempt; returns its subscription's request slots.
    fn add(&mut self, sub: &str) -> Arc<Semaphore> {
        let (max, _) = self.limits.claimed();
        self.total += 1;
        self.full |= self.total >= max;
        let slots = self
            .per_subscription
            .entry(sub.to_owned())
            .or_insert_with(|| SubscriptionSlots {
                claimed: 0,
                full: false,
                requests: Arc::new(Semaphore::new(self.limits.requests_per_subscription)),
            });
        slots.claimed += 1;
        slots.requests.clone()
    }

    /// After a claim gave `sub` all the room it had when the claim began: its queue may
    /// hold more. True when a quarter of its room is free already (requests ended while
    /// the claim ran), so the loop should claim again at once; otherwise the subscription
    /// asks when that happens (see [`remove`](Self::remove)).
    fn filled(&mut self, sub: &str) -> bool {
        let (_, per_subscription) = self.limits.claimed();
        let Some(slots) = self.per_subscription.get_mut(sub) else {
            return false;
        };
        let refill_now = slots.claimed <= per_subscription - per_subscription.div_ceil(REFILL_AT);
        slots.full = !refill_now;
        refill_now
    }

    /// An attempt's request ended (or never started); true when the loop should claim
    /// now: its subscription (see [`filled`](Self::filled)), or the dispatcher, was full
    /// and a quarter of its room is free again.
    fn remove(&mut self, sub: &str) -> bool {
        let (max, per_subscription) = self.limits.claimed();
        self.total = self.total.saturating_sub(1);
        let mut refill = false;
        if self.full && self.total <= max - max.div_ceil(REFILL_AT) {
            self.full = false;
            refill = true;
        }
        let Some(slots) = self.per_subscription.get_mut(sub) else {
            return refill;
        };
        slots.claimed -= 1;
        if slots.full && slots.claimed <= per_subscription - per_subscription.div_ceil(REFILL_AT) {
            slots.full = false;
            refill = true;
        }
        if slots.claimed == 0 {
            self.per_subscription.remove(sub);
        }
        refill
    }

    /// A claimed attempt that was not started (the dispatcher is stopping, or too little
    /// of its lease was left): it takes no room and has no outcome to write. True when
    /// the loop should claim again, as for [`remove`](Self::remove).
    fn not_started(&mut self, sub: &str) -> bool {
        self.unrecorded = self.unrecorded.saturating_sub(1);
        self.remove(sub)
    }

    /// The outcomes of `n` attempts were written, or (on an error) stay unwritten until
    /// their leases end.
    fn written(&mut self, n: usize) {
        self.unrecorded = self.unrecorded.saturating_sub(n);
    }

    /// How many attempts the loop may claim now, given how many request slots are idle:
    /// the free room; but none while more than three quarters of it are claimed and
    /// every request slot is busy (see the module doc: PostgreSQL's claim counts the
    /// leases of every subscription it looks at, so its cost is per claim more than per
    /// row). The dispatcher is then marked full, so that [`remove`](Self::remove) wakes
    /// the loop once a quarter of its room is free. An idle slot always allows a claim:
    /// endpoints that hang must not keep another subscription's delivery waiting while a
    /// slot could send it.
    fn room(&mut self, idle_request_slots: usize) -> usize {
        let (max, _) = self.limits.claimed();
        if idle_request_slots == 0 && self.total > max - max.div_ceil(REFILL_AT) {
            self.full = true;
            return 0;
        }
        max.saturating_sub(self.total)
    }

    fn claimed_per_subscription(&self) -> HashMap<String, usize> {
        self.per_subscription
            .iter()
            .map(|(sub, slots)| (sub.clone(), slots.claimed))
            .collect()
    }
}

/// A running dispatcher. Call [`shutdown`](Self::shutdown) to stop it and wait for the
/// requests in flight. Dropping the handle alone does not stop it while a [`Sender`]
/// clone remains; once the handles and every `Sender` clone are dropped, it stops
/// claiming, lets the requests in flight finish and be recorded in the background, and
/// then closes the store (and, for SQLite, releases the file).
///
/// [`Sender`]: crate::Sender
pub struct DispatcherHandle {
    signals: Arc<Signals>,
    _owners: Arc<Owners>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for DispatcherHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DispatcherHandle")
            .field("running", &self.task.as_ref().is_some_and(|t| !t.is_finished()))
            .finish()
    }
}

impl DispatcherHandle {
    /// Stops claiming, lets the requests in flight finish, records their outcomes, and
    /// returns. Deliveries not yet claimed, or claimed but still waiting for a request
    /// slot, stay in the store for the next start.
    pub async fn shutdown(mut self) {
        self.signals.shut_down();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

/// Another handle to a dispatcher already started (shutting down through it stops it).
pub(crate) fn handle_without_task(signals: Arc<Signals>, owners: Arc<Owners>) -> DispatcherHandle {
    DispatcherHandle {
        signals,
        _owners: owners,
        task: None,
    }
}

/// Starts the claim loop on the current Tokio runtime.
pub(crate) fn start(dispatcher: Arc<Dispatcher>, owners: Arc<Owners>) -> DispatcherHandle {
    let signals = dispatcher.signals.clone();
    let task = tokio::spawn(run(dispatcher));
    DispatcherHandle {
        signals,
        _owners: owners,
        task: Some(task),
    }
}

async fn run(inner: Arc<Dispatcher>) {
    let config = &inner.config;
    let limits = Limits::of(config);
    let in_flight = Arc::new(Mutex::new(InFlight::new(limits)));
    let (tx, rx) = mpsc::unbounded_channel::<FinishedAttempt>();
    let writer = tokio::spawn(write_outcomes(inner.clone(), in_flight.clone(), rx));
    let relay = tokio::spawn(relay_periodically(inner.clone()));
    let (_, max_claimed_per_subscription) = limits.claimed();
    let all_requests = Arc::new(Semaphore::new(limits.requests));
    // Wake-ups from other processes sharing the store (PostgreSQL's LISTEN/NOTIFY).
    let shared_wake = inner.store.wakeups();
    loop {
        let requested = inner.signals.idle_requested();
        if inner.signals.is_shutting_down() {
            break;
        }
        let (room, busy_before, snapshot) = {
            let mut f = in_flight.lock().unwrap_or_else(|p| p.into_inner());
            (
                f.room(all_requests.available_permits()),
                f.unrecorded,
                f.claimed_per_subscription(),
            )
        };
        let mut claimed = 0;
        // A subscription given all its room has more room already: claim again at once.
        let mut again = false;
        if room > 0 {
            let now = inner.clock.now();
            let lease_until = now.add_millis(config.lease.as_millis() as i64);
            let request = ClaimRequest {
                now,
                limit: room,
                lease_until,
                owner: inner.owner.clone(),
                per_subscription_limit: max_claimed_per_subscription,
                shared_per_subscription_limit: limits.requests_per_subscription,
                in_flight: snapshot,
            };
            let before = request.in_flight.clone();
            let claim_started = std::time::Instant::now();
            match inner.store.claim(request).await {
                Ok(batch) => {
                    claimed = batch.len();
                    if let Some(o) = &config.observer {
                        o.claimed(claim_started.elapsed(), claimed);
                    }
                    let mut per_subscription: HashMap<String, usize> = HashMap::new();
                    let mut f = in_flight.lock().unwrap_or_else(|p| p.into_inner());
                    for d in batch {
                        *per_subscription.entry(d.subscription_id.clone()).or_default() += 1;
                        let slots = [f.add(&d.subscription_id), all_requests.clone()];
                        f.unrecorded += 1;
                        tokio::spawn(attempt(
                            inner.clone(),
                            d,
                            lease_until,
                            slots,
                            in_flight.clone(),
                            tx.clone(),
                        ));
                    }
                    for (sub, n) in per_subscription {
                        let room = max_claimed_per_subscription.saturating_sub(before.get(&sub).copied().unwrap_or(0));
                        if n >= room && f.filled(&sub) {
                            again = true;
                        }
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "claiming deliveries failed; retrying shortly");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            }
        }
        if claimed > 0 && (claimed == room || again) {
            continue;
        }
        if claimed == 0 && busy_before == 0 {
            inner.signals.report_idle(requested);
        }
        // While attempts are in flight, a finished batch wakes the loop soon anyway; only
        // an idle loop asks the store when the next retry is due.
        let sleep = match if busy_before > 0 || claimed > 0 {
            Ok(None)
        } else {
            inner.store.next_due_at().await
        } {
            Ok(Some(due)) => {
                let wait = due.unix_millis().saturating_sub(inner.clock.now().unix_millis()).max(0) as u64;
                Duration::from_millis(wait).min(config.idle_poll)
            }
            _ => config.idle_poll,
        };
        // A due delivery that could not be claimed (ordering or room) waits for a wake.
        let sleep = if sleep.is_zero() { config.idle_poll } else { sleep };
        tokio::select! {
            _ = inner.signals.woken() => {}
            _ = async {
                match &shared_wake {
                    Some(wake) => wake.notified().await,
                    None => std::future::pending().await,
                }
            } => {}
            _ = tokio::time::sleep(sleep) => {}
        }
    }
    drop(tx);
    let _ = writer.await;
    // Awaited, not only aborted: the task holds the store, which must be gone (its file
    // lock released) when the dispatcher's shutdown returns.
    relay.abort();
    let _ = relay.await;
    // Every attempt of this run has ended and been recorded, or never started: release
    // what it still holds (claimed, not started; or an outcome that could not be
    // written), so another process, or the next start, claims it without waiting for the
    // lease to end.
    if let Err(e) = inner.store.recover(inner.owner.clone()).await {
        tracing::warn!(error = %e, "releasing this run's leases failed; they end on their own");
    }
}

/// Runs one claimed attempt once it has a request slot of its subscription and one
/// overall (taken in that order by every attempt, so none waits on another in a cycle),
/// unless its lease (held until `lease_until`) could end before its request does.
async fn attempt(
    inner: Arc<Dispatcher>,
    mut d: ClaimedDelivery,
    lease_until: Timestamp,
    [subscription_slots, all_slots]: [Arc<Semaphore>; 2],
    in_flight: Arc<Mutex<InFlight>>,
    tx: mpsc::UnboundedSender<FinishedAttempt>,
) {
    // The semaphores are never closed.
    let _slot = subscription_slots.acquire_owned().await;
    let _overall = all_slots.acquire_owned().await;
    if inner.signals.is_shutting_down() {
        // Not started: its lease is released when the dispatcher stops (see `run`), so
        // another process or the next start claims it again. Nothing to record.
        in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .not_started(&d.subscription_id);
        return;
    }
    let started_at = inner.clock.now();
    let timeout_ms = inner.config.attempt_timeout.as_millis().min(i64::MAX as u128) as i64;
    if started_at.add_millis(timeout_ms) >= lease_until {
        // It waited for its slots so long that its request could outlast the lease, after
        // which another process may claim it: two requests of one delivery (and of its
        // ordering key) would overlap. Not started; claimed again once the lease ends. With
        // the defaults (attempts of 10 s at most, one claimed ahead for each request slot,
        // a lease of 2 minutes) a real clock never gets here; a lease set close to the
        // timeout, or a test's clock moved on, can.
        tracing::warn!(delivery = %d.id, subscription_id = %d.subscription_id, "a claimed delivery waited for a request slot until too little of its lease was left; it is attempted once the lease ends");
        let refill = in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .not_started(&d.subscription_id);
        if refill {
            inner.signals.wake();
        }
        return;
    }
    let body = std::mem::take(&mut d.body);
    // A span per attempt (exported as a trace span when `serve` sends traces); no URL,
    // secret or body in it.
    let span = tracing::info_span!(
        "delivery_attempt",
        delivery = %d.id,
        subscription_id = %d.subscription_id,
        event_id = %d.event_id,
        attempt = d.attempt
    );
    let report = tracing::Instrument::instrument(
        inner
            .deliverer
            .attempt(&d.url, &d.event_id, body, &d.signer, started_at.unix_time()),
        span,
    )
    .await;
    let next = if report.outcome.is_success() {
        NextState::Delivered
    } else {
        match inner.schedule.after_failed_attempt(d.attempt, report.retry_after) {
            NextStep::RetryAfterMillis(ms) => NextState::RetryAt(inner.clock.now().add_millis(ms)),
            NextStep::GiveUp => NextState::Failed,
        }
    };
    if let Some(o) = &inner.config.observer {
        let (label, latency) = match &report.outcome {
            outcome if outcome.is_success() => {
                let ms = inner
                    .clock
                    .now()
                    .unix_millis()
                    .saturating_sub(d.created_at.unix_millis());
                ("delivered", Some(Duration::from_millis(ms.max(0) as u64)))
            }
            AttemptOutcome::Response { .. } => ("http_error", None),
            AttemptOutcome::Error { error } => (error.as_str(), None),
        };
        o.attempt_finished(label, latency);
    }
    log_attempt(&d, &report, &next);
    // The request is over: its room is free (its slots are given back when this task
    // ends, just below). The delivery stays leased, and its successors blocked, until the
    // outcome is recorded. If the subscription (or the whole dispatcher) was full, wake
    // the loop now rather than after the next write.
    let refill = in_flight
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&d.subscription_id);
    if refill {
        inner.signals.wake();
    }
    let finished = FinishedAttempt {
        delivery: d.id,
        subscription_id: d.subscription_id,
        attempt: d.attempt,
        started_at,
        duration_ms: report.duration.as_millis() as u64,
        outcome: report.outcome,
        next,
    };
    let _ = tx.send(finished);
}

async fn write_outcomes(
    inner: Arc<Dispatcher>,
    in_flight: Arc<Mutex<InFlight>>,
    mut rx: mpsc::UnboundedReceiver<FinishedAttempt>,
) {
    let mut batch = Vec::with_capacity(MAX_WRITE_BATCH);
    while rx.recv_many(&mut batch, MAX_WRITE_BATCH).await > 0 {
        // No waiting to fill a batch: outcomes that finish while this write runs make up
        // the next one, so batches grow by themselves with the load.
        let attempts: Vec<FinishedAttempt> = std::mem::take(&mut batch);
        let n = attempts.len();
        match inner.store.record_attempts(attempts, inner.clock.now()).await {
            Ok(noticed) if !noticed.is_empty() => {
                for n in &noticed {
                    inner.config.notifier.notice(n);
                }
                // Queued before the batch counts as written, so an idle dispatcher
                // (`wait_idle`) has them queued too.
                relay_notices(&inner).await;
            }
            Ok(_) => {}
            // The leases stay; the deliveries are attempted again when they expire.
            Err(e) => tracing::error!(error = %e, "recording attempt outcomes failed"),
        }
        in_flight.lock().unwrap_or_else(|p| p.into_inner()).written(n);
        inner.signals.wake();
    }
}

/// Queues the stored notices not relayed yet ([`crate::notices`]).
async fn relay_notices(inner: &Dispatcher) {
    if let Err(e) = inner.store.relay_notices(inner.clock.now()).await {
        tracing::warn!(error = %e, "relaying operational notices failed; retrying later");
    }
}

/// Relays notices at start (those a stopped process stored and did not relay) and then
/// every [`RELAY_EVERY`](crate::notices::RELAY_EVERY), until the dispatcher stops (it
/// aborts this task).
async fn relay_periodically(inner: Arc<Dispatcher>) {
    loop {
        relay_notices(&inner).await;
        inner.signals.wake();
        tokio::time::sleep(crate::notices::RELAY_EVERY).await;
    }
}

/// A [`NextState`] as the attempt log line shows it.
struct NextShown<'a>(&'a NextState);

impl std::fmt::Display for NextShown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            NextState::Delivered => f.write_str("delivered"),
            NextState::RetryAt(at) => write!(f, "retry at {at}"),
            NextState::Failed => f.write_str("failed (no attempts left)"),
        }
    }
}

/// One `info` line per attempt outcome, so `postwire serve` at its default level shows
/// every delivery and every failure as it happens: ids, status or error, duration and
/// what comes next. Never the URL (it may carry a token in its query), a secret or the body.
fn log_attempt(d: &ClaimedDelivery, report: &AttemptReport, next: &NextState) {
    let duration_ms = report.duration.as_millis() as u64;
    // Formatted only when the line is recorded: nothing is allocated per attempt where
    // `info` is filtered out (benchmarks, embedding hosts with their own filter).
    let next = NextShown(next);
    match &report.outcome {
        AttemptOutcome::Response { status, .. } => tracing::info!(
            delivery = %d.id,
            subscription_id = %d.subscription_id,
            event_id = %d.event_id,
            attempt = d.attempt,
            status,
            duration_ms,
            next = %next,
            "delivery attempt answered"
        ),
        AttemptOutcome::Error { error } => tracing::info!(
            delivery = %d.id,
            subscription_id = %d.subscription_id,
            event_id = %d.event_id,
            attempt = d.attempt,
            error = error.as_str(),
            duration_ms,
            next = %next,
            "delivery attempt failed"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Up to 4 claimed attempts per subscription and 16 overall (twice the request limits).
    fn in_flight() -> InFlight {
        InFlight::new(Limits {
            requests: 8,
            requests_per_subscription: 2,
        })
    }

    #[test]
    fn a_subscription_given_all_its_room_asks_for_a_refill_once_a_quarter_of_it_is_free() {
        let mut f = in_flight();
        for _ in 0..4 {
            f.add("s");
        }
        assert!(!f.filled("s"), "all 4 claimed: no room to claim into yet");
        assert!(f.remove("s"), "3 of 4 claimed: a quarter is free");
        assert!(!f.remove("s"), "it asks once per claim");
    }

    #[test]
    fn requests_that_ended_while_the_claim_ran_make_the_loop_claim_again_at_once() {
        let mut f = in_flight();
        // The claim began with 2 of 4 claimed, and was given the 2 free. Meanwhile the 2
        // earlier requests ended: the room is half free when the claim returns, already
        // past the mark at which a request's end would ask for a refill.
        f.add("s");
        f.add("s");
        assert!(!f.remove("s"));
        assert!(!f.remove("s"));
        f.add("s");
        f.add("s");
        assert!(f.filled("s"), "2 of 4 claimed: claim again now");
        assert!(!f.remove("s"), "already asked for by the claim's own answer");
    }

    #[test]
    fn a_subscription_whose_queue_ran_dry_does_not_ask() {
        let mut f = in_flight();
        f.add("s");
        assert!(!f.remove("s"));
    }

    #[test]
    fn a_busy_dispatcher_with_most_of_its_room_claimed_claims_nothing_until_a_quarter_is_free() {
        let mut f = in_flight();
        for i in 0..13 {
            f.add(&format!("s{i}"));
        }
        assert_eq!(f.room(0), 0, "13 of 16 claimed, every request slot busy: wait");
        assert_eq!(f.room(1), 3, "an idle request slot: claim into the room left");
        assert!(f.remove("s0"), "at 12 of 16 the loop is woken");
        assert_eq!(f.room(0), 4);
        let mut g = in_flight();
        for i in 0..12 {
            g.add(&format!("s{i}"));
        }
        assert_eq!(g.room(0), 4, "12 of 16 claimed: a quarter is free");
    }

    #[test]
    fn a_full_dispatcher_asks_for_a_refill_once_a_quarter_of_its_room_is_free() {
        let mut f = in_flight();
        let subs: Vec<String> = (0..16).map(|i| format!("s{i}")).collect();
        for sub in &subs {
            f.add(sub);
        }
        let asked: Vec<bool> = subs[..5].iter().map(|sub| f.remove(sub)).collect();
        assert_eq!(asked, [false, false, false, true, false], "at 12 of 16, once");
    }
}
