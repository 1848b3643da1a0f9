//! The HTTP answers the layer gives of its own (the handler's answer is passed through
//! otherwise). They are the npm adapters' (`postwire/express`, `/hono`, `/next`), so a
//! sender sees the same answers from a Rust or a Node receiver:
//!
//! | status | body | when |
//! |---|---|---|
//! | 400 | `{code, message}` | the delivery did not verify (`invalid_signature`, `timestamp_too_old`, …) |
//! | 413 | `{code: "payload_too_large", message}` | the body is larger than `max_body_bytes` |
//! | 202 | `{ignored: type}` | it verified, but its event type is unknown to this version |
//! | 200 | `{duplicate: true}` | its `webhook-id` was handled already |
//! | 409 | `{code: "in_progress", message}` + `retry-after` | another copy holds a live claim |
//! | 503 | `{code: "store_unavailable", message}` + `retry-after: 5` | the store could not be asked |
//! | 503 | `{code: "key_set_unavailable" \| "invalid_key_set", message}` + `retry-after: 60` | with a key set (feature `key-set`): no key cached, and the set could not be fetched or used |

use std::time::Duration;

use axum::body::Body;
use http::{HeaderValue, Response, StatusCode, header};
use serde_json::{Value, json};

/// The `retry-after` of a 503 (store unavailable), in seconds: the npm adapters' value.
pub const STORE_DOWN_RETRY_AFTER_SECS: u64 = 5;

fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let mut response = Response::new(Body::from(value.to_string()));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn with_retry_after(mut response: Response<Body>, secs: u64) -> Response<Body> {
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
    response
}

/// The `retry-after` of a 503 when no key set could be had, in seconds: the npm adapters' value.
pub const KEY_SET_RETRY_AFTER_SECS: u64 = 60;

/// 503 `{code, message}` + retry-after: no key to verify with (feature `key-set`).
#[cfg(feature = "key-set")]
pub(crate) fn no_keys(code: &str, message: &str) -> Response<Body> {
    with_retry_after(
        json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({ "code": code, "message": message }),
        ),
        KEY_SET_RETRY_AFTER_SECS,
    )
}

/// 400 `{code, message}`: the delivery did not verify.
pub(crate) fn rejected(code: &str, message: &str) -> Response<Body> {
    json_response(StatusCode::BAD_REQUEST, &json!({ "code": code, "message": message }))
}

/// 413: the body is over the limit.
pub(crate) fn too_large(limit: usize) -> Response<Body> {
    json_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        &json!({ "code": "payload_too_large", "message": format!("the body is larger than {limit} bytes") }),
    )
}

/// 400: the body could not be read.
pub(crate) fn unreadable() -> Response<Body> {
    rejected("invalid_request", "the request body could not be read")
}

/// 202 `{ignored: type}`: a verified event of a type this version does not know.
pub(crate) fn ignored(event_type: &str) -> Response<Body> {
    json_response(StatusCode::ACCEPTED, &json!({ "ignored": event_type }))
}

/// 200 `{duplicate: true}`: handled already.
pub(crate) fn duplicate() -> Response<Body> {
    json_response(StatusCode::OK, &json!({ "duplicate": true }))
}

/// 409 + retry-after: another copy is being handled.
pub(crate) fn in_progress(retry_after: Duration) -> Response<Body> {
    let secs = retry_after.as_millis().div_ceil(1000);
    with_retry_after(
        json_response(
            StatusCode::CONFLICT,
            &json!({
                "code": "in_progress",
                "message": "another copy of this delivery is being handled; retry later"
            }),
        ),
        u64::try_from(secs).unwrap_or(u64::MAX),
    )
}

/// 503 + retry-after: the store could not be asked; the handler did not run.
pub(crate) fn store_down() -> Response<Body> {
    with_retry_after(
        json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({
                "code": "store_unavailable",
                "message": "the idempotency store is unavailable; the handler did not run, retry later"
            }),
        ),
        STORE_DOWN_RETRY_AFTER_SECS,
    )
}
