//! The embedded store: one SQLite file in WAL mode, zero set-up.
//!
//! One connection, owned by one thread (`connection_thread.rs`), runs every write and the
//! API's reads in order, and commits writes that queue up together (group commit). Every
//! write's future resolves only after the transaction holding it has committed, so an
//! accepted event is on disk (in the WAL) before `publish` returns.
//!
//! Claims read on a second connection and thread of their own, beside the writes: WAL
//! mode lets one reader work on a committed snapshot while the writer commits. A claim
//! queued behind a publish of a hundred events and its commit would wait most of a
//! millisecond, and the dispatcher claims one batch at a time, so at one subscription
//! that wait was what bounded the rate. Because a claim's snapshot may be older than a
//! write that just committed, the in-memory hints a write changes (`due.rs`, the targets
//! cache) are changed only after its commit, and a claim holds them locked from before its
//! snapshot until it is done: a hint changed after a commit is then either seen by the
//! claim's snapshot or applied after the claim. With the default
//! `synchronous=NORMAL` a committed transaction survives the process being killed at any
//! moment (SIGKILL);
//! [`SqliteOptions::power_loss_durable`] switches to `synchronous=FULL`, which also
//! survives a power cut, at the cost of an fsync per commit.
//!
//! The file serves one store (`SqliteStore::open` locks it), so claim leases live in memory (a map from
//! delivery to lease end) rather than in the file: a crash loses them, which is exactly
//! what recovery wants, and claiming costs no write. A lease ends when the attempt's
//! outcome is recorded, or when it expires (an outcome that could not be written is
//! attempted again then).
//!
//! A claim reads each subscription's queue on its own (the partial index on pending
//! rows is keyed by subscription, then due time), visiting only the subscriptions that
//! `due.rs` says may have something due, so one subscription's backlog never hides
//! another's deliveries, and held or finished deliveries cost a claim nothing. Each
//! subscription's URL and signer are kept between claims (`targets.rs`), and a new
//! delivery's event id and body wait in memory for its first claim (`fresh.rs`).
//!
//! **Only queue heads are claimable.** Deliveries of one (subscription, ordering key)
//! form a queue whose head alone is pending (state 0, in the `deliveries_due` index); the
//! others wait (state 5) and are in no index a claim reads, so a claim's cost does not
//! depend on how many deliveries are blocked. A new delivery waits when its key has an
//! unfinished delivery (`deliveries_open`, an index of unfinished keyed deliveries only,
//! so it stays small while deliveries keep up); the transaction that records a head's
//! final outcome makes the next one the head. While a subscription is paused all of its
//! unfinished deliveries are held (state 1); resume expires the old ones and sorts the
//! rest into heads and waiting ones again. Outcomes are written only to unfinished
//! deliveries, so an outcome recorded twice cannot promote two heads.
//!
//! Delivery states are small integers: 0 pending (a queue head), 1 held, 2 delivered,
//! 3 failed, 4 expired, 5 waiting behind its queue's head.

mod checkpointer;
mod connection_thread;
mod due;
mod fresh;
mod targets;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use postwire_core::{
    CreatedByKind, Event, EventType, Integration, Secret, Subscription, SubscriptionStatus, Timestamp, matches,
};
use rusqlite::{Connection, OptionalExtension, Transaction, params};

use self::checkpointer::Checkpointer;
use self::connection_thread::ConnectionThread;
use self::due::DueSubscriptions;
use self::fresh::{FreshDeliveries, FreshEvent};
use self::targets::{Target, TargetCache};
use super::{
    BoxFuture, ClaimRequest, ClaimedDelivery, DeliveryCounts, FinishedAttempt, NextState, PausedByFailures, Store,
    StoreResult,
};
use crate::error::SenderError;
use crate::events::BuiltEvent;
use crate::health::{Health, Verdict};
use crate::model::{
    AttemptErrorKind, AttemptOutcome, AttemptRecord, DeliveryId, DeliveryRecord, DeliveryState, Notification,
    ResumeSummary, StoredSubscription, SubscriptionChanges, Workspace,
};

const PENDING: i64 = 0;
const HELD: i64 = 1;
const DELIVERED: i64 = 2;
const FAILED: i64 = 3;
const EXPIRED: i64 = 4;
const WAITING: i64 = 5;

