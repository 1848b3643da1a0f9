//! Tests of the SQLite store that need its insides: schema versions, index plans, leases,
//! row numbers, and claims beside commits.
use super::queue::*;
use super::schema::*;
use super::*;
use crate::model::{AttemptErrorKind, AttemptOutcome};
use crate::store::{FinishedAttempt, NextState};
use postwire_core::{CreatedByKind, SubscriptionStatus};
use rusqlite::OptionalExtension;

#[test]
fn a_file_of_another_schema_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    drop(SqliteStore::open(&path).unwrap());
    // Reopening a file of this version works.
    drop(SqliteStore::open(&path).unwrap());
    Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA user_version=99")
        .unwrap();
    let err = SqliteStore::open(&path).unwrap_err();
    assert_eq!(err.code(), crate::SenderErrorCode::Internal);
    assert!(err.to_string().contains("schema version 99"));
}

/// A store with workspace `ws` and one subscription, and the time of the tests.
async fn store_with_a_subscription() -> (tempfile::TempDir, SqliteStore, Timestamp) {
    use postwire_core::Subscription;
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
    let t0 = Timestamp::from_unix_millis(1_800_000_000_000);
    store
        .upsert_workspace(Workspace {
            id: "ws".into(),
            name: "ws".into(),
        })
        .await
        .unwrap();
    store
        .insert_subscription(
            StoredSubscription {
                workspace_id: "ws".into(),
                subscription: Subscription {
                    id: "wh_1".into(),
                    name: "s".into(),
                    url: "https://example.com/hook".into(),
                    events: vec![],
                    integrations: vec![],
                    status: SubscriptionStatus::Enabled,
                    created_by_kind: CreatedByKind::ApiToken,
                    consecutive_failures: 0,
                    last_success_at: None,
                    created_at: t0,
                },
                secret: Secret::generate().unwrap(),
                previous_secret: None,
                failing_since: None,
            },
            None,
        )
        .await
        .unwrap();
    (dir, store, t0)
}

fn test_event(at: Timestamp) -> BuiltEvent {
    let change = crate::events::TestEvent {
        workspace_id: "ws".into(),
        subscription_id: None,
        message: "m".into(),
    }
    .into();
    crate::events::build_event(&change, Event::generate_id(at).unwrap(), at)
        .unwrap()
        .unwrap()
}

fn claim_at(now: Timestamp) -> ClaimRequest {
    ClaimRequest {
        now,
        limit: 10_000,
        lease_until: now.add_millis(120_000),
        owner: "test".into(),
        per_subscription_limit: 10_000,
        in_flight: HashMap::new(),
    }
}

#[tokio::test]
async fn a_claimed_delivery_whose_outcome_is_never_written_is_claimed_again_when_its_lease_ends() {
    let (_dir, store, t0) = store_with_a_subscription().await;
    assert_eq!(store.enqueue(vec![test_event(t0)], t0, None).await.unwrap(), vec![1]);
    let first = store.claim(claim_at(t0)).await.unwrap();
    assert_eq!(first.len(), 1);
    // Nothing recorded (as if the outcome's write failed): leased, so not claimable...
    assert!(store.claim(claim_at(t0.add_millis(119_999))).await.unwrap().is_empty());
    // ...until the lease ends, with no other write to the subscription in between.
    let again = store.claim(claim_at(t0.add_millis(120_000))).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].id, first[0].id);
    assert_eq!(again[0].body, first[0].body);
}

