//! The `webhook-signature` parser on arbitrary text: must never panic, and must respect
//! its limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use postwire_core::{SignatureHeader, MAX_SIGNATURES, MAX_SIGNATURE_HEADER_LEN};

fuzz_target!(|value: &str| {
    if let Ok(h) = SignatureHeader::parse(value) {
        assert!(value.len() <= MAX_SIGNATURE_HEADER_LEN);
        assert!(h.signatures().count() <= MAX_SIGNATURES);
        let _ = h.matches_any(&[]);
    }
});
