//! Property tests, natively: no input at the boundary panics. In the wasm build a panic
//! would be an `unreachable` trap, so every exported call is driven here with arbitrary
//! bytes, lengths (including ones past the buffer), flags and times, and must return.
#![cfg(not(target_arch = "wasm32"))]

use postwire_wasm::codes::{code_name, last_error_message};
use postwire_wasm::{WasmReplayGuard, WasmVerifier};
use proptest::prelude::*;

/// Puts `bytes` at the start of the scratch buffer (as the JavaScript wrapper would).
fn put(bytes: &[u8]) {
    assert!(postwire_wasm::scratch_write_for_tests(bytes));
}

fn verifier(secrets: &[Vec<u8>], raw: bool, tolerance: f64) -> WasmVerifier {
    let mut v = WasmVerifier::new(tolerance);
    for s in secrets {
        put(s);
        let status = v.add_secret(s.len() as u32, raw);
        assert!(!code_name(status).is_empty());
    }
    v
}

fn any_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(-f64::INFINITY),
        0.0..2e9f64
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn verify_never_panics(
        secrets in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..80), 0..3),
        raw in any::<bool>(),
        tolerance in any_f64(),
        input in prop::collection::vec(any::<u8>(), 0..400),
        lens in prop::array::uniform4(prop_oneof![0u32..120, any::<u32>()]),
        present in 0u32..16,
        now in any_f64(),
    ) {
        let v = verifier(&secrets, raw, tolerance);
        put(&input);
        let status = v.verify(lens[0], lens[1], lens[2], lens[3], present, now);
        prop_assert!(!code_name(status).is_empty());
        if status != 0 {
            prop_assert!(!last_error_message().is_empty());
        }
        let status = v.verify_macs(lens[0], lens[1], lens[2], lens[3], present, now);
        prop_assert!(!code_name(status).is_empty());
        let _ = v.sign(lens[0], lens[1], now);
        for i in 0..4 {
            let _ = v.key_bytes(i);
        }
    }

    #[test]
    fn well_formed_deliveries_with_garbage_headers_never_panic(
        id in "[ -~\t]{0,300}",
        ts in "[0-9 a-z+-.\t]{0,25}",
        sig in "(v[0-9a-z]{0,2},[A-Za-z0-9+/=,!]{0,50} ?){0,70}",
        body in prop::collection::vec(any::<u8>(), 0..300),
        now in any_f64(),
    ) {
        let v = verifier(&[b"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_vec()], false, 300.0);
        let mut input = Vec::new();
        for part in [id.as_bytes(), ts.as_bytes(), sig.as_bytes(), &body] {
            input.extend_from_slice(part);
        }
        put(&input);
        let status = v.verify(id.len() as u32, ts.len() as u32, sig.len() as u32, body.len() as u32, 7, now);
        prop_assert!(status != 0, "garbage verified");
        prop_assert!(!code_name(status).is_empty());
    }

    #[test]
    fn replay_guard_never_panics(
        capacity in any_f64(),
        ttl in any_f64(),
        ids in prop::collection::vec((prop::collection::vec(any::<u8>(), 0..40), prop_oneof![0u32..40, any::<u32>()], any_f64()), 0..50),
    ) {
        let g = WasmReplayGuard::new(capacity, ttl);
        for (bytes, len, now) in ids {
            put(&bytes);
            let _ = g.check_and_record(len, now);
            if len % 3 == 0 {
                g.forget(len);
            }
        }
        let _ = g.size();
    }
}
