//! `postwire listen --port`: the local inspector, the real binary on loopback, fed by real
//! HTTP requests signed with postwire-core.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use postwire_core::{Secret, Signer, SigningKey, UnixTime};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// The inspector, its address and its JSON lines.
struct Inspector {
    child: Child,
    url: String,
    lines: mpsc::Receiver<String>,
}

impl Drop for Inspector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(args: &[&str]) -> Inspector {
    let mut child = Command::new(env!("CARGO_BIN_EXE_postwire"))
        .args(["listen", "--port", "0", "--json"])
        .args(args)
        .env_remove("POSTWIRE_SECRET")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut banner = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut banner)
        .unwrap();
    let url = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no address in {banner:?}"))
        .to_owned();
    let (tx, lines) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Inspector { child, url, lines }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// POSTs `body` with the three headers; the status and the answer's body.
fn post(url: &str, id: &str, ts: i64, signature: &str, body: &str) -> (u16, String) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut req = reqwest::Client::new()
            .post(format!("{url}webhooks"))
            .header("webhook-id", id)
            .header("webhook-timestamp", ts.to_string())
            .header("content-type", "application/json");
        // An empty signature: no header at all.
        if !signature.is_empty() {
            req = req.header("webhook-signature", signature);
        }
        let res = req.body(body.to_owned()).send().await.unwrap();
        (res.status().as_u16(), res.text().await.unwrap())
    })
}

