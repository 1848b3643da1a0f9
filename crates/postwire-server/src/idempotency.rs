//! The `Idempotency-Key` header of the ingest and of subscription creation.
//!
//! A client that did not hear back (a timeout, a dropped connection, a server restart)
//! retries with the same key and gets the first response, status and body, instead of a
//! second event set or a second subscription. The rules and their storage are the
//! sender's (`postwire_sender::idempotency`: 24 h window, keys per token, the key
//! stored in the same transaction as the work); this module reads the header, builds the
//! request's fingerprint (method, path and the raw body bytes, so a retry must resend
//! the same bytes) and marks a replayed answer with `Idempotent-Replayed: true`, as
//! Stripe does.

use axum::http::{HeaderMap, HeaderValue};
use postwire_sender::idempotency::IdempotencyKey;

use crate::errors::{ApiError, ApiResult};

/// The request header.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// The response header set on a replayed answer.
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";

/// The request's key, if it sent one: scoped to `scope` (the token), fingerprinted by
/// `method`, `path` and `body`. A malformed key is `400 invalid_request`.
pub fn key_of(
    headers: &HeaderMap,
    scope: &str,
    method: &str,
    path: &str,
    body: &[u8],
) -> ApiResult<Option<IdempotencyKey>> {
    let mut values = headers.get_all(IDEMPOTENCY_KEY).iter();
    let Some(value) = values.next() else { return Ok(None) };
    if values.next().is_some() {
        return Err(ApiError::invalid("send one `Idempotency-Key` header, not several"));
    }
    let key = value
        .to_str()
        .map_err(|_| ApiError::invalid("`Idempotency-Key` must be visible ASCII"))?;
    let mut request = Vec::with_capacity(method.len() + path.len() + body.len() + 2);
    for part in [method.as_bytes(), b" ", path.as_bytes(), b"\n", body] {
        request.extend_from_slice(part);
    }
    Ok(Some(IdempotencyKey::new(scope, key, &request)?))
}

/// Marks `headers` as those of a replayed answer.
pub fn mark_replayed(headers: &mut HeaderMap) {
    headers.insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
}
