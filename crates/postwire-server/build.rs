//! Embeds the postwire npm package's browser build (the Settings screen's verify box)
//! when `npm/build.sh` has built it: copies `npm/dist/browser/{index.js,postwire_wasm_bg.wasm}`
//! into `OUT_DIR` and sets `cfg(postwire_verifier)`, and `npm/dist/web/v1a.js` (the
//! `postwire/v1a` web build, for `whpk_` public keys) with `cfg(postwire_verifier_v1a)`.
//! Without them the server builds as usual and the verify box says the verifier is not
//! in this build.

use std::path::Path;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(postwire_verifier)");
    println!("cargo::rustc-check-cfg=cfg(postwire_verifier_v1a)");
    println!("cargo::rerun-if-changed=build.rs");
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let npm = Path::new(&manifest).join("../../npm");
    // The directory's own time changes when `npm/build.sh` replaces `dist`.
    println!("cargo::rerun-if-changed={}", npm.display());
    let dist = npm.join("dist/browser");
    println!("cargo::rerun-if-changed={}", dist.display());
    let out = Path::new(&std::env::var("OUT_DIR").unwrap_or_default()).join("verifier");
    let v1a = npm.join("dist/web/v1a.js");
    println!("cargo::rerun-if-changed={}", v1a.display());
    if v1a.is_file()
        && std::fs::create_dir_all(&out)
            .and_then(|_| std::fs::copy(&v1a, out.join("v1a.js")))
            .is_ok()
    {
        println!("cargo::rustc-cfg=postwire_verifier_v1a");
    }
    let (js, wasm) = (dist.join("index.js"), dist.join("postwire_wasm_bg.wasm"));
    if !(js.is_file() && wasm.is_file()) {
        return;
    }
    let copied = std::fs::create_dir_all(&out)
        .and_then(|_| std::fs::copy(&js, out.join("index.js")))
        .and_then(|_| std::fs::copy(&wasm, out.join("postwire_wasm_bg.wasm")));
    if copied.is_ok() {
        println!("cargo::rustc-cfg=postwire_verifier");
    }
}
