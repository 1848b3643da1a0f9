//! One store per SQLite file: a second one fails with a clear error instead of releasing
//! the first one's leases and delivering events twice and out of order. And a sender
//! that the host drops without `shutdown()` stops and lets go of its file.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use postwire_core::SystemClock;
use postwire_sender::{Sender, SenderConfig, SenderError, SqliteStore, Workspace, register_workspaces};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_sender_on_the_same_file_is_refused_until_the_first_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("webhooks.db");
    let open = || Sender::open_sqlite(&db, SenderConfig::default(), Arc::new(SystemClock));

    let first = open().await.unwrap();
    let err = open().await.unwrap_err();
    assert_eq!(err.code().as_str(), "internal_error");
    assert!(err.to_string().contains("already dispatching from"), "{err}");
    assert!(err.to_string().contains("webhooks.db"), "{err}");
    // The lock is the store's own: no path around it.
    let err = SqliteStore::open(&db).unwrap_err();
    assert!(err.to_string().contains("already dispatching from"), "{err}");

    // Registering workspaces through the file stays possible (`token create`).
    let ws = |id: &str| Workspace {
        id: id.into(),
        name: "renamed?".into(),
    };
    assert_eq!(register_workspaces(&db, &[ws("ws_a")]).unwrap(), ["ws_a"]);
    assert!(register_workspaces(&db, &[ws("ws_a")]).unwrap().is_empty());
    assert!(first.workspace("ws_a").await.unwrap().is_some());

    // A sender on another file is unaffected.
    let other = dir.path().join("other.db");
    assert!(
        Sender::open_sqlite(&other, SenderConfig::default(), Arc::new(SystemClock))
            .await
            .is_ok()
    );

    let dispatcher = first.start();
    dispatcher.shutdown().await;
    drop(first);
    assert!(open().await.is_ok(), "the lock is released with the sender");
}

/// Opens `db` again, waiting up to 5 s for the previous sender's tasks to end.
async fn reopen(db: &std::path::Path, clock: Arc<postwire_core::ManualClock>) -> Sender {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match Sender::open_sqlite(db, test_config(), clock.clone()).await {
            Ok(s) => return s,
            Err(e @ SenderError::Storage { .. }) if Instant::now() < deadline => {
                assert!(e.to_string().contains("already dispatching"), "{e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("the file stayed locked after the sender was dropped: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_dropped_without_shutdown_stops_dispatching_and_releases_its_file() {
    // SQLite's file lock, whatever backend the rest of the suite runs on.
    let mut h = Harness::stopped_on(Db::sqlite(), test_config()).await;
    h.dispatcher = Some(h.sender.start());
    let rx = Receiver::succeeding().await;
    h.subscribe(&rx.url).await;
    h.sender.publish(scheduled("p1")).await.unwrap();
    h.idle().await;
    assert_eq!(rx.count(), 1);
    let db = h.db.sqlite_path();

    // Dropped, handle and sender, without shutdown().
    let (sender, dispatcher) = (h.sender.clone(), h.dispatcher.take());
    drop(dispatcher);
    let clone = sender.clone();
    drop(sender);
    // A clone keeps it running: it still delivers.
    clone.publish(scheduled("p2")).await.unwrap();
    assert!(rx.wait_for_count(2, Duration::from_secs(5)).await);
    drop(clone);
    let Harness { sender, clock, dir, .. } = h;
    drop(sender);

    // The same file opens again in this process, and the old dispatcher is gone: what
    // is published now goes out once, through the new sender.
    let again = reopen(&db, clock).await;
    let dispatcher = again.start();
    again.publish(scheduled("p3")).await.unwrap();
    assert!(rx.wait_for_count(3, Duration::from_secs(5)).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rx.count(), 3, "no second dispatcher sent anything");
    dispatcher.shutdown().await;
    drop(dir);
}
