//! `WEBHOOK_KEYS_URL` in the isolate (compiled only for `wasm32`; tested in workerd through
//! Miniflare by `worker/test.sh`): the isolate's [`KeySetCache`], shared by every request it
//! serves, the `fetch` of the key set, and the verification of a delivery with the static
//! keys plus the set's. The rule is [`super::key_set`]'s.

use std::cell::RefCell;
use std::pin::pin;
use std::time::Duration;

use futures_channel::oneshot;
use futures_util::StreamExt;
use futures_util::future::{Either, select};
use postwire_core::key_set::MAX_KEY_SET_BYTES;
use postwire_core::{Error, TrustedKey, UnixTime, Verifier, WebhookHeaders};
use worker::{AbortController, AbortSignal, Delay, Fetch, Headers, Method, Request, RequestInit, RequestRedirect};

use super::inspect::{DeliveryHeaders, VerifiedDelivery, verify_body};
use super::key_set::{Fetched, KeySetCache, KeySetSettings, MAX_KEY_SET_REDIRECTS, no_keys, verifier_with};
use crate::reply::{Reply, ReplyCode};

/// JavaScript's clock, in milliseconds (`SystemTime::now()` panics on wasm32).
fn now_ms() -> f64 {
    js_sys::Date::now()
}

/// What a delivery may be verified with: the settings' static keys and the key set's.
/// (The fields of `Config` it needs, so that `verify` does not depend on `config`.)
pub(crate) struct Trust<'a> {
    /// The verifier of `static_keys`, `None` when there are none.
    pub verifier: Option<&'a Verifier>,
    /// `WEBHOOK_SECRETS` and `WEBHOOK_PUBLIC_KEYS`.
    pub static_keys: &'a [TrustedKey],
    /// `TIMESTAMP_TOLERANCE_SECS`.
    pub tolerance_secs: u64,
    /// `WEBHOOK_KEYS_URL` and its knobs.
    pub key_set: Option<&'a KeySetSettings>,
}

/// Whether a fetch is in flight in this isolate, and the requests waiting for it.
#[derive(Default)]
struct InFlight {
    running: bool,
    waiters: Vec<oneshot::Sender<()>>,
}

thread_local! {
    /// This isolate's key set. One isolate runs on one thread: every request it serves shares it.
    static CACHE: RefCell<KeySetCache> = RefCell::new(KeySetCache::new());
    static IN_FLIGHT: RefCell<InFlight> = RefCell::new(InFlight::default());
}

/// Ends a fetch however its request ends (a dropped request included): the next request
/// may fetch, and the waiting ones go on with whatever keys are cached.
struct FetchGuard;

impl Drop for FetchGuard {
    fn drop(&mut self) {
        let waiters = IN_FLIGHT.with(|f| {
            let mut f = f.borrow_mut();
            f.running = false;
            std::mem::take(&mut f.waiters)
        });
        for waiter in waiters {
            let _ = waiter.send(());
        }
    }
}

/// Verifies a delivery against the static keys (`WEBHOOK_SECRETS`, `WEBHOOK_PUBLIC_KEYS`)
/// and, with `WEBHOOK_KEYS_URL`, the key set's, fetched by the rule of [`super::key_set`].
pub(crate) async fn verify_delivery(
    trust: &Trust<'_>,
    headers: DeliveryHeaders,
    body: Vec<u8>,
    now: UnixTime,
) -> Result<VerifiedDelivery, Reply> {
    let Some(settings) = trust.key_set else {
        return match trust.verifier {
            Some(verifier) => verify_body(verifier, headers, body, now),
            None => Err(no_keys(None)),
        };
    };
    CACHE.with(|c| c.borrow_mut().use_url(settings.url.as_str()));
    if CACHE.with(|c| c.borrow().is_stale(now_ms())) {
        refresh(settings).await;
    }
    match check(trust, &headers, &body, now) {
        Err(reply) if reply.code == ReplyCode::InvalidSignature => {
            // The sender may have rotated: fetch again, at most once per interval.
            if refresh(settings).await {
                check(trust, &headers, &body, now)?;
            } else {
                return Err(reply);
            }
        }
        other => other?,
    }
    Ok(VerifiedDelivery { headers, body })
}

/// One check of the signature and timestamp with the keys cached now.
fn check(trust: &Trust<'_>, headers: &DeliveryHeaders, body: &[u8], now: UnixTime) -> Result<(), Reply> {
    let (keys, last_error) = CACHE.with(|c| {
        let c = c.borrow();
        (c.keys().to_vec(), c.last_error().cloned())
    });
    let Some(verifier) = verifier_with(trust.static_keys, &keys, trust.tolerance_secs) else {
        return Err(no_keys(last_error.as_ref()));
    };
    let view =
        WebhookHeaders::new(&headers.id, &headers.timestamp_raw, &headers.signature).map_err(|e| Reply::from(&e))?;
    verifier
        .verify_headers(view, body, now)
        .map(drop)
        .map_err(|e| Reply::from(&e))
}

