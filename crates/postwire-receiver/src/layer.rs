//! [`OnceLayer`]: the tower layer that turns an axum route into a webhook receiver. For
//! each request it reads the raw body (up to `max_body_bytes`), verifies the Standard
//! Webhooks headers and signature, parses the typed [`Event`], claims its `webhook-id`
//! in the [`Store`], and only then calls the route's handler with the event in the request
//! extensions (`Extension<Event>`). While the handler runs, the claim's lease is renewed
//! every third of the lease, so a handler slower than its lease keeps its claim (copies
//! meanwhile are answered 409) and a dead process, which renews nothing, loses it after one
//! lease. A 2xx answer from the handler marks the id done; any other answer, an error or a
//! dropped request (the client went away mid-handler) releases the claim, so the sender's
//! retry runs the handler again. A claim lost all the same (renewals that did not reach the
//! store in time) is logged at `warn` and counted in [`OnceMetrics`].

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use http::{Request, Response};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use postwire_core::{Clock, Error as CoreError, ErrorCode, Event, EventType, SystemClock, UnixTime, Verifier};
use tower_layer::Layer;
use tower_service::Service;

use crate::answer;
use crate::metrics::OnceMetrics;
use crate::store::{Claim, ClaimToken, Store, StoreError};

/// How long a claim holds an id before another copy may take it over: 30 s.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);
/// How long a done id is remembered: 25 h, above the postwire sender's ~23 h of retries.
pub const DEFAULT_KEEP: Duration = Duration::from_secs(25 * 3600);
/// How long one store call may take before the delivery is answered 503: 5 s.
pub const DEFAULT_STORE_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest body read: 1 MiB (events are a few kilobytes).
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;

/// The layer (see the [module docs](self)). Cheap to clone; build it once.
///
/// ```no_run
/// use axum::{Extension, Router, http::StatusCode, routing::post};
/// use postwire_core::{Event, Secret, Verifier};
/// use postwire_receiver::{MemoryStore, OnceLayer};
///
/// async fn on_event(Extension(event): Extension<Event>) -> StatusCode {
///     println!("{} {}", event.event_type(), event.id());
///     StatusCode::NO_CONTENT // 2xx: done; anything else: released, the sender retries
/// }
///
/// # fn main() -> Result<(), postwire_core::Error> {
/// let secret = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")?;
/// let app: Router = Router::new()
///     .route("/webhooks/postwire", post(on_event))
///     .route_layer(OnceLayer::new(Verifier::new(secret), MemoryStore::new()));
/// # Ok(()) }
/// ```
pub struct OnceLayer<St> {
    shared: Arc<Shared<St>>,
}

impl<St> Clone for OnceLayer<St> {
    fn clone(&self) -> Self {
        OnceLayer {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<St> std::fmt::Debug for OnceLayer<St> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnceLayer")
            .field("lease", &self.shared.lease)
            .field("keep", &self.shared.keep)
            .field("store_timeout", &self.shared.store_timeout)
            .field("max_body_bytes", &self.shared.max_body_bytes)
            .finish_non_exhaustive()
    }
}

/// What verifies deliveries: fixed keys, or a published key set (feature `key-set`).
#[derive(Clone)]
enum Verification {
    Fixed(Verifier),
    #[cfg(feature = "key-set")]
    KeySet(Arc<crate::key_set::RemoteKeySet>),
}

impl Verification {
    async fn verify_event(&self, headers: &http::HeaderMap, body: &[u8], now: UnixTime) -> Result<Event, CoreError> {
        match self {
            Verification::Fixed(v) => v.verify_event(headers, body, now),
            #[cfg(feature = "key-set")]
            Verification::KeySet(k) => k.verify_event(headers, body, now).await,
        }
    }
}

struct Shared<St> {
    verifier: Verification,
    store: Arc<St>,
    clock: Arc<dyn Clock>,
    lease: Duration,
    keep: Duration,
    store_timeout: Duration,
    max_body_bytes: usize,
    metrics: Arc<OnceMetrics>,
}

impl<St: Store> OnceLayer<St> {
    /// The layer with `verifier` (your subscription's secret or public keys) and `store`,
    /// and every knob at its default: lease 30 s, keep 25 h, store timeout 5 s, bodies up
    /// to 1 MiB, the system clock.
    pub fn new(verifier: Verifier, store: St) -> Self {
        Self::with_verification(Verification::Fixed(verifier), store)
    }

    /// [`new`](Self::new) with the `v1a` keys of a sender's published key set instead of a
    /// fixed verifier (feature `key-set`; see [`crate::key_set`]). With no key cached and the
    /// set unavailable, a delivery is answered `503` (`key_set_unavailable` or
    /// `invalid_key_set`) with `retry-after: 60`.
    #[cfg(feature = "key-set")]
    pub fn with_key_set(key_set: Arc<crate::key_set::RemoteKeySet>, store: St) -> Self {
        Self::with_verification(Verification::KeySet(key_set), store)
    }

