//! The bindings inside a real WebAssembly engine: Node (`wasm-pack test --node`) and
//! headless Chromium (`wasm-pack test --headless --chrome`, Debian's chromedriver).
//!
//! These call the exported functions as the JavaScript wrapper does (inputs through the
//! scratch buffer, statuses back), and check what only a wasm build can show: the
//! runtime's random source, the exported memory, and that hostile sizes come back as
//! statuses instead of `unreachable` traps.
#![cfg(target_arch = "wasm32")]

use postwire_wasm::codes::{code_name, last_error_message, last_error_status};
use postwire_wasm::{
    WasmReplayGuard, generate_secret, key_schedule, scratch_len, scratch_read_for_tests, scratch_reserve,
    scratch_shrink, sign, verify as verify_call,
};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const TS: &str = "1614265330";
const SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
const BODY: &str = r#"{"test": 2432232314}"#;
const ALL: u32 = 7;

/// Writes `parts` at the scratch address through the exported memory, as the wrapper does.
fn put<const N: usize>(parts: [&[u8]; N]) -> [u32; N] {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    // At least 4 KiB, as the wrapper: room for a key schedule and the key after a secret.
    let at = scratch_reserve(total.max(4096) as f64);
    assert_ne!(at, 0);
    let memory: js_sys_memory::Memory = wasm_bindgen::memory().unchecked_into();
    let view = js_sys_memory::Uint8Array::new(&memory.buffer());
    let mut offset = at as u32;
    for p in parts {
        view.subarray(offset, offset + p.len() as u32).copy_from(p);
        offset += p.len() as u32;
    }
    parts.map(|p| p.len() as u32)
}

/// The two JavaScript types used above, declared here so the crate needs no js-sys.
mod js_sys_memory {
    use wasm_bindgen::prelude::*;

    #[wasm_bindgen]
    extern "C" {
        #[wasm_bindgen(js_namespace = WebAssembly)]
        pub type Memory;
        #[wasm_bindgen(method, getter)]
        pub fn buffer(this: &Memory) -> JsValue;

        pub type Uint8Array;
        #[wasm_bindgen(constructor)]
        pub fn new(buffer: &JsValue) -> Uint8Array;
        #[wasm_bindgen(method)]
        pub fn subarray(this: &Uint8Array, begin: u32, end: u32) -> Uint8Array;
        #[wasm_bindgen(method, js_name = set)]
        fn set_bytes(this: &Uint8Array, bytes: &[u8]);
    }

    impl Uint8Array {
        pub fn copy_from(&self, bytes: &[u8]) {
            self.set_bytes(bytes);
        }
    }
}

/// The 64-byte key schedule of `secret`, as the wrapper keeps it.
fn schedule(secret: &str) -> Vec<u8> {
    let [len] = put([secret.as_bytes()]);
    assert_ne!(key_schedule(len, false), 0);
    scratch_read_for_tests(64)
}

fn verify(k: &[u8], sig: &str, body: &str, now: f64) -> String {
    let [_, a, b, c, d] = put([k, ID.as_bytes(), TS.as_bytes(), sig.as_bytes(), body.as_bytes()]);
    code_name(verify_call(1, a, b, c, d, ALL, now, 300.0))
}

#[wasm_bindgen_test]
fn reference_vector_verifies_through_the_exported_memory() {
    let k = schedule(SECRET);
    assert_eq!(verify(&k, SIG, BODY, 1614265330.0), "ok");
    assert_eq!(verify(&k, SIG, "{}", 1614265330.0), "invalid_signature");
    assert!(last_error_message().contains("raw body"));
    assert_eq!(verify(&k, SIG, BODY, 1614265631.0), "timestamp_too_old");
}

#[wasm_bindgen_test]
fn signing_matches_the_reference_vector() {
    let k = schedule(SECRET);
    let [_, a, b] = put([&k, ID.as_bytes(), BODY.as_bytes()]);
    assert_eq!(sign(1, a, b, 1614265330.0).as_deref(), Some(SIG));
}

#[wasm_bindgen_test]
fn secrets_come_from_the_runtime_random_source() {
    let a = generate_secret().expect("crypto.getRandomValues is available");
    let b = generate_secret().unwrap();
    assert!(a.starts_with("whsec_") && a.len() == 50, "{a}");
    assert_ne!(a, b);
    let _ = schedule(&a);
}

#[wasm_bindgen_test]
fn hostile_sizes_are_statuses_not_traps() {
    for len in [f64::MAX, f64::INFINITY, -1.0, f64::NAN, 2_147_483_648.0] {
        assert_eq!(scratch_reserve(len), 0, "{len}");
    }
    let k = schedule(SECRET);
    assert_eq!(
        code_name(verify_call(1, u32::MAX, u32::MAX, u32::MAX, u32::MAX, ALL, 0.0, 300.0)),
        "invalid_payload"
    );
    assert_eq!(sign(1, u32::MAX, 1, 0.0), None);
    assert_eq!(code_name(last_error_status()), "invalid_payload");
    let many = vec![SIG; 5000].join(" ");
    assert_eq!(verify(&k, &many, BODY, 1614265330.0), "invalid_header");
    let huge = "v".repeat(1 << 20);
    assert_eq!(verify(&k, &huge, BODY, 1614265330.0), "invalid_header");
    // A 16 MiB body: the buffer grows, is given back, then the module still works.
    let big = "x".repeat(16 << 20);
    assert_eq!(verify(&k, SIG, &big, 1614265330.0), "invalid_signature");
    assert_ne!(scratch_shrink(65536.0), 0);
    assert_eq!(scratch_len(), 65536);
    assert_eq!(verify(&k, SIG, BODY, 1614265330.0), "ok");
}

#[wasm_bindgen_test]
fn replay_guard_remembers_ids() {
    let g = WasmReplayGuard::new(10.0, 60.0);
    let [len] = put([b"msg_1"]);
    assert!(g.check_and_record(len, 1000.0));
    assert!(!g.check_and_record(len, 1001.0));
    assert!(g.check_and_record(len, 1061.0), "expired after the TTL");
    g.forget(len);
    assert_eq!(g.size(), 0);
}
