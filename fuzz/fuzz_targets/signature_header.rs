//! The `webhook-signature` parser on arbitrary text: must never panic, and must respect
//! its limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use postwire_core::{MAX_SIGNATURE_HEADER_LEN, MAX_SIGNATURES, SignatureHeader};

fuzz_target!(|value: &str| {
    if let Ok(h) = SignatureHeader::parse(value) {
        assert!(value.len() <= MAX_SIGNATURE_HEADER_LEN);
        assert!(h.signatures().count() <= MAX_SIGNATURES);
        assert!(h.signatures().count() + h.asymmetric_signatures().count() <= MAX_SIGNATURES);
        let _ = h.matches_any(&[]);
    }
});
