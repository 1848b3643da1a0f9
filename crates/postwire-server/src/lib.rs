//! # postwire-server
//!
//! The webhooks HTTP API of postwire, over [`postwire_sender`]: the spec's
//! `POST /public/v1/workspaces/{workspaceId}/webhooks` and the operations it names
//! without a shape (list, read, update, delete, pause/resume, deliveries, test event,
//! secret rotation, post look-up), with bearer tokens, scopes, workspace selection,
//! validation, an hourly limit, an OpenAPI 3.1 document, and an internal ingest API
//! through which the platform reports post and account changes.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use postwire_server::{Server, ServerOptions};
//! let server = Server::open(ServerOptions::new("postwire.db")).await?;
//! let running = server.start("127.0.0.1:8080").await?;
//! postwire_server::shutdown_signal().await;
//! running.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! One concept per module: [`auth`] (bearer tokens on requests), [`tokens`] (the token
//! table), [`errors`] (the spec's error bodies), [`validation`] (shape checks),
//! [`rate_limit`], [`limits`] (plan limit, daily quota, unauthenticated calls), [`routes`]
//! (the handlers), [`schemas`] (JSON shapes), [`openapi`], [`ingest`] (the internal API)
//! and [`ingest_openapi`] (its own document), [`portal`] (magic links and sessions of the
//! Settings screen), [`settings`] (the Settings screen's pages), [`server`] (start and
//! graceful stop), [`listener`] (connections under timeouts and a cap), [`metrics`]
//! (Prometheus).
//! The full API description is in `docs/api.md` and `docs/openapi.json`.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod app;
pub mod auth;
pub mod db;
pub mod errors;
pub mod idempotency;
pub mod ingest;
pub mod ingest_auth;
pub mod ingest_openapi;
pub mod limits;
pub mod listener;
pub mod metrics;
pub mod openapi;
pub mod portal;
pub mod rate_limit;
pub mod routes;
pub mod schemas;
pub mod scope;
pub mod server;
pub mod settings;
pub mod state;
pub mod tokens;
pub mod validation;

pub use errors::{ApiError, ApiResult};
pub use server::{RunningServer, Server, ServerError, ServerOptions, shutdown_signal};
pub use state::AppState;
pub use tokens::{ApiToken, CreatedToken, NewToken, Scope, TokenStore};
