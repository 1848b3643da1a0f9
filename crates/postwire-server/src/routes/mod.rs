//! The public API's routes, under `/public/v1`, and the middleware the whole application
//! uses (request logging, body limits, JSON errors for unknown routes); [`crate::app`]
//! puts them together with the ingest API and the Settings screen.
//!
//! Every documented route is registered through `utoipa_axum::routes!`, which adds the
//! handler to the router and its `#[utoipa::path]` description to the OpenAPI document
//! in one step, so the two cannot drift apart; a test also probes the running server
//! for every documented operation. Undocumented routes are only the internal ingest
//! API (`/internal/v1`, see [`crate::ingest`]) and `GET /healthz`.

pub mod deliveries;
pub mod docs;
pub mod endpoints;
pub mod erasure;
pub mod key_sets;
pub mod operator_webhooks;
pub mod portal_sessions;
pub mod posts;
pub mod replay;
pub mod signing_keys;
pub mod webhooks;
pub mod workspaces;

use std::time::Instant;

use axum::Json;
use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderValue, Method, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::errors::ApiError;
use crate::state::AppState;

/// The routes that need a bearer token.
pub fn authenticated_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(workspaces::list_workspaces))
        .routes(routes!(webhooks::create_webhook, webhooks::list_webhooks))
        .routes(routes!(
            webhooks::get_webhook,
            webhooks::update_webhook,
            webhooks::delete_webhook
        ))
        .routes(routes!(webhooks::set_webhook_enabled))
        .routes(routes!(webhooks::send_test_event))
        .routes(routes!(webhooks::rotate_webhook_secret))
        .routes(routes!(deliveries::list_deliveries))
        .routes(routes!(replay::resend_delivery))
        .routes(routes!(replay::recover_failed))
        .routes(routes!(portal_sessions::create_portal_session))
        .routes(routes!(portal_sessions::revoke_portal_session))
        .routes(routes!(posts::lookup_post_events))
        .routes(routes!(erasure::erase_post_payloads))
        .routes(routes!(erasure::erase_integration_payloads))
        .routes(routes!(signing_keys::list_signing_keys))
        .routes(routes!(signing_keys::rotate_signing_key))
        .routes(routes!(
            operator_webhooks::create_operator_webhook,
            operator_webhooks::list_operator_webhooks
        ))
        .routes(routes!(operator_webhooks::delete_operator_webhook))
        .routes(routes!(operator_webhooks::set_operator_webhook_enabled))
        .routes(routes!(operator_webhooks::rotate_operator_webhook_secret))
        .routes(routes!(operator_webhooks::send_operator_webhook_test))
        .routes(routes!(operator_webhooks::list_operator_webhook_deliveries))
        .routes(routes!(operator_webhooks::resend_operator_webhook_delivery))
}

/// The routes open to anyone: the OpenAPI document and the workspaces' published key
/// sets.
pub fn open_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(docs::openapi_document))
        .routes(routes!(key_sets::get_key_set))
}

pub(crate) async fn route_not_found(method: Method, uri: Uri) -> ApiError {
    let path: String = uri.path().chars().take(100).collect();
    ApiError::NotFound(format!("no route for {method} {path}"))
}

pub(crate) async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

pub(crate) async fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok" }))
}

/// A fresh request id: 16 hex digits.
fn request_id() -> String {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        return "0000000000000000".to_owned();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Logs each request (method, route, status, time) without headers, bodies or query
/// strings, so neither tokens nor secrets reach the log; gives it a request id, which
/// every log line written while it runs carries (a `request` span) and which is returned
/// as `X-Request-Id`; counts it in the metrics by route template and status; marks every
/// response `Cache-Control: no-store` (two responses carry a secret) unless its handler
/// chose its own (the public key sets, which caches may keep).
pub(crate) async fn log_and_no_store(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    use tracing::Instrument as _;
    let started = Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_owned())
        .unwrap_or_else(|| "(no route)".to_owned());
    let id = request_id();
    // `otel.name` and the `http.*` fields follow OpenTelemetry's HTTP conventions, for
    // trace export; the log lines show the request id.
    let span = tracing::info_span!(
        "request",
        request_id = %id,
        otel.name = %format_args!("{method} {route}"),
        http.request.method = %method,
        http.route = %route,
        http.response.status_code = tracing::field::Empty,
    );
    let mut response = next.run(request).instrument(span.clone()).await;
    let headers = response.headers_mut();
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    if let Ok(v) = HeaderValue::from_str(&id) {
        headers.insert("x-request-id", v);
    }
    let status = response.status().as_u16();
    span.record("http.response.status_code", status);
    state.metrics.request(method.as_str(), &route, status);
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    span.in_scope(|| tracing::info!(%method, route = %route, status, ms = format_args!("{ms:.1}"), "request"));
    response
}

/// Refuses a request whose declared `Content-Length` is over the body limit of its path
/// before a byte of the body is read (a chunked body is still cut off at the limit while
/// it is read).
pub(crate) async fn refuse_oversized_bodies(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let limit = if request.uri().path().starts_with("/internal/") {
        state.max_body_bytes.max(state.max_ingest_body_bytes)
    } else {
        state.max_body_bytes
    };
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(declared) = declared
        && declared > limit as u64
    {
        let mut response =
            ApiError::invalid(format!("the body is larger than the limit of {limit} bytes")).into_response();
        // The unread body must not be taken for the next request.
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return response;
    }
    next.run(request).await
}

pub(crate) fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    ApiError::Internal("a handler panicked".into()).into_response()
}
