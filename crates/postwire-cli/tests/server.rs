//! Runs the real `postwire` binary: `demo` to the end, `serve` with tokens made by
//! `postwire token`, graceful SIGTERM with a delivery in flight, and the precedence of
//! flags, environment and config file.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use postwire_core::{Secret, SystemClock};
use postwire_sender::{Sender, SenderConfig};
use postwire_testkit::receiver::Receiver;
use serde_json::{Value, json};

const INGEST: &str = "cli-test-ingest-token-0123456789";

fn postwire() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_postwire"));
    for (k, _) in std::env::vars() {
        if k.starts_with("POSTWIRE_") {
            c.env_remove(k);
        }
    }
    c
}

/// A child process killed when dropped (a failing test leaves nothing running).
struct Running {
    child: Child,
    base: String,
    lines: mpsc::Receiver<String>,
    /// What it printed before `listening on`.
    banner: Vec<String>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Running {
    /// Sends SIGTERM and returns (exit success, rest of stdout).
    fn terminate(mut self) -> (bool, String) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let start = Instant::now();
        let exit = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "serve did not stop after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let rest: Vec<String> = self.lines.try_iter().collect();
        (exit.success(), rest.join("\n"))
    }
}

/// Starts `postwire serve` with `args` and waits for `listening on http://…`.
fn serve(args: &[&str], envs: &[(&str, &str)]) -> Running {
    serve_logging_to(args, envs, Stdio::null())
}

/// Like [`serve`], with the log (standard error) going to `stderr`.
#[allow(clippy::zombie_processes)] // the child is killed and waited for by `Running`'s Drop
fn serve_logging_to(args: &[&str], envs: &[(&str, &str)], stderr: Stdio) -> Running {
    let mut cmd = postwire();
    cmd.arg("serve").args(args).stdout(Stdio::piped()).stderr(stderr);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
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
    let mut seen = Vec::new();
    loop {
        let left = Duration::from_secs(30).saturating_sub(start.elapsed());
        match rx.recv_timeout(left) {
            Ok(line) => {
                if let Some(base) = line.strip_prefix("listening on ") {
                    return Running {
                        child,
                        base: base.trim().to_owned(),
                        lines: rx,
                        banner: seen,
                    };
                }
                seen.push(line);
            }
            Err(_) => {
                let _ = child.kill();
                panic!("serve did not start: {seen:?}");
            }
        }
    }
}

