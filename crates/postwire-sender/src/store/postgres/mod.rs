//! The shared store: PostgreSQL, so that several sender processes (on one machine or
//! many) dispatch from one queue.
//!
//! **Driver.** `tokio-postgres` with the `deadpool-postgres` pool: the plain async
//! protocol driver the Rust ecosystem builds on, with per-connection prepared-statement
//! caches (one round trip per statement after the first), pipelining, and `LISTEN` through
//! the connection's message stream, and no compile-time query checking that would need a
//! database at build time (sqlx's macros). It adds a handful of small crates, where sqlx
//! would add its own runtime layer.
//!
//! **Same behaviour as SQLite.** The tables, delivery states (0 pending head, 1 held,
//! 2 delivered, 3 failed, 4 expired, 5 waiting, 6 cancelled) and statements mirror `store/sqlite`;
//! the decisions are the same pure functions ([`crate::routing`], [`crate::ordering`],
//! [`crate::health`], [`crate::idempotency`]) called inside the transactions. What
//! differs is what several processes need:
//!
//! * **Queue heads and leases in one small table.** `queue_heads` has a row for each
//!   delivery that heads its queue (state 0), added in the transaction that makes it the
//!   head (publish, promotion, resume, retry) and deleted in the one that ends or holds
//!   it; `deliveries` is the history. A claim leases a head in place: it sets the owner
//!   and moves the row's due time to the lease's end, so the head leaves the claimable
//!   range (`due_at <= now`) and comes back by itself when the lease ends. Recording the
//!   outcome deletes the row (or, for a retry, sets the retry's time and clears the
//!   owner). A process that dies (SIGKILL, lost network) loses its leases when they end,
//!   and another process claims the deliveries again (at least once, same
//!   `webhook-id`). [`Store::recover`] releases only the given owner's leases. The table
//!   holds the heads, not the history, so the stores vacuum it every second while they
//!   claim (one of them: a store skips its turn when another vacuumed within the
//!   second): every claim and outcome leaves dead index entries at the front of the
//!   claimable range, which claims would otherwise step over until the next autovacuum.
//!   (Schema version 4 read the heads through an index of `deliveries`, with leases in a
//!   table of their own; version 2 kept leases in columns of `deliveries`.)
//! * **Claims** pick due heads with `FOR UPDATE SKIP LOCKED`, one subscription at a
//!   time, under a transaction-scoped advisory lock of that subscription taken with
//!   `pg_try_advisory_xact_lock` (a subscription another process is claiming right now is
//!   skipped, not waited for). A claim walks through the subscriptions that have a row
//!   in `queue_heads` (skipping through its index), from after where this process's last
//!   claim stopped and round to the first, until it has found at most 256 with a due
//!   head (so at most 256 such locks, one claim at a time per process: within the lock
//!   table's share of a pool of 16 connections): it costs what it looks at, however many
//!   are queued, and with more due than one claim looks at they take turns. It gives
//!   them, earliest due first, as many as each has due within its room. Under that lock,
//!   in the next statement (whose snapshot is taken after it), the other processes' live
//!   leases of the subscription are counted (`queue_heads_leased`, by owner: two ranges
//!   around the claiming one) and its heads taken, so the per-subscription in-flight
//!   limit holds across processes (twice the request limit while the process is alone
//!   with the subscription, to claim ahead; the request limit while another holds a
//!   lease of it, so that their requests together stay within it). The claiming
//!   process's own attempts come from its own count ([`ClaimRequest::in_flight`]), not
//!   from its leases: the room is for requests, and a lease whose request has ended
//!   stays until its outcome is written (counted, it held room for a whole write cycle:
//!   a third of the rate with one subscription). A claim is two
//!   statements (candidates with their locks, a second time when its walk goes round to
//!   the first subscription; count and take), an outcome batch three
//!   (subscriptions locked, one statement for attempts, states, heads and successors,
//!   health), whatever their size, in two and three round trips: `BEGIN` goes out with
//!   the first statement and `COMMIT` with the last (`PipelinedTx`); pooled
//!   connections keep one generic plan per statement.
//! * **Serialisation of the queue moves.** Every write that changes a subscription's
//!   queues takes its subscription rows' locks first, in row order: publishes `FOR SHARE`
//!   (publishes run side by side), recording outcomes, pause and resume `FOR UPDATE`
//!   (they exclude publishes to the same subscriptions). Two publishes to one (subscription,
//!   ordering key) also take a transaction advisory lock of that key, in key order, so
//!   they cannot both see the key free and make two queue heads. Advisory locks live in
//!   a shared table sized for about 64 per connection (`max_locks_per_transaction`),
//!   so a publish with more than 32 queues (100 events into 10 subscriptions makes
//!   1,000) locks its subscriptions' rows `FOR UPDATE` instead (chosen up front from
//!   the workspace's subscriptions at its last publish, or, when it finds out only after
//!   routing, by starting its transaction again), and so does a recovery of failed
//!   deliveries: other placements in those subscriptions wait for it. The result: at
//!   most one head per queue, whatever the processes do, and no batch too large for the
//!   lock table.
//! * **Wake-ups.** A write that makes a delivery due sends `NOTIFY postwire_due` in its
//!   transaction; each store listens on a connection of its own (`listen.rs`) and wakes
//!   its dispatcher, which otherwise polls (`idle_poll`) as with SQLite.
//! * **Connection loss.** A transaction that fails because the connection broke or the
//!   server is restarting (or on a deadlock or serialisation failure) is run again from
//!   the start, with a backoff, for up to [`PostgresOptions::retry_for`]; a failure while
//!   committing is not retried (its outcome is unknown) and is returned as an error, so a
//!   publish is acknowledged only when committed. Nothing accepted is lost.
//!
//! Files: `schema.rs` (tables, version, migrations), `queue.rs` (enqueue, claim, pause,
//! resume, recover), `outcomes.rs` (recording attempts), `registry.rs`, `reads.rs`,
//! `idempotency.rs`, `listen.rs`.

