//! Crash safety: a sender process killed with SIGKILL mid-publish and mid-delivery (in
//! the middle of a run of promotions), then started again on the same SQLite file,
//! delivers every event it had accepted, in order, each successor once.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use postwire_core::SystemClock;
use postwire_sender::{Sender, Workspace};

const HOST: &str = env!("CARGO_BIN_EXE_postwire-sender-host");

fn spawn_host(db: &std::path::Path, publish: usize, exit_when_idle: bool) -> std::process::Child {
    let mut cmd = Command::new(HOST);
    cmd.args([
        "--db",
        db.to_str().unwrap(),
        "--workspace",
        WS,
        "--publish",
        &publish.to_string(),
        "--insecure-local",
    ])
    .args(["--post-prefix", "the-post", "--same-post"])
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    if exit_when_idle {
        cmd.arg("--exit-when-idle");
    }
    cmd.spawn().expect("start the sender host")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_with_sigkill_and_restarted_it_delivers_every_accepted_event_in_order() {
    // Each request takes 2 ms; all events are about one post, so they go one at a time
    // and most are still pending when the process is killed.
    let rx = Receiver::start(|_, _| Reply::ok().delay(Duration::from_millis(2))).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sender.db");
    let secret = {
        let sender = Sender::open_sqlite(&db, test_config(), Arc::new(SystemClock))
            .await
            .unwrap();
        sender
            .upsert_workspace(Workspace {
                id: WS.into(),
                name: "w".into(),
            })
            .await
            .unwrap();
        sender
            .create_subscription(unfiltered("crash test", &rx.url))
            .await
            .unwrap()
            .secret
    };

    // The host publishes 2000 events about one post, printing each id once accepted.
    let mut child = spawn_host(&db, 2000, false);
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut accepted = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(id) = line.strip_prefix("accepted ") {
                accepted.push(id.to_owned());
            }
        }
        accepted
    });
    assert!(
        rx.wait_for_count(30, Duration::from_secs(30)).await,
        "deliveries started"
    );
    child.kill().expect("SIGKILL"); // std sends SIGKILL on Unix
    let status = child.wait().unwrap();
    assert!(!status.success());
    let accepted = reader.join().unwrap();
    let received_before: std::collections::HashSet<String> = rx.requests().iter().map(|r| r.id()).collect();
    let missing_before = accepted.iter().filter(|id| !received_before.contains(*id)).count();
    assert!(accepted.len() >= 30, "accepted {}", accepted.len());
    assert!(missing_before > 0, "the kill happened mid-delivery");

    // Restart on the same file; it exits once nothing is pending.
    let started = Instant::now();
    let mut child = spawn_host(&db, 0, true);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success());
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "restarted host did not finish"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let requests = rx.requests();
    assert!(
        requests.iter().all(|r| r.verify(std::slice::from_ref(&secret)).is_ok()),
        "every delivery verifies"
    );
    let received: Vec<String> = requests.iter().map(|r| r.id()).collect();
    for id in &accepted {
        assert!(received.contains(id), "accepted event {id} was delivered");
    }
    // Events about one post arrive in publish order (first arrivals; a delivery cut by
    // the kill may arrive twice, which at-least-once allows).
    let mut first_arrivals: Vec<&String> = Vec::new();
    for id in &received {
        if !first_arrivals.contains(&id) {
            first_arrivals.push(id);
        }
    }
    let accepted_order: Vec<&String> = first_arrivals
        .iter()
        .copied()
        .filter(|id| accepted.contains(id))
        .collect();
    assert_eq!(accepted_order, accepted.iter().collect::<Vec<_>>());
    // All events are about one post, so each delivery's outcome promotes the next in its
    // transaction, and the kill lands between or inside those commits. After the
    // restart every successor is the head exactly once: only the attempt cut by the kill
    // (sent, its outcome not yet written) may go out a second time.
    let duplicates = received.len() - first_arrivals.len();
    assert!(duplicates <= 1, "{duplicates} deliveries were sent twice");
    eprintln!(
        "accepted {} before the kill, {} of them not yet delivered; {} requests in all",
        accepted.len(),
        missing_before,
        received.len()
    );
}
