//! The storage interface: where the sender's state lives, and nothing else.
//!
//! Events, deliveries, attempts, held events, subscriptions and notifications are written
//! here before the call that produced them returns; the dispatcher keeps nothing in
//! memory that it cannot rebuild from the store after a crash.
//!
//! [`Store`] holds storage operations only. The decisions are the sender's and live
//! above it, as pure functions a backend calls inside its transactions and whose answer
//! it stores: which subscriptions get an event and whether it is held
//! ([`crate::routing`]), where a delivery goes in its queue and which outcomes end it
//! ([`crate::ordering`]), the health counters, the pause decision and the notice text
//! ([`crate::health`]); retry times ([`crate::schedule`]) arrive already decided in
//! [`FinishedAttempt::next`].
//!
//! ## The invariants every backend keeps
//! 1. **Atomic enqueue.** An event and all its deliveries commit together, before
//!    [`Store::enqueue`] returns; a failed enqueue leaves nothing.
//! 2. **Only queue heads are claimable.** Deliveries of one (subscription, ordering key)
//!    form a queue, in enqueue order; only its head may be returned by [`Store::claim`].
//!    Deliveries behind the head wait and cost a claim nothing, so a claim's cost does
//!    not depend on how many are blocked.
//! 3. **Promotion with the outcome.** The transaction that records a head's final
//!    outcome (delivered, failed; [`crate::ordering::ends_delivery`]) makes the next
//!    delivery of its queue the head; resume does the same for queues whose head
//!    expired. An outcome recorded for a delivery that is already finished changes
//!    nothing (so a queue never gets two heads).
//! 4. **Leases.** A claimed delivery is leased to its claimer until
//!    [`ClaimRequest::lease_until`]; it is not claimed again before its outcome is
//!    recorded or the lease ends. A lease that outlives its process makes the delivery
//!    claimable again: delivery is at least once, never lost.
//! 5. **Held while paused.** A paused subscription's unfinished deliveries are held and
//!    never claimed; resume expires those older than the cut-off and releases the rest
//!    in order.
//!
//! Backends:
//! * [`SqliteStore`](sqlite::SqliteStore), the embedded default: one file in WAL mode,
//!   one store per file (leases in memory).
//! * [`PostgresStore`](postgres::PostgresStore), for several sender processes on one
//!   queue: [`Store::claim`] takes due heads with `SELECT … FOR UPDATE SKIP LOCKED`
//!   from a table of the queue heads, where their leases live too (a dead process's
//!   leases end and others take its deliveries over), the per-subscription in-flight limit is counted
//!   from the table, wake-ups travel by `LISTEN/NOTIFY`; [`Store::recover`] releases
//!   only the given owner's leases.
//!
//! Methods return boxed futures so the trait is object-safe (`Arc<dyn Store>`).

#[cfg(test)]
mod conformance;
pub mod postgres;
pub mod sqlite;

use std::collections::HashMap;
use std::sync::Arc;

use postwire_core::{Event, Integration, Secret, Timestamp};

use crate::error::SenderError;
use crate::events::BuiltEvent;
use crate::idempotency::{Completion, Decision, IdempotencyKey};
use crate::model::{
    AttemptOutcome, DeliveryId, DeliveryRecord, Erased, ErasureSubject, Notification, ResumeSummary,
    StoredSubscription, SubscriptionChanges, Workspace, WorkspaceKeys,
};
use crate::notices::{NewNotice, PendingNotice, RELAY_BATCH, relay_event};
use crate::signer::{DeliverySigner, WorkspaceKey};

/// A boxed, sendable future: what every [`Store`] method returns (defined at the crate's
/// root, where the signers' traits use it too without depending on the store).
pub use crate::BoxFuture;

/// The result of a store operation.
pub type StoreResult<T> = Result<T, SenderError>;

