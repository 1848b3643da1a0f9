//! Generating a signing secret, with the JavaScript runtime's secure random source
//! (`crypto.getRandomValues`, through getrandom's `wasm_js` backend).

use postwire_core::Secret;
use wasm_bindgen::prelude::*;

use crate::codes::fail;

/// A fresh `whsec_<base64>` secret of 32 random bytes; `undefined` when no secure random
/// source is available (then see `lastErrorMessage`).
#[wasm_bindgen(js_name = generateSecret)]
pub fn generate_secret() -> Option<String> {
    match Secret::generate() {
        Ok(secret) => Some(secret.expose()),
        Err(e) => {
            fail(e);
            None
        }
    }
}