fn token_create(db_args: &[&str], workspace: &str, scope: &str) -> String {
    let out = postwire()
        .args(["token", "create", "--create-database"])
        .args(db_args)
        .args(["--workspace", workspace, "--scope", scope])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(token.starts_with("pw_"), "{token}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("only time the token is shown") && !err.contains(&token));
    token
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn call(
    base: &str,
    method: &str,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let mut req = client
        .request(
            reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
            format!("{base}{path}"),
        )
        .bearer_auth(token);
    if let Some(b) = body {
        req = req.header("content-type", "application/json").body(b.to_string());
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap();
    (status, headers, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[test]
fn demo_ends_with_every_event_delivered_and_verified() {
    let start = Instant::now();
    let out = postwire().args(["demo", "--plain"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(start.elapsed() < Duration::from_secs(60));
    let summary = stdout
        .lines()
        .find(|l| l.contains(" events, "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        summary.starts_with("8 events, 8 delivered, 8 verified, 0 lost"),
        "{summary}"
    );
    assert!(stdout.contains("attempt 1 -> 503"), "a retry is shown: {stdout}");
    assert!(stdout.contains("attempt 3 -> 200, delivered"), "{stdout}");
    assert!(
        stdout.contains("1 duplicate ignored"),
        "the lost acknowledgement's retry is de-duplicated: {stdout}"
    );
    for t in [
        "webhook.test",
        "post.scheduled",
        "post.publishing",
        "post.published",
        "post.failed",
        "integration.disconnected",
    ] {
        assert!(stdout.contains(t), "{t}: {stdout}");
    }
    assert!(
        stdout.contains("--dangerously-allow-insecure-local-urls"),
        "the demo says it uses the dangerous flag"
    );
    assert!(
        stdout
            .match_indices("whsec_")
            .all(|(i, _)| stdout[i + 6..].starts_with('…')),
        "no secret printed: {stdout}"
    );
}

#[test]
fn serve_with_cli_tokens_and_graceful_sigterm_keeps_the_delivery_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("serve.db");
    let db_s = db.to_str().unwrap();
    let server = serve(
        &[
            "--db",
            db_s,
            "--listen",
            "127.0.0.1:0",
            "--dangerously-allow-insecure-local-urls",
        ],
        &[("POSTWIRE_INGEST_TOKEN", INGEST)],
    );
    assert!(db.exists(), "the database is created on first run");
    let writer = token_create(&["--db", db_s], "ws_1", "webhooks:write");
    let reader = token_create(&["--db", db_s], "ws_1", "webhooks:read");
    let rt = runtime();
    let rx = rt.block_on(Receiver::start(Arc::new(SystemClock))).unwrap();
    let base = server.base.clone();
    rt.block_on(async {
        let (status, _, ws) = call(&base, "GET", "/public/v1/workspaces", &writer, None).await;
        assert_eq!(status, 200);
        assert_eq!(ws["data"][0]["id"], "ws_1", "token create registered the workspace");
        let (status, _, _) = call(
            &base,
            "POST",
            "/public/v1/workspaces/ws_1/webhooks",
            &reader,
            Some(json!({"name": "n", "url": rx.url()})),
        )
        .await;
        assert_eq!(status, 403);
        let (status, _, sub) = call(
            &base,
            "POST",
            "/public/v1/workspaces/ws_1/webhooks",
            &writer,
            Some(json!({"name": "n", "url": rx.url()})),
        )
        .await;
        assert_eq!(status, 201, "{sub}");
        rx.set_secrets(vec![Secret::parse(sub["secret"].as_str().unwrap()).unwrap()]);
        rx.set_delay(Duration::from_millis(1500));
        let (status, _, _) = call(
            &base,
            "POST",
            &format!(
                "/public/v1/workspaces/ws_1/webhooks/{}/test",
                sub["id"].as_str().unwrap()
            ),
            &writer,
            None,
        )
        .await;
        assert_eq!(status, 202);
        let start = Instant::now();
        while rx.stats().events.values().map(|e| e.requests).sum::<u32>() == 0 {
            assert!(start.elapsed() < Duration::from_secs(10), "no attempt started");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    // The attempt is in flight (the receiver takes 1.5 s): stop the server now.
    let (ok, rest) = server.terminate();
    assert!(ok, "serve exits 0 on SIGTERM: {rest}");
    assert!(rest.contains("stopped"), "{rest}");
    assert_eq!(rx.stats().handled, 1, "the receiver got it");
    let counts = rt.block_on(async {
        // Secrets are sealed at rest: the store opens only with the key serve generated.
        let key =
            postwire_sender::secret_box::SecretCipher::from_file(&dir.path().join("serve.db.secret-key")).unwrap();
        let config = SenderConfig {
            secret_cipher: Some(Arc::new(key)),
            ..SenderConfig::default()
        };
        let sender = Sender::open_sqlite(&db, config, Arc::new(SystemClock)).await.unwrap();
        sender.delivery_counts(None).await.unwrap()
    });
    assert_eq!(
        (counts.delivered, counts.pending),
        (1, 0),
        "the in-flight attempt finished and was recorded before exit"
    );

    // Token list and revoke work on the file; a revoked token is refused by a new server.
    let list = postwire().args(["token", "list", "--db", db_s]).output().unwrap();
    let listing = String::from_utf8(list.stdout).unwrap();
    assert_eq!(listing.lines().filter(|l| l.contains("active")).count(), 2, "{listing}");
    assert!(!listing.contains(&writer[3..]), "tokens are never listed");
    let id = listing
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    assert!(
        postwire()
            .args(["token", "revoke", "--db", db_s, &id])
            .output()
            .unwrap()
            .status
            .success()
    );
    assert!(
        !postwire()
            .args(["token", "revoke", "--db", db_s, "tok_nope"])
            .output()
            .unwrap()
            .status
            .success()
    );
    let server = serve(
        &["--db", db_s, "--listen", "127.0.0.1:0"],
        &[("POSTWIRE_INGEST_TOKEN", INGEST)],
    );
    let base = server.base.clone();
    rt.block_on(async {
        let (status, _, body) = call(&base, "GET", "/public/v1/workspaces", &writer, None).await;
        assert_eq!((status, body["code"].as_str()), (401, Some("unauthorized")));
        let (status, _, _) = call(&base, "GET", "/public/v1/workspaces", &reader, None).await;
        assert_eq!(status, 200);
    });
    let (ok, _) = server.terminate();
    assert!(ok);
    rt.block_on(rx.stop());
}

fn limit_header(base: &str, token: &str) -> String {
    runtime().block_on(async {
        let (status, headers, _) = call(base, "GET", "/public/v1/workspaces", token, None).await;
        assert_eq!(status, 200);
        headers["x-ratelimit-limit"].to_str().unwrap().to_owned()
    })
}

#[test]
fn settings_come_from_flags_then_environment_then_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cfg.db");
    let config = dir.path().join("postwire.toml");
    std::fs::write(
        &config,
        format!(
            "db = {:?}\nlisten = \"127.0.0.1:0\"\nrate_limit_per_hour = 7\nlog = \"warn\"\n",
            db.to_str().unwrap()
        ),
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    // The config file alone: its db, listen address and limit; the ingest token is generated.
    let token = token_create(&["--config", cfg], "ws_1", "webhooks:read");
    let s = serve(&["--config", cfg], &[]);
    assert_eq!(limit_header(&s.base, &token), "7");
    let (ok, _) = s.terminate();
    assert!(ok);
    assert!(db.exists());
    let generated = Path::new(&format!("{}.ingest-token", db.display())).to_path_buf();
    let ingest = std::fs::read_to_string(&generated).unwrap();
    assert!(ingest.trim().len() >= 16);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&generated).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    // The environment beats the file…
    let s = serve(&[], &[("POSTWIRE_CONFIG", cfg), ("POSTWIRE_RATE_LIMIT_PER_HOUR", "8")]);
    assert_eq!(limit_header(&s.base, &token), "8");
    assert!(s.terminate().0);
    // …and flags beat the environment.
    let s = serve(
        &["--config", cfg, "--rate-limit-per-hour", "9"],
        &[("POSTWIRE_RATE_LIMIT_PER_HOUR", "8")],
    );
    assert_eq!(limit_header(&s.base, &token), "9");
    assert!(s.terminate().0);
    // A bad config file is an error, not a silent default.
    std::fs::write(&config, "rate_limit_per_hour = \"lots\"\n").unwrap();
    let out = postwire().args(["serve", "--config", cfg]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("config file"));
}

#[test]
fn openapi_prints_the_checked_in_document() {
    let out = postwire().arg("openapi").output().unwrap();
    assert!(out.status.success());
    let file = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json")).unwrap();
    assert!(
        out.stdout == file,
        "docs/openapi.json is stale: run `cargo run -p postwire-cli -- openapi > docs/openapi.json`"
    );
}

#[test]
fn at_the_default_level_each_attempt_outcome_is_one_log_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("attempts.db");
    let db_s = db.to_str().unwrap();
    let log_path = dir.path().join("serve.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let args = [
        "--db",
        db_s,
        "--listen",
        "127.0.0.1:0",
        "--dangerously-allow-insecure-local-urls",
    ];
    let server = serve_logging_to(&args, &[("POSTWIRE_INGEST_TOKEN", INGEST)], Stdio::from(log));
    let token = token_create(&["--db", db_s], "ws_1", "webhooks:write");
    let rt = runtime();
    let rx = rt.block_on(Receiver::start(Arc::new(SystemClock))).unwrap();
    let base = server.base.clone();
    let log_has = |needle: &str| std::fs::read_to_string(&log_path).unwrap().contains(needle);
    rt.block_on(async {
        let mut secrets = Vec::new();
        for url in [rx.url(), "http://127.0.0.1:1/refused".to_owned()] {
            let (status, _, sub) = call(
                &base,
                "POST",
                "/public/v1/workspaces/ws_1/webhooks",
                &token,
                Some(json!({"name": "n", "url": url})),
            )
            .await;
            assert_eq!(status, 201);
            secrets.push(Secret::parse(sub["secret"].as_str().unwrap()).unwrap());
            rx.set_secrets(secrets.clone());
            let path = format!(
                "/public/v1/workspaces/ws_1/webhooks/{}/test",
                sub["id"].as_str().unwrap()
            );
            assert_eq!(call(&base, "POST", &path, &token, None).await.0, 202);
        }
        let start = Instant::now();
        while !(log_has("delivery attempt answered") && log_has("delivery attempt failed")) {
            assert!(start.elapsed() < Duration::from_secs(10), "no attempt lines");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    assert!(server.terminate().0);
    rt.block_on(rx.stop());
    let log = std::fs::read_to_string(&log_path).unwrap();
    let answered = log.lines().find(|l| l.contains("delivery attempt answered")).unwrap();
    let failed = log.lines().find(|l| l.contains("delivery attempt failed")).unwrap();
    for field in [
        "delivery=dlv_",
        "subscription_id=wh_",
        "event_id=msg_",
        "attempt=1",
        "duration_ms=",
    ] {
        assert!(
            answered.contains(field) && failed.contains(field),
            "{field}: {answered} / {failed}"
        );
    }
    assert!(
        answered.contains("status=2") && answered.contains("next=delivered"),
        "{answered}"
    );
    assert!(
        failed.contains("error=\"connection\"") && failed.contains("next=retry at "),
        "{failed}"
    );
    assert!(!log.contains("127.0.0.1:1"), "no URL in the log");
}

#[test]
fn the_log_never_carries_secrets_or_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("log.db");
    let db_s = db.to_str().unwrap();
    let log_path = dir.path().join("serve.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let server = serve_logging_to(
        &[
            "--db",
            db_s,
            "--listen",
            "127.0.0.1:0",
            "--dangerously-allow-insecure-local-urls",
            "--log",
            "debug",
        ],
        &[("POSTWIRE_INGEST_TOKEN", INGEST)],
        Stdio::from(log),
    );
    let token = token_create(&["--db", db_s], "ws_1", "webhooks:write");
    let rt = runtime();
    let rx = rt.block_on(Receiver::start(Arc::new(SystemClock))).unwrap();
    let base = server.base.clone();
    let secrets = rt.block_on(async {
        let (status, _, sub) = call(
            &base,
            "POST",
            "/public/v1/workspaces/ws_1/webhooks",
            &token,
            Some(json!({"name": "n", "url": rx.url()})),
        )
        .await;
        assert_eq!(status, 201);
        let first = sub["secret"].as_str().unwrap().to_owned();
        let path = format!("/public/v1/workspaces/ws_1/webhooks/{}", sub["id"].as_str().unwrap());
        let (_, _, rotated) = call(&base, "POST", &format!("{path}/rotate-secret"), &token, None).await;
        let second = rotated["secret"].as_str().unwrap().to_owned();
        rx.set_secrets(vec![Secret::parse(&second).unwrap()]);
        let (status, _, _) = call(&base, "POST", &format!("{path}/test"), &token, None).await;
        assert_eq!(status, 202);
        let (status, _, _) = call(
            &base,
            "GET",
            &format!("{path}?token={token}"),
            "pw_wrong_token_value_for_the_log_test",
            None,
        )
        .await;
        assert_eq!(status, 401);
        let start = Instant::now();
        while rx.stats().handled == 0 {
            assert!(start.elapsed() < Duration::from_secs(10));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        vec![first, second]
    });
    assert!(server.terminate().0);
    rt.block_on(rx.stop());
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        log.contains("subscription created") && log.contains("signing secret rotated"),
        "{log}"
    );
    for secret in &secrets {
        assert!(!log.contains(&secret[6..]), "a signing secret reached the log");
    }
    for t in [&token[3..], &INGEST[4..], "wrong_token_value"] {
        assert!(!log.contains(t), "a token reached the log");
    }
}

#[test]
fn an_ingest_retried_with_its_idempotency_key_after_a_sigkill_publishes_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("serve.db");
    let db_s = db.to_str().unwrap();
    let args = ["--db", db_s, "--listen", "127.0.0.1:0"];
    let envs = [("POSTWIRE_INGEST_TOKEN", INGEST)];
    let reader = token_create(&["--db", db_s], "ws_1", "webhooks:read");
    let body = json!({"changes": [{"kind": "post", "workspaceId": "ws_1", "change": "scheduled", "post": {
        "id": "p1", "externalId": "order-1", "group": "g", "state": "QUEUE", "publishDate": "2026-12-01T09:00:00Z",
        "integration": {"id": "acc_1", "name": "A", "providerIdentifier": "x"}}}]});
    let keyed = |base: String, body: Value| async move {
        let resp = reqwest::Client::builder()
            .no_proxy()
            .build()
            .unwrap()
            .post(format!("{base}/internal/v1/events"))
            .bearer_auth(INGEST)
            .header("idempotency-key", "batch-1")
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let replayed = resp.headers().get("idempotent-replayed").is_some();
        let status = resp.status().as_u16();
        (
            status,
            replayed,
            serde_json::from_str::<Value>(&resp.text().await.unwrap()).unwrap(),
        )
    };
    let rt = runtime();
    let first = serve(&args, &envs);
    let (status, replayed, answer) = rt.block_on(keyed(first.base.clone(), body.clone()));
    assert_eq!((status, replayed), (200, false), "{answer}");
    // Killed as if the answer had been lost on the way: the client retries elsewhere.
    drop(first);
    let second = serve(&args, &envs);
    let (status, replayed, again) = rt.block_on(keyed(second.base.clone(), body.clone()));
    assert_eq!((status, replayed), (200, true));
    assert_eq!(again, answer, "the first answer, with the same event id");
    let mut other = body.clone();
    other["changes"][0]["post"]["id"] = json!("p2");
    let (status, _, refused) = rt.block_on(keyed(second.base.clone(), other));
    assert_eq!(
        (status, refused["code"].as_str()),
        (409, Some("idempotency_key_reused"))
    );
    let (status, _, found) = rt.block_on(call(
        &second.base,
        "GET",
        "/public/v1/workspaces/ws_1/posts/lookup?externalId=order-1",
        &reader,
        None,
    ));
    assert_eq!(status, 200, "{found}");
    assert_eq!(
        found["data"].as_array().unwrap().len(),
        1,
        "one event, not two: {found}"
    );
    assert_eq!(found["data"][0]["id"], answer["results"][0]["eventId"]);
}

/// Every occurrence of `needle` in the database file and its WAL.
fn found_in_db_files(db: &Path, needle: &[u8]) -> Vec<String> {
    let mut hits = Vec::new();
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let path = Path::new(&format!("{}{suffix}", db.display())).to_path_buf();
        if let Ok(bytes) = std::fs::read(&path)
            && bytes.windows(needle.len()).any(|w| w == needle)
        {
            hits.push(path.display().to_string());
        }
    }
    hits
}

fn db_holds_any_secret(db: &Path, secrets: &[String]) {
    use base64::Engine as _;
    assert!(
        found_in_db_files(db, b"whsec_").is_empty(),
        "`whsec_` found in the database files"
    );
    for s in secrets {
        let b64 = &s["whsec_".len()..];
        let raw = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
        assert!(raw.len() >= 24);
        assert!(
            found_in_db_files(db, b64.as_bytes()).is_empty(),
            "a secret's base64 is in the database files"
        );
        assert!(
            found_in_db_files(db, &raw).is_empty(),
            "a secret's raw bytes are in the database files"
        );
    }
}

/// No `v1a` signing key (`whsk_…`, its base64 or its raw 32-byte seed) is in the
/// database files.
fn db_holds_no_signing_key(db: &Path, keys: &[String]) {
    use base64::Engine as _;
    assert!(
        found_in_db_files(db, b"whsk_").is_empty(),
        "`whsk_` found in the database files"
    );
    for k in keys {
        let b64 = &k["whsk_".len()..];
        let raw = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
        assert_eq!(raw.len(), 32);
        assert!(
            found_in_db_files(db, b64.as_bytes()).is_empty(),
            "a signing key's base64 is in the database files"
        );
        assert!(
            found_in_db_files(db, &raw).is_empty(),
            "a signing key's raw seed is in the database files"
        );
    }
}

/// The workspace's signing keys (current, previous) as `whsk_…`, read by opening the
/// stopped server's database with its key file, as the server does; and their public keys.
fn stored_signing_keys(db: &Path, key_file: &Path, workspace: &str) -> (Vec<String>, Vec<String>) {
    use postwire_sender::Store as _;
    use postwire_sender::secret_box::SecretCipher;
    use postwire_sender::store::sqlite::{SqliteOptions, SqliteStore};
    let store = SqliteStore::open_with(
        db,
        SqliteOptions {
            secret_cipher: Some(Arc::new(SecretCipher::from_file(key_file).unwrap())),
            ..Default::default()
        },
    )
    .unwrap();
    let keys = runtime()
        .block_on(store.signing_keys(workspace.to_owned()))
        .unwrap()
        .expect("the workspace has a key pair");
    let previous = keys.previous.expect("a rotated key pair keeps the previous key");
    // `serve` without a PKCS #11 module keeps its keys in process.
    let whsk = |key: &postwire_sender::WorkspaceKey| match key {
        postwire_sender::WorkspaceKey::InProcess(k) => k.expose(),
        postwire_sender::WorkspaceKey::Token(_) => panic!("an in-process key was expected"),
    };
    (
        vec![whsk(&keys.current), whsk(&previous.key)],
        vec![
            keys.current.public_key().to_string(),
            previous.key.public_key().to_string(),
        ],
    )
}

#[test]
fn secrets_are_encrypted_at_rest_the_key_is_required_and_rotates() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("enc.db");
    let db_s = db.to_str().unwrap();
    let key_file = dir.path().join("enc.db.secret-key");
    let args = [
        "--db",
        db_s,
        "--listen",
        "127.0.0.1:0",
        "--dangerously-allow-insecure-local-urls",
    ];
    let server = serve(&args, &[("POSTWIRE_INGEST_TOKEN", INGEST)]);
    // A fresh database without a key: a key file is generated, owner-only.
    let key_text = std::fs::read_to_string(&key_file).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let first_key_id = key_text
        .lines()
        .find(|l| !l.starts_with('#'))
        .unwrap()
        .split(':')
        .next()
        .unwrap()
        .to_owned();
    let token = token_create(&["--db", db_s], "ws_1", "webhooks:write");
    let rt = runtime();
    let rx = rt.block_on(Receiver::start(Arc::new(SystemClock))).unwrap();
    let hook = rx.url();
    let base = server.base.clone();
    let (secrets, sub_path) = rt.block_on(async {
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        // With an Idempotency-Key, so the creation response (with its secret) is stored.
        let created: Value = client
            .post(format!("{base}/public/v1/workspaces/ws_1/webhooks"))
            .bearer_auth(&token)
            .header("idempotency-key", "create-1")
            .body(json!({"name": "n", "url": hook}).to_string())
            .send()
            .await
            .unwrap()
            .text()
            .await
            .map(|t| serde_json::from_str(&t).unwrap())
            .unwrap();
        let first = created["secret"].as_str().unwrap().to_owned();
        let path = format!(
            "/public/v1/workspaces/ws_1/webhooks/{}",
            created["id"].as_str().unwrap()
        );
        let (_, _, rotated) = call(&base, "POST", &format!("{path}/rotate-secret"), &token, None).await;
        let second = rotated["secret"].as_str().unwrap().to_owned();
        // The replay comes from the stored (sealed) response: the same secret.
        let replay: Value = client
            .post(format!("{base}/public/v1/workspaces/ws_1/webhooks"))
            .bearer_auth(&token)
            .header("idempotency-key", "create-1")
            .body(json!({"name": "n", "url": hook}).to_string())
            .send()
            .await
            .unwrap()
            .text()
            .await
            .map(|t| serde_json::from_str(&t).unwrap())
            .unwrap();
        assert_eq!(replay["secret"].as_str().unwrap(), first);
        // The workspace's `v1a` key pair, made and rotated: two signing keys stored.
        let (status, _, rotated) = call(
            &base,
            "POST",
            "/public/v1/workspaces/ws_1/rotate-signing-key",
            &token,
            None,
        )
        .await;
        assert_eq!(status, 200, "{rotated}");
        (vec![first, second], path)
    });
    // While it runs (the WAL holds the recent writes) and after it stops.
    db_holds_any_secret(&db, &secrets);
    assert!(!found_in_db_files(&db, format!("pwenc1.{first_key_id}.").as_bytes()).is_empty());
    let (ok, _) = server.terminate();
    assert!(ok);
    db_holds_any_secret(&db, &secrets);
    let (signing_keys, public_keys) = stored_signing_keys(&db, &key_file, "ws_1");
    db_holds_no_signing_key(&db, &signing_keys);

    // Without the key, start-up fails clearly, naming the key id it needs, and leaves
    // no stray key file behind.
    std::fs::rename(&key_file, dir.path().join("moved-away")).unwrap();
    let out = postwire()
        .arg("serve")
        .args(args)
        .env("POSTWIRE_INGEST_TOKEN", INGEST)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("encrypted under key `{first_key_id}`")), "{err}");
    assert!(err.contains("POSTWIRE_SECRET_KEY_FILE"), "{err}");
    assert!(!key_file.exists(), "the key generated for the refused start is removed");
    std::fs::rename(dir.path().join("moved-away"), &key_file).unwrap();

    // Rotation: a new current key in front, every secret sealed again under it.
    let out = postwire().args(["keys", "rotate", "--db", db_s]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    let rotated = std::fs::read_to_string(&key_file).unwrap();
    let ids: Vec<&str> = rotated
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    assert_eq!(ids[1], first_key_id);
    assert!(said.contains(&format!("encrypted under {}", ids[0])), "{said}");
    assert!(found_in_db_files(&db, format!("pwenc1.{first_key_id}.").as_bytes()).is_empty());
    assert!(!found_in_db_files(&db, format!("pwenc1.{}.", ids[0]).as_bytes()).is_empty());
    db_holds_any_secret(&db, &secrets);
    // The signing keys moved to the new key too, and are the same keys.
    db_holds_no_signing_key(&db, &signing_keys);
    assert_eq!(
        stored_signing_keys(&db, &key_file, "ws_1"),
        (signing_keys.clone(), public_keys.clone())
    );

    // The server starts with the rotated file and signs with the secret it decrypts: a
    // test delivery of the subscription made before the rotation verifies.
    let server = serve(&args, &[("POSTWIRE_INGEST_TOKEN", INGEST)]);
    rx.set_secrets(vec![Secret::parse(&secrets[1]).unwrap()]);
    let base = server.base.clone();
    rt.block_on(async {
        let (status, _, _) = call(&base, "POST", &format!("{sub_path}/test"), &token, None).await;
        assert_eq!(status, 202);
        let start = Instant::now();
        while rx.stats().handled == 0 {
            assert!(start.elapsed() < Duration::from_secs(10), "no verified delivery");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    assert_eq!(rx.stats().rejected, 0);
    // After the restart the API publishes the same public keys.
    let (status, _, listed) = rt.block_on(call(
        &base,
        "GET",
        "/public/v1/workspaces/ws_1/signing-keys",
        &token,
        None,
    ));
    assert_eq!(status, 200, "{listed}");
    let listed: Vec<String> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["publicKey"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed, public_keys);
    assert!(server.terminate().0);
    rt.block_on(rx.stop());
}

#[test]
fn json_logs_carry_a_request_id_on_every_api_line_and_metrics_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("json.db");
    let db_s = db.to_str().unwrap();
    let log_path = dir.path().join("serve.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let server = serve_logging_to(
        &[
            "--db",
            db_s,
            "--listen",
            "127.0.0.1:0",
            "--log-format",
            "json",
            "--metrics-addr",
            "127.0.0.1:0",
        ],
        &[("POSTWIRE_INGEST_TOKEN", INGEST)],
        Stdio::from(log),
    );
    let token = token_create(&["--db", db_s], "ws_1", "webhooks:write");
    let rt = runtime();
    let base = server.base.clone();
    let ids: Vec<String> = rt.block_on(async {
        let mut ids = vec![];
        for body in [
            json!({"name": "n", "url": "https://93.184.216.34/hook"}),
            json!({"name": "", "url": "nope"}),
        ] {
            let client = reqwest::Client::builder().no_proxy().build().unwrap();
            let resp = client
                .post(format!("{base}/public/v1/workspaces/ws_1/webhooks"))
                .bearer_auth(&token)
                .body(body.to_string())
                .send()
                .await
                .unwrap();
            ids.push(resp.headers()["x-request-id"].to_str().unwrap().to_owned());
        }
        ids
    });
    // The metrics listener named in the banner counts those two calls.
    let metrics_url = server
        .banner
        .iter()
        .find_map(|l| l.trim().strip_prefix("metrics"))
        .and_then(|l| l.split_whitespace().next())
        .expect("the banner names the metrics address")
        .to_owned();
    let text = rt.block_on(async {
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        client.get(&metrics_url).send().await.unwrap().text().await.unwrap()
    });
    assert!(
        text.contains(r#"postwire_http_requests_total{method="POST",route="/public/v1/workspaces/:workspaceId/webhooks",status="201"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"postwire_http_requests_total{method="POST",route="/public/v1/workspaces/:workspaceId/webhooks",status="400"} 1"#),
        "{text}"
    );
    assert!(server.terminate().0);
    let log = std::fs::read_to_string(&log_path).unwrap();
    let mut request_lines = 0;
    for line in log.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
        if v["fields"]["message"] == "request" {
            request_lines += 1;
            let id = v["span"]["request_id"]
                .as_str()
                .unwrap_or_else(|| panic!("no request id: {line}"));
            assert_eq!(id.len(), 16);
        }
        if v["fields"]["message"] == "subscription created" {
            assert_eq!(v["span"]["request_id"], ids[0].as_str(), "{line}");
        }
    }
    assert_eq!(request_lines, 2, "{log}");
    assert!(log.contains(&ids[0]) && log.contains(&ids[1]));
}
