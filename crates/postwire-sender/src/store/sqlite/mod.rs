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
//! 3 failed, 4 expired, 5 waiting behind its queue's head, 6 cancelled (its event's
//! payload was erased, `erasure.rs`).

mod checkpointer;
mod connection_thread;
mod due;
mod erasure;
mod fresh;
mod idempotency;
mod notices;
mod outcomes;
mod queue;
mod reads;
mod registry;
mod requeue;
mod retention;
mod schema;
mod targets;
#[cfg(test)]
mod tests;

pub(crate) use schema::external_key;
pub use schema::{has_workspace, register_workspaces};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Mutex};

use postwire_core::{Event, Integration, Secret, Timestamp};
use rusqlite::{Connection, Transaction};

use self::checkpointer::Checkpointer;
use self::connection_thread::ConnectionThread;
use self::due::DueSubscriptions;
use self::fresh::{FreshDeliveries, FreshEvent};
use self::schema::{lock_for_dispatch, open_claim_connection, open_migrated};
use self::targets::{Target, TargetCache};
use super::{
    BoxFuture, ClaimRequest, ClaimedDelivery, DeliveryCounts, FinishedAttempt, Purged, RequeueError, Store, StoreResult,
};
use crate::error::SenderError;
use crate::events::BuiltEvent;
use crate::idempotency::{Completion, Decision, IdempotencyKey};
use crate::model::{
    DeliveryId, DeliveryRecord, Notification, ResumeSummary, StoredSubscription, SubscriptionChanges, Workspace,
    WorkspaceKeys,
};
use crate::notices::{NewNotice, PendingNotice};
use crate::secret_box::SecretCipher;

const PENDING: i64 = 0;
const HELD: i64 = 1;
const DELIVERED: i64 = 2;
const FAILED: i64 = 3;
const EXPIRED: i64 = 4;
const WAITING: i64 = 5;
const CANCELLED: i64 = 6;

/// How to open the SQLite file.
#[derive(Debug, Clone, Default)]
pub struct SqliteOptions {
    /// `synchronous=FULL` (survives power loss) instead of `NORMAL` (survives process
    /// crashes). Off by default.
    pub power_loss_durable: bool,
    /// Seals signing secrets at rest (see [`crate::secret_box`]). Without one, secrets
    /// are stored plain, and a file that holds sealed secrets is refused.
    pub secret_cipher: Option<Arc<SecretCipher>>,
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
    /// Seals and opens secrets at rest.
    cipher: Option<Arc<SecretCipher>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("path", &self.path).finish()
    }
}

fn db_err(e: impl std::fmt::Display) -> SenderError {
    SenderError::storage(e)
}

impl SqliteStore {
    /// Opens (creating if needed) the database file at `path`.
    pub fn open(path: impl AsRef<Path>) -> StoreResult<Self> {
        Self::open_with(path, SqliteOptions::default())
    }

