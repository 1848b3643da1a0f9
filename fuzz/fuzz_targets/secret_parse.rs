//! Secret parsing on arbitrary text: must never panic, and a parsed secret must round-trip
//! through its `whsec_` form.
#![no_main]

use libfuzzer_sys::fuzz_target;
use postwire_core::Secret;

fuzz_target!(|s: &str| {
    if let Ok(secret) = Secret::parse(s) {
        assert_eq!(Secret::parse(&secret.expose()).unwrap(), secret);
    }
});
