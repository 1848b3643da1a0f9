//! [`WasmReplayGuard`]: postwire-core's in-memory replay guard, for one JavaScript process
//! (or one Worker isolate: each has its own, so use a shared store across isolates).

use postwire_core::{MemoryReplayGuard, ReplayGuard, Seen, UnixTime};
use wasm_bindgen::prelude::*;

use crate::scratch;

/// Remembers processed `webhook-id`s for a TTL, within a bounded capacity.
#[wasm_bindgen]
pub struct WasmReplayGuard {
    inner: MemoryReplayGuard,
}

#[wasm_bindgen]
impl WasmReplayGuard {
    /// A guard holding at most `capacity` ids (at least 1) for `ttl_secs` seconds each.
    /// Values are clamped (NaN and negatives count as 0; the wrapper checks them first).
    #[wasm_bindgen(constructor)]
    pub fn new(capacity: f64, ttl_secs: f64) -> WasmReplayGuard {
        WasmReplayGuard {
            inner: MemoryReplayGuard::new(capacity as usize, ttl_secs as u64),
        }
    }

    /// Records the id held in the first `id_len` scratch bytes at `now_secs`; true when it
    /// is fresh (handle the event), false when it is a duplicate within the TTL.
    #[wasm_bindgen(js_name = checkAndRecord)]
    pub fn check_and_record(&self, id_len: u32, now_secs: f64) -> bool {
        scratch::with(|buf| match id(buf, id_len) {
            Some(id) => self.inner.check_and_record(id, UnixTime::from_secs(now_secs as i64)) == Seen::Fresh,
            None => false,
        })
    }

    /// Forgets the id held in the first `id_len` scratch bytes, so a retry of it is fresh.
    pub fn forget(&self, id_len: u32) {
        scratch::with(|buf| {
            if let Some(id) = id(buf, id_len) {
                self.inner.forget(id);
            }
        });
    }

    /// How many ids are held.
    #[wasm_bindgen(getter)]
    pub fn size(&self) -> usize {
        self.inner.len()
    }
}

fn id(buf: &[u8], len: u32) -> Option<&str> {
    let [bytes] = scratch::split(buf, [len])?;
    std::str::from_utf8(bytes).ok()
}
