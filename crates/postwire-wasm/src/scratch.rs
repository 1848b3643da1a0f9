//! The scratch buffer: where JavaScript writes every variable-size input.
//!
//! Passing strings through wasm-bindgen allocates once per argument, and an allocation
//! that fails (a hostile 2 GB body) aborts, which JavaScript sees as an `unreachable`
//! trap. Instead there is one growable buffer per module instance. The wrapper asks for
//! room with [`scratch_reserve`] (which uses `try_reserve`, so running out of memory is a
//! status, not an abort), encodes its inputs straight into it at the returned address,
//! and passes only their byte lengths; [`split`] then checks those lengths against the
//! buffer before anything reads it. The buffer moves only inside `scratch_reserve`, so
//! the wrapper may cache the address between calls.

use std::cell::Cell;

use wasm_bindgen::prelude::*;

thread_local! {
    /// A `Cell` (take/set), so no borrow can fail; [`with`] always puts the buffer back.
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// The largest buffer handed out: 1 GiB, well within wasm32's 4 GiB.
pub const MAX_SCRATCH_LEN: usize = 1 << 30;

/// Makes the scratch buffer at least `len` bytes long and returns its address in the
/// module's memory; 0 when `len` is not a length up to 1 GiB or the memory cannot grow.
#[wasm_bindgen(js_name = scratchReserve)]
pub fn scratch_reserve(len: f64) -> usize {
    if !(len >= 0.0 && len <= MAX_SCRATCH_LEN as f64) {
        return 0;
    }
    let len = len as usize;
    with(|buf| {
        if buf.len() < len {
            if buf.try_reserve_exact(len - buf.len()).is_err() {
                return 0;
            }
            buf.resize(len, 0);
        }
        // Never 0 for a real buffer: an empty Vec's dangling pointer is non-null too.
        buf.as_mut_ptr() as usize
    })
}

/// Gives memory back after a large input: when the buffer is longer than `keep` bytes,
/// it is cut to `keep` and its allocation shrunk, so a 64 MiB body does not hold 64 MiB
/// for the life of the module (WebAssembly memory itself never shrinks, but the freed
/// pages are reused by the next allocation). Returns the buffer's address, which may
/// have moved, or 0 when `keep` is not a length up to 1 GiB.
#[wasm_bindgen(js_name = scratchShrink)]
pub fn scratch_shrink(keep: f64) -> usize {
    if !(keep >= 0.0 && keep <= MAX_SCRATCH_LEN as f64) {
        return 0;
    }
    let keep = keep as usize;
    with(|buf| {
        if buf.len() > keep {
            buf.truncate(keep);
            buf.shrink_to_fit();
        }
        buf.as_mut_ptr() as usize
    })
}

/// The scratch buffer's length in bytes (for tests of the wrapper's memory use).
#[wasm_bindgen(js_name = scratchLen)]
pub fn scratch_len() -> usize {
    with(|buf| buf.len())
}

/// Copies `bytes` to the start of the scratch buffer, growing it as needed (to 4 KiB at least): what the
/// JavaScript wrapper does through the exported memory, for native tests (not exported to
/// JavaScript). False if the buffer cannot grow.
#[doc(hidden)]
pub fn write_for_tests(bytes: &[u8]) -> bool {
    // At least 4 KiB, as the wrapper: room for a key schedule and the key after a secret.
    if scratch_reserve(bytes.len().max(4096) as f64) == 0 {
        return false;
    }
    with(|buf| match buf.get_mut(..bytes.len()) {
        Some(dst) => {
            dst.copy_from_slice(bytes);
            true
        }
        None => false,
    })
}

/// The first `len` bytes of the scratch buffer (fewer if it is shorter): what the
/// JavaScript wrapper reads through the exported memory, for native tests.
#[doc(hidden)]
pub fn read_for_tests(len: usize) -> Vec<u8> {
    with(|buf| buf.get(..len).unwrap_or(buf).to_vec())
}

/// Writes `text` at the start of the scratch buffer and returns its length in bytes, for
/// JavaScript to read through the exported memory; `None` when it does not fit. The buffer
/// never grows or moves here, so the address the wrapper keeps stays valid (the wrapper's
/// buffer is at least 4 KiB once anything was staged).
///
/// This is how strings leave the module: a `String` return would make wasm-bindgen export
/// a function with two results, and V8 compiles an optimized JavaScript-to-wasm wrapper
/// for each such export (and for each import) when the module is compiled: about 1.5 ms
/// of a cold start on Node 20, more than the rest of the module's compilation.
pub(crate) fn put_str(buf: &mut [u8], text: &str) -> Option<u32> {
    let len = u32::try_from(text.len()).ok()?;
    buf.get_mut(..text.len())?.copy_from_slice(text.as_bytes());
    Some(len)
}

/// [`put_str`] of as much of `text` as fits (cut at a character boundary), for messages.
pub(crate) fn write_str_lossy(text: &str) -> u32 {
    with(|buf| {
        let mut end = text.len().min(buf.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        put_str(buf, text.get(..end).unwrap_or_default()).unwrap_or(0)
    })
}

/// Runs `f` on the scratch buffer.
pub(crate) fn with<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    SCRATCH.with(|cell| {
        let mut buf = cell.take();
        let result = f(&mut buf);
        cell.set(buf);
        result
    })
}

/// Cuts the first `lens.iter().sum()` bytes of `buf` into consecutive parts of the given
/// lengths; `None` if they do not fit.
pub(crate) fn split<const N: usize>(buf: &[u8], lens: [u32; N]) -> Option<[&[u8]; N]> {
    let mut parts: [&[u8]; N] = [&[]; N];
    let mut rest = buf;
    for (part, len) in parts.iter_mut().zip(lens) {
        let len = usize::try_from(len).ok()?;
        let (head, tail) = rest.split_at_checked(len)?;
        *part = head;
        rest = tail;
    }
    Some(parts)
}

/// The error for lengths that do not fit the buffer: only a wrapper bug can cause it.
pub(crate) fn overflow() -> postwire_core::Error {
    postwire_core::Error::InvalidPayload {
        reason: "input lengths exceed the scratch buffer".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_grows_and_rejects_absurd_lengths() {
        assert_ne!(scratch_reserve(10.0), 0);
        with(|b| assert!(b.len() >= 10));
        for bad in [-1.0, f64::NAN, f64::INFINITY, (MAX_SCRATCH_LEN + 1) as f64] {
            assert_eq!(scratch_reserve(bad), 0, "{bad}");
        }
    }

    #[test]
    fn shrink_gives_a_large_buffer_back() {
        assert_ne!(scratch_reserve((1 << 20) as f64), 0);
        assert!(scratch_len() >= 1 << 20);
        assert_ne!(scratch_shrink(4096.0), 0);
        assert_eq!(scratch_len(), 4096);
        with(|b| assert!(b.capacity() < 1 << 20));
        assert_ne!(scratch_shrink(1e9), 0, "never grows");
        assert_eq!(scratch_len(), 4096);
        assert_eq!(scratch_shrink(-1.0), 0);
    }

    #[test]
    fn strings_go_to_the_start_of_the_buffer_without_moving_it() {
        let at = scratch_reserve(8.0);
        let len = scratch_len();
        assert_eq!(with(|b| put_str(b, "hi")), Some(2));
        assert_eq!(read_for_tests(2), b"hi");
        assert_eq!(with(|b| put_str(b, &"x".repeat(len + 1))), None, "never grows");
        // Cut at a character boundary when it does not fit: "é" is two bytes.
        let text = format!("{}é", "a".repeat(len - 1));
        assert_eq!(write_str_lossy(&text) as usize, len - 1);
        assert_eq!(scratch_reserve(0.0), at, "the buffer did not move");
    }

    #[test]
    fn split_checks_every_length() {
        let buf = b"abcdef";
        assert_eq!(split(buf, [1, 2, 3]), Some([&b"a"[..], b"bc", b"def"]));
        assert_eq!(split(buf, [0, 0]), Some([&b""[..], b""]));
        assert_eq!(split(buf, [4, 3]), None);
        assert_eq!(split(buf, [u32::MAX, 1]), None);
    }
}
