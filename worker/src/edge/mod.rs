//! The Workers runtime shared by the three modes (compiled only for `wasm32`; tested in
//! workerd through Miniflare by `worker/test.sh`): the answer of a request ([`Answer`]) and
//! its conversion to a `Response`, the settings read from `env`, JavaScript's clock, reading
//! a body within its limit ([`body`]), and the requests the Worker makes: a
//! [`ForwardRequest`] as a `fetch` request, and a verified delivery handed to a Durable
//! Object.
//!
//! The clock is read from JavaScript (`Date.now()`): postwire-core never reads a clock, and
//! `SystemTime::now()` panics on `wasm32-unknown-unknown`.

pub(crate) mod body;

use worker::{Env, Headers, Method, Request, RequestInit, RequestRedirect, Response};

use crate::handoff::ForwardRequest;
use crate::reply::{Reply, ReplyCode};
use crate::verify::VerifiedDelivery;

/// Internal header: when the Worker received the delivery (ms since the epoch), so the
/// object knows how long the attempt waited for earlier ones.
pub(crate) const RECEIVED_AT_HEADER: &str = "x-postwire-received-at";
/// The URL of the internal request (any URL works; the object ignores it).
const OBJECT_URL: &str = "https://dedup-object.internal/deliver";

/// What the handler sends back: an answer of its own, or the one the Durable Object made.
pub(crate) enum Answer {
    Reply(Reply),
    Response(Response),
}

impl From<Reply> for Answer {
    fn from(reply: Reply) -> Self {
        Answer::Reply(reply)
    }
}

/// The delivery as the object receives it: its `webhook-*` headers and raw body.
pub(crate) fn object_request(delivery: &VerifiedDelivery, received_ms: f64) -> worker::Result<Request> {
    let h = &delivery.headers;
    let headers = worker::Headers::new();
    headers.set(postwire_core::ID_HEADER, &h.id)?;
    headers.set(postwire_core::TIMESTAMP_HEADER, &h.timestamp_raw)?;
    headers.set(postwire_core::SIGNATURE_HEADER, &h.signature)?;
    if let Some(ct) = &h.content_type {
        headers.set("content-type", ct)?;
    }
    // A provider route's headers for the origin (`crate::providers::forwarded_from` reads
    // them back in the object).
    for (name, value) in &h.forwarded {
        headers.set(name, value)?;
    }
    headers.set(RECEIVED_AT_HEADER, &format!("{received_ms:.0}"))?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(js_sys::Uint8Array::from(delivery.body.as_slice()).into()));
    Request::new_with_init(OBJECT_URL, &init)
}

/// A [`ForwardRequest`] as a Workers `POST`, redirects not followed.
pub(crate) fn to_request(request: &ForwardRequest<'_>) -> worker::Result<Request> {
    let headers = Headers::new();
    for (name, value) in &request.headers {
        headers.set(name, value)?;
    }
    let body = js_sys::Uint8Array::from(request.body);
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_redirect(RequestRedirect::Manual)
        .with_body(Some(body.into()));
    Request::new_with_init(request.url, &init)
}

/// JavaScript's clock, in milliseconds.
pub(crate) fn now_ms() -> f64 {
    js_sys::Date::now()
}

/// The Worker's settings from `env`, through [`crate::providers::routes::config_lookup`]
/// (with `PROVIDER_ROUTES` set, the routes hold the keys, not `WEBHOOK_SECRETS`).
pub(crate) fn read_config(env: &Env) -> Result<crate::config::Config, crate::config::ConfigError> {
    crate::config::Config::from_lookup(crate::providers::routes::config_lookup(|name| env_string(env, name)))
}

/// A string setting from `env` (a `[vars]` entry or a secret), `None` when unset.
pub(crate) fn env_string(env: &Env, name: &str) -> Option<String> {
    let value = js_sys::Reflect::get(env, &wasm_bindgen::JsValue::from_str(name)).ok()?;
    value.as_string()
}

pub(crate) fn misconfigured(detail: String) -> Reply {
    Reply::new(
        ReplyCode::WorkerMisconfigured,
        "the verifier is not configured correctly; the delivery was not forwarded, retry later",
    )
    .with_warning(detail)
}

pub(crate) fn log_warnings(reply: &Reply) {
    for warning in &reply.warnings {
        worker::console_warn!("postwire-worker: {warning}");
    }
}

pub(crate) fn to_response(reply: &Reply) -> worker::Result<Response> {
    let headers = worker::Headers::new();
    headers.set("content-type", "application/json")?;
    headers.set("cache-control", "no-store")?;
    for (name, value) in &reply.headers {
        headers.set(name, value)?;
    }
    Ok(Response::from_bytes(reply.body_json().into_bytes())?
        .with_status(reply.status())
        .with_headers(headers))
}