    fn with_verification(verifier: Verification, store: St) -> Self {
        OnceLayer {
            shared: Arc::new(Shared {
                verifier,
                store: Arc::new(store),
                clock: Arc::new(SystemClock),
                lease: DEFAULT_LEASE,
                keep: DEFAULT_KEEP,
                store_timeout: DEFAULT_STORE_TIMEOUT,
                max_body_bytes: DEFAULT_MAX_BODY_BYTES,
                metrics: Arc::new(OnceMetrics::default()),
            }),
        }
    }

    fn map(self, f: impl FnOnce(&mut Shared<St>)) -> Self {
        let mut shared = match Arc::try_unwrap(self.shared) {
            Ok(shared) => shared,
            Err(arc) => Shared {
                verifier: arc.verifier.clone(),
                store: Arc::clone(&arc.store),
                clock: Arc::clone(&arc.clock),
                lease: arc.lease,
                keep: arc.keep,
                store_timeout: arc.store_timeout,
                max_body_bytes: arc.max_body_bytes,
                metrics: Arc::clone(&arc.metrics),
            },
        };
        f(&mut shared);
        OnceLayer {
            shared: Arc::new(shared),
        }
    }

    /// How long a claim holds an id before another copy may take it over (default 30 s; at
    /// least 1 ms). The layer renews it every third of the lease while the handler runs, so
    /// it bounds how long a copy waits after its process died, not how long a handler may
    /// run; keep it well above `store_timeout`, so a renewal that fails once is tried again
    /// in time.
    pub fn lease(self, lease: Duration) -> Self {
        self.map(|s| s.lease = lease.max(Duration::from_millis(1)))
    }

    /// How long a done id is remembered (default 25 h; at least 1 ms). Choose it above the
    /// sender's whole retry span (postwire's is about 23 h), or a late retry runs again.
    pub fn keep(self, keep: Duration) -> Self {
        self.map(|s| s.keep = keep.max(Duration::from_millis(1)))
    }

    /// How long one store call may take before the delivery is answered 503 (default 5 s).
    pub fn store_timeout(self, timeout: Duration) -> Self {
        self.map(|s| s.store_timeout = timeout.max(Duration::from_millis(1)))
    }

    /// The largest body read (default 1 MiB); larger ones are answered 413.
    pub fn max_body_bytes(self, limit: usize) -> Self {
        self.map(|s| s.max_body_bytes = limit)
    }

    /// The clock the `webhook-timestamp` tolerance is checked against (default: the system's).
    pub fn clock(self, clock: Arc<dyn Clock>) -> Self {
        self.map(|s| s.clock = clock)
    }

    /// The store.
    pub fn store(&self) -> &St {
        &self.shared.store
    }

    /// The counters of claims lost (see [`OnceMetrics`]), shared by the layer's clones.
    pub fn metrics(&self) -> &OnceMetrics {
        &self.shared.metrics
    }
}

impl<S, St> Layer<S> for OnceLayer<St> {
    type Service = OnceService<S, St>;

    fn layer(&self, inner: S) -> Self::Service {
        OnceService {
            inner,
            shared: Arc::clone(&self.shared),
        }
    }
}

/// The service [`OnceLayer`] wraps around a route (see the [module docs](self)).
pub struct OnceService<S, St> {
    inner: S,
    shared: Arc<Shared<St>>,
}

impl<S: Clone, St> Clone for OnceService<S, St> {
    fn clone(&self) -> Self {
        OnceService {
            inner: self.inner.clone(),
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<S, St> std::fmt::Debug for OnceService<S, St> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnceService").finish_non_exhaustive()
    }
}

/// The future of [`OnceService`].
pub type OnceFuture<E> = Pin<Box<dyn Future<Output = Result<Response<Body>, E>> + Send>>;

impl<S, St> Service<Request<Body>> for OnceService<S, St>
where
    S: Service<Request<Body>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    St: Store,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = OnceFuture<S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        // The clone is the one made ready by poll_ready's caller next time; this one was.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let shared = Arc::clone(&self.shared);
        Box::pin(receive(shared, inner, request))
    }
}

/// Runs a store call under the layer's timeout.
async fn timed<T>(timeout: Duration, call: impl Future<Output = Result<T, StoreError>>) -> Result<T, StoreError> {
    match tokio::time::timeout(timeout, call).await {
        Ok(result) => result,
        Err(_) => Err(StoreError::Timeout(timeout)),
    }
}