mod connect;
mod erasure;
mod idempotency;
mod listen;
mod notices;
mod outcomes;
mod queue;
mod reads;
mod registry;
mod requeue;
mod retention;
mod schema;
#[cfg(test)]
mod tests;

pub use connect::{ConnectionMessages, PgTarget};
pub use schema::{SCHEMA_VERSION, register_workspaces};

use std::sync::Arc;
use std::time::{Duration, Instant};

use deadpool_postgres::{Hook, HookError, ManagerConfig, Pool, RecyclingMethod, Runtime};
use postwire_core::{Event, Integration, Secret, Timestamp};
use tokio_postgres::error::SqlState;

use super::{BoxFuture, ClaimRequest, ClaimedDelivery, DeliveryCounts, FinishedAttempt, Store, StoreResult};
use crate::error::SenderError;
use crate::events::BuiltEvent;
use crate::idempotency::{Completion, Decision, IdempotencyKey};
use crate::model::{
    DeliveryRecord, Notification, ResumeSummary, StoredSubscription, SubscriptionChanges, Workspace, WorkspaceKeys,
};
use crate::notices::{NewNotice, PendingNotice};

const PENDING: i64 = 0;
const HELD: i64 = 1;
const DELIVERED: i64 = 2;
const FAILED: i64 = 3;
const EXPIRED: i64 = 4;
const WAITING: i64 = 5;
const CANCELLED: i64 = 6;

/// The channel of the wake-ups.
const CHANNEL: &str = "postwire_due";

/// Run on each pooled connection when it is made: prepared statements keep one generic
/// plan instead of being planned again for their parameters on each run. The store's
/// statements are written for one plan (index lookups driven by the arrays they are
/// given, `OFFSET 0` where a lateral lookup must stay per row); PostgreSQL's default
/// (`auto`) planned the claim's and the outcomes' statements afresh each time, about
/// 15 µs of server CPU per delivery in the benchmark.
const GENERIC_PLANS: &str = "SET plan_cache_mode = force_generic_plan";

/// Default of [`PostgresOptions::pool_size`].
pub const DEFAULT_POOL_SIZE: usize = 16;
/// Default of [`PostgresOptions::retry_for`].
pub const DEFAULT_RETRY_FOR: Duration = Duration::from_secs(60);

