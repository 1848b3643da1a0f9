//! Shared test parts: a real server on 127.0.0.1:0 over a real SQLite file in a temp
//! dir, real HTTP through reqwest, loopback receivers. Only the API's clock (the hourly
//! limit) is a manual one.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use postwire_core::{ManualClock, SystemClock, Timestamp};
use postwire_sender::SenderConfig;
use postwire_server::limits::Limits;
use postwire_server::listener::ConnectionLimits;
use postwire_server::{NewToken, RunningServer, Scope, Server, ServerOptions};
use postwire_testkit::receiver::Receiver;
use serde_json::{Value, json};

pub const INGEST: &str = "test-ingest-token-0123456789";

/// A public IP literal: passes the address checks without any DNS look-up.
pub const PUBLIC_URL: &str = "https://93.184.216.34/hooks";

pub struct Harness {
    pub server: Option<RunningServer>,
    pub base: String,
    pub http: reqwest::Client,
    pub api_clock: Arc<ManualClock>,
    pub dir: tempfile::TempDir,
}

pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
    pub json: Value,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts the spec's error body with this status and code.
    pub fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(self.status, status, "{}", self.text);
        assert_eq!(self.json["statusCode"], status, "{}", self.text);
        assert_eq!(self.json["code"], code, "{}", self.text);
        assert!(
            self.json["message"].is_string() || self.json["message"].is_array(),
            "{}",
            self.text
        );
        assert_eq!(self.json.as_object().unwrap().len(), 3, "{}", self.text);
    }

    /// The validation messages (one string or several).
    pub fn messages(&self) -> Vec<String> {
        self.assert_error(400, "invalid_request");
        match &self.json["message"] {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) => a.iter().map(|v| v.as_str().unwrap().to_owned()).collect(),
            other => panic!("message is {other}"),
        }
    }
}

pub struct Options {
    pub insecure_local: bool,
    pub rate_limit: u32,
    pub connection_limits: ConnectionLimits,
    pub limits: Limits,
    pub retention: Option<postwire_sender::retention::RetentionPolicy>,
    /// Seal secrets at rest under a key generated into `<dir>/postwire.db.secret-key`.
    pub encrypt: bool,
    /// How often that key file is read again.
    pub key_file_check_interval: Option<Duration>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            insecure_local: true,
            rate_limit: 10_000,
            connection_limits: ConnectionLimits::default(),
            limits: Limits {
                unauthenticated_per_hour: 10_000,
                ..Limits::default()
            },
            retention: None,
            encrypt: false,
            key_file_check_interval: None,
        }
    }
}

impl Harness {
    pub async fn start() -> Harness {
        Harness::start_with(Options::default()).await
    }

