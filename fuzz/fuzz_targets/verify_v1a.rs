//! The whole verification path with a `v1a` public key on arbitrary header values and
//! bodies: must never panic, and anything it accepts must really carry a valid ed25519
//! signature by that key. The input may carry a real signature (the first byte chooses
//! whether the target signs the rest itself), so the accepting path is reached too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use postwire_core::{SignatureHeader, SigningKey, UnixTime, Verifier, WebhookHeaders};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, data)) = data.split_first() else {
        return;
    };
    let mut parts = data.splitn(4, |&b| b == 0xff);
    let (Some(id), Some(ts), Some(sig)) = (parts.next(), parts.next(), parts.next()) else {
        return;
    };
    let body = parts.next().unwrap_or(&[]);
    let (Ok(id), Ok(ts), Ok(sig)) = (
        std::str::from_utf8(id),
        std::str::from_utf8(ts),
        std::str::from_utf8(sig),
    ) else {
        return;
    };
    let key = SigningKey::from_seed(&[7; 32]);
    let mut sig = sig.to_owned();
    if mode & 1 == 1 {
        // Prepend a genuine signature of what follows, so acceptance is exercised.
        if let Ok(h) = WebhookHeaders::new(id, ts, "") {
            sig = format!("{} {sig}", key.sign_as_sent(&h, body));
        }
    }
    let headers = [("webhook-id", id), ("webhook-timestamp", ts), ("webhook-signature", sig.as_str())];
    let now = UnixTime::from_secs(ts.trim().parse().unwrap_or(0));
    if let Ok(v) = Verifier::from_public_key(key.public_key()).verify(&headers, body, now) {
        let h = WebhookHeaders::new(v.id, ts, "").unwrap();
        let header = SignatureHeader::parse(&sig).unwrap();
        assert!(header.asymmetric_signatures().any(|s| key.public_key().verify_as_sent(&h, body, &s)));
    }
});