/// The layout of the file, kept in `PRAGMA user_version`; a file of another version is
/// refused rather than misread.
const SCHEMA_VERSION: i64 = 5;
/// What turns a file of an older version into the next one, by version; a file is
/// brought up to date by every step from its version on, then by `SCHEMA`.
const MIGRATIONS: &[(i64, &str)] = &[
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
    // index of open keys, and the due index no longer needs the key.
    (
        4,
        "DROP INDEX IF EXISTS deliveries_retrying;
         DROP INDEX IF EXISTS deliveries_due;
         CREATE INDEX IF NOT EXISTS deliveries_open ON deliveries (sub_seq, okey, seq)
             WHERE finished_at IS NULL AND okey IS NOT NULL;
         UPDATE deliveries SET state = 5
             WHERE state = 0 AND finished_at IS NULL AND okey IS NOT NULL AND EXISTS (
                 SELECT 1 FROM deliveries p WHERE p.sub_seq = deliveries.sub_seq AND p.okey = deliveries.okey
                     AND p.finished_at IS NULL AND p.okey IS NOT NULL AND p.seq < deliveries.seq);",
    ),
];

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS workspaces (id TEXT PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS integrations (
    workspace_id TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL,
    provider_identifier TEXT NOT NULL, picture TEXT, PRIMARY KEY (workspace_id, id));
CREATE TABLE IF NOT EXISTS subscriptions (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, workspace_id TEXT NOT NULL,
    name TEXT NOT NULL, url TEXT NOT NULL, events TEXT NOT NULL, integrations TEXT NOT NULL,
    paused_reason TEXT, created_by_kind TEXT NOT NULL,
    consecutive_failures INTEGER NOT NULL DEFAULT 0, last_success_at INTEGER, failing_since INTEGER,
    created_at INTEGER NOT NULL, secret TEXT NOT NULL, previous_secret TEXT, previous_secret_until INTEGER);
CREATE INDEX IF NOT EXISTS subscriptions_workspace ON subscriptions (workspace_id, seq);
-- Event ids are unique by construction (a ULID each) and never looked up, so they have
-- no index: one fewer insert per event.
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL, workspace_id TEXT NOT NULL,
    event_type TEXT NOT NULL, post_id TEXT, created_at INTEGER NOT NULL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS events_post ON events (workspace_id, post_id, seq) WHERE post_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS deliveries (
    seq INTEGER PRIMARY KEY, sub_seq INTEGER NOT NULL, event_seq INTEGER NOT NULL,
    okey INTEGER, state INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
    due_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL, finished_at INTEGER);
-- Queue heads (state 0), by due time: all that a claim reads.
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (sub_seq, due_at, seq) WHERE state = 0;
-- Unfinished deliveries by ordering key: is a key open (a new delivery waits), and which
-- delivery is next once its head finishes. Small while deliveries keep up.
CREATE INDEX IF NOT EXISTS deliveries_open ON deliveries (sub_seq, okey, seq)
    WHERE finished_at IS NULL AND okey IS NOT NULL;
CREATE INDEX IF NOT EXISTS deliveries_held ON deliveries (sub_seq, seq) WHERE state = 1;
CREATE INDEX IF NOT EXISTS deliveries_subscription ON deliveries (sub_seq, seq);
CREATE TABLE IF NOT EXISTS attempts (
    delivery_seq INTEGER NOT NULL, number INTEGER NOT NULL, started_at INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL, status INTEGER, error TEXT, body_prefix TEXT,
    PRIMARY KEY (delivery_seq, number)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS notifications (
    id INTEGER PRIMARY KEY, workspace_id TEXT NOT NULL, subscription_id TEXT NOT NULL,
    cause TEXT NOT NULL, message TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS notifications_workspace ON notifications (workspace_id, id);
"#;

// The queries that must be served by a partial index: their states are literals, since
// SQLite only uses a partial index when the query's own terms imply its condition. The
// test `hot_queries_use_their_indexes` checks the plans.

/// One subscription's queue heads, by due time.
const QUEUE_SQL: &str = "SELECT seq, due_at FROM deliveries INDEXED BY deliveries_due
     WHERE state = 0 AND sub_seq = ?1 ORDER BY due_at, seq";
/// Does (subscription, key) have an unfinished delivery? Then a new one waits behind it.
const KEY_OPEN_SQL: &str = "SELECT 1 FROM deliveries INDEXED BY deliveries_open
     WHERE sub_seq = ?1 AND okey = ?2 AND finished_at IS NULL LIMIT 1";
/// Makes the earliest waiting delivery of (subscription, key) its queue's head, in state
/// ?3, due at ?4.
const PROMOTE_SQL: &str = "UPDATE deliveries SET state = ?3, due_at = ?4 WHERE seq = (
     SELECT seq FROM deliveries INDEXED BY deliveries_open
     WHERE sub_seq = ?1 AND okey = ?2 AND finished_at IS NULL AND state = 5 ORDER BY seq LIMIT 1)";
/// Holds a subscription's unfinished deliveries, heads and waiting ones alike: resume
/// sorts them into heads and waiting again.
const HOLD_PENDING_SQL: &str = "UPDATE deliveries SET state = 1 WHERE sub_seq = ?1 AND state = 0";
const HOLD_WAITING_SQL: &str = "UPDATE deliveries SET state = 1 WHERE seq IN (
     SELECT seq FROM deliveries INDEXED BY deliveries_open
     WHERE sub_seq = ?1 AND okey IS NOT NULL AND finished_at IS NULL AND state = 5)";
/// After an expiry, a held keyed delivery behind an earlier unfinished one of its key
/// waits.
const REQUEUE_WAITING_SQL: &str = "UPDATE deliveries SET state = 5
     WHERE sub_seq = ?1 AND state = 1 AND okey IS NOT NULL AND EXISTS (
         SELECT 1 FROM deliveries p INDEXED BY deliveries_open
         WHERE p.sub_seq = ?1 AND p.okey = deliveries.okey AND p.finished_at IS NULL AND p.seq < deliveries.seq)";
/// Expires held deliveries created before ?4.
const EXPIRE_HELD_SQL: &str =
    "UPDATE deliveries SET state = ?2, finished_at = ?3 WHERE sub_seq = ?1 AND state = 1 AND created_at < ?4";
/// Makes held deliveries (by then, the heads) pending, due at ?2.
const RELEASE_HELD_SQL: &str = "UPDATE deliveries SET state = 0, due_at = ?2 WHERE sub_seq = ?1 AND state = 1";

/// How to open the SQLite file.
#[derive(Debug, Clone, Default)]
pub struct SqliteOptions {
    /// `synchronous=FULL` (survives power loss) instead of `NORMAL` (survives process
    /// crashes). Off by default.
    pub power_loss_durable: bool,
}

/// The SQLite store. Cheap to clone.
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<ConnectionThread>,
    /// The claims' own read connection (see the module doc).
    claims: Arc<ConnectionThread>,
    /// Delivery row -> lease end (ms): claimed deliveries whose outcome is not recorded.
    leases: Arc<Mutex<HashMap<i64, i64>>>,
    /// Delivery targets (URL, signer) by subscription row, for claims.
    targets: Arc<Mutex<TargetCache>>,
    /// Which subscriptions' queues a claim looks at.
    due: Arc<Mutex<DueSubscriptions>>,
    /// What first claims need of new deliveries, so they need not read it back.
    fresh: Arc<Mutex<FreshDeliveries>>,
    /// The next delivery row number. Only goes up, so no row number is used twice while
    /// the process runs, even after a delete or a rollback: in-memory state keyed by
    /// delivery row (leases, `fresh`) can never be taken for another delivery's. Read
    /// from the file at open: like the leases, it assumes this is the only process that
    /// publishes to the file (`Sender::open_sqlite` enforces it); another one would see
    /// its publishes fail on the row number, not overwrite anything.
    next_delivery: Arc<AtomicI64>,
    path: PathBuf,
    /// The file's lock (`lock_for_dispatch`), released when the last clone is dropped.
    _lock: Arc<std::fs::File>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("path", &self.path).finish()
    }
}

