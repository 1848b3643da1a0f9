//! A webhook receiver in axum, with postwire-core. Copy this file into your service.
//!
//! The route does, in order:
//! 1. take the **raw body** as `Bytes` (never `Json<T>`: the signature is over the bytes
//!    as sent, and re-serializing a parsed value does not give them back);
//! 2. verify headers, timestamp (5 minutes either way) and signature, and parse the typed
//!    [`Event`] (whose `id` must equal `webhook-id`);
//! 3. de-duplicate by `webhook-id`: delivery is at least once, so a retry of an event
//!    already handled is acknowledged with 200 but not handled again;
//! 4. hand the event to your [`EventHandler`]; if it fails, answer 500 and forget the id,
//!    so the sender's retry is handled.
//!
//! Every bad request gets a JSON error `{statusCode, code, message}` with the stable
//! code (`invalid_signature`, `timestamp_too_old`, …); nothing panics, and nothing logs
//! the secret (`Secret`'s `Debug` is redacted).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use postwire_core::{Clock, Event, MemoryReplayGuard, ReplayGuard, Secret, Seen, SystemClock, Verifier};
use serde_json::json;

pub mod events;

/// Largest body accepted. Events of the API are a few kilobytes.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Your business logic: called once per verified, first-time event.
pub trait EventHandler: Send + Sync + 'static {
    /// Handles the event. An `Err` makes the route answer 500, so the sender retries.
    fn handle(&self, event: Event) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + '_>>;
}

struct AppState {
    verifier: Verifier,
    // In memory: right for one process. With several instances, de-duplicate in a shared
    // store instead (e.g. a unique key on the event id in your database).
    seen: MemoryReplayGuard,
    handler: Arc<dyn EventHandler>,
    clock: Arc<dyn Clock + Send + Sync>,
}

/// The router with the webhook route at `/webhooks/postwire`.
pub fn router(secret: Secret, handler: Arc<dyn EventHandler>) -> Router {
    router_with_clock(secret, handler, Arc::new(SystemClock))
}

/// As [`router`], with the clock injected (tests).
pub fn router_with_clock(
    secret: Secret,
    handler: Arc<dyn EventHandler>,
    clock: Arc<dyn Clock + Send + Sync>,
) -> Router {
    let state = Arc::new(AppState {
        verifier: Verifier::new(secret),
        seen: MemoryReplayGuard::default(),
        handler,
        clock,
    });
    Router::new()
        .route("/webhooks/postwire", post(receive))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .fallback(|| async {
            error(
                StatusCode::NOT_FOUND,
                "not_found",
                "no such route; webhooks are POSTed to /webhooks/postwire".into(),
            )
        })
        .with_state(state)
}

async fn receive(
    State(app): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(b) => b,
        Err(rejection) => {
            let status = rejection.status();
            let code = if status == StatusCode::PAYLOAD_TOO_LARGE {
                "payload_too_large"
            } else {
                "invalid_request"
            };
            return error(status, code, rejection.body_text());
        }
    };
    let now = app.clock.now().unix_time();

    let event = match app.verifier.verify_event(&headers, &body, now) {
        Ok(event) => event,
        Err(e) => {
            // The code is stable; the message explains what is wrong and never holds a secret.
            eprintln!("webhook refused: {}", e.code().as_str());
            return error(StatusCode::BAD_REQUEST, e.code().as_str(), e.to_string());
        }
    };

    if app.seen.check_and_record(event.id(), now) == Seen::Duplicate {
        eprintln!("webhook {}: duplicate, acknowledged", event.id());
        return (StatusCode::OK, Json(json!({ "received": true, "duplicate": true }))).into_response();
    }

    let id = event.id().to_owned();
    let summary = events::describe(&event);
    match app.handler.handle(event).await {
        Ok(()) => {
            eprintln!("webhook {id}: {summary}");
            (StatusCode::OK, Json(json!({ "received": true, "duplicate": false }))).into_response()
        }
        Err(why) => {
            app.seen.forget(&id); // so the sender's retry is handled
            eprintln!("webhook {id}: handler failed: {why}");
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "handler_failed",
                "handling the event failed; it will be retried".into(),
            )
        }
    }
}

fn error(status: StatusCode, code: &str, message: String) -> Response {
    (
        status,
        Json(json!({ "statusCode": status.as_u16(), "code": code, "message": message })),
    )
        .into_response()
}
