//! `v1a` keys kept in a PKCS #11 token, against a real SoftHSM2 started for each test:
//! keys are generated in the token, private and non-extractable; deliveries' `v1a`
//! signatures are made there and verify with the public key the sender publishes; a
//! rotation makes the next key in the token; a token that goes away mid-stream delays
//! deliveries (retried on the normal schedule, never signed with anything else) and none
//! is lost once it is back. On the suite's backend (`POSTWIRE_TEST_BACKEND`).
//!
//! SoftHSM2 reads its configuration (`SOFTHSM2_CONF`) once per process, so each test runs
//! its body in a child process of this test binary with its own configuration and token
//! directory. Without SoftHSM2 (Debian's `softhsm2`) a test notes it and does nothing,
//! except under `CI=true`, where it fails: CI must run them.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::object::{Attribute, AttributeType, ObjectClass};
use cryptoki::session::UserType;
use cryptoki::types::AuthPin;
use postwire_core::{CreatedByKind, SigningMode, UnixTime};
use postwire_sender::{
    DeliverySigner, InProcessKeys, KeyCustody, NewSubscription, PinSource, Pkcs11Config, Pkcs11Keys, TokenSelector,
    WorkspaceKey,
};

const LABEL: &str = "postwire-test";
const PIN: &str = "2468-user";
const SO_PIN: &str = "1357-so";
/// Set in the child process: the SoftHSM2 directory of its test.
const CHILD_DIR: &str = "POSTWIRE_TEST_SOFTHSM_DIR";

/// SoftHSM2's module: `POSTWIRE_TEST_PKCS11_MODULE`, or Debian's paths.
fn module() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("POSTWIRE_TEST_PKCS11_MODULE") {
        return Some(PathBuf::from(p));
    }
    [
        "/usr/lib/softhsm/libsofthsm2.so",
        "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
        "/usr/lib/aarch64-linux-gnu/softhsm/libsofthsm2.so",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.is_file())
}

/// In the parent: makes a SoftHSM2 configuration and token for `test`, runs the test
/// again in a child process with it, checks the child passed, and returns `None`. In the
/// child: the SoftHSM2 directory.
fn softhsm(test: &str) -> Option<PathBuf> {
    if let Ok(dir) = std::env::var(CHILD_DIR) {
        return Some(PathBuf::from(dir));
    }
    let util = Command::new("softhsm2-util").arg("--version").output();
    let Some(_module) = module().filter(|_| util.as_ref().is_ok_and(|o| o.status.success())) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true and SoftHSM2 is missing (apt-get install softhsm2): the PKCS #11 tests must run in CI"
        );
        eprintln!("{test}: SoftHSM2 (softhsm2-util and libsofthsm2.so) is missing; this test did not run");
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::create_dir(&tokens).unwrap();
    let conf = dir.path().join("softhsm2.conf");
    std::fs::write(
        &conf,
        format!(
            "directories.tokendir = {}\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n",
            tokens.display()
        ),
    )
    .unwrap();
    let init = Command::new("softhsm2-util")
        .env("SOFTHSM2_CONF", &conf)
        .args([
            "--init-token",
            "--free",
            "--label",
            LABEL,
            "--pin",
            PIN,
            "--so-pin",
            SO_PIN,
        ])
        .output()
        .unwrap();
    assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));
    let child = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env("SOFTHSM2_CONF", &conf)
        .env(CHILD_DIR, dir.path())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&child.stdout);
    let err = String::from_utf8_lossy(&child.stderr);
    print!("{out}");
    eprint!("{err}");
    assert!(child.status.success(), "{test} failed in its SoftHSM2 process");
    assert!(out.contains("1 passed"), "{test} did not run in its SoftHSM2 process");
    None
}

fn token_config(dir: &Path) -> Pkcs11Config {
    let pin = dir.join("pin");
    std::fs::write(&pin, format!("{PIN}\n")).unwrap();
    Pkcs11Config {
        module: module().unwrap(),
        token: TokenSelector::Label(LABEL.into()),
        pin: PinSource::File(pin),
    }
}

