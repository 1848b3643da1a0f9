//! The file's layout: opening it in WAL mode, the schema, its version and the
//! migrations from older versions, the one-store-per-file lock, and the registration of
//! workspaces that works beside a running store.

use std::path::Path;

use rusqlite::{Connection, params};

use super::*;
use crate::error::SenderError;
use crate::model::Workspace;
use crate::store::StoreResult;

/// The layout of the file, kept in `PRAGMA user_version`; a file of another version is
/// refused rather than misread.
pub(super) const SCHEMA_VERSION: i64 = 11;

/// What turns a file of an older version into the next one, by version; a file is
/// brought up to date by every step from its version on, then by `SCHEMA`.
pub(super) const MIGRATIONS: &[(i64, &str)] = &[
    // 1 -> 2: the due index is keyed by subscription first (claims read one queue each);
    // the ordering index covers every keyed delivery, and held ones get their own.
    (
        1,
        "DROP INDEX IF EXISTS deliveries_due; DROP INDEX IF EXISTS deliveries_queue;",
    ),
    // 2 -> 3: ordering looks up only deliveries waiting for a retry (see the module doc).
    (2, "DROP INDEX IF EXISTS deliveries_order;"),
    // 3 -> 4: event ids lose their UNIQUE index, which no query read (the table is
    // rebuilt: SQLite cannot drop a column constraint in place).
    (
        3,
        "CREATE TABLE events_v4 (
             seq INTEGER PRIMARY KEY, id TEXT NOT NULL, workspace_id TEXT NOT NULL,
             event_type TEXT NOT NULL, post_id TEXT, created_at INTEGER NOT NULL, body TEXT NOT NULL);
         INSERT INTO events_v4 SELECT seq, id, workspace_id, event_type, post_id, created_at, body FROM events;
         DROP TABLE events;
         ALTER TABLE events_v4 RENAME TO events;",
    ),
    // 4 -> 5: only queue heads are pending. Every unfinished keyed delivery behind an
    // earlier unfinished one of its (subscription, key) waits (state 5), so claims never
    // read blocked rows; the index of deliveries waiting for a retry is replaced by the
    // index of open keys, and the due index no longer needs the key. Events keep a hash
    // of their post's external id (`backfill_external_keys` computes it for existing
    // ones), which the server kept in a table of its own, written after the commit.
    (
        4,
        "DROP INDEX IF EXISTS deliveries_retrying;
         DROP INDEX IF EXISTS deliveries_due;
         CREATE INDEX IF NOT EXISTS deliveries_open ON deliveries (sub_seq, okey, seq)
             WHERE finished_at IS NULL AND okey IS NOT NULL;
         UPDATE deliveries SET state = 5
             WHERE state = 0 AND finished_at IS NULL AND okey IS NOT NULL AND EXISTS (
                 SELECT 1 FROM deliveries p WHERE p.sub_seq = deliveries.sub_seq AND p.okey = deliveries.okey
                     AND p.finished_at IS NULL AND p.okey IS NOT NULL AND p.seq < deliveries.seq);
         ALTER TABLE events ADD COLUMN external_key INTEGER;",
    ),
    // 5 -> 6: a delivery that was resent (or recovered) names its new delivery, so
    // recover skips it; failed deliveries get an index of their own (`requeue.rs`).
    (5, "ALTER TABLE deliveries ADD COLUMN resent_as INTEGER;"),
    // 6 -> 7: the `v1a` extension. Each subscription says which signatures it gets
    // (existing ones keep the spec's `symmetric`); a workspace keeps its ed25519 signing
    // key (sealed like the secrets) and, during a rotation, the previous one.
    (
        6,
        "ALTER TABLE subscriptions ADD COLUMN signing TEXT NOT NULL DEFAULT 'symmetric';
         ALTER TABLE workspaces ADD COLUMN signing_key TEXT;
         ALTER TABLE workspaces ADD COLUMN signing_key_created_at INTEGER;
         ALTER TABLE workspaces ADD COLUMN previous_signing_key TEXT;
         ALTER TABLE workspaces ADD COLUMN previous_signing_key_created_at INTEGER;
         ALTER TABLE workspaces ADD COLUMN previous_signing_key_until INTEGER;",
    ),
    // 7 -> 8: new events' external-id keys carry their bucket of event numbers
    // (`external_key_in_bucket`); events stored before keep the plain hash, which a
    // look-up also probes. Nothing to rewrite; the version keeps an older sender, which
    // would miss the new keys, from reading the file.
    (7, ""),
    // 8 -> 9: erasure (`erasure.rs`). An account's events name it in `account_id` (taken
    // from the bodies of the events stored before), and an erased event keeps its row
    // with `erased_at` set and an empty body.
    (
        8,
        "ALTER TABLE events ADD COLUMN account_id TEXT;
         ALTER TABLE events ADD COLUMN erased_at INTEGER;
         UPDATE events SET account_id = json_extract(body, '$.data.integration.id')
             WHERE event_type LIKE 'integration.%';",
    ),
    // 9 -> 10: operational notices (`crate::notices`). A subscription is a subscriber's or
    // an operator endpoint, and remembers whether its failing run was warned of; a
    // notification has a type, a `webhook-id` and a body, and is relayed once. The pause
    // notices stored before are kept as relayed (they were never sent).
    (
        9,
        "ALTER TABLE subscriptions ADD COLUMN purpose TEXT NOT NULL DEFAULT 'events';
         ALTER TABLE subscriptions ADD COLUMN pause_warned INTEGER NOT NULL DEFAULT 0;
         CREATE TABLE notifications_v10 (
             id INTEGER PRIMARY KEY, workspace_id TEXT NOT NULL, kind TEXT NOT NULL, subscription_id TEXT,
             cause TEXT, message TEXT NOT NULL, event_id TEXT NOT NULL, body TEXT NOT NULL,
             created_at INTEGER NOT NULL, relayed_at INTEGER);
         INSERT INTO notifications_v10
             SELECT id, workspace_id, 'endpoint.paused', subscription_id, cause, message, 'notice_' || id, '',
                    created_at, created_at FROM notifications;
         DROP TABLE notifications;
         ALTER TABLE notifications_v10 RENAME TO notifications;",
    ),
    // 10 -> 11: published key sets. A workspace with a key pair gets the unguessable id of
    // its key set (`ks_` and 128 random bits in hex; SQLite's `randomblob` draws from its
    // ChaCha20 generator, seeded from the operating system); new ones are made with the
    // first key (`crate::signing::new_key_set_id`). The unique index is in `SCHEMA`.
    (
        10,
        "ALTER TABLE workspaces ADD COLUMN key_set_id TEXT;
         UPDATE workspaces SET key_set_id = 'ks_' || lower(hex(randomblob(16))) WHERE signing_key IS NOT NULL;",
    ),
];

