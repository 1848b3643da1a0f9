//! The published key set over real HTTP, on SQLite and on PostgreSQL: `listSigningKeys`
//! links to it, anyone fetches it without a token, it parses with the receivers' own
//! parser (`postwire_core::key_set::KeySet`) and its keys verify what the sender signed;
//! before a rotation, during its overlap and after it (a manual clock moved past the
//! 24 h window); `ETag`/`If-None-Match` → `304`; unknown and malformed ids → the same
//! `404`.

use std::sync::Arc;
use std::time::Duration;

use postwire_core::key_set::{KeySet, kid};
use postwire_core::{ManualClock, PublicKey, Timestamp, UnixTime, Verifier};
use postwire_sender::SenderConfig;
use postwire_server::{NewToken, RunningServer, Scope, Server, ServerOptions};
use postwire_testkit::scripted::{Receiver, Recorded};
use serde_json::{Value, json};

const INGEST: &str = "key-set-ingest-token-0123456789";
const KEYS: &str = "/public/v1/workspaces/ws_a/signing-keys";
const ROTATE: &str = "/public/v1/workspaces/ws_a/rotate-signing-key";
const DAY_MS: i64 = 24 * 3_600_000;

#[derive(Clone, Copy, Debug)]
enum Backend {
    Sqlite,
    Postgres,
}

struct Api {
    server: Option<RunningServer>,
    base: String,
    http: reqwest::Client,
    clock: Arc<ManualClock>,
    token: String,
    _db: Option<postwire_testpg::TestDatabase>,
    _dir: tempfile::TempDir,
}

struct Reply {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

impl Api {
    async fn start(backend: Backend, public_url: Option<&str>) -> Api {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(Timestamp::from_unix_millis(1_800_000_000_000)));
        let mut options = ServerOptions::new(dir.path().join("postwire.db"));
        let db = match backend {
            Backend::Sqlite => None,
            Backend::Postgres => {
                let db = postwire_testpg::database();
                options.database_url = Some(db.url().to_owned());
                Some(db)
            }
        };
        options.sender_config = SenderConfig {
            attempt_timeout: Duration::from_secs(3),
            idle_poll: Duration::from_millis(20),
            ..SenderConfig::default()
        }
        .dangerously_allow_insecure_local_urls();
        options.sender_clock = clock.clone();
        options.api_clock = clock.clone();
        options.ingest_token = Some(INGEST.to_owned());
        options.public_url = public_url.map(str::to_owned);
        let server = Server::open(options).await.unwrap().start("127.0.0.1:0").await.unwrap();
        let token = server
            .state()
            .tokens
            .create(
                NewToken {
                    name: "t".into(),
                    scopes: vec![Scope::WebhooksWrite],
                    workspaces: vec!["ws_a".into(), "ws_b".into()],
                },
                Timestamp::from_unix_millis(0),
            )
            .await
            .unwrap()
            .token;
        let api = Api {
            base: server.base_url(),
            server: Some(server),
            http: reqwest::Client::builder().no_proxy().build().unwrap(),
            clock,
            token,
            _db: db,
            _dir: dir,
        };
        for ws in ["ws_a", "ws_b"] {
            let r = api
                .send(
                    "PUT",
                    &format!("/internal/v1/workspaces/{ws}"),
                    Some(INGEST),
                    &[],
                    Some(json!({"name": ws})),
                )
                .await;
            assert_eq!(r.status, 200);
        }
        api
    }

    async fn send(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> Reply {
        let url = if path.starts_with("http") {
            path.to_owned()
        } else {
            format!("{}{path}", self.base)
        };
        let mut req = self
            .http
            .request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), url);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.header("content-type", "application/json").body(b.to_string());
        }
        let resp = req.send().await.unwrap();
        Reply {
            status: resp.status().as_u16(),
            headers: resp.headers().clone(),
            body: resp.bytes().await.unwrap().to_vec(),
        }
    }

    async fn authed(&self, method: &str, path: &str, body: Option<Value>) -> Reply {
        self.send(method, path, Some(&self.token), &[], body).await
    }

    /// `GET` of a key set without a token (and with `If-None-Match` when given).
    async fn key_set(&self, path: &str, if_none_match: Option<&str>) -> Reply {
        match if_none_match {
            Some(tag) => self.send("GET", path, None, &[("if-none-match", tag)], None).await,
            None => self.send("GET", path, None, &[], None).await,
        }
    }

    async fn stop(mut self) {
        if let Some(s) = self.server.take() {
            s.shutdown().await;
        }
    }
}

