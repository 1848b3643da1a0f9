//! A server exposed to slow, idle, malformed and abusive clients, over real TCP: read
//! timeouts, the connection cap, error bodies hyper writes itself, URL normalisation,
//! duplicate JSON keys, and the spec's limits (`plan_limit`, `quota_exceeded`, the
//! per-address limit on unauthenticated calls).

mod common;

use std::time::{Duration, Instant};

use common::{Harness, INGEST, Options, PUBLIC_URL};
use postwire_server::limits::Limits;
use postwire_server::listener::ConnectionLimits;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn limits(header: u64, body: u64, max_connections: usize) -> ConnectionLimits {
    ConnectionLimits {
        header_read_timeout: Duration::from_secs(header),
        body_read_timeout: Duration::from_secs(body),
        max_connections,
    }
}

async fn start(connection_limits: ConnectionLimits, limits: Limits) -> Harness {
    Harness::start_with(Options {
        connection_limits,
        limits,
        ..Options::default()
    })
    .await
}

fn addr(h: &Harness) -> std::net::SocketAddr {
    h.running().local_addr()
}

/// Reads until the peer closes (or `limit` passes: a failure). Returns what came and when
/// the connection ended.
async fn read_to_close(stream: &mut TcpStream, limit: Duration) -> (String, Duration) {
    let started = Instant::now();
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(limit.saturating_sub(started.elapsed()), stream.read(&mut buf)).await {
            Err(_) => panic!("the server kept the connection open for more than {limit:?}"),
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => all.extend_from_slice(&buf[..n]),
        }
    }
    (String::from_utf8_lossy(&all).into_owned(), started.elapsed())
}