/// What the dispatcher asks for when it has room for more attempts.
#[derive(Debug, Clone)]
pub struct ClaimRequest {
    /// The current time: deliveries due at or before it are eligible.
    pub now: Timestamp,
    /// At most this many deliveries.
    pub limit: usize,
    /// The lease taken on each claimed delivery ends then; an unfinished lease past this
    /// time (a crashed process) makes the delivery claimable again.
    pub lease_until: Timestamp,
    /// Who takes the lease (a process identifier).
    pub owner: String,
    /// At most this many claimed, unfinished attempts per subscription...
    pub per_subscription_limit: usize,
    /// ...or, in a store shared by several processes, this many (the request limit)
    /// while another process holds live leases of the subscription: the processes
    /// together then claim no more than they may send at once, since each one's
    /// attempts claimed ahead would add up to more requests than the limit.
    pub shared_per_subscription_limit: usize,
    /// ...counting these, already claimed by this process (running or waiting for a
    /// request slot), and, in a store shared by several processes, the live leases of
    /// the other owners. This process's own leases are counted here and nowhere else:
    /// an attempt whose request has ended keeps its lease until its outcome is
    /// written, but makes no request and takes no room.
    pub in_flight: HashMap<String, usize>,
}

/// A delivery claimed for one attempt: everything needed to send it.
#[derive(Debug, Clone)]
pub struct ClaimedDelivery {
    /// The delivery.
    pub id: DeliveryId,
    /// Its subscription.
    pub subscription_id: String,
    /// The event id (`webhook-id`).
    pub event_id: String,
    /// The exact body sent on every attempt (shared by the deliveries of one event).
    pub body: bytes::Bytes,
    /// The endpoint.
    pub url: String,
    /// Signs as [`crate::signing::signer_at`] says for the subscription's `signing`
    /// choice at the claim's time. Shared by the deliveries of one subscription in a
    /// claim.
    pub signer: Arc<DeliverySigner>,
    /// The number of this attempt (1 for the first).
    pub attempt: u32,
    /// When the delivery was created, for publish-to-attempt latency.
    pub created_at: Timestamp,
}

pub use crate::model::NextState;

/// One finished attempt, to be recorded.
#[derive(Debug, Clone)]
pub struct FinishedAttempt {
    /// The delivery.
    pub delivery: DeliveryId,
    /// Its subscription.
    pub subscription_id: String,
    /// The attempt number.
    pub attempt: u32,
    /// When it was sent (clock time).
    pub started_at: Timestamp,
    /// How long it took, in real milliseconds.
    pub duration_ms: u64,
    /// What it got.
    pub outcome: AttemptOutcome,
    /// What happens next.
    pub next: NextState,
}

