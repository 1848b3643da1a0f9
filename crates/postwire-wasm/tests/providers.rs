//! `verifyProvider` (feature `providers`) on the providers' known answers: every case of
//! `tests/vectors/providers/providers.json` through the wasm boundary's scratch-buffer
//! layout gives the same verdict as postwire-core (the core's own test checks those against
//! the providers' SDKs). Natively: the layout and the codes are what this checks.
#![cfg(all(feature = "providers", not(target_arch = "wasm32")))]

use base64::Engine as _;
use postwire_wasm::codes::{code_name, last_error_status};
use postwire_wasm::{scratch_read_for_tests, scratch_write_for_tests, verify_provider};
use serde_json::Value;

const VECTORS: &str = include_str!("../../../tests/vectors/providers/providers.json");

/// The result of one call: `Ok("id\ntype\ntimestamp")` or `Err(code)`.
fn call(
    provider: &str,
    keys: &[String],
    headers: &[(String, String)],
    body: &[u8],
    now: i64,
) -> Result<String, String> {
    let keys = keys.join("\n");
    let headers: Vec<String> = headers.iter().flat_map(|(k, v)| [k.clone(), v.clone()]).collect();
    let headers = headers.join("\n");
    let mut input = Vec::new();
    for part in [provider.as_bytes(), keys.as_bytes(), headers.as_bytes(), body] {
        input.extend_from_slice(part);
    }
    assert!(scratch_write_for_tests(&input));
    let len = verify_provider(
        provider.len() as u32,
        keys.len() as u32,
        headers.len() as u32,
        body.len() as u32,
        now as f64,
        -1.0,
    );
    if len == 0 {
        Err(code_name(last_error_status()))
    } else {
        Ok(String::from_utf8(scratch_read_for_tests(len as usize)).unwrap())
    }
}

#[test]
fn every_known_answer_crosses_the_boundary_unchanged() {
    let doc: Value = serde_json::from_str(VECTORS).unwrap();
    let mut total = 0;
    for (name, entry) in doc["providers"].as_object().unwrap() {
        let provider = match entry.get("settings") {
            Some(s) => format!("{name} {}", s["url"].as_str().unwrap()),
            None => name.clone(),
        };
        for case in entry["cases"].as_array().unwrap() {
            total += 1;
            let label = format!("{name} / {}", case["name"].as_str().unwrap());
            let keys: Vec<String> = case
                .get("keys")
                .unwrap_or(&entry["keys"])
                .as_array()
                .unwrap()
                .iter()
                .map(|k| k.as_str().unwrap().to_string())
                .collect();
            // Repeated headers joined, as a server hands them over (as the core's test).
            let mut headers: Vec<(String, String)> = Vec::new();
            for pair in case["headers"].as_array().unwrap() {
                let (k, v) = (
                    pair[0].as_str().unwrap(),
                    pair[1].as_str().unwrap().trim_matches([' ', '\t']),
                );
                match headers.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case(k)) {
                    Some((_, val)) => *val = format!("{val}, {v}"),
                    None => headers.push((k.to_string(), v.to_string())),
                }
            }
            let body = match case.get("body") {
                Some(b) => b.as_str().unwrap().as_bytes().to_vec(),
                None => base64::engine::general_purpose::STANDARD
                    .decode(case["body_base64"].as_str().unwrap())
                    .unwrap(),
            };
            let now = case
                .get("now")
                .and_then(Value::as_i64)
                .unwrap_or(doc["now"].as_i64().unwrap());
            let got = call(&provider, &keys, &headers, &body, now);
            match &case["expect"] {
                Value::String(code) => assert_eq!(got, Err(code.clone()), "{label}"),
                Value::Object(want) => {
                    let expected = format!(
                        "{}\n{}\n{}",
                        want["id"].as_str().unwrap(),
                        want["event_type"].as_str().unwrap_or(""),
                        want["timestamp"].as_i64().map(|t| t.to_string()).unwrap_or_default()
                    );
                    assert_eq!(got, Ok(expected), "{label}");
                }
                other => panic!("{label}: {other}"),
            }
        }
    }
    assert!(total >= 150, "{total}");
}

#[test]
fn bad_settings_and_layouts_are_codes_not_traps() {
    let none: Vec<(String, String)> = Vec::new();
    assert_eq!(
        call("nope", &["k".into()], &none, b"", 0),
        Err("invalid_provider_settings".into())
    );
    assert_eq!(
        call("twilio ftp://x", &["k".into()], &none, b"", 0),
        Err("invalid_provider_settings".into())
    );
    assert_eq!(call("stripe", &[], &none, b"", 0), Err("invalid_secret".into()));
    assert_eq!(
        call("stripe", &["k".into()], &none, b"", 0),
        Err("missing_header".into())
    );
    // Lengths beyond the buffer.
    assert_eq!(verify_provider(u32::MAX, 0, 0, 0, 0.0, -1.0), 0);
    assert_ne!(last_error_status(), 0);
}
