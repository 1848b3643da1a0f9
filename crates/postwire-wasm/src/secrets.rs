//! Generating a signing secret. The random bytes come from the JavaScript wrapper
//! (`crypto.getRandomValues`): the module then imports nothing, and V8 compiles no
//! wasm-to-JavaScript wrapper for it at a cold start (see `scratch::put_str`). The secret
//! itself, its rules and its text are postwire-core's.

use postwire_core::Secret;
use wasm_bindgen::prelude::*;

use crate::codes::fail;
use crate::scratch;

/// A fresh `whsec_<base64>` secret of 32 random bytes from the runtime's secure random
/// source (getrandom's `wasm_js` backend: `crypto.getRandomValues`); `None` when there is
/// none (then see `lastErrorMessage`). For Rust callers and tests; JavaScript uses
/// [`secret_from_random`].
pub fn generate_secret() -> Option<String> {
    match Secret::generate() {
        Ok(secret) => Some(secret.expose()),
        Err(e) => {
            fail(e);
            None
        }
    }
}

/// The secret whose key is the first `len` scratch bytes, which the wrapper filled from a
/// secure random source: its `whsec_<base64>` text replaces them at the start of the
/// scratch buffer, and every byte of the key is overwritten. Returns the text's length in
/// bytes, or `u32::MAX` when `len` is not 24 to 64 (then see `lastErrorMessage`).
#[wasm_bindgen(js_name = generateSecret)]
pub fn secret_from_random(len: u32) -> u32 {
    let result = scratch::with(|buf| {
        if !(24..=64).contains(&len) {
            return Err(postwire_core::Error::InvalidSecret {
                reason: "a generated key must be 24 to 64 bytes long",
            });
        }
        let [key] = scratch::split(buf, [len]).ok_or_else(scratch::overflow)?;
        let text = Secret::from_bytes(key)?.expose();
        // The text is longer than the key (base64 plus `whsec_`), so it covers every key
        // byte; the wrapper reserves room for it (at least 4 KiB).
        scratch::put_str(buf, &text).ok_or_else(scratch::overflow)
    });
    result.unwrap_or_else(|e| {
        fail(e);
        u32::MAX
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::{code_name, last_error_status};

    #[test]
    fn the_secret_of_given_bytes_replaces_them() {
        assert!(scratch::write_for_tests(&[7u8; 32]));
        let len = secret_from_random(32);
        let text = String::from_utf8(scratch::read_for_tests(len as usize)).unwrap();
        assert_eq!(text, Secret::from_bytes(&[7u8; 32]).unwrap().expose());
        assert!(text.starts_with("whsec_") && text.len() == 50, "{text}");
        for bad in [0, 23, 65, u32::MAX] {
            assert_eq!(secret_from_random(bad), u32::MAX, "{bad}");
            assert_eq!(code_name(last_error_status()), "invalid_secret");
        }
    }
}
