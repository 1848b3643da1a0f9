//! A webhook receiver on loopback that does what the spec asks of receivers: verify
//! every delivery with postwire-core (signature over the raw body, timestamp within
//! five minutes) and de-duplicate by `webhook-id`. `postwire demo` runs it; the
//! workspace's tests use the same file through `postwire-testkit` (which compiles it
//! with `#[path]`, so there is one implementation and the CLI stays publishable).
//!
//! It can be told to fail on purpose ([`FailurePlan`]) so retries become visible, and
//! it keeps what it saw per event, so a demo or a test can check that every event
//! arrived, verified, exactly once as far as the application is concerned.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, RwLock};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use postwire_core::{Clock, Event, EventType, MemoryReplayGuard, ReplayGuard, Secret, Seen, Verifier};
use tokio::sync::oneshot;

/// Requests to answer with 503 before looking at them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailurePlan {
    /// Events of this type…
    pub event_type: EventType,
    /// …get 503 on their first this-many attempts.
    pub failed_attempts: u32,
}

/// Events to handle and then answer 500, as if the acknowledgement were lost (a crash
/// after processing): the sender retries, and the retry is a duplicate to ignore.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LostAckPlan {
    /// Events of this type…
    pub event_type: EventType,
    /// …get 500 after being handled on their first this-many verified requests.
    pub lost_acks: u32,
}

/// What the receiver saw of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedEvent {
    /// The event id (`webhook-id`).
    pub id: String,
    /// Its type, once verified.
    pub event_type: Option<EventType>,
    /// Requests for it.
    pub requests: u32,
    /// Requests answered 503 on purpose.
    pub failed_on_purpose: u32,
    /// Whether a request for it passed verification.
    pub verified: bool,
    /// Verified repeats, acknowledged and ignored.
    pub duplicates: u32,
    /// Order in which it was first handled (verified), from 1.
    pub handled_order: Option<u32>,
    /// Requests handled but answered 500 on purpose (lost acknowledgements).
    pub lost_acks: u32,
    /// The verified event.
    pub event: Option<Event>,
}

/// Counters over all requests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    /// Per event id, in id order.
    pub events: BTreeMap<String, ReceivedEvent>,
    /// Requests that failed verification (answered 400).
    pub rejected: u32,
    /// Verified events handled (first time each).
    pub handled: u32,
}

struct Inner {
    secrets: RwLock<Vec<Secret>>,
    clock: Arc<dyn Clock>,
    guard: MemoryReplayGuard,
    plan: Mutex<Option<FailurePlan>>,
    lost_ack_plan: Mutex<Option<LostAckPlan>>,
    delay: Mutex<std::time::Duration>,
    stats: Mutex<ReceiverStats>,
}

