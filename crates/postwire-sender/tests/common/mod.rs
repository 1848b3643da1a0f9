//! Shared test parts: real HTTP receivers on loopback, a sender on a real database (a
//! SQLite file, or with `POSTWIRE_TEST_BACKEND=postgres` a fresh database in a throwaway
//! PostgreSQL cluster) with a manual clock, and domain-change builders.
#![allow(dead_code)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use postwire_core::{CreatedByKind, Integration, ManualClock, PostState, Secret, Timestamp, UnixTime, Verifier};
use postwire_sender::{
    AccountChange, AccountChangeKind, NewSubscription, PostChange, PostChangeKind, PostRecord, Sender, SenderConfig,
    Workspace,
};

/// One request a receiver got.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub at: Instant,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn id(&self) -> String {
        self.header("webhook-id").unwrap_or_default().to_owned()
    }
    pub fn timestamp(&self) -> i64 {
        self.header("webhook-timestamp")
            .and_then(|t| t.parse().ok())
            .unwrap_or(-1)
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
    /// Verifies with postwire-core, at the request's own timestamp.
    pub fn verify(&self, secrets: &[Secret]) -> Result<postwire_core::Event, postwire_core::Error> {
        let v = Verifier::with_secrets(secrets.iter().cloned()).unwrap();
        v.verify_event(&self.headers, &self.body, UnixTime::from_secs(self.timestamp()))
    }
}

/// What a receiver answers.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub delay: Duration,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn status(status: u16) -> Self {
        Reply {
            status,
            delay: Duration::ZERO,
            headers: vec![],
            body: String::new(),
        }
    }
    pub fn ok() -> Self {
        Reply::status(200)
    }
    pub fn delay(mut self, d: Duration) -> Self {
        self.delay = d;
        self
    }
    pub fn header(mut self, k: &str, v: &str) -> Self {
        self.headers.push((k.into(), v.into()));
        self
    }
    pub fn body(mut self, b: impl Into<String>) -> Self {
        self.body = b.into();
        self
    }
}

type Handler = Arc<dyn Fn(&Recorded, usize) -> Reply + Send + Sync>;

