//! `postwire keys rotate` while the server runs: the running server reads its key file
//! again, seals new secrets under the new key at once, re-encrypts every stored secret
//! (current and previous ones, sealed idempotent responses, and the workspace's `v1a`
//! signing keys) in the background, and
//! keeps signing deliveries the receivers verify. Afterwards the old key can leave the
//! key file. Real HTTP, a real SQLite file; the key file is checked every 100 ms.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Harness, Options, eventually, receiver};
use postwire_core::Secret;
use postwire_sender::secret_box::{RESEAL_BATCH, SecretCipher};
use postwire_sender::store::sqlite::{SqliteOptions, SqliteStore};
use postwire_server::limits::Limits;
use serde_json::json;

/// Stored values sealed under `key_id`: subscription secrets, previous secrets,
/// idempotent responses.
fn sealed_under(db: &std::path::Path, key_id: &str) -> (i64, i64, i64) {
    let all = sealed_with_keys_under(db, key_id);
    (all.0, all.1, all.2)
}

/// [`sealed_under`], and the workspaces' `v1a` signing keys (current and previous).
fn sealed_with_keys_under(db: &std::path::Path, key_id: &str) -> (i64, i64, i64, i64) {
    let c = rusqlite::Connection::open(db).unwrap();
    let prefix = format!("pwenc1.{key_id}.");
    let count = |sql: &str| -> i64 { c.query_row(sql, [&prefix], |r| r.get(0)).unwrap() };
    (
        count("SELECT count(*) FROM subscriptions WHERE substr(secret, 1, length(?1)) = ?1"),
        count("SELECT count(*) FROM subscriptions WHERE substr(previous_secret, 1, length(?1)) = ?1"),
        count("SELECT count(*) FROM idempotency_keys WHERE substr(response, 1, length(?1)) = ?1"),
        count("SELECT count(*) FROM workspaces WHERE substr(signing_key, 1, length(?1)) = ?1")
            + count("SELECT count(*) FROM workspaces WHERE substr(previous_signing_key, 1, length(?1)) = ?1"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotation_while_serving_reseals_every_secret_in_the_background_and_deliveries_still_verify() {
    let h = Harness::start_with(Options {
        encrypt: true,
        key_file_check_interval: Some(Duration::from_millis(100)),
        limits: Limits {
            max_subscriptions_per_workspace: 1_000,
            unauthenticated_per_hour: 10_000,
            ..Limits::default()
        },
        ..Options::default()
    })
    .await;
    let db = h.dir.path().join("postwire.db");
    let key_file = h.dir.path().join("postwire.db.secret-key");
    let old_id = SecretCipher::from_file(&key_file).unwrap().current_key_id();
    let w = h.writer().await;
    let good = receiver().await;

    // More subscriptions than one re-encryption batch, some created with an
    // Idempotency-Key (their stored response carries the secret, sealed), one rotated
    // (its previous secret is kept for 24 h, sealed too).
    let subscriptions = RESEAL_BATCH + 50;
    let mut first = None;
    for i in 0..subscriptions {
        let url = if i == 0 {
            good.url()
        } else {
            format!("{}/{i}", common::PUBLIC_URL)
        };
        let r = h
            .http
            .post(format!("{}/public/v1/workspaces/ws_a/webhooks", h.base))
            .bearer_auth(&w)
            .header("idempotency-key", format!("create-{i}"))
            .header("content-type", "application/json")
            .body(json!({"name": format!("s{i}"), "url": url}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
        let body: serde_json::Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
        if i == 0 {
            first = Some(body);
        }
    }
    let first = first.unwrap();
    let id = first["id"].as_str().unwrap();
    let r = h
        .json(
            "POST",
            &format!("/public/v1/workspaces/ws_a/webhooks/{id}/rotate-secret"),
            &w,
            json!({}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let secret = Secret::parse(r.json["secret"].as_str().unwrap()).unwrap();
    good.set_secrets(vec![secret]);
    // The workspace's v1a key pair, made and rotated: two signing keys sealed too.
    let r = h
        .send("POST", "/public/v1/workspaces/ws_a/rotate-signing-key", Some(&w), None)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(sealed_with_keys_under(&db, &old_id).3, 2);
    let before = sealed_under(&db, &old_id);
    assert_eq!(before.0, subscriptions as i64);
    assert_eq!(before.1, 1);
    assert!(before.2 >= subscriptions as i64, "{before:?}");

    // `postwire keys rotate` does this to the file: a new current key in front.
    let line = SecretCipher::generate_key_line().unwrap();
    let old_text = std::fs::read_to_string(&key_file).unwrap();
    std::fs::write(&key_file, format!("{}\n{old_text}", *line)).unwrap();
    let new_id = SecretCipher::from_file(&key_file).unwrap().current_key_id();
    assert_ne!(new_id, old_id);

    eventually("every secret and signing key sealed under the new key", || {
        sealed_with_keys_under(&db, &old_id) == (0, 0, 0, 0)
    })
    .await;
    assert_eq!(sealed_with_keys_under(&db, &new_id).3, 2);
    let after = sealed_under(&db, &new_id);
    assert_eq!((after.0, after.1), (subscriptions as i64, 1));
    assert_eq!(after.2, before.2);

    // A subscription made now is sealed under the new key; deliveries still verify.
    let r = h
        .json(
            "POST",
            "/public/v1/workspaces/ws_a/webhooks",
            &w,
            json!({"name": "late", "url": common::PUBLIC_URL}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(sealed_under(&db, &new_id).0, subscriptions as i64 + 1);
    let event = h.post_event("ws_a", "post-1", "ext-1", "scheduled").await;
    eventually("the delivery signed with the rotated secret is verified", || {
        good.stats().events.contains_key(&event)
    })
    .await;
    assert_eq!(good.stats().rejected, 0);
    good.stop().await;
    // Keep the directory past the server's stop.
    let mut h = h;
    let dir = std::mem::replace(&mut h.dir, tempfile::tempdir().unwrap());
    h.stop().await;

    // The old key can now leave the file: the database opens with the new key alone.
    let cipher = SecretCipher::from_key_text(&line).unwrap();
    let store = SqliteStore::open_with(
        &db,
        SqliteOptions {
            secret_cipher: Some(Arc::new(cipher)),
            ..Default::default()
        },
    );
    assert!(store.is_ok(), "{:?}", store.err());
    drop(dir);
}