fn with_custody(custody: Arc<dyn KeyCustody>) -> postwire_sender::SenderConfig {
    let mut config = test_config();
    config.key_custody = custody;
    config
}

async fn subscribe(h: &Harness, url: &str) -> String {
    h.sender
        .create_subscription(NewSubscription {
            workspace_id: WS.into(),
            name: "hsm".into(),
            url: url.into(),
            events: vec![],
            integration_ids: vec![],
            created_by_kind: CreatedByKind::ApiToken,
            signing: SigningMode::Asymmetric,
        })
        .await
        .unwrap()
        .subscription
        .id
}

/// The `(class, extractable, sensitive, id)` of every object in the token, read through a
/// session of our own.
fn token_objects() -> Vec<(ObjectClass, bool, bool, Vec<u8>)> {
    let pkcs11 = Pkcs11::new(module().unwrap()).unwrap();
    let _ = pkcs11.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK));
    let slot = pkcs11
        .get_slots_with_token()
        .unwrap()
        .into_iter()
        .find(|s| pkcs11.get_token_info(*s).unwrap().label().trim_end() == LABEL)
        .unwrap();
    let session = pkcs11.open_ro_session(slot).unwrap();
    let _ = session.login(UserType::User, Some(&AuthPin::from(PIN.to_owned())));
    let mut out = Vec::new();
    for object in session.find_objects(&[]).unwrap() {
        let attributes = session
            .get_attributes(object, &[AttributeType::Class, AttributeType::Id])
            .unwrap();
        let (mut class, mut id) = (None, Vec::new());
        for a in attributes {
            match a {
                Attribute::Class(c) => class = Some(c),
                Attribute::Id(i) => id = i,
                _ => {}
            }
        }
        let class = class.unwrap();
        let (mut extractable, mut sensitive) = (true, false);
        if class == ObjectClass::PRIVATE_KEY {
            for a in session
                .get_attributes(object, &[AttributeType::Extractable, AttributeType::Sensitive])
                .unwrap()
            {
                match a {
                    Attribute::Extractable(e) => extractable = e,
                    Attribute::Sensitive(s) => sensitive = s,
                    _ => {}
                }
            }
            // The private value itself cannot be read.
            let value = session.get_attributes(object, &[AttributeType::Value]).unwrap();
            assert!(
                !value.iter().any(|a| matches!(a, Attribute::Value(v) if !v.is_empty())),
                "a private key's value was readable"
            );
        }
        out.push((class, extractable, sensitive, id));
    }
    out
}

