//! The API commands (`webhooks`, `deliveries`, `recover`, `operator-webhooks`, `trigger`)
//! run as the real `postwire` binary against a real `postwire serve` on loopback (SQLite),
//! with tokens made by `postwire token create` and a loopback receiver that verifies each
//! delivery's signature: every verb with its `--json` output parsed, and the failures (server
//! down, wrong URL, token without the scope, unknown id, malformed filter) with their exit codes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use postwire_core::{Secret, SystemClock};
use postwire_testkit::receiver::Receiver;
use serde_json::Value;

const INGEST: &str = "api-commands-ingest-token-0123456789";

/// Exit codes, as `--help` documents them.
const USAGE: i32 = 2;
const NOT_FOUND: i32 = 3;
const REFUSED: i32 = 4;
const UNREACHABLE: i32 = 5;
const UNEXPECTED: i32 = 6;

/// `postwire` without any POSTWIRE_* variable of the environment running the tests.
fn postwire() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_postwire"));
    for (k, _) in std::env::vars() {
        if k.starts_with("POSTWIRE_") {
            c.env_remove(k);
        }
    }
    c
}

/// A `postwire serve` on a free loopback port, killed when dropped; with its tokens.
struct Server {
    child: Child,
    base: String,
    dir: tempfile::TempDir,
    /// `webhooks:write` on ws_a, in a file.
    writer: PathBuf,
    /// `webhooks:read` on ws_a, in a file.
    reader: PathBuf,
    /// The writer token's value, to check it is never printed.
    writer_value: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn token(db: &Path, workspace: &str, scope: &str, file: &Path) -> String {
    let out = postwire()
        .args(["token", "create", "--create-database", "--db"])
        .arg(db)
        .args(["--workspace", workspace, "--scope", scope])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    std::fs::write(file, format!("{token}\n")).unwrap();
    token
}

#[allow(clippy::zombie_processes)] // killed and waited for by `Server`'s Drop
fn serve() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("api.db");
    let writer = dir.path().join("writer.token");
    let reader = dir.path().join("reader.token");
    let writer_value = token(&db, "ws_a", "webhooks:write", &writer);
    token(&db, "ws_a", "webhooks:read", &reader);
    let mut child = postwire()
        .arg("serve")
        .arg("--db")
        .arg(&db)
        .args(["--listen", "127.0.0.1:0", "--dangerously-allow-insecure-local-urls"])
        .env("POSTWIRE_INGEST_TOKEN", INGEST)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let start = Instant::now();
    loop {
        let left = Duration::from_secs(30).saturating_sub(start.elapsed());
        match rx.recv_timeout(left) {
            Ok(line) => {
                if let Some(base) = line.strip_prefix("listening on ") {
                    let base = base.trim().to_owned();
                    // Keep draining its output so it never blocks on a full pipe.
                    std::thread::spawn(move || while rx.recv().is_ok() {});
                    return Server {
                        child,
                        base,
                        dir,
                        writer,
                        reader,
                        writer_value,
                    };
                }
            }
            Err(_) => {
                let _ = child.kill();
                panic!("serve did not start");
            }
        }
    }
}

/// One finished command: exit code, standard output, standard error.
struct Run {
    code: i32,
    out: String,
    err: String,
}

impl Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            out: String::from_utf8(o.stdout).unwrap(),
            err: String::from_utf8(o.stderr).unwrap(),
        }
    }

    /// Asserts success and parses standard output as one JSON object.
    fn json(&self) -> Value {
        assert_eq!(self.code, 0, "stdout: {}\nstderr: {}", self.out, self.err);
        serde_json::from_str(self.out.trim()).unwrap_or_else(|e| panic!("not one JSON object ({e}): {}", self.out))
    }

    /// Asserts success and parses each line of standard output as a JSON object.
    fn json_lines(&self) -> Vec<Value> {
        assert_eq!(self.code, 0, "stdout: {}\nstderr: {}", self.out, self.err);
        self.out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
            .collect()
    }

    /// Asserts this exit code and one line on standard error, and returns that line.
    fn failed(&self, code: i32) -> &str {
        assert_eq!(self.code, code, "stdout: {}\nstderr: {}", self.out, self.err);
        let line = self.err.trim_end();
        assert_eq!(line.lines().count(), 1, "one line: {line}");
        assert!(line.starts_with("postwire: "), "{line}");
        assert!(!line.contains("panicked") && !line.contains("RUST_BACKTRACE"), "{line}");
        line
    }
}

