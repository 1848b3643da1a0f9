//! `postwire verify --keys-url`: the real binary against a real HTTP server on loopback
//! (a small std::net server in this file) that serves a published key set, and every bad
//! answer: each gives its stable code, in bounded time, and never a crash.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use postwire_core::key_set::{PublishedKey, to_jwks_json};
use postwire_core::{PublicKey, SigningKey, UnixTime};

/// What the server answers to one request (its path given).
type Answer = Box<dyn Fn(&str, &mut TcpStream) + Send + Sync>;

/// A loopback HTTP/1.1 server: one thread, one request per connection, `hits` counted.
struct Server {
    port: u16,
    hits: Arc<AtomicUsize>,
    answer: Arc<Mutex<Answer>>,
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let answer: Arc<Mutex<Answer>> = Arc::new(Mutex::new(Box::new(|_, _| {})));
        let (h, a) = (hits.clone(), answer.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let (h, a) = (h.clone(), a.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut line = String::new();
                    if reader.read_line(&mut line).is_err() {
                        return;
                    }
                    let path = line.split(' ').nth(1).unwrap_or("/").to_owned();
                    loop {
                        let mut header = String::new();
                        if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                            break;
                        }
                    }
                    h.fetch_add(1, Ordering::SeqCst);
                    let answer = a.lock().unwrap();
                    answer(&path, &mut stream);
                });
            }
        });
        Server { port, hits, answer }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn answer(&self, f: impl Fn(&str, &mut TcpStream) + Send + Sync + 'static) {
        *self.answer.lock().unwrap() = Box::new(f);
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

fn respond(stream: &mut TcpStream, status: &str, headers: &str, body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n{headers}\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
}

fn serve_json(body: String) -> impl Fn(&str, &mut TcpStream) + Send + Sync + 'static {
    move |_, s| {
        respond(
            s,
            "200 OK",
            "content-type: application/jwk-set+json\r\ncache-control: public, max-age=300\r\n",
            body.as_bytes(),
        )
    }
}

fn published(keys: &[PublicKey]) -> String {
    let keys: Vec<PublishedKey> = keys
        .iter()
        .map(|&public_key| PublishedKey {
            public_key,
            not_before: Some(1_765_000_000),
            expires_at: None,
        })
        .collect();
    to_jwks_json(&keys)
}

const BODY: &str = r#"{"id":"msg_k","type":"webhook.test"}"#;
const TS: i64 = 1_765_000_100;