async fn receive<S, St>(
    shared: Arc<Shared<St>>,
    mut inner: S,
    request: Request<Body>,
) -> Result<Response<Body>, S::Error>
where
    S: Service<Request<Body>, Response = Response<Body>>,
    St: Store,
{
    let (mut parts, body) = request.into_parts();
    let bytes = match Limited::new(body, shared.max_body_bytes).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
            return Ok(answer::too_large(shared.max_body_bytes));
        }
        Err(_) => return Ok(answer::unreadable()),
    };
    let now = shared.clock.now().unix_time();
    let event = match shared.verifier.verify_event(&parts.headers, &bytes, now).await {
        Ok(event) => event,
        #[cfg(feature = "key-set")]
        Err(e) if matches!(e.code(), ErrorCode::KeySetUnavailable | ErrorCode::InvalidKeySet) => {
            return Ok(answer::no_keys(e.code().as_str(), &e.to_string()));
        }
        Err(e) => {
            // invalid_payload comes only after the signature verified: a type this version
            // does not know (a newer sender) is acknowledged, not retried for a day.
            if e.code() == ErrorCode::InvalidPayload
                && let Some(unknown) = unknown_type(&bytes)
            {
                return Ok(answer::ignored(&unknown));
            }
            return Ok(answer::rejected(e.code().as_str(), &e.to_string()));
        }
    };

    let id = event.id().to_owned();
    let token = ClaimToken::generate();
    match timed(shared.store_timeout, shared.store.claim(&id, &token, shared.lease)).await {
        Ok(Claim::Claimed) => {}
        Ok(Claim::Done) => return Ok(answer::duplicate()),
        Ok(Claim::InFlight { retry_after }) => return Ok(answer::in_progress(retry_after)),
        Err(e) => {
            tracing::warn!(webhook_id = %id, code = %e.code(), error = %e, "once-store claim failed; answered 503, the handler did not run");
            return Ok(answer::store_down());
        }
    }

    // From here the claim is ours: released if this future is dropped before the end.
    let mut guard = ClaimGuard {
        shared: Arc::clone(&shared),
        id,
        token,
        armed: true,
    };
    parts.extensions.insert(event);
    let handler = inner.call(Request::from_parts(parts, Body::from(bytes)));
    let result = tokio::select! {
        result = handler => result,
        never = keep_claim(&shared, &guard.id, &guard.token) => match never {},
    };
    guard.armed = false;
    match result {
        Ok(response) if response.status().is_success() => {
            let complete = shared.store.complete(&guard.id, &guard.token, shared.keep);
            match timed(shared.store_timeout, complete).await {
                Ok(true) => {}
                Ok(false) => {
                    shared.metrics.complete_refused();
                    tracing::warn!(webhook_id = %guard.id, "the handler finished after its claim was lost: the lease ran out and another copy holds the id, whose handler may run too");
                }
                Err(e) => {
                    // The work is done: answering an error would make the sender retry it after the lease.
                    tracing::warn!(webhook_id = %guard.id, code = %e.code(), error = %e, "once-store complete failed; the id may run again after its lease");
                }
            }
            Ok(response)
        }
        other => {
            release(&shared, &guard.id, &guard.token).await;
            other
        }
    }
}

/// Renews the claim every third of the lease while the handler runs (this future is
/// dropped when the handler returns). A renewal the store fails is tried again at the next
/// tick; one that finds the claim gone stops renewing.
async fn keep_claim<St: Store>(shared: &Shared<St>, id: &str, token: &ClaimToken) -> Infallible {
    let every = (shared.lease / 3).max(Duration::from_millis(1));
    loop {
        tokio::time::sleep(every).await;
        match timed(shared.store_timeout, shared.store.renew(id, token, shared.lease)).await {
            Ok(true) => {}
            Ok(false) => {
                shared.metrics.lease_lost();
                tracing::warn!(webhook_id = %id, "the claim was lost while the handler ran: its lease ran out before a renewal reached the store, and another copy may run the handler too");
                return std::future::pending().await;
            }
            Err(e) => {
                shared.metrics.renewal_failed();
                tracing::warn!(webhook_id = %id, code = %e.code(), error = %e, "once-store renew failed; tried again at the next third of the lease");
            }
        }
    }
}

async fn release<St: Store>(shared: &Shared<St>, id: &str, token: &ClaimToken) {
    if let Err(e) = timed(shared.store_timeout, shared.store.release(id, token)).await {
        // The lease expires instead: the retry after it runs the handler.
        tracing::warn!(webhook_id = %id, code = %e.code(), error = %e, "once-store release failed; the id runs again after its lease");
    }
}

/// Releases a claim whose request future is dropped mid-handler (the client went away,
/// the server shut down), in a task of its own.
struct ClaimGuard<St: Store> {
    shared: Arc<Shared<St>>,
    id: String,
    token: ClaimToken,
    /// Whether the handler is still running (the claim is released on drop).
    armed: bool,
}

impl<St: Store> Drop for ClaimGuard<St> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let shared = Arc::clone(&self.shared);
        let id = std::mem::take(&mut self.id);
        let token = self.token.clone();
        runtime.spawn(async move { release(&shared, &id, &token).await });
    }
}

/// The `type` of a JSON body when it is a string that is not a known event type.
fn unknown_type(body: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let ty = value.get("type")?.as_str()?;
    ty.parse::<EventType>().is_err().then(|| ty.to_owned())
}
