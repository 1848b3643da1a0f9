//! The whole verification path on arbitrary header values and bodies: must never panic,
//! and anything it accepts must really carry a valid signature.
#![no_main]

use libfuzzer_sys::fuzz_target;
use postwire_core::{Secret, SignatureHeader, UnixTime, Verifier};

fuzz_target!(|data: &[u8]| {
    // Split the input into id / timestamp / signature / body at the first three 0xff bytes.
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
    let secret = Secret::from_bytes(b"fuzzing key").unwrap();
    let headers = [
        ("webhook-id", id),
        ("webhook-timestamp", ts),
        ("webhook-signature", sig),
    ];
    let now = UnixTime::from_secs(ts.trim().parse().unwrap_or(0));
    if let Ok(v) = Verifier::new(secret.clone()).verify(&headers, body, now) {
        // Accepted: unless the timestamp has leading zeros (signed as sent, not re-formatted),
        // one of the header's signatures must be the one we compute.
        if !v.timestamp.to_string().eq(ts.trim()) {
            return;
        }
        let expected = secret.sign(v.id, v.timestamp, body).unwrap();
        assert!(SignatureHeader::parse(sig).unwrap().signatures().any(|s| s == expected));
    }
});