pub(super) const SCHEMA: &str = r#"
-- signing_key: the workspace's `v1a` (ed25519) `whsk_` key, sealed like the secrets;
-- made on first use. previous_*: the key a rotation replaced, signing until `_until`.
-- key_set_id: the unguessable id of its published key set, made with the first key.
CREATE TABLE IF NOT EXISTS workspaces (
    id TEXT PRIMARY KEY, name TEXT NOT NULL,
    signing_key TEXT, signing_key_created_at INTEGER,
    previous_signing_key TEXT, previous_signing_key_created_at INTEGER, previous_signing_key_until INTEGER,
    key_set_id TEXT);
CREATE UNIQUE INDEX IF NOT EXISTS workspaces_key_set ON workspaces (key_set_id);
CREATE TABLE IF NOT EXISTS integrations (
    workspace_id TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL,
    provider_identifier TEXT NOT NULL, picture TEXT, PRIMARY KEY (workspace_id, id));
CREATE TABLE IF NOT EXISTS subscriptions (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, workspace_id TEXT NOT NULL,
    name TEXT NOT NULL, url TEXT NOT NULL, events TEXT NOT NULL, integrations TEXT NOT NULL,
    paused_reason TEXT, created_by_kind TEXT NOT NULL,
    consecutive_failures INTEGER NOT NULL DEFAULT 0, last_success_at INTEGER, failing_since INTEGER,
    created_at INTEGER NOT NULL, secret TEXT NOT NULL, previous_secret TEXT, previous_secret_until INTEGER,
    signing TEXT NOT NULL DEFAULT 'symmetric', purpose TEXT NOT NULL DEFAULT 'events',
    pause_warned INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS subscriptions_workspace ON subscriptions (workspace_id, seq);
-- Event ids are unique by construction (a ULID each) and never looked up, so they have
-- no index: one fewer insert per event.
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL, workspace_id TEXT NOT NULL,
    event_type TEXT NOT NULL, post_id TEXT, created_at INTEGER NOT NULL, body TEXT NOT NULL,
    external_key INTEGER, account_id TEXT, erased_at INTEGER);
