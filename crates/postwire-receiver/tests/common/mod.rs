//! Test support: a throwaway `redis-server`, signed deliveries, a loopback axum server.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use postwire_core::{Event, EventData, Secret, Signer, TestData, Timestamp, UnixTime};

/// The subscription secret of every test.
pub const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

pub fn secret() -> Secret {
    Secret::parse(SECRET).unwrap()
}

/// A delivery: its id, body and the three webhook headers, signed now.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub id: String,
    pub body: String,
    pub timestamp: i64,
    pub signature: String,
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

impl Delivery {
    /// A `webhook.test` event with `id`, signed with [`SECRET`] at the current time.
    pub fn new(id: &str) -> Self {
        let event = Event::new(
            id.to_owned(),
            Timestamp::from_unix_millis(1_800_000_000_000),
            "ws_1".into(),
            EventData::WebhookTest(TestData { message: "hi".into() }),
        )
        .unwrap();
        Delivery::signed(id, event.to_json())
    }

    /// Any body, signed for `id` now.
    pub fn signed(id: &str, body: String) -> Self {
        let timestamp = now_secs();
        let signature = Signer::new(secret())
            .sign(id, UnixTime::from_secs(timestamp), body.as_bytes())
            .unwrap()
            .into_string();
        Delivery {
            id: id.to_owned(),
            body,
            timestamp,
            signature,
        }
    }

    /// POSTs it to `url` every 100 ms, as a sender's retries would, until it is answered
    /// 204; every other answer must be one of `meanwhile`, and 204 must come `within`.
    pub async fn post_until_handled(
        &self,
        client: &reqwest::Client,
        url: &str,
        meanwhile: &[u16],
        within: std::time::Duration,
        what: &str,
    ) {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let (status, _, _) = self.post(client, url).await;
            if status == 204 {
                return;
            }
            assert!(meanwhile.contains(&status), "{status} while waiting for {what}");
            assert!(tokio::time::Instant::now() < deadline, "no success {what}");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// POSTs it to `url`; returns (status, retry-after, body).
    pub async fn post(&self, client: &reqwest::Client, url: &str) -> (u16, Option<String>, String) {
        let response = client
            .post(url)
            .header("content-type", "application/json")
            .header("webhook-id", &self.id)
            .header("webhook-timestamp", self.timestamp.to_string())
            .header("webhook-signature", &self.signature)
            .body(self.body.clone())
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_owned());
        (status, retry_after, response.text().await.unwrap())
    }
}

/// A unique id for a test delivery.
pub fn unique_id(name: &str) -> String {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!(
        "msg_{name}_{}_{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

/// Serves `router` on a free loopback port.
pub async fn serve(router: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    addr
}

/// A throwaway `redis-server` on a free loopback port (Debian's `redis-server` package),
/// killed on drop, and by a watchdog when the test process dies however it dies.
pub struct RedisServer {
    pub port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl RedisServer {
    /// Starts one; panics (failing the test) when `redis-server` is not installed.
    pub fn start() -> Self {
        let mut server = RedisServer {
            port: free_port(),
            dir: tempfile::tempdir().unwrap(),
            child: None,
        };
        server.start_again();
        server
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Stops the server (SIGKILL: as a crash or a cut network).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Freezes the server (SIGSTOP): connections stay open, nothing answers.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Thaws a [`pause`](Self::pause)d server (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("the server runs").id().to_string();
        let status = Command::new("kill").args([signal, &pid]).status().unwrap();
        assert!(status.success());
    }

    /// Starts it again on the same port (empty: nothing is persisted).
    pub fn start_again(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", ""])
            .args(["--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start redis-server (apt-get install redis-server; scripts/setup.sh installs it): {e}")
            });
        let watchdog = format!(
            "while kill -0 {} 2>/dev/null && kill -0 {} 2>/dev/null; do sleep 1; done; kill -9 {} 2>/dev/null",
            std::process::id(),
            child.id(),
            child.id()
        );
        Command::new("setsid")
            .args(["sh", "-c", &watchdog])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map(drop)
            .unwrap();
        self.child = Some(child);
        wait_for_port(self.port);
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Waits (up to 10 s) until something accepts connections on the loopback `port`.
pub fn wait_for_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "nothing listens on 127.0.0.1:{port} after 10 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A redis connection manager to `url` (reconnects after a restart).
pub async fn redis_manager(url: &str) -> redis::aio::ConnectionManager {
    redis::Client::open(url)
        .unwrap()
        .get_connection_manager()
        .await
        .unwrap()
}

#[cfg(feature = "postgres")]
/// A deadpool pool to the PostgreSQL database at `url` (no TLS: a Unix socket).
pub fn pg_pool(url: &str) -> deadpool_postgres::Pool {
    let config: tokio_postgres::Config = url.parse().unwrap();
    let manager = deadpool_postgres::Manager::new(config, tokio_postgres::NoTls);
    deadpool_postgres::Pool::builder(manager).max_size(16).build().unwrap()
}

/// A file in a temp dir, for the child processes' records.
pub fn temp_file(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}
