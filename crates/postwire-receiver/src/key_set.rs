//! [`RemoteKeySet`] (feature `key-set`): `v1a` verification with the public keys a sender
//! publishes as a JSON Web Key Set at a URL (`postwire serve`'s `keySetUrl`), read by
//! `postwire_core::key_set`, so a receiver follows key rotations with no `whpk_` key
//! copied by hand. [`OnceLayer::with_key_set`](crate::OnceLayer::with_key_set) verifies
//! with one.
//!
//! The rule, the npm package's and the edge Worker's:
//! - the set is fetched on first use, and kept for the response's `Cache-Control: max-age`
//!   (300 s without one, at most a day); then fetched again, with `If-None-Match` (a `304`
//!   keeps the keys);
//! - a delivery no cached key verifies fetches it again (the sender may have rotated);
//! - either way at most one fetch per [`min_refresh_interval`](RemoteKeySet::min_refresh_interval)
//!   (default 60 s), and concurrent deliveries wait for the fetch in flight instead of
//!   starting another: forged deliveries cannot make a receiver hammer the sender;
//! - each fetch has one deadline for headers and body ([`timeout`](RemoteKeySet::timeout),
//!   default 5 s), reads at most `MAX_KEY_SET_BYTES` (64 KiB), answers only to `200`/`304`,
//!   and follows redirects only within the URL's origin (at most 3); a failure keeps the
//!   keys already cached ([`last_error`](RemoteKeySet::last_error));
//! - with no key cached at all, verification fails with `key_set_unavailable` or
//!   `invalid_key_set`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use postwire_core::key_set::{KEY_SET_CONTENT_TYPE, KeySet, MAX_KEY_SET_BYTES};
use postwire_core::{DEFAULT_TOLERANCE_SECS, Error, ErrorCode, Event, HeaderSource, PublicKey, UnixTime, Verifier};

/// The least time between two fetches of a key set: 60 s.
pub const DEFAULT_MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(60);
/// How long one fetch may take, headers and body: 5 s.
pub const DEFAULT_KEY_SET_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a set is kept when its response has no `max-age`: 300 s.
pub const DEFAULT_KEY_SET_MAX_AGE: Duration = Duration::from_secs(300);
/// The longest a set is kept, whatever its `max-age`: a day.
const MAX_KEY_SET_MAX_AGE: Duration = Duration::from_secs(86_400);
/// Redirects followed, each within the key set URL's origin.
const MAX_REDIRECTS: usize = 3;

fn unavailable(reason: impl Into<String>) -> Error {
    Error::KeySetUnavailable { reason: reason.into() }
}

/// The freshness a response grants: its `max-age` (zero for `no-store`/`no-cache`), else
/// [`DEFAULT_KEY_SET_MAX_AGE`]; at most a day.
fn max_age(cache_control: Option<&str>) -> Duration {
    let Some(value) = cache_control else {
        return DEFAULT_KEY_SET_MAX_AGE;
    };
    let mut age = None;
    for part in value.split(',') {
        let part = part.trim().to_ascii_lowercase();
        let (name, arg) = part.split_once('=').unwrap_or((part.as_str(), ""));
        match name {
            "no-store" | "no-cache" => return Duration::ZERO,
            "max-age" if !arg.is_empty() && arg.len() <= 10 && arg.bytes().all(|b| b.is_ascii_digit()) => {
                age = arg.parse::<u64>().ok().map(Duration::from_secs);
            }
            _ => {}
        }
    }
    age.map_or(DEFAULT_KEY_SET_MAX_AGE, |a| a.min(MAX_KEY_SET_MAX_AGE))
}

/// The cached keys and the fetch bookkeeping.
#[derive(Default)]
struct State {
    keys: Vec<PublicKey>,
    verifier: Option<Verifier>,
    etag: Option<String>,
    fresh_until: Option<Instant>,
    last_fetch: Option<Instant>,
    last_error: Option<Error>,
}

/// A sender's published key set at a URL, cached and refreshed by the rule of the
/// [module docs](self). Share one per process (it is `Send + Sync`; wrap it in an `Arc`).
///
/// ```no_run
/// use postwire_receiver::key_set::RemoteKeySet;
/// # async fn run(headers: http::HeaderMap, body: &[u8]) -> Result<(), postwire_core::Error> {
/// let keys = RemoteKeySet::new("https://webhooks.example.com/public/v1/key-sets/ks_…/jwks.json")?;
/// let event = keys.verify_event(&headers, body, postwire_core::UnixTime::from_secs(1_765_000_000)).await?;
/// # Ok(()) }
/// ```
pub struct RemoteKeySet {
    url: reqwest::Url,
    client: reqwest::Client,
    min_refresh_interval: Duration,
    timeout: Duration,
    tolerance_secs: u64,
    state: Mutex<State>,
    /// Held for the whole of a fetch: one at a time; others wait for it.
    fetching: tokio::sync::Mutex<()>,
    /// Fetches finished, so a request that waited knows one happened.
    finished: AtomicU64,
    started: AtomicU64,
}