/// The listed `whpk_` keys and the key set's path from `listSigningKeys`.
async fn listed(api: &Api) -> (Vec<String>, String, Value) {
    let r = api.authed("GET", KEYS, None).await;
    assert_eq!(r.status, 200);
    let list = r.json();
    let keys = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["publicKey"].as_str().unwrap().to_owned())
        .collect();
    let url = list["keySetUrl"].as_str().unwrap().to_owned();
    (keys, url, list)
}

/// A fetched key set, checked as a receiver would: 200, the media type, cacheable, and
/// parsed by `KeySet::parse`.
fn parsed(r: &Reply) -> KeySet {
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.header("content-type"), Some("application/jwk-set+json"));
    assert_eq!(r.header("cache-control"), Some("public, max-age=300"));
    let etag = r.header("etag").unwrap();
    assert!(
        etag.starts_with('"') && etag.ends_with('"') && !etag.starts_with("W/"),
        "{etag}"
    );
    KeySet::parse(&r.body).unwrap()
}

fn whpk(keys: &KeySet) -> Vec<String> {
    keys.public_keys().map(PublicKey::to_string).collect()
}

/// Whether some key of the set verifies the delivery (a `v1a` entry names no key).
fn verifies_with_set(keys: &KeySet, r: &Recorded) -> bool {
    keys.public_keys().any(|k| {
        Verifier::from_public_key(*k)
            .verify(&r.headers, &r.body, UnixTime::from_secs(r.timestamp()))
            .is_ok()
    })
}

fn verifies_with(key: &str, r: &Recorded) -> bool {
    Verifier::from_public_key(PublicKey::parse(key).unwrap())
        .verify(&r.headers, &r.body, UnixTime::from_secs(r.timestamp()))
        .is_ok()
}

async fn test_delivery(api: &Api, rx: &Receiver, id: &str) -> Recorded {
    let before = rx.count();
    let r = api
        .authed("POST", &format!("/public/v1/workspaces/ws_a/webhooks/{id}/test"), None)
        .await;
    assert_eq!(r.status, 202);
    assert!(
        rx.wait_for_count(before + 1, Duration::from_secs(10)).await,
        "no delivery"
    );
    rx.requests().pop().unwrap()
}

async fn the_key_set_follows_a_rotation_and_its_overlap(backend: Backend) {
    let api = Api::start(backend, None).await;
    let rx = Receiver::succeeding().await;
    let created = api
        .authed(
            "POST",
            "/public/v1/workspaces/ws_a/webhooks",
            Some(json!({"name": "v1a", "url": rx.url, "signing": "asymmetric"})),
        )
        .await;
    assert_eq!(created.status, 201);
    let id = created.json()["id"].as_str().unwrap().to_owned();

    // Before any rotation: one key, the listed one, as a JWK named by its thumbprint.
    let (listed_keys, path, list) = listed(&api).await;
    let key_set_id = list["keySetId"].as_str().unwrap();
    assert_eq!(path, format!("/public/v1/key-sets/{key_set_id}/jwks.json"));
    assert!(!path.contains("ws_a"), "the URL names no workspace: {path}");
    let first = api.key_set(&path, None).await;
    let set = parsed(&first);
    assert_eq!(whpk(&set), listed_keys);
    let key = &set.keys()[0];
    assert_eq!(key.kid(), kid(key.public_key()));
    assert_eq!(key.not_before(), Some(1_800_000_000));
    assert_eq!(key.expires_at(), None);
    let doc = first.json();
    assert_eq!(
        (doc["keys"][0]["kty"].as_str(), doc["keys"][0]["crv"].as_str()),
        (Some("OKP"), Some("Ed25519"))
    );
    assert_eq!(
        (doc["keys"][0]["use"].as_str(), doc["keys"][0]["alg"].as_str()),
        (Some("sig"), Some("EdDSA"))
    );
    let r = test_delivery(&api, &rx, &id).await;
    assert!(verifies_with_set(&set, &r));

    // The same document again: the same tag; that tag → 304 without a body; another → 200.
    let tag = first.header("etag").unwrap().to_owned();
    let again = api.key_set(&path, None).await;
    assert_eq!((again.header("etag"), &again.body), (Some(tag.as_str()), &first.body));
    let not_modified = api.key_set(&path, Some(&tag)).await;
    assert_eq!(not_modified.status, 304);
    assert!(not_modified.body.is_empty());
    assert_eq!(not_modified.header("etag"), Some(tag.as_str()));
    assert_eq!(not_modified.header("cache-control"), Some("public, max-age=300"));
    let weak = api.key_set(&path, Some(&format!("\"x\", W/{tag}"))).await;
    assert_eq!(weak.status, 304);
    assert_eq!(api.key_set(&path, Some("\"something-else\"")).await.status, 200);

    // A rotation: two keys, the new one first, the old one with `exp` at the window's
    // end; a new tag (the old one gets the document); a delivery verifies with the set.
    api.clock.advance_millis(60_000);
    let rotated = api.authed("POST", ROTATE, None).await;
    assert_eq!(rotated.status, 200);
    let new_key = rotated.json()["publicKey"].as_str().unwrap().to_owned();
    let during = api.key_set(&path, Some(&tag)).await;
    let set = parsed(&during);
    assert_eq!(whpk(&set), [new_key.clone(), listed_keys[0].clone()]);
    assert_eq!(
        (set.keys()[0].not_before(), set.keys()[0].expires_at()),
        (Some(1_800_000_060), None)
    );
    assert_eq!(
        (set.keys()[1].not_before(), set.keys()[1].expires_at()),
        (Some(1_800_000_000), Some(1_800_000_060 + DAY_MS / 1000))
    );
    let during_tag = during.header("etag").unwrap().to_owned();
    assert_ne!(during_tag, tag);
    assert_eq!((listed(&api).await.1), path, "the id outlives rotations");
    let r = test_delivery(&api, &rx, &id).await;
    assert!(verifies_with_set(&set, &r));
    assert!(verifies_with(&new_key, &r) && verifies_with(&listed_keys[0], &r));

    // After the overlap: the new key alone; the old one no longer signs.
    api.clock.advance_millis(DAY_MS);
    let after = api.key_set(&path, Some(&during_tag)).await;
    let set = parsed(&after);
    assert_eq!(whpk(&set), vec![new_key.clone()]);
    assert_ne!(after.header("etag"), Some(during_tag.as_str()));
    let r = test_delivery(&api, &rx, &id).await;
    assert!(verifies_with_set(&set, &r));
    assert!(!verifies_with(&listed_keys[0], &r));
    api.stop().await;
}

