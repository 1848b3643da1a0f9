//! The `v1a` extension over real HTTP: `signing` on creation and update (validated,
//! shown in responses), the workspace's public keys at `GET …/signing-keys`, their
//! rotation at `POST …/rotate-signing-key`, scopes and workspaces, and deliveries to a
//! real loopback receiver verified with nothing but the `whpk_` key the API published.

mod common;

use std::time::Duration;

use common::{Harness, PUBLIC_URL};
use postwire_core::{UnixTime, Verifier};
use postwire_server::Scope;
use postwire_testkit::scripted::{Receiver, Recorded};
use serde_json::{Value, json};

const KEYS: &str = "/public/v1/workspaces/ws_a/signing-keys";
const ROTATE: &str = "/public/v1/workspaces/ws_a/rotate-signing-key";

/// Verifies a delivery with a trust list of `whsec_`/`whpk_` keys, at its own timestamp.
fn verify(r: &Recorded, keys: &[&str]) -> Result<(), postwire_core::Error> {
    let v = Verifier::parse_keys(keys.iter())?;
    v.verify(&r.headers, &r.body, UnixTime::from_secs(r.timestamp()))
        .map(|_| ())
}

fn versions(r: &Recorded) -> Vec<String> {
    r.header("webhook-signature")
        .unwrap_or_default()
        .split(' ')
        .map(|e| e.split(',').next().unwrap_or_default().to_owned())
        .collect()
}

