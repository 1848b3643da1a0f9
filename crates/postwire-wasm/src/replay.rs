//! postwire-core's in-memory replay guard, for one JavaScript process (or one Worker
//! isolate: each has its own, so use a shared store across isolates).
//!
//! JavaScript holds a guard by a handle (a small integer), not by a wasm-bindgen class:
//! a class's methods borrow the object through a check that can throw into JavaScript,
//! which makes the module import a function, and V8 compiles a wrapper for each import
//! when the module is compiled (see `scratch::put_str`). The wrapper frees a handle on
//! `dispose()` or when its `ReplayGuard` is garbage-collected.

use std::cell::Cell;

use postwire_core::{MemoryReplayGuard, ReplayGuard, Seen, UnixTime};
use wasm_bindgen::prelude::*;

use crate::scratch;

/// Remembers processed `webhook-id`s for a TTL, within a bounded capacity.
#[derive(Debug)]
pub struct WasmReplayGuard {
    inner: MemoryReplayGuard,
}

impl WasmReplayGuard {
    /// A guard holding at most `capacity` ids (at least 1) for `ttl_secs` seconds each.
    /// Values are clamped (NaN and negatives count as 0; the wrapper checks them first).
    pub fn new(capacity: f64, ttl_secs: f64) -> WasmReplayGuard {
        WasmReplayGuard {
            inner: MemoryReplayGuard::new(capacity as usize, ttl_secs as u64),
        }
    }

    /// Records the id held in the first `id_len` scratch bytes at `now_secs`; true when it
    /// is fresh (handle the event), false when it is a duplicate within the TTL.
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
    pub fn size(&self) -> usize {
        self.inner.len()
    }
}

fn id(buf: &[u8], len: u32) -> Option<&str> {
    let [bytes] = scratch::split(buf, [len])?;
    std::str::from_utf8(bytes).ok()
}

/// The live guards: handle `h` is slot `h - 1`; freed slots are reused, newest first.
#[derive(Default)]
struct Guards {
    slots: Vec<Option<WasmReplayGuard>>,
    free: Vec<usize>,
}

thread_local! {
    /// A `Cell` (take/set), so no borrow can fail.
    static GUARDS: Cell<Guards> = const {
        Cell::new(Guards {
            slots: Vec::new(),
            free: Vec::new(),
        })
    };
}

fn with_guards<R>(f: impl FnOnce(&mut Guards) -> R) -> R {
    GUARDS.with(|cell| {
        let mut guards = cell.take();
        let result = f(&mut guards);
        cell.set(guards);
        result
    })
}

/// Runs `f` on the guard of `handle`; `None` for a handle that is not live.
fn with_guard<R>(handle: u32, f: impl FnOnce(&WasmReplayGuard) -> R) -> Option<R> {
    let slot = usize::try_from(handle).ok()?.checked_sub(1)?;
    with_guards(|guards| guards.slots.get(slot)?.as_ref().map(f))
}

/// A new guard ([`WasmReplayGuard::new`]); returns its handle (never 0).
#[wasm_bindgen(js_name = replayGuardNew)]
pub fn replay_guard_new(capacity: f64, ttl_secs: f64) -> u32 {
    let guard = Some(WasmReplayGuard::new(capacity, ttl_secs));
    with_guards(|guards| {
        let slot = match guards.free.pop() {
            Some(slot) => slot,
            None => {
                guards.slots.push(None);
                guards.slots.len() - 1
            }
        };
        if let Some(entry) = guards.slots.get_mut(slot) {
            *entry = guard;
        }
        slot as u32 + 1
    })
}

/// [`WasmReplayGuard::check_and_record`] on the guard of `handle`: 1 fresh, 0 duplicate
/// (or a handle that is not live).
#[wasm_bindgen(js_name = replayGuardCheckAndRecord)]
pub fn replay_guard_check_and_record(handle: u32, id_len: u32, now_secs: f64) -> u32 {
    u32::from(with_guard(handle, |g| g.check_and_record(id_len, now_secs)).unwrap_or(false))
}

/// [`WasmReplayGuard::forget`] on the guard of `handle`.
#[wasm_bindgen(js_name = replayGuardForget)]
pub fn replay_guard_forget(handle: u32, id_len: u32) {
    with_guard(handle, |g| g.forget(id_len));
}

/// How many ids the guard of `handle` holds (0 for a handle that is not live).
#[wasm_bindgen(js_name = replayGuardSize)]
pub fn replay_guard_size(handle: u32) -> u32 {
    with_guard(handle, |g| u32::try_from(g.size()).unwrap_or(u32::MAX)).unwrap_or(0)
}

/// Frees the guard of `handle` and its ids; the handle may be given to a new guard later.
#[wasm_bindgen(js_name = replayGuardFree)]
pub fn replay_guard_free(handle: u32) {
    let Some(slot) = usize::try_from(handle).ok().and_then(|h| h.checked_sub(1)) else {
        return;
    };
    // Taken out of the slot first, so its memory is freed outside `with_guards`.
    let freed = with_guards(|guards| {
        let guard = guards.slots.get_mut(slot).and_then(Option::take);
        if guard.is_some() {
            guards.free.push(slot);
        }
        guard
    });
    drop(freed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_reused_and_freed_ones_do_nothing() {
        let a = replay_guard_new(10.0, 60.0);
        let b = replay_guard_new(10.0, 60.0);
        assert_ne!(a, 0);
        assert_ne!(a, b);
        assert!(scratch::write_for_tests(b"msg_1"));
        assert_eq!(replay_guard_check_and_record(a, 5, 1000.0), 1);
        assert_eq!(replay_guard_check_and_record(a, 5, 1001.0), 0);
        assert_eq!(replay_guard_check_and_record(b, 5, 1001.0), 1, "guards are apart");
        assert_eq!(replay_guard_size(a), 1);
        replay_guard_free(a);
        assert_eq!(replay_guard_size(a), 0);
        assert_eq!(replay_guard_check_and_record(a, 5, 1002.0), 0);
        replay_guard_forget(a, 5);
        replay_guard_free(a);
        let c = replay_guard_new(10.0, 60.0);
        assert_eq!(c, a, "the freed slot is reused");
        assert_eq!(replay_guard_size(c), 0, "empty, not the freed guard's ids");
        for h in [0, u32::MAX, 1000] {
            assert_eq!(replay_guard_check_and_record(h, 5, 0.0), 0);
            replay_guard_forget(h, 5);
            replay_guard_free(h);
            assert_eq!(replay_guard_size(h), 0);
        }
        replay_guard_free(b);
        replay_guard_free(c);
        // Freed twice or never live: no slot is handed out twice.
        let d = replay_guard_new(1.0, 1.0);
        let e = replay_guard_new(1.0, 1.0);
        assert_ne!(d, e);
        replay_guard_free(d);
        replay_guard_free(e);
    }
}
