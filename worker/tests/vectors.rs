//! Every case of the shared `tests/vectors/verify.json`, through the Worker's own checks
//! ([`check_request`]: method, headers, size, timestamp, signature) with each case's fixed
//! `now`, expecting the case's outcome and, for failures, its error code and the HTTP status
//! the Worker answers with. The workerd tests (`worker/test/vectors.test.mjs`) run the same
//! cases through the built Worker, shifted to the present time.

use postwire_core::{DEFAULT_TOLERANCE_SECS, Secret, UnixTime, Verifier};
use postwire_testkit::vectors::{body as body_of, cases};
use postwire_worker::config::DEFAULT_MAX_BODY_BYTES;
use postwire_worker::verify::inspect::check_request;
use serde_json::Value;

fn load() -> Vec<Value> {
    cases("verify.json")
}

fn expected_status(code: &str) -> u16 {
    match code {
        "missing_header" | "invalid_header" => 400,
        "timestamp_too_old" | "timestamp_too_new" | "invalid_signature" => 401,
        other => panic!("verify.json expects a code the Worker does not answer with: {other}"),
    }
}

#[test]
fn every_verify_vector_gives_the_expected_outcome() {
    let cases = load();
    assert!(cases.len() >= 30, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap_or("?");
        let secrets = case["secrets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| Secret::parse(s.as_str().unwrap()).unwrap());
        let tolerance = case
            .get("tolerance")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_TOLERANCE_SECS);
        let verifier = Verifier::with_secrets(secrets).unwrap().with_tolerance_secs(tolerance);
        let headers: Vec<(String, String)> = case["headers"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
            .collect();
        let body = body_of(case);
        let now = UnixTime::from_secs(case["now"].as_i64().unwrap());
        let got = check_request(&verifier, DEFAULT_MAX_BODY_BYTES, "POST", &headers, &body, now);
        let ok = case["ok"].as_bool().unwrap();
        match (ok, got) {
            (true, Ok(delivery)) => assert_eq!(delivery.body, body, "{name}"),
            (false, Err(reply)) => {
                let code = case["error"].as_str().unwrap();
                if reply.code.as_str() != code || reply.status() != expected_status(code) {
                    failures.push(format!(
                        "{name}: expected {code}, got {} {}",
                        reply.status(),
                        reply.code.as_str()
                    ));
                }
            }
            (true, Err(reply)) => failures.push(format!("{name}: expected ok, got {}", reply.code.as_str())),
            (false, Ok(_)) => failures.push(format!("{name}: expected an error, got ok")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Every case of `tests/vectors/verify_v1a.json` (the opt-in ed25519 extension) through the
/// Worker's checks, with the trust list as `WEBHOOK_SECRETS` and `WEBHOOK_PUBLIC_KEYS` would
/// give it; a refused trust list is a configuration error, not an answer.
#[test]
fn every_v1a_verify_vector_gives_the_expected_outcome() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/vectors/verify_v1a.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("verify_v1a.json")).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() >= 20);
    let mut failures = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap_or("?");
        let keys: Vec<&str> = case["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        let secrets = keys
            .iter()
            .filter(|k| k.starts_with("whsec_"))
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        let public = keys
            .iter()
            .filter(|k| !k.starts_with("whsec_"))
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        let env = [
            ("WEBHOOK_SECRETS", secrets),
            ("WEBHOOK_PUBLIC_KEYS", public),
            ("ORIGIN_URL", "https://origin.example/".to_owned()),
        ];
        let config =
            postwire_worker::Config::from_lookup(|n| env.iter().find(|(k, _)| *k == n).map(|(_, v)| v.clone()));
        let ok = case["ok"].as_bool().unwrap();
        let code = case["error"].as_str().unwrap_or("");
        let config = match config {
            Ok(c) => c,
            Err(e) => {
                if ok || code != "invalid_public_key" || e.variable != "WEBHOOK_PUBLIC_KEYS" {
                    failures.push(format!("{name}: configuration refused: {e}"));
                }
                continue;
            }
        };
        if code == "invalid_public_key" {
            failures.push(format!("{name}: the trust list should have been refused"));
            continue;
        }
        let headers: Vec<(String, String)> = case["headers"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
            .collect();
        let body = body_of(case);
        let now = UnixTime::from_secs(case["now"].as_i64().unwrap());
        match (
            ok,
            check_request(
                config.verifier.as_ref().unwrap(),
                DEFAULT_MAX_BODY_BYTES,
                "POST",
                &headers,
                &body,
                now,
            ),
        ) {
            (true, Ok(delivery)) => assert_eq!(delivery.body, body, "{name}"),
            (false, Err(reply)) => {
                if reply.code.as_str() != code || reply.status() != expected_status(code) {
                    failures.push(format!(
                        "{name}: expected {code}, got {} {}",
                        reply.status(),
                        reply.code.as_str()
                    ));
                }
            }
            (true, Err(reply)) => failures.push(format!("{name}: expected ok, got {}", reply.code.as_str())),
            (false, Ok(_)) => failures.push(format!("{name}: expected an error, got ok")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