impl Server {
    /// Runs `postwire ARGS` against this server with `token_file`.
    fn run_with(&self, token_file: &Path, args: &[&str]) -> Run {
        Run::from(
            postwire()
                .args(args)
                .env("POSTWIRE_URL", &self.base)
                .env("POSTWIRE_TOKEN_FILE", token_file)
                .output()
                .unwrap(),
        )
    }

    /// Runs `postwire ARGS` with the writer token.
    fn run(&self, args: &[&str]) -> Run {
        self.run_with(&self.writer, args)
    }

    /// Runs `postwire trigger ARGS` with the ingest token.
    fn trigger(&self, args: &[&str]) -> Run {
        Run::from(
            postwire()
                .arg("trigger")
                .args(args)
                .env("POSTWIRE_URL", &self.base)
                .env("POSTWIRE_INGEST_TOKEN", INGEST)
                .env("POSTWIRE_WORKSPACE", "ws_a")
                .output()
                .unwrap(),
        )
    }

    /// Polls `deliveries list --json` until `done` holds for the list (10 s at most).
    fn deliveries_until(&self, webhook: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let list = self
                .run(&["deliveries", "list", "--webhook", webhook, "--json"])
                .json_lines();
            if done(&list) {
                return list;
            }
            assert!(start.elapsed() < Duration::from_secs(10), "never: {list:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn webhooks_verbs_then_trigger_reaches_a_verifying_receiver_and_deliveries_show_it() {
    let server = serve();
    let rt = runtime();
    let rx = rt.block_on(Receiver::start(Arc::new(SystemClock))).unwrap();

    // create: the secret is shown once, in the JSON too.
    let created = server
        .run(&[
            "webhooks",
            "create",
            "--url",
            &rx.url(),
            "--name",
            "orders",
            "--event",
            "post.published",
            "--event",
            "webhook.test",
            "--json",
        ])
        .json();
    let id = created["id"].as_str().unwrap().to_owned();
    let secret = created["secret"].as_str().unwrap();
    assert!(secret.starts_with("whsec_"), "{created}");
    assert_eq!(created["events"], serde_json::json!(["post.published", "webhook.test"]));
    rx.set_secrets(vec![Secret::parse(secret).unwrap()]);

    // list: one JSON line per subscription; `--json` before the subcommand works as well.
    let listed = server.run(&["webhooks", "--json", "list"]).json_lines();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], id.as_str());
    assert!(listed[0].get("secret").is_none(), "a listing never carries the secret");
    let table = server.run(&["webhooks", "list"]);
    assert_eq!(table.code, 0);
    assert!(table.out.lines().next().unwrap().starts_with("ID "), "{}", table.out);
    assert!(
        table.out.contains(&id) && table.out.contains("enabled"),
        "{}",
        table.out
    );

    // show, update, pause, resume.
    assert_eq!(
        server.run(&["webhooks", "show", &id, "--json"]).json()["name"],
        "orders"
    );
    let updated = server
        .run(&["webhooks", "update", &id, "--name", "orders-v2", "--json"])
        .json();
    assert_eq!(updated["name"], "orders-v2");
    assert_eq!(updated["events"], created["events"], "what is not named is kept");
    let paused = server.run(&["webhooks", "pause", &id, "--json"]).json();
    assert_eq!(paused["disabled"], true);
    assert_eq!(
        server.run(&["webhooks", "show", &id, "--json"]).json()["disabled"],
        true
    );
    assert_eq!(
        server.run(&["webhooks", "resume", &id, "--json"]).json()["disabled"],
        false
    );

    // test: a webhook.test event, delivered and verified.
    let test = server.run(&["webhooks", "test", &id, "--json"]).json();
    assert_eq!(test["type"], "webhook.test");
    let test_event = test["eventId"].as_str().unwrap().to_owned();

    // trigger: a sample post.published through the ingest API.
    let sent = server.trigger(&["post.published", "--json"]).json();
    let event = sent["results"][0]["eventId"].as_str().unwrap().to_owned();
    assert_eq!(sent["results"][0]["deliveries"], 1, "{sent}");
    let human = server.trigger(&["post.published"]);
    assert_eq!(human.code, 0, "{}", human.err);
    assert!(human.out.starts_with("sent post.published msg_"), "{}", human.out);

    // deliveries list shows the attempts, 2xx, at the receiver that verified them.
    let delivered = server.deliveries_until(&id, |l| l.len() == 3 && l.iter().all(|d| d["state"] == "delivered"));
    let published = delivered.iter().find(|d| d["eventId"] == event.as_str()).unwrap();
    assert_eq!(published["eventType"], "post.published");
    assert_eq!(published["attempts"][0]["responseStatus"], 200);
    let stats = rx.stats();
    for e in [&event, &test_event] {
        let seen = &stats.events[e];
        assert!(seen.verified, "the receiver verified {e}: {seen:?}");
    }
    assert_eq!(stats.rejected, 0);
    let seen = stats.events[&event].event.as_ref().unwrap();
    assert_eq!(seen.event_type().as_str(), "post.published");

