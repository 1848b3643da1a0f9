//! `/metrics` on its own listener parses as Prometheus text, and its counters match the
//! deliveries and API calls made; every API answer carries an `X-Request-Id`.

mod common;

use std::time::{Duration, Instant};

use common::{Harness, receiver};
use postwire_core::Secret;
use serde_json::json;

fn value(v: &prometheus_parse::Value) -> f64 {
    match v {
        prometheus_parse::Value::Counter(x)
        | prometheus_parse::Value::Gauge(x)
        | prometheus_parse::Value::Untyped(x) => *x,
        // A histogram: its `+Inf` bucket, i.e. the number of observations.
        prometheus_parse::Value::Histogram(buckets) => buckets
            .iter()
            .find(|b| b.less_than.is_infinite())
            .map(|b| b.count)
            .unwrap_or(0.0),
        other => panic!("not a single value: {other:?}"),
    }
}

/// The value of `metric` with exactly these labels (0 when absent).
fn sample(scrape: &prometheus_parse::Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric)
        .find(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| value(&s.value))
        .unwrap_or(0.0)
}

async fn scrape(h: &Harness) -> (String, prometheus_parse::Scrape) {
    let addr = h.running().metrics_addr().expect("metrics are served");
    let resp = h.http.get(format!("http://{addr}/metrics")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let text = resp.text().await.unwrap();
    let parsed = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
    (text, parsed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_parse_and_count_the_deliveries_and_requests_made() {
    let h = Harness::start().await;
    let w = h.writer().await;
    let good = receiver().await;
    let strict = receiver().await;
    let sub = h.subscribe(&w, &good.url()).await;
    good.set_secrets(vec![Secret::parse(sub["secret"].as_str().unwrap()).unwrap()]);
    // This receiver knows no secret: it refuses every delivery (a non-2xx answer).
    h.subscribe(&w, &strict.url()).await;
    strict.set_secrets(vec![Secret::generate().unwrap()]);
    for i in 0..3 {
        h.post_event("ws_a", &format!("post-{i}"), &format!("ext-{i}"), "scheduled")
            .await;
    }
    let started = Instant::now();
    let (text, parsed) = loop {
        let (text, parsed) = scrape(&h).await;
        let delivered = sample(&parsed, "postwire_delivery_attempts_total", &[("outcome", "delivered")]);
        let refused = sample(
            &parsed,
            "postwire_delivery_attempts_total",
            &[("outcome", "http_error")],
        );
        if delivered >= 3.0 && refused >= 3.0 {
            break (text, parsed);
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "deliveries not counted: {text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    drop((text, parsed));
    // Once the outcomes are recorded, a scrape matches the store.
    let sender = h.running().state().sender.clone();
    let started = Instant::now();
    let counts = loop {
        let c = sender.delivery_counts(None).await.unwrap();
        if c.delivered == 3 && c.pending == 3 {
            break c;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "{c:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let (text, parsed) = scrape(&h).await;
    // Counters match what happened.
    assert_eq!(counts.delivered, 3);
    assert_eq!(good.stats().handled, 3);
    assert_eq!(
        sample(&parsed, "postwire_delivery_attempts_total", &[("outcome", "delivered")]),
        3.0
    );
    assert_eq!(
        sample(
            &parsed,
            "postwire_delivery_attempts_total",
            &[("outcome", "http_error")]
        ),
        3.0
    );
    assert_eq!(sample(&parsed, "postwire_delivery_latency_seconds", &[]), 3.0, "{text}");
    assert!(sample(&parsed, "postwire_claim_duration_seconds", &[]) >= 1.0);
    // The refused ones wait for their retry.
    assert_eq!(
        sample(&parsed, "postwire_deliveries", &[("state", "pending")]),
        counts.pending as f64
    );
    assert_eq!(counts.pending, 3);
    assert_eq!(sample(&parsed, "postwire_paused_subscriptions", &[]), 0.0);
    assert_eq!(
        sample(
            &parsed,
            "postwire_http_requests_total",
            &[
                ("method", "POST"),
                ("route", "/public/v1/workspaces/:workspaceId/webhooks"),
                ("status", "201")
            ]
        ),
        2.0,
        "{text}"
    );
    assert_eq!(
        sample(
            &parsed,
            "postwire_http_requests_total",
            &[("method", "POST"), ("route", "/internal/v1/events"), ("status", "200")]
        ),
        3.0
    );
    assert!(sample(&parsed, "postwire_http_connections_open", &[]) >= 1.0);

    // A pause shows at the next scrape.
    let id = sub["id"].as_str().unwrap();
    let r = h
        .json(
            "PUT",
            &format!("/public/v1/workspaces/ws_a/webhooks/{id}/enabled"),
            &w,
            json!({"enabled": false}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let request_id = r.header("x-request-id").unwrap().to_owned();
    assert_eq!(request_id.len(), 16);
    let (_, parsed) = scrape(&h).await;
    assert_eq!(sample(&parsed, "postwire_paused_subscriptions", &[]), 1.0);
    let other = h.send("GET", "/healthz", None, None).await;
    assert_ne!(other.header("x-request-id").unwrap(), request_id);
    good.stop().await;
    strict.stop().await;
    h.stop().await;
}