fn db_err(e: impl std::fmt::Display) -> SenderError {
    SenderError::storage(e)
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
fn lock_for_dispatch(db_path: &Path) -> StoreResult<std::fs::File> {
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

impl SqliteStore {
    /// Opens (creating if needed) the database file at `path`.
    pub fn open(path: impl AsRef<Path>) -> StoreResult<Self> {
        Self::open_with(path, SqliteOptions::default())
    }

    /// Opens with options. Fails with a clear error while another store (in this process
    /// or another) has the file open: see [`lock_for_dispatch`].
    pub fn open_with(path: impl AsRef<Path>, options: SqliteOptions) -> StoreResult<Self> {
        let path = path.as_ref().to_path_buf();
        let lock = lock_for_dispatch(&path)?;
        let (conn, sync) = open_migrated(&path, &options)?;

        conn.set_prepared_statement_cache_capacity(64);
        let mut due = DueSubscriptions::default();
        due.reset(
            conn.prepare("SELECT sub_seq, MIN(due_at) FROM deliveries WHERE state = 0 GROUP BY sub_seq")
                .and_then(|mut stmt| {
                    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                        .collect::<Result<Vec<_>, _>>()
                })
                .map_err(db_err)?,
        );
        let last_delivery: i64 = conn
            .query_row("SELECT COALESCE(MAX(seq), 0) FROM deliveries", [], |r| r.get(0))
            .map_err(db_err)?;
        let checkpointer = Checkpointer::spawn(&path, sync)?;
        Ok(SqliteStore {
            conn: Arc::new(ConnectionThread::spawn(conn, "postwire-sqlite", Some(checkpointer))?),
            claims: Arc::new(ConnectionThread::spawn(
                open_claim_connection(&path)?,
                "postwire-claims",
                None,
            )?),
            leases: Arc::default(),
            targets: Arc::default(),
            due: Arc::new(Mutex::new(due)),
            fresh: Arc::default(),
            next_delivery: Arc::new(AtomicI64::new(last_delivery + 1)),
            path,
            _lock: Arc::new(lock),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many write transactions this store has committed. Writes that queue up
    /// together share one (group commit), so under load this grows much more slowly than
    /// the number of writes: a measure of how well commits are shared.
    pub fn write_transactions(&self) -> u64 {
        self.conn.commits()
    }

    /// Runs `f` on the connection's thread, outside any write transaction.
    fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> BoxFuture<'_, StoreResult<T>> {
        Box::pin(self.conn.read(f))
    }

    /// Runs `f` in a write transaction (possibly shared with other writes: see
    /// [`connection_thread`]); resolves after the commit.
    fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<T> + Send + 'static,
    ) -> BoxFuture<'_, StoreResult<T>> {
        Box::pin(self.conn.write(f))
    }

    /// Like [`write`](Self::write), then runs `after` once the write has committed: for
    /// the in-memory hints that claims read (see the module doc).
    fn write_then<T: Send + 'static, R: Send + 'static>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<T> + Send + 'static,
        after: impl FnOnce(T) -> R + Send + 'static,
    ) -> BoxFuture<'_, StoreResult<R>> {
        let write = self.conn.write(f);
        Box::pin(async move { Ok(after(write.await?)) })
    }

    /// [`write_then`](Self::write_then) for writes that change a subscription's URL or
    /// secrets: the targets cache is cleared after the commit.
    fn write_target<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<T> + Send + 'static,
    ) -> BoxFuture<'_, StoreResult<T>> {
        let cache = self.targets.clone();
        self.write_then(f, move |out| {
            cache.lock().unwrap_or_else(|p| p.into_inner()).clear();
            out
        })
    }
}

