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

/// Reads until the peer closes (or `limit` passes); returns what came and when it closed.
async fn read_until_closed(stream: &mut tokio::net::TcpStream, limit: Duration) -> Option<Duration> {
    use tokio::io::AsyncReadExt;
    let started = Instant::now();
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(limit.saturating_sub(started.elapsed()), stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return Some(started.elapsed()),
            Ok(Ok(_)) => continue,
            Err(_) => return None,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_listener_cuts_off_slow_scrapers_and_caps_its_connections() {
    use postwire_server::listener::ConnectionLimits;
    use postwire_server::server::METRICS_MAX_CONNECTIONS;
    use tokio::io::AsyncWriteExt;

    let h = Harness::start_with(common::Options {
        connection_limits: ConnectionLimits {
            header_read_timeout: Duration::from_secs(1),
            ..ConnectionLimits::default()
        },
        ..common::Options::default()
    })
    .await;
    let addr = h.running().metrics_addr().expect("metrics are served");

    // Half a request head, then nothing: closed after the header timeout.
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .await
        .unwrap();
    let closed = read_until_closed(&mut slow, Duration::from_secs(5)).await;
    assert!(
        closed.is_some_and(|after| after < Duration::from_secs(3)),
        "a slow scraper was held open: {closed:?}"
    );

    // Idle connections up to the cap (and past it): those past it are closed at once,
    // and once the idle ones time out, scraping works again.
    let mut idle = Vec::new();
    for _ in 0..METRICS_MAX_CONNECTIONS + 10 {
        idle.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    let mut refused = 0;
    for s in idle.iter_mut().skip(METRICS_MAX_CONNECTIONS) {
        if read_until_closed(s, Duration::from_millis(500)).await.is_some() {
            refused += 1;
        }
    }
    assert_eq!(
        refused, 10,
        "connections past the cap of {METRICS_MAX_CONNECTIONS} are closed"
    );
    for s in idle.iter_mut().take(METRICS_MAX_CONNECTIONS) {
        assert!(read_until_closed(s, Duration::from_secs(5)).await.is_some());
    }
    let (text, _) = scrape(&h).await;
    assert!(text.contains("postwire_paused_subscriptions"));
    h.stop().await;
}
