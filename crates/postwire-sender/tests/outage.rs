//! The queue after a real outage: thousands of deliveries blocked behind failed first
//! attempts must all go out, in order per post, once the endpoint is back; and a long
//! queue behind one post's retrying head must not delay other posts. Real SQLite, real
//! loopback HTTP, the injected clock.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::*;
use postwire_sender::{DomainChange, PostChangeKind};

const SEC: i64 = 1000;

fn published() -> PostChangeKind {
    PostChangeKind::Published {
        release_url: "https://x.example/1".into(),
        release_id: "1".into(),
    }
}

/// Publishes `changes` in batches the sender accepts; returns the event ids in order.
async fn publish_all(h: &Harness, changes: Vec<DomainChange>) -> Vec<String> {
    let mut ids = Vec::with_capacity(changes.len());
    let mut changes = changes.into_iter().peekable();
    while changes.peek().is_some() {
        let batch: Vec<DomainChange> = changes.by_ref().take(postwire_sender::MAX_PUBLISH_BATCH).collect();
        for p in h.sender.publish_many(batch).await.unwrap() {
            ids.push(p.event_id().unwrap().to_owned());
        }
    }
    ids
}

/// The webhook-ids of the receiver's requests answered 2xx, in arrival order.
fn delivered_ids(rx: &Receiver, succeeded_from: usize) -> Vec<String> {
    rx.requests()[succeeded_from..].iter().map(|r| r.id()).collect()
}

/// A receiver that answers 503 while `down` is set, 200 otherwise.
async fn switchable() -> (Receiver, Arc<AtomicBool>) {
    let down = Arc::new(AtomicBool::new(true));
    let flag = down.clone();
    let rx = Receiver::start(move |_, _| {
        if flag.load(Ordering::SeqCst) {
            Reply::status(503)
        } else {
            Reply::ok()
        }
    })
    .await;
    (rx, down)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_deliveries_blocked_by_an_outage_all_go_out_in_order_when_the_endpoint_is_back() {
    const POSTS: usize = 2_600;
    let h = Harness::new().await;
    let (rx, down) = switchable().await;
    let (sub, _) = h.subscribe(&rx.url).await;
    let mut changes: Vec<DomainChange> = Vec::new();
    for kind in [
        PostChangeKind::Scheduled,
        PostChangeKind::PublishingStarted,
        published(),
    ] {
        for p in 0..POSTS {
            changes.push(change(&format!("p{p}"), "acc-1", kind.clone()).into());
        }
    }
    let ids = publish_all(&h, changes).await;
    h.idle().await;
    // Down: each post's first event was attempted once and waits for its retry; the
    // later events wait behind it and are not claimable.
    assert_eq!(rx.count(), POSTS, "one attempt per post, none of a blocked delivery");
    let counts = h.sender.delivery_counts(Some(&sub)).await.unwrap();
    assert_eq!((counts.pending, counts.waiting), (POSTS as u64, 2 * POSTS as u64));
    let failed = rx.count();

    // Back up, 30 s later: the retries go out on schedule and everything drains.
    down.store(false, Ordering::SeqCst);
    h.advance(30 * SEC).await;
    let counts = h.sender.delivery_counts(Some(&sub)).await.unwrap();
    assert_eq!(counts.delivered, 3 * POSTS as u64, "{counts:?}");
    assert_eq!((counts.pending, counts.waiting), (0, 0));
    // Each post's first event: attempted at T0, then 30 s later, as the schedule says.
    let mut attempts: HashMap<String, Vec<i64>> = HashMap::new();
    for r in rx.requests() {
        attempts.entry(r.id()).or_default().push(r.timestamp());
    }
    for head in &ids[..POSTS] {
        assert_eq!(attempts[head], [T0 / 1000, T0 / 1000 + 30], "{head}");
    }
    // Per post, the three events arrived in publish order.
    let position: HashMap<String, usize> = delivered_ids(&rx, failed)
        .into_iter()
        .enumerate()
        .map(|(i, id)| (id, i))
        .collect();
    assert_eq!(position.len(), 3 * POSTS, "each event delivered exactly once");
    for p in 0..POSTS {
        let (a, b, c) = (&ids[p], &ids[POSTS + p], &ids[2 * POSTS + p]);
        assert!(
            position[a] < position[b] && position[b] < position[c],
            "post p{p} out of order"
        );
    }
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_thousand_events_behind_one_retrying_head_wait_while_other_posts_flow() {
    const QUEUED: usize = 20_000;
    let h = Harness::new().await;
    // The hot post's first event fails on its first attempt; everything else succeeds.
    let first_failed = Arc::new(AtomicBool::new(false));
    let flag = first_failed.clone();
    let rx = Receiver::start(move |r, _| {
        let v = r.json();
        if v["data"]["post"]["id"] == "hot" && !flag.swap(true, Ordering::SeqCst) {
            Reply::status(500)
        } else {
            Reply::ok()
        }
    })
    .await;
    let (sub, _) = h.subscribe(&rx.url).await;
    let hot: Vec<DomainChange> = (0..=QUEUED)
        .map(|_| change("hot", "acc-1", PostChangeKind::Scheduled).into())
        .collect();
    let hot_ids = publish_all(&h, hot).await;
    h.idle().await;
    assert_eq!(rx.count(), 1, "the head failed; the 20,000 behind it wait");
    assert_eq!(
        h.sender.delivery_counts(Some(&sub)).await.unwrap().waiting,
        QUEUED as u64
    );

    // Other posts flow meanwhile, at once, without moving the clock.
    let others: Vec<DomainChange> = (0..200).map(|p| scheduled(&format!("o{p}")).into()).collect();
    let other_ids = publish_all(&h, others).await;
    assert!(
        rx.wait_for_count(1 + other_ids.len(), Duration::from_secs(20)).await,
        "other posts are delivered while the hot post's queue waits"
    );
    let seen: Vec<String> = delivered_ids(&rx, 1);
    assert!(other_ids.iter().all(|id| seen.contains(id)));
    assert!(!seen.iter().any(|id| hot_ids[1..].contains(id)));

    // The head's retry succeeds: the queue drains, one at a time, in publish order.
    h.clock.advance_millis(30 * SEC);
    h.sender.wake();
    assert!(
        rx.wait_for_count(1 + other_ids.len() + hot_ids.len(), Duration::from_secs(240))
            .await,
        "the hot post's queue drained"
    );
    let hot: std::collections::HashSet<&String> = hot_ids.iter().collect();
    let hot_seen: Vec<String> = delivered_ids(&rx, 1)
        .into_iter()
        .filter(|id| hot.contains(id))
        .collect();
    assert_eq!(hot_seen, hot_ids, "every event of the post, once, in publish order");
    h.shutdown().await;
}