async fn unknown_and_malformed_ids_are_the_same_404(backend: Backend) {
    let api = Api::start(backend, Some("https://hooks.example.com/")).await;
    // The absolute URL when the server knows its public URL.
    let (_, url, list) = listed(&api).await;
    let key_set_id = list["keySetId"].as_str().unwrap().to_owned();
    assert_eq!(
        url,
        format!("https://hooks.example.com/public/v1/key-sets/{key_set_id}/jwks.json")
    );
    let path = url.trim_start_matches("https://hooks.example.com");
    assert_eq!(api.key_set(path, None).await.status, 200);
    // Another workspace has another id.
    let other = api
        .authed("GET", "/public/v1/workspaces/ws_b/signing-keys", None)
        .await
        .json();
    assert_ne!(other["keySetId"].as_str(), Some(key_set_id.as_str()));
    assert!(other["keySetId"].as_str().unwrap().starts_with("ks_"));
    let unknown = format!("ks_{}", "0".repeat(32));
    let upper = key_set_id.to_uppercase();
    let long = format!("{key_set_id}0");
    let bad = [
        unknown.as_str(),
        upper.as_str(),
        long.as_str(),
        "ws_a",
        "ks_",
        "%27%20OR%201%3D1--",
        &"a".repeat(4000),
    ];
    for id in bad {
        let r = api.key_set(&format!("/public/v1/key-sets/{id}/jwks.json"), None).await;
        assert_eq!(r.status, 404, "{id}");
        let body = r.json();
        assert_eq!(
            (
                body["statusCode"].as_i64(),
                body["code"].as_str(),
                body["message"].as_str()
            ),
            (Some(404), Some("not_found"), Some("no key set has this id")),
            "{id}"
        );
        assert_eq!(r.header("cache-control"), Some("no-store"));
    }
    // A token changes nothing, and other methods are not routed.
    let r = api
        .send(
            "GET",
            &format!("/public/v1/key-sets/{unknown}/jwks.json"),
            Some(&api.token),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(api.send("POST", path, None, &[], None).await.status, 405);
    api.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_set_follows_a_rotation_and_its_overlap_on_sqlite() {
    the_key_set_follows_a_rotation_and_its_overlap(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_set_follows_a_rotation_and_its_overlap_on_postgres() {
    the_key_set_follows_a_rotation_and_its_overlap(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_malformed_ids_are_the_same_404_on_sqlite() {
    unknown_and_malformed_ids_are_the_same_404(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_malformed_ids_are_the_same_404_on_postgres() {
    unknown_and_malformed_ids_are_the_same_404(Backend::Postgres).await;
}
