//! The `http` feature: verifying straight from an `http::HeaderMap`.
#![cfg(feature = "http")]

use http::{HeaderMap, HeaderValue};
use postwire_core::{Secret, Signer, UnixTime, Verifier};

#[test]
fn verifies_from_a_header_map() {
    let secret = Secret::generate().unwrap();
    let now = UnixTime::from_secs(1_700_000_000);
    let sig = Signer::new(secret.clone()).sign("msg_1", now, b"{}").unwrap();
    let mut h = HeaderMap::new();
    h.insert("Webhook-Id", HeaderValue::from_static("msg_1"));
    h.insert("webhook-timestamp", HeaderValue::from_static("1700000000"));
    h.insert("WEBHOOK-SIGNATURE", HeaderValue::from_str(sig.as_str()).unwrap());
    let v = Verifier::new(secret);
    assert_eq!(v.verify(&h, b"{}", now).unwrap().id, "msg_1");
    assert_eq!(
        v.verify(&h, b"{ }", now).unwrap_err().code().as_str(),
        "invalid_signature"
    );

    h.insert("webhook-id", HeaderValue::from_bytes(b"caf\xe9").unwrap());
    assert_eq!(v.verify(&h, b"{}", now).unwrap_err().code().as_str(), "invalid_header");
    h.remove("webhook-id");
    assert_eq!(v.verify(&h, b"{}", now).unwrap_err().code().as_str(), "missing_header");
}
