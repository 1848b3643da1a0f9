//! Resend and recover, end to end: real HTTP receivers on loopback, a real SQLite file
//! and a manual clock. A resend is a new attempt series of the same event (same
//! `webhook-id`, same body) that keeps the ordering rule; recover resends the failures
//! since a time, once, bounded.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::*;
use postwire_core::Timestamp;
use postwire_sender::{DeliveryId, DeliveryState, PostChangeKind, SenderErrorCode};

const SEC: i64 = 1000;
const MIN: i64 = 60 * SEC;
const HOUR: i64 = 60 * MIN;
/// The retry schedule's delays after the first attempt: the ninth attempt is the last.
const SCHEDULE: [i64; 8] = [
    30 * SEC,
    2 * MIN,
    10 * MIN,
    30 * MIN,
    HOUR,
    3 * HOUR,
    6 * HOUR,
    12 * HOUR,
];

/// A receiver that fails while `down` is set.
async fn switchable(down: Arc<AtomicBool>) -> Receiver {
    Receiver::start(move |_, _| {
        if down.load(Ordering::SeqCst) {
            Reply::status(503).body("down")
        } else {
            Reply::ok()
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resend_is_a_new_attempt_series_of_the_same_event() {
    let h = Harness::new().await;
    let rx = Receiver::succeeding().await;
    let (sub, secret) = h.subscribe(&rx.url).await;
    let event = h.sender.publish(scheduled("p1")).await.unwrap();
    h.idle().await;
    assert_eq!(rx.count(), 1);
    let first = h.sender.list_deliveries(&sub, None, 10).await.unwrap().items;
    assert_eq!(first[0].state, DeliveryState::Delivered);

    h.clock.advance_millis(5 * MIN);
    let new_id = h.sender.resend(&sub, first[0].id).await.unwrap();
    assert_ne!(new_id, first[0].id);
    h.idle().await;
    assert_eq!(rx.count(), 2);
    let reqs = rx.requests();
    assert_eq!(reqs[1].id(), event.event_id().unwrap(), "same webhook-id");
    assert_eq!(reqs[0].body, reqs[1].body, "same body");
    assert!(reqs[1].timestamp() > reqs[0].timestamp(), "signed afresh");
    assert!(reqs[1].verify(std::slice::from_ref(&secret)).is_ok());

    let items = h.sender.list_deliveries(&sub, None, 10).await.unwrap().items;
    assert_eq!(items.len(), 2, "the original keeps its own attempts");
    assert_eq!(items[0].id, new_id, "newest first");
    assert_eq!(items[0].event_id, items[1].event_id);
    assert_eq!(items[0].state, DeliveryState::Delivered);
    assert_eq!(items[0].attempts.len(), 1);
    assert_eq!(items[1].attempts.len(), 1);
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resend_refuses_unfinished_unknown_and_foreign_deliveries() {
    let h = Harness::new().await;
    let rx = Receiver::failing().await;
    let (sub, _) = h.subscribe(&rx.url).await;
    let (other, _) = h.subscribe(&rx.url).await;
    h.sender.publish(scheduled("p1")).await.unwrap();
    h.idle().await;
    let items = h.sender.list_deliveries(&sub, None, 10).await.unwrap().items;
    assert_eq!(items[0].state, DeliveryState::Pending, "waiting for a retry");
    let err = h.sender.resend(&sub, items[0].id).await.unwrap_err();
    assert_eq!(err.code(), SenderErrorCode::DeliveryUnfinished);
    assert_eq!(
        err.code().http_status(),
        409,
        "a state conflict, not a malformed request"
    );
    let err = h.sender.resend(&other, items[0].id).await.unwrap_err();
    assert_eq!(
        err.code(),
        SenderErrorCode::NotFound,
        "a delivery of another subscription"
    );
    let err = h.sender.resend(&sub, DeliveryId(999_999)).await.unwrap_err();
    assert_eq!(err.code(), SenderErrorCode::NotFound);
    let err = h.sender.resend("wh_nope", items[0].id).await.unwrap_err();
    assert_eq!(err.code(), SenderErrorCode::NotFound);
    assert!("dlv_0".parse::<DeliveryId>().is_err() && "x".parse::<DeliveryId>().is_err());
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resend_waits_behind_unfinished_deliveries_of_its_post() {
    let h = Harness::new().await;
    let down = Arc::new(AtomicBool::new(false));
    let rx = switchable(down.clone()).await;
    let (sub, _) = h.subscribe(&rx.url).await;
    let e1 = h.sender.publish(scheduled("p1")).await.unwrap();
    h.idle().await;
    let delivered = h.sender.list_deliveries(&sub, None, 1).await.unwrap().items[0].id;

    // A later event about the same post fails its first attempt and waits for a retry.
    down.store(true, Ordering::SeqCst);
    let e2 = h
        .sender
        .publish(change("p1", "acc-1", PostChangeKind::PublishingStarted))
        .await
        .unwrap();
    h.idle().await;
    assert_eq!(rx.count(), 2);
    // The resend of the first event queues behind it: nothing goes out now.
    down.store(false, Ordering::SeqCst);
    h.sender.resend(&sub, delivered).await.unwrap();
    h.idle().await;
    assert_eq!(
        rx.count(),
        2,
        "the resend must not overtake the unfinished delivery of its post"
    );
    h.advance(30 * SEC).await;
    let ids: Vec<String> = rx.requests().iter().map(|r| r.id()).collect();
    let (id1, id2) = (e1.event_id().unwrap().to_owned(), e2.event_id().unwrap().to_owned());
    assert_eq!(ids, vec![id1.clone(), id2.clone(), id2, id1]);
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recover_resends_the_failures_since_a_time_once_in_order() {
    let h = Harness::new().await;
    let down = Arc::new(AtomicBool::new(true));
    let rx = switchable(down.clone()).await;
    let (sub, _) = h.subscribe(&rx.url).await;
    let start = Timestamp::from_unix_millis(T0);
    // An old failure, before the window recover is asked about.
    let old = h.sender.publish(scheduled("p0")).await.unwrap();
    h.idle().await;
    for d in SCHEDULE {
        h.advance(d).await;
    }
    h.clock.advance_millis(MIN);
    let since = {
        use postwire_core::Clock;
        h.clock.now()
    };
    // Two events about one post: the second waits behind the first, then fails in turn.
    let a = h.sender.publish(scheduled("p1")).await.unwrap();
    let b = h
        .sender
        .publish(change("p1", "acc-1", PostChangeKind::PublishingStarted))
        .await
        .unwrap();
    h.idle().await;
    for d in SCHEDULE.iter().chain(SCHEDULE.iter()) {
        h.advance(*d).await;
    }
    let counts = h.sender.delivery_counts(Some(&sub)).await.unwrap();
    assert_eq!(counts.failed, 3);
    let before = rx.count();

    down.store(false, Ordering::SeqCst);
    assert_eq!(h.sender.recover(&sub, since).await.unwrap(), 2);
    h.idle().await;
    let got: Vec<String> = rx.requests()[before..].iter().map(|r| r.id()).collect();
    assert_eq!(
        got,
        vec![a.event_id().unwrap().to_owned(), b.event_id().unwrap().to_owned()],
        "in the post's order"
    );
    assert!(!got.contains(&old.event_id().unwrap().to_owned()));
    assert_eq!(h.sender.recover(&sub, since).await.unwrap(), 0, "recovered already");
    // A wider window picks up the older one, once.
    assert_eq!(h.sender.recover(&sub, start).await.unwrap(), 1);
    h.idle().await;
    assert_eq!(rx.requests().last().unwrap().id(), old.event_id().unwrap());
    assert_eq!(h.sender.recover(&sub, start).await.unwrap(), 0);

    // A `since` in the future recovers nothing, like any time after the last failure.
    let future = start.add_millis(100 * 24 * HOUR);
    assert_eq!(h.sender.recover(&sub, future).await.unwrap(), 0);
    let err = h.sender.recover("wh_nope", start).await.unwrap_err();
    assert_eq!(err.code(), SenderErrorCode::NotFound);
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recover_while_paused_holds_the_resends_until_resume() {
    let h = Harness::new().await;
    let down = Arc::new(AtomicBool::new(true));
    let rx = switchable(down.clone()).await;
    let (sub, _) = h.subscribe(&rx.url).await;
    h.sender.publish(scheduled("p1")).await.unwrap();
    h.idle().await;
    for d in SCHEDULE {
        h.advance(d).await;
    }
    let before = rx.count();
    h.sender.pause(&sub).await.unwrap();
    down.store(false, Ordering::SeqCst);
    assert_eq!(
        h.sender.recover(&sub, Timestamp::from_unix_millis(T0)).await.unwrap(),
        1
    );
    h.idle().await;
    assert_eq!(rx.count(), before, "held while paused");
    assert_eq!(h.sender.delivery_counts(Some(&sub)).await.unwrap().held, 1);
    let (_, summary) = h.sender.resume(&sub).await.unwrap();
    assert_eq!(summary.released, 1);
    h.idle().await;
    assert_eq!(rx.count(), before + 1);
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recover_is_bounded_per_call_and_each_failure_is_recovered_once() {
    // The store under the sender, to ask for small batches (the sender's bound is
    // MAX_RECOVER, too many failures for a subscription that pauses after 50).
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(postwire_core::ManualClock::new(Timestamp::from_unix_millis(T0)));
    let store = postwire_sender::SqliteStore::open(dir.path().join("s.db")).unwrap();
    let sender = postwire_sender::Sender::open(test_config(), clock.clone(), Arc::new(store.clone()))
        .await
        .unwrap();
    sender
        .upsert_workspace(postwire_sender::Workspace {
            id: WS.into(),
            name: "T".into(),
        })
        .await
        .unwrap();
    let dispatcher = sender.start();
    let rx = Receiver::failing().await;
    let sub = sender
        .create_subscription(postwire_sender::NewSubscription {
            workspace_id: WS.into(),
            name: "t".into(),
            url: rx.url.clone(),
            events: vec![],
            integration_ids: vec![],
            created_by_kind: postwire_core::CreatedByKind::Dashboard,
            signing: Default::default(),
        })
        .await
        .unwrap()
        .subscription
        .id;
    let changes: Vec<postwire_sender::DomainChange> = (0..5)
        .map(|_| {
            postwire_sender::TestEvent {
                workspace_id: WS.into(),
                subscription_id: Some(sub.clone()),
                message: "t".into(),
            }
            .into()
        })
        .collect();
    sender.publish_many(changes).await.unwrap();
    sender.wait_idle().await.unwrap();
    for d in SCHEDULE {
        clock.advance_millis(d);
        sender.wait_idle().await.unwrap();
    }
    assert_eq!(sender.delivery_counts(Some(&sub)).await.unwrap().failed, 5);
    sender.pause(&sub).await.unwrap();
    use postwire_core::Clock;
    use postwire_sender::Store;
    let (since, now) = (Timestamp::from_unix_millis(T0), clock.now());
    let mut batches = Vec::new();
    for _ in 0..4 {
        batches.push(store.recover_failed(sub.clone(), since, now, 2).await.unwrap().unwrap());
    }
    assert_eq!(batches, vec![2, 2, 1, 0]);
    assert_eq!(sender.delivery_counts(Some(&sub)).await.unwrap().held, 5);
    assert_eq!(sender.recover(&sub, since).await.unwrap(), 0);
    assert!(
        store
            .recover_failed("wh_nope".into(), since, now, 2)
            .await
            .unwrap()
            .is_none()
    );
    dispatcher.shutdown().await;
}