/// How to connect.
#[derive(Debug, Clone)]
pub struct PostgresOptions {
    /// Most connections in the pool (default [`DEFAULT_POOL_SIZE`]); the wake-up listener
    /// uses one more.
    pub pool_size: usize,
    /// How long a transaction that failed on a lost connection (or a deadlock) is tried
    /// again before the error is returned (default [`DEFAULT_RETRY_FOR`]).
    pub retry_for: Duration,
    /// Seals signing secrets at rest ([`crate::secret_box`]); `None` stores them plain.
    pub secret_cipher: Option<Arc<crate::secret_box::SecretCipher>>,
    /// Whether connecting seals every stored secret under `secret_cipher` (default
    /// `true`: what a process that signs deliveries does at start). Commands that never
    /// read a signing secret (registering or looking up a workspace) turn it off, so
    /// they need no key: least privilege, and they work beside a running deployment.
    pub seal_on_connect: bool,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            pool_size: DEFAULT_POOL_SIZE,
            retry_for: DEFAULT_RETRY_FOR,
            secret_cipher: None,
            seal_on_connect: true,
        }
    }
}

/// The PostgreSQL store. Cheap to clone; clones share the pool and the listener.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    retry_for: Duration,
    wake: Arc<tokio::sync::Notify>,
    _listener: Arc<listen::Listener>,
    description: Arc<str>,
    cipher: Option<Arc<crate::secret_box::SecretCipher>>,
    /// When this store last started a vacuum of `queue_heads` (`queue.rs`).
    vacuumed: Arc<std::sync::Mutex<Instant>>,
    /// How many subscriptions each workspace had at its last publish, so that a publish
    /// chooses how to lock its queues before it starts (`queue.rs`, [`queue::QueueLocking`]).
    subscriptions_seen: Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>,
    /// The subscription row after which this store's next claim starts looking
    /// (`queue.rs`, [`queue::CANDIDATES_SQL`]): 0 for the first.
    claim_cursor: Arc<std::sync::atomic::AtomicI64>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("database", &self.description)
            .finish()
    }
}

/// Why a transaction failed, and so whether it may be run again.
#[derive(Debug)]
pub(crate) enum PgErr {
    /// A statement failed.
    Db(tokio_postgres::Error),
    /// The commit failed: whether it took effect is unknown, so it is not retried.
    Commit(tokio_postgres::Error),
    /// No connection could be had.
    Pool(deadpool_postgres::PoolError),
    /// A stored value could not be read, or a rule refused the write.
    Data(String),
}

impl From<tokio_postgres::Error> for PgErr {
    fn from(e: tokio_postgres::Error) -> Self {
        PgErr::Db(e)
    }
}

impl std::fmt::Display for PgErr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PgErr::Db(e) => write!(f, "{}", describe(e)),
            PgErr::Commit(e) => write!(f, "commit failed: {}", describe(e)),
            PgErr::Pool(e) => write!(f, "no database connection: {e}"),
            PgErr::Data(e) => f.write_str(e),
        }
    }
}

/// The server's message when there is one (the driver's own `Display` says only "db
/// error").
fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => e.to_string(),
    }
}

/// A value read from a row that is not what the schema says.
pub(crate) fn data(e: impl std::fmt::Display) -> PgErr {
    PgErr::Data(e.to_string())
}

impl PgErr {
    /// Failures that running the whole transaction again can cure.
    fn retryable(&self) -> bool {
        match self {
            PgErr::Pool(_) => true,
            PgErr::Db(e) => {
                if e.is_closed() {
                    return true;
                }
                match e.code() {
                    Some(code) => {
                        [
                            SqlState::T_R_SERIALIZATION_FAILURE,
                            SqlState::T_R_DEADLOCK_DETECTED,
                            SqlState::ADMIN_SHUTDOWN,
                            SqlState::CRASH_SHUTDOWN,
                            SqlState::CANNOT_CONNECT_NOW,
                        ]
                        .contains(code)
                            || code.code().starts_with("08")
                    }
                    // No server error: the socket failed (io), or the connection ended.
                    None => std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>()),
                }
            }
            PgErr::Commit(_) | PgErr::Data(_) => false,
        }
    }
}

/// A pooled connection, owned by one transaction's future.
pub(crate) type Client = deadpool_postgres::Object;

/// A transaction whose `BEGIN` goes out together with its first statement and whose
/// `COMMIT` goes out together with its last (the connection pipelines requests issued
/// together): two round trips fewer than a `Transaction`, for the claims and the outcome
/// batches, which run thousands of times a second and are a few statements each.
/// Dropped without being committed (an error, or its future dropped), it is rolled back
/// before its connection goes back to the pool, and a connection whose rollback fails
/// is closed rather than reused.
pub(crate) struct PipelinedTx {
    client: Option<Client>,
    done: std::sync::atomic::AtomicBool,
}