fn next_line(inspector: &Inspector) -> serde_json::Value {
    let line = inspector
        .lines
        .recv_timeout(Duration::from_secs(10))
        .expect("a printed line");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

#[test]
fn a_good_delivery_verifies_and_a_tampered_one_shows_its_error_code() {
    let inspector = start(&["--secret", SECRET]);
    let signer = Signer::new(Secret::parse(SECRET).unwrap());
    let body = r#"{"id":"msg_good","type":"post.published","timestamp":"2026-01-01T00:00:00Z","data":{}}"#;
    let ts = now();
    let sig = signer
        .sign("msg_good", UnixTime::from_secs(ts), body.as_bytes())
        .unwrap();

    let (status, _) = post(&inspector.url, "msg_good", ts, sig.as_str(), body);
    assert_eq!(status, 204);
    let line = next_line(&inspector);
    assert_eq!(line["id"], "msg_good");
    assert_eq!(line["type"], "post.published");
    assert_eq!(line["verdict"], "ok");
    assert_eq!(line["status"], 204);
    assert!(line["time"].as_str().unwrap().ends_with('Z'), "{line}");

    // One byte of the body changed after signing.
    let tampered = body.replace("published", "PUBLISHED");
    let (status, answer) = post(&inspector.url, "msg_good", ts, sig.as_str(), &tampered);
    assert_eq!(status, 400);
    assert!(answer.starts_with("invalid_signature"), "{answer}");
    let line = next_line(&inspector);
    assert_eq!(line["verdict"], "invalid_signature");
    assert_eq!(line["status"], 400);
    assert_eq!(line["type"], "post.PUBLISHED");

    // A timestamp outside the tolerance: its own code.
    let old = ts - 3600;
    let sig = signer
        .sign("msg_old", UnixTime::from_secs(old), body.as_bytes())
        .unwrap();
    let (status, _) = post(&inspector.url, "msg_old", old, sig.as_str(), body);
    assert_eq!(status, 400);
    assert_eq!(next_line(&inspector)["verdict"], "timestamp_too_old");

    // No signature header at all.
    let (status, _) = post(&inspector.url, "msg_bare", ts, "", body);
    assert_eq!(status, 400);
    assert_eq!(next_line(&inspector)["verdict"], "missing_header");
}

#[test]
fn print_body_adds_the_body_as_json_or_as_text() {
    let inspector = start(&["--secret", SECRET, "--print-body"]);
    let signer = Signer::new(Secret::parse(SECRET).unwrap());
    let ts = now();
    for (id, body) in [
        ("msg_json", r#"{"type":"post.failed","data":{"n":1}}"#),
        ("msg_text", "not json"),
    ] {
        let sig = signer.sign(id, UnixTime::from_secs(ts), body.as_bytes()).unwrap();
        assert_eq!(post(&inspector.url, id, ts, sig.as_str(), body).0, 204);
    }
    let line = next_line(&inspector);
    assert_eq!(
        line["body"],
        serde_json::json!({"type": "post.failed", "data": {"n": 1}})
    );
    assert_eq!(next_line(&inspector)["body"], "not json");
}

#[test]
fn a_v1a_delivery_signed_with_a_whsk_key_verifies_with_its_whpk_key() {
    let key = SigningKey::generate().unwrap();
    let public = key.public_key().to_string();
    assert!(public.starts_with("whpk_"), "{public}");
    let inspector = start(&["--public-key", &public]);
    let signer = Signer::with_keys(Vec::<Secret>::new(), vec![key]).unwrap();
    let body = r#"{"id":"msg_v1a","type":"account.updated","timestamp":"2026-01-01T00:00:00Z","data":{}}"#;
    let ts = now();
    let sig = signer
        .sign("msg_v1a", UnixTime::from_secs(ts), body.as_bytes())
        .unwrap();
    assert!(sig.as_str().starts_with("v1a,"), "{sig}");

    let (status, _) = post(&inspector.url, "msg_v1a", ts, sig.as_str(), body);
    assert_eq!(status, 204);
    let line = next_line(&inspector);
    assert_eq!(
        (line["verdict"].as_str(), line["type"].as_str()),
        (Some("ok"), Some("account.updated"))
    );

    // A v1 signature by some secret is no use to an inspector that only holds the public key.
    let other = Signer::new(Secret::parse(SECRET).unwrap());
    let sig = other.sign("msg_v1", UnixTime::from_secs(ts), body.as_bytes()).unwrap();
    let (status, _) = post(&inspector.url, "msg_v1", ts, sig.as_str(), body);
    assert_eq!(status, 400);
    let verdict = next_line(&inspector)["verdict"].as_str().unwrap().to_owned();
    assert_ne!(verdict, "ok");
}

#[test]
fn the_inspector_refuses_to_start_without_a_key_and_never_echoes_a_bad_one() {
    let out = Command::new(env!("CARGO_BIN_EXE_postwire"))
        .args(["listen", "--port", "0"])
        .env_remove("POSTWIRE_SECRET")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let out = Command::new(env!("CARGO_BIN_EXE_postwire"))
        .args(["listen", "--port", "0", "--secret", "whsec_notbase64!!secretish"])
        .env_remove("POSTWIRE_SECRET")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("notbase64!!secretish"), "{err}");
}

/// Runs `postwire listen` with `args` for at most 10 s: its exit code (`None`: still
/// running, then killed) and standard error.
fn relay_exit(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_postwire"));
    command
        .args([
            "listen",
            "--worker",
            "http://127.0.0.1:9",
            "--forward",
            "http://127.0.0.1:9/webhooks",
        ])
        .args(args)
        .env_remove("POSTWIRE_SECRET")
        .env_remove("POSTWIRE_LISTEN_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().unwrap();
    let started = std::time::Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    (code, stderr)
}

#[test]
fn the_relay_refuses_a_listen_token_on_the_command_line_and_never_echoes_it() {
    const ON_ARGV: &str = "listen-token-on-argv-0123456789";
    let joined = format!("--token={ON_ARGV}");
    for args in [vec!["--token", ON_ARGV], vec![joined.as_str()]] {
        let (code, stderr) = relay_exit(&args, &[]);
        assert_eq!(code, Some(2), "refused at once, not run: {stderr}");
        assert!(
            stderr.contains("POSTWIRE_LISTEN_TOKEN") && stderr.contains("--token-file"),
            "{stderr}"
        );
        assert!(!stderr.contains(ON_ARGV), "the token is never printed: {stderr}");
    }
}

#[test]
fn the_relay_reads_its_token_from_a_file_or_the_environment_and_refuses_an_empty_one() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "\n").unwrap();
    let (code, stderr) = relay_exit(&["--token-file", empty.to_str().unwrap()], &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("empty"), "{stderr}");
    let missing = dir.path().join("missing");
    let (code, stderr) = relay_exit(&["--token-file", missing.to_str().unwrap()], &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--token-file"), "{stderr}");
    // Neither: told where to put it.
    let (code, stderr) = relay_exit(&[], &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("POSTWIRE_LISTEN_TOKEN") && stderr.contains("--token-file"),
        "{stderr}"
    );
}
