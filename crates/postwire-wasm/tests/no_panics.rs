//! Property tests, natively: no input at the boundary panics. In the wasm build a panic
//! would be an `unreachable` trap, so every exported call is driven here with arbitrary
//! bytes, lengths (including ones past the buffer), flags and times, and must return.
#![cfg(not(target_arch = "wasm32"))]

use postwire_wasm::codes::{code_name, last_error_message};
use postwire_wasm::{WasmReplayGuard, key_schedule, sign, verify, verify_macs};
use proptest::prelude::*;

/// Puts `bytes` at the start of the scratch buffer (as the JavaScript wrapper would).
fn put(bytes: &[u8]) {
    assert!(postwire_wasm::scratch_write_for_tests(bytes));
}

/// The key schedules of the secrets that parse (64 bytes each), as the wrapper keeps them.
fn schedules(secrets: &[Vec<u8>], raw: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for s in secrets {
        put(s);
        if key_schedule(s.len() as u32, raw) != 0 {
            out.extend(postwire_wasm::scratch_read_for_tests(64));
        } else {
            assert!(!last_error_message().is_empty());
        }
    }
    out
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
        let keys = schedules(&secrets, raw);
        let n = (keys.len() / 64) as u32;
        put(&[&keys[..], &input].concat());
        let status = verify(n, lens[0], lens[1], lens[2], lens[3], present, now, tolerance);
        prop_assert!(!code_name(status).is_empty());
        if status != 0 {
            prop_assert!(!last_error_message().is_empty());
        }
        // A wrong count of schedules, or none: still only statuses.
        let status = verify(n + lens[0] % 3, lens[1], lens[2], lens[3], lens[0], present, now, tolerance);
        prop_assert!(!code_name(status).is_empty());
        put(&input);
        let status = verify_macs(lens[0], lens[1], lens[2], lens[3], present, now, tolerance);
        prop_assert!(!code_name(status).is_empty());
        let _ = sign(n, lens[0], lens[1], now);
        let _ = sign(lens[2], lens[0], lens[1], now);
    }

    #[test]
    fn well_formed_deliveries_with_garbage_headers_never_panic(
        id in "[ -~\t]{0,300}",
        ts in "[0-9 a-z+-.\t]{0,25}",
        sig in "(v[0-9a-z]{0,2},[A-Za-z0-9+/=,!]{0,50} ?){0,70}",
        body in prop::collection::vec(any::<u8>(), 0..300),
        now in any_f64(),
    ) {
        let keys = schedules(&[b"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_vec()], false);
        let mut input = keys.clone();
        for part in [id.as_bytes(), ts.as_bytes(), sig.as_bytes(), &body] {
            input.extend_from_slice(part);
        }
        put(&input);
        let status = verify(1, id.len() as u32, ts.len() as u32, sig.len() as u32, body.len() as u32, 7, now, 300.0);
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

/// The `postwire/v1a` module's calls (feature `ed25519`): arbitrary key text, counts,
/// lengths and times only ever give statuses.
#[cfg(feature = "ed25519")]
mod v1a {
    use super::*;
    use postwire_wasm::{public_key, verify_with_public_keys};

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

        #[test]
        fn v1a_calls_never_panic(
            key_text in prop_oneof!["whpk_[A-Za-z0-9+/]{40,46}={0,3}", ".{0,80}"],
            input in prop::collection::vec(any::<u8>(), 0..400),
            counts in prop::array::uniform2(prop_oneof![0u32..4, any::<u32>()]),
            lens in prop::array::uniform4(prop_oneof![0u32..120, any::<u32>()]),
            present in 0u32..16,
            now in any_f64(),
            tolerance in any_f64(),
        ) {
            put(key_text.as_bytes());
            let n = public_key(key_text.len() as u32);
            prop_assert!(n == 0 || n == 32);
            let key = if n == 32 { postwire_wasm::scratch_read_for_tests(32) } else { Vec::new() };
            put(&[&key[..], &input].concat());
            let status = verify_with_public_keys(0, n / 32, lens[0], lens[1], lens[2], lens[3], present, now, tolerance);
            prop_assert!(!code_name(status).is_empty());
            put(&input);
            let status = verify_with_public_keys(counts[0], counts[1], lens[0], lens[1], lens[2], lens[3], present, now, tolerance);
            prop_assert!(!code_name(status).is_empty());
            let _ = public_key(lens[0]);
        }
    }
}