/// A real HTTP/1.1 server on 127.0.0.1 that records every request.
pub struct Receiver {
    pub addr: SocketAddr,
    pub url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    count: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    pub async fn start(handler: impl Fn(&Recorded, usize) -> Reply + Send + Sync + 'static) -> Receiver {
        let handler: Handler = Arc::new(handler);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let count = Arc::new(AtomicUsize::new(0));
        let (reqs, cnt) = (requests.clone(), count.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (handler, reqs, cnt) = (handler.clone(), reqs.clone(), cnt.clone());
                tokio::spawn(async move {
                    let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                        let (handler, reqs, cnt) = (handler.clone(), reqs.clone(), cnt.clone());
                        async move {
                            let headers = req
                                .headers()
                                .iter()
                                .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
                                .collect();
                            let body = req
                                .into_body()
                                .collect()
                                .await
                                .map(|b| b.to_bytes().to_vec())
                                .unwrap_or_default();
                            let rec = Recorded {
                                headers,
                                body,
                                at: Instant::now(),
                            };
                            let n = cnt.fetch_add(1, Ordering::SeqCst);
                            let reply = handler(&rec, n);
                            reqs.lock().unwrap().push(rec);
                            if !reply.delay.is_zero() {
                                tokio::time::sleep(reply.delay).await;
                            }
                            let mut resp = Response::builder().status(reply.status);
                            for (k, v) in &reply.headers {
                                resp = resp.header(k, v);
                            }
                            Ok::<_, Infallible>(resp.body(Full::new(Bytes::from(reply.body))).unwrap())
                        }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Receiver {
            addr,
            url: format!("http://{addr}/hook"),
            requests,
            count,
            task,
        }
    }

    /// Always `200 OK`.
    pub async fn succeeding() -> Receiver {
        Receiver::start(|_, _| Reply::ok().body("ok")).await
    }

    /// `500` for the first `n` requests, then `200`.
    pub async fn failing_first(n: usize) -> Receiver {
        Receiver::start(move |_, i| {
            if i < n {
                Reply::status(500).body("down")
            } else {
                Reply::ok()
            }
        })
        .await
    }

    /// Always `500`.
    pub async fn failing() -> Receiver {
        Receiver::start(|_, _| Reply::status(500)).await
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    pub async fn wait_for_count(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.count() >= n {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        self.count() >= n
    }
}

pub const T0: i64 = 1_800_000_000_000;
pub const WS: &str = "ws_test";

/// Test config: insecure local allowed (loopback receivers), no jitter.
pub fn test_config() -> SenderConfig {
    SenderConfig {
        jitter: postwire_sender::schedule::Jitter::None,
        attempt_timeout: Duration::from_secs(2),
        idle_poll: Duration::from_millis(200),
        ..SenderConfig::default()
    }
    .dangerously_allow_insecure_local_urls()
}

/// Where a test's sender keeps its state: the backend the suite runs against, chosen by
/// `POSTWIRE_TEST_BACKEND` (`sqlite`, the default, or `postgres`). The same tests run
/// against both (`scripts/test-all.sh` runs them twice).
pub enum Db {
    /// A SQLite file in a temp dir.
    Sqlite(tempfile::TempDir),
    /// A fresh database in the test process's throwaway cluster.
    Postgres(postwire_testpg::TestDatabase),
}

impl Db {
    /// A new, empty database of the suite's backend.
    pub fn new() -> Db {
        match std::env::var("POSTWIRE_TEST_BACKEND").as_deref() {
            Ok("postgres") => Db::Postgres(postwire_testpg::database()),
            Ok("sqlite") | Err(_) => Db::Sqlite(tempfile::tempdir().unwrap()),
            Ok(other) => panic!("POSTWIRE_TEST_BACKEND={other}: expected sqlite or postgres"),
        }
    }

    /// A SQLite file, whatever the suite's backend (tests of SQLite's own rules).
    pub fn sqlite() -> Db {
        Db::Sqlite(tempfile::tempdir().unwrap())
    }

    /// The SQLite file's path (panics for PostgreSQL).
    pub fn sqlite_path(&self) -> std::path::PathBuf {
        match self {
            Db::Sqlite(dir) => dir.path().join("sender.db"),
            Db::Postgres(_) => panic!("not a SQLite database"),
        }
    }

    /// Opens a sender on it (again).
    pub async fn open(&self, config: SenderConfig, clock: Arc<dyn postwire_core::Clock>) -> Sender {
        match self {
            Db::Sqlite(_) => Sender::open_sqlite(self.sqlite_path(), config, clock).await.unwrap(),
            Db::Postgres(db) => Sender::open_postgres(db.url(), config, clock).await.unwrap(),
        }
    }
}

pub struct Harness {
    pub sender: Sender,
    pub clock: Arc<ManualClock>,
    pub dir: tempfile::TempDir,
    pub db: Db,
    pub dispatcher: Option<postwire_sender::DispatcherHandle>,
}

impl Harness {
    pub async fn new() -> Harness {
        Harness::with_config(test_config()).await
    }

    pub async fn with_config(config: SenderConfig) -> Harness {
        let mut h = Harness::stopped(config).await;
        h.dispatcher = Some(h.sender.start());
        h
    }

    /// A harness whose dispatcher is not started yet: publishes queue up until
    /// `h.dispatcher = Some(h.sender.start())`.
    pub async fn stopped(config: SenderConfig) -> Harness {
        Harness::stopped_on(Db::new(), config).await
    }

    /// A stopped harness on `db`.
    pub async fn stopped_on(db: Db, config: SenderConfig) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(Timestamp::from_unix_millis(T0)));
        let sender = db.open(config, clock.clone()).await;
        sender
            .upsert_workspace(Workspace {
                id: WS.into(),
                name: "Test".into(),
            })
            .await
            .unwrap();
        for acc in ["acc-1", "acc-2"] {
            sender.upsert_integration(WS, integration(acc)).await.unwrap();
        }
        Harness {
            sender,
            clock,
            dir,
            db,
            dispatcher: None,
        }
    }

    pub async fn subscribe(&self, url: &str) -> (String, Secret) {
        self.subscribe_with(url, vec![], vec![]).await
    }

    pub async fn subscribe_with(
        &self,
        url: &str,
        events: Vec<postwire_core::EventType>,
        integration_ids: Vec<String>,
    ) -> (String, Secret) {
        let created = self
            .sender
            .create_subscription(NewSubscription {
                workspace_id: WS.into(),
                name: "test".into(),
                url: url.into(),
                events,
                integration_ids,
                created_by_kind: CreatedByKind::ApiToken,
            })
            .await
            .unwrap();
        (created.subscription.id, created.secret)
    }

    /// Moves the clock by `ms` and lets the dispatcher run until idle.
    pub async fn advance(&self, ms: i64) {
        self.clock.advance_millis(ms);
        self.idle().await;
    }

    pub async fn idle(&self) {
        tokio::time::timeout(Duration::from_secs(30), self.sender.wait_idle())
            .await
            .expect("dispatcher idle in time")
            .unwrap();
    }

    pub fn now_secs(&self) -> i64 {
        use postwire_core::Clock;
        self.clock.now().unix_time().as_secs()
    }

    pub async fn shutdown(mut self) {
        if let Some(d) = self.dispatcher.take() {
            d.shutdown().await;
        }
    }
}

pub fn integration(id: &str) -> Integration {
    Integration {
        id: id.into(),
        name: format!("Account {id}"),
        provider_identifier: "x".into(),
        picture: None,
    }
}

pub fn post(id: &str, account: &str) -> PostRecord {
    PostRecord {
        id: id.into(),
        external_id: format!("ext-{id}"),
        group: "g".into(),
        state: PostState::Queue,
        is_draft: false,
        publish_date: Timestamp::from_unix_millis(T0 + 3_600_000),
        integration: integration(account),
        release_url: None,
        release_id: None,
        error: None,
        content: "CONTENT-MUST-NOT-LEAK".into(),
    }
}

pub fn scheduled(post_id: &str) -> PostChange {
    PostChange {
        workspace_id: WS.into(),
        post: post(post_id, "acc-1"),
        kind: PostChangeKind::Scheduled,
    }
}

pub fn change(post_id: &str, account: &str, kind: PostChangeKind) -> PostChange {
    PostChange {
        workspace_id: WS.into(),
        post: post(post_id, account),
        kind,
    }
}

pub fn disconnected(account: &str) -> AccountChange {
    AccountChange {
        workspace_id: WS.into(),
        integration: integration(account),
        kind: AccountChangeKind::Disconnected {
            reason: postwire_core::DisconnectReason::ReconnectRequired,
        },
    }
}
