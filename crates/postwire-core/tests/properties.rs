//! Property tests: signing then verifying round-trips; any change to the id, timestamp,
//! body or signature fails; and no input to the parsers panics.

use postwire_core::{Event, Secret, SignatureHeader, Signer, Timestamp, UnixTime, Verifier, WebhookHeaders};
use proptest::prelude::*;

fn id() -> impl Strategy<Value = String> {
    "[!-~]{1,64}" // visible ASCII: the webhook-id alphabet
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 1..80)
}

fn headers(id: &str, ts: i64, sig: &str) -> Vec<(&'static str, String)> {
    vec![
        ("webhook-id", id.to_owned()),
        ("webhook-timestamp", ts.to_string()),
        ("webhook-signature", sig.to_owned()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sign_then_verify_round_trips(key in key(), id in id(), ts in 0i64..4_000_000_000, body in proptest::collection::vec(any::<u8>(), 0..2048), skew in -300i64..=300) {
        let secret = Secret::from_bytes(&key).unwrap();
        let sig = Signer::new(secret.clone()).sign(&id, UnixTime::from_secs(ts), &body).unwrap();
        let v = Verifier::new(secret);
        let h = headers(&id, ts, sig.as_str());
        let ok = v.verify(&h, &body, UnixTime::from_secs(ts + skew)).unwrap();
        prop_assert_eq!(ok.id, id.as_str());
        prop_assert_eq!(ok.timestamp.as_secs(), ts);
    }

    #[test]
    fn any_change_fails(key in key(), id in id(), ts in 1i64..4_000_000_000, body in proptest::collection::vec(any::<u8>(), 1..512), which in 0usize..4, pos in any::<prop::sample::Index>(), bit in 0u8..8) {
        let secret = Secret::from_bytes(&key).unwrap();
        let sig = secret.sign(&id, UnixTime::from_secs(ts), &body).unwrap();
        let mut sig_bytes = *sig.as_bytes();
        let (mut id2, mut ts2, mut body2) = (id.clone(), ts, body.clone());
        match which {
            0 => { let i = pos.index(body2.len()); body2[i] ^= 1 << bit; }
            1 => { ts2 += 1; }
            2 => { id2.push('x'); }
            _ => { let i = pos.index(sig_bytes.len()); sig_bytes[i] ^= 1 << bit; }
        }
        let sig2 = postwire_core::Signature::from_bytes(sig_bytes).to_string();
        let err = Verifier::new(secret)
            .verify(&headers(&id2, ts2, &sig2), &body2, UnixTime::from_secs(ts))
            .unwrap_err();
        prop_assert_eq!(err.code().as_str(), "invalid_signature");
    }

    #[test]
    fn header_parsing_never_panics(id in ".{0,300}", ts in ".{0,30}", sig in ".{0,600}", body in proptest::collection::vec(any::<u8>(), 0..64), now in any::<i64>(), tol in any::<u64>()) {
        let v = Verifier::new(Secret::from_bytes(b"k").unwrap()).with_tolerance_secs(tol);
        let _ = v.verify(&headers(&id, 0, &sig), &body, UnixTime::from_secs(now));
        let _ = WebhookHeaders::new(&id, &ts, &sig);
        if let Ok(h) = SignatureHeader::parse(&sig) { let _ = h.signatures().count(); }
    }

    #[test]
    fn extreme_timestamps_never_panic(ts in any::<i64>(), now in any::<i64>(), tol in any::<u64>()) {
        let secret = Secret::from_bytes(b"k").unwrap();
        let ts = ts.unsigned_abs().min(i64::MAX as u64) as i64;
        let sig = secret.sign("id", UnixTime::from_secs(ts), b"").unwrap();
        let v = Verifier::new(secret).with_tolerance_secs(tol);
        let _ = v.verify(&headers("id", ts, &sig.to_string()), b"", UnixTime::from_secs(now));
        let _ = Timestamp::from_unix_millis(now).to_string();
    }

    #[test]
    fn secret_parsing_never_panics(s in ".{0,200}") {
        let _ = Secret::parse(&s);
    }

    #[test]
    fn envelope_parsing_never_panics_on_bytes(body in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = Event::from_json(&body);
    }

    #[test]
    fn envelope_parsing_never_panics_on_json_shapes(t in prop::sample::select(vec!["post.scheduled","post.published","post.failed","post.deleted","integration.disconnected","webhook.test","x"]), data in arb_json(3), created in ".{0,30}") {
        let body = serde_json::json!({"id": "msg_1", "type": t, "createdAt": created, "workspaceId": "w", "data": data});
        let _ = Event::from_json(body.to_string().as_bytes());
    }
}

fn arb_json(depth: u32) -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        "[a-zA-Z0-9_.:-]{0,12}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(depth, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            proptest::collection::btree_map(
                prop::sample::select(vec![
                    "post",
                    "id",
                    "state",
                    "error",
                    "code",
                    "message",
                    "retryable",
                    "integration",
                    "name",
                    "providerIdentifier",
                    "externalId",
                    "group",
                    "publishDate",
                    "reason",
                    "deletedBy",
                    "kind",
                    "releaseURL",
                    "releaseId"
                ])
                .prop_map(String::from),
                inner,
                0..8
            )
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

/// `v1a` (feature `ed25519`): the same round-trip and tamper properties with ed25519 keys,
/// and no key text panics the key parsers.
#[cfg(feature = "ed25519")]
mod v1a {
    use super::*;
    use postwire_core::{AsymmetricSignature, PublicKey, SigningKey, TrustedKey};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn sign_then_verify_round_trips(seed in any::<[u8; 32]>(), id in id(), ts in 0i64..4_000_000_000, body in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let key = SigningKey::from_seed(&seed);
            let sig = key.sign(&id, UnixTime::from_secs(ts), &body).unwrap();
            let v = Verifier::from_public_key(key.public_key());
            let h = headers(&id, ts, &sig.to_string());
            let ok = v.verify(&h, &body, UnixTime::from_secs(ts)).unwrap();
            prop_assert_eq!(ok.id, id.as_str());
        }

        #[test]
        fn any_change_fails(seed in any::<[u8; 32]>(), id in id(), ts in 1i64..4_000_000_000, body in proptest::collection::vec(any::<u8>(), 1..512), which in 0usize..4, pos in any::<prop::sample::Index>(), bit in 0u8..8) {
            let key = SigningKey::from_seed(&seed);
            let mut sig = *key.sign(&id, UnixTime::from_secs(ts), &body).unwrap().as_bytes();
            let (mut id2, mut ts2, mut body2) = (id.clone(), ts, body.clone());
            match which {
                0 => { let i = pos.index(body2.len()); body2[i] ^= 1 << bit; }
                1 => { ts2 += 1; }
                2 => { id2.push('x'); }
                _ => { let i = pos.index(sig.len()); sig[i] ^= 1 << bit; }
            }
            let sig2 = AsymmetricSignature::from_bytes(sig).to_string();
            let err = Verifier::from_public_key(key.public_key())
                .verify(&headers(&id2, ts2, &sig2), &body2, UnixTime::from_secs(ts))
                .unwrap_err();
            prop_assert_eq!(err.code().as_str(), "invalid_signature");
        }

        #[test]
        fn key_parsing_never_panics_and_round_trips(text in ".{0,120}", b64 in "(whpk_|whsk_)?[A-Za-z0-9+/]{40,90}={0,3}") {
            for t in [text.as_str(), b64.as_str()] {
                if let Ok(k) = SigningKey::parse(t) {
                    prop_assert_eq!(SigningKey::parse(&k.expose()).unwrap(), k);
                }
                if let Ok(k) = PublicKey::parse(t) {
                    prop_assert_eq!(PublicKey::parse(&k.to_string()).unwrap(), k);
                }
                let _ = TrustedKey::parse(t);
            }
        }
    }
}