/// What the database holds for the workspace's current key.
async fn stored_key_text(h: &Harness) -> String {
    match &h.db {
        Db::Sqlite(_) => rusqlite::Connection::open(h.db.sqlite_path())
            .unwrap()
            .query_row("SELECT signing_key FROM workspaces WHERE id = ?1", [WS], |r| r.get(0))
            .unwrap(),
        Db::Postgres(db) => {
            let (client, connection) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(connection);
            client
                .query_one("SELECT signing_key FROM workspaces WHERE id = $1", &[&WS])
                .await
                .unwrap()
                .get(0)
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_made_in_the_token_never_leave_it_and_sign_every_v1a() {
    let Some(dir) = softhsm("keys_are_made_in_the_token_never_leave_it_and_sign_every_v1a") else {
        return;
    };
    let keys = Pkcs11Keys::open(token_config(&dir)).unwrap();
    let h = Harness::with_config(with_custody(Arc::new(keys))).await;
    let rx = Receiver::succeeding().await;
    subscribe(&h, &rx.url).await;
    let published = h.sender.signing_keys(WS).await.unwrap();
    let first = published[0].public_key.to_string();

    // In the token: one key pair, the private half sensitive and not extractable; in the
    // database: only its id and public key.
    let objects = token_objects();
    assert_eq!(objects.len(), 2, "{objects:?}");
    let private = objects.iter().find(|o| o.0 == ObjectClass::PRIVATE_KEY).unwrap();
    assert_eq!((private.1, private.2, private.3.len()), (false, true, 16));
    let stored = stored_key_text(&h).await;
    let hex: String = private.3.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(stored, format!("pkcs11:{hex}:{first}"));
    assert!(!stored.contains("whsk_"));

    // Deliveries are signed in the token: `v1a` verifying with the published key.
    for post in ["p1", "p2", "p3"] {
        h.sender.publish(scheduled(post)).await.unwrap();
    }
    assert!(rx.wait_for_count(3, Duration::from_secs(20)).await);
    for r in rx.requests() {
        assert_eq!(signature_versions(&r), ["v1a"]);
        verify_with_keys(&r, &[&first]).unwrap();
    }
    // The Settings screen's signed sample too.
    let sample = h.sender.signed_sample(WS, "hello").await.unwrap();
    let headers = [
        ("webhook-id", sample.id.as_str()),
        ("webhook-timestamp", &sample.timestamp.to_string()),
        ("webhook-signature", sample.signature.as_str()),
    ];
    let v = postwire_core::Verifier::parse_keys([first.as_str()]).unwrap();
    v.verify(&headers, sample.body.as_bytes(), UnixTime::from_secs(sample.timestamp))
        .unwrap();

    // A rotation makes the next key in the token; both sign during the window.
    let rotated = h.sender.rotate_signing_key(WS).await.unwrap();
    let second = rotated.keys[0].public_key.to_string();
    assert_ne!(second, first);
    let privates = token_objects()
        .into_iter()
        .filter(|o| o.0 == ObjectClass::PRIVATE_KEY && !o.1 && o.2)
        .count();
    assert_eq!(privates, 2);
    assert!(stored_key_text(&h).await.starts_with("pkcs11:"));
    h.sender.publish(scheduled("p4")).await.unwrap();
    assert!(rx.wait_for_count(4, Duration::from_secs(20)).await);
    let r = rx.requests().pop().unwrap();
    assert_eq!(signature_versions(&r), ["v1a", "v1a"]);
    verify_with_keys(&r, &[&first]).unwrap();
    verify_with_keys(&r, &[&second]).unwrap();
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_gone_mid_stream_delays_deliveries_and_loses_none() {
    let Some(dir) = softhsm("a_token_gone_mid_stream_delays_deliveries_and_loses_none") else {
        return;
    };
    let keys = Pkcs11Keys::open(token_config(&dir)).unwrap();
    let h = Harness::with_config(with_custody(Arc::new(keys))).await;
    let rx = Receiver::succeeding().await;
    let id = subscribe(&h, &rx.url).await;
    let public = h.sender.signing_keys(WS).await.unwrap()[0].public_key.to_string();
    for n in 0..10 {
        h.sender.publish(scheduled(&format!("before-{n}"))).await.unwrap();
    }
    assert!(rx.wait_for_count(10, Duration::from_secs(20)).await);

    // The token goes away (its directory moved, as a removed token), mid-stream.
    let tokens = dir.join("tokens");
    let away = dir.join("tokens-away");
    std::fs::rename(&tokens, &away).unwrap();
    std::fs::create_dir(&tokens).unwrap();
    for n in 0..10 {
        h.sender.publish(scheduled(&format!("during-{n}"))).await.unwrap();
    }
    h.idle().await;
    assert_eq!(rx.count(), 10, "nothing is sent while the module cannot sign");
    let page = h.sender.list_deliveries(&id, None, 100).await.unwrap();
    let waiting: Vec<_> = page.items.iter().filter(|d| d.finished_at.is_none()).collect();
    assert_eq!(waiting.len(), 10);
    for d in &waiting {
        let last = d.attempts.last().expect("attempted");
        assert!(
            matches!(
                last.outcome,
                postwire_sender::AttemptOutcome::Error {
                    error: postwire_sender::AttemptErrorKind::Signing
                }
            ),
            "{:?}",
            last.outcome
        );
        assert!(d.next_attempt_at.is_some(), "retried on the schedule");
    }
    // A retry while it is still gone fails the same way.
    h.advance(60_000).await;
    assert_eq!(rx.count(), 10);

    // Back: the retries go out, signed in the token; nothing lost, nothing twice.
    std::fs::remove_dir(&tokens).unwrap();
    std::fs::rename(&away, &tokens).unwrap();
    for _ in 0..40 {
        if rx.count() >= 20 {
            break;
        }
        h.advance(10 * 60_000).await;
    }
    assert!(
        rx.wait_for_count(20, Duration::from_secs(20)).await,
        "got {}",
        rx.count()
    );
    let requests = rx.requests();
    let mut ids: Vec<String> = requests
        .iter()
        .map(|r| r.header("webhook-id").unwrap().to_owned())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 20, "each event delivered once");
    for r in &requests {
        assert_eq!(signature_versions(r), ["v1a"]);
        verify_with_keys(r, &[&public]).unwrap();
    }
    h.shutdown().await;
}

/// A wrong PIN stops the start-up with an error naming the step, never the PIN; so does a
/// token label that is not there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_pin_or_token_is_refused_at_start_without_showing_the_pin() {
    let Some(dir) = softhsm("a_wrong_pin_or_token_is_refused_at_start_without_showing_the_pin") else {
        return;
    };
    let mut config = token_config(&dir);
    config.pin = PinSource::Value(Arc::new(zeroize::Zeroizing::new("9999-wrong".into())));
    let e = Pkcs11Keys::open(config).unwrap_err().to_string();
    assert!(e.contains("logging in"), "{e}");
    assert!(!e.contains("9999-wrong"));
    let mut config = token_config(&dir);
    config.token = TokenSelector::Label("no-such-token".into());
    let e = Pkcs11Keys::open(config).unwrap_err().to_string();
    assert!(e.contains("no token labelled \"no-such-token\""), "{e}");
    assert!(!e.contains(PIN));
    assert!(Pkcs11Keys::open(token_config(&dir)).is_ok());
}

/// Signing throughput through SoftHSM2 against in-process keys, in the same run, and
/// whole deliveries per second to a loopback receiver with each. Prints the figures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_signing_through_softhsm_against_in_process() {
    let Some(dir) = softhsm("bench_signing_through_softhsm_against_in_process") else {
        return;
    };
    const SIGNATURES: usize = 2_000;
    const DELIVERIES: usize = 300;
    let token: Arc<dyn KeyCustody> = Arc::new(Pkcs11Keys::open(token_config(&dir)).unwrap());
    let local: Arc<dyn KeyCustody> = Arc::new(InProcessKeys);
    let body = vec![b'x'; 1024];
    let mut rates = Vec::new();
    for (name, custody) in [("softhsm2", &token), ("in-process", &local)] {
        let key: WorkspaceKey = custody.generate().await.unwrap();
        let signer = Arc::new(DeliverySigner::new(vec![], vec![key]).unwrap());
        // As the dispatcher does: many attempts at once.
        let started = Instant::now();
        let mut tasks = Vec::new();
        for t in 0..8 {
            let (signer, custody, body) = (signer.clone(), custody.clone(), body.clone());
            tasks.push(tokio::spawn(async move {
                for n in 0..SIGNATURES / 8 {
                    let id = format!("msg_{t}_{n}");
                    signer
                        .sign(&*custody, &id, UnixTime::from_secs(1_800_000_000), &body)
                        .await
                        .unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let signs = SIGNATURES as f64 / started.elapsed().as_secs_f64();

        let h = Harness::with_config(with_custody(custody.clone())).await;
        let rx = Receiver::succeeding().await;
        subscribe(&h, &rx.url).await;
        h.sender.signing_keys(WS).await.unwrap();
        let started = Instant::now();
        for n in 0..DELIVERIES {
            h.sender.publish(scheduled(&format!("p{n}"))).await.unwrap();
        }
        assert!(rx.wait_for_count(DELIVERIES, Duration::from_secs(120)).await);
        let deliveries = DELIVERIES as f64 / started.elapsed().as_secs_f64();
        h.shutdown().await;
        println!(
            "bench {name}: {signs:.0} v1a signatures/s (8 concurrent, 1 KiB bodies); {deliveries:.0} deliveries/s published and delivered to a loopback receiver ({} profile)",
            if cfg!(debug_assertions) { "debug" } else { "release" }
        );
        rates.push((name, signs, deliveries));
    }
    assert!(rates.iter().all(|(_, s, d)| *s > 0.0 && *d > 0.0));
}