    pub async fn start_with(o: Options) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let api_clock = Arc::new(ManualClock::new(Timestamp::from_unix_millis(1_800_000_000_000)));
        let mut config = SenderConfig {
            attempt_timeout: Duration::from_secs(3),
            idle_poll: Duration::from_millis(20),
            ..SenderConfig::default()
        };
        if o.insecure_local {
            config = config.dangerously_allow_insecure_local_urls();
        }
        if o.encrypt {
            let path = dir.path().join("postwire.db.secret-key");
            let line = postwire_sender::secret_box::SecretCipher::generate_key_line().unwrap();
            std::fs::write(&path, format!("{}\n", *line)).unwrap();
            let cipher = postwire_sender::secret_box::SecretCipher::from_file(&path).unwrap();
            config.secret_cipher = Some(Arc::new(cipher));
        }
        let mut options = ServerOptions::new(dir.path().join("postwire.db"));
        options.sender_config = config;
        options.sender_clock = Arc::new(SystemClock);
        options.api_clock = api_clock.clone();
        options.rate_limit_per_hour = o.rate_limit;
        options.max_body_bytes = 4096;
        options.ingest_token = Some(INGEST.to_owned());
        options.connection_limits = o.connection_limits;
        options.limits = o.limits;
        options.metrics_addr = Some("127.0.0.1:0".to_owned());
        options.retention = o.retention;
        options.key_file_check_interval = o.key_file_check_interval;
        let server = Server::open(options).await.unwrap().start("127.0.0.1:0").await.unwrap();
        let base = server.base_url();
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let h = Harness {
            server: Some(server),
            base,
            http,
            api_clock,
            dir,
        };
        h.workspace("ws_a").await;
        h.workspace("ws_b").await;
        h.integration("ws_a", "acc_a1").await;
        h.integration("ws_a", "acc_a2").await;
        h.integration("ws_b", "acc_b1").await;
        h
    }

    pub fn running(&self) -> &RunningServer {
        self.server.as_ref().unwrap()
    }

    pub async fn stop(mut self) {
        if let Some(s) = self.server.take() {
            s.shutdown().await;
        }
    }

    pub async fn token(&self, scopes: &[Scope], workspaces: &[&str]) -> String {
        let created = self
            .running()
            .state()
            .tokens
            .create(
                NewToken {
                    name: "test".into(),
                    scopes: scopes.to_vec(),
                    workspaces: workspaces.iter().map(|w| w.to_string()).collect(),
                },
                Timestamp::from_unix_millis(0),
            )
            .await
            .unwrap();
        created.token
    }

    pub async fn writer(&self) -> String {
        self.token(&[Scope::WebhooksWrite], &["ws_a"]).await
    }

    pub async fn send(&self, method: &str, path: &str, token: Option<&str>, body: Option<&str>) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        if let Some(b) = body {
            req = req.header("content-type", "application/json").body(b.to_owned());
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.unwrap();
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            text,
            json,
        }
    }

    pub async fn json(&self, method: &str, path: &str, token: &str, body: Value) -> Reply {
        self.send(method, path, Some(token), Some(&body.to_string())).await
    }

    pub async fn ingest(&self, method: &str, path: &str, body: Value) -> Reply {
        self.send(method, path, Some(INGEST), Some(&body.to_string())).await
    }

    pub async fn workspace(&self, id: &str) {
        let r = self
            .ingest(
                "PUT",
                &format!("/internal/v1/workspaces/{id}"),
                json!({"name": format!("Workspace {id}")}),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
    }

    pub async fn integration(&self, ws: &str, id: &str) {
        let r = self
            .ingest(
                "PUT",
                &format!("/internal/v1/workspaces/{ws}/integrations/{id}"),
                json!({"name": format!("Account {id}"), "providerIdentifier": "x"}),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
    }

    /// Creates a subscription in ws_a to `url`; returns the creation body.
    pub async fn subscribe(&self, token: &str, url: &str) -> Value {
        let r = self
            .json(
                "POST",
                "/public/v1/workspaces/ws_a/webhooks",
                token,
                json!({"name": "test", "url": url}),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
        r.json
    }

    /// Reports a post change through ingest; returns the event id.
    pub async fn post_event(&self, ws: &str, post_id: &str, external_id: &str, change: &str) -> String {
        let mut c = json!({"kind": "post", "workspaceId": ws, "change": change, "post": {
            "id": post_id, "externalId": external_id, "group": "g", "state": "QUEUE",
            "publishDate": "2026-12-01T09:00:00Z",
            "integration": {"id": "acc_a1", "name": "Account acc_a1", "providerIdentifier": "x"},
            "releaseURL": "https://x.com/p/1", "releaseId": "1", "content": "SECRET-CONTENT"}});
        if change == "failed" {
            c["error"] = json!({"code": "rate_limited", "message": "slow down", "retryable": true});
        }
        let r = self
            .ingest("POST", "/internal/v1/events", json!({"changes": [c]}))
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.json["results"][0]["eventId"].as_str().unwrap().to_owned()
    }
}

pub async fn receiver() -> Receiver {
    Receiver::start(Arc::new(SystemClock)).await.unwrap()
}

#[allow(unused_imports)] // not every test file polls
pub use postwire_testkit::eventually;