/// A running receiver.
pub struct Receiver {
    inner: Arc<Inner>,
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Receiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

fn header_event_id(headers: &HeaderMap) -> String {
    headers
        .get("webhook-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .chars()
        .take(100)
        .collect()
}

async fn receive(State(inner): State<Arc<Inner>>, headers: HeaderMap, body: Bytes) -> (StatusCode, String) {
    let id = header_event_id(&headers);
    let event_type = serde_json::from_slice::<serde_json::Value>(&body).ok().and_then(|v| {
        v.get("type")
            .and_then(|t| t.as_str())
            .and_then(|t| t.parse::<EventType>().ok())
    });
    let plan = *inner.plan.lock().unwrap_or_else(|p| p.into_inner());
    {
        let mut stats = inner.stats.lock().unwrap_or_else(|p| p.into_inner());
        let entry = stats.events.entry(id.clone()).or_insert_with(|| ReceivedEvent {
            id: id.clone(),
            event_type: None,
            requests: 0,
            failed_on_purpose: 0,
            verified: false,
            duplicates: 0,
            handled_order: None,
            lost_acks: 0,
            event: None,
        });
        entry.requests += 1;
        if let Some(plan) = plan
            && event_type == Some(plan.event_type)
            && entry.failed_on_purpose < plan.failed_attempts
        {
            entry.failed_on_purpose += 1;
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                "receiver is down (on purpose, for the demo)".to_owned(),
            );
        }
    }
    let delay = *inner.delay.lock().unwrap_or_else(|p| p.into_inner());
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let secrets = inner.secrets.read().unwrap_or_else(|p| p.into_inner()).clone();
    let Ok(verifier) = Verifier::with_secrets(secrets) else {
        return (StatusCode::SERVICE_UNAVAILABLE, "no secret configured yet".to_owned());
    };
    let now = inner.clock.now().unix_time();
    match verifier.verify_event(&headers, &body, now) {
        Err(e) => {
            inner.stats.lock().unwrap_or_else(|p| p.into_inner()).rejected += 1;
            (StatusCode::BAD_REQUEST, e.code().as_str().to_owned())
        }
        Ok(event) => {
            let seen = inner.guard.check_and_record(event.id(), now);
            let lost_ack = *inner.lost_ack_plan.lock().unwrap_or_else(|p| p.into_inner());
            let mut stats = inner.stats.lock().unwrap_or_else(|p| p.into_inner());
            let handled = stats.handled;
            let entry = stats.events.get_mut(&id);
            let Some(entry) = entry else {
                return (StatusCode::OK, "ok".to_owned());
            };
            entry.event_type = Some(event.event_type());
            entry.verified = true;
            let event_type = event.event_type();
            entry.event = Some(event);
            let lose = lost_ack.is_some_and(|p| p.event_type == event_type && entry.lost_acks < p.lost_acks);
            if lose {
                entry.lost_acks += 1;
            }
            match seen {
                Seen::Fresh => {
                    entry.handled_order = Some(handled + 1);
                    stats.handled += 1;
                    if lose {
                        return (
                            StatusCode::INTERNAL_SERVER_ERROR,
                            "handled, but the acknowledgement was lost (on purpose, for the demo)".to_owned(),
                        );
                    }
                    (StatusCode::OK, "ok".to_owned())
                }
                Seen::Duplicate => {
                    entry.duplicates += 1;
                    (StatusCode::OK, "duplicate ignored".to_owned())
                }
            }
        }
    }
}

impl Receiver {
    /// Starts a receiver on `127.0.0.1` (a free port) that verifies with the secrets
    /// given later through [`set_secrets`](Self::set_secrets), at `clock`'s time.
    pub async fn start(clock: Arc<dyn Clock>) -> std::io::Result<Receiver> {
        let inner = Arc::new(Inner {
            secrets: RwLock::new(Vec::new()),
            clock,
            guard: MemoryReplayGuard::default(),
            plan: Mutex::new(None),
            lost_ack_plan: Mutex::new(None),
            delay: Mutex::new(std::time::Duration::ZERO),
            stats: Mutex::new(ReceiverStats::default()),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let app = Router::new()
            .route("/webhooks", post(receive))
            .with_state(inner.clone());
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stop_rx.await;
                })
                .await;
        });
        Ok(Receiver {
            inner,
            addr,
            stop: Some(stop_tx),
            task,
        })
    }

    /// The URL to subscribe: `http://127.0.0.1:<port>/webhooks`.
    pub fn url(&self) -> String {
        format!("http://{}/webhooks", self.addr)
    }

    /// Verifies with these secrets from now on (any of them may match, as during a
    /// rotation).
    pub fn set_secrets(&self, secrets: Vec<Secret>) {
        *self.inner.secrets.write().unwrap_or_else(|p| p.into_inner()) = secrets;
    }

    /// Fails on purpose as `plan` says, or stops failing with `None`.
    pub fn set_failure_plan(&self, plan: Option<FailurePlan>) {
        *self.inner.plan.lock().unwrap_or_else(|p| p.into_inner()) = plan;
    }

    /// Handles events and then answers 500 as `plan` says, or stops with `None`.
    pub fn set_lost_ack_plan(&self, plan: Option<LostAckPlan>) {
        *self.inner.lost_ack_plan.lock().unwrap_or_else(|p| p.into_inner()) = plan;
    }

    /// Waits this long before verifying and answering each request (a slow receiver).
    #[allow(
        dead_code,
        reason = "the demo never slows down; the tests do, through postwire-testkit"
    )]
    pub fn set_delay(&self, delay: std::time::Duration) {
        *self.inner.delay.lock().unwrap_or_else(|p| p.into_inner()) = delay;
    }

    /// A snapshot of what it saw.
    pub fn stats(&self) -> ReceiverStats {
        self.inner.stats.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Stops it.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        let _ = (&mut self.task).await;
    }
}