/// Opens the file at `path` (created if absent) in WAL mode with `options`, and brings
/// its schema up to date; returns the connection and its `synchronous` setting.
fn open_migrated(path: &Path, options: &SqliteOptions) -> StoreResult<(Connection, &'static str)> {
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
    // A page cache of 16 MB, and a WAL of up to about 40 MB: checkpoints run on their
    // own thread (`checkpointer.rs`); the connection's own, at 10,000 pages, only
    // bounds the WAL's size when that thread cannot finish between two commits.
    conn.execute_batch(&format!(
        "PRAGMA synchronous={sync}; PRAGMA temp_store=MEMORY; PRAGMA foreign_keys=OFF;
     PRAGMA wal_autocheckpoint=10000; PRAGMA cache_size=-16000;"
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
    }
    tx.execute_batch(SCHEMA).map_err(db_err)?;
    tx.execute_batch(&format!("PRAGMA user_version={SCHEMA_VERSION}"))
        .map_err(db_err)?;
    tx.commit().map_err(db_err)?;
    Ok((conn, sync))
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

const UPSERT_WORKSPACE_SQL: &str =
    "INSERT INTO workspaces (id, name) VALUES (?1, ?2) ON CONFLICT (id) DO UPDATE SET name = excluded.name";

/// Opens the claims' connection to the (existing, WAL-mode) file at `path`: reads only.
fn open_claim_connection(path: &Path) -> StoreResult<Connection> {
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

fn conversion(e: impl std::fmt::Display) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(e.to_string().into())
}

fn ts(millis: i64) -> Timestamp {
    Timestamp::from_unix_millis(millis)
}

fn opt_ts(millis: Option<i64>) -> Option<Timestamp> {
    millis.map(ts)
}

const SUBSCRIPTION_COLUMNS: &str = "id, workspace_id, name, url, events, integrations, paused_reason, created_by_kind, \
     consecutive_failures, last_success_at, failing_since, created_at, secret, previous_secret, previous_secret_until";

fn subscription_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredSubscription> {
    let events: Vec<EventType> = serde_json::from_str(&r.get::<_, String>(4)?).map_err(conversion)?;
    let integrations: Vec<Integration> = serde_json::from_str(&r.get::<_, String>(5)?).map_err(conversion)?;
    let status = match r.get::<_, Option<String>>(6)? {
        None => SubscriptionStatus::Enabled,
        Some(reason) => SubscriptionStatus::Paused { reason },
    };
    let created_by_kind: CreatedByKind = r.get::<_, String>(7)?.parse().map_err(conversion)?;
    let secret = Secret::parse(&r.get::<_, String>(12)?).map_err(conversion)?;
    let previous_secret = match (r.get::<_, Option<String>>(13)?, r.get::<_, Option<i64>>(14)?) {
        (Some(s), Some(until)) => Some((Secret::parse(&s).map_err(conversion)?, ts(until))),
        _ => None,
    };
    Ok(StoredSubscription {
        workspace_id: r.get(1)?,
        subscription: Subscription {
            id: r.get(0)?,
            name: r.get(2)?,
            url: r.get(3)?,
            events,
            integrations,
            status,
            created_by_kind,
            consecutive_failures: r.get::<_, i64>(8)?.clamp(0, u32::MAX as i64) as u32,
            last_success_at: opt_ts(r.get(9)?),
            created_at: ts(r.get(11)?),
        },
        secret,
        previous_secret,
        failing_since: opt_ts(r.get(10)?),
    })
}

fn load_subscription(tx: &Connection, id: &str) -> rusqlite::Result<Option<StoredSubscription>> {
    tx.prepare_cached(&format!(
        "SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE id = ?1"
    ))?
    .query_row([id], subscription_from_row)
    .optional()
}

/// What enqueue needs of a subscription to route an event.
struct Route {
    id: String,
    seq: i64,
    events: Vec<EventType>,
    integration_ids: Vec<String>,
    paused: bool,
}

fn routes_of(tx: &Connection, workspace_id: &str) -> rusqlite::Result<Vec<Route>> {
    let mut stmt = tx.prepare_cached(
        "SELECT id, events, integrations, paused_reason IS NOT NULL, seq FROM subscriptions WHERE workspace_id = ?1 ORDER BY seq",
    )?;
    let rows = stmt.query_map([workspace_id], |r| {
        let events: Vec<EventType> = serde_json::from_str(&r.get::<_, String>(1)?).map_err(conversion)?;
        let integrations: Vec<Integration> = serde_json::from_str(&r.get::<_, String>(2)?).map_err(conversion)?;
        Ok(Route {
            id: r.get(0)?,
            seq: r.get(4)?,
            events,
            integration_ids: integrations.into_iter().map(|i| i.id).collect(),
            paused: r.get(3)?,
        })
    })?;
    rows.collect()
}

/// Holds every unfinished delivery of a subscription (it is being paused).
fn hold_unfinished(tx: &Connection, sub_seq: i64) -> rusqlite::Result<()> {
    tx.prepare_cached(HOLD_PENDING_SQL)?.execute([sub_seq])?;
    tx.prepare_cached(HOLD_WAITING_SQL)?.execute([sub_seq])?;
    Ok(())
}

/// The internal row number of a subscription, which deliveries refer to.
fn sub_seq(tx: &Connection, id: &str) -> rusqlite::Result<Option<i64>> {
    tx.prepare_cached("SELECT seq FROM subscriptions WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()
}

impl Store for SqliteStore {
    fn recover(&self, _owner: String) -> BoxFuture<'_, StoreResult<u64>> {
        let leases = self.leases.clone();
        Box::pin(async move {
            let mut map = leases.lock().unwrap_or_else(|p| p.into_inner());
            let n = map.len() as u64;
            map.clear();
            Ok(n)
        })
    }

    fn upsert_workspace(&self, workspace: Workspace) -> BoxFuture<'_, StoreResult<()>> {
        self.write(move |tx| {
            tx.execute(UPSERT_WORKSPACE_SQL, params![workspace.id, workspace.name])?;
            Ok(())
        })
    }

    fn workspace(&self, id: String) -> BoxFuture<'_, StoreResult<Option<Workspace>>> {
        self.read(move |c| {
            c.prepare_cached("SELECT id, name FROM workspaces WHERE id = ?1")?
                .query_row([id], |r| {
                    Ok(Workspace {
                        id: r.get(0)?,
                        name: r.get(1)?,
                    })
                })
                .optional()
        })
    }

    fn upsert_integration(&self, workspace_id: String, i: Integration) -> BoxFuture<'_, StoreResult<()>> {
        self.write(move |tx| {
            tx.execute(
                "INSERT INTO integrations (workspace_id, id, name, provider_identifier, picture) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (workspace_id, id) DO UPDATE SET name = excluded.name,
                   provider_identifier = excluded.provider_identifier, picture = excluded.picture",
                params![workspace_id, i.id, i.name, i.provider_identifier, i.picture],
            )?;
            Ok(())
        })
    }

    fn integrations(&self, workspace_id: String, ids: Vec<String>) -> BoxFuture<'_, StoreResult<Vec<Integration>>> {
        self.read(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT id, name, provider_identifier, picture FROM integrations WHERE workspace_id = ?1 AND id = ?2",
            )?;
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                if let Some(i) = stmt
                    .query_row(params![workspace_id, id], |r| {
                        Ok(Integration {
                            id: r.get(0)?,
                            name: r.get(1)?,
                            provider_identifier: r.get(2)?,
                            picture: r.get(3)?,
                        })
                    })
                    .optional()?
                {
                    out.push(i);
                }
            }
            Ok(out)
        })
    }

    fn insert_subscription(&self, s: StoredSubscription) -> BoxFuture<'_, StoreResult<()>> {
        self.write(move |tx| {
            let sub = &s.subscription;
            let reason = match &sub.status {
                SubscriptionStatus::Enabled => None,
                SubscriptionStatus::Paused { reason } => Some(reason.clone()),
            };
            tx.execute(
                "INSERT INTO subscriptions (id, workspace_id, name, url, events, integrations, paused_reason,
                   created_by_kind, consecutive_failures, last_success_at, failing_since, created_at, secret)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                params![
                    sub.id,
                    s.workspace_id,
                    sub.name,
                    sub.url,
                    serde_json::to_string(&sub.events).map_err(conversion)?,
                    serde_json::to_string(&sub.integrations).map_err(conversion)?,
                    reason,
                    sub.created_by_kind.as_str(),
                    sub.consecutive_failures,
                    sub.last_success_at.map(|t| t.unix_millis()),
                    s.failing_since.map(|t| t.unix_millis()),
                    sub.created_at.unix_millis(),
                    s.secret.expose(),
                ],
            )?;
            Ok(())
        })
    }

    fn subscription(&self, id: String) -> BoxFuture<'_, StoreResult<Option<StoredSubscription>>> {
        self.read(move |c| load_subscription(c, &id))
    }

    fn list_subscriptions(&self, workspace_id: String) -> BoxFuture<'_, StoreResult<Vec<StoredSubscription>>> {
        self.read(move |c| {
            let mut stmt = c.prepare_cached(&format!(
                "SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions WHERE workspace_id = ?1 ORDER BY seq"
            ))?;
            let rows = stmt.query_map([workspace_id], subscription_from_row)?;
            rows.collect()
        })
    }

    fn update_subscription(&self, id: String, ch: SubscriptionChanges) -> BoxFuture<'_, StoreResult<bool>> {
        self.write_target(move |tx| {
            if load_subscription(tx, &id)?.is_none() {
                return Ok(false);
            }
            if let Some(name) = ch.name {
                tx.execute("UPDATE subscriptions SET name = ?2 WHERE id = ?1", params![id, name])?;
            }
            if let Some(url) = ch.url {
                tx.execute("UPDATE subscriptions SET url = ?2 WHERE id = ?1", params![id, url])?;
            }
            if let Some(events) = ch.events {
                let json = serde_json::to_string(&events).map_err(conversion)?;
                tx.execute("UPDATE subscriptions SET events = ?2 WHERE id = ?1", params![id, json])?;
            }
            if let Some(integrations) = ch.integrations {
                let json = serde_json::to_string(&integrations).map_err(conversion)?;
                tx.execute(
                    "UPDATE subscriptions SET integrations = ?2 WHERE id = ?1",
                    params![id, json],
                )?;
            }
            Ok(true)
        })
    }

    fn delete_subscription(&self, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        self.write_target(move |tx| {
            let Some(seq) = sub_seq(tx, &id)? else { return Ok(false) };
            tx.execute("DELETE FROM subscriptions WHERE seq = ?1", [seq])?;
            tx.execute(
                "DELETE FROM attempts WHERE delivery_seq IN (SELECT seq FROM deliveries WHERE sub_seq = ?1)",
                [seq],
            )?;
            tx.execute("DELETE FROM deliveries WHERE sub_seq = ?1", [seq])?;
            Ok(true)
        })
    }

    fn pause(&self, id: String, reason: String) -> BoxFuture<'_, StoreResult<bool>> {
        self.write(move |tx| {
            let Some(seq) = sub_seq(tx, &id)? else { return Ok(false) };
            tx.execute(
                "UPDATE subscriptions SET paused_reason = ?2 WHERE seq = ?1",
                params![seq, reason],
            )?;
            hold_unfinished(tx, seq)?;
            Ok(true)
        })
    }

    fn resume(
        &self,
        id: String,
        now: Timestamp,
        cutoff: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Option<ResumeSummary>>> {
        let hints = self.due.clone();
        let write = move |tx: &Transaction<'_>| {
            let Some(seq) = sub_seq(tx, &id)? else { return Ok(None) };
            let released_due = now.unix_millis();
            tx.execute(
                "UPDATE subscriptions SET paused_reason = NULL, consecutive_failures = 0, failing_since = NULL WHERE seq = ?1",
                [seq],
            )?;
            let expired = tx.execute(
                EXPIRE_HELD_SQL,
                params![seq, EXPIRED, now.unix_millis(), cutoff.unix_millis()],
            )?;
            // What is left is delivered in order: per key, the earliest is the head and
            // the others wait behind it.
            let waiting = tx.execute(REQUEUE_WAITING_SQL, [seq])?;
            let released = waiting + tx.execute(RELEASE_HELD_SQL, params![seq, released_due])?;
            Ok(Some((
                seq,
                released_due,
                ResumeSummary {
                    released: released as u64,
                    expired: expired as u64,
                },
            )))
        };
        self.write_then(write, move |out| {
            out.map(|(seq, released_due, summary)| {
                hints.lock().unwrap_or_else(|p| p.into_inner()).lower(seq, released_due);
                summary
            })
        })
    }

    fn rotate_secret(&self, id: String, new_secret: Secret, until: Timestamp) -> BoxFuture<'_, StoreResult<bool>> {
        self.write_target(move |tx| {
            let n = tx.execute(
                "UPDATE subscriptions SET previous_secret = secret, previous_secret_until = ?3, secret = ?2 WHERE id = ?1",
                params![id, new_secret.expose(), until.unix_millis()],
            )?;
            Ok(n > 0)
        })
    }

    fn enqueue(&self, events: Vec<BuiltEvent>, now: Timestamp) -> BoxFuture<'_, StoreResult<Vec<usize>>> {
        let hints = self.due.clone();
        let (fresh, next_delivery) = (self.fresh.clone(), self.next_delivery.clone());
        let write = move |tx: &Transaction<'_>| {
            let now_ms = now.unix_millis();
            // The subscriptions given a pending delivery: due from `first_due`, once committed.
            let mut became_due: Vec<i64> = Vec::new();
            let mut routes: HashMap<String, Vec<Route>> = HashMap::new();
            let mut counts = Vec::with_capacity(events.len());
            // Each event with its new pending deliveries, for their first claims.
            let mut made: Vec<(Arc<FreshEvent>, Vec<i64>)> = Vec::with_capacity(events.len());
            let mut insert_event = tx.prepare_cached(
                "INSERT INTO events (id, workspace_id, event_type, post_id, created_at, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            let mut key_open = tx.prepare_cached(KEY_OPEN_SQL)?;
            let mut insert_delivery = tx.prepare_cached(
                "INSERT INTO deliveries (seq, sub_seq, event_seq, okey, state, due_at, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            for built in events {
                let BuiltEvent {
                    event: ev,
                    body,
                    ordering_key,
                    post_id,
                    only_subscription,
                } = built;
                insert_event.execute(params![
                    ev.id,
                    ev.workspace_id,
                    ev.event_type().as_str(),
                    post_id,
                    ev.created_at.unix_millis(),
                    body
                ])?;
                let event_seq = tx.last_insert_rowid();
                if !routes.contains_key(&ev.workspace_id) {
                    routes.insert(ev.workspace_id.clone(), routes_of(tx, &ev.workspace_id)?);
                }
                let key = ordering_key.as_ref().map(super::ordering_hash);
                let mut pending = Vec::new();
                let mut n = 0;
                for route in &routes[&ev.workspace_id] {
                    let wanted = match &only_subscription {
                        Some(only) => *only == route.id,
                        None => matches(
                            &route.events,
                            route.integration_ids.iter().map(String::as_str),
                            ev.event_type(),
                            ev.data.account_id(),
                        ),
                    };
                    if wanted {
                        // A paused subscription holds everything; otherwise a delivery
                        // heads its queue unless an earlier one of its key is unfinished.
                        let state = if route.paused {
                            HELD
                        } else if let Some(k) = key
                            && key_open.exists(params![route.seq, k])?
                        {
                            WAITING
                        } else {
                            PENDING
                        };
                        let seq = next_delivery.fetch_add(1, Ordering::Relaxed);
                        insert_delivery.execute(params![seq, route.seq, event_seq, key, state, now_ms, now_ms])?;
                        if state == PENDING {
                            pending.push(seq);
                            if !became_due.contains(&route.seq) {
                                became_due.push(route.seq);
                            }
                        }
                        n += 1;
                    }
                }
                counts.push(n);
                if !pending.is_empty() {
                    let event = FreshEvent {
                        id: ev.id,
                        body: Bytes::from(body),
                    };
                    made.push((Arc::new(event), pending));
                }
            }
            // Before the commit is safe: row numbers are never reused, so an entry whose
            // write rolls back is never asked for (see `fresh.rs`).
            let mut fresh = fresh.lock().unwrap_or_else(|p| p.into_inner());
            for (event, rows) in made {
                fresh.add(event, &rows, now_ms);
            }
            Ok((counts, became_due))
        };
        self.write_then(write, move |(counts, became_due)| {
            let mut due = hints.lock().unwrap_or_else(|p| p.into_inner());
            for sub in became_due {
                due.lower(sub, now.unix_millis());
            }
            counts
        })
    }

    fn claim(&self, req: ClaimRequest) -> BoxFuture<'_, StoreResult<Vec<ClaimedDelivery>>> {
        let (leases, cache, due) = (self.leases.clone(), self.targets.clone(), self.due.clone());
        let fresh = self.fresh.clone();
        Box::pin(self.claims.read(move |conn| {
            // The hints are locked before the snapshot starts and until the claim is done
            // (see the module doc). Claiming writes nothing to the file (leases live in
            // memory); one read transaction gives the scan a single snapshot.
            let mut leases = leases.lock().unwrap_or_else(|p| p.into_inner());
            let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
            let mut due = due.lock().unwrap_or_else(|p| p.into_inner());
            let tx = conn.transaction()?;
            let now_ms = req.now.unix_millis();
            let mut chosen: Vec<(i64, Arc<Target>)> = Vec::new();
            {
                // Only queue heads are pending, so every due row read that is not in
                // flight is claimable: a claim's cost does not depend on how many
                // deliveries wait behind the heads.
                let mut queue = tx.prepare_cached(QUEUE_SQL)?;
                for sub in due.due(now_ms) {
                    if chosen.len() >= req.limit {
                        break;
                    }
                    let Some(target) = cache.get(&tx, sub, req.now)? else {
                        due.set(sub, None); // deleted, with its deliveries
                        continue;
                    };
                    let busy = req.in_flight.get(&target.id).copied().unwrap_or(0);
                    // A full subscription keeps its place: it is looked at again next time.
                    let mut room = req.per_subscription_limit.saturating_sub(busy);
                    if room == 0 {
                        continue;
                    }
                    // The next time this queue may have something to claim, from what it shows.
                    let mut next: Option<i64> = None;
                    let mut rows = queue.query([sub])?;
                    while let Some(r) = rows.next()? {
                        let (seq, due_at): (i64, i64) = (r.get(0)?, r.get(1)?);
                        if due_at > now_ms {
                            next = Some(next.map_or(due_at, |n| n.min(due_at)));
                            break;
                        }
                        if let Some(until) = leases.get(&seq).copied().filter(|until| *until > now_ms) {
                            // In flight (at most the dispatcher's claim-ahead room per
                            // subscription); claimable again only if its lease runs out.
                            next = Some(next.map_or(until, |n| n.min(until)));
                            continue;
                        }
                        if room == 0 || chosen.len() >= req.limit {
                            next = Some(now_ms); // more is claimable now
                            break;
                        }
                        chosen.push((seq, target.clone()));
                        room -= 1;
                        // Leased from now on: if its outcome is never written (the write
                        // fails), the queue must be looked at again when the lease ends.
                        let until = req.lease_until.unix_millis();
                        next = Some(next.map_or(until, |n| n.min(until)));
                    }
                    due.set(sub, next);
                }
            }
            // First claims of new deliveries find what they need in memory; the others
            // read it from the file.
            let fresh: Vec<_> = {
                let mut fresh = fresh.lock().unwrap_or_else(|p| p.into_inner());
                chosen.iter().map(|(seq, _)| fresh.take(*seq)).collect()
            };
            let mut delivery =
                tx.prepare_cached("SELECT event_seq, attempts, created_at FROM deliveries WHERE seq = ?1")?;
            let mut event = tx.prepare_cached("SELECT id, body FROM events WHERE seq = ?1")?;
            // One event goes to many subscriptions: read its body once per claim and share it.
            let mut events: HashMap<i64, (String, Bytes)> = HashMap::new();
            let mut out = Vec::with_capacity(chosen.len());
            for ((seq, target), fresh) in chosen.into_iter().zip(fresh) {
                // (event id, body, attempts so far, created at)
                let (event_id, body, attempts, created_at) = match fresh {
                    Some(f) => (f.event.id.clone(), f.event.body.clone(), 0, f.created_at),
                    None => {
                        let (event_seq, attempts, created_at): (i64, i64, i64) =
                            delivery.query_row([seq], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
                        let (event_id, body) = match events.entry(event_seq) {
                            std::collections::hash_map::Entry::Occupied(e) => e.get().clone(),
                            std::collections::hash_map::Entry::Vacant(e) => e
                                .insert(event.query_row([event_seq], |r| {
                                    Ok((r.get::<_, String>(0)?, Bytes::from(r.get::<_, String>(1)?)))
                                })?)
                                .clone(),
                        };
                        (event_id, body, attempts, created_at)
                    }
                };
                leases.insert(seq, req.lease_until.unix_millis());
                out.push(ClaimedDelivery {
                    id: DeliveryId(seq),
                    subscription_id: target.id.clone(),
                    event_id,
                    body,
                    url: target.url.clone(),
                    signer: target.signer.clone(),
                    attempt: attempts as u32 + 1,
                    created_at: ts(created_at),
                });
            }
            drop((delivery, event));
            tx.commit()?;
            Ok(out)
        }))
    }

    fn next_due_at(&self) -> BoxFuture<'_, StoreResult<Option<Timestamp>>> {
        // Early, never late (see `due`): a sleep until then misses nothing. Asked through
        // the connection's thread so that writes queued before this call count.
        let due = self.due.clone();
        self.read(move |_| Ok(due.lock().unwrap_or_else(|p| p.into_inner()).earliest().map(ts)))
    }

    fn record_attempts(
        &self,
        attempts: Vec<FinishedAttempt>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<PausedByFailures>>> {
        let leases = self.leases.clone();
        let recorded: Vec<i64> = attempts.iter().map(|a| a.delivery.0).collect();
        let due = self.due.clone();
        self.write_then(
            move |tx| record(tx, attempts, now),
            move |(paused, became_due)| {
                // Committed: successors and retries may be claimed, and the leases have
                // done their job. (After a failed write the leases stay, and the
                // deliveries are attempted again when they end.)
                let mut due = due.lock().unwrap_or_else(|p| p.into_inner());
                for (sub, at) in became_due {
                    due.lower(sub, at);
                }
                drop(due);
                let mut map = leases.lock().unwrap_or_else(|p| p.into_inner());
                for seq in recorded {
                    map.remove(&seq);
                }
                paused
            },
        )
    }

    fn list_deliveries(
        &self,
        subscription_id: String,
        before: Option<i64>,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<Vec<DeliveryRecord>>> {
        self.read(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT d.seq, ?1, e.id, e.event_type, d.state, d.due_at, d.created_at, d.finished_at
                 FROM deliveries d JOIN events e ON e.seq = d.event_seq
                 WHERE d.sub_seq = (SELECT seq FROM subscriptions WHERE id = ?1) AND d.seq < ?2
                 ORDER BY d.seq DESC LIMIT ?3",
            )?;
            let mut attempts = c.prepare_cached(
                "SELECT number, started_at, duration_ms, status, error, body_prefix FROM attempts
                 WHERE delivery_seq = ?1 ORDER BY number DESC",
            )?;
            let rows = stmt.query_map(
                params![subscription_id, before.unwrap_or(i64::MAX), limit as i64],
                |r| {
                    let state = match r.get::<_, i64>(4)? {
                        // Waiting behind an earlier delivery of its key: pending, with
                        // no attempt time yet.
                        PENDING | WAITING => DeliveryState::Pending,
                        HELD => DeliveryState::Held,
                        DELIVERED => DeliveryState::Delivered,
                        FAILED => DeliveryState::Failed,
                        _ => DeliveryState::Expired,
                    };
                    Ok(DeliveryRecord {
                        id: DeliveryId(r.get(0)?),
                        subscription_id: r.get(1)?,
                        event_id: r.get(2)?,
                        event_type: r.get::<_, String>(3)?.parse().map_err(conversion)?,
                        state,
                        next_attempt_at: (state == DeliveryState::Pending).then(|| ts(r.get(5).unwrap_or(0))),
                        created_at: ts(r.get(6)?),
                        finished_at: opt_ts(r.get(7)?),
                        attempts: Vec::new(),
                    })
                },
            )?;
            let mut out: Vec<DeliveryRecord> = rows.collect::<rusqlite::Result<_>>()?;
            for d in &mut out {
                let list = attempts.query_map([d.id.0], |r| {
                    let outcome = match (r.get::<_, Option<i64>>(3)?, r.get::<_, Option<String>>(4)?) {
                        (Some(status), _) => AttemptOutcome::Response {
                            status: status.clamp(0, u16::MAX as i64) as u16,
                            body_prefix: r.get::<_, Option<String>>(5)?.unwrap_or_default(),
                        },
                        (None, e) => AttemptOutcome::Error {
                            error: AttemptErrorKind::parse(e.as_deref().unwrap_or("")),
                        },
                    };
                    Ok(AttemptRecord {
                        number: r.get::<_, i64>(0)? as u32,
                        started_at: ts(r.get(1)?),
                        duration_ms: r.get::<_, i64>(2)?.max(0) as u64,
                        outcome,
                    })
                })?;
                d.attempts = list.collect::<rusqlite::Result<_>>()?;
            }
            Ok(out)
        })
    }

    fn events_for_post(
        &self,
        workspace_id: String,
        post_id: String,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<Vec<Event>>> {
        self.read(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT body FROM events WHERE workspace_id = ?1 AND post_id = ?2 ORDER BY seq DESC LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![workspace_id, post_id, limit as i64], |r| {
                Event::from_json(r.get::<_, String>(0)?.as_bytes()).map_err(conversion)
            })?;
            rows.collect()
        })
    }

    fn notifications(&self, workspace_id: String, limit: usize) -> BoxFuture<'_, StoreResult<Vec<Notification>>> {
        self.read(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT id, workspace_id, subscription_id, cause, message, created_at FROM notifications
                 WHERE workspace_id = ?1 ORDER BY id DESC LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![workspace_id, limit as i64], |r| {
                Ok(Notification {
                    id: r.get(0)?,
                    workspace_id: r.get(1)?,
                    subscription_id: r.get(2)?,
                    cause: if r.get::<_, String>(3)? == "consecutive_failures" {
                        crate::model::PauseCause::ConsecutiveFailures
                    } else {
                        crate::model::PauseCause::FailingFor72Hours
                    },
                    message: r.get(4)?,
                    created_at: ts(r.get(5)?),
                })
            })?;
            rows.collect()
        })
    }

    fn delivery_counts(&self, subscription_id: Option<String>) -> BoxFuture<'_, StoreResult<DeliveryCounts>> {
        self.read(move |c| {
            let mut counts = DeliveryCounts::default();
            let mut add = |state: i64, n: i64| {
                let n = n as u64;
                match state {
                    PENDING => counts.pending += n,
                    WAITING => counts.waiting += n,
                    HELD => counts.held += n,
                    DELIVERED => counts.delivered += n,
                    FAILED => counts.failed += n,
                    _ => counts.expired += n,
                }
            };
            match subscription_id {
                Some(id) => {
                    let mut stmt = c.prepare_cached(
                        "SELECT state, COUNT(*) FROM deliveries
                             WHERE sub_seq = (SELECT seq FROM subscriptions WHERE id = ?1) GROUP BY state",
                    )?;
                    let mut rows = stmt.query([id])?;
                    while let Some(r) = rows.next()? {
                        add(r.get(0)?, r.get(1)?);
                    }
                }
                None => {
                    let mut stmt = c.prepare_cached("SELECT state, COUNT(*) FROM deliveries GROUP BY state")?;
                    let mut rows = stmt.query([])?;
                    while let Some(r) = rows.next()? {
                        add(r.get(0)?, r.get(1)?);
                    }
                }
            }
            Ok(counts)
        })
    }
}

