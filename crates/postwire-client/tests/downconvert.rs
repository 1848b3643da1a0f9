//! The 3.1 → 3.0 down-conversion the client's build runs before progenitor
//! (`build_support/downconvert.rs`): each rule on a small document, and both committed
//! documents, which must come out as OpenAPI 3.0 that `openapiv3` reads with no 3.1 form left.

#[path = "../build_support/downconvert.rs"]
mod downconvert;

use downconvert::{ANY_ERROR_BODY, downconvert, leave_string_checks_to_server, unify_error_bodies};
use serde_json::{Value, json};

/// Runs every step the build runs.
fn prepare(doc: Value) -> Value {
    leave_string_checks_to_server(unify_error_bodies(downconvert(doc)))
}

fn committed(name: &str) -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/openapi/").to_owned() + name;
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// Every 3.1-only form still present below `v`, by path.
fn forms_3_1(v: &Value, path: &str, found: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let here = format!("{path}/{k}");
                match (k.as_str(), child) {
                    ("type", Value::Array(_)) => found.push(format!("{here}: type list")),
                    ("type", Value::String(t)) if t == "null" => found.push(format!("{here}: type null")),
                    ("const", _) => found.push(format!("{here}: const")),
                    ("exclusiveMinimum" | "exclusiveMaximum", Value::Number(_)) => found.push(here.clone()),
                    _ => {}
                }
                forms_3_1(child, &here, found);
            }
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .for_each(|(i, c)| forms_3_1(c, &format!("{path}/{i}"), found)),
        _ => {}
    }
}

