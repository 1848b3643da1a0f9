//! `WEBHOOK_KEYS_URL`: the sender's published key set (a JSON Web Key Set of `v1a` public
//! keys, read by `postwire_core::key_set`) as a source of trusted keys, beside or instead of
//! `WEBHOOK_SECRETS` and `WEBHOOK_PUBLIC_KEYS`. This module is the rule, in plain functions
//! tested natively; the isolate's cache and its `fetch` are in `key_set_fetch` (wasm32).
//!
//! The rule, the same as the npm package's `RemoteKeySet`:
//! - the set is fetched by the first delivery an isolate verifies, and kept for the
//!   response's `Cache-Control: max-age` (300 s without one, at most a day); then the next
//!   delivery fetches it again, with `If-None-Match` (a `304` keeps the keys);
//! - a delivery no cached key verifies fetches it again (the sender may have rotated);
//! - either way, at most one fetch per `WEBHOOK_KEYS_MIN_REFRESH_SECS` (default 60) per
//!   isolate, and concurrent requests wait for the fetch in flight rather than start
//!   another: forged deliveries cannot make the Worker hammer the sender;
//! - a fetch has a deadline (`WEBHOOK_KEYS_TIMEOUT_MS`, default 5000, body included), reads
//!   at most 64 KiB, follows redirects only within the URL's origin (at most 3), and a
//!   failure keeps the keys already cached;
//! - with no key at all to verify with (no static key, and no key set fetched yet), the
//!   delivery is answered `503 key_set_unavailable` with `retry-after`, so the sender
//!   retries; it is never forwarded unverified.

use postwire_core::key_set::KeySet;
use postwire_core::{Error, PublicKey, TrustedKey, Verifier};

use crate::reply::{Reply, ReplyCode};

/// How long a key set is kept when its response has no `max-age`: 300 s.
pub const DEFAULT_KEY_SET_MAX_AGE_MS: f64 = 300_000.0;
/// The longest a key set is kept, whatever its `max-age`: a day.
pub const MAX_KEY_SET_MAX_AGE_MS: f64 = 86_400_000.0;
/// The most redirects followed, each within the key set URL's origin.
pub const MAX_KEY_SET_REDIRECTS: usize = 3;
/// The `retry-after` of a `503 key_set_unavailable`, in seconds.
pub const KEY_SET_RETRY_AFTER_SECS: u64 = 60;

/// Where the key set is and how often it may be fetched (the `WEBHOOK_KEYS_*` settings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySetSettings {
    /// `WEBHOOK_KEYS_URL`.
    pub url: url::Url,
    /// `WEBHOOK_KEYS_MIN_REFRESH_SECS` in ms: the least time between two fetches.
    pub min_refresh_ms: u64,
    /// `WEBHOOK_KEYS_TIMEOUT_MS`: the deadline of one fetch, body included.
    pub timeout_ms: u64,
}

/// The freshness a response grants, in ms: its `max-age` (0 for `no-store`/`no-cache`),
/// else [`DEFAULT_KEY_SET_MAX_AGE_MS`]; at most [`MAX_KEY_SET_MAX_AGE_MS`].
pub fn max_age_ms(cache_control: Option<&str>) -> f64 {
    let Some(value) = cache_control else {
        return DEFAULT_KEY_SET_MAX_AGE_MS;
    };
    let mut age = None;
    for part in value.split(',') {
        let part = part.trim().to_ascii_lowercase();
        let (name, arg) = part.split_once('=').unwrap_or((part.as_str(), ""));
        match name {
            "no-store" | "no-cache" => return 0.0,
            "max-age" if !arg.is_empty() && arg.len() <= 10 && arg.bytes().all(|b| b.is_ascii_digit()) => {
                age = arg.parse::<f64>().ok().map(|s| s * 1000.0);
            }
            _ => {}
        }
    }
    age.map_or(DEFAULT_KEY_SET_MAX_AGE_MS, |a| a.min(MAX_KEY_SET_MAX_AGE_MS))
}

/// What one fetch brought back.
#[derive(Debug)]
pub enum Fetched {
    /// `200` with the document, its `ETag` and `Cache-Control`.
    Document {
        /// The body, at most `MAX_KEY_SET_BYTES`.
        body: Vec<u8>,
        /// The `ETag`, sent back as `If-None-Match` next time.
        etag: Option<String>,
        /// The `Cache-Control` header.
        cache_control: Option<String>,
    },
    /// `304`: the cached keys are current.
    NotModified {
        /// The `Cache-Control` header.
        cache_control: Option<String>,
    },
}

