//! The Settings screen's static files, embedded in the binary (no CDN; works offline):
//! one stylesheet, one script, an icon, and the postwire npm package's browser builds for the
//! verify box (the default one for `v1` secrets, `postwire/v1a`'s web build for `whpk_`
//! public keys) when they were built before this crate (`npm/build.sh`; see `build.rs`).
//! Each is served with its content type (and, like every response, `no-store`).

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The stylesheet's URL.
pub const CSS_PATH: &str = "/settings/assets/settings.css";
/// The script's URL.
pub const JS_PATH: &str = "/settings/assets/settings.js";

/// The icon's URL (also served at `/favicon.ico`, where browsers ask for it unprompted).
pub const ICON_PATH: &str = "/settings/assets/icon.svg";

const CSS: &str = include_str!("assets/settings.css");
const ICON: &str = include_str!("assets/icon.svg");
const JS: &str = include_str!("assets/settings.js");

/// The npm package's browser build (ES module) and its WebAssembly, if embedded.
#[cfg(postwire_verifier)]
const VERIFIER: Option<(&[u8], &[u8])> = Some((
    include_bytes!(concat!(env!("OUT_DIR"), "/verifier/index.js")),
    include_bytes!(concat!(env!("OUT_DIR"), "/verifier/postwire_wasm_bg.wasm")),
));
#[cfg(not(postwire_verifier))]
const VERIFIER: Option<(&[u8], &[u8])> = None;

/// The npm package's `postwire/v1a` web build (one ES module, its WebAssembly inlined),
/// which verifies `v1a` signatures with a `whpk_` public key, if embedded.
#[cfg(postwire_verifier_v1a)]
const VERIFIER_V1A: Option<&[u8]> = Some(include_bytes!(concat!(env!("OUT_DIR"), "/verifier/v1a.js")));
#[cfg(not(postwire_verifier_v1a))]
const VERIFIER_V1A: Option<&[u8]> = None;

/// Whether both browser builds are embedded, so the verify box can check in the page
/// (`v1` secrets and `whpk_` keys alike); otherwise its form goes to the server.
pub const IN_BROWSER_VERIFIER: bool = VERIFIER.is_some() && VERIFIER_V1A.is_some();

/// `GET /settings/assets/{name}`.
pub async fn serve(Path(name): Path<String>) -> Response {
    let (body, kind): (&'static [u8], &str) = match name.as_str() {
        "settings.css" => (CSS.as_bytes(), "text/css; charset=utf-8"),
        "settings.js" => (JS.as_bytes(), "text/javascript; charset=utf-8"),
        "icon.svg" => (ICON.as_bytes(), "image/svg+xml"),
        "postwire.js" => match VERIFIER {
            Some((js, _)) => (js, "text/javascript; charset=utf-8"),
            None => return StatusCode::NOT_FOUND.into_response(),
        },
        "postwire-v1a.js" => match VERIFIER_V1A {
            Some(js) => (js, "text/javascript; charset=utf-8"),
            None => return StatusCode::NOT_FOUND.into_response(),
        },
        "postwire_wasm_bg.wasm" => match VERIFIER {
            Some((_, wasm)) => (wasm, "application/wasm"),
            None => return StatusCode::NOT_FOUND.into_response(),
        },
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    let mut r = body.into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(kind).unwrap_or(HeaderValue::from_static("application/octet-stream")),
    );
    r
}

/// `GET /favicon.ico`: the icon, so a browser's unprompted request is not a 404.
pub async fn favicon() -> Response {
    serve(Path("icon.svg".to_owned())).await
}
