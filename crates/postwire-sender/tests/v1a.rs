//! The `v1a` extension end to end, on the suite's backend: per-subscription `signing`
//! (`symmetric`, `asymmetric`, `both`), the workspace's ed25519 key pair made on first
//! use, its rotation with 24 h of both `v1a` signatures (on the manual clock), and the
//! key pair kept across a restart. Deliveries go to a real loopback receiver and are
//! verified with postwire-core holding only what a receiver would hold.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use postwire_core::{CreatedByKind, ManualClock, SigningMode, Timestamp};
use postwire_sender::{NewSubscription, SubscriptionUpdate};

const DAY_MS: i64 = 24 * 3_600_000;

async fn subscribe(h: &Harness, url: &str, signing: SigningMode) -> (String, postwire_core::Secret) {
    let created = h
        .sender
        .create_subscription(NewSubscription {
            workspace_id: WS.into(),
            name: "v1a".into(),
            url: url.into(),
            events: vec![],
            integration_ids: vec![],
            created_by_kind: CreatedByKind::ApiToken,
            signing,
        })
        .await
        .unwrap();
    assert_eq!(created.subscription.signing, signing);
    (created.subscription.id, created.secret)
}

/// Publishes one event and returns the request the receiver got for it.
async fn deliver_one(h: &Harness, rx: &Receiver, post: &str) -> Recorded {
    let before = rx.count();
    h.sender.publish(scheduled(post)).await.unwrap();
    assert!(rx.wait_for_count(before + 1, Duration::from_secs(10)).await);
    rx.requests().pop().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asymmetric_deliveries_carry_only_v1a_and_verify_with_the_published_public_key() {
    let h = Harness::new().await;
    let rx = Receiver::succeeding().await;
    let (id, secret) = subscribe(&h, &rx.url, SigningMode::Asymmetric).await;
    let keys = h.sender.signing_keys(WS).await.unwrap();
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].expires_at, None);
    let public = keys[0].public_key.to_string();
    assert!(public.starts_with("whpk_"));

    let r = deliver_one(&h, &rx, "p1").await;
    assert_eq!(signature_versions(&r), ["v1a"]);
    verify_with_keys(&r, &[&public]).unwrap();
    // The subscription's HMAC secret signs nothing here.
    assert!(verify_with_keys(&r, &[&secret.expose()]).is_err());
    assert_eq!(
        h.sender.subscription(&id).await.unwrap().subscription.signing,
        SigningMode::Asymmetric
    );
    // The key pair is the workspace's: listing again gives the same key.
    assert_eq!(h.sender.signing_keys(WS).await.unwrap(), keys);
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_is_verified_by_a_v1_only_and_by_a_v1a_only_verifier() {
    let h = Harness::new().await;
    let rx = Receiver::succeeding().await;
    let (_, secret) = subscribe(&h, &rx.url, SigningMode::Both).await;
    let public = h.sender.signing_keys(WS).await.unwrap()[0].public_key.to_string();
    let r = deliver_one(&h, &rx, "p1").await;
    assert_eq!(signature_versions(&r), ["v1", "v1a"]);
    r.verify(std::slice::from_ref(&secret)).unwrap();
    verify_with_keys(&r, &[&public]).unwrap();
    let other = postwire_core::SigningKey::generate().unwrap().public_key().to_string();
    assert!(verify_with_keys(&r, &[&other]).is_err());
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changing_signing_changes_the_next_delivery() {
    let h = Harness::new().await;
    let rx = Receiver::succeeding().await;
    let (id, secret) = subscribe(&h, &rx.url, SigningMode::Symmetric).await;
    let r = deliver_one(&h, &rx, "p1").await;
    assert_eq!(signature_versions(&r), ["v1"]);
    r.verify(std::slice::from_ref(&secret)).unwrap();

    let updated = h
        .sender
        .update_subscription(
            &id,
            SubscriptionUpdate {
                signing: Some(SigningMode::Asymmetric),
                ..SubscriptionUpdate::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(updated.subscription.signing, SigningMode::Asymmetric);
    let public = h.sender.signing_keys(WS).await.unwrap()[0].public_key.to_string();
    let r = deliver_one(&h, &rx, "p2").await;
    assert_eq!(signature_versions(&r), ["v1a"]);
    verify_with_keys(&r, &[&public]).unwrap();

    h.sender
        .update_subscription(
            &id,
            SubscriptionUpdate {
                signing: Some(SigningMode::Symmetric),
                ..SubscriptionUpdate::default()
            },
        )
        .await
        .unwrap();
    let r = deliver_one(&h, &rx, "p3").await;
    assert_eq!(signature_versions(&r), ["v1"]);
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_key_signs_beside_the_new_one_for_24_hours_then_only_the_new_one() {
    let h = Harness::new().await;
    let rx = Receiver::succeeding().await;
    let (_, secret) = subscribe(&h, &rx.url, SigningMode::Both).await;
    let old = h.sender.signing_keys(WS).await.unwrap()[0].public_key.to_string();
    let rotated = h.sender.rotate_signing_key(WS).await.unwrap();
    assert_eq!(rotated.previous_valid_until, Timestamp::from_unix_millis(T0 + DAY_MS));
    assert_eq!(rotated.keys.len(), 2);
    let new = rotated.keys[0].public_key.to_string();
    assert_ne!(new, old);
    assert_eq!(rotated.keys[0].expires_at, None);
    assert_eq!(rotated.keys[1].public_key.to_string(), old);
    assert_eq!(rotated.keys[1].expires_at, Some(rotated.previous_valid_until));
    assert_eq!(h.sender.signing_keys(WS).await.unwrap(), rotated.keys);

    // Inside the window: the v1 entry, then a v1a entry by each key; each key alone
    // verifies the delivery.
    let r = deliver_one(&h, &rx, "p1").await;
    assert_eq!(signature_versions(&r), ["v1", "v1a", "v1a"]);
    verify_with_keys(&r, &[&old]).unwrap();
    verify_with_keys(&r, &[&new]).unwrap();
    r.verify(std::slice::from_ref(&secret)).unwrap();

    // One millisecond before the end, still both.
    h.advance(DAY_MS - 1).await;
    let r = deliver_one(&h, &rx, "p2").await;
    assert_eq!(signature_versions(&r), ["v1", "v1a", "v1a"]);
    assert_eq!(h.sender.signing_keys(WS).await.unwrap().len(), 2);

    // At the end: only the new key signs, and only it is published.
    h.advance(1).await;
    let r = deliver_one(&h, &rx, "p3").await;
    assert_eq!(signature_versions(&r), ["v1", "v1a"]);
    verify_with_keys(&r, &[&new]).unwrap();
    assert!(verify_with_keys(&r, &[&old]).is_err());
    let listed = h.sender.signing_keys(WS).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].public_key.to_string(), new);
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_pair_survives_a_restart() {
    let h = Harness::stopped(test_config()).await;
    let rx = Receiver::succeeding().await;
    subscribe(&h, &rx.url, SigningMode::Asymmetric).await;
    let keys = h.sender.signing_keys(WS).await.unwrap();
    let Harness { sender, db, .. } = h;
    drop(sender);
    let clock = Arc::new(ManualClock::new(Timestamp::from_unix_millis(T0)));
    let sender = db.open(test_config(), clock).await;
    assert_eq!(sender.signing_keys(WS).await.unwrap(), keys);
    let dispatcher = sender.start();
    sender.publish(scheduled("p1")).await.unwrap();
    assert!(rx.wait_for_count(1, Duration::from_secs(10)).await);
    let r = &rx.requests()[0];
    verify_with_keys(r, &[&keys[0].public_key.to_string()]).unwrap();
    dispatcher.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signing_keys_of_an_unknown_workspace_are_not_found() {
    let h = Harness::new().await;
    let e = h.sender.signing_keys("ws_nobody").await.unwrap_err();
    assert_eq!(e.code().as_str(), "not_found");
    let e = h.sender.rotate_signing_key("ws_nobody").await.unwrap_err();
    assert_eq!(e.code().as_str(), "not_found");
    let e = h.sender.signing_keys("").await.unwrap_err();
    assert_eq!(e.code().as_str(), "invalid_request");
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_sample_verifies_with_the_public_key_alone() {
    let h = Harness::new().await;
    let sample = h.sender.signed_sample(WS, "hello").await.unwrap();
    let public = h.sender.signing_keys(WS).await.unwrap()[0].public_key;
    let ts = sample.timestamp.to_string();
    let headers = [
        ("webhook-id", sample.id.as_str()),
        ("webhook-timestamp", ts.as_str()),
        ("webhook-signature", sample.signature.as_str()),
    ];
    assert!(sample.signature.starts_with("v1a,") && !sample.signature.contains(' '));
    let event = postwire_core::Verifier::from_public_key(public)
        .verify_event(
            &headers,
            sample.body.as_bytes(),
            postwire_core::UnixTime::from_secs(sample.timestamp),
        )
        .unwrap();
    assert_eq!(event.id(), sample.id);
    assert!(sample.body.contains("\"hello\""));
    h.shutdown().await;
}
