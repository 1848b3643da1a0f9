//! Several OS processes sharing one store: the test binary runs itself again as a
//! receiver (`child_receiver`, started with `POSTWIRE_RECEIVER_CHILD=1`), twice, and sends
//! copies of one delivery to both, then kills one mid-handler with SIGKILL.
#![cfg(all(feature = "redis", feature = "postgres"))]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::post;
use axum::{Extension, Router};
use common::{Delivery, unique_id};
use postwire_core::{Event, Verifier};
use postwire_receiver::{OnceLayer, PostgresStore, RedisStore};

/// The child's entry point: a receiver on a free port whose handler appends a line to
/// `RUNS_FILE` and then does what `CONTROL_FILE` says (`ok`, `fail`, `hang`, `sleep:<ms>`).
/// Does nothing in the ordinary test run.
#[test]
fn child_receiver() {
    if std::env::var_os("POSTWIRE_RECEIVER_CHILD").is_none() {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(child_main());
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("the child needs {name}"))
}

async fn child_main() {
    let url = env("STORE_URL");
    let lease = Duration::from_millis(env("LEASE_MS").parse().unwrap());
    let runs = PathBuf::from(env("RUNS_FILE"));
    let control = PathBuf::from(env("CONTROL_FILE"));
    let verifier = Verifier::new(common::secret());
    let handler = move |Extension(event): Extension<Event>| {
        let (runs, control) = (runs.clone(), control.clone());
        async move { handle(&runs, &control, &event).await }
    };
    let router = Router::new().route("/webhooks", post(handler));
    let router = match env("STORE").as_str() {
        "redis" => {
            let store = RedisStore::new(common::redis_manager(&url).await);
            router.route_layer(OnceLayer::new(verifier, store).lease(lease))
        }
        "postgres" => {
            let store = PostgresStore::new(common::pg_pool(&url));
            router.route_layer(OnceLayer::new(verifier, store).lease(lease))
        }
        other => panic!("STORE={other}"),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let port_file = PathBuf::from(env("PORT_FILE"));
    std::fs::write(port_file.with_extension("tmp"), port.to_string()).unwrap();
    std::fs::rename(port_file.with_extension("tmp"), &port_file).unwrap();
    axum::serve(listener, router).await.unwrap();
}

async fn handle(runs: &Path, control: &Path, event: &Event) -> StatusCode {
    use std::io::Write;
    let line = format!("{} {}\n", event.id(), std::process::id());
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(runs)
        .unwrap();
    file.write_all(line.as_bytes()).unwrap();
    drop(file);
    let plan = std::fs::read_to_string(control).unwrap_or_default();
    let plan = plan.trim();
    if let Some(ms) = plan.strip_prefix("sleep:") {
        tokio::time::sleep(Duration::from_millis(ms.parse().unwrap())).await;
        return StatusCode::NO_CONTENT;
    }
    match plan {
        "ok" => StatusCode::NO_CONTENT,
        "hang" => std::future::pending().await,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// One receiver process; killed (SIGKILL) on drop.
struct Receiver {
    child: Child,
    url: String,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the receivers share: the store's address and the files the handlers write and read.
struct Fleet {
    dir: tempfile::TempDir,
    store: &'static str,
    store_url: String,
    lease_ms: u64,
}

impl Fleet {
    fn new(store: &'static str, store_url: String, lease_ms: u64) -> Self {
        let fleet = Fleet {
            dir: tempfile::tempdir().unwrap(),
            store,
            store_url,
            lease_ms,
        };
        fleet.control("ok");
        fleet
    }

    fn control(&self, plan: &str) {
        std::fs::write(self.dir.path().join("control"), plan).unwrap();
    }

    /// The handler runs so far: (webhook-id, pid) per line.
    fn runs(&self) -> Vec<(String, u32)> {
        std::fs::read_to_string(self.dir.path().join("runs"))
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let (id, pid) = l.split_once(' ').unwrap();
                (id.to_owned(), pid.parse().unwrap())
            })
            .collect()
    }

    async fn wait_for_runs(&self, n: usize) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while self.runs().len() < n {
            assert!(tokio::time::Instant::now() < deadline, "the handler did not start");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn spawn(&self, name: &str) -> Receiver {
        let port_file = self.dir.path().join(format!("{name}.port"));
        let child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_receiver", "--nocapture", "--test-threads=1"])
            .env("POSTWIRE_RECEIVER_CHILD", "1")
            .env("STORE", self.store)
            .env("STORE_URL", &self.store_url)
            .env("LEASE_MS", self.lease_ms.to_string())
            .env("RUNS_FILE", self.dir.path().join("runs"))
            .env("CONTROL_FILE", self.dir.path().join("control"))
            .env("PORT_FILE", &port_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut receiver = Receiver {
            child,
            url: String::new(),
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let port = loop {
            if let Ok(port) = std::fs::read_to_string(&port_file) {
                break port;
            }
            assert!(
                receiver.child.try_wait().unwrap().is_none(),
                "the receiver {name} exited"
            );
            assert!(
                std::time::Instant::now() < deadline,
                "the receiver {name} did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        receiver.url = format!("http://127.0.0.1:{port}/webhooks");
        receiver
    }
}

/// 50 simultaneous copies of one delivery over 2 processes: the handler runs once; every
/// other copy is answered 200 duplicate or 409, never a second run.
async fn fifty_copies_over_two_processes(fleet: Fleet) {
    let (a, b) = (fleet.spawn("a"), fleet.spawn("b"));
    fleet.control("sleep:300");
    let client = reqwest::Client::new();
    let delivery = Delivery::new(&unique_id("fifty"));
    let mut copies = Vec::new();
    for i in 0..50 {
        let url = if i % 2 == 0 { a.url.clone() } else { b.url.clone() };
        let (client, delivery) = (client.clone(), delivery.clone());
        copies.push(tokio::spawn(async move { delivery.post(&client, &url).await }));
    }
    let mut by_status = std::collections::BTreeMap::<u16, usize>::new();
    for copy in copies {
        let (status, retry_after, _) = copy.await.unwrap();
        if status == 409 {
            assert!(retry_after.is_some());
        }
        *by_status.entry(status).or_default() += 1;
    }
    assert_eq!(by_status.get(&204), Some(&1), "{by_status:?}");
    assert_eq!(
        by_status.get(&200).unwrap_or(&0) + by_status.get(&409).unwrap_or(&0),
        49,
        "{by_status:?}"
    );
    assert_eq!(fleet.runs().len(), 1);
    assert_eq!(delivery.post(&client, &b.url).await.0, 200);
    assert_eq!(delivery.post(&client, &a.url).await.0, 200);
    assert_eq!(fleet.runs().len(), 1);
}

/// SIGKILL of the process mid-handler: 409 while its lease lives, then the next retry
/// runs the handler in the other process; exactly two runs in all.
async fn sigkill_mid_handler(fleet: Fleet) {
    let (mut a, b) = (fleet.spawn("a"), fleet.spawn("b"));
    fleet.control("hang");
    let client = reqwest::Client::new();
    let delivery = Delivery::new(&unique_id("sigkill"));
    let first = tokio::spawn({
        let (client, delivery, url) = (client.clone(), delivery.clone(), a.url.clone());
        async move { delivery.post_raw(&client, &url).await }
    });
    fleet.wait_for_runs(1).await;
    a.child.kill().unwrap(); // SIGKILL
    a.child.wait().unwrap();
    assert!(first.await.unwrap().is_err(), "the killed process never answered");

    fleet.control("ok");
    let (status, retry_after, _) = delivery.post(&client, &b.url).await;
    assert_eq!(status, 409, "the dead process's lease is still live");
    assert!(retry_after.is_some());
    let deadline = tokio::time::Instant::now() + Duration::from_millis(fleet.lease_ms + 5000);
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let (status, _, _) = delivery.post(&client, &b.url).await;
        if status == 204 {
            break;
        }
        assert_eq!(status, 409);
        assert!(tokio::time::Instant::now() < deadline, "the lease never expired");
    }
    assert_eq!(delivery.post(&client, &b.url).await.0, 200);
    let runs = fleet.runs();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_ne!(runs[0].1, runs[1].1, "one run in each process");
}

impl Delivery {
    /// Like `post`, but a failed connection is an `Err` (a killed receiver).
    async fn post_raw(&self, client: &reqwest::Client, url: &str) -> Result<u16, reqwest::Error> {
        let response = client
            .post(url)
            .header("webhook-id", &self.id)
            .header("webhook-timestamp", self.timestamp.to_string())
            .header("webhook-signature", &self.signature)
            .body(self.body.clone())
            .send()
            .await?;
        Ok(response.status().as_u16())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_fifty_copies_over_two_processes() {
    let server = common::RedisServer::start();
    fifty_copies_over_two_processes(Fleet::new("redis", server.url(), 30_000)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_fifty_copies_over_two_processes() {
    let db = postwire_testpg::database();
    fifty_copies_over_two_processes(Fleet::new("postgres", db.url().to_owned(), 30_000)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_sigkill_mid_handler() {
    let server = common::RedisServer::start();
    sigkill_mid_handler(Fleet::new("redis", server.url(), 3000)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_sigkill_mid_handler() {
    let db = postwire_testpg::database();
    sigkill_mid_handler(Fleet::new("postgres", db.url().to_owned(), 3000)).await;
}