CREATE INDEX IF NOT EXISTS events_post ON events (workspace_id, post_id, seq) WHERE post_id IS NOT NULL;
-- An account's own events (`integration.*`), for erasure by account (`erasure.rs`). An
-- erased event has `erased_at` set and an empty body (the tombstone).
CREATE INDEX IF NOT EXISTS events_account ON events (workspace_id, account_id, seq) WHERE account_id IS NOT NULL;
-- The client's reference of a post, written with the event (posts/lookup?externalId=),
-- as a hash of (workspace, external id) under the event's bucket of 4,096 event numbers
-- (see `external_key_in_bucket`): small entries whatever the reference's length, and a
-- commit's new entries land on the few pages of the newest bucket instead of one
-- random page each; a look-up probes each bucket and checks the text in the body.
CREATE INDEX IF NOT EXISTS events_external ON events (external_key, seq) WHERE external_key IS NOT NULL;
-- Idempotency keys, each stored in the transaction of the work it guards
-- (`crate::idempotency`); a finished one holds the response it replays.
CREATE TABLE IF NOT EXISTS idempotency_keys (
    scope TEXT NOT NULL, key TEXT NOT NULL, request_hash BLOB NOT NULL,
    created_at INTEGER NOT NULL, lease_until INTEGER NOT NULL, response TEXT, resource TEXT,
    PRIMARY KEY (scope, key)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idempotency_keys_created ON idempotency_keys (created_at);
CREATE INDEX IF NOT EXISTS idempotency_keys_resource ON idempotency_keys (resource) WHERE resource IS NOT NULL;
CREATE TABLE IF NOT EXISTS deliveries (
    seq INTEGER PRIMARY KEY, sub_seq INTEGER NOT NULL, event_seq INTEGER NOT NULL,
    okey INTEGER, state INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
    due_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL, finished_at INTEGER, resent_as INTEGER);
-- Queue heads (state 0), by due time: all that a claim reads.
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (sub_seq, due_at, seq) WHERE state = 0;
-- Unfinished deliveries by ordering key: is a key open (a new delivery waits), and which
-- delivery is next once its head finishes. Small while deliveries keep up.
CREATE INDEX IF NOT EXISTS deliveries_open ON deliveries (sub_seq, okey, seq)
    WHERE finished_at IS NULL AND okey IS NOT NULL;
CREATE INDEX IF NOT EXISTS deliveries_held ON deliveries (sub_seq, seq) WHERE state = 1;
CREATE INDEX IF NOT EXISTS deliveries_subscription ON deliveries (sub_seq, seq);
-- Failed deliveries by finish time: what recover reads (`requeue.rs`). Only failed
-- rows are in it, so it costs publishes nothing.
CREATE INDEX IF NOT EXISTS deliveries_failed ON deliveries (sub_seq, finished_at, seq) WHERE state = 3;
-- Retention (`retention.rs`): finished deliveries by age, and whether an event is still
-- referred to.
CREATE INDEX IF NOT EXISTS deliveries_finished ON deliveries (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS deliveries_event ON deliveries (event_seq);
CREATE TABLE IF NOT EXISTS attempts (
    delivery_seq INTEGER NOT NULL, number INTEGER NOT NULL, started_at INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL, status INTEGER, error TEXT, body_prefix TEXT,
    PRIMARY KEY (delivery_seq, number)) WITHOUT ROWID;
-- Operational notices (`crate::notices`), written with the change they are about;
-- `relayed_at` is set by the transaction that queues one for the operator endpoints.
CREATE TABLE IF NOT EXISTS notifications (
    id INTEGER PRIMARY KEY, workspace_id TEXT NOT NULL, kind TEXT NOT NULL, subscription_id TEXT,
    cause TEXT, message TEXT NOT NULL, event_id TEXT NOT NULL, body TEXT NOT NULL,
    created_at INTEGER NOT NULL, relayed_at INTEGER);
CREATE INDEX IF NOT EXISTS notifications_workspace ON notifications (workspace_id, id);
CREATE INDEX IF NOT EXISTS notifications_unrelayed ON notifications (id) WHERE relayed_at IS NULL;
"#;

/// Opens the file at `path` (created if absent) in WAL mode with `options`, and brings
/// its schema up to date; returns the connection and its `synchronous` setting.
pub(super) fn open_migrated(path: &Path, options: &SqliteOptions) -> StoreResult<(Connection, &'static str)> {
    let conn = Connection::open(path).map_err(db_err)?;
    conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(db_err)?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .map_err(db_err)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(SenderError::storage(format!(
            "could not switch {} to WAL mode",
            path.display()
        )));
    }
    let sync = if options.power_loss_durable { "FULL" } else { "NORMAL" };
    // `secure_delete`: bytes freed in a page (a shorter value, a deleted row) and freed
    // pages are zeroed, so an erased body or a replaced secret leaves no copy in the file
    // (`erasure.rs`). A page cache of 16 MB, and a WAL of up to about 40 MB: checkpoints run on their
    // own thread (`checkpointer.rs`); the connection's own, at 10,000 pages, only
    // bounds the WAL's size when that thread cannot finish between two commits.
    conn.execute_batch(&format!(
        "PRAGMA synchronous={sync}; PRAGMA temp_store=MEMORY; PRAGMA foreign_keys=OFF;
     PRAGMA wal_autocheckpoint=10000; PRAGMA cache_size=-16000; PRAGMA secure_delete=ON;"
    ))
    .map_err(db_err)?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(db_err)?;
    let known = version == 0 || version == SCHEMA_VERSION || MIGRATIONS.iter().any(|(from, _)| *from == version);
    if !known {
        return Err(SenderError::storage(format!(
            "{} has schema version {version}; this sender reads version {SCHEMA_VERSION}",
            path.display()
        )));
    }
    let tx = conn.unchecked_transaction().map_err(db_err)?;
    if version != 0 {
        for (_, sql) in MIGRATIONS.iter().filter(|(from, _)| *from >= version) {
            tx.execute_batch(sql).map_err(db_err)?;
        }
        if version < 5 {
            backfill_external_keys(&tx).map_err(db_err)?;
        }
    }
    tx.execute_batch(SCHEMA).map_err(db_err)?;
    tx.execute_batch(&format!("PRAGMA user_version={SCHEMA_VERSION}"))
        .map_err(db_err)?;
    tx.commit().map_err(db_err)?;
    Ok((conn, sync))
}

/// A 64-bit FNV-1a hash of a post's external id in a workspace, stable across releases:
/// the stored key of events from schema versions 5 to 7, and the low bits of
/// [`external_key_in_bucket`] since. A collision only makes a look-up read one more
/// event, whose body it then checks.
pub(crate) fn external_key(workspace_id: &str, external_id: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in workspace_id.bytes().chain([0]).chain(external_id.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h as i64
}

/// How many event numbers share a bucket of external-id keys, as a power of two.
///
/// Why buckets: a plain hash puts each new event's index entry on a random page of an
/// index that grows with every event kept, so each commit of 100 events dirtied about
/// 90 pages (a WAL frame of 4 KiB each) and the index cost about a quarter of the
/// writer thread's time at one subscription (6 of 24 µs per delivery, measured with the
/// sender bench). Under its bucket, an event's entry joins the ~20 pages of the newest
/// 4,096 entries. The price is on the look-up side: one index probe per bucket of
/// events kept (about 250 per million), newest first, stopping once it has enough posts.
pub(super) const EXTERNAL_BUCKET_BITS: u32 = 12;

/// The bits of an external-id key that hold the hash; the bucket sits above them.
const EXTERNAL_HASH_BITS: u32 = 40;

/// The stored external-id key of an event numbered `event_seq`: the bucket of its number
/// (`event_seq >> EXTERNAL_BUCKET_BITS`) above the low 40 bits of [`external_key`].
/// A probe of a bucket meets another reference's entry with a chance of about one in
/// 270 million (4,096 entries against 2⁴⁰ hashes); past 2³⁵ events the bucket wraps
/// around. Either only costs a look-up one more read: it checks the body.
pub(crate) fn external_key_in_bucket(event_seq: i64, workspace_id: &str, external_id: &str) -> i64 {
    ((event_seq >> EXTERNAL_BUCKET_BITS) << EXTERNAL_HASH_BITS)
        | (external_key(workspace_id, external_id) & ((1 << EXTERNAL_HASH_BITS) - 1))
}

/// Version 5: the external-id keys of the events stored before it, from their bodies.
fn backfill_external_keys(tx: &Connection) -> rusqlite::Result<()> {
    let found: Vec<(i64, String, String)> = tx
        .prepare(
            "SELECT seq, workspace_id, json_extract(body, '$.data.post.externalId') FROM events
             WHERE post_id IS NOT NULL AND json_valid(body)",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, Option<String>>(2)?)))?
        .filter_map(|row| match row {
            Ok((seq, ws, Some(ext))) if !ext.is_empty() => Some(Ok((seq, ws, ext))),
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        })
        .collect::<rusqlite::Result<_>>()?;
    let mut set = tx.prepare("UPDATE events SET external_key = ?2 WHERE seq = ?1")?;
    for (seq, ws, ext) in found {
        set.execute(rusqlite::params![seq, external_key(&ws, &ext)])?;
    }
    Ok(())
}

/// Registers the workspaces of `workspaces` that the SQLite file at `path` does not
/// have yet (registered ones keep their name) without opening a store, so it works
/// while a store has the file open in another process (`postwire token create` beside
/// `postwire serve`) and can claim nothing. Returns the ids it added.
pub fn register_workspaces(path: impl AsRef<Path>, workspaces: &[Workspace]) -> StoreResult<Vec<String>> {
    let (mut conn, _) = open_migrated(path.as_ref(), &SqliteOptions::default())?;
    let tx = conn.transaction().map_err(db_err)?;
    let mut added = Vec::new();
    for w in workspaces {
        let n = tx
            .execute(
                "INSERT INTO workspaces (id, name) VALUES (?1, ?2) ON CONFLICT (id) DO NOTHING",
                params![w.id, w.name],
            )
            .map_err(db_err)?;
        if n > 0 {
            added.push(w.id.clone());
        }
    }
    tx.commit().map_err(db_err)?;
    Ok(added)
}

/// Whether the SQLite file at `path` has workspace `id`, read without opening a store,
/// so it works while a store has the file open in another process (`postwire portal
/// link` beside `postwire serve`).
pub fn has_workspace(path: impl AsRef<Path>, id: &str) -> StoreResult<bool> {
    let (conn, _) = open_migrated(path.as_ref(), &SqliteOptions::default())?;
    conn.query_row("SELECT EXISTS (SELECT 1 FROM workspaces WHERE id = ?1)", [id], |r| {
        r.get(0)
    })
    .map_err(db_err)
}

pub(super) const UPSERT_WORKSPACE_SQL: &str =
    "INSERT INTO workspaces (id, name) VALUES (?1, ?2) ON CONFLICT (id) DO UPDATE SET name = excluded.name";

/// Opens the claims' connection to the (existing, WAL-mode) file at `path`: reads only.
pub(super) fn open_claim_connection(path: &Path) -> StoreResult<Connection> {
    let conn = Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(db_err)?;
    conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(db_err)?;
    // Its page cache is dropped whenever the writer commits, so a small one will do.
    conn.execute_batch("PRAGMA query_only=ON; PRAGMA cache_size=-4000;")
        .map_err(db_err)?;
    conn.set_prepared_statement_cache_capacity(16);
    Ok(conn)
}

/// Claims the SQLite file at `db_path` for one store: an exclusive advisory lock on
/// `<db_path>.lock`, held as long as the returned file is open.
///
/// Leases, due hints and the row counter live in the store's memory (see
/// [`SqliteStore`]), so a second store on the same file would release the first one's
/// leases at start, deliver events twice and run two events of one post at once,
/// breaking their order. [`SqliteStore::open`] takes this lock, so no path skips it, and
/// the misconfiguration is a clear error. The operating system drops it when the process
/// ends, even by SIGKILL, so a crash never leaves the file locked. Other processes may
/// still register workspaces ([`register_workspaces`]) and tokens (`postwire token
/// create` while `postwire serve` runs).
pub(super) fn lock_for_dispatch(db_path: &Path) -> StoreResult<std::fs::File> {
    let mut lock_path = db_path.as_os_str().to_owned();
    lock_path.push(".lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(db_err)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(SenderError::storage(format!(
            "another sender is already dispatching from {}; SQLite allows one per file \
             (stop the other one, or use a separate file)",
            db_path.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => Err(db_err(e)),
    }
}