/// What [`record`] tells the caller to do once committed: the subscriptions whose
/// queues may have something claimable (a successor, a retry), and from when.
type BecameDue = Vec<(i64, i64)>;

/// Records finished attempts in `tx`: attempt rows, delivery states, health counters,
/// and pauses by failures with their notifications. Returns the pauses, and the queues
/// to mark due once the write has committed.
fn record(
    tx: &Transaction<'_>,
    attempts: Vec<FinishedAttempt>,
    now: Timestamp,
) -> rusqlite::Result<(Vec<PausedByFailures>, BecameDue)> {
    let mut became_due: BecameDue = Vec::new();
    let now_ms = now.unix_millis();
    // Subscription id -> (row, workspace, health, paused) for the batch.
    let mut subs: HashMap<String, Option<(i64, String, Health, bool)>> = HashMap::new();
    let mut paused_now = Vec::new();
    let mut insert_attempt = tx.prepare_cached(
        "INSERT OR REPLACE INTO attempts (delivery_seq, number, started_at, duration_ms, status, error, body_prefix)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    // Only an unfinished delivery is changed: an outcome recorded twice (a lease that ran
    // out while the first write was slow) must not finish it twice, nor promote a second
    // successor, which would put two deliveries of one key in flight.
    let mut finish = tx.prepare_cached(
        "UPDATE deliveries SET state = ?2, attempts = ?3, finished_at = ?4
         WHERE seq = ?1 AND finished_at IS NULL RETURNING okey",
    )?;
    let mut retry = tx.prepare_cached(
        "UPDATE deliveries SET state = ?2, attempts = ?3, due_at = ?4 WHERE seq = ?1 AND finished_at IS NULL",
    )?;
    let mut promote = tx.prepare_cached(PROMOTE_SQL)?;
    for a in attempts {
        if !subs.contains_key(&a.subscription_id) {
            let loaded = tx
                .prepare_cached(
                    "SELECT seq, workspace_id, consecutive_failures, last_success_at, failing_since,
                       paused_reason IS NOT NULL FROM subscriptions WHERE id = ?1",
                )?
                .query_row([&a.subscription_id], |r| {
                    let health = Health {
                        consecutive_failures: r.get::<_, i64>(2)?.clamp(0, u32::MAX as i64) as u32,
                        last_success_at: opt_ts(r.get(3)?),
                        failing_since: opt_ts(r.get(4)?),
                    };
                    Ok((r.get(0)?, r.get(1)?, health, r.get(5)?))
                })
                .optional()?;
            subs.insert(a.subscription_id.clone(), loaded);
        }
        // A deleted subscription took its deliveries with it: nothing to record.
        let Some(Some((seq, workspace_id, health, paused))) = subs.get_mut(&a.subscription_id) else {
            continue;
        };
        let (status, error, body) = match &a.outcome {
            AttemptOutcome::Response { status, body_prefix } => {
                (Some(*status as i64), None, Some(body_prefix.as_str()))
            }
            AttemptOutcome::Error { error } => (None, Some(error.as_str()), None),
        };
        insert_attempt.execute(params![
            a.delivery.0,
            a.attempt,
            a.started_at.unix_millis(),
            a.duration_ms as i64,
            status,
            error,
            body
        ])?;
        let verdict = match a.next {
            NextState::Delivered | NextState::Failed => {
                let (state, verdict) = match a.next {
                    NextState::Delivered => (DELIVERED, Verdict::Delivered),
                    _ => (FAILED, Verdict::FailedForGood),
                };
                let finished: Option<Option<i64>> = finish
                    .query_row(params![a.delivery.0, state, a.attempt, now_ms], |r| r.get(0))
                    .optional()?;
                let Some(okey) = finished else { continue }; // finished already
                // Its successor, if any, heads the queue from now on: in this transaction.
                // (While paused, every unfinished delivery is held; resume orders them.)
                if let Some(k) = okey
                    && !*paused
                    && promote.execute(params![*seq, k, PENDING, now_ms])? > 0
                {
                    became_due.push((*seq, now_ms));
                }
                verdict
            }
            NextState::RetryAt(at) => {
                let state = if *paused { HELD } else { PENDING };
                if retry.execute(params![a.delivery.0, state, a.attempt, at.unix_millis()])? == 0 {
                    continue; // finished already
                }
                if state == PENDING {
                    became_due.push((*seq, at.unix_millis()));
                }
                Verdict::WillRetry
            }
        };
        if let Some(cause) = health.apply(verdict, a.started_at)
            && !*paused
        {
            *paused = true;
            tx.execute(
                "UPDATE subscriptions SET paused_reason = ?2 WHERE seq = ?1",
                params![*seq, cause.reason()],
            )?;
            hold_unfinished(tx, *seq)?;
            let message = format!(
                "Webhook subscription {} was paused: {}. Events are held until it is resumed; \
                     events held for more than 7 days expire.",
                a.subscription_id,
                cause.reason()
            );
            tx.execute(
                "INSERT INTO notifications (workspace_id, subscription_id, cause, message, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                params![&*workspace_id, a.subscription_id, cause_str(cause), message, now_ms],
            )?;
            paused_now.push(PausedByFailures {
                notification: Notification {
                    id: tx.last_insert_rowid(),
                    workspace_id: workspace_id.clone(),
                    subscription_id: a.subscription_id.clone(),
                    cause,
                    message,
                    created_at: now,
                },
                cause,
            });
        }
    }
    let mut save = tx.prepare_cached(
        "UPDATE subscriptions SET consecutive_failures = ?2, last_success_at = ?3, failing_since = ?4 WHERE seq = ?1",
    )?;
    for (seq, _, h, _) in subs.into_values().flatten() {
        save.execute(params![
            seq,
            h.consecutive_failures,
            h.last_success_at.map(|t| t.unix_millis()),
            h.failing_since.map(|t| t.unix_millis())
        ])?;
    }
    Ok((paused_now, became_due))
}

fn cause_str(c: crate::model::PauseCause) -> &'static str {
    match c {
        crate::model::PauseCause::ConsecutiveFailures => "consecutive_failures",
        crate::model::PauseCause::FailingFor72Hours => "failing_for_72_hours",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            .insert_subscription(StoredSubscription {
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
            })
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
        assert_eq!(store.enqueue(vec![test_event(t0)], t0).await.unwrap(), vec![1]);
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
        store.enqueue(vec![event], t0).await.unwrap();
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
        store.enqueue(vec![test_event(t0)], t0).await.unwrap();
        let before = store.claim(claim_at(t0)).await.unwrap()[0].id;
        let sub = store.subscription("wh_1".into()).await.unwrap().unwrap();
        assert!(store.delete_subscription("wh_1".into()).await.unwrap());
        // The same subscription again, with none of its old deliveries left.
        store.insert_subscription(sub).await.unwrap();
        store.enqueue(vec![test_event(t0)], t0).await.unwrap();
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
                    store.enqueue(vec![test_event(t0)], t0).await.unwrap();
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
        ] {
            let p = plan(sql);
            assert!(p.contains(index), "{sql}\n  is planned as: {p}");
            assert!(!p.contains("TEMP B-TREE"), "{sql}\n  sorts: {p}");
        }
    }

    #[test]
    fn files_of_versions_1_to_4_are_migrated() {
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
        ];
        for shape in shapes {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("s.db");
            drop(SqliteStore::open(&path).unwrap());
            // Versions before 4 had the unique index on event ids; each has an event.
            let unique = if shape.contains("user_version=4") { "" } else { "UNIQUE" };
            Connection::open(&path)
                .unwrap()
                .execute_batch(&format!(
                    "DROP TABLE events;
                     CREATE TABLE events (
                         seq INTEGER PRIMARY KEY, id TEXT NOT NULL {unique}, workspace_id TEXT NOT NULL,
                         event_type TEXT NOT NULL, post_id TEXT, created_at INTEGER NOT NULL, body TEXT NOT NULL);
                     INSERT INTO events VALUES (7, 'msg_1', 'ws', 'post.published', 'p1', 1, '{{}}');
                     -- Before version 5, every unfinished delivery was pending: two of key 42
                     -- (one retrying), one of key 43, one finished of key 42, one keyless.
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
            assert_eq!(
                states,
                [(1, DELIVERED), (2, PENDING), (3, WAITING), (4, PENDING), (5, PENDING)],
                "only the head of each key stays pending"
            );
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
            let kept: (i64, String, String) = conn
                .query_row("SELECT seq, id, post_id FROM events", [], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .unwrap();
            assert_eq!(kept, (7, "msg_1".to_owned(), "p1".to_owned()));
        }
    }
}