impl std::fmt::Debug for RemoteKeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteKeySet")
            .field("url", &self.url.as_str())
            .field("min_refresh_interval", &self.min_refresh_interval)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl RemoteKeySet {
    /// The key set at `url` (`https://`, or `http://` for a local test), with every knob at
    /// its default. Nothing is fetched until the first verification.
    pub fn new(url: &str) -> Result<Self, Error> {
        let url = reqwest::Url::parse(url).map_err(|_| unavailable("the key set URL is not an absolute URL"))?;
        if !matches!(url.scheme(), "https" | "http") || url.host().is_none() {
            return Err(unavailable(
                "the key set URL must be an https:// (or http://) URL with a host",
            ));
        }
        let origin = url.origin();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                if attempt.url().origin() != origin {
                    attempt.error("a redirect to another origin was refused")
                } else if attempt.previous().len() > MAX_REDIRECTS {
                    attempt.error("more than 3 redirects")
                } else {
                    attempt.follow()
                }
            }))
            .build()
            .map_err(|e| unavailable(format!("cannot build the HTTP client: {e}")))?;
        Ok(RemoteKeySet {
            url,
            client,
            min_refresh_interval: DEFAULT_MIN_REFRESH_INTERVAL,
            timeout: DEFAULT_KEY_SET_TIMEOUT,
            tolerance_secs: DEFAULT_TOLERANCE_SECS,
            state: Mutex::new(State::default()),
            fetching: tokio::sync::Mutex::new(()),
            finished: AtomicU64::new(0),
            started: AtomicU64::new(0),
        })
    }

    /// The least time between two fetches (default [`DEFAULT_MIN_REFRESH_INTERVAL`], 60 s).
    pub fn min_refresh_interval(mut self, interval: Duration) -> Self {
        self.min_refresh_interval = interval;
        self
    }

    /// How long one fetch may take, headers and body (default [`DEFAULT_KEY_SET_TIMEOUT`], 5 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The `webhook-timestamp` tolerance each way, in seconds (default 300).
    pub fn tolerance_secs(mut self, secs: u64) -> Self {
        self.tolerance_secs = secs;
        self
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The cached keys, in the published order (empty before the first fetch).
    pub fn public_keys(&self) -> Vec<PublicKey> {
        self.state().keys.clone()
    }

    /// Why the last fetch failed, if it did.
    pub fn last_error(&self) -> Option<Error> {
        self.state().last_error.clone()
    }

    /// How many fetches have started.
    pub fn fetch_count(&self) -> u64 {
        self.started.load(Ordering::SeqCst)
    }

    /// Verifies a delivery with the set's keys (see [`Verifier::verify_event`]), fetching
    /// them first when none are cached or they are stale, and once more when none verifies.
    pub async fn verify_event<H: HeaderSource + ?Sized>(
        &self,
        headers: &H,
        body: &[u8],
        now: UnixTime,
    ) -> Result<Event, Error> {
        let stale = {
            let state = self.state();
            state.verifier.is_none() || state.fresh_until.is_none_or(|t| Instant::now() >= t)
        };
        if stale {
            self.refresh().await;
        }
        let verifier = self.current()?;
        match verifier.verify_event(headers, body, now) {
            Err(e) if e.code() == ErrorCode::InvalidSignature => {
                if self.refresh().await {
                    self.current()?.verify_event(headers, body, now)
                } else {
                    Err(e)
                }
            }
            other => other,
        }
    }

    /// The verifier of the cached keys, or why there is none.
    fn current(&self) -> Result<Verifier, Error> {
        let state = self.state();
        state.verifier.clone().ok_or_else(|| {
            state.last_error.clone().unwrap_or_else(|| {
                unavailable("the key set was fetched less than the refresh interval ago without success")
            })
        })
    }

    /// Fetches the set now unless one was fetched less than the refresh interval ago; waits
    /// for a fetch in flight instead of starting another. Returns whether the keys may have
    /// changed (a fetch that changed them, or one this call waited for). A failure keeps the
    /// cached keys.
    pub async fn refresh(&self) -> bool {
        let seen = self.finished.load(Ordering::SeqCst);
        let _one_at_a_time = self.fetching.lock().await;
        if self.finished.load(Ordering::SeqCst) != seen {
            return true;
        }
        let etag = {
            let mut state = self.state();
            let now = Instant::now();
            if state
                .last_fetch
                .is_some_and(|last| now.duration_since(last) < self.min_refresh_interval)
            {
                return false;
            }
            state.last_fetch = Some(now);
            state.etag.clone().filter(|_| state.verifier.is_some())
        };
        self.started.fetch_add(1, Ordering::SeqCst);
        let outcome = match tokio::time::timeout(self.timeout, self.fetch(etag.as_deref())).await {
            Ok(outcome) => outcome,
            Err(_) => Err(unavailable(format!(
                "no complete answer within {} ms",
                self.timeout.as_millis()
            ))),
        };
        let changed = self.apply(outcome);
        self.finished.fetch_add(1, Ordering::SeqCst);
        changed
    }

    fn apply(&self, outcome: Result<Fetched, Error>) -> bool {
        let mut state = self.state();
        let result = outcome.and_then(|fetched| match fetched {
            Fetched::NotModified { max_age } if state.verifier.is_some() => {
                state.fresh_until = Some(Instant::now() + max_age);
                Ok(false)
            }
            Fetched::NotModified { .. } => Err(unavailable("the server answered 304 with no key cached")),
            Fetched::Document { body, etag, max_age } => {
                let keys: Vec<PublicKey> = KeySet::parse(&body)?.public_keys().copied().collect();
                let changed = keys != state.keys;
                if changed {
                    state.verifier =
                        Some(Verifier::with_keys(keys.iter().copied())?.with_tolerance_secs(self.tolerance_secs));
                    state.keys = keys;
                }
                state.etag = etag;
                state.fresh_until = Some(Instant::now() + max_age);
                Ok(changed)
            }
        });
        match result {
            Ok(changed) => {
                state.last_error = None;
                changed
            }
            Err(e) => {
                tracing::warn!(code = %e.code(), error = %e, "fetching the key set failed; the cached keys are kept");
                state.last_error = Some(e);
                false
            }
        }
    }

    /// One GET of the set (redirects checked by the client's policy), its body capped.
    async fn fetch(&self, etag: Option<&str>) -> Result<Fetched, Error> {
        let described = |e: reqwest::Error| {
            if e.is_redirect() {
                let reason = std::error::Error::source(&e).map_or_else(|| e.to_string(), ToString::to_string);
                unavailable(reason)
            } else {
                unavailable(format!("the fetch failed: {}", e.without_url()))
            }
        };
        let mut request = self.client.get(self.url.clone()).header(
            reqwest::header::ACCEPT,
            format!("{KEY_SET_CONTENT_TYPE}, application/json"),
        );
        if let Some(etag) = etag {
            request = request.header(reqwest::header::IF_NONE_MATCH, etag);
        }
        let mut response = request.send().await.map_err(described)?;
        let header = |name: reqwest::header::HeaderName| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let age = max_age(header(reqwest::header::CACHE_CONTROL).as_deref());
        match response.status().as_u16() {
            304 => return Ok(Fetched::NotModified { max_age: age }),
            200 => {}
            status => return Err(unavailable(format!("the server answered HTTP {status}"))),
        }
        let etag = header(reqwest::header::ETAG);
        let too_large = Error::InvalidKeySet {
            reason: "larger than 65536 bytes",
        };
        if response.content_length().is_some_and(|n| n > MAX_KEY_SET_BYTES as u64) {
            return Err(too_large);
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(described)? {
            if body.len() + chunk.len() > MAX_KEY_SET_BYTES {
                return Err(too_large);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Fetched::Document {
            body,
            etag,
            max_age: age,
        })
    }
}

/// What one fetch brought back.
enum Fetched {
    Document {
        body: Vec<u8>,
        etag: Option<String>,
        max_age: Duration,
    },
    NotModified {
        max_age: Duration,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_age_is_read_capped_and_defaulted() {
        assert_eq!(max_age(Some("public, max-age=300")), Duration::from_secs(300));
        assert_eq!(max_age(Some("max-age=99999999")), MAX_KEY_SET_MAX_AGE);
        assert_eq!(max_age(Some("no-cache")), Duration::ZERO);
        for unusable in [None, Some("max-age=-1"), Some("max-age="), Some("private")] {
            assert_eq!(max_age(unusable), DEFAULT_KEY_SET_MAX_AGE, "{unusable:?}");
        }
    }

    #[test]
    fn bad_urls_are_refused() {
        for bad in ["", "not a url", "ftp://k.example/jwks.json", "data:text/plain,x"] {
            assert_eq!(
                RemoteKeySet::new(bad).unwrap_err().code(),
                ErrorCode::KeySetUnavailable,
                "{bad}"
            );
        }
    }
}
