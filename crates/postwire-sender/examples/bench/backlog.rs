//! The backlog case: what an outage leaves behind, and how fast it drains.
//!
//! * **Claim time by depth**: the SQLite store alone, one subscription, `pending`
//!   deliveries over `pending / 4` posts (4 events each, so three in four wait behind
//!   their post's first). The dispatcher's cycle is replayed by hand, claim a batch of
//!   64, record them delivered (which promotes their successors), and each claim is
//!   timed; 64 new events are published after each round, so the depth stays put. Only queue heads are claimable, so the claim's cost must not grow with the
//!   depth: the goal is within 2x from 1k to 1M pending.
//! * **Drain**: the whole sender, one subscription, its endpoint down (503) while
//!   `deliveries` events are published over `deliveries / 4` posts; every post's first
//!   event fails once and the rest wait behind it. Then the endpoint comes back, the
//!   clock (a manual one, so no one waits 30 s for the retries) moves past the first
//!   retry, and the drain is timed from there until every event has had its `2xx`:
//!   deliveries/s, to compare with the steady-state rate of the 1-subscription case.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use postwire_core::{Clock, CreatedByKind, Event, ManualClock, Secret, Subscription, SubscriptionStatus, Timestamp};
use postwire_sender::model::{AttemptOutcome, StoredSubscription};
use postwire_sender::store::{ClaimRequest, FinishedAttempt, NextState};
use postwire_sender::{DomainChange, PostChangeKind, Sender, SqliteStore, Store, Workspace};

use super::{Arrivals, open_sender_with_clock, post_change, rss_kib};

/// Events per post in both cases (scheduled, publishing, published, then rescheduled).
const EVENTS_PER_POST: usize = 4;
/// Deliveries claimed at once, as the dispatcher's default room per subscription.
const CLAIM_BATCH: usize = 64;
/// Timed claims per depth.
const CLAIMS_TIMED: usize = 200;

/// The `k`-th event of post `post`: each post gets `EVENTS_PER_POST` of them.
fn event_of(post: usize, k: usize, pad: usize) -> DomainChange {
    let DomainChange::Post(mut change) = post_change(post, pad) else {
        unreachable!("post_change makes post changes")
    };
    change.kind = match k % EVENTS_PER_POST {
        0 => PostChangeKind::Scheduled,
        1 => PostChangeKind::PublishingStarted,
        2 => PostChangeKind::Published {
            release_url: "https://x.example/r".into(),
            release_id: "r".into(),
        },
        _ => PostChangeKind::Scheduled,
    };
    DomainChange::Post(change)
}

/// Every event of `posts` posts, round by round: each post's first, then each one's
/// second, and so on (as a platform's posts progress).
fn backlog_changes(posts: usize, pad: usize) -> impl Iterator<Item = DomainChange> {
    (0..EVENTS_PER_POST).flat_map(move |k| (0..posts).map(move |p| event_of(p, k, pad)))
}

/// Median and 99th percentile of the claim time with `pending` deliveries queued.
pub async fn claim_time_at_depth(pending: usize, pad: usize) -> (Duration, Duration) {
    let dir = tempfile::tempdir_in(std::env::var("BENCH_DIR").unwrap_or("/tmp".into())).unwrap();
    let store = SqliteStore::open(dir.path().join("claims.db")).unwrap();
    let t0 = Timestamp::from_unix_millis(1_800_000_000_000);
    store
        .upsert_workspace(Workspace {
            id: "ws_bench".into(),
            name: "bench".into(),
        })
        .await
        .unwrap();
    store
        .insert_subscription(
            StoredSubscription {
                workspace_id: "ws_bench".into(),
                subscription: Subscription {
                    id: "wh_bench".into(),
                    name: "bench".into(),
                    url: "https://hooks.example.com/bench".into(),
                    events: vec![],
                    integrations: vec![],
                    status: SubscriptionStatus::Enabled,
                    created_by_kind: CreatedByKind::ApiToken,
                    consecutive_failures: 0,
                    last_success_at: None,
                    created_at: t0,
                    signing: Default::default(),
                },
                secret: Secret::generate().unwrap(),
                previous_secret: None,
                failing_since: None,
                purpose: Default::default(),
            },
            None,
            None,
        )
        .await
        .unwrap();
    let built = |c: DomainChange| {
        postwire_sender::events::build_event(&c, Event::generate_id(t0).unwrap(), t0)
            .unwrap()
            .unwrap()
    };
    let posts = pending.div_ceil(EVENTS_PER_POST);
    let mut changes = backlog_changes(posts, pad).take(pending).peekable();
    while changes.peek().is_some() {
        let batch: Vec<_> = changes.by_ref().take(1_000).map(built).collect();
        store.enqueue(batch, t0, None).await.unwrap();
    }
    let counts = store.delivery_counts(None).await.unwrap();
    assert_eq!(counts.pending + counts.waiting, pending as u64);
    let mut times = Vec::with_capacity(CLAIMS_TIMED);
    for round in 0..CLAIMS_TIMED {
        let now = t0.add_millis(round as i64);
        let started = Instant::now();
        let claimed = store
            .claim(ClaimRequest {
                now,
                limit: CLAIM_BATCH,
                lease_until: now.add_millis(120_000),
                owner: "bench".into(),
                per_subscription_limit: CLAIM_BATCH,
                shared_per_subscription_limit: CLAIM_BATCH,
                in_flight: Default::default(),
            })
            .await
            .unwrap();
        times.push(started.elapsed());
        assert_eq!(claimed.len(), CLAIM_BATCH.min(pending), "a full batch at every depth");
        let outcomes = claimed
            .into_iter()
            .map(|c| FinishedAttempt {
                delivery: c.id,
                subscription_id: c.subscription_id,
                attempt: c.attempt,
                started_at: now,
                duration_ms: 1,
                outcome: AttemptOutcome::Response {
                    status: 200,
                    body_prefix: String::new(),
                },
                next: NextState::Delivered,
            })
            .collect();
        store.record_attempts(outcomes, now).await.unwrap();
        // As many new events (new posts) as were delivered: the depth stays `pending`.
        let more = (0..CLAIM_BATCH).map(|i| built(event_of(posts + round * CLAIM_BATCH + i, 0, pad)));
        store.enqueue(more.collect(), now, None).await.unwrap();
    }
    times.sort();
    (super::percentile(&times, 0.5), super::percentile(&times, 0.99))
}

