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
//! One concept per module. Public, for the `postwire` command and the tests: [`server`]
//! (open, start and graceful stop), [`state`] (what handlers share, and the defaults of
//! the knobs), [`tokens`] and [`scope`] (the token table and what a token may do),
//! [`portal`] (magic links and sessions of the Settings screen), [`db`] (the server's
//! own tables), [`limits`] (plan limit, daily quota, unauthenticated calls), [`listener`]
//! (connections under timeouts and a cap), [`metrics`] (Prometheus) and [`errors`] (the
//! spec's error bodies), [`schemas`] (the JSON shapes the OpenAPI document describes).
//! Private: the application router (`app`), the public API's
//! handlers (`routes`), bearer authentication (`auth`), shape checks (`validation`), the
//! hourly limit (`rate_limit`), idempotency keys (`idempotency`), the OpenAPI documents (`openapi`, `ingest_openapi`, served and printed
//! through [`openapi_document_json`] and [`ingest_openapi_document_json`]), the internal
//! ingest API (`ingest`, `ingest_auth`) and the Settings screen's pages (`settings`).
//! The full API description is in `docs/api.md` and `docs/openapi.json`.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub(crate) mod app;
pub(crate) mod auth;
pub mod db;
pub mod errors;
pub(crate) mod idempotency;
pub(crate) mod ingest;
pub(crate) mod ingest_auth;
pub(crate) mod ingest_openapi;
pub mod limits;
pub mod listener;
pub mod metrics;
pub(crate) mod openapi;
pub mod portal;
pub(crate) mod rate_limit;
pub(crate) mod routes;
pub mod schemas;
pub mod scope;
pub mod server;
pub(crate) mod settings;
pub mod state;
pub mod tokens;
pub(crate) mod validation;

pub use errors::{ApiError, ApiResult};
pub use ingest_openapi::document_json as ingest_openapi_document_json;
pub use routes::docs::document_json as openapi_document_json;
pub use server::{RunningServer, Server, ServerError, ServerOptions, shutdown_signal};
pub use state::AppState;
pub use tokens::{ApiToken, CreatedToken, NewToken, Scope, TokenStore};
