//! # postwire-sender
//!
//! The service side of postwire: a durable webhook dispatch engine that a publishing
//! platform embeds. The host reports domain changes ([`Sender::publish`]); the sender
//! turns each into one event, stores it with one delivery per matching subscription
//! before returning, and delivers it as a signed Standard Webhooks `POST`, retrying for
//! about a day, in order per post and per account, without ever losing an accepted
//! event.
//!
//! ```no_run
//! # async fn demo() -> Result<(), postwire_sender::SenderError> {
//! use std::sync::Arc;
//! use postwire_core::{CreatedByKind, SystemClock};
//! use postwire_sender::{NewSubscription, Sender, SenderConfig, TestEvent, Workspace};
//!
//! let sender = Sender::open_sqlite("webhooks.db", SenderConfig::default(), Arc::new(SystemClock)).await?;
//! let dispatcher = sender.start();
//! sender.upsert_workspace(Workspace { id: "ws_1".into(), name: "Acme".into() }).await?;
//! let created = sender.create_subscription(NewSubscription {
//!     workspace_id: "ws_1".into(),
//!     name: "production".into(),
//!     url: "https://hooks.example.com/postwire".into(),
//!     events: vec![],
//!     integration_ids: vec![],
//!     created_by_kind: CreatedByKind::ApiToken,
//!     signing: Default::default(),
//! }).await?;
//! // created.secret is shown to the client once.
//! sender.publish(TestEvent { workspace_id: "ws_1".into(), subscription_id: None, message: "hello".into() }).await?;
//! dispatcher.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! ## The rules, and where they live
//! * Retry schedule, jitter and `Retry-After`: [`schedule`] (9 attempts: the first plus
//!   eight retries, 22 h 42 min 30 s without jitter).
//! * What counts as a failed delivery and when a subscription pauses itself: [`health`].
//! * Ordering: deliveries of one subscription with the same ordering key (the post for
//!   post events, the account for account events, none for `webhook.test`) are attempted
//!   one at a time in publish order; a later one waits until the earlier one is
//!   delivered, failed for good or expired. Different keys go in parallel, bounded per
//!   subscription and overall ([`SenderConfig`]). See [`dispatch`].
//! * Pause, hold, resume and the 7-day expiry: [`Sender::pause`], [`Sender::resume`].
//!   Held deliveries are rows in the store, so memory does not grow with them.
//! * Secret rotation with 24 h of dual signatures: [`Sender::rotate_secret`].
//! * `v1a` (ed25519) signatures per subscription (`signing`), with the workspace's key
//!   pair and its rotation: [`signing`], [`Sender::signing_keys`],
//!   [`Sender::rotate_signing_key`]; the published key set's id
//!   ([`Sender::published_key_set`]); keys made and used inside a PKCS #11 module rather
//!   than in this process: [`signer`], [`pkcs11`].
//! * Address checks against SSRF, at creation and at every attempt: [`ssrf`].
//! * Durability and the storage interface, with SQLite (embedded, one process) and
//!   PostgreSQL (several processes on one queue) behind it: [`store`].
//!
//! Time always comes from the injected [`Clock`]; tests drive a
//! [`ManualClock`] and [`Sender::wait_idle`].
//! Secrets are never logged: `Secret`'s `Debug` is redacted and no log line or error
//! message carries one.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod config;
mod connection_pool;
pub mod delivery;
pub mod dispatch;
pub mod error;
pub mod events;
pub mod health;
pub mod idempotency;
pub mod model;
pub mod notices;
pub mod notify;
pub mod observe;
pub mod ordering;
pub mod pkcs11;
pub mod retention;
pub mod routing;
pub mod schedule;
pub mod secret_box;
mod sender;
mod signals;
pub mod signer;
pub mod signing;
pub mod ssrf;
pub mod store;
pub mod tuning;

/// A boxed, sendable future: what every [`store::Store`] method and every
/// [`signer::DeliverySigner`] returns.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

// The core types a host needs to call the sender, so an embedder depends on one crate.
pub use postwire_core::{
    Clock, CreatedByKind, DisconnectReason, Event, EventType, Integration, ManualClock, PostState, PublicKey, Secret,
    SigningKey, SigningMode, Subscription, SubscriptionStatus, SystemClock, Timestamp, UnixTime,
};

pub use config::SenderConfig;
pub use dispatch::DispatcherHandle;
pub use error::{Resource, SenderError, SenderErrorCode};
pub use events::{
    AccountChange, AccountChangeKind, DomainChange, NoEventReason, PostChange, PostChangeKind, PostRecord, TestEvent,
    summarize,
};
pub use model::{
    AttemptErrorKind, AttemptOutcome, AttemptRecord, DeliveryCursor, DeliveryEventType, DeliveryId, DeliveryRecord,
    DeliveryState, Erased, ErasureSubject, InconsistentEndpoint, NewSubscription, Notification, PAUSED_BY_REQUEST,
    Page, PauseCause, Published, Purpose, ResumeSummary, RotatedSecret, RotatedSigningKey, SignedSample,
    SigningKeyInfo, SubscriptionRecord, SubscriptionUpdate, Workspace,
};
pub use notify::{LogNotifier, Notifier};
pub use pkcs11::{PinSource, Pkcs11Config, Pkcs11Keys, TokenSelector};
pub use sender::{
    MAX_INTEGRATION_IDS, MAX_NAME_LEN, MAX_OPERATOR_ENDPOINTS, MAX_PAGE_SIZE, MAX_PUBLISH_BATCH, MAX_RECOVER, Sender,
};
pub use signer::{DeliverySigner, InProcessKeys, KeyCustody, SignError, TokenKey, WorkspaceKey};
pub use store::postgres::{PostgresOptions, PostgresStore};
pub use store::sqlite::{SqliteOptions, SqliteStore, has_workspace, register_workspaces};
pub use store::{DeliveryCounts, Purged, QueueCounts, RequeueError, Store};