/// What the drain measured.
pub struct Drain {
    /// Deliveries per second from the endpoint's return to the last `2xx`.
    pub rate: f64,
    /// How long publishing took (endpoint down), and the failed first attempts.
    pub published_in: Duration,
    pub failed_attempts: usize,
    /// RSS before publishing, with the backlog queued, and after the drain.
    pub rss_kib: [u64; 3],
    /// RSS as the backlog grew: (deliveries published, KiB) at each quarter.
    pub rss_while_queuing: Vec<(usize, u64)>,
}

/// Publishes `deliveries` events with the endpoint down, then times the drain.
pub async fn drain(deliveries: usize, pad: usize, url: &str, arrivals: &Arc<Arrivals>) -> Drain {
    let dir = tempfile::tempdir_in(std::env::var("BENCH_DIR").unwrap_or("/tmp".into())).unwrap();
    let clock = Arc::new(ManualClock::new(Timestamp::from_unix_millis(1_800_000_000_000)));
    let (sender, subs): (Sender, _) = open_sender_with_clock(dir.path(), 1, url, clock.clone()).await;
    arrivals.skip_first.store(true, Ordering::SeqCst);
    arrivals.first.lock().unwrap().clear();
    let rss_before = rss_kib();
    arrivals.down.store(true, Ordering::SeqCst);
    let dispatcher = sender.start();
    let base = arrivals.ok.load(Ordering::SeqCst);
    let failed_base = arrivals.count.load(Ordering::SeqCst);
    let posts = deliveries.div_ceil(EVENTS_PER_POST);
    let started = Instant::now();
    let mut changes = backlog_changes(posts, pad).take(deliveries).peekable();
    let (mut published, mut rss_while_queuing) = (0, Vec::new());
    let quarter = deliveries.div_ceil(4).max(1);
    while changes.peek().is_some() {
        let batch: Vec<_> = changes.by_ref().take(5_000).collect();
        let n = batch.len();
        sender.publish_many(batch).await.unwrap();
        if (published + n) / quarter > published / quarter {
            rss_while_queuing.push((published + n, rss_kib()));
        }
        published += n;
    }
    // Every post's first event fails once while down; then nothing is claimable.
    tokio::time::timeout(Duration::from_secs(600), sender.wait_idle())
        .await
        .expect("the failed first attempts ended")
        .unwrap();
    let published_in = started.elapsed();
    let failed_attempts = arrivals.count.load(Ordering::SeqCst) - failed_base;
    let counts = sender.delivery_counts(Some(&subs[0])).await.unwrap();
    assert_eq!(
        (counts.pending + counts.waiting) as usize,
        deliveries,
        "the whole backlog is queued"
    );
    let rss_queued = rss_kib();

    arrivals.down.store(false, Ordering::SeqCst);
    let back = Instant::now();
    clock.advance_millis(30_000);
    sender.wake();
    while arrivals.ok.load(Ordering::SeqCst) - base < deliveries {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let rate = deliveries as f64 / back.elapsed().as_secs_f64();
    assert!(clock.now() > Timestamp::from_unix_millis(1_800_000_000_000));
    dispatcher.shutdown().await;
    arrivals.skip_first.store(false, Ordering::SeqCst);
    Drain {
        rate,
        published_in,
        failed_attempts,
        rss_kib: [rss_before, rss_queued, rss_kib()],
        rss_while_queuing,
    }
}