/// One isolate's key set: the keys, when they go stale, when the URL was last fetched,
/// and why the last fetch failed.
#[derive(Debug, Default)]
pub struct KeySetCache {
    url: Option<String>,
    keys: Vec<PublicKey>,
    etag: Option<String>,
    fresh_until_ms: f64,
    last_fetch_ms: Option<f64>,
    last_error: Option<Error>,
}

impl KeySetCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts over when the setting names another URL than the cached keys came from.
    pub fn use_url(&mut self, url: &str) {
        if self.url.as_deref() != Some(url) {
            *self = KeySetCache {
                url: Some(url.to_owned()),
                ..KeySetCache::default()
            };
        }
    }

    /// Whether the keys should be fetched before verifying: none yet, or stale.
    pub fn is_stale(&self, now_ms: f64) -> bool {
        self.keys.is_empty() || now_ms >= self.fresh_until_ms
    }

    /// Whether a fetch may start now: none yet, or the last at least `min_refresh_ms` ago.
    pub fn may_fetch(&self, now_ms: f64, min_refresh_ms: u64) -> bool {
        self.last_fetch_ms
            .is_none_or(|last| now_ms - last >= min_refresh_ms as f64 || now_ms < last)
    }

    /// Marks a fetch as started now (before it is awaited, so no other request starts one).
    pub fn start_fetch(&mut self, now_ms: f64) {
        self.last_fetch_ms = Some(now_ms);
    }

    /// Takes a fetch's outcome; returns whether the keys changed. A failure, or a document
    /// that does not parse, keeps the cached keys and is kept as [`last_error`](Self::last_error).
    pub fn finish_fetch(&mut self, outcome: Result<Fetched, Error>, now_ms: f64) -> bool {
        let result = outcome.and_then(|fetched| match fetched {
            Fetched::NotModified { cache_control } if !self.keys.is_empty() => {
                self.fresh_until_ms = now_ms + max_age_ms(cache_control.as_deref());
                Ok(false)
            }
            Fetched::NotModified { .. } => Err(Error::KeySetUnavailable {
                reason: "the server answered 304 with no key cached".into(),
            }),
            Fetched::Document {
                body,
                etag,
                cache_control,
            } => {
                let keys: Vec<PublicKey> = KeySet::parse(&body)?.public_keys().copied().collect();
                let changed = keys != self.keys;
                self.keys = keys;
                self.etag = etag;
                self.fresh_until_ms = now_ms + max_age_ms(cache_control.as_deref());
                Ok(changed)
            }
        });
        match result {
            Ok(changed) => {
                self.last_error = None;
                changed
            }
            Err(e) => {
                self.last_error = Some(e);
                false
            }
        }
    }

    /// The cached keys, in the published order.
    pub fn keys(&self) -> &[PublicKey] {
        &self.keys
    }

    /// The `ETag` to send as `If-None-Match`, when keys are cached.
    pub fn etag(&self) -> Option<&str> {
        if self.keys.is_empty() {
            None
        } else {
            self.etag.as_deref()
        }
    }

    /// Why the last fetch failed, if it did.
    pub fn last_error(&self) -> Option<&Error> {
        self.last_error.as_ref()
    }
}

/// The verifier of one request: the static keys (`WEBHOOK_SECRETS`, `WEBHOOK_PUBLIC_KEYS`)
/// and the key set's, with the configured tolerance; `None` when there are none at all.
pub fn verifier_with(static_keys: &[TrustedKey], fetched: &[PublicKey], tolerance_secs: u64) -> Option<Verifier> {
    let keys = static_keys
        .iter()
        .cloned()
        .chain(fetched.iter().copied().map(TrustedKey::PublicKey));
    Verifier::with_keys(keys)
        .ok()
        .map(|v| v.with_tolerance_secs(tolerance_secs))
}