/// A first claim takes what it needs from memory (`fresh.rs`); a retry must read the
/// row, with its attempt count, from the file.
#[tokio::test]
async fn a_retried_delivery_is_claimed_with_its_attempt_count_and_the_same_body() {
    let (_dir, store, t0) = store_with_a_subscription().await;
    let event = test_event(t0);
    let (id, body) = (event.event.id.clone(), event.body.clone());
    store.enqueue(vec![event], t0, None).await.unwrap();
    let first = store.claim(claim_at(t0)).await.unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!((first[0].attempt, first[0].event_id.as_str()), (1, id.as_str()));
    assert_eq!(first[0].body, body.as_bytes());
    store
        .record_attempts(
            vec![FinishedAttempt {
                delivery: first[0].id,
                subscription_id: first[0].subscription_id.clone(),
                attempt: 1,
                started_at: t0,
                duration_ms: 1,
                outcome: AttemptOutcome::Error {
                    error: AttemptErrorKind::Connection,
                },
                next: NextState::RetryAt(t0.add_millis(30_000)),
            }],
            t0,
        )
        .await
        .unwrap();
    let retry = store.claim(claim_at(t0.add_millis(30_000))).await.unwrap();
    assert_eq!(retry.len(), 1);
    assert_eq!((retry[0].id, retry[0].attempt), (first[0].id, 2));
    assert_eq!(
        (retry[0].event_id.as_str(), &retry[0].body),
        (id.as_str(), &first[0].body)
    );
}

/// In-memory state is keyed by delivery row (leases, `fresh.rs`): SQLite would give
/// the row numbers of deleted deliveries again, the store does not.
#[tokio::test]
async fn delivery_rows_are_never_numbered_twice_while_the_store_is_open() {
    let (_dir, store, t0) = store_with_a_subscription().await;
    store.enqueue(vec![test_event(t0)], t0, None).await.unwrap();
    let before = store.claim(claim_at(t0)).await.unwrap()[0].id;
    let sub = store.subscription("wh_1".into()).await.unwrap().unwrap();
    assert!(store.delete_subscription("wh_1".into()).await.unwrap());
    // The same subscription again, with none of its old deliveries left.
    store.insert_subscription(sub, None).await.unwrap();
    store.enqueue(vec![test_event(t0)], t0, None).await.unwrap();
    let after = store.claim(claim_at(t0)).await.unwrap()[0].id;
    assert!(after.0 > before.0, "{after:?} after {before:?}");
}

/// Claims read a snapshot on their own connection while writes commit: a claim whose
/// snapshot missed a commit must not leave that commit's deliveries unclaimable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_beside_commits_leave_no_published_delivery_unclaimable() {
    const EVENTS: usize = 400;
    let (_dir, store, t0) = store_with_a_subscription().await;
    let publisher = {
        let store = store.clone();
        tokio::spawn(async move {
            for _ in 0..EVENTS {
                store.enqueue(vec![test_event(t0)], t0, None).await.unwrap();
            }
        })
    };
    let mut claimed = 0;
    while !publisher.is_finished() {
        claimed += store.claim(claim_at(t0)).await.unwrap().len();
    }
    publisher.await.unwrap();
    // What is left is claimable now, by the store's own hints.
    claimed += store.claim(claim_at(t0)).await.unwrap().len();
    assert_eq!(claimed, EVENTS);
}

#[test]
fn hot_queries_use_their_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    drop(SqliteStore::open(&path).unwrap());
    let conn = Connection::open(&path).unwrap();
    let plan = |sql: &str| -> String {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let n = stmt.parameter_count();
        let rows = stmt
            .query_map(rusqlite::params_from_iter(std::iter::repeat_n(1, n)), |r| {
                r.get::<_, String>(3)
            })
            .unwrap();
        rows.map(Result::unwrap).collect::<Vec<_>>().join("; ")
    };
    for (sql, index) in [
        (QUEUE_SQL, "COVERING INDEX deliveries_due"),
        (KEY_OPEN_SQL, "INDEX deliveries_open"),
        (PROMOTE_SQL, "INDEX deliveries_open"),
        (HOLD_PENDING_SQL, "INDEX deliveries_due"),
        (HOLD_WAITING_SQL, "INDEX deliveries_open"),
        (REQUEUE_WAITING_SQL, "INDEX deliveries_open"),
        (EXPIRE_HELD_SQL, "INDEX deliveries_held"),
        (RELEASE_HELD_SQL, "INDEX deliveries_held"),
        (super::requeue::RECOVERABLE_SQL, "INDEX deliveries_failed"),
    ] {
        let p = plan(sql);
        assert!(p.contains(index), "{sql}\n  is planned as: {p}");
        assert!(!p.contains("TEMP B-TREE"), "{sql}\n  sorts: {p}");
    }
}

