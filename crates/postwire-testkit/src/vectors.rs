//! The shared test vectors (`tests/vectors/*.json`, the files the npm package, the
//! Worker and postwire-core all run) and the event catalogue, loaded by name.
//!
//! The files are found from this crate's own directory, so a test of any crate in the
//! workspace reads the same copy.

use std::path::PathBuf;

use base64::Engine as _;
use serde_json::Value;

/// The path of `tests/vectors/<name>`.
pub fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/vectors")
        .join(name)
}

/// A vector file, parsed.
pub fn file(name: &str) -> Value {
    let path = path(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `cases` of a vector file; panics when there are none.
pub fn cases(name: &str) -> Vec<Value> {
    let cases = file(name)["cases"]
        .as_array()
        .unwrap_or_else(|| panic!("{name} has no `cases` list"))
        .clone();
    assert!(!cases.is_empty(), "{name} has no cases");
    cases
}

/// `tests/vectors/catalogue.json`, the one source of the event catalogue.
pub fn catalogue() -> Value {
    file("catalogue.json")
}

/// A list of the catalogue as strings (entries that are objects give their `type`).
pub fn catalogue_list(list: &str) -> Vec<String> {
    catalogue()[list]
        .as_array()
        .unwrap_or_else(|| panic!("catalogue.json has no list `{list}`"))
        .iter()
        .map(|v| {
            v.get("type")
                .unwrap_or(v)
                .as_str()
                .unwrap_or_else(|| panic!("`{list}` holds a non-string: {v}"))
                .to_owned()
        })
        .collect()
}

/// The body of a case: `body` as text, or `body_base64` decoded.
pub fn body(case: &Value) -> Vec<u8> {
    match (&case["body"], &case["body_base64"]) {
        (Value::String(s), _) => s.as_bytes().to_vec(),
        (_, Value::String(b)) => base64::engine::general_purpose::STANDARD
            .decode(b)
            .unwrap_or_else(|e| panic!("case with a bad body_base64 ({e}): {case}")),
        _ => panic!("case without a body: {case}"),
    }
}

/// The `name` of a case.
pub fn name(case: &Value) -> &str {
    case["name"].as_str().unwrap_or("(unnamed case)")
}
