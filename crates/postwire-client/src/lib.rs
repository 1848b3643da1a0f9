//! Clients of postwire's two HTTP APIs, generated at build time by progenitor from the
//! committed OpenAPI documents (`build.rs`):
//!
//! - [`api`]: the public API (`docs/openapi.json`, under `/public/v1`), bearer API tokens;
//! - [`ingest`]: the internal ingest API (`docs/ingest-openapi.json`, under `/internal/v1`),
//!   the platform's ingest token.
//!
//! Nothing here is written by hand except this module and the 3.1 → 3.0 down-conversion the
//! generator needs (`build_support/downconvert.rs`): a field renamed in the API changes the
//! generated types, and code using the old name stops compiling. Each client takes a
//! `reqwest::Client` (`new_with_client`), so the caller chooses the TLS stack, timeouts and
//! default headers (the bearer token).

/// The public API: workspaces, webhook subscriptions, deliveries, operator endpoints.
// The descriptions are the document's, written for the server's rustdoc: their links to
// server items do not resolve here.
#[allow(missing_docs, clippy::all, clippy::pedantic, unused_imports, unreachable_pub)]
#[allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags, rustdoc::bare_urls)]
pub mod api {
    include!(concat!(env!("OUT_DIR"), "/api.rs"));
}

/// The internal ingest API: the platform reports changes (posts, accounts) as events.
// The descriptions are the document's, written for the server's rustdoc: their links to
// server items do not resolve here.
#[allow(missing_docs, clippy::all, clippy::pedantic, unused_imports, unreachable_pub)]
#[allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags, rustdoc::bare_urls)]
pub mod ingest {
    include!(concat!(env!("OUT_DIR"), "/ingest.rs"));
}

/// The generated code's runtime (`Error`, `ResponseValue`), for callers that match on it.
pub use progenitor_client;
