//! The axum receiver over real HTTP on loopback: a signed delivery is handled once, a
//! duplicate is acknowledged but not handled again, tampered and malformed deliveries get
//! 400 with their stable code, a failing handler gives 500 and its retry is handled, an
//! oversized body gives 413. Deliveries are signed here with plain HMAC-SHA256, not with
//! postwire-core, so the test does not take the library's word for it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use hmac::{Hmac, Mac};
use postwire_core::{Event, EventData, Secret};
use postwire_example_axum_receiver::{EventHandler, router};
use serde_json::{Value, json};
use sha2::Sha256;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwXmvd4nP3pHo=";

#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<Event>>,
    fail_next: AtomicUsize,
}

impl EventHandler for Recorder {
    fn handle(&self, event: Event) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + '_>> {
        Box::pin(async move {
            if self.fail_next.load(Ordering::SeqCst) > 0 {
                self.fail_next.fetch_sub(1, Ordering::SeqCst);
                return Err("the database is down (simulated)".into());
            }
            self.events.lock().unwrap().push(event);
            Ok(())
        })
    }
}

impl Recorder {
    fn count(&self, id: &str) -> usize {
        self.events.lock().unwrap().iter().filter(|e| e.id() == id).count()
    }
}

async fn start() -> (String, Arc<Recorder>) {
    let recorder = Arc::new(Recorder::default());
    let app = router(Secret::parse(SECRET).unwrap(), recorder.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/webhooks/postwire"), recorder)
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn sign(secret: &str, id: &str, ts: i64, body: &str) -> String {
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.trim_start_matches("whsec_"))
        .unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{ts}.{body}").as_bytes());
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    )
}

fn published_body(id: &str) -> String {
    json!({
        "id": id, "type": "post.published", "createdAt": "2026-11-22T09:00:00.000Z", "workspaceId": "ws_northwind",
        "data": { "post": {
            "id": "post_1", "externalId": "cms-2231", "group": "grp_1", "state": "PUBLISHED",
            "publishDate": "2026-11-22T09:00:00.000Z",
            "integration": { "id": "int_1", "providerIdentifier": "linkedin", "name": "Northwind on LinkedIn" },
            "releaseURL": "https://www.linkedin.com/feed/update/1", "releaseId": "urn:li:share:1", "error": null
        }}
    })
    .to_string()
}

/// POSTs `body` with the three headers (any of them `None` is left out); status and JSON.
async fn send(url: &str, id: Option<&str>, ts: Option<String>, sig: Option<String>, body: String) -> (u16, Value) {
    let mut req = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .body(body);
    if let Some(id) = id {
        req = req.header("webhook-id", id);
    }
    if let Some(ts) = ts {
        req = req.header("webhook-timestamp", ts);
    }
    if let Some(sig) = sig {
        req = req.header("webhook-signature", sig);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}")),
    )
}

async fn send_signed(url: &str, id: &str, body: &str) -> (u16, Value) {
    let ts = now();
    send(
        url,
        Some(id),
        Some(ts.to_string()),
        Some(sign(SECRET, id, ts, body)),
        body.to_string(),
    )
    .await
}

fn assert_error(got: &(u16, Value), status: u16, code: &str) {
    assert_eq!(got.0, status, "{}", got.1);
    assert_eq!(got.1["code"], code, "{}", got.1);
    assert_eq!(got.1["statusCode"], status);
    assert!(got.1["message"].as_str().is_some_and(|m| !m.is_empty()));
}

#[tokio::test]
async fn signed_delivery_is_handled_once_and_typed() {
    let (url, rec) = start().await;
    let body = published_body("msg_signed_1");
    let got = send_signed(&url, "msg_signed_1", &body).await;
    assert_eq!(got, (200, json!({ "received": true, "duplicate": false })));
    let events = rec.events.lock().unwrap().clone();
    assert_eq!(events.len(), 1);
    match &events[0].data() {
        EventData::PostPublished(d) => assert_eq!(d.post.release_id(), Some("urn:li:share:1")),
        other => panic!("expected post.published, got {other:?}"),
    }
}

