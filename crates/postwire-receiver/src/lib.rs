//! # postwire-receiver
//!
//! Receive Standard Webhooks in an axum service and run your handler **once per
//! `webhook-id`**, across every process and instance that shares a store.
//!
//! [`OnceLayer`] verifies each delivery with `postwire-core` (headers, timestamp,
//! signature), parses the typed [`Event`](postwire_core::Event), claims its id in a
//! [`Store`], and hands the event to your handler in the request extensions. Stores:
//! [`MemoryStore`] (one process), `RedisStore` (feature `redis`), `PostgresStore`
//! (feature `postgres`), or your own [`Store`].
//!
//! ```no_run
//! use axum::{Extension, Router, http::StatusCode, routing::post};
//! use postwire_core::{Event, EventData, Secret, Verifier};
//! use postwire_receiver::{MemoryStore, OnceLayer};
//!
//! async fn on_event(Extension(event): Extension<Event>) -> Result<StatusCode, StatusCode> {
//!     match event.data() {
//!         EventData::PostPublished(d) => println!("post {} is live", d.post.id()),
//!         _ => {}
//!     }
//!     Ok(StatusCode::NO_CONTENT) // an Err (any non-2xx): released, the sender retries
//! }
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let secret = Secret::parse(&std::env::var("POSTWIRE_WEBHOOK_SECRET")?)?;
//! let app = Router::new()
//!     .route("/webhooks/postwire", post(on_event))
//!     .route_layer(OnceLayer::new(Verifier::new(secret), MemoryStore::new()));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! axum::serve(listener, app).await?;
//! # Ok(()) }
//! ```
//!
//! Answers (the npm adapters' too, so a sender sees the same from either): the handler's
//! own on a first copy; `200 {"duplicate":true}` for an id already done; `409` with
//! `retry-after` while another copy holds a live claim (never 2xx: that copy may still
//! fail); `503` with `retry-after` when the store cannot be asked (the handler is never run
//! without the claim); `400 {code, message}` for a delivery that does not verify. See
//! [`answer`] for the table.
//!
//! Guarantee: once, unless a process dies mid-handler; then its lease, renewed while the
//! handler runs, is no longer renewed and expires, and the next retry runs it again (at
//! least once across a crash). What breaks it (a claim lost to a store too slow to renew
//! it) is logged at `warn` and counted in [`OnceMetrics`].

#![forbid(unsafe_code)]
// Peer input never panics this crate.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)
)]
#![deny(missing_docs)]

pub mod answer;
#[cfg(feature = "key-set")]
pub mod key_set;
pub mod layer;
pub mod metrics;
pub mod store;

pub use layer::{DEFAULT_KEEP, DEFAULT_LEASE, DEFAULT_MAX_BODY_BYTES, DEFAULT_STORE_TIMEOUT, OnceLayer, OnceService};
pub use metrics::OnceMetrics;
pub use store::memory::{DEFAULT_MEMORY_CAPACITY, MemoryStore};
#[cfg(feature = "postgres")]
pub use store::postgres::PostgresStore;
#[cfg(feature = "redis")]
pub use store::redis::RedisStore;
pub use store::{Claim, ClaimToken, Store, StoreError, StoreErrorCode};
