//! `whsk_`/`whpk_` key parsing (v1a) on arbitrary text: must never panic; a parsed key must
//! round-trip through its canonical form, and a trust-list entry is never a signing key.
#![no_main]

use libfuzzer_sys::fuzz_target;
use postwire_core::{PublicKey, SigningKey, TrustedKey};

fuzz_target!(|s: &str| {
    if let Ok(key) = SigningKey::parse(s) {
        let again = SigningKey::parse(&key.expose()).unwrap();
        assert_eq!(again.public_key(), key.public_key());
    }
    if let Ok(key) = PublicKey::parse(s) {
        assert_eq!(PublicKey::parse(&key.to_string()).unwrap(), key);
    }
    if TrustedKey::parse(s).is_ok() {
        assert!(!s.trim_ascii_start().starts_with("whsk_"));
    }
});
