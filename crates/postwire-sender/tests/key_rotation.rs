//! A new at-rest key while the sender runs (`postwire keys rotate` beside a running
//! server), on the suite's backend: reading the key file again adopts the new current
//! key, `reseal_secrets` moves every stored secret (current and previous) and sealed
//! idempotent response (and the workspace's `v1a` signing keys) to it in batches, nothing changes a second time, and the
//! database then opens with the new key alone and signs with the same secrets.

mod common;

use std::sync::Arc;

use common::*;
use postwire_core::{CreatedByKind, Secret, SigningMode};
use postwire_sender::idempotency::{IdempotencyKey, Idempotent};
use postwire_sender::secret_box::{RESEAL_BATCH, SecretCipher};
use postwire_sender::{NewSubscription, PostChangeKind};

fn config_with(cipher: SecretCipher) -> postwire_sender::SenderConfig {
    postwire_sender::SenderConfig {
        secret_cipher: Some(Arc::new(cipher)),
        ..test_config()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_secrets_move_to_a_new_key_in_batches_and_still_sign() {
    let keys = tempfile::tempdir().unwrap();
    let key_file = keys.path().join("postwire.db.secret-key");
    let old_line = SecretCipher::generate_key_line().unwrap();
    std::fs::write(&key_file, format!("{}\n", *old_line)).unwrap();
    let h = Harness::stopped(config_with(SecretCipher::from_file(&key_file).unwrap())).await;
    let rx = Receiver::succeeding().await;

    // More subscriptions than one batch; half made with an idempotency key (their stored
    // response carries the secret, sealed); the receiver's subscription rotated once.
    let subscriptions = RESEAL_BATCH + 50;
    let mut first_secret = None;
    let mut first_id = String::new();
    for i in 0..subscriptions {
        let new = NewSubscription {
            workspace_id: WS.into(),
            name: format!("s{i}"),
            url: if i == 0 {
                rx.url.clone()
            } else {
                format!("https://93.184.216.34/{i}")
            },
            events: vec![],
            integration_ids: vec![],
            created_by_kind: CreatedByKind::ApiToken,
            // The receiver's subscription also gets `v1a` signatures, by the workspace's
            // key pair, sealed at rest like the secrets.
            signing: if i == 0 {
                SigningMode::Both
            } else {
                SigningMode::Symmetric
            },
        };
        let created = if i % 2 == 0 {
            let key =
                IdempotencyKey::new("token:t1", &format!("create-{i}"), format!("request {i}").as_bytes()).unwrap();
            match h.sender.create_subscription_idempotent(new, key).await.unwrap() {
                Idempotent::Fresh(created) => created,
                Idempotent::Replayed(_) => panic!("a new key is not a replay"),
            }
        } else {
            h.sender.create_subscription(new).await.unwrap()
        };
        if i == 0 {
            first_id = created.subscription.id.clone();
            first_secret = Some(created.secret);
        }
    }
    let rotated = h.sender.rotate_secret(&first_id).await.unwrap();
    // The workspace's key pair rotated too: a current and a previous signing key.
    let keys = h.sender.rotate_signing_key(WS).await.unwrap().keys;
    assert_eq!(keys.len(), 2);

    // No change in the file: nothing to do.
    assert_eq!(h.sender.reload_secret_key().unwrap(), None);
    assert_eq!(h.sender.reseal_secrets().await.unwrap(), 0);

    let new_line = SecretCipher::generate_key_line().unwrap();
    std::fs::write(&key_file, format!("{}\n{}\n", *new_line, *old_line)).unwrap();
    let new_id = SecretCipher::from_key_text(&new_line).unwrap().current_key_id();
    assert_eq!(h.sender.reload_secret_key().unwrap(), Some(new_id));
    let resealed = h.sender.reseal_secrets().await.unwrap();
    let idempotent = subscriptions.div_ceil(2) as u64;
    // Every secret, the one previous secret, both signing keys, and every sealed stored
    // response.
    assert_eq!(resealed, subscriptions as u64 + 1 + 2 + idempotent);
    assert_eq!(h.sender.reseal_secrets().await.unwrap(), 0);
    assert_eq!(h.sender.reload_secret_key().unwrap(), None);

    // The old key leaves the file; the database opens with the new one alone (opening
    // checks that every stored secret opens) and signs with the same two secrets.
    let Harness { sender, db, .. } = h;
    drop(sender);
    std::fs::write(&key_file, format!("{}\n", *new_line)).unwrap();
    let clock = Arc::new(postwire_core::ManualClock::new(
        postwire_core::Timestamp::from_unix_millis(T0),
    ));
    let sender = db
        .open(config_with(SecretCipher::from_file(&key_file).unwrap()), clock)
        .await;
    assert_eq!(sender.signing_keys(WS).await.unwrap(), keys);
    let dispatcher = sender.start();
    sender
        .publish(change("post-1", "acc-1", PostChangeKind::Scheduled))
        .await
        .unwrap();
    assert!(rx.wait_for_count(1, std::time::Duration::from_secs(10)).await);
    let delivery = &rx.requests()[0];
    let first_secret: Secret = first_secret.unwrap();
    delivery.verify(std::slice::from_ref(&rotated.secret)).unwrap();
    delivery.verify(std::slice::from_ref(&first_secret)).unwrap();
    assert_eq!(signature_versions(delivery), ["v1", "v1", "v1a", "v1a"]);
    for key in &keys {
        verify_with_keys(delivery, &[&key.public_key.to_string()]).unwrap();
    }
    dispatcher.shutdown().await;
}