#[test]
fn the_committed_documents_become_openapi_3_0_that_openapiv3_reads() {
    for name in ["openapi.json", "ingest-openapi.json"] {
        let original = committed(name);
        assert!(
            original["openapi"].as_str().unwrap().starts_with("3.1"),
            "{name} is 3.1 today"
        );
        let mut before = Vec::new();
        forms_3_1(&original, "", &mut before);
        assert!(
            !before.is_empty(),
            "{name} uses 3.1 forms, so the conversion is exercised"
        );

        let converted = prepare(original.clone());
        assert_eq!(converted["openapi"], "3.0.3");
        let mut left = Vec::new();
        forms_3_1(&converted, "", &mut left);
        assert!(left.is_empty(), "{name}: 3.1 forms left: {left:?}");
        let spec: openapiv3::OpenAPI =
            serde_json::from_value(converted.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let original_paths = original["paths"].as_object().unwrap().len();
        assert_eq!(spec.paths.paths.len(), original_paths, "{name}: every path kept");
        assert_eq!(
            converted["components"]["schemas"].as_object().unwrap().len(),
            original["components"]["schemas"].as_object().unwrap().len() + 1,
            "{name}: every schema kept, plus {ANY_ERROR_BODY}"
        );
    }
}

#[test]
fn type_lists_with_null_become_nullable() {
    let out = downconvert(json!({"openapi": "3.1.0", "x": {"type": ["string", "null"], "format": "date-time"}}));
    assert_eq!(
        out["x"],
        json!({"type": "string", "format": "date-time", "nullable": true})
    );
    // A list without null keeps its single type and gains nothing.
    let out = downconvert(json!({"x": {"type": ["integer"]}}));
    assert_eq!(out["x"], json!({"type": "integer"}));
}

#[test]
fn one_of_with_a_null_branch_becomes_a_nullable_schema() {
    // A $ref with a description: wrapped in allOf (3.0 ignores a $ref's siblings).
    let out = downconvert(json!({"x": {"oneOf": [
        {"type": "null"},
        {"$ref": "#/components/schemas/S", "description": "Which one."}
    ]}}));
    assert_eq!(
        out["x"],
        json!({"nullable": true, "description": "Which one.", "allOf": [{"$ref": "#/components/schemas/S"}]})
    );
    // An inline schema: merged into its parent; the null branch may come last.
    let out = downconvert(json!({"x": {"oneOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}]}}));
    assert_eq!(
        out["x"],
        json!({"nullable": true, "type": "string", "enum": ["a", "b"]})
    );
    // Several branches left: kept as a oneOf.
    let out = downconvert(json!({"x": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}}));
    assert_eq!(
        out["x"],
        json!({"nullable": true, "anyOf": [{"type": "string"}, {"type": "integer"}]})
    );
}

#[test]
fn const_examples_exclusive_bounds_and_lone_nulls() {
    let out = downconvert(json!({
        "a": {"const": "post"},
        "b": {"type": "integer", "exclusiveMinimum": 0},
        "c": {"type": "string", "examples": ["first", "second"]},
        "d": {"type": "null"},
        "media": {"examples": {"one": {"value": 1}}},
    }));
    assert_eq!(out["a"], json!({"enum": ["post"]}));
    assert_eq!(
        out["b"],
        json!({"type": "integer", "minimum": 0, "exclusiveMinimum": true})
    );
    assert_eq!(out["c"], json!({"type": "string", "example": "first"}));
    assert_eq!(out["d"], json!({"enum": [null], "nullable": true}));
    assert_eq!(
        out["media"],
        json!({"examples": {"one": {"value": 1}}}),
        "a media type's examples map is 3.0"
    );
}

#[test]
fn the_3_1_license_identifier_goes_and_parameters_are_never_nullable() {
    let out = downconvert(json!({
        "openapi": "3.1.0",
        "info": {"license": {"name": "MIT", "identifier": "MIT"}},
        "p": {"in": "header", "name": "Idempotency-Key", "schema": {"type": ["string", "null"]}},
    }));
    assert_eq!(out["info"]["license"], json!({"name": "MIT"}));
    assert_eq!(out["p"]["schema"], json!({"type": "string"}));
}

#[test]
fn an_operation_with_several_error_bodies_gets_one_union_and_others_are_left_alone() {
    let doc = json!({
        "paths": {
            "/a": {"post": {"responses": {
                "200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Ok"}}}},
                "400": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/V"}}}},
                "404": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/E"}}}}
            }}},
            "/b": {"get": {"responses": {
                "401": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/E"}}}}
            }}}
        },
        "components": {"schemas": {"Ok": {}, "V": {}, "E": {}}}
    });
    let out = unify_error_bodies(doc);
    let any = json!({"$ref": format!("#/components/schemas/{ANY_ERROR_BODY}")});
    let a = &out["paths"]["/a"]["post"]["responses"];
    assert_eq!(a["400"]["content"]["application/json"]["schema"], any);
    assert_eq!(a["404"]["content"]["application/json"]["schema"], any);
    assert_eq!(
        a["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/Ok"
    );
    let b = &out["paths"]["/b"]["get"]["responses"]["401"]["content"]["application/json"]["schema"];
    assert_eq!(b["$ref"], "#/components/schemas/E", "one error body: unchanged");
    assert_eq!(
        out["components"]["schemas"][ANY_ERROR_BODY]["oneOf"],
        json!([{"$ref": "#/components/schemas/V"}, {"$ref": "#/components/schemas/E"}])
    );
}

#[test]
fn string_checks_are_left_to_the_server_other_rules_stay() {
    let out = leave_string_checks_to_server(json!({
        "s": {"type": "string", "pattern": "^https://", "minLength": 1, "maxLength": 2048, "format": "uri"},
        "n": {"type": "integer", "minimum": 1, "maximum": 100},
        "e": {"type": "string", "enum": ["a"]},
    }));
    assert_eq!(out["s"], json!({"type": "string", "format": "uri"}));
    assert_eq!(out["n"], json!({"type": "integer", "minimum": 1, "maximum": 100}));
    assert_eq!(out["e"], json!({"type": "string", "enum": ["a"]}));
}
