//! OpenAPI 3.1 → 3.0 down-conversion of postwire's documents, so progenitor (which reads
//! OpenAPI 3.0 through the `openapiv3` crate) can generate the client from the documents
//! the server serves (utoipa writes 3.1).
//!
//! Only the 3.1 forms the documents use are rewritten, each to its 3.0 equivalent:
//! - `"openapi": "3.1.x"` becomes `"3.0.3"`; `info.license.identifier` (3.1 only) is dropped;
//! - `"type": [X, "null"]` becomes `"type": X, "nullable": true`;
//! - a `oneOf`/`anyOf` with a `{"type": "null"}` branch loses that branch and gains
//!   `"nullable": true`; a single `$ref` left is wrapped in `allOf` (3.0 ignores a `$ref`'s
//!   siblings), a single inline schema left is merged into its parent;
//! - a lone `{"type": "null"}` becomes `{"enum": [null], "nullable": true}`;
//! - `"const": v` becomes `"enum": [v]`;
//! - a schema's `"examples": [..]` becomes `"example"` (its first item);
//! - a parameter's schema loses `nullable` (a parameter is absent, never null);
//! - numeric `exclusiveMinimum`/`exclusiveMaximum` become `minimum`/`maximum` with the 3.0 boolean.
//!
//! Anything else is left as it is; a 3.1 form not listed here fails the build when
//! `openapiv3` cannot read it, which is the signal to add its rule here (with a test in
//! `tests/downconvert.rs`). The file is compiled into `build.rs` and into that test with `#[path]`.

use serde_json::{Map, Value};

/// Rewrites a 3.1 document (as JSON) into the 3.0 form progenitor reads.
pub fn downconvert(mut doc: Value) -> Value {
    if let Some(root) = doc.as_object_mut() {
        if root
            .get("openapi")
            .and_then(Value::as_str)
            .is_some_and(|v| v.starts_with("3.1"))
        {
            root.insert("openapi".to_owned(), Value::String("3.0.3".to_owned()));
        }
        if let Some(license) = root
            .get_mut("info")
            .and_then(|i| i.get_mut("license"))
            .and_then(Value::as_object_mut)
        {
            license.remove("identifier");
        }
    }
    walk(&mut doc);
    doc
}

/// Rewrites every object below `value`, children first.
fn walk(value: &mut Value) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(walk),
        Value::Object(map) => {
            for child in map.values_mut() {
                walk(child);
            }
            rewrite(map);
        }
        _ => {}
    }
}

/// Whether `v` is the schema `{"type": "null"}`.
fn is_null_schema(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("null")
}

/// The rewrites of one object (its children are already rewritten).
fn rewrite(map: &mut Map<String, Value>) {
    // "type": [X, "null"] → "type": X, "nullable": true
    if let Some(Value::Array(types)) = map.get("type") {
        let non_null: Vec<Value> = types.iter().filter(|t| t.as_str() != Some("null")).cloned().collect();
        let had_null = non_null.len() < types.len();
        if non_null.len() == 1 {
            map.insert("type".to_owned(), non_null[0].clone());
            if had_null {
                map.insert("nullable".to_owned(), Value::Bool(true));
            }
        }
    }
    // A lone {"type": "null"} (a branch of a oneOf is handled below, by its parent).
    if is_null_schema(&Value::Object(map.clone())) && map.len() == 1 {
        map.remove("type");
        map.insert("enum".to_owned(), Value::Array(vec![Value::Null]));
        map.insert("nullable".to_owned(), Value::Bool(true));
    }
    // "const": v → "enum": [v]
    if let Some(c) = map.remove("const") {
        map.insert("enum".to_owned(), Value::Array(vec![c]));
    }
    // A schema's "examples": [..] → "example" (a media type's "examples" is an object, kept).
    if let Some(Value::Array(examples)) = map.get("examples") {
        let first = examples.first().cloned();
        map.remove("examples");
        if let Some(first) = first {
            map.entry("example").or_insert(first);
        }
    }
    // Numeric exclusive bounds → the 3.0 boolean form.
    for (exclusive, bound) in [("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")] {
        if let Some(n @ Value::Number(_)) = map.get(exclusive).cloned() {
            map.insert(bound.to_owned(), n);
            map.insert(exclusive.to_owned(), Value::Bool(true));
        }
    }
    // A parameter is never null on the wire (absent is how a query or header parameter is
    // left out): its schema's `nullable` is dropped.
    if map.contains_key("in")
        && let Some(schema) = map.get_mut("schema").and_then(Value::as_object_mut)
    {
        schema.remove("nullable");
    }
    // oneOf/anyOf with a null branch.
    for key in ["oneOf", "anyOf"] {
        let Some(Value::Array(branches)) = map.get(key) else {
            continue;
        };
        // A branch rewritten above already reads {"enum": [null], "nullable": true}.
        let is_null = |b: &Value| {
            is_null_schema(b)
                || (b.get("enum") == Some(&Value::Array(vec![Value::Null]))
                    && b.as_object().is_some_and(|o| o.len() == 2))
        };
        if !branches.iter().any(is_null) {
            continue;
        }
        let rest: Vec<Value> = branches.iter().filter(|b| !is_null(b)).cloned().collect();
        map.remove(key);
        map.insert("nullable".to_owned(), Value::Bool(true));
        match rest.as_slice() {
            [Value::Object(only)] if only.contains_key("$ref") => {
                let reference = only["$ref"].clone();
                if let Some(description) = only.get("description") {
                    map.entry("description").or_insert(description.clone());
                }
                let mut wrapped = Map::new();
                wrapped.insert("$ref".to_owned(), reference);
                map.insert("allOf".to_owned(), Value::Array(vec![Value::Object(wrapped)]));
            }
            [Value::Object(only)] => {
                for (k, v) in only {
                    map.entry(k.clone()).or_insert(v.clone());
                }
            }
            _ => {
                map.insert(key.to_owned(), Value::Array(rest));
            }
        }
    }
}