    /// Opens with options. Fails with a clear error while another store (in this process
    /// or another) has the file open (see the lock in `schema.rs`).
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
        // Every secret must open with the keys given (a clear refusal naming the missing
        // key id otherwise); plain ones left from before encryption, and ones sealed
        // under an older key, are sealed under the current key now.
        // `secure_delete` (on for this connection, `schema.rs`) zeroes the replaced values in their pages, and the truncating
        // checkpoint drops the WAL's older page versions, so neither a plain secret nor
        // one under the old key is left behind in the files.
        {
            let tx = conn.unchecked_transaction().map_err(db_err)?;
            let resealed = registry::reseal_all(&tx, options.secret_cipher.as_deref())
                .map_err(|e| SenderError::storage(format!("{}: {e}", path.display())))?;
            tx.commit().map_err(db_err)?;
            if resealed > 0 {
                conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                    .map_err(db_err)?;
                tracing::info!(resealed, "sealed stored secrets under the current key");
            }
        }
        let checkpointer = Checkpointer::spawn(&path, sync)?;
        Ok(SqliteStore {
            conn: Arc::new(ConnectionThread::spawn(conn, "postwire-sqlite", Some(checkpointer))?),
            claims: Arc::new(ConnectionThread::spawn(
                open_claim_connection(&path)?,
                "postwire-claims",
                None,
            )?),
            leases: Arc::default(),
            targets: Arc::new(Mutex::new(TargetCache::new(options.secret_cipher.clone()))),
            due: Arc::new(Mutex::new(due)),
            fresh: Arc::default(),
            next_delivery: Arc::new(AtomicI64::new(last_delivery + 1)),
            path,
            _lock: Arc::new(lock),
            cipher: options.secret_cipher,
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

fn conversion(e: impl std::fmt::Display) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(e.to_string().into())
}

fn ts(millis: i64) -> Timestamp {
    Timestamp::from_unix_millis(millis)
}

fn opt_ts(millis: Option<i64>) -> Option<Timestamp> {
    millis.map(ts)
}

impl Store for SqliteStore {
    fn recover(&self, owner: String) -> BoxFuture<'_, StoreResult<u64>> {
        queue::recover(self, owner)
    }
    fn upsert_workspace(&self, workspace: Workspace) -> BoxFuture<'_, StoreResult<()>> {
        registry::upsert_workspace(self, workspace)
    }
    fn workspace(&self, id: String) -> BoxFuture<'_, StoreResult<Option<Workspace>>> {
        registry::workspace(self, id)
    }
    fn upsert_integration(&self, workspace_id: String, integration: Integration) -> BoxFuture<'_, StoreResult<()>> {
        registry::upsert_integration(self, workspace_id, integration)
    }
    fn integrations(&self, workspace_id: String, ids: Vec<String>) -> BoxFuture<'_, StoreResult<Vec<Integration>>> {
        registry::integrations(self, workspace_id, ids)
    }
    fn insert_subscription(
        &self,
        subscription: StoredSubscription,
        completion: Option<Completion>,
        limit: Option<u64>,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        registry::insert_subscription(self, subscription, completion, limit)
    }
    fn subscription(&self, id: String) -> BoxFuture<'_, StoreResult<Option<StoredSubscription>>> {
        registry::subscription(self, id)
    }
    fn list_subscriptions(&self, workspace_id: String) -> BoxFuture<'_, StoreResult<Vec<StoredSubscription>>> {
        registry::list_subscriptions(self, workspace_id)
    }
    fn update_subscription(&self, id: String, changes: SubscriptionChanges) -> BoxFuture<'_, StoreResult<bool>> {
        registry::update_subscription(self, id, changes)
    }
    fn delete_subscription(&self, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        registry::delete_subscription(self, id)
    }
    fn pause(&self, id: String, reason: String) -> BoxFuture<'_, StoreResult<bool>> {
        queue::pause(self, id, reason)
    }
    fn resume(
        &self,
        id: String,
        now: Timestamp,
        hold_cutoff: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Option<ResumeSummary>>> {
        queue::resume(self, id, now, hold_cutoff)
    }
    fn rotate_secret(
        &self,
        id: String,
        new_secret: Secret,
        previous_until: Timestamp,
        notice: NewNotice,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        registry::rotate_secret(self, id, new_secret, previous_until, notice)
    }
    fn signing_keys(&self, workspace_id: String) -> BoxFuture<'_, StoreResult<Option<WorkspaceKeys>>> {
        registry::signing_keys(self, workspace_id)
    }
    fn ensure_signing_key(
        &self,
        workspace_id: String,
        key: crate::signer::WorkspaceKey,
        key_set_id: String,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Option<WorkspaceKeys>>> {
        registry::ensure_signing_key(self, workspace_id, key, key_set_id, now)
    }
    fn key_set(&self, key_set_id: String) -> BoxFuture<'_, StoreResult<Option<WorkspaceKeys>>> {
        registry::key_set(self, key_set_id)
    }
    fn rotate_signing_key(
        &self,
        workspace_id: String,
        key: crate::signer::WorkspaceKey,
        now: Timestamp,
        previous_until: Timestamp,
        notice: NewNotice,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        registry::rotate_signing_key(self, workspace_id, key, now, previous_until, notice)
    }
    fn enqueue(
        &self,
        events: Vec<BuiltEvent>,
        now: Timestamp,
        completion: Option<Completion>,
    ) -> BoxFuture<'_, StoreResult<Vec<usize>>> {
        queue::enqueue(self, events, now, completion)
    }
    fn begin_idempotent(&self, key: IdempotencyKey, now: Timestamp) -> BoxFuture<'_, StoreResult<Decision>> {
        idempotency::begin(self, key, now)
    }
    fn abandon_idempotent(&self, key: IdempotencyKey, lease_until_ms: i64) -> BoxFuture<'_, StoreResult<()>> {
        idempotency::abandon(self, key, lease_until_ms)
    }
    fn posts_with_external_id(
        &self,
        workspace_id: String,
        external_id: String,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        reads::posts_with_external_id(self, workspace_id, external_id, limit)
    }
    fn claim(&self, request: ClaimRequest) -> BoxFuture<'_, StoreResult<Vec<ClaimedDelivery>>> {
        queue::claim(self, request)
    }
    fn next_due_at(&self) -> BoxFuture<'_, StoreResult<Option<Timestamp>>> {
        queue::next_due_at(self)
    }
    fn record_attempts(
        &self,
        attempts: Vec<FinishedAttempt>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<Notification>>> {
        outcomes::record_attempts(self, attempts, now)
    }
    fn pending_notices(&self, limit: usize) -> BoxFuture<'_, StoreResult<Vec<PendingNotice>>> {
        notices::pending(self, limit)
    }
    fn list_deliveries(
        &self,
        subscription_id: String,
        before: Option<i64>,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<Vec<DeliveryRecord>>> {
        reads::list_deliveries(self, subscription_id, before, limit)
    }
    fn events_for_post(
        &self,
        workspace_id: String,
        post_id: String,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<Vec<Event>>> {
        reads::events_for_post(self, workspace_id, post_id, limit)
    }
    fn notifications(&self, workspace_id: String, limit: usize) -> BoxFuture<'_, StoreResult<Vec<Notification>>> {
        reads::notifications(self, workspace_id, limit)
    }
    fn delivery_counts(&self, subscription_id: Option<String>) -> BoxFuture<'_, StoreResult<DeliveryCounts>> {
        reads::delivery_counts(self, subscription_id)
    }
    fn resend(
        &self,
        subscription_id: String,
        delivery: DeliveryId,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Result<DeliveryId, RequeueError>>> {
        requeue::resend(self, subscription_id, delivery, now)
    }
    fn recover_failed(
        &self,
        subscription_id: String,
        since: Timestamp,
        now: Timestamp,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<Option<u64>>> {
        requeue::recover_failed(self, subscription_id, since, now, limit)
    }
    fn queue_counts(&self) -> BoxFuture<'_, StoreResult<crate::store::QueueCounts>> {
        reads::queue_counts(self)
    }
    fn paused_subscriptions(&self) -> BoxFuture<'_, StoreResult<u64>> {
        self.read(|c| {
            c.prepare_cached("SELECT COUNT(*) FROM subscriptions WHERE paused_reason IS NOT NULL")?
                .query_row([], |r| r.get::<_, i64>(0))
                .map(|n| n.max(0) as u64)
        })
    }
    fn reseal_secrets(&self, batch: usize) -> BoxFuture<'_, StoreResult<u64>> {
        let Some(cipher) = self.cipher.clone() else {
            return Box::pin(async { Ok(0) });
        };
        Box::pin(async move {
            self.conn
                .write(move |tx| registry::reseal_batch(tx, &cipher, batch).map_err(conversion))
                .await
        })
    }
    fn erase_payloads(
        &self,
        workspace_id: String,
        subject: crate::model::ErasureSubject,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<crate::model::Erased>> {
        erasure::erase_payloads(self, workspace_id, subject, now)
    }
    fn purge(
        &self,
        finished_before: Timestamp,
        events_before: Timestamp,
        batch: usize,
    ) -> BoxFuture<'_, StoreResult<Purged>> {
        retention::purge(self, finished_before.unix_millis(), events_before.unix_millis(), batch)
    }
}
