//! Trace export (`--features otel`): a real `postwire serve` sends its spans over
//! OTLP/HTTP to a loopback collector: an API request as a `GET /healthz` span with its
//! status, a delivery attempt as a `delivery_attempt` span, under the service name
//! `postwire`; the last spans are sent at shutdown. Without the feature, the flag is
//! refused with a clear message (`cli.rs`/unit tests).
#![cfg(feature = "otel")]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::routing::post;

fn postwire() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_postwire"));
    for (k, _) in std::env::vars() {
        if k.starts_with("POSTWIRE_") || k.starts_with("OTEL_") {
            c.env_remove(k);
        }
    }
    c
}

/// What the collector received: (content type, body) per export request.
type Exports = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn serve_exports_request_and_delivery_spans_to_an_otlp_collector() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let exports: Exports = Arc::default();
    let collector = {
        let exports = exports.clone();
        rt.block_on(async move {
            let app = axum::Router::new()
                .route(
                    "/v1/traces",
                    post(move |headers: axum::http::HeaderMap, body: Bytes| {
                        let exports = exports.clone();
                        async move {
                            let ct = headers
                                .get("content-type")
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or("")
                                .to_owned();
                            exports.lock().unwrap().push((ct, body.to_vec()));
                            ""
                        }
                    }),
                )
                .route("/hook", post(|| async { "ok" }));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
            addr
        })
    };

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("otel.db");
    let db_s = db.to_str().unwrap();
    let out = postwire()
        .args([
            "token",
            "create",
            "--create-database",
            "--db",
            db_s,
            "--workspace",
            "ws_1",
            "--scope",
            "webhooks:write",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();

    let mut child = postwire()
        .args(["serve", "--db", db_s, "--listen", "127.0.0.1:0"])
        .args(["--dangerously-allow-insecure-local-urls"])
        .args(["--otlp-endpoint", &format!("http://{collector}")])
        .env("POSTWIRE_INGEST_TOKEN", "otel-test-ingest-token-0123456789")
        .env("OTEL_BSP_SCHEDULE_DELAY", "200")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let base = loop {
        let line = lines.next().expect("serve started").unwrap();
        if let Some(b) = line.strip_prefix("listening on ") {
            break b.trim().to_owned();
        }
    };

    rt.block_on(async {
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let r = http.get(format!("{base}/healthz")).send().await.unwrap();
        assert_eq!(r.status(), 200);
        let r = http
            .post(format!("{base}/public/v1/workspaces/ws_1/webhooks"))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(format!(r#"{{"name":"otel","url":"http://{collector}/hook"}}"#))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
        let created: serde_json::Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
        let id = created["id"].as_str().unwrap();
        let r = http
            .post(format!("{base}/public/v1/workspaces/ws_1/webhooks/{id}/test"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202);
    });

    // Spans arrive in batches (every 200 ms here); wait for both kinds.
    let start = Instant::now();
    let seen = |needle: &[u8]| exports.lock().unwrap().iter().any(|(_, b)| contains(b, needle));
    while !(seen(b"GET /healthz") && seen(b"delivery_attempt")) {
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "spans not exported: {} requests",
            exports.lock().unwrap().len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let exported = exports.lock().unwrap().clone();
    assert!(
        exported.iter().all(|(ct, _)| ct == "application/x-protobuf"),
        "{exported:?}"
    );
    assert!(
        exported.iter().any(|(_, b)| contains(b, b"postwire")),
        "the service name"
    );
    assert!(seen(b"POST /public/v1/workspaces/"), "the span of the creation");
    // No token in any span.
    assert!(!exported.iter().any(|(_, b)| contains(b, token.as_bytes())));

    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}