/// The name of the schema [`unify_error_bodies`] adds.
pub const ANY_ERROR_BODY: &str = "AnyErrorBody";

/// Gives each operation one error body type, as progenitor requires (it generates one error
/// type per operation and refuses an operation whose error responses have different
/// schemas). Where an operation's error responses name several schemas (the API answers 400
/// with `ValidationErrorBody` and other statuses with `ErrorBody`), each of them is pointed
/// at one added schema, [`ANY_ERROR_BODY`], a `oneOf` of those schemas. The bodies on the
/// wire are unchanged: this only says "one of these" where the document says which per status.
pub fn unify_error_bodies(mut doc: Value) -> Value {
    let mut union: Vec<Value> = Vec::new();
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return doc;
    };
    for item in paths.values_mut() {
        let Some(item) = item.as_object_mut() else { continue };
        for operation in item.values_mut() {
            let Some(responses) = operation.get_mut("responses").and_then(Value::as_object_mut) else {
                continue;
            };
            let error_schemas = |responses: &Map<String, Value>| -> Vec<Value> {
                let mut seen: Vec<Value> = Vec::new();
                for (status, response) in responses {
                    if status.starts_with('2') {
                        continue;
                    }
                    if let Some(content) = response.get("content").and_then(Value::as_object) {
                        for media in content.values() {
                            if let Some(schema) = media.get("schema")
                                && !seen.contains(schema)
                            {
                                seen.push(schema.clone());
                            }
                        }
                    }
                }
                seen
            };
            let schemas = error_schemas(responses);
            if schemas.len() < 2 {
                continue;
            }
            for schema in schemas {
                if !union.contains(&schema) {
                    union.push(schema);
                }
            }
            for (status, response) in responses.iter_mut() {
                if status.starts_with('2') {
                    continue;
                }
                if let Some(content) = response.get_mut("content").and_then(Value::as_object_mut) {
                    for media in content.values_mut() {
                        if let Some(media) = media.as_object_mut() {
                            let mut reference = Map::new();
                            reference.insert(
                                "$ref".to_owned(),
                                Value::String(format!("#/components/schemas/{ANY_ERROR_BODY}")),
                            );
                            media.insert("schema".to_owned(), Value::Object(reference));
                        }
                    }
                }
            }
        }
    }
    if !union.is_empty() {
        let mut any = Map::new();
        any.insert(
            "description".to_owned(),
            Value::String("Any error body the API answers with.".to_owned()),
        );
        any.insert("oneOf".to_owned(), Value::Array(union));
        if let Some(schemas) = doc
            .get_mut("components")
            .and_then(|c| c.get_mut("schemas"))
            .and_then(Value::as_object_mut)
        {
            schemas.insert(ANY_ERROR_BODY.to_owned(), Value::Object(any));
        }
    }
    doc
}

/// Removes the string checks (`pattern`, `minLength`, `maxLength`) from every schema, so the
/// generated types are plain strings and the server alone judges a value: its answer (400
/// `invalid_request` listing every problem, with the API's own words) reaches the user
/// unchanged, and a server in local development mode (`--dangerously-allow-insecure-local-urls`,
/// `http://` URLs the document's `^https://` pattern refuses) is usable from the CLI. Types,
/// enums, required fields and numbers' ranges stay.
pub fn leave_string_checks_to_server(mut doc: Value) -> Value {
    fn strip(value: &mut Value) {
        match value {
            Value::Array(items) => items.iter_mut().for_each(strip),
            Value::Object(map) => {
                if map.get("type").and_then(Value::as_str) == Some("string") {
                    for key in ["pattern", "minLength", "maxLength"] {
                        map.remove(key);
                    }
                }
                map.values_mut().for_each(strip);
            }
            _ => {}
        }
    }
    strip(&mut doc);
    doc
}
