//! Retention over a real SQLite file with a manual clock: finished deliveries, their
//! attempts and unreferenced events go after the period, in batches; pending and held
//! deliveries and the events they refer to stay.

mod common;

use std::time::Duration;

use common::*;
use postwire_sender::retention::RetentionPolicy;
use postwire_sender::{Purged, Workspace};

const DAY_MS: i64 = 86_400_000;

fn keep_30_days(batch: usize) -> RetentionPolicy {
    RetentionPolicy {
        keep: Duration::from_secs(30 * 86_400),
        batch,
        ..RetentionPolicy::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_removes_finished_history_and_keeps_pending_and_held() {
    let h = Harness::new().await;
    let ok = Receiver::succeeding().await;
    let down = Receiver::failing().await;
    let (delivered_sub, _) = h.subscribe(&ok.url).await;
    let (held_sub, _) = h.subscribe(&ok.url).await;
    let (pending_sub, _) = h.subscribe(&down.url).await;
    h.sender.pause(&held_sub).await.unwrap();
    h.sender
        .upsert_workspace(Workspace {
            id: "ws_quiet".into(),
            name: "No subscriptions".into(),
        })
        .await
        .unwrap();

    h.sender.publish(scheduled("p1")).await.unwrap();
    let mut quiet = scheduled("p2");
    quiet.workspace_id = "ws_quiet".into();
    h.sender.publish(quiet).await.unwrap();
    h.idle().await;
    assert!(ok.wait_for_count(1, Duration::from_secs(5)).await);

    // Nothing is old yet.
    assert_eq!(
        h.sender.purge_expired(&keep_30_days(100)).await.unwrap(),
        Purged::default()
    );

    // 31 days later: the delivered one and the event nobody got are history.
    h.advance(31 * DAY_MS).await;
    let purged = h.sender.purge_expired(&keep_30_days(100)).await.unwrap();
    assert_eq!(
        purged,
        Purged {
            deliveries: 1,
            attempts: 1,
            events: 1,
            notifications: 0,
        }
    );
    assert!(
        h.sender
            .list_deliveries(&delivered_sub, None, 50)
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let held = h.sender.delivery_counts(Some(&held_sub)).await.unwrap();
    assert_eq!(held.held, 1, "held deliveries stay");
    let pending = h.sender.delivery_counts(Some(&pending_sub)).await.unwrap();
    // Still retrying (or held: 72 h of failures paused its subscription): it stays.
    assert_eq!(
        pending.pending + pending.held,
        1,
        "an unfinished delivery stays: {pending:?}"
    );
    // The event they refer to stays too, and is still found by its post.
    assert_eq!(h.sender.events_for_post(WS, "p1", 10).await.unwrap().len(), 1);
    // Running again removes nothing more.
    assert_eq!(
        h.sender.purge_expired(&keep_30_days(100)).await.unwrap(),
        Purged::default()
    );
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_works_in_batches_until_everything_due_is_gone() {
    let h = Harness::new().await;
    let ok = Receiver::succeeding().await;
    let (sub, _) = h.subscribe(&ok.url).await;
    for i in 0..25 {
        h.sender.publish(scheduled(&format!("post-{i}"))).await.unwrap();
    }
    h.idle().await;
    assert!(ok.wait_for_count(25, Duration::from_secs(10)).await);
    // Ten days later, 5 more, which are not yet due for removal.
    h.advance(10 * DAY_MS).await;
    for i in 25..30 {
        h.sender.publish(scheduled(&format!("post-{i}"))).await.unwrap();
    }
    h.idle().await;
    assert!(ok.wait_for_count(30, Duration::from_secs(10)).await);
    h.advance(25 * DAY_MS).await;
    let purged = h.sender.purge_expired(&keep_30_days(4)).await.unwrap();
    assert_eq!(
        purged,
        Purged {
            deliveries: 25,
            attempts: 25,
            events: 25,
            notifications: 0,
        }
    );
    assert_eq!(h.sender.delivery_counts(Some(&sub)).await.unwrap().delivered, 5);
    h.shutdown().await;
}