#[tokio::test]
async fn duplicate_is_acknowledged_but_not_handled_again() {
    let (url, rec) = start().await;
    let body = published_body("msg_dup_1");
    assert_eq!(send_signed(&url, "msg_dup_1", &body).await.0, 200);
    // The sender's retry: same id and body, a new timestamp and signature.
    let again = send_signed(&url, "msg_dup_1", &body).await;
    assert_eq!(
        again,
        (200, json!({ "received": true, "duplicate": true })),
        "a duplicate must be 2xx"
    );
    assert_eq!(rec.count("msg_dup_1"), 1);
}

#[tokio::test]
async fn tampered_and_malformed_deliveries_are_refused_with_their_code() {
    let (url, rec) = start().await;
    let id = "msg_tamper_1";
    let body = published_body(id);
    let ts = now();
    let sig = sign(SECRET, id, ts, &body);
    let tampered = body.replace("PUBLISHED", "ERROR");
    assert_error(
        &send(&url, Some(id), Some(ts.to_string()), Some(sig.clone()), tampered).await,
        400,
        "invalid_signature",
    );
    let other_secret = "whsec_dGhpcyBpcyBhbm90aGVyIHNlY3JldCwgMzIgYnl0ZXMh";
    let wrong = sign(other_secret, id, ts, &body);
    assert_error(
        &send(&url, Some(id), Some(ts.to_string()), Some(wrong), body.clone()).await,
        400,
        "invalid_signature",
    );
    assert_error(
        &send(&url, Some(id), Some(ts.to_string()), None, body.clone()).await,
        400,
        "missing_header",
    );
    assert_error(
        &send(&url, None, Some(ts.to_string()), Some(sig.clone()), body.clone()).await,
        400,
        "missing_header",
    );
    assert_error(
        &send(&url, Some(id), Some("12ab".into()), Some(sig.clone()), body.clone()).await,
        400,
        "invalid_header",
    );
    let old = now() - 3600;
    assert_error(
        &send(
            &url,
            Some(id),
            Some(old.to_string()),
            Some(sign(SECRET, id, old, &body)),
            body.clone(),
        )
        .await,
        400,
        "timestamp_too_old",
    );
    // Signed, but not an event of the API; and an envelope id that differs from webhook-id.
    assert_error(&send_signed(&url, id, "not json").await, 400, "invalid_payload");
    assert_error(
        &send_signed(&url, id, &published_body("msg_other")).await,
        400,
        "invalid_payload",
    );
    assert_eq!(rec.events.lock().unwrap().len(), 0, "nothing refused was handled");
    // The refused attempts did not mark the id as seen.
    assert_eq!(send_signed(&url, id, &body).await.1["duplicate"], false);
}

#[tokio::test]
async fn failing_handler_gives_500_and_the_retry_is_handled() {
    let (url, rec) = start().await;
    rec.fail_next.store(1, Ordering::SeqCst);
    let body = published_body("msg_fail_1");
    assert_error(&send_signed(&url, "msg_fail_1", &body).await, 500, "handler_failed");
    assert_eq!(rec.count("msg_fail_1"), 0);
    assert_eq!(
        send_signed(&url, "msg_fail_1", &body).await,
        (200, json!({ "received": true, "duplicate": false }))
    );
    assert_eq!(rec.count("msg_fail_1"), 1);
}

#[tokio::test]
async fn oversized_body_and_unknown_routes_get_json_errors() {
    let (url, rec) = start().await;
    let big = "x".repeat(2 * 1024 * 1024);
    assert_error(&send_signed(&url, "msg_big", &big).await, 413, "payload_too_large");
    let res = reqwest::get(url.replace("/webhooks/postwire", "/nope")).await.unwrap();
    assert_eq!(res.status().as_u16(), 404);
    let res = reqwest::get(&url).await.unwrap();
    assert_eq!(res.status().as_u16(), 405, "GET on the webhook route");
    assert_eq!(rec.events.lock().unwrap().len(), 0);
}