async fn create(h: &Harness, token: &str, url: &str, signing: Value) -> Value {
    let r = h
        .json(
            "POST",
            "/public/v1/workspaces/ws_a/webhooks",
            token,
            json!({"name": "v1a", "url": url, "signing": signing}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.json
}

/// Sends a test event to subscription `id` and returns the request the receiver got.
async fn test_delivery(h: &Harness, token: &str, rx: &Receiver, id: &str) -> Recorded {
    let before = rx.count();
    let r = h
        .send(
            "POST",
            &format!("/public/v1/workspaces/ws_a/webhooks/{id}/test"),
            Some(token),
            None,
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert!(
        rx.wait_for_count(before + 1, Duration::from_secs(10)).await,
        "no delivery"
    );
    rx.requests().pop().unwrap()
}

fn public_keys(list: &Value) -> Vec<String> {
    list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["publicKey"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asymmetric_deliveries_verify_with_only_the_published_public_key() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let rx = Receiver::succeeding().await;
    let created = create(&h, &t, &rx.url, json!("asymmetric")).await;
    assert_eq!(created["signing"], "asymmetric");
    let id = created["id"].as_str().unwrap();
    let shown = h
        .send(
            "GET",
            &format!("/public/v1/workspaces/ws_a/webhooks/{id}"),
            Some(&t),
            None,
        )
        .await;
    assert_eq!(shown.json["signing"], "asymmetric");

    let list = h.send("GET", KEYS, Some(&t), None).await;
    assert_eq!(list.status, 200, "{}", list.text);
    let keys = public_keys(&list.json);
    assert_eq!(keys.len(), 1);
    assert!(keys[0].starts_with("whpk_"), "{}", keys[0]);
    assert!(list.json["data"][0]["expiresAt"].is_null());
    assert!(list.json["data"][0]["createdAt"].as_str().unwrap().ends_with('Z'));
    assert!(!list.text.contains("whsk_"), "no secret key is ever shown");

    let r = test_delivery(&h, &t, &rx, id).await;
    assert_eq!(versions(&r), ["v1a"]);
    verify(&r, &[&keys[0]]).unwrap();
    assert!(verify(&r, &[created["secret"].as_str().unwrap()]).is_err());
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_verifies_with_the_secret_alone_and_with_the_public_key_alone() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let rx = Receiver::succeeding().await;
    let created = create(&h, &t, &rx.url, json!("both")).await;
    let id = created["id"].as_str().unwrap();
    let keys = public_keys(&h.send("GET", KEYS, Some(&t), None).await.json);
    let r = test_delivery(&h, &t, &rx, id).await;
    assert_eq!(versions(&r), ["v1", "v1a"]);
    verify(&r, &[created["secret"].as_str().unwrap()]).unwrap();
    verify(&r, &[&keys[0]]).unwrap();
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signing_is_validated_on_creation_and_update() {
    let h = Harness::start().await;
    let t = h.writer().await;
    for bad in [json!("ed25519"), json!(""), json!(1), json!(["both"])] {
        let r = h
            .json(
                "POST",
                "/public/v1/workspaces/ws_a/webhooks",
                &t,
                json!({"name": "n", "url": PUBLIC_URL, "signing": bad}),
            )
            .await;
        r.assert_error(400, "invalid_request");
        assert!(
            r.messages().iter().any(|m| m.contains("`signing`")),
            "{:?}",
            r.messages()
        );
    }
    let created = create(&h, &t, PUBLIC_URL, Value::Null).await;
    assert_eq!(created["signing"], "symmetric");
    let path = format!(
        "/public/v1/workspaces/ws_a/webhooks/{}",
        created["id"].as_str().unwrap()
    );
    for bad in [json!("nope"), Value::Null] {
        let r = h.json("PATCH", &path, &t, json!({"signing": bad})).await;
        r.assert_error(400, "invalid_request");
    }
    let r = h.json("PATCH", &path, &t, json!({"signing": "both"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["signing"], "both");
    let r = h.json("PATCH", &path, &t, json!({"name": "renamed"})).await;
    assert_eq!(
        (r.json["signing"].as_str(), r.json["name"].as_str()),
        (Some("both"), Some("renamed"))
    );
    let list = h
        .send("GET", "/public/v1/workspaces/ws_a/webhooks", Some(&t), None)
        .await;
    assert_eq!(list.json["data"][0]["signing"], "both");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotation_publishes_both_keys_and_signs_with_both() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let rx = Receiver::succeeding().await;
    let created = create(&h, &t, &rx.url, json!("asymmetric")).await;
    let id = created["id"].as_str().unwrap();
    let old = public_keys(&h.send("GET", KEYS, Some(&t), None).await.json).remove(0);

    let r = h.send("POST", ROTATE, Some(&t), None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let new = r.json["publicKey"].as_str().unwrap().to_owned();
    assert_ne!(new, old);
    assert_eq!(r.json["previousPublicKey"].as_str(), Some(old.as_str()));
    let expires = r.json["previousKeyExpiresAt"].as_str().unwrap().to_owned();

    let list = h.send("GET", KEYS, Some(&t), None).await;
    assert_eq!(public_keys(&list.json), [new.clone(), old.clone()]);
    assert!(list.json["data"][0]["expiresAt"].is_null());
    assert_eq!(list.json["data"][1]["expiresAt"].as_str(), Some(expires.as_str()));

    let r = test_delivery(&h, &t, &rx, id).await;
    assert_eq!(versions(&r), ["v1a", "v1a"]);
    verify(&r, &[&new]).unwrap();
    verify(&r, &[&old]).unwrap();
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scopes_and_workspaces_apply_to_signing_keys() {
    let h = Harness::start().await;
    let reader = h.token(&[Scope::WebhooksRead], &["ws_a"]).await;
    let list = h.send("GET", KEYS, Some(&reader), None).await;
    assert_eq!(list.status, 200, "{}", list.text);
    h.send("POST", ROTATE, Some(&reader), None)
        .await
        .assert_error(403, "insufficient_scope");
    h.send("GET", KEYS, None, None).await.assert_error(401, "unauthorized");
    let other = h.writer().await;
    h.send("GET", "/public/v1/workspaces/ws_b/signing-keys", Some(&other), None)
        .await
        .assert_error(403, "forbidden");
    // A workspace the token may use that does not exist.
    let ghost = h.token(&[Scope::WebhooksWrite], &["ws_ghost"]).await;
    h.send("GET", "/public/v1/workspaces/ws_ghost/signing-keys", Some(&ghost), None)
        .await
        .assert_error(404, "not_found");
    h.send(
        "POST",
        "/public/v1/workspaces/ws_ghost/rotate-signing-key",
        Some(&ghost),
        None,
    )
    .await
    .assert_error(404, "not_found");
    // The same key for every reader, until a rotation.
    let writer_view = h.send("GET", KEYS, Some(&other), None).await;
    assert_eq!(public_keys(&writer_view.json), public_keys(&list.json));
    h.stop().await;
}