    // Filters: by event type, by status, by time.
    let only = server
        .run(&[
            "deliveries",
            "list",
            "--webhook",
            &id,
            "--event-type",
            "post.published",
            "--json",
        ])
        .json_lines();
    assert_eq!(only.len(), 2, "{only:?}");
    assert!(only.iter().all(|d| d["eventType"] == "post.published"));
    let failed = server
        .run(&[
            "deliveries",
            "list",
            "--webhook",
            &id,
            "--status",
            "failed,expired",
            "--json",
        ])
        .json_lines();
    assert!(failed.is_empty(), "{failed:?}");
    let future = server
        .run(&[
            "deliveries",
            "list",
            "--webhook",
            &id,
            "--since",
            "2999-01-01T00:00:00Z",
            "--json",
        ])
        .json_lines();
    assert!(future.is_empty(), "{future:?}");
    let recent = server
        .run(&[
            "deliveries",
            "list",
            "--webhook",
            &id,
            "--since",
            "1h",
            "--limit",
            "1",
            "--json",
        ])
        .json_lines();
    assert_eq!(recent.len(), 1);
    let table = server.run(&["deliveries", "list", "--webhook", &id]);
    assert!(
        table.out.contains("post.published") && table.out.contains("200"),
        "{}",
        table.out
    );

    // show and resend one delivery: a new delivery of the same event, verified again (a duplicate).
    let delivery = published["id"].as_str().unwrap().to_owned();
    let shown = server
        .run(&["deliveries", "show", &delivery, "--webhook", &id, "--json"])
        .json();
    assert_eq!(shown["eventId"], event.as_str());
    let resent = server
        .run(&["deliveries", "resend", &delivery, "--webhook", &id, "--json"])
        .json();
    assert_eq!(resent["resentFrom"], delivery.as_str());
    let after = server.deliveries_until(&id, |l| {
        l.iter()
            .filter(|d| d["eventId"] == event.as_str() && d["state"] == "delivered")
            .count()
            == 2
    });
    assert!(after.iter().any(|d| d["id"] == resent["deliveryId"]));

    // recover: nothing failed for good, so nothing is queued.
    assert_eq!(
        server
            .run(&["recover", "--webhook", &id, "--since", "24h", "--json"])
            .json()["queued"],
        0
    );

    // rotate-secret: a new secret; the previous one keeps signing for a while.
    let rotated = server.run(&["webhooks", "rotate-secret", &id, "--json"]).json();
    assert!(rotated["secret"].as_str().unwrap().starts_with("whsec_"));
    assert_ne!(rotated["secret"].as_str(), Some(secret));

    // delete: then it is not found (exit 3, the API's code).
    assert_eq!(
        server.run(&["webhooks", "delete", &id, "--json"]).json()["deleted"],
        id.as_str()
    );
    let gone = server.run(&["webhooks", "show", &id]);
    let line = gone.failed(NOT_FOUND);
    assert!(line.contains("not_found"), "{line}");
    assert!(server.run(&["webhooks", "list", "--json"]).json_lines().is_empty());

    // Nothing printed the API token.
    for run in [&table, &gone] {
        assert!(!run.out.contains(&server.writer_value) && !run.err.contains(&server.writer_value));
    }
    rt.block_on(rx.stop());
}

