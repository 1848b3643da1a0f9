//! Embeds the postwire npm package's browser build (the Settings screen's verify box)
//! when `npm/build.sh` has built it: copies `npm/dist/browser/{index.js,postwire_wasm_bg.wasm}`
//! into `OUT_DIR` and sets `cfg(postwire_verifier)`, and `npm/dist/web/v1a.js` (the
//! `postwire/v1a` web build, for `whpk_` public keys) with `cfg(postwire_verifier_v1a)`.
//! Without them the server builds as usual and the verify box says the verifier is not
//! in this build.
//!
//! Cargo runs this script again, and so compiles the crate again, when a path it was told
//! to watch changes, when such a path does not exist (every build), and, for a directory,
//! when anything anywhere under it changes. So it watches each copied file when it
//! exists, and otherwise the deepest folder of its path that exists (`npm/dist/browser`,
//! `npm/dist` or `npm`), whose contents change when `npm/build.sh` writes the file. `npm`
//! itself, which holds the package's sources, is watched only while `npm/dist` is absent.
//! A build with nothing changed does nothing (`scripts/test-noop-build.sh` checks it).

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo::rustc-check-cfg=cfg(postwire_verifier)");
    println!("cargo::rustc-check-cfg=cfg(postwire_verifier_v1a)");
    println!("cargo::rerun-if-changed=build.rs");
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let npm = Path::new(&manifest).join("../../npm");
    let dist = npm.join("dist/browser");
    let (js, wasm) = (dist.join("index.js"), dist.join("postwire_wasm_bg.wasm"));
    let v1a = npm.join("dist/web/v1a.js");
    let mut watched = Vec::new();
    for file in [&js, &wasm, &v1a] {
        if let Some(path) = watch_path(&npm, file)
            && !watched.contains(&path)
        {
            println!("cargo::rerun-if-changed={}", path.display());
            watched.push(path);
        }
    }
    let out = Path::new(&std::env::var("OUT_DIR").unwrap_or_default()).join("verifier");
    if v1a.is_file()
        && std::fs::create_dir_all(&out)
            .and_then(|_| std::fs::copy(&v1a, out.join("v1a.js")))
            .is_ok()
    {
        println!("cargo::rustc-cfg=postwire_verifier_v1a");
    }
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

/// What to watch for `file` (under `npm`): the file itself when it exists, else the deepest
/// existing folder on its way from `npm`. None when there is no `npm` folder at all (the
/// crate built from its published package): nothing there can ever appear.
fn watch_path(npm: &Path, file: &Path) -> Option<PathBuf> {
    if file.is_file() {
        return Some(file.to_path_buf());
    }
    file.ancestors()
        .skip(1)
        .take_while(|dir| dir.starts_with(npm))
        .find(|dir| dir.is_dir())
        .map(Path::to_path_buf)
}