/// `postwire verify --keys-url <url>` of a delivery signed by `key`; stdout, and how long it took.
fn verify(url: &str, key: &SigningKey, extra: &[&str]) -> (Output, Duration) {
    let sig = key
        .sign("msg_k", UnixTime::from_secs(TS), BODY.as_bytes())
        .unwrap()
        .to_string();
    let ts = TS.to_string();
    let now = (TS + 1).to_string();
    let mut args = vec![
        "verify",
        "--keys-url",
        url,
        "--id",
        "msg_k",
        "--timestamp",
        &ts,
        "--signature",
        &sig,
        "--now",
        &now,
        "--keys-timeout",
        "1",
    ];
    args.extend_from_slice(extra);
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_postwire"))
        .args(&args)
        .env_remove("POSTWIRE_SECRET")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(BODY.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (out, started.elapsed())
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim_end().to_owned()
}

#[test]
fn verifies_with_the_published_keys_and_refuses_others() {
    let server = Server::start();
    let current = SigningKey::generate().unwrap();
    let previous = SigningKey::generate().unwrap();
    server.answer(serve_json(published(&[current.public_key(), previous.public_key()])));
    let url = server.url("/v1/key-sets/ks_1.jwks");
    for key in [&current, &previous] {
        let (out, _) = verify(&url, key, &[]);
        assert_eq!(stdout(&out), "ok");
        assert!(out.status.success());
    }
    let (out, _) = verify(&url, &SigningKey::generate().unwrap(), &[]);
    assert!(stdout(&out).starts_with("invalid_signature: "), "{}", stdout(&out));
    assert_eq!(out.status.code(), Some(1));
    // Beside a --secret: the key set's keys still verify the v1a entry.
    let (out, _) = verify(&url, &current, &["--secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]);
    assert_eq!(stdout(&out), "ok");
    assert_eq!(server.hits(), 4);
}

#[test]
fn bad_documents_and_servers_give_their_code_in_bounded_time() {
    let server = Server::start();
    let other = Server::start();
    let key = SigningKey::generate().unwrap();
    let good = published(&[key.public_key()]);
    other.answer(serve_json(good.clone()));
    let x25519 = good.replace("Ed25519", "X25519");
    let no_kid = {
        let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
        v["keys"][0].as_object_mut().unwrap().remove("kid");
        v.to_string()
    };
    let other_url = other.url("/keys.jwks");
    let same_origin = server.url("/final.jwks");
    type Case = (&'static str, &'static str, Answer);
    let cases: Vec<Case> = vec![
        (
            "not JSON",
            "invalid_key_set",
            Box::new(serve_json("<html>down</html>".into())),
        ),
        ("another curve", "invalid_key_set", Box::new(serve_json(x25519))),
        ("no kid", "invalid_key_set", Box::new(serve_json(no_kid))),
        ("oversized", "invalid_key_set", Box::new(serve_json(" ".repeat(70_000)))),
        (
            "oversized, chunked and endless",
            "invalid_key_set",
            Box::new(|_, s| {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n");
                let chunk = format!("4000\r\n{}\r\n", " ".repeat(0x4000));
                while s.write_all(chunk.as_bytes()).is_ok() {}
            }),
        ),
        (
            "HTTP 500",
            "key_set_unavailable",
            Box::new(|_, s| respond(s, "500 Internal Server Error", "", b"no")),
        ),
        (
            "headers never sent",
            "key_set_unavailable",
            Box::new(|_, _| std::thread::sleep(Duration::from_secs(3))),
        ),
        (
            "a body that trickles",
            "key_set_unavailable",
            Box::new(move |_, s| {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n");
                for _ in 0..30 {
                    std::thread::sleep(Duration::from_millis(100));
                    if s.write_all(b" ").is_err() {
                        break;
                    }
                }
            }),
        ),
        (
            "a redirect to another host",
            "key_set_unavailable",
            Box::new(move |_, s| respond(s, "302 Found", &format!("location: {other_url}\r\n"), b"")),
        ),
        (
            "a redirect loop within the origin",
            "key_set_unavailable",
            Box::new(move |_, s| respond(s, "302 Found", &format!("location: {same_origin}\r\n"), b"")),
        ),
        (
            "a connection closed at once",
            "key_set_unavailable",
            Box::new(|_, _| {}),
        ),
    ];
    for (name, code, answer) in cases {
        *server.answer.lock().unwrap() = answer;
        let (out, took) = verify(&server.url("/keys.jwks"), &key, &[]);
        let text = stdout(&out);
        assert!(text.starts_with(&format!("{code}: ")), "{name}: {text}");
        assert_eq!(out.status.code(), Some(1), "{name}");
        assert!(took < Duration::from_secs(3), "{name}: {took:?}");
    }
    assert_eq!(other.hits(), 0, "the other host was never asked");
    // A redirect within the origin is followed.
    let doc = good.clone();
    server.answer(move |path, s| {
        if path == "/moved.jwks" {
            respond(s, "200 OK", "", doc.as_bytes());
        } else {
            respond(s, "308 Permanent Redirect", "location: /moved.jwks\r\n", b"");
        }
    });
    let (out, _) = verify(&server.url("/keys.jwks"), &key, &[]);
    assert_eq!(stdout(&out), "ok");
    // Nothing listening.
    let (out, _) = verify("http://127.0.0.1:9/keys.jwks", &key, &[]);
    assert!(stdout(&out).starts_with("key_set_unavailable: "), "{}", stdout(&out));
    // Neither --secret nor --keys-url: a usage error.
    let out = Command::new(env!("CARGO_BIN_EXE_postwire"))
        .args(["verify", "--id", "m", "--timestamp", "1", "--signature", "v1,x"])
        .env_remove("POSTWIRE_SECRET")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