/// The `503` of a delivery that could not be verified for want of any key: the fetch's
/// reason (never a key or a body), and `retry-after`.
pub fn no_keys(last_error: Option<&Error>) -> Reply {
    let reason = last_error.map_or_else(
        || "the key set was fetched less than WEBHOOK_KEYS_MIN_REFRESH_SECS ago without success".to_owned(),
        ToString::to_string,
    );
    Reply::new(
        ReplyCode::KeySetUnavailable,
        format!("no key to verify with: {reason}; the delivery was not forwarded, retry later"),
    )
    .with_header("retry-after", KEY_SET_RETRY_AFTER_SECS.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use postwire_core::key_set::{PublishedKey, to_jwks_json};
    use postwire_core::{ErrorCode, Secret, SigningKey, UnixTime, WebhookHeaders};

    fn doc(keys: &[PublicKey]) -> Fetched {
        let published: Vec<PublishedKey> = keys
            .iter()
            .map(|&public_key| PublishedKey {
                public_key,
                not_before: None,
                expires_at: None,
            })
            .collect();
        Fetched::Document {
            body: to_jwks_json(&published).into_bytes(),
            etag: Some("\"e1\"".into()),
            cache_control: Some("public, max-age=300".into()),
        }
    }

    #[test]
    fn max_age_is_read_capped_and_defaulted() {
        assert_eq!(max_age_ms(Some("public, max-age=300")), 300_000.0);
        assert_eq!(max_age_ms(Some("Max-Age=5")), 5_000.0);
        assert_eq!(max_age_ms(Some("max-age=99999999")), MAX_KEY_SET_MAX_AGE_MS);
        assert_eq!(max_age_ms(Some("no-store")), 0.0);
        assert_eq!(max_age_ms(Some("public, no-cache, max-age=60")), 0.0);
        for unusable in [None, Some(""), Some("max-age=-1"), Some("max-age=1e3"), Some("private")] {
            assert_eq!(max_age_ms(unusable), DEFAULT_KEY_SET_MAX_AGE_MS, "{unusable:?}");
        }
    }

    #[test]
    fn fetches_are_rate_limited_and_failures_keep_the_keys() {
        let a = SigningKey::generate().unwrap().public_key();
        let b = SigningKey::generate().unwrap().public_key();
        let mut cache = KeySetCache::new();
        cache.use_url("https://k.example/jwks.json");
        assert!(cache.is_stale(0.0) && cache.may_fetch(0.0, 60_000));
        cache.start_fetch(0.0);
        assert!(!cache.may_fetch(59_999.0, 60_000));
        assert!(cache.finish_fetch(Ok(doc(&[a])), 10.0));
        assert_eq!(cache.keys(), &[a]);
        assert_eq!(cache.etag(), Some("\"e1\""));
        assert!(!cache.is_stale(300_009.0) && cache.is_stale(300_010.0));

        // Every bad outcome keeps A and says why.
        let bad: Vec<(Result<Fetched, Error>, ErrorCode)> = vec![
            (
                Ok(Fetched::Document {
                    body: b"not json".to_vec(),
                    etag: None,
                    cache_control: None,
                }),
                ErrorCode::InvalidKeySet,
            ),
            (
                Err(Error::KeySetUnavailable {
                    reason: "HTTP 500".into(),
                }),
                ErrorCode::KeySetUnavailable,
            ),
        ];
        for (outcome, code) in bad {
            assert!(!cache.finish_fetch(outcome, 100.0));
            assert_eq!(cache.keys(), &[a]);
            assert_eq!(cache.last_error().unwrap().code(), code);
        }
        // A 304 renews; the same document is no change; a rotation is.
        assert!(!cache.finish_fetch(
            Ok(Fetched::NotModified {
                cache_control: Some("max-age=10".into())
            }),
            1_000.0
        ));
        assert!(cache.is_stale(11_000.0) && !cache.is_stale(10_999.0));
        assert!(cache.last_error().is_none());
        assert!(!cache.finish_fetch(Ok(doc(&[a])), 2_000.0));
        assert!(cache.finish_fetch(Ok(doc(&[b, a])), 3_000.0));
        assert_eq!(cache.keys(), &[b, a]);
        // Another URL starts over.
        cache.use_url("https://other.example/jwks.json");
        assert!(cache.keys().is_empty() && cache.may_fetch(3_001.0, 60_000) && cache.etag().is_none());
        // A 304 with nothing cached is a failure.
        assert!(!cache.finish_fetch(Ok(Fetched::NotModified { cache_control: None }), 1.0));
        assert_eq!(cache.last_error().unwrap().code(), ErrorCode::KeySetUnavailable);
    }

    #[test]
    fn the_verifier_trusts_static_and_fetched_keys() {
        let signing = SigningKey::generate().unwrap();
        let t = UnixTime::from_secs(1_700_000_000);
        let sig = signing.sign("m", t, b"{}").unwrap().to_string();
        let h = WebhookHeaders::new("m", "1700000000", &sig).unwrap();
        let secret = TrustedKey::Secret(Secret::generate().unwrap());
        assert!(verifier_with(&[], &[], 300).is_none());
        let only_static = verifier_with(std::slice::from_ref(&secret), &[], 300).unwrap();
        assert!(only_static.verify_headers(h, b"{}", t).is_err());
        let both = verifier_with(&[secret], &[signing.public_key()], 42).unwrap();
        assert!(both.verify_headers(h, b"{}", t).is_ok());
        assert_eq!(both.tolerance_secs(), 42);
        let reply = no_keys(Some(&Error::KeySetUnavailable {
            reason: "HTTP 503".into(),
        }));
        assert_eq!(reply.status(), 503);
        assert_eq!(reply.code.as_str(), "key_set_unavailable");
        assert_eq!(reply.header("retry-after"), Some("60"));
        assert!(reply.message.contains("HTTP 503"));
    }
}