#[test]
fn operator_webhooks_verbs() {
    let server = serve();
    let rt = runtime();
    let rx = rt.block_on(Receiver::start(Arc::new(SystemClock))).unwrap();
    let created = server
        .run(&[
            "operator-webhooks",
            "create",
            "--url",
            &rx.url(),
            "--name",
            "on-call",
            "--json",
        ])
        .json();
    let id = created["id"].as_str().unwrap().to_owned();
    rx.set_secrets(vec![Secret::parse(created["secret"].as_str().unwrap()).unwrap()]);
    let listed = server.run(&["operator-webhooks", "list", "--json"]).json_lines();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["name"], "on-call");

    assert_eq!(
        server.run(&["operator-webhooks", "pause", &id, "--json"]).json()["disabled"],
        true
    );
    assert_eq!(
        server.run(&["operator-webhooks", "resume", &id, "--json"]).json()["disabled"],
        false
    );
    let test = server.run(&["operator-webhooks", "test", &id, "--json"]).json();
    let notice = test["eventId"].as_str().unwrap().to_owned();

    // The test notice is delivered to the verifying receiver.
    let start = Instant::now();
    let delivered = loop {
        let list = server
            .run(&["operator-webhooks", "deliveries", &id, "--json"])
            .json_lines();
        if list.iter().any(|d| d["state"] == "delivered") {
            break list;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "never delivered: {list:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(delivered[0]["eventId"], notice.as_str());
    assert!(rx.stats().events[&notice].verified);

    let delivery = delivered[0]["id"].as_str().unwrap();
    let resent = server
        .run(&["operator-webhooks", "resend", &id, delivery, "--json"])
        .json();
    assert_eq!(resent["resentFrom"], delivery);
    let rotated = server
        .run(&["operator-webhooks", "rotate-secret", &id, "--json"])
        .json();
    assert!(rotated["secret"].as_str().unwrap().starts_with("whsec_"));
    server.run(&["operator-webhooks", "delete", &id, "--json"]).json();
    assert!(
        server
            .run(&["operator-webhooks", "list", "--json"])
            .json_lines()
            .is_empty()
    );
    let gone = server.run(&["operator-webhooks", "pause", &id]);
    assert!(gone.failed(NOT_FOUND).contains("not_found"));
    rt.block_on(rx.stop());
}

#[test]
fn failures_have_one_line_the_apis_code_and_their_exit_code() {
    let server = serve();
    let token_value = server.writer_value.clone();
    let check_no_token = |run: &Run| {
        assert!(
            !run.out.contains(&token_value) && !run.err.contains(&token_value),
            "{}",
            run.err
        );
    };

    // Token without the scope: refused (4), with the API's code.
    let refused = server.run_with(
        &server.reader,
        &["webhooks", "create", "--url", "https://example.com/h", "--name", "n"],
    );
    assert!(
        refused.failed(REFUSED).contains("insufficient_scope"),
        "{}",
        refused.err
    );
    // The read token still lists.
    assert!(
        server
            .run_with(&server.reader, &["webhooks", "list", "--json"])
            .json_lines()
            .is_empty()
    );
    // A workspace the token does not cover: refused.
    let other = server.run(&["webhooks", "list", "--workspace", "ws_other"]);
    let line = other.failed(REFUSED);
    assert!(line.contains("forbidden"), "{line}");
    // A wrong token: refused, and never echoed.
    let wrong = server.dir.path().join("wrong.token");
    std::fs::write(&wrong, "pw_not_a_real_token_0123456789\n").unwrap();
    let bad = server.run_with(&wrong, &["webhooks", "list"]);
    assert!(bad.failed(REFUSED).contains("unauthorized"));
    assert!(!bad.err.contains("pw_not_a_real_token"), "{}", bad.err);

    // Unknown id: not found (3).
    let unknown = server.run(&["webhooks", "show", "wh_does_not_exist"]);
    assert!(unknown.failed(NOT_FOUND).contains("not_found"));
    let unknown = server.run(&["deliveries", "resend", "dlv_1", "--webhook", "wh_does_not_exist"]);
    unknown.failed(NOT_FOUND);

    // Malformed filters and values: bad usage (2), from the CLI or as the API's invalid_request.
    let since = server.run(&["deliveries", "list", "--webhook", "wh_x", "--since", "yesterday"]);
    assert_eq!(since.code, USAGE, "{}", since.err);
    assert!(since.err.contains("--since"), "{}", since.err);
    let status = server.run(&["deliveries", "list", "--webhook", "wh_x", "--status", "lost"]);
    assert!(status.failed(USAGE).contains("--status"), "{}", status.err);
    let event = server.run(&[
        "webhooks",
        "create",
        "--url",
        "https://example.com/h",
        "--name",
        "n",
        "--event",
        "post.nope",
    ]);
    assert!(event.failed(USAGE).contains("--event"), "{}", event.err);
    let created = server
        .run(&[
            "webhooks",
            "create",
            "--url",
            "https://example.com/h",
            "--name",
            "n",
            "--json",
        ])
        .json();
    let id = created["id"].as_str().unwrap();
    let cursor = server.run(&["deliveries", "list", "--webhook", id, "--cursor", "not-a-cursor"]);
    assert!(cursor.failed(USAGE).contains("invalid_request"), "{}", cursor.err);
    let name = server.run(&["webhooks", "update", id, "--name", " "]);
    assert!(name.failed(USAGE).contains("invalid_request"), "{}", name.err);
    check_no_token(&name);

    // No token at all: usage, naming where a token comes from.
    let none = Run::from(
        postwire()
            .args(["webhooks", "list"])
            .env("POSTWIRE_URL", &server.base)
            .output()
            .unwrap(),
    );
    assert!(none.failed(USAGE).contains("POSTWIRE_TOKEN"), "{}", none.err);
    // A token given as a flag is not a flag.
    let flag = Run::from(
        postwire()
            .args(["webhooks", "list", "--token", "pw_x"])
            .output()
            .unwrap(),
    );
    assert_eq!(flag.code, USAGE);

    // Server down: unreachable (5).
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let unreachable = Run::from(
        postwire()
            .args(["webhooks", "list", "--server", &down])
            .env("POSTWIRE_TOKEN_FILE", &server.writer)
            .output()
            .unwrap(),
    );
    assert!(
        unreachable.failed(UNREACHABLE).contains("unreachable"),
        "{}",
        unreachable.err
    );
    check_no_token(&unreachable);
    let trigger_down = Run::from(
        postwire()
            .args(["trigger", "post.failed", "--workspace", "ws_a", "--server", &down])
            .env("POSTWIRE_INGEST_TOKEN", INGEST)
            .output()
            .unwrap(),
    );
    trigger_down.failed(UNREACHABLE);

    // Wrong URL: an HTTP server that is not the API (a receiver) is an unexpected answer (6).
    let rt = runtime();
    let rx = rt.block_on(Receiver::start(Arc::new(SystemClock))).unwrap();
    let receiver_base = rx.url().trim_end_matches("/webhooks").to_owned();
    let wrong_url = Run::from(
        postwire()
            .args(["webhooks", "list", "--workspace", "ws_a", "--server", &receiver_base])
            .env("POSTWIRE_TOKEN_FILE", &server.writer)
            .output()
            .unwrap(),
    );
    assert!(
        wrong_url.failed(UNEXPECTED).contains("not the postwire API"),
        "{}",
        wrong_url.err
    );
    let not_a_url = server.run(&["webhooks", "list", "--server", "127.0.0.1 8080"]);
    assert!(not_a_url.failed(USAGE).contains("POSTWIRE_URL"), "{}", not_a_url.err);
    rt.block_on(rx.stop());

    // The ingest API: a wrong token is refused, an unregistered workspace is not found.
    let wrong_ingest = Run::from(
        postwire()
            .args([
                "trigger",
                "post.published",
                "--workspace",
                "ws_a",
                "--server",
                &server.base,
            ])
            .env("POSTWIRE_INGEST_TOKEN", "not-the-ingest-token-0123456789")
            .output()
            .unwrap(),
    );
    assert!(wrong_ingest.failed(REFUSED).contains("unauthorized"));
    assert!(!wrong_ingest.err.contains("not-the-ingest-token"));
    let unregistered = server.trigger(&["integration.disconnected", "--workspace", "ws_nowhere"]);
    assert!(
        unregistered.failed(NOT_FOUND).contains("not_found"),
        "{}",
        unregistered.err
    );
    let unknown_type = server.trigger(&["post.nope"]);
    assert_eq!(unknown_type.code, USAGE);
}

#[test]
fn json_is_accepted_after_the_subcommand_of_edge_too() {
    // `edge status --json` parses (it used to be refused); it then fails to reach the Worker.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let worker = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let out = Run::from(
        postwire()
            .args(["edge", "--worker", &worker, "status", "--json"])
            .env("POSTWIRE_EDGE_TOKEN", "edge-admin-token-0123456789")
            .output()
            .unwrap(),
    );
    assert!(!out.err.contains("unexpected argument"), "{}", out.err);
    assert_ne!(out.code, 0);
}

#[test]
fn help_documents_every_flag_default_and_the_exit_codes() {
    for cmd in [
        vec!["webhooks", "--help"],
        vec!["deliveries", "--help"],
        vec!["recover", "--help"],
        vec!["operator-webhooks", "--help"],
        vec!["trigger", "--help"],
    ] {
        let out = Run::from(postwire().args(&cmd).output().unwrap());
        assert_eq!(out.code, 0, "{cmd:?}");
        assert!(out.out.contains("Exit codes"), "{cmd:?}: {}", out.out);
        assert!(
            out.out.contains("POSTWIRE_URL") && out.out.contains("default"),
            "{cmd:?}: {}",
            out.out
        );
        assert!(!out.out.contains("--token "), "no token flag: {cmd:?}");
    }
    let list = Run::from(postwire().args(["deliveries", "list", "--help"]).output().unwrap());
    assert!(
        list.out.contains("[default: 20]") && list.out.contains("[default: every state]"),
        "{}",
        list.out
    );
}
