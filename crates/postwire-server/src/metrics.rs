//! Prometheus metrics of `postwire serve`, on their own listener (`--metrics-addr`).
//!
//! What to watch in production, as metrics (names as exported):
//! * `postwire_delivery_attempts_total{outcome}`: attempts by outcome (`delivered`,
//!   `http_error`, `timeout`, `connection`, `dns`, `blocked_address`, `invalid_url`,
//!   `protocol`, `signing`); the failure rate is everything but `delivered` over the total;
//! * `postwire_delivery_latency_seconds`: publish to `2xx`, a histogram;
//! * `postwire_deliveries{state}`: the queue (`pending`, `waiting`, `held`), read from
//!   the store at each scrape;
//! * `postwire_paused_subscriptions`: read from the store at each scrape;
//! * `postwire_claim_duration_seconds`: how long the dispatcher's claims take;
//! * `postwire_http_requests_total{method, route, status}`: API requests by route
//!   template (never the raw path, so ids do not multiply series; `:param` for each
//!   path parameter) and status;
//! * `postwire_http_connections_open`: open client connections.
//!
//! The registry belongs to one server (no process-wide recorder), so several servers in
//! one process (tests) keep separate counts. The dispatcher reports through
//! [`postwire_sender::observe::DeliveryObserver`]. The listener answers `GET /metrics`
//! only, in the OpenMetrics text format (which Prometheus reads).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use postwire_sender::Sender;
use postwire_sender::observe::DeliveryObserver;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::listener::ConnectionCounter;

type Labels = Vec<(String, String)>;

/// The server's metrics. Cheap to clone; clones share the counts.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Registry,
    attempts: Family<Labels, Counter>,
    latency: Histogram,
    claims: Histogram,
    requests: Family<Labels, Counter>,
    deliveries: Family<Labels, Gauge>,
    paused: Gauge,
    connections: Gauge,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics(…)")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// A fresh registry with every metric at zero.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("postwire");
        let attempts = Family::<Labels, Counter>::default();
        let latency = Histogram::new([
            0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0, 3600.0, 21600.0, 86400.0,
        ]);
        let claims = Histogram::new([0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0]);
        let requests = Family::<Labels, Counter>::default();
        let deliveries = Family::<Labels, Gauge>::default();
        let paused = Gauge::default();
        let connections = Gauge::default();
        registry.register(
            "delivery_attempts",
            "Delivery attempts by outcome (delivered, http_error, timeout, connection, dns, blocked_address, invalid_url, protocol)",
            attempts.clone(),
        );
        registry.register(
            "delivery_latency_seconds",
            "Time from publish to the 2xx that delivered it",
            latency.clone(),
        );
        registry.register(
            "claim_duration_seconds",
            "Time the dispatcher's claims of due deliveries take",
            claims.clone(),
        );
        registry.register(
            "http_requests",
            "API requests by method, route template and status",
            requests.clone(),
        );
        registry.register(
            "deliveries",
            "Unfinished deliveries by state (pending, waiting, held), read at scrape time",
            deliveries.clone(),
        );
        registry.register(
            "paused_subscriptions",
            "Subscriptions paused by request or by failures, read at scrape time",
            paused.clone(),
        );
        registry.register("http_connections_open", "Open client connections", connections.clone());
        Metrics {
            inner: Arc::new(Inner {
                registry,
                attempts,
                latency,
                claims,
                requests,
                deliveries,
                paused,
                connections,
            }),
        }
    }

    /// Counts one API request. The route template's `{param}` is written `:param`
    /// (`/public/v1/workspaces/:workspaceId/webhooks`): braces are legal in label values,
    /// but several text-format parsers cut a label set at the first `}`.
    pub fn request(&self, method: &str, route: &str, status: u16) {
        let route: String = route
            .split('/')
            .map(|seg| match seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(param) => format!(":{param}"),
                None => seg.to_owned(),
            })
            .collect::<Vec<_>>()
            .join("/");
        self.inner
            .requests
            .get_or_create(&vec![
                ("method".to_owned(), method.to_owned()),
                ("route".to_owned(), route),
                ("status".to_owned(), status.to_string()),
            ])
            .inc();
    }

    /// Reads the gauges from `sender` and `connections`, then renders every metric.
    pub async fn render(&self, sender: &Sender, connections: &ConnectionCounter) -> Result<String, String> {
        // What is queued, through the queue's indexes: a count of every delivery kept
        // would grow with the history and, on SQLite, hold up every write behind it.
        let counts = sender.queue_counts().await.map_err(|e| e.to_string())?;
        let paused = sender.paused_subscription_count().await.map_err(|e| e.to_string())?;
        for (state, n) in [
            ("pending", counts.pending),
            ("waiting", counts.waiting),
            ("held", counts.held),
        ] {
            self.inner
                .deliveries
                .get_or_create(&vec![("state".to_owned(), state.to_owned())])
                .set(n as i64);
        }
        self.inner.paused.set(paused as i64);
        self.inner.connections.set(connections.open() as i64);
        let mut out = String::new();
        encode(&mut out, &self.inner.registry).map_err(|e| e.to_string())?;
        Ok(out)
    }
}

impl DeliveryObserver for Metrics {
    fn attempt_finished(&self, outcome: &'static str, publish_to_success: Option<Duration>) {
        self.inner
            .attempts
            .get_or_create(&vec![("outcome".to_owned(), outcome.to_owned())])
            .inc();
        if let Some(latency) = publish_to_success {
            self.inner.latency.observe(latency.as_secs_f64());
        }
    }

    fn claimed(&self, took: Duration, _deliveries: usize) {
        self.inner.claims.observe(took.as_secs_f64());
    }
}

#[derive(Clone)]
struct MetricsState {
    metrics: Metrics,
    sender: Sender,
    connections: ConnectionCounter,
}

async fn serve_metrics(State(s): State<MetricsState>) -> Response {
    match s.metrics.render(&s.sender, &s.connections).await {
        Ok(text) => {
            let mut r = text.into_response();
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
            );
            r
        }
        Err(e) => {
            tracing::error!(error = %e, "rendering metrics failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "metrics unavailable\n").into_response()
        }
    }
}

/// The metrics listener's router: `GET /metrics`.
pub fn router(metrics: Metrics, sender: Sender, connections: ConnectionCounter) -> Router {
    Router::new()
        .route("/metrics", get(serve_metrics))
        .with_state(MetricsState {
            metrics,
            sender,
            connections,
        })
}
