//! Tests of the SQLite store that need its insides: schema versions, index plans and
//! migrations. The behaviour both backends share is tested in `store/conformance.rs`.
use super::queue::*;
use super::schema::*;
use super::*;
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
    // The metrics' counts read the three partial indexes, never the whole table.
    let p = plan(super::reads::QUEUE_COUNTS_SQL);
    assert_eq!(p.matches("INDEX deliveries_").count(), 3, "{p}");
    for index in ["deliveries_due", "deliveries_open", "deliveries_held"] {
        assert!(p.contains(index), "{p}");
    }
    // A look-up's range of event numbers reads the two ends of the table, no more.
    let p = plan(super::reads::EVENT_RANGE_SQL);
    assert!(!p.contains("SCAN events"), "{p}");
    // The public key set is one read of its unique index.
    let p = plan(&super::registry::key_set_sql());
    assert!(p.contains("INDEX workspaces_key_set"), "{p}");
}

#[test]
fn files_of_versions_1_to_7_are_migrated() {
    // From version 5 on, events kept the plain hash of their external id.
    let legacy_key = external_key("ws", "order-9");
    // What each version added to the shape of the file this test starts from.
    let since_5 = format!(
        "ALTER TABLE events ADD COLUMN external_key INTEGER;
         UPDATE events SET external_key = {legacy_key} WHERE seq = 8;"
    );
    let since_6 = "ALTER TABLE deliveries ADD COLUMN resent_as INTEGER;
         CREATE INDEX deliveries_failed ON deliveries (sub_seq, finished_at, seq) WHERE state = 3;";
    let since_7 = "ALTER TABLE subscriptions ADD COLUMN signing TEXT NOT NULL DEFAULT 'symmetric';
         ALTER TABLE workspaces ADD COLUMN signing_key TEXT;
         ALTER TABLE workspaces ADD COLUMN signing_key_created_at INTEGER;
         ALTER TABLE workspaces ADD COLUMN previous_signing_key TEXT;
         ALTER TABLE workspaces ADD COLUMN previous_signing_key_created_at INTEGER;
         ALTER TABLE workspaces ADD COLUMN previous_signing_key_until INTEGER;";
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
        &format!("{since_5} PRAGMA user_version=5;"),
        // Version 6: before the `v1a` extension.
        &format!("{since_5} {since_6} PRAGMA user_version=6;"),
        // Version 7: before external-id keys had buckets.
        &format!("{since_5} {since_6} {since_7} PRAGMA user_version=7;"),
    ];
    for shape in shapes.map(str::to_owned) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        drop(SqliteStore::open(&path).unwrap());
        // Versions before 4 had the unique index on event ids; each has an event.
        let sorted = ["user_version=5", "user_version=6", "user_version=7"]
            .iter()
            .any(|v| shape.contains(v));
        let unique = if shape.contains("user_version=4") || sorted {
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
                 -- Before version 11, no published key sets.
                 DROP INDEX workspaces_key_set;
                 ALTER TABLE workspaces DROP COLUMN key_set_id;
                 -- Before version 7, no `v1a`: no signing choice, no workspace keys.
                 ALTER TABLE subscriptions DROP COLUMN signing;
                 ALTER TABLE workspaces DROP COLUMN signing_key;
                 ALTER TABLE workspaces DROP COLUMN signing_key_created_at;
                 ALTER TABLE workspaces DROP COLUMN previous_signing_key;
                 ALTER TABLE workspaces DROP COLUMN previous_signing_key_created_at;
                 ALTER TABLE workspaces DROP COLUMN previous_signing_key_until;
                 -- Before version 10, no operational notices: pause notices only.
                 ALTER TABLE subscriptions DROP COLUMN purpose;
                 ALTER TABLE subscriptions DROP COLUMN pause_warned;
                 DROP TABLE notifications;
                 CREATE TABLE notifications (
                     id INTEGER PRIMARY KEY, workspace_id TEXT NOT NULL, subscription_id TEXT NOT NULL,
                     cause TEXT NOT NULL, message TEXT NOT NULL, created_at INTEGER NOT NULL);
                 INSERT INTO notifications VALUES (1, 'ws', 'wh_1', 'consecutive_failures', 'paused', 5);
                 INSERT INTO workspaces (id, name) VALUES ('ws', 'ws');
                 INSERT INTO subscriptions (id, workspace_id, name, url, events, integrations, created_by_kind,
                     created_at, secret) VALUES ('wh_1', 'ws', 's', 'https://example.com/h', '[]', '[]',
                     'api_token', 1, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
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
        if sorted {
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
        // Version 10: a pause notice of before is an `endpoint.paused`, never relayed now.
        let notice: (String, String, bool) = conn
            .query_row(
                "SELECT kind, (SELECT purpose FROM subscriptions), relayed_at IS NOT NULL FROM notifications",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(notice, ("endpoint.paused".into(), "events".into(), true));
        assert!(index("notifications_unrelayed").is_some());
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
        assert_eq!(key, Some(legacy_key));
        // ... and a look-up still finds them (by the plain hash, probed after the buckets).
        let store = SqliteStore::open(&path).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let found = runtime
            .block_on(store.posts_with_external_id("ws".into(), "order-9".into(), 20))
            .unwrap();
        assert_eq!(found, ["p2"]);
        drop(store);
        let kept: (i64, String, String) = conn
            .query_row("SELECT seq, id, post_id FROM events WHERE seq = 7", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .unwrap();
        assert_eq!(kept, (7, "msg_1".to_owned(), "p1".to_owned()));
        // Version 7: existing subscriptions keep the spec's signatures; workspaces have
        // room for a key pair, none made yet.
        let signing: String = conn
            .query_row("SELECT signing FROM subscriptions WHERE id = 'wh_1'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(signing, "symmetric");
        let key: Option<String> = conn
            .query_row("SELECT signing_key FROM workspaces WHERE id = 'ws'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(key, None);
        let key_columns: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM pragma_table_info('workspaces') WHERE name LIKE '%signing_key%'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(key_columns, 5);
    }
}

/// Erasure leaves no copy of a body in the file or its WAL (`secure_delete` and the
/// truncating checkpoint), and stays after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_erased_body_is_gone_from_the_file_and_its_wal_and_stays_erased_after_a_restart() {
    use crate::store::conformance::{Backend, erase_a_marked_post, files_hold, store_with_a_subscription};
    let (guard, store, t0) = store_with_a_subscription(Backend::Sqlite).await;
    let dir = guard.downcast_ref::<tempfile::TempDir>().unwrap().path().to_path_buf();
    let path = dir.join("s.db");
    let wal = dir.join("s.db-wal");
    let marker = erase_a_marked_post(&*store, t0, async |marker: &str| {
        // Before: the bodies are in the files (so the scan below can fail).
        assert!(files_hold(&path, marker.as_bytes()) || files_hold(&wal, marker.as_bytes()));
    })
    .await;
    assert!(
        !files_hold(&path, marker.as_bytes()),
        "the database file still holds an erased body"
    );
    assert!(
        !files_hold(&wal, marker.as_bytes()),
        "the WAL still holds an erased body"
    );
    drop(store);
    let store = SqliteStore::open(&path).unwrap();
    let list = store.list_deliveries("wh_1".into(), None, 1000).await.unwrap();
    let erased = list.iter().filter(|d| d.payload_erased).count();
    assert_eq!(erased, 200);
    assert!(list.iter().all(|d| d.payload_erased == d.payload.is_empty()));
    assert!(!files_hold(&dir, marker.as_bytes()));
}

/// An erasure finds its events through an index (the post's or the account's), and its
/// cancellation finds deliveries by event.
#[test]
fn erasure_queries_use_their_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    drop(SqliteStore::open(&path).unwrap());
    let conn = Connection::open(&path).unwrap();
    for (sql, index) in [
        (super::erasure::POST_EVENTS_SQL, "INDEX events_post"),
        (super::erasure::ACCOUNT_EVENTS_SQL, "INDEX events_account"),
        (super::erasure::CANCEL_SQL, "INDEX deliveries_event"),
    ] {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let n = stmt.parameter_count();
        let plan: Vec<String> = stmt
            .query_map(rusqlite::params_from_iter(std::iter::repeat_n(1, n)), |r| r.get(3))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let plan = plan.join("; ");
        assert!(plan.contains(index), "{sql}\n  is planned as: {plan}");
        assert!(!plan.contains("TEMP B-TREE"), "{sql}\n  sorts: {plan}");
    }
}

/// A file of version 10 (before published key sets) is migrated: each workspace with a key
/// pair gets a key-set id of the form new ones have, different for each, found by the
/// store; a workspace without a key gets none (it is made with the first key).
#[test]
fn a_version_10_file_gets_key_set_ids_for_its_key_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    drop(SqliteStore::open(&path).unwrap());
    let key = postwire_core::SigningKey::generate().unwrap();
    Connection::open(&path)
        .unwrap()
        .execute_batch(&format!(
            "DROP INDEX workspaces_key_set;
             ALTER TABLE workspaces DROP COLUMN key_set_id;
             INSERT INTO workspaces (id, name, signing_key, signing_key_created_at)
                 VALUES ('a', 'a', '{k}', 1), ('b', 'b', '{k}', 2);
             INSERT INTO workspaces (id, name) VALUES ('c', 'c');
             PRAGMA user_version=10;",
            k = key.expose()
        ))
        .unwrap();
    let store = SqliteStore::open(&path).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let ids: Vec<Option<String>> = ["a", "b", "c"]
        .iter()
        .map(|ws| {
            runtime
                .block_on(store.signing_keys((*ws).into()))
                .unwrap()
                .map(|k| k.key_set_id)
        })
        .collect();
    let (a, b) = (ids[0].clone().unwrap(), ids[1].clone().unwrap());
    assert!(
        crate::signing::is_key_set_id(&a) && crate::signing::is_key_set_id(&b),
        "{a} {b}"
    );
    assert_ne!(a, b);
    assert_eq!(ids[2], None);
    let found = runtime.block_on(store.key_set(a)).unwrap().unwrap();
    assert_eq!(found.current, key.into());
    drop(store);
    let version: i64 = Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
}