#[test]
fn files_of_versions_1_to_5_are_migrated() {
    let shapes = [
        // Version 1: the due index keyed by time first, ordering over unfinished rows.
        "DROP INDEX deliveries_due; DROP INDEX deliveries_open; DROP INDEX deliveries_held;
         CREATE INDEX deliveries_due ON deliveries (due_at, seq, sub_seq, okey) WHERE state = 0;
         CREATE INDEX deliveries_queue ON deliveries (sub_seq, okey, seq) WHERE state <= 1;
         PRAGMA user_version=1;",
        // Version 2: ordering over every keyed row.
        "DROP INDEX deliveries_open;
         CREATE INDEX deliveries_order ON deliveries (sub_seq, okey, seq) WHERE okey IS NOT NULL;
         PRAGMA user_version=2;",
        // Version 3: a unique index on event ids.
        "DROP INDEX deliveries_open;
         CREATE INDEX deliveries_retrying ON deliveries (sub_seq, okey, seq)
             WHERE state = 0 AND attempts > 0 AND okey IS NOT NULL;
         PRAGMA user_version=3;",
        // Version 4: the same, without the unique index on event ids.
        "DROP INDEX deliveries_open;
         CREATE INDEX deliveries_retrying ON deliveries (sub_seq, okey, seq)
             WHERE state = 0 AND attempts > 0 AND okey IS NOT NULL;
         PRAGMA user_version=4;",
        // Version 5: the queue of heads, without the resend marks.
        "ALTER TABLE events ADD COLUMN external_key INTEGER;
         PRAGMA user_version=5;",
    ];
    for shape in shapes {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        drop(SqliteStore::open(&path).unwrap());
        // Versions before 4 had the unique index on event ids; each has an event.
        let unique = if shape.contains("user_version=4") || shape.contains("user_version=5") {
            ""
        } else {
            "UNIQUE"
        };
        Connection::open(&path)
            .unwrap()
            .execute_batch(&format!(
                "DROP TABLE events;
                 CREATE TABLE events (
                     seq INTEGER PRIMARY KEY, id TEXT NOT NULL {unique}, workspace_id TEXT NOT NULL,
                     event_type TEXT NOT NULL, post_id TEXT, created_at INTEGER NOT NULL, body TEXT NOT NULL);
                 INSERT INTO events VALUES (7, 'msg_1', 'ws', 'post.published', 'p1', 1, '{{}}');
                 INSERT INTO events VALUES (8, 'msg_2', 'ws', 'post.scheduled', 'p2', 2,
                     '{{\"data\": {{\"post\": {{\"id\": \"p2\", \"externalId\": \"order-9\"}}}}}}');
                 -- Before version 5, every unfinished delivery was pending: two of key 42
                 -- (one retrying), one of key 43, one finished of key 42, one keyless.
                 DROP INDEX deliveries_failed;
                 ALTER TABLE deliveries DROP COLUMN resent_as;
                 INSERT INTO deliveries (seq, sub_seq, event_seq, okey, state, attempts, due_at, created_at, finished_at)
                     VALUES (1, 1, 7, 42, 2, 1, 0, 0, 5), (2, 1, 7, 42, 0, 1, 9, 0, NULL),
                            (3, 1, 7, 42, 0, 0, 0, 0, NULL), (4, 1, 7, 43, 0, 0, 0, 0, NULL),
                            (5, 1, 7, NULL, 0, 0, 0, 0, NULL);
                 {shape}"
            ))
            .unwrap();
        drop(SqliteStore::open(&path).unwrap());
        let conn = Connection::open(&path).unwrap();
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        let index = |name: &str| -> Option<String> {
            conn.query_row("SELECT sql FROM sqlite_master WHERE name = ?1", [name], |r| r.get(0))
                .optional()
                .unwrap()
        };
        let due = index("deliveries_due").unwrap();
        assert!(due.contains("(sub_seq, due_at, seq) WHERE"), "{due}");
        assert!(index("deliveries_open").is_some());
        assert_eq!(index("deliveries_retrying"), None);
        let states: Vec<(i64, i64)> = conn
            .prepare("SELECT seq, state FROM deliveries ORDER BY seq")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        if shape.contains("user_version=5") {
            // Already sorted into heads and waiting ones by then (this file was not).
            assert_eq!(states.len(), 5);
        } else {
            assert_eq!(
                states,
                [(1, DELIVERED), (2, PENDING), (3, WAITING), (4, PENDING), (5, PENDING)],
                "only the head of each key stays pending"
            );
        }
        // Version 6: resend marks, and the index of failed deliveries.
        let unmarked: i64 = conn
            .query_row("SELECT COUNT(*) FROM deliveries WHERE resent_as IS NULL", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(unmarked, 5);
        assert!(index("deliveries_failed").is_some());
        assert!(index("deliveries_held").is_some());
        assert_eq!(index("deliveries_queue"), None);
        assert_eq!(index("deliveries_order"), None);
        assert!(index("events_post").is_some());
        let unique: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM pragma_index_list('events') WHERE \"unique\"",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(unique, 0);
        // Events stored before version 5 are found by their external id.
        let key: Option<i64> = conn
            .query_row("SELECT external_key FROM events WHERE seq = 8", [], |r| r.get(0))
            .unwrap();
        if !shape.contains("user_version=5") {
            assert_eq!(key, Some(external_key("ws", "order-9")));
        }
        let kept: (i64, String, String) = conn
            .query_row("SELECT seq, id, post_id FROM events WHERE seq = 7", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .unwrap();
        assert_eq!(kept, (7, "msg_1".to_owned(), "p1".to_owned()));
    }
}

/// A first request that died after beginning its key (no work committed) holds the key
/// for the lease only; then a retry starts it afresh, and the dead request's lease can
/// no longer complete it, so its work could never commit beside the retry's.
#[tokio::test]
async fn an_idempotency_key_whose_request_died_is_taken_over_after_its_lease_and_fenced() {
    use crate::idempotency::{Completion, Decision, IN_PROGRESS_LEASE_MS, IdempotencyKey, Response};
    let (_dir, store, t0) = store_with_a_subscription().await;
    let key = IdempotencyKey::new("tok", "k", b"request").unwrap();
    let Decision::Start { lease_until_ms: dead } = store.begin_idempotent(key.clone(), t0).await.unwrap() else {
        panic!("a new key starts")
    };
    let retry_early = store.begin_idempotent(key.clone(), t0.add_millis(1_000)).await.unwrap();
    assert_eq!(retry_early, Decision::InProgress);
    let later = t0.add_millis(IN_PROGRESS_LEASE_MS);
    let Decision::Start { lease_until_ms: live } = store.begin_idempotent(key.clone(), later).await.unwrap() else {
        panic!("taken over once the lease ended")
    };
    let completion = |lease_until_ms| Completion {
        key: key.clone(),
        lease_until_ms,
        response: Response::FromCounts(Box::new(|counts| format!("{counts:?}"))),
        created: None,
    };
    // The dead request's commit fails, and takes its events with it.
    assert!(
        store
            .enqueue(vec![test_event(later)], later, Some(completion(dead)))
            .await
            .is_err()
    );
    assert_eq!(store.delivery_counts(None).await.unwrap(), DeliveryCounts::default());
    assert_eq!(
        store
            .enqueue(vec![test_event(later)], later, Some(completion(live)))
            .await
            .unwrap(),
        vec![1]
    );
    assert_eq!(
        store.begin_idempotent(key.clone(), later.add_millis(1)).await.unwrap(),
        Decision::Replay("[1]".into())
    );
}
