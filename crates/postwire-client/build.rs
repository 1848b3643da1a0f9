//! Generates the API clients from the committed OpenAPI documents at build time, so a
//! change to the API that the CLI does not follow fails to compile the CLI.
//!
//! Each document is read from `openapi/` (links to the workspace's `docs/`), down-converted from 3.1 to 3.0
//! (`build_support/downconvert.rs`), given one error body type per operation and plain
//! strings (the server checks them), parsed by `openapiv3` and handed to progenitor's
//! generator; the code goes to `$OUT_DIR` and `src/lib.rs` includes it.

use std::path::{Path, PathBuf};

#[path = "build_support/downconvert.rs"]
mod downconvert;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    // Symbolic links to the workspace's docs/openapi.json and docs/ingest-openapi.json, so the
    // documents are one, and `cargo package` puts their content in this crate's package.
    let docs = manifest.join("openapi");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    println!("cargo:rerun-if-changed=build_support/downconvert.rs");
    generate(&docs.join("openapi.json"), &out.join("api.rs"));
    generate(&docs.join("ingest-openapi.json"), &out.join("ingest.rs"));
}

/// Generates one client from `doc` into `dest`; a document that cannot be read stops the build
/// with the reason.
fn generate(doc: &Path, dest: &Path) {
    println!("cargo:rerun-if-changed={}", doc.display());
    let text = std::fs::read_to_string(doc).unwrap_or_else(|e| panic!("cannot read {}: {e}", doc.display()));
    let json: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", doc.display()));
    let converted =
        downconvert::leave_string_checks_to_server(downconvert::unify_error_bodies(downconvert::downconvert(json)));
    let spec: openapiv3::OpenAPI = serde_json::from_value(converted)
        .unwrap_or_else(|e| panic!("{} after down-conversion is not OpenAPI 3.0: {e}", doc.display()));
    let mut settings = progenitor::GenerationSettings::default();
    settings.with_interface(progenitor::InterfaceStyle::Positional);
    let mut generator = progenitor::Generator::new(&settings);
    let tokens = generator
        .generate_tokens(&spec)
        .unwrap_or_else(|e| panic!("progenitor cannot generate a client from {}: {e}", doc.display()));
    std::fs::write(dest, tokens.to_string()).unwrap_or_else(|e| panic!("cannot write {}: {e}", dest.display()));
}
