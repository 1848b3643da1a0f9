//! A workspace's published key set: its `v1a` public keys as a JSON Web Key Set (RFC 7517,
//! ed25519 keys as OKP JWKs per RFC 8037), which receivers, the edge verifier and docs
//! pages fetch by URL instead of being handed each `whpk_` key, and fetch again after a
//! rotation. An extension of the spec.
//!
//! `GET /public/v1/key-sets/{keySetId}/jwks.json`, no token: these are public keys. The
//! URL carries the workspace's key-set id (`ks_` and 128 random bits, made with its first
//! key), not its workspace id, so that an open route lets no one list workspaces or probe
//! whether one exists: an unknown id and a malformed one get the same `404`, and ids
//! cannot be guessed. The id is given out only by the authenticated key listing
//! (`keySetUrl`).
//!
//! The document is `postwire_core::key_set::to_jwks_json`'s (the one source of the
//! format): the current key first, then, during a rotation's 24 h window, the previous
//! key with `exp`. Cacheable: a strong `ETag` (the SHA-256 of the document's bytes) with
//! `If-None-Match` answered `304`, and `Cache-Control: public, max-age=300`. Cheap under
//! load: one indexed read, no write.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use postwire_core::key_set::{KEY_SET_CONTENT_TYPE, PublishedKey, to_jwks_json};
use postwire_sender::SigningKeyInfo;
use sha2::{Digest as _, Sha256};

use crate::errors::{ApiError, ApiResult, ErrorBody, ValidationErrorBody};
use crate::schemas::JsonWebKeySet;
use crate::state::AppState;
use crate::validation::ApiPath;

/// How long a client or a shared cache may keep the key set: 300 s. A receiver that
/// meets a signature no cached key verifies fetches it again sooner (at most once per
/// its own refresh interval).
pub const KEY_SET_CACHE_CONTROL: &str = "public, max-age=300";

/// The path of a key set, below the server's base URL.
pub fn key_set_path(key_set_id: &str) -> String {
    format!("/public/v1/key-sets/{key_set_id}/jwks.json")
}

fn published(key: &SigningKeyInfo) -> PublishedKey {
    PublishedKey {
        public_key: key.public_key,
        not_before: Some(key.created_at.unix_millis().div_euclid(1000)),
        expires_at: key.expires_at.map(|t| t.unix_millis().div_euclid(1000)),
    }
}

/// The strong entity tag of a document: `"` + base64url(SHA-256(bytes)) + `"`.
fn entity_tag(document: &[u8]) -> String {
    let digest = Sha256::digest(document);
    format!(
        "\"{}\"",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
    )
}

/// Whether `If-None-Match` matches `tag` (RFC 9110 §13.1.2: `*`, or any listed tag by
/// the weak comparison, so `W/"…"` matches too).
fn none_match(headers: &HeaderMap, tag: &str) -> bool {
    headers.get_all(header::IF_NONE_MATCH).iter().any(|value| {
        value.to_str().is_ok_and(|list| {
            list.split(',')
                .map(str::trim)
                .any(|candidate| candidate == "*" || candidate.strip_prefix("W/").unwrap_or(candidate) == tag)
        })
    })
}

/// The workspace's `v1a` public keys as a JSON Web Key Set, for receivers that verify
/// by key-set URL (`keySetUrl` of `listSigningKeys`). No token: the keys are public, and
/// the id in the path is unguessable and names no workspace. Current key first; during
/// the 24 h after a rotation the previous key too, with `exp` (when it stops signing).
/// Each key's `kid` is its RFC 7638 thumbprint, `nbf` when it was made (seconds).
#[utoipa::path(
    get,
    path = "/public/v1/key-sets/{keySetId}/jwks.json",
    tag = "Signing keys",
    operation_id = "getKeySet",
    params(
        ("keySetId" = String, Path, description = "The workspace's key-set id, from `keySetUrl`/`keySetId` of `listSigningKeys`.",
            pattern = "^ks_[0-9a-f]{32}$", example = "ks_3f1c0a9e5b7d42e8a1c6f0b9d2e4a7c5"),
        ("If-None-Match" = Option<String>, Header, description = "The `ETag` of a copy held: `304` if the key set is unchanged."),
    ),
    responses(
        (status = 200, description = "The key set.", content_type = "application/jwk-set+json", body = JsonWebKeySet,
            headers(
                ("ETag" = String, description = "A strong tag of the document's bytes, for `If-None-Match`."),
                ("Cache-Control" = String, description = "`public, max-age=300`."),
            )),
        (status = 304, description = "Unchanged since the copy whose `ETag` was given in `If-None-Match`; no body.",
            headers(
                ("ETag" = String, description = "The tag of the current document."),
                ("Cache-Control" = String, description = "`public, max-age=300`."),
            )),
        (status = 400, description = "`invalid_request`: a path segment that is not UTF-8.", body = ValidationErrorBody),
        (status = 404, description = "No key set has this id (`not_found`): an unknown id and a malformed one alike.", body = ErrorBody),
        (status = "5XX", description = "`internal_error` (500; details in the server log only) or `unavailable` (503, shutting down).", body = ErrorBody),
    ),
    security(())
)]
pub async fn get_key_set(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiPath(key_set_id): ApiPath<String>,
) -> ApiResult<Response> {
    let Some(keys) = state.sender.published_key_set(&key_set_id).await? else {
        return Err(ApiError::NotFound("no key set has this id".into()));
    };
    let published: Vec<PublishedKey> = keys.iter().map(published).collect();
    let document = to_jwks_json(&published);
    let tag = entity_tag(document.as_bytes());
    let etag =
        HeaderValue::from_str(&tag).map_err(|_| ApiError::Internal("an entity tag is not a header value".into()))?;
    let cache = HeaderValue::from_static(KEY_SET_CACHE_CONTROL);
    if none_match(&headers, &tag) {
        return Ok((
            StatusCode::NOT_MODIFIED,
            [(header::ETAG, etag), (header::CACHE_CONTROL, cache)],
        )
            .into_response());
    }
    Ok((
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(KEY_SET_CONTENT_TYPE)),
            (header::ETAG, etag),
            (header::CACHE_CONTROL, cache),
        ],
        document,
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_none_match_compares_weakly_and_accepts_lists_and_star() {
        let tag = entity_tag(b"{}");
        assert!(tag.starts_with('"') && tag.ends_with('"') && tag.len() == 45, "{tag}");
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::IF_NONE_MATCH, HeaderValue::from_str(v).unwrap());
            none_match(&h, &tag)
        };
        assert!(with(&tag));
        assert!(with(&format!("W/{tag}")));
        assert!(with(&format!("\"other\", {tag}")));
        assert!(with("*"));
        assert!(!with("\"other\""));
        assert!(!with(&tag[1..]));
        assert!(!none_match(&HeaderMap::new(), &tag));
        assert_ne!(entity_tag(b"{}"), entity_tag(b"{ }"));
    }
}
