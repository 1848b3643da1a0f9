//! Several real `postwire serve` processes on one throwaway PostgreSQL database: every
//! event ingested through any of them arrives, in order per post, never two requests of
//! one post at once; a process killed (SIGKILL) mid-delivery has its deliveries taken
//! over once their leases end; and a restart of PostgreSQL is ridden out.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const INGEST: &str = "pg-test-ingest-token-0123456789";
/// The key every process is given to encrypt signing secrets at rest (the same for all:
/// on PostgreSQL, `serve` never generates one).
const SECRET_KEY: &str = "k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
/// The lease the processes take on a claimed delivery (short, to see takeovers).
const LEASE_SECS: u64 = 3;

fn postwire() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_postwire"));
    for (k, _) in std::env::vars() {
        if k.starts_with("POSTWIRE_") {
            c.env_remove(k);
        }
    }
    c
}

/// A `postwire serve` process, killed when dropped.
struct Serve {
    child: Child,
    base: String,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    fn start(url: &str) -> Serve {
        Serve::start_keyed(url, ("POSTWIRE_SECRET_KEY", SECRET_KEY))
    }

    /// Started with the at-rest key from `key`, an environment variable and its value.
    #[allow(clippy::zombie_processes)] // killed and waited for by Drop
    fn start_keyed(url: &str, key: (&str, &str)) -> Serve {
        let lease = LEASE_SECS.to_string();
        let mut child = postwire()
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--dangerously-allow-insecure-local-urls",
            ])
            .args(["--lease-secs", &lease, "--attempt-timeout-secs", "2"])
            .env("POSTWIRE_DATABASE_URL", url)
            .env(key.0, key.1)
            .env("POSTWIRE_INGEST_TOKEN", INGEST)
            .env("POSTWIRE_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let start = Instant::now();
        loop {
            let left = Duration::from_secs(30).saturating_sub(start.elapsed());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(base) = line.strip_prefix("listening on ") {
                        return Serve {
                            child,
                            base: base.trim().to_owned(),
                        };
                    }
                }
                Err(_) => panic!("serve did not start"),
            }
        }
    }

    fn signal(&self, sig: &str) {
        assert!(
            Command::new("kill")
                .args([sig, &self.child.id().to_string()])
                .status()
                .unwrap()
                .success()
        );
    }

    /// SIGTERM, and wait for the exit.
    fn stop(mut self) {
        self.signal("-TERM");
        let start = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            assert!(start.elapsed() < Duration::from_secs(20), "serve did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Hit {
    webhook_id: String,
    post: String,
    seq: u32,
    start: Instant,
    end: Instant,
}

/// A loopback receiver that records every request, answering 200 after a delay.
#[derive(Clone, Default)]
struct Recorder {
    hits: Arc<Mutex<Vec<Hit>>>,
    started: Arc<Mutex<Vec<(String, Instant)>>>,
    delay_ms: Arc<Mutex<u64>>,
}

impl Recorder {
    async fn start(&self) -> String {
        let me = self.clone();
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let me = me.clone();
                async move {
                    let start = Instant::now();
                    let webhook_id = headers
                        .get("webhook-id")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_owned();
                    me.started.lock().unwrap().push((webhook_id.clone(), start));
                    let delay = *me.delay_ms.lock().unwrap();
                    tokio::time::sleep(Duration::from_millis(delay)).await;
                    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let post = v["data"]["post"]["id"].as_str().unwrap_or("").to_owned();
                    let seq = v["data"]["post"]["group"]
                        .as_str()
                        .and_then(|g| g.strip_prefix("seq-"))
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(u32::MAX);
                    me.hits.lock().unwrap().push(Hit {
                        webhook_id,
                        post,
                        seq,
                        start,
                        end: Instant::now(),
                    });
                    "ok"
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{addr}/hook")
    }

    fn set_delay(&self, ms: u64) {
        *self.delay_ms.lock().unwrap() = ms;
    }

    fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }

    fn distinct_delivered(&self) -> usize {
        let hits = self.hits();
        let mut ids: Vec<&str> = hits.iter().map(|h| h.webhook_id.as_str()).collect();
        ids.sort();
        ids.dedup();
        ids.len()
    }

    async fn wait_for(&self, distinct: usize, within: Duration) {
        let start = Instant::now();
        while self.distinct_delivered() < distinct {
            assert!(
                start.elapsed() < within,
                "{} of {distinct} events arrived in {within:?}",
                self.distinct_delivered()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn post_change(post: &str, seq: u32) -> Value {
    json!({"kind": "post", "workspaceId": "ws_1", "change": "scheduled", "post": {
        "id": post, "externalId": format!("{post}-{seq}"), "group": format!("seq-{seq}"), "state": "QUEUE",
        "publishDate": "2026-12-01T09:00:00Z",
        "integration": {"id": "acc_1", "name": "A", "providerIdentifier": "x"}}})
}

async fn ingest(base: &str, changes: Vec<Value>) {
    let resp = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(format!("{base}/internal/v1/events"))
        .bearer_auth(INGEST)
        .header("content-type", "application/json")
        .body(json!({ "changes": changes }).to_string())
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    assert_eq!(status, 200, "{}", resp.text().await.unwrap());
}

/// Per post: the events arrive in publish order, and no two requests of one post
/// overlap in time.
fn check_order_and_no_overlap(hits: &[Hit]) {
    let mut by_post: HashMap<&str, Vec<&Hit>> = HashMap::new();
    for h in hits {
        by_post.entry(h.post.as_str()).or_default().push(h);
    }
    for (post, mut hs) in by_post {
        hs.sort_by_key(|h| h.start);
        for pair in hs.windows(2) {
            assert!(
                pair[0].end <= pair[1].start,
                "two requests of {post} overlapped: {:?} and {:?}",
                pair[0],
                pair[1]
            );
            assert!(
                pair[0].seq <= pair[1].seq,
                "{post} out of order: seq {} then {}",
                pair[0].seq,
                pair[1].seq
            );
        }
    }
}

#[test]
fn three_processes_share_one_queue_survive_a_sigkill_and_a_postgresql_restart() {
    let cluster = postwire_testpg::Cluster::start().unwrap();
    cluster.create_database("pw").unwrap();
    let url = cluster.url("pw");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let recorder = Recorder::default();
    let hook = rt.block_on(recorder.start());
    recorder.set_delay(20);

    // A token through the CLI, on the database.
    let out = postwire()
        .args([
            "token",
            "create",
            "--database-url",
            &url,
            "--workspace",
            "ws_1",
            "--scope",
            "webhooks:write",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();

    let servers: Vec<Serve> = (0..3).map(|_| Serve::start(&url)).collect();
    rt.block_on(async {
        let resp = reqwest::Client::builder()
            .no_proxy()
            .build()
            .unwrap()
            .post(format!("{}/public/v1/workspaces/ws_1/webhooks", servers[1].base))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(json!({"name": "pg", "url": hook}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 201, "{}", resp.text().await.unwrap());
    });

    // 1. 10 posts x 10 events, each round through another process.
    const POSTS: usize = 10;
    const ROUNDS: u32 = 10;
    rt.block_on(async {
        for k in 0..ROUNDS {
            let changes = (0..POSTS).map(|p| post_change(&format!("p{p}"), k)).collect();
            ingest(&servers[k as usize % 3].base, changes).await;
        }
        recorder
            .wait_for(POSTS * ROUNDS as usize, Duration::from_secs(60))
            .await;
    });
    check_order_and_no_overlap(&recorder.hits());
    eprintln!(
        "phase 1: {} requests for {} events",
        recorder.hits().len(),
        POSTS * ROUNDS as usize
    );

    // 2. One process left; it is killed with attempts in flight. Another one, started
    //    after, takes its deliveries over once their leases end.
    let mut servers = servers.into_iter();
    let victim = servers.next().unwrap();
    for s in servers {
        s.stop();
    }
    recorder.set_delay(1_500);
    let before = recorder.distinct_delivered();
    let killed_at = rt.block_on(async {
        let changes = (0..4).map(|p| post_change(&format!("k{p}"), 0)).collect();
        ingest(&victim.base, changes).await;
        let start = Instant::now();
        while recorder.started.lock().unwrap().len() <= recorder.hits().len() {
            assert!(start.elapsed() < Duration::from_secs(10), "no attempt started");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        victim.signal("-KILL");
        Instant::now()
    });
    drop(victim);
    let heir = Serve::start(&url);
    recorder.set_delay(20);
    rt.block_on(recorder.wait_for(before + 4, Duration::from_secs(30)));
    let hits = recorder.hits();
    let taken_over: Vec<&Hit> = hits
        .iter()
        .filter(|h| h.post.starts_with('k') && h.start > killed_at)
        .collect();
    let first_takeover = taken_over.iter().map(|h| h.start).min().unwrap();
    let takeover = first_takeover.duration_since(killed_at);
    eprintln!("phase 2: takeover {takeover:?} after the SIGKILL (lease {LEASE_SECS} s)");
    assert!(
        takeover <= Duration::from_secs(2 * LEASE_SECS),
        "taken over after {takeover:?}, more than twice the lease"
    );
    let interrupted: Vec<&str> = hits
        .iter()
        .filter(|h| h.post.starts_with('k') && h.start < killed_at)
        .map(|h| h.webhook_id.as_str())
        .collect();
    assert!(
        interrupted
            .iter()
            .all(|id| taken_over.iter().any(|h| h.webhook_id == *id)),
        "an attempt interrupted by the kill was attempted again with the same webhook-id"
    );
    check_order_and_no_overlap(&hits);

    // 3. PostgreSQL restarts under the running process; a publish made while it is down
    //    is answered once it is back, and everything arrives.
    let before = recorder.distinct_delivered();
    cluster.stop_server().unwrap();
    let pending = {
        let base = heir.base.clone();
        std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(ingest(&base, vec![post_change("r0", 0), post_change("r1", 0)]))
        })
    };
    std::thread::sleep(Duration::from_millis(1_000));
    cluster.start_server().unwrap();
    pending.join().unwrap();
    rt.block_on(async {
        ingest(&heir.base, vec![post_change("r0", 1)]).await;
        recorder.wait_for(before + 3, Duration::from_secs(30)).await;
    });
    check_order_and_no_overlap(&recorder.hits());
    heir.stop();
}

#[test]
fn keys_rotate_on_postgres_seals_every_secret_under_the_new_key() {
    let cluster = postwire_testpg::Cluster::start().unwrap();
    cluster.create_database("rot").unwrap();
    let url = cluster.url("rot");
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("keys");
    std::fs::write(&key_file, format!("{SECRET_KEY}\n")).unwrap();
    let key_path = key_file.to_str().unwrap();
    let out = postwire()
        .args(["token", "create", "--database-url", &url, "--workspace", "ws_1"])
        .args(["--scope", "webhooks:write"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let server = Serve::start_keyed(&url, ("POSTWIRE_SECRET_KEY_FILE", key_path));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for i in 0..3 {
            let resp = reqwest::Client::builder()
                .no_proxy()
                .build()
                .unwrap()
                .post(format!("{}/public/v1/workspaces/ws_1/webhooks", server.base))
                .bearer_auth(&token)
                .header("content-type", "application/json")
                .body(json!({"name": format!("s{i}"), "url": "https://93.184.216.34/hook"}).to_string())
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status().as_u16(), 201);
        }
    });
    // Beside the running server, over sealed secrets, a new token for a new workspace
    // needs no key (it reads no secret), and the server takes it at once.
    let out = postwire()
        .args(["token", "create", "--database-url", &url, "--workspace", "ws_2"])
        .args(["--scope", "webhooks:read"])
        .env_remove("POSTWIRE_SECRET_KEY_FILE")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let second = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    rt.block_on(async {
        let resp = reqwest::Client::builder()
            .no_proxy()
            .build()
            .unwrap()
            .get(format!("{}/public/v1/workspaces/ws_2/webhooks", server.base))
            .bearer_auth(&second)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
    });
    server.stop();

    // Without a key file, PostgreSQL has no default one: a clear refusal.
    let out = postwire()
        .args(["keys", "rotate", "--database-url", &url])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--secret-key-file"));

    let out = postwire()
        .args(["keys", "rotate", "--database-url", &url, "--secret-key-file", key_path])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    let text = std::fs::read_to_string(&key_file).unwrap();
    let new_line = text
        .lines()
        .find(|l| !l.starts_with('#') && !l.trim().is_empty())
        .unwrap();
    let new_id = new_line.split(':').next().unwrap();
    assert_ne!(new_id, "k1");
    assert!(said.contains(&format!("encrypted under {new_id}")), "{said}");

    // With the old key gone, a server still starts: no secret is left under it (start-up
    // refuses a database holding secrets under a key it lacks).
    std::fs::write(&key_file, format!("{new_line}\n")).unwrap();
    let server = Serve::start_keyed(&url, ("POSTWIRE_SECRET_KEY_FILE", key_path));
    server.stop();
    std::fs::write(&key_file, "k9:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n").unwrap();
    let out = postwire()
        .args(["serve", "--listen", "127.0.0.1:0", "--database-url", &url])
        .env("POSTWIRE_SECRET_KEY_FILE", key_path)
        .env("POSTWIRE_INGEST_TOKEN", INGEST)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("`{new_id}`")),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