/// The sender's storage. See the module documentation.
pub trait Store: Send + Sync + 'static {
    /// Releases the leases held by `owner` (at start-up, after a crash of the same
    /// process); returns how many. Single-process backends release every lease.
    fn recover(&self, owner: String) -> BoxFuture<'_, StoreResult<u64>>;

    /// Registers or renames a workspace.
    fn upsert_workspace(&self, workspace: Workspace) -> BoxFuture<'_, StoreResult<()>>;
    /// Whether the workspace is registered.
    fn workspace(&self, id: String) -> BoxFuture<'_, StoreResult<Option<Workspace>>>;
    /// Registers or updates a connected account of a workspace.
    fn upsert_integration(&self, workspace_id: String, integration: Integration) -> BoxFuture<'_, StoreResult<()>>;
    /// The registered accounts of `workspace_id` among `ids` (missing ones are left out).
    fn integrations(&self, workspace_id: String, ids: Vec<String>) -> BoxFuture<'_, StoreResult<Vec<Integration>>>;

    /// Stores a new subscription, and completes `completion`'s key in the same
    /// transaction. With a `limit`, the workspace's subscriptions are counted in that
    /// transaction, serialised with every other insert into the workspace (in every
    /// process), and `false` means it already had `limit`: nothing was written.
    fn insert_subscription(
        &self,
        subscription: StoredSubscription,
        completion: Option<Completion>,
        limit: Option<u64>,
    ) -> BoxFuture<'_, StoreResult<bool>>;
    /// One subscription, with its secrets.
    fn subscription(&self, id: String) -> BoxFuture<'_, StoreResult<Option<StoredSubscription>>>;
    /// The subscriptions of a workspace, oldest first.
    fn list_subscriptions(&self, workspace_id: String) -> BoxFuture<'_, StoreResult<Vec<StoredSubscription>>>;
    /// Applies `changes`; false when there is no such subscription.
    fn update_subscription(&self, id: String, changes: SubscriptionChanges) -> BoxFuture<'_, StoreResult<bool>>;
    /// Deletes a subscription with its deliveries and attempts; false when absent.
    fn delete_subscription(&self, id: String) -> BoxFuture<'_, StoreResult<bool>>;
    /// Pauses a subscription with `reason` and holds its pending deliveries; false when
    /// absent. Pausing a paused subscription only updates the reason.
    fn pause(&self, id: String, reason: String) -> BoxFuture<'_, StoreResult<bool>>;
    /// Resumes: held deliveries whose event was created at or after `hold_cutoff` are
    /// due at `now`, older ones expire; the failure counters start again. A subscription
    /// that was paused gets its `endpoint.resumed` notice in the same transaction.
    /// `None` when absent.
    fn resume(
        &self,
        id: String,
        now: Timestamp,
        hold_cutoff: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Option<ResumeSummary>>>;
    /// Replaces the secret; the old one keeps signing until `previous_until`. Stores
    /// `notice` (`endpoint.secret_rotated`) in the same transaction.
    fn rotate_secret(
        &self,
        id: String,
        new_secret: Secret,
        previous_until: Timestamp,
        notice: NewNotice,
    ) -> BoxFuture<'_, StoreResult<bool>>;

    /// The workspace's `v1a` key pair as stored (`None` when it has none yet, or when
    /// there is no such workspace).
    fn signing_keys(&self, workspace_id: String) -> BoxFuture<'_, StoreResult<Option<WorkspaceKeys>>>;
    /// Stores `key`, made at `now`, as the workspace's signing key if it has none, with
    /// `key_set_id` as the id of its published key set, and returns the key pair it has
    /// after that (`None` when there is no such workspace). Concurrent calls (in every
    /// process) agree on one key and one key-set id.
    fn ensure_signing_key(
        &self,
        workspace_id: String,
        key: WorkspaceKey,
        key_set_id: String,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Option<WorkspaceKeys>>>;
    /// The key pair whose published key set has the id `key_set_id` (`None` when no
    /// workspace has it): one indexed read, no write, so the public key-set route stays
    /// cheap under load.
    fn key_set(&self, key_set_id: String) -> BoxFuture<'_, StoreResult<Option<WorkspaceKeys>>>;
    /// Replaces the workspace's signing key with `key`, made at `now`; the old one
    /// becomes the previous key, signing until `previous_until` (an older previous key is
    /// dropped). False when there is no such workspace or it has no key yet. Stores
    /// `notice` (`signing_key.rotated`) in the same transaction.
    fn rotate_signing_key(
        &self,
        workspace_id: String,
        key: WorkspaceKey,
        now: Timestamp,
        previous_until: Timestamp,
        notice: NewNotice,
    ) -> BoxFuture<'_, StoreResult<bool>>;

    /// Stores events and one delivery per subscription [`crate::routing`] gives it,
    /// placed by [`crate::ordering`], atomically, and completes `completion`'s key in the
    /// same transaction; returns the number of deliveries per event. An operational
    /// notice ([`crate::events::Envelope::Notice`]) is marked relayed in the same
    /// transaction, and one relayed already is skipped (0 deliveries, nothing stored).
    fn enqueue(
        &self,
        events: Vec<BuiltEvent>,
        now: Timestamp,
        completion: Option<Completion>,
    ) -> BoxFuture<'_, StoreResult<Vec<usize>>>;
    /// Begins a request with an idempotency key: reads the key's row, applies
    /// [`crate::idempotency::decide`] and, on `Start`, stores the key as in progress,
    /// in one transaction.
    fn begin_idempotent(&self, key: IdempotencyKey, now: Timestamp) -> BoxFuture<'_, StoreResult<Decision>>;
    /// Frees a key whose request failed (only while it is still in progress with this
    /// lease).
    fn abandon_idempotent(&self, key: IdempotencyKey, lease_until_ms: i64) -> BoxFuture<'_, StoreResult<()>>;
    /// Claims due deliveries that head their (subscription, ordering key) queue. See
    /// [`ClaimRequest`].
    fn claim(&self, request: ClaimRequest) -> BoxFuture<'_, StoreResult<Vec<ClaimedDelivery>>>;
    /// The earliest due time of any pending delivery, to know how long to sleep.
    fn next_due_at(&self) -> BoxFuture<'_, StoreResult<Option<Timestamp>>>;
    /// Records finished attempts, updates deliveries and subscription health, pauses
    /// subscriptions as [`crate::health`] says and stores the notices of those changes
    /// ([`crate::notices`]), in one transaction; returns the notices, in order.
    fn record_attempts(
        &self,
        attempts: Vec<FinishedAttempt>,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Vec<Notification>>>;
    /// Stored notices not relayed yet, oldest first, at most `limit`
    /// ([`crate::notices`]; [`Store::enqueue`] marks each relayed as it queues it).
    fn pending_notices(&self, limit: usize) -> BoxFuture<'_, StoreResult<Vec<PendingNotice>>>;
    /// Queues every stored notice not relayed yet for the operator endpoints, oldest
    /// first, [`RELAY_BATCH`] per transaction; returns how
    /// many deliveries that made. Safe to run anywhere at any time, in any number of
    /// processes: a notice another relay queued first is skipped.
    fn relay_notices(&self, now: Timestamp) -> BoxFuture<'_, StoreResult<usize>> {
        Box::pin(async move {
            let mut deliveries = 0;
            loop {
                let pending = self.pending_notices(RELAY_BATCH).await?;
                let full = pending.len() == RELAY_BATCH;
                if pending.is_empty() {
                    return Ok(deliveries);
                }
                let events = pending.into_iter().map(relay_event).collect();
                deliveries += self.enqueue(events, now, None).await?.iter().sum::<usize>();
                if !full {
                    return Ok(deliveries);
                }
            }
        })
    }

    /// Deliveries of a subscription, newest first, older than `before` (a delivery id),
    /// each with its attempts and its event's body.
    fn list_deliveries(
        &self,
        subscription_id: String,
        before: Option<i64>,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<Vec<DeliveryRecord>>>;
    /// The posts of a workspace whose events carry `external_id`, most recent first.
    fn posts_with_external_id(
        &self,
        workspace_id: String,
        external_id: String,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<Vec<String>>>;
    /// Events about a post, newest first.
    fn events_for_post(
        &self,
        workspace_id: String,
        post_id: String,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<Vec<Event>>>;
    /// Notifications of a workspace, newest first.
    fn notifications(&self, workspace_id: String, limit: usize) -> BoxFuture<'_, StoreResult<Vec<Notification>>>;
    /// How many deliveries are in each state, finished ones included (for tests, tools and
    /// the benchmark). It counts the whole history kept, so its cost grows with it: a
    /// gauge read every few seconds uses [`queue_counts`](Self::queue_counts).
    fn delivery_counts(&self, subscription_id: Option<String>) -> BoxFuture<'_, StoreResult<DeliveryCounts>>;
    /// How many unfinished deliveries are in each state, read through the queue's
    /// indexes: the cost grows with the backlog, not with the history (metrics).
    fn queue_counts(&self) -> BoxFuture<'_, StoreResult<QueueCounts>>;

    /// Notified when another process may have made a delivery due (a store shared by
    /// several processes); the dispatcher then claims without waiting for its poll.
    /// `None` (the default) for a store only this process writes.
    fn wakeups(&self) -> Option<Arc<tokio::sync::Notify>> {
        None
    }
    /// Resend: a new delivery of finished delivery `delivery`'s event (same event row,
    /// so the same `webhook-id` and body) to subscription `subscription_id`, with the
    /// same ordering key, placed like a new delivery by [`crate::ordering::place`]
    /// (held while paused, waiting behind unfinished deliveries of its key), in one
    /// transaction that also marks the old delivery as resent. Returns the new delivery.
    fn resend(
        &self,
        subscription_id: String,
        delivery: DeliveryId,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Result<DeliveryId, RequeueError>>>;
    /// Recover: [`resend`](Store::resend) for each failed delivery of the subscription
    /// finished at or after `since` and not resent yet, in publish order, at most
    /// `limit`, in one transaction; returns how many were queued (`None` when there is
    /// no such subscription).
    fn recover_failed(
        &self,
        subscription_id: String,
        since: Timestamp,
        now: Timestamp,
        limit: usize,
    ) -> BoxFuture<'_, StoreResult<Option<u64>>>;

    /// Erasure, in one transaction: every event of `workspace_id` about `subject` whose
    /// payload is still stored gets the tombstone (empty body, `erased_at = now`, its
    /// external-id key dropped); its unfinished deliveries are cancelled (finished at
    /// `now`, never attempted again), and in each (subscription, key) queue that so lost
    /// its head, the next waiting delivery becomes the head, as after a final outcome
    /// (invariant 3). Ids, times, states and attempt outcomes stay. Events erased before
    /// are not counted again, so a repeat answers zeros. The bytes of the old bodies
    /// leave the store's files as the backend documents (SQLite: zeroed in place and
    /// the WAL truncated; PostgreSQL: `VACUUM` of `events` after the commit, and
    /// `VACUUM FULL events` as a maintenance step for the data files).
    fn erase_payloads(
        &self,
        workspace_id: String,
        subject: ErasureSubject,
        now: Timestamp,
    ) -> BoxFuture<'_, StoreResult<Erased>>;

    /// How many subscriptions are paused (by request or by failures), for metrics.
    fn paused_subscriptions(&self) -> BoxFuture<'_, StoreResult<u64>>;

    /// After a key rotation, one batch in one short transaction: seals again under the
    /// cipher's current key at most `batch` subscriptions' secrets (and workspaces'
    /// signing keys, and sealed stored responses) that are under another key. Returns how many values changed; the
    /// caller repeats until 0 (see [`crate::secret_box`]). Without a cipher, 0.
    fn reseal_secrets(&self, batch: usize) -> BoxFuture<'_, StoreResult<u64>>;

    /// Retention, one batch in one short transaction: removes at most `batch` finished
    /// deliveries (delivered, failed, expired) that finished before `finished_before`,
    /// with their attempts, and at most `batch` events created before `events_before`
    /// that no delivery refers to. Never touches an unfinished (pending, waiting, held)
    /// delivery or the event it refers to. The caller repeats while a batch is full (see
    /// [`crate::retention`]).
    fn purge(
        &self,
        finished_before: Timestamp,
        events_before: Timestamp,
        batch: usize,
    ) -> BoxFuture<'_, StoreResult<Purged>>;
}

/// Why [`Store::resend`] queued nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequeueError {
    /// No such subscription.
    NoSubscription,
    /// No such delivery of that subscription.
    NoDelivery,
    /// The delivery is not finished (pending, waiting or held): it will be attempted anyway.
    Unfinished,
    /// The delivery's event payload was erased ([`Store::erase_payloads`]).
    Erased,
}

/// What one [`Store::purge`] call removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Purged {
    /// Finished deliveries removed.
    pub deliveries: u64,
    /// Their attempts.
    pub attempts: u64,
    /// Unreferenced events removed.
    pub events: u64,
    /// Operational notices removed (relayed ones, by age).
    pub notifications: u64,
}

pub use crate::ordering::ordering_hash;

/// Unfinished deliveries per state: what is queued now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct QueueCounts {
    /// Pending: heads of their queue, due for a first attempt or waiting for a retry.
    pub pending: u64,
    /// Waiting behind an earlier unfinished delivery of the same post or account.
    pub waiting: u64,
    /// Held (subscription paused).
    pub held: u64,
}

/// Deliveries per state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct DeliveryCounts {
    /// Pending: heads of their queue, due for a first attempt or waiting for a retry.
    pub pending: u64,
    /// Waiting behind an earlier unfinished delivery of the same post or account (same
    /// subscription); pending once that one is delivered, failed or expired.
    pub waiting: u64,
    /// Held (subscription paused).
    pub held: u64,
    /// Delivered.
    pub delivered: u64,
    /// Failed for good.
    pub failed: u64,
    /// Expired while held.
    pub expired: u64,
    /// Cancelled by an erasure of their event's payload.
    pub cancelled: u64,
}
