//! # postwire-wasm
//!
//! The WebAssembly face of postwire-core, for the `postwire` npm package (`npm/`). The
//! JavaScript wrapper there gives the `standardwebhooks`-compatible API; this crate holds
//! every decision that matters (secret parsing, header checks, the timestamp window, the
//! HMAC and the signature comparison), by calling postwire-core.
//!
//! ## Why the boundary looks the way it does
//! - **Nothing per object in wasm memory.** A `Webhook` turns each secret into a 64-byte
//!   HMAC key schedule once ([`key_schedule`]) and keeps it in a JavaScript `Uint8Array`;
//!   every call passes the schedules in with its inputs. All instances share the one
//!   module instance, the garbage collector frees an instance wholly (no
//!   `FinalizationRegistry` needed: workerd before 2025-05-05 has none), and `dispose()`
//!   only zeroes an array.
//! - **One call per verify, no copies beyond one.** There is one scratch buffer in wasm
//!   memory. JavaScript encodes the schedules, the three header values and the body
//!   straight into it (`TextEncoder.encodeInto`, or `Uint8Array.set` for bytes) and then
//!   makes a single call with the byte lengths ([`verify`]). No allocation, no string
//!   marshalling, on the hot path. After a large body the wrapper gives the buffer back
//!   ([`scratch_shrink`]).
//! - **Status codes, not exceptions.** Calls return a small integer ([`codes`]); the
//!   wrapper builds a `WebhookVerificationError` in JavaScript, asking for the message
//!   only on failure ([`codes::last_error_message`]).
//! - **Numbers only, nothing imported.** Every export takes and returns plain numbers, and
//!   the module imports nothing (`npm/scripts/wasm-boundary.mjs` fails the build
//!   otherwise): for any other signature (a `String` return is two results) and for every
//!   import, V8 compiles a wrapper while compiling the module, which was most of the
//!   module's cold-start compile on Node. The few strings that leave (a code's name, a
//!   message, a signature, a generated secret) are written at the start of the scratch
//!   buffer (`scratch.rs`); the replay guard is a handle, not a wasm-bindgen class; the
//!   randomness of [`secret_from_random`] comes from the wrapper.
//! - **No panics.** Every input is checked before use (lengths against the buffer,
//!   UTF-8 of header values), and postwire-core itself never panics on input, so no
//!   input can reach a WebAssembly `unreachable` trap. Allocation is bounded: the
//!   wrapper refuses bodies over its limit before asking for buffer space.
//! - **No clock.** The current time always comes from JavaScript (`Date.now()`).
//! - **Small.** Only the verifier, signer, secret and replay guard are compiled in. Event
//!   parsing (serde_json and the typed envelope) would roughly triple the module, so the
//!   wrapper parses JSON with the engine's own `JSON.parse` and checks the event shape
//!   in JavaScript, against the same shared vectors as postwire-core.
//! - **`v1a` in a module of its own.** With the `ed25519` feature the crate also exports
//!   the `v1a` module's functions (`whpk_` keys, ed25519 verification): the npm package builds it
//!   a second time for its `postwire/v1a` entry point, and the default module, `v1`
//!   only, carries no curve code.

// Peer input never panics this crate: no unwrap, expect, panic! or unchecked indexing
// outside tests (the workspace forbids `unsafe` everywhere).
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)
)]
#![deny(missing_docs)]

/// The allocator of the module's one heap (the scratch buffer, replay guards, and what a
/// call allocates while it runs): talc, sized for WebAssembly, in place of the standard
/// library's dlmalloc. V8 compiles a wasm function on its first call, and dlmalloc's
/// `malloc` alone was 4.8 KB of a cold start's compile.
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

pub mod codes;
mod compact_sha256;
#[cfg(feature = "providers")]
pub mod providers;
mod replay;
pub mod schedule;
mod scratch;
mod secrets;
#[cfg(feature = "ed25519")]
pub mod v1a;
mod verifier;

#[cfg(feature = "providers")]
pub use providers::verify_provider;
pub use replay::{
    WasmReplayGuard, replay_guard_check_and_record, replay_guard_forget, replay_guard_free, replay_guard_new,
    replay_guard_size,
};
pub use scratch::{
    read_for_tests as scratch_read_for_tests, scratch_len, scratch_reserve, scratch_shrink,
    write_for_tests as scratch_write_for_tests,
};
pub use secrets::{generate_secret, secret_from_random};
#[cfg(feature = "ed25519")]
pub use v1a::{key_set, public_key, verify_with_public_keys};
pub use verifier::{HAS_ID, HAS_SIGNATURE, HAS_TIMESTAMP, key_schedule, sign, sign_to_scratch, verify, verify_macs};
