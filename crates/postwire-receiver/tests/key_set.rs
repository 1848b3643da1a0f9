//! `OnceLayer::with_key_set` (feature `key-set`) over real HTTP on loopback: a receiver given
//! only the URL of a published key set, served by an axum server on loopback that counts
//! its hits. Rotation mid-stream, a burst of forgeries (at most one fetch per interval),
//! bad documents (the cached keys kept), and 503 with no key to be had.
#![cfg(feature = "key-set")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Extension, Router};
use postwire_core::key_set::{PublishedKey, to_jwks_json};
use postwire_core::{Event, PublicKey, SigningKey, UnixTime};
use postwire_receiver::key_set::RemoteKeySet;
use postwire_receiver::{MemoryStore, OnceLayer};

/// The key-set server's document (or a bad answer), and its hits.
#[derive(Clone, Default)]
struct KeyServer {
    answer: Arc<Mutex<(u16, String)>>,
    hits: Arc<AtomicUsize>,
}

impl KeyServer {
    fn publish(&self, keys: &[PublicKey]) {
        let keys: Vec<PublishedKey> = keys
            .iter()
            .map(|&public_key| PublishedKey {
                public_key,
                not_before: None,
                expires_at: None,
            })
            .collect();
        *self.answer.lock().unwrap() = (200, to_jwks_json(&keys));
    }