impl PipelinedTx {
    pub(crate) fn new(client: Client) -> Self {
        PipelinedTx {
            client: Some(client),
            done: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The connection, for statements inside the transaction (after [`Self::begin_with`]).
    pub(crate) fn client(&self) -> &Client {
        // Taken only by `drop`.
        self.client.as_ref().unwrap_or_else(|| unreachable!())
    }

    /// Sends `BEGIN` and then `first` without waiting in between; `first` must be a
    /// statement of the transaction that changes nothing by itself (a read, a lock):
    /// should `BEGIN` fail, it would have run on its own.
    pub(crate) async fn begin_with<T>(
        &self,
        first: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, PgErr> {
        let (begun, out) = tokio::join!(self.client().batch_execute("BEGIN"), first);
        begun?;
        Ok(out?)
    }

    /// Sends `last` and then `COMMIT` without waiting in between. Should `last` fail,
    /// the `COMMIT` ends the transaction as a rollback, and `last`'s error is returned.
    pub(crate) async fn commit_with<T>(
        &self,
        last: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, PgErr> {
        let (out, committed) = tokio::join!(last, self.client().batch_execute("COMMIT"));
        self.done.store(true, std::sync::atomic::Ordering::Relaxed);
        let out = out?;
        committed.map_err(PgErr::Commit)?;
        Ok(out)
    }

    pub(crate) async fn commit(&self) -> Result<(), PgErr> {
        let committed = self.client().batch_execute("COMMIT").await;
        self.done.store(true, std::sync::atomic::Ordering::Relaxed);
        committed.map_err(PgErr::Commit)
    }
}

impl Drop for PipelinedTx {
    fn drop(&mut self) {
        let Some(client) = self.client.take() else { return };
        if *self.done.get_mut() {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if client.batch_execute("ROLLBACK").await.is_err() {
                        drop(deadpool_postgres::Object::take(client));
                    }
                });
            }
            Err(_) => drop(deadpool_postgres::Object::take(client)),
        }
    }
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/db`, or
    /// a socket directory as a percent-encoded host), brings its schema up to date, and
    /// starts listening for wake-ups.
    pub async fn connect(url: &str) -> StoreResult<Self> {
        Self::connect_with(url, PostgresOptions::default()).await
    }

    /// Connects with options. A URL that is not a PostgreSQL URL is `invalid_request`;
    /// a database of a newer schema version is refused.
    pub async fn connect_with(url: &str, options: PostgresOptions) -> StoreResult<Self> {
        let target = PgTarget::parse(url)?;
        let description: Arc<str> = describe_config(target.config()).into();
        let manager = target.manager(ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        });
        let pool = Pool::builder(manager)
            .post_create(Hook::async_fn(|client, _| {
                Box::pin(async move { client.batch_execute(GENERIC_PLANS).await.map_err(HookError::Backend) })
            }))
            .max_size(options.pool_size.max(1))
            .runtime(Runtime::Tokio1)
            .create_timeout(Some(Duration::from_secs(10)))
            .wait_timeout(Some(Duration::from_secs(30)))
            .build()
            .map_err(SenderError::storage)?;
        let wake = Arc::new(tokio::sync::Notify::new());
        let store = PostgresStore {
            pool,
            retry_for: options.retry_for,
            wake: wake.clone(),
            _listener: Arc::new(listen::Listener::start(target, wake)),
            description,
            cipher: options.secret_cipher,
            vacuumed: Arc::new(std::sync::Mutex::new(Instant::now())),
            subscriptions_seen: Arc::default(),
            claim_cursor: Arc::default(),
        };
        schema::migrate(&store).await?;
        if options.seal_on_connect {
            let resealed = registry::reseal_all(&store).await?;
            if resealed > 0 {
                tracing::info!(resealed, "sealed stored secrets under the current key");
            }
        }
        Ok(store)
    }

    /// Runs `f` (one transaction, on a pooled connection) until it succeeds, fails for
    /// good, or failures that a new connection could cure have gone on for `retry_for`.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        what: &'static str,
        f: impl Fn(Client) -> BoxFuture<'static, Result<T, PgErr>> + Send + Sync,
    ) -> StoreResult<T> {
        let started = Instant::now();
        let mut backoff = Duration::from_millis(20);
        loop {
            let result = match self.pool.get().await {
                Ok(client) => f(client).await,
                Err(e) => Err(PgErr::Pool(e)),
            };
            match result {
                Ok(v) => return Ok(v),
                Err(e) if e.retryable() && started.elapsed() < self.retry_for => {
                    tracing::warn!(operation = what, error = %e, "database unavailable; trying again");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
                Err(e) => return Err(SenderError::storage(format!("{what}: {e}"))),
            }
        }
    }
}

/// Where the store is connected, without the password (for `Debug` and logs).
fn describe_config(config: &tokio_postgres::Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(h) => h.clone(),
            tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
        })
        .unwrap_or_default();
    format!(
        "{}@{host}/{}",
        config.get_user().unwrap_or(""),
        config.get_dbname().unwrap_or("")
    )
}

pub(crate) fn ts(millis: i64) -> Timestamp {
    Timestamp::from_unix_millis(millis)
}

pub(crate) fn opt_ts(millis: Option<i64>) -> Option<Timestamp> {
    millis.map(ts)
}

/// A count or limit as a `BIGINT` parameter (one past `i64::MAX` is no limit at all).
pub(crate) fn bigint(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Store for PostgresStore {
    fn recover(&self, owner: String) -> BoxFuture<'_, StoreResult<u64>> {
        Box::pin(queue::recover(self, owner))
    }
    fn upsert_workspace(&self, workspace: Workspace) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(registry::upsert_workspace(self, workspace))
    }
    fn workspace(&self, id: String) -> BoxFuture<'_, StoreResult<Option<Workspace>>> {
        Box::pin(registry::workspace(self, id))
    }
    fn upsert_integration(&self, workspace_id: String, integration: Integration) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(registry::upsert_integration(self, workspace_id, integration))
    }
    fn integrations(&self, workspace_id: String, ids: Vec<String>) -> BoxFuture<'_, StoreResult<Vec<Integration>>> {
        Box::pin(registry::integrations(self, workspace_id, ids))
    }
    fn insert_subscription(
        &self,
        subscription: StoredSubscription,
        completion: Option<Completion>,
        limit: Option<u64>,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        Box::pin(registry::insert_subscription(self, subscription, completion, limit))
    }
    fn subscription(&self, id: String) -> BoxFuture<'_, StoreResult<Option<StoredSubscription>>> {
        Box::pin(registry::subscription(self, id))
    }
    fn list_subscriptions(&self, workspace_id: String) -> BoxFuture<'_, StoreResult<Vec<StoredSubscription>>> {
        Box::pin(registry::list_subscriptions(self, workspace_id))
    }
    fn update_subscription(&self, id: String, changes: SubscriptionChanges) -> BoxFuture<'_, StoreResult<bool>> {
        Box::pin(registry::update_subscription(self, id, changes))
    }
    fn delete_subscription(&self, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        Box::pin(registry::delete_subscription(self, id))
    }
    fn pause(&self, id: String, reason: String) -> BoxFuture<'_, StoreResult<bool>> {
        Box::pin(queue::pause(self, id, reason))
    }
    fn resume(
        &self,
        id: String,
        now: Timestamp,
        hold_cutoff: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Option<ResumeSummary>>> {
        Box::pin(queue::resume(self, id, now, hold_cutoff))
    }
    fn rotate_secret(
        &self,
        id: String,
        new_secret: Secret,
        previous_until: Timestamp,
        notice: NewNotice,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        Box::pin(registry::rotate_secret(self, id, new_secret, previous_until, notice))
    }
    fn signing_keys(&self, workspace_id: String) -> BoxFuture<'_, StoreResult<Option<WorkspaceKeys>>> {
        Box::pin(registry::signing_keys(self, workspace_id))
    }
    fn ensure_signing_key(
        &self,
        workspace_id: String,
        key: crate::signer::WorkspaceKey,
        key_set_id: String,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Option<WorkspaceKeys>>> {
        Box::pin(registry::ensure_signing_key(self, workspace_id, key, key_set_id, now))
    }
    fn key_set(&self, key_set_id: String) -> BoxFuture<'_, StoreResult<Option<WorkspaceKeys>>> {
        Box::pin(registry::key_set(self, key_set_id))
    }
    fn rotate_signing_key(
        &self,
        workspace_id: String,
        key: crate::signer::WorkspaceKey,
        now: Timestamp,
        previous_until: Timestamp,
        notice: NewNotice,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        Box::pin(registry::rotate_signing_key(
            self,
            workspace_id,
            key,
            now,
            previous_until,
            notice,
        ))
    }
    fn enqueue(
        &self,
        events: Vec<BuiltEvent>,
        now: Timestamp,
        completion: Option<Completion>,
    ) -> BoxFuture<'_, StoreResult<Vec<usize>>> {
        Box::pin(queue::enqueue(self, events, now, completion))
    }
    fn begin_idempotent(&self, key: IdempotencyKey, now: Timestamp) -> BoxFuture<'_, StoreResult<Decision>> {
        Box::pin(idempotency::begin(self, key, now))
    }
    fn abandon_idempotent(&self, key: IdempotencyKey, lease_until_ms: i64) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(idempotency::abandon(self, key, lease_until_ms))
    }
    fn claim(&self, request: ClaimRequest) -> BoxFuture<'_, StoreResult<Vec<ClaimedDelivery>>> {
        Box::pin(queue::claim(self, request))
    }
    fn next_due_at(&self) -> BoxFuture<'_, StoreResult<Option<Timestamp>>> {
        Box::pin(queue::next_due_at(self))
    }
    fn record_attempts(
        &self,
        attempts: Vec<FinishedAttempt>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<Notification>>> {
        Box::pin(outcomes::record_attempts(self, attempts, now))
    }
    fn pending_notices(&self, limit: usize) -> BoxFuture<'_, StoreResult<Vec<PendingNotice>>> {
        Box::pin(notices::pending(self, limit))
    }
    fn list_deliveries(
        &self,
        subscription_id: String,
        before: Option<i64>,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<Vec<DeliveryRecord>>> {
        Box::pin(reads::list_deliveries(self, subscription_id, before, limit))
    }
    fn posts_with_external_id(
        &self,
        workspace_id: String,
        external_id: String,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        Box::pin(reads::posts_with_external_id(self, workspace_id, external_id, limit))
    }
    fn events_for_post(
        &self,
        workspace_id: String,
        post_id: String,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<Vec<Event>>> {
        Box::pin(reads::events_for_post(self, workspace_id, post_id, limit))
    }
    fn notifications(&self, workspace_id: String, limit: usize) -> BoxFuture<'_, StoreResult<Vec<Notification>>> {
        Box::pin(reads::notifications(self, workspace_id, limit))
    }
    fn delivery_counts(&self, subscription_id: Option<String>) -> BoxFuture<'_, StoreResult<DeliveryCounts>> {
        Box::pin(reads::delivery_counts(self, subscription_id))
    }
    fn resend(
        &self,
        subscription_id: String,
        delivery: crate::model::DeliveryId,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Result<crate::model::DeliveryId, crate::store::RequeueError>>> {
        Box::pin(requeue::resend(self, subscription_id, delivery, now))
    }
    fn recover_failed(
        &self,
        subscription_id: String,
        since: Timestamp,
        now: Timestamp,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<Option<u64>>> {
        Box::pin(requeue::recover_failed(self, subscription_id, since, now, limit))
    }
    fn queue_counts(&self) -> BoxFuture<'_, StoreResult<crate::store::QueueCounts>> {
        Box::pin(reads::queue_counts(self))
    }
    fn paused_subscriptions(&self) -> BoxFuture<'_, StoreResult<u64>> {
        Box::pin(reads::paused_subscriptions(self))
    }
    fn reseal_secrets(&self, batch: usize) -> BoxFuture<'_, StoreResult<u64>> {
        Box::pin(registry::reseal_batch(self, batch))
    }
    fn erase_payloads(
        &self,
        workspace_id: String,
        subject: crate::model::ErasureSubject,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<crate::model::Erased>> {
        Box::pin(erasure::erase_payloads(self, workspace_id, subject, now))
    }
    fn purge(
        &self,
        finished_before: Timestamp,
        events_before: Timestamp,
        batch: usize,
    ) -> BoxFuture<'_, StoreResult<crate::store::Purged>> {
        Box::pin(retention::purge(self, finished_before, events_before, batch))
    }
    fn wakeups(&self) -> Option<Arc<tokio::sync::Notify>> {
        Some(self.wake.clone())
    }
}