/// Fetches the set unless one was fetched less than the interval ago; waits for a fetch
/// already in flight instead of starting another. Returns whether the keys may have
/// changed (then the caller checks again).
async fn refresh(settings: &KeySetSettings) -> bool {
    let waiting = IN_FLIGHT.with(|f| {
        let mut f = f.borrow_mut();
        f.running.then(|| {
            let (tx, rx) = oneshot::channel();
            f.waiters.push(tx);
            rx
        })
    });
    if let Some(rx) = waiting {
        let _ = rx.await;
        return true;
    }
    let started = now_ms();
    let allowed = CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let allowed = c.may_fetch(started, settings.min_refresh_ms);
        if allowed {
            c.start_fetch(started);
        }
        allowed
    });
    if !allowed {
        return false;
    }
    IN_FLIGHT.with(|f| f.borrow_mut().running = true);
    let _guard = FetchGuard;
    let etag = CACHE.with(|c| c.borrow().etag().map(str::to_owned));
    let outcome = fetch_within_deadline(settings, etag.as_deref()).await;
    if let Err(e) = &outcome {
        worker::console_warn!("postwire: fetching WEBHOOK_KEYS_URL failed ({}): {e}", e.code());
    }
    CACHE.with(|c| c.borrow_mut().finish_fetch(outcome, now_ms()))
}

fn unavailable(reason: impl Into<String>) -> Error {
    Error::KeySetUnavailable { reason: reason.into() }
}

/// One fetch of the set, aborted when `timeout_ms` passes first (the body included).
async fn fetch_within_deadline(settings: &KeySetSettings, etag: Option<&str>) -> Result<Fetched, Error> {
    let controller = AbortController::default();
    let signal = controller.signal();
    let work = pin!(fetch_set(settings, etag, &signal));
    let timeout = pin!(Delay::from(Duration::from_millis(settings.timeout_ms)));
    match select(work, timeout).await {
        Either::Left((outcome, _)) => outcome,
        Either::Right(((), _)) => {
            controller.abort();
            Err(unavailable(format!(
                "no complete answer within {} ms (WEBHOOK_KEYS_TIMEOUT_MS)",
                settings.timeout_ms
            )))
        }
    }
}

/// GET the set, following redirects only within the URL's origin.
async fn fetch_set(settings: &KeySetSettings, etag: Option<&str>, signal: &AbortSignal) -> Result<Fetched, Error> {
    let mut url = settings.url.clone();
    for _ in 0..=MAX_KEY_SET_REDIRECTS {
        let headers = Headers::new();
        let set_header =
            |name: &str, value: &str| headers.set(name, value).map_err(|_| unavailable("a request header"));
        set_header("accept", "application/jwk-set+json, application/json")?;
        if let Some(etag) = etag {
            set_header("if-none-match", etag)?;
        }
        let mut init = RequestInit::new();
        init.with_method(Method::Get)
            .with_headers(headers)
            .with_redirect(RequestRedirect::Manual);
        let request =
            Request::new_with_init(url.as_str(), &init).map_err(|_| unavailable("the request could not be made"))?;
        let mut response = Fetch::Request(request)
            .send_with_signal(signal)
            .await
            .map_err(|_| unavailable("the fetch failed (network error)"))?;
        let header = |name: &str| response.headers().get(name).ok().flatten();
        match response.status_code() {
            301 | 302 | 303 | 307 | 308 => {
                let location = header("location").ok_or_else(|| unavailable("a redirect without a location"))?;
                let next = url
                    .join(&location)
                    .map_err(|_| unavailable("a redirect with an unusable location"))?;
                if next.origin() != settings.url.origin() {
                    return Err(unavailable(format!(
                        "a redirect to another origin ({}) was refused",
                        next.origin().ascii_serialization()
                    )));
                }
                url = next;
            }
            304 => {
                return Ok(Fetched::NotModified {
                    cache_control: header("cache-control"),
                });
            }
            200 => {
                let etag = header("etag");
                let cache_control = header("cache-control");
                let body = read_capped(&mut response).await?;
                return Ok(Fetched::Document {
                    body,
                    etag,
                    cache_control,
                });
            }
            status => return Err(unavailable(format!("the server answered HTTP {status}"))),
        }
    }
    Err(unavailable(format!("more than {MAX_KEY_SET_REDIRECTS} redirects")))
}

/// The body, refused (`invalid_key_set`) once past `MAX_KEY_SET_BYTES`.
async fn read_capped(response: &mut worker::Response) -> Result<Vec<u8>, Error> {
    let too_large = Error::InvalidKeySet {
        reason: "larger than 65536 bytes",
    };
    let declared = response
        .headers()
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_KEY_SET_BYTES as u64) {
        return Err(too_large);
    }
    let mut stream = response
        .stream()
        .map_err(|_| unavailable("the body could not be read"))?;
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| unavailable("the body could not be read to its end"))?;
        if body.len() + chunk.len() > MAX_KEY_SET_BYTES {
            return Err(too_large);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
