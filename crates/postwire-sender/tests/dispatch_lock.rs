//! One dispatching sender per SQLite file: a second one fails with a clear error instead
//! of releasing the first one's leases and delivering events twice and out of order.

use std::sync::Arc;

use postwire_core::SystemClock;
use postwire_sender::store::sqlite::SqliteStore;
use postwire_sender::{Sender, SenderConfig};

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

    // Reading and registering through the store alone stays possible (`token create`).
    assert!(SqliteStore::open(&db).is_ok());

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