    fn answer(&self, status: u16, body: &str) {
        *self.answer.lock().unwrap() = (status, body.to_owned());
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{addr}")
}

async fn key_server() -> (KeyServer, String) {
    let state = KeyServer::default();
    let s = state.clone();
    let router = Router::new().route(
        "/jwks.json",
        get(move || {
            let s = s.clone();
            async move {
                s.hits.fetch_add(1, Ordering::SeqCst);
                let (status, body) = s.answer.lock().unwrap().clone();
                (
                    StatusCode::from_u16(status).unwrap(),
                    [
                        (header::CONTENT_TYPE, "application/jwk-set+json"),
                        (header::CACHE_CONTROL, "public, max-age=300"),
                    ],
                    body,
                )
                    .into_response()
            }
        }),
    );
    let base = serve(router).await;
    (state, format!("{base}/jwks.json"))
}

/// A receiver whose handler counts the events it runs.
async fn receiver(keys: Arc<RemoteKeySet>) -> (String, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let router = Router::new()
        .route(
            "/hook",
            post(move |Extension(_event): Extension<Event>| {
                let r = r.clone();
                async move {
                    r.fetch_add(1, Ordering::SeqCst);
                    StatusCode::NO_CONTENT
                }
            }),
        )
        .route_layer(OnceLayer::with_key_set(keys, MemoryStore::new()));
    (format!("{}/hook", serve(router).await), runs)
}

static SEQ: AtomicUsize = AtomicUsize::new(0);
/// The refresh interval of the rotation test.
const INTERVAL: Duration = Duration::from_millis(1000);

async fn post_signed(client: &reqwest::Client, url: &str, key: &SigningKey) -> (u16, String, Option<String>) {
    let id = format!("msg_ks{}", SEQ.fetch_add(1, Ordering::SeqCst));
    let now = UnixTime::from_secs(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64,
    );
    let body = format!(
        r#"{{"id":"{id}","type":"webhook.test","createdAt":"2026-12-08T00:00:00.000Z","workspaceId":"ws","data":{{"message":"hi"}}}}"#
    );
    let sig = key.sign(&id, now, body.as_bytes()).unwrap().to_string();
    let res = client
        .post(url)
        .header("webhook-id", &id)
        .header("webhook-timestamp", now.as_secs().to_string())
        .header("webhook-signature", sig)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let retry_after = res.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    (status, res.text().await.unwrap(), retry_after)
}

#[tokio::test]
async fn rotation_is_followed_and_forgeries_fetch_at_most_once_per_interval() {
    let (server, url) = key_server().await;
    let a = SigningKey::generate().unwrap();
    let b = SigningKey::generate().unwrap();
    server.publish(&[a.public_key()]);
    let keys = Arc::new(RemoteKeySet::new(&url).unwrap().min_refresh_interval(INTERVAL));
    let (hook, runs) = receiver(keys.clone()).await;
    let client = reqwest::Client::new();
    let started = std::time::Instant::now();
    // At most one fetch per interval: the most fetches allowed since `started`.
    let most = || 1 + (started.elapsed().as_millis() / INTERVAL.as_millis()) as usize;
    for _ in 0..5 {
        assert_eq!(post_signed(&client, &hook, &a).await.0, 204);
    }
    assert_eq!(server.hits(), 1);

    // 30 forgeries at once, twice: none handled, at most one fetch per interval.
    let forger = SigningKey::generate().unwrap();
    for _ in 0..2 {
        let forged = futures_join(&client, &hook, &forger, 30).await;
        assert!(
            forged
                .iter()
                .all(|(status, body, _)| *status == 400 && body.contains("invalid_signature"))
        );
        assert!(
            server.hits() <= most(),
            "{} fetches in {:?}",
            server.hits(),
            started.elapsed()
        );
    }
    // After the interval: 30 more at once make exactly one fetch.
    tokio::time::sleep(INTERVAL + Duration::from_millis(50)).await;
    let before = server.hits();
    let forged = futures_join(&client, &hook, &forger, 30).await;
    assert!(forged.iter().all(|(status, _, _)| *status == 400));
    assert_eq!(server.hits(), before + 1);

    // The sender rotates: B signs, A stays published for the overlap.
    server.publish(&[b.public_key(), a.public_key()]);
    tokio::time::sleep(INTERVAL + Duration::from_millis(50)).await;
    let before = server.hits();
    assert_eq!(post_signed(&client, &hook, &b).await.0, 204);
    assert_eq!(post_signed(&client, &hook, &a).await.0, 204);
    assert_eq!(keys.public_keys(), vec![b.public_key(), a.public_key()]);
    assert_eq!(server.hits(), before + 1);
    assert_eq!(runs.load(Ordering::SeqCst), 7);
    assert_eq!(keys.fetch_count() as usize, server.hits());
}

async fn futures_join(
    client: &reqwest::Client,
    url: &str,
    key: &SigningKey,
    n: usize,
) -> Vec<(u16, String, Option<String>)> {
    let mut tasks = Vec::new();
    for _ in 0..n {
        let (client, url, key) = (client.clone(), url.to_owned(), key.clone());
        tasks.push(tokio::spawn(async move { post_signed(&client, &url, &key).await }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

#[tokio::test]
async fn bad_documents_keep_the_cached_keys_and_no_key_is_a_503() {
    let (server, url) = key_server().await;
    let a = SigningKey::generate().unwrap();
    let keys = Arc::new(
        RemoteKeySet::new(&url)
            .unwrap()
            .min_refresh_interval(Duration::from_millis(50))
            .timeout(Duration::from_millis(500)),
    );
    let (hook, _) = receiver(keys.clone()).await;
    let client = reqwest::Client::new();

    // No key yet, the server down: 503 with retry-after, the code in the body.
    server.answer(500, "no");
    let (status, body, retry_after) = post_signed(&client, &hook, &a).await;
    assert_eq!((status, retry_after.as_deref()), (503, Some("60")));
    assert!(
        body.contains("key_set_unavailable") && body.contains("HTTP 500"),
        "{body}"
    );
    server.answer(200, "<html>maintenance</html>");
    tokio::time::sleep(Duration::from_millis(60)).await;
    let (status, body, _) = post_signed(&client, &hook, &a).await;
    assert_eq!(status, 503);
    assert!(body.contains("invalid_key_set"), "{body}");

    server.publish(&[a.public_key()]);
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert_eq!(post_signed(&client, &hook, &a).await.0, 204);
    let good = keys.public_keys();
    let x = to_jwks_json(&[PublishedKey {
        public_key: a.public_key(),
        not_before: None,
        expires_at: None,
    }]);
    for (status, doc, code) in [
        (200, x.replace("Ed25519", "X25519"), "invalid_key_set"),
        (200, x.replace("\"kid\"", "\"kidd\""), "invalid_key_set"),
        (200, " ".repeat(70_000), "invalid_key_set"),
        (404, String::new(), "key_set_unavailable"),
    ] {
        server.answer(status, &doc);
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert!(!keys.refresh().await);
        assert_eq!(keys.last_error().unwrap().code().as_str(), code);
        assert_eq!(keys.public_keys(), good);
        assert_eq!(
            post_signed(&client, &hook, &a).await.0,
            204,
            "the cached key still verifies"
        );
    }
}