/// Status and JSON body of a raw HTTP/1.1 answer.
fn parse_answer(raw: &str) -> (u16, Value) {
    let status: u16 = raw.get(9..12).unwrap_or("0").parse().unwrap_or(0);
    let body = raw.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

fn assert_spec_error(body: &Value, status: u16, code: &str) {
    assert_eq!(body["statusCode"], status, "{body}");
    assert_eq!(body["code"], code, "{body}");
    assert!(body["message"].is_string(), "{body}");
    assert_eq!(body.as_object().unwrap().len(), 3, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_header_and_slow_body_clients_are_cut_off_while_others_are_served() {
    let h = start(limits(1, 1, 1000), Limits::default()).await;
    let a = addr(&h);

    // Half a request head, then nothing.
    let mut slow_head = TcpStream::connect(a).await.unwrap();
    slow_head
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .await
        .unwrap();

    // A full head declaring 1000 bytes, then one byte every 200 ms.
    let mut slow_body = TcpStream::connect(a).await.unwrap();
    let head = format!(
        "POST /internal/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {INGEST}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{"
    );
    slow_body.write_all(head.as_bytes()).await.unwrap();
    let (mut body_read, mut body_write) = slow_body.into_split();
    let drip = tokio::spawn(async move {
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            if body_write.write_all(b" ").await.is_err() {
                return;
            }
        }
    });

    // Meanwhile the server answers others at once.
    for _ in 0..5 {
        let started = Instant::now();
        let r = h.send("GET", "/healthz", None, None).await;
        assert_eq!(r.status, 200);
        assert!(started.elapsed() < Duration::from_millis(500));
    }

    let (got, after) = read_to_close(&mut slow_head, Duration::from_secs(5)).await;
    assert!(got.is_empty(), "no answer to half a head: {got:?}");
    assert!(after < Duration::from_secs(3), "slow head cut off after {after:?}");

    let started = Instant::now();
    let mut raw = Vec::new();
    let n = tokio::time::timeout(Duration::from_secs(5), body_read.read_to_end(&mut raw))
        .await
        .expect("the slow body was not cut off within 5 s");
    let _ = n;
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (status, body) = parse_answer(&raw);
    assert_eq!(status, 408, "{raw}");
    assert_spec_error(&body, 408, "request_timeout");
    assert!(started.elapsed() < Duration::from_secs(3));
    drip.abort();
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_thousand_idle_connections_do_not_stop_the_server_and_are_closed_after_the_timeout() {
    const IDLE: usize = 5000;
    // Both ends of every connection live in this process.
    let have = rlimit::increase_nofile_limit(4 * IDLE as u64).unwrap();
    assert!(
        have >= (2 * IDLE + 500) as u64,
        "need more file descriptors than {have}"
    );
    // A header timeout of 6 s: opening 5,000 connections takes a second or two, longer
    // on a loaded machine, and none may time out before all are open.
    let h = start(limits(6, 6, 10_000), Limits::default()).await;
    let a = addr(&h);
    let started = Instant::now();
    let mut idle = Vec::with_capacity(IDLE);
    for _ in 0..IDLE {
        idle.push(TcpStream::connect(a).await.unwrap());
    }
    common::eventually("every idle connection accepted", || {
        h.running().open_connections() >= IDLE
    })
    .await;
    let opened = started.elapsed();
    // With all of them open, the API still answers at once.
    let t = Instant::now();
    let r = h.send("GET", "/healthz", None, None).await;
    assert_eq!(r.status, 200);
    let answered = t.elapsed();
    assert!(answered < Duration::from_secs(1), "{answered:?}");
    // They are closed by the header-read timeout, all of them.
    let closed_within = Duration::from_secs(20);
    let waiting = Instant::now();
    let mut closed = 0;
    for mut s in idle {
        let left = closed_within.saturating_sub(waiting.elapsed());
        let mut b = [0u8; 16];
        if let Ok(Ok(0)) = tokio::time::timeout(left, s.read(&mut b)).await {
            closed += 1;
        }
    }
    assert_eq!(closed, IDLE);
    common::eventually("the connection count falls back", || {
        h.running().open_connections() <= 1
    })
    .await;
    eprintln!(
        "{IDLE} idle connections: opened and accepted in {opened:?}; /healthz answered in {answered:?} meanwhile; all closed by the 6 s timeout {:?} after the wait began",
        waiting.elapsed()
    );
    // A new connection is served (the harness's pooled one was idle too, so it was
    // closed by the same timeout: a client must not reuse it).
    let fresh = reqwest::Client::builder().no_proxy().build().unwrap();
    let r = fresh.get(format!("{}/healthz", h.base)).send().await.unwrap();
    assert_eq!(r.status(), 200);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_connection_cap_new_connections_are_closed_and_service_resumes_below_it() {
    let h = start(limits(30, 30, 20), Limits::default()).await;
    let a = addr(&h);
    // The harness's HTTP client keeps a pooled connection of its own.
    let baseline = h.running().open_connections();
    let mut held = Vec::new();
    for _ in baseline..20 {
        held.push(TcpStream::connect(a).await.unwrap());
    }
    common::eventually("20 connections open", || h.running().open_connections() == 20).await;
    let mut extra = TcpStream::connect(a).await.unwrap();
    let (got, after) = read_to_close(&mut extra, Duration::from_secs(2)).await;
    assert!(got.is_empty());
    assert!(after < Duration::from_secs(1));
    assert_eq!(h.running().open_connections(), 20);
    drop(held);
    common::eventually("connections released", || h.running().open_connections() == baseline).await;
    let r = h.send("GET", "/healthz", None, None).await;
    assert_eq!(r.status, 200);
    h.stop().await;
}

async fn raw_exchange(h: &Harness, request: &[u8]) -> (u16, Value, Duration) {
    let mut s = TcpStream::connect(addr(h)).await.unwrap();
    s.write_all(request).await.unwrap();
    let (raw, after) = read_to_close(&mut s, Duration::from_secs(5)).await;
    let (status, body) = parse_answer(&raw);
    (status, body, after)
}

#[tokio::test]
async fn errors_raised_before_routing_carry_the_spec_body() {
    let h = start(limits(5, 5, 100), Limits::default()).await;
    // A NUL byte in the Authorization header.
    let (status, body, _) = raw_exchange(
        &h,
        b"GET /public/v1/workspaces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ab\0cd\r\n\r\n",
    )
    .await;
    assert_eq!(status, 400);
    assert_spec_error(&body, 400, "invalid_request");
    // A method with characters no method may have.
    let (status, body, _) = raw_exchange(&h, b"G(T /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert_eq!(status, 400);
    assert_spec_error(&body, 400, "invalid_request");
    // A method no route has.
    let (status, body, _) = raw_exchange(
        &h,
        b"BREW /public/v1/workspaces HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 405);
    assert_spec_error(&body, 405, "method_not_allowed");
    // Headers far too large.
    let big = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(600_000)
    );
    let (status, body, _) = raw_exchange(&h, big.as_bytes()).await;
    assert_eq!(status, 431);
    assert_spec_error(&body, 431, "invalid_request");
    // A 10 MiB Content-Length is refused before a byte of the body is sent.
    let (status, body, after) = raw_exchange(
        &h,
        b"POST /public/v1/workspaces/ws_a/webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10485760\r\n\r\n",
    )
    .await;
    assert_eq!(status, 400);
    assert_spec_error(&body, 400, "invalid_request");
    assert!(body["message"].as_str().unwrap().contains("larger than the limit"));
    assert!(
        after < Duration::from_secs(2),
        "answered without waiting for the body: {after:?}"
    );
    h.stop().await;
}

#[tokio::test]
async fn urls_are_stored_as_they_will_be_called_and_whitespace_or_control_characters_are_refused() {
    let h = Harness::start().await;
    let w = h.writer().await;
    for bad in [
        format!("{PUBLIC_URL}/a\r\nX-Injected: 1"),
        format!("{PUBLIC_URL}/a b"),
        format!("{PUBLIC_URL}/a\tb"),
        format!(" {PUBLIC_URL}"),
        format!("{PUBLIC_URL}\u{7f}"),
    ] {
        let r = h
            .json(
                "POST",
                "/public/v1/workspaces/ws_a/webhooks",
                &w,
                json!({"name": "n", "url": bad}),
            )
            .await;
        let m = r.messages();
        assert!(m.iter().any(|m| m.contains("whitespace or control")), "{bad:?}: {m:?}");
    }
    let created = h
        .json(
            "POST",
            "/public/v1/workspaces/ws_a/webhooks",
            &w,
            json!({"name": "n", "url": "HTTPS://93.184.216.34:443/a/../b/%7e?q=1"}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let id = created.json["id"].as_str().unwrap().to_owned();
    assert_eq!(created.json["url"], "https://93.184.216.34/b/%7e?q=1");
    let shown = h
        .send(
            "GET",
            &format!("/public/v1/workspaces/ws_a/webhooks/{id}"),
            Some(&w),
            None,
        )
        .await;
    assert_eq!(shown.json["url"], "https://93.184.216.34/b/%7e?q=1", "{}", shown.text);
    let updated = h
        .json(
            "PATCH",
            &format!("/public/v1/workspaces/ws_a/webhooks/{id}"),
            &w,
            json!({"url": "https://93.184.216.34/c\r\nX: 1"}),
        )
        .await;
    updated.assert_error(400, "invalid_request");
    let updated = h
        .json(
            "PATCH",
            &format!("/public/v1/workspaces/ws_a/webhooks/{id}"),
            &w,
            json!({"url": "https://93.184.216.34:443/./c"}),
        )
        .await;
    assert_eq!(updated.json["url"], "https://93.184.216.34/c", "{}", updated.text);
    h.stop().await;
}

#[tokio::test]
async fn duplicate_json_keys_are_refused_on_every_json_body() {
    let h = Harness::start().await;
    let w = h.writer().await;
    let cases: Vec<(&str, String, Option<&str>, String)> = vec![
        (
            "POST",
            "/public/v1/workspaces/ws_a/webhooks".to_owned(),
            Some(w.as_str()),
            format!(r#"{{"name":"x","url":"{PUBLIC_URL}","name":"y"}}"#),
        ),
        (
            "PUT",
            "/internal/v1/workspaces/ws_a".to_owned(),
            Some(INGEST),
            r#"{"name":"a","name":"b"}"#.to_owned(),
        ),
        (
            "POST",
            "/internal/v1/events".to_owned(),
            Some(INGEST),
            r#"{"changes":[{"kind":"account","kind":"post"}]}"#.to_owned(),
        ),
    ];
    for (method, path, token, body) in cases {
        let r = h.send(method, &path, token, Some(&body)).await;
        let m = r.messages();
        assert!(m.iter().any(|m| m.contains("duplicate key")), "{path}: {m:?}");
    }
    let sub = h.subscribe(&w, PUBLIC_URL).await;
    let id = sub["id"].as_str().unwrap();
    let r = h
        .send(
            "PATCH",
            &format!("/public/v1/workspaces/ws_a/webhooks/{id}"),
            Some(&w),
            Some(r#"{"name":"x","events":[],"name":"y"}"#),
        )
        .await;
    assert!(r.messages().iter().any(|m| m.contains("duplicate key `name`")));
    // Nested objects are checked too; the same key in two objects is fine.
    let r = h
        .send(
            "PUT",
            "/internal/v1/workspaces/ws_a/integrations/acc_x",
            Some(INGEST),
            Some(r#"{"name":"n","providerIdentifier":"x","picture":{"a":1,"a":2}}"#),
        )
        .await;
    assert!(
        r.messages().iter().any(|m| m.contains("duplicate key `a`")),
        "{}",
        r.text
    );
    h.stop().await;
}

#[tokio::test]
async fn a_workspace_at_its_subscription_limit_gets_plan_limit() {
    let h = start(
        ConnectionLimits::default(),
        Limits {
            max_subscriptions_per_workspace: 2,
            unauthenticated_per_hour: 1000,
            ..Limits::default()
        },
    )
    .await;
    let w = h.writer().await;
    let first = h.subscribe(&w, PUBLIC_URL).await;
    h.subscribe(&w, PUBLIC_URL).await;
    let over = h
        .json(
            "POST",
            "/public/v1/workspaces/ws_a/webhooks",
            &w,
            json!({"name": "third", "url": PUBLIC_URL}),
        )
        .await;
    over.assert_error(403, "plan_limit");
    // Concurrent creations cannot overshoot either.
    let id = first["id"].as_str().unwrap();
    let r = h
        .send(
            "DELETE",
            &format!("/public/v1/workspaces/ws_a/webhooks/{id}"),
            Some(&w),
            None,
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.text);
    let body = json!({"name": "race", "url": PUBLIC_URL});
    let tries = (0..8).map(|_| h.json("POST", "/public/v1/workspaces/ws_a/webhooks", &w, body.clone()));
    let results = futures_util::future::join_all(tries).await;
    assert_eq!(results.iter().filter(|r| r.status == 201).count(), 1);
    for r in results.iter().filter(|r| r.status != 201) {
        r.assert_error(403, "plan_limit");
    }
    let list = h
        .send("GET", "/public/v1/workspaces/ws_a/webhooks", Some(&w), None)
        .await;
    assert_eq!(list.json["data"].as_array().unwrap().len(), 2);
    h.stop().await;
}

fn account_change(ws: &str, change: &str) -> Value {
    json!({"kind": "account", "workspaceId": ws, "change": change,
        "integration": {"id": "acc_a1", "name": "Account acc_a1", "providerIdentifier": "x"},
        "reason": "reconnect_required"})
}

#[tokio::test]
async fn the_daily_event_quota_answers_quota_exceeded_and_accepts_nothing_of_the_batch() {
    let h = start(
        ConnectionLimits::default(),
        Limits {
            daily_event_quota: 3,
            unauthenticated_per_hour: 1000,
            ..Limits::default()
        },
    )
    .await;
    let two = json!({"changes": [account_change("ws_a", "disconnected"), account_change("ws_a", "reconnected")]});
    let r = h.ingest("POST", "/internal/v1/events", two.clone()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = h.ingest("POST", "/internal/v1/events", two.clone()).await;
    r.assert_error(429, "quota_exceeded");
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!(retry > 0 && retry <= 86_400);
    // Another workspace has its own quota; the first still has one event left.
    let other = json!({"changes": [account_change("ws_b", "disconnected")]});
    let r = h.ingest("POST", "/internal/v1/events", other).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let one = json!({"changes": [account_change("ws_a", "disconnected")]});
    let r = h.ingest("POST", "/internal/v1/events", one.clone()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = h.ingest("POST", "/internal/v1/events", one.clone()).await;
    r.assert_error(429, "quota_exceeded");
    // The next UTC day the quota is whole again.
    h.api_clock.advance_millis(86_400_000);
    let r = h.ingest("POST", "/internal/v1/events", two).await;
    assert_eq!(r.status, 200, "{}", r.text);
    h.stop().await;
}

#[tokio::test]
async fn an_address_past_its_unauthenticated_allowance_is_refused_before_its_token_is_read() {
    let h = start(
        ConnectionLimits::default(),
        Limits {
            unauthenticated_per_hour: 3,
            ..Limits::default()
        },
    )
    .await;
    let w = h.writer().await;
    for _ in 0..3 {
        let r = h.send("GET", "/public/v1/workspaces", Some("pw_wrong"), None).await;
        r.assert_error(401, "unauthorized");
    }
    let r = h.send("GET", "/public/v1/workspaces", Some(&w), None).await;
    r.assert_error(429, "rate_limited");
    assert!(r.header("retry-after").is_some());
    let r = h.send("POST", "/internal/v1/events", Some(INGEST), Some("{}")).await;
    r.assert_error(429, "rate_limited");
    h.api_clock.advance_millis(3_600_000);
    let r = h.send("GET", "/public/v1/workspaces", Some(&w), None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_running_server_applies_retention_to_finished_deliveries_only() {
    // Keep nothing finished, look every 50 ms: delivered history goes at once, while a
    // delivery waiting for its retry stays.
    let h = Harness::start_with(Options {
        retention: Some(postwire_sender::retention::RetentionPolicy {
            keep: Duration::ZERO,
            batch: 10,
            interval: Duration::from_millis(50),
        }),
        ..Options::default()
    })
    .await;
    let w = h.writer().await;
    let good = common::receiver().await;
    let strict = common::receiver().await;
    let delivered = h.subscribe(&w, &good.url()).await;
    good.set_secrets(vec![
        postwire_core::Secret::parse(delivered["secret"].as_str().unwrap()).unwrap(),
    ]);
    let refused = h.subscribe(&w, &strict.url()).await;
    strict.set_secrets(vec![postwire_core::Secret::generate().unwrap()]);
    for i in 0..3 {
        h.post_event("ws_a", &format!("p{i}"), &format!("e{i}"), "scheduled")
            .await;
    }
    let sender = h.running().state().sender.clone();
    let started = Instant::now();
    loop {
        let kept = sender
            .delivery_counts(Some(delivered["id"].as_str().unwrap()))
            .await
            .unwrap();
        if good.stats().handled == 3 && kept.delivered == 0 && kept.pending == 0 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "{kept:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let waiting = sender
        .delivery_counts(Some(refused["id"].as_str().unwrap()))
        .await
        .unwrap();
    assert_eq!(waiting.pending, 3, "deliveries waiting for a retry are kept");
    // Their events stay too: posts/lookup still finds them.
    let r = h
        .send(
            "GET",
            "/public/v1/workspaces/ws_a/posts/lookup?postId=p1",
            Some(&w),
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["data"].as_array().map(Vec::len), Some(1), "{}", r.text);
    good.stop().await;
    strict.stop().await;
    h.stop().await;
}
