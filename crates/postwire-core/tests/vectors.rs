//! Runs every shared test vector in `tests/vectors/` (the same files the npm package and
//! the Worker run) against postwire-core.

use postwire_core::{
    ActorKind, CreatedByKind, DisconnectReason, Event, EventType, FailureCode, PostState, Secret, UnixTime, Verifier,
    matches,
};
use serde_json::Value;

use postwire_testkit::vectors::{body, cases as load, catalogue, name};

#[test]
fn sign_vectors() {
    for case in load("sign.json") {
        let secret = Secret::parse(case["secret"].as_str().unwrap()).unwrap();
        let ts = UnixTime::from_secs(case["timestamp"].as_i64().unwrap());
        let sig = secret.sign(case["id"].as_str().unwrap(), ts, &body(&case)).unwrap();
        assert_eq!(sig.to_string(), case["signature"].as_str().unwrap(), "{}", name(&case));
    }
}

#[test]
fn verify_vectors() {
    let cases = load("verify.json");
    let (mut ok, mut failing) = (0, 0);
    for case in &cases {
        let secrets = case["secrets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| Secret::parse(s.as_str().unwrap()).unwrap());
        let mut verifier = Verifier::with_secrets(secrets).unwrap();
        if let Some(t) = case["tolerance"].as_u64() {
            verifier = verifier.with_tolerance_secs(t);
        }
        let headers: Vec<(String, String)> = case["headers"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
            .collect();
        let now = UnixTime::from_secs(case["now"].as_i64().unwrap());
        let result = verifier.verify(&headers, &body(case), now);
        if case["ok"].as_bool().unwrap() {
            assert!(result.is_ok(), "{}: expected ok, got {:?}", name(case), result);
            ok += 1;
        } else {
            let err = result.expect_err(name(case));
            assert_eq!(
                err.code().as_str(),
                case["error"].as_str().unwrap(),
                "{}: {err}",
                name(case)
            );
            failing += 1;
        }
    }
    assert!(ok > 10 && failing > 10, "both outcomes are exercised");
}

#[test]
fn event_vectors() {
    for case in load("events.json") {
        let result = Event::from_json(case["body"].as_str().unwrap().as_bytes());
        if case["ok"].as_bool().unwrap() {
            let event = result.unwrap_or_else(|e| panic!("{}: {e}", name(&case)));
            assert_eq!(
                event.event_type().as_str(),
                case["type"].as_str().unwrap(),
                "{}",
                name(&case)
            );
            // What we parse, we write back as an equal event.
            assert_eq!(
                Event::from_json(event.to_json().as_bytes()).unwrap(),
                event,
                "{}",
                name(&case)
            );
        } else {
            let err = result.expect_err(name(&case));
            assert_eq!(err.code().as_str(), case["error"].as_str().unwrap(), "{}", name(&case));
        }
    }
}

#[test]
fn matching_vectors() {
    for case in load("matching.json") {
        let events: Vec<EventType> = case["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap().parse().unwrap())
            .collect();
        let ids: Vec<&str> = case["integrationIds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let event_type: EventType = case["eventType"].as_str().unwrap().parse().unwrap();
        let got = matches(&events, ids.iter().copied(), event_type, case["accountId"].as_str());
        assert_eq!(got, case["matches"].as_bool().unwrap(), "{}", name(&case));
    }
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect()
}

#[test]
fn enums_are_the_catalogues() {
    let cat = catalogue();
    let types: Vec<&str> = cat["eventTypes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["type"].as_str().unwrap())
        .collect();
    assert_eq!(EventType::ALL.iter().map(|t| t.as_str()).collect::<Vec<_>>(), types);
    assert_eq!(
        FailureCode::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
        strings(&cat["failureCodes"])
    );
    assert_eq!(
        DisconnectReason::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
        strings(&cat["disconnectReasons"])
    );
    assert_eq!(
        ActorKind::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
        strings(&cat["actorKinds"])
    );
    assert_eq!(
        CreatedByKind::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
        strings(&cat["createdByKinds"])
    );
    for state in strings(&cat["postStates"]) {
        assert!(
            !matches!(PostState::from(state), PostState::Other(_)),
            "post state {state} is not named by postwire-core"
        );
    }
}

#[test]
fn catalogue_samples_parse_as_their_type() {
    for entry in catalogue()["eventTypes"].as_array().unwrap() {
        let sample = serde_json::to_vec(&entry["sample"]).unwrap();
        let event = Event::from_json(&sample).unwrap_or_else(|e| panic!("{}: {e}", entry["type"]));
        assert_eq!(event.event_type().as_str(), entry["type"].as_str().unwrap());
    }
}

/// `v1a` (the opt-in ed25519 extension): `keys.json`, `sign_v1a.json`, `verify_v1a.json`.
#[cfg(feature = "ed25519")]
mod v1a {
    use super::*;
    use postwire_core::{PublicKey, SigningKey, TrustedKey};

    #[test]
    fn key_vectors() {
        let (mut ok, mut failing) = (0, 0);
        for case in load("keys.json") {
            let text = case["text"].as_str().unwrap();
            let result: Result<Option<PublicKey>, _> = match case["kind"].as_str().unwrap() {
                "signing" => SigningKey::parse(text).map(|k| Some(k.public_key())),
                "public" => PublicKey::parse(text).map(Some),
                "trusted" => TrustedKey::parse(text).map(|k| match k {
                    TrustedKey::PublicKey(p) => Some(p),
                    TrustedKey::Secret(_) => None,
                }),
                other => panic!("unknown kind {other}"),
            };
            if case["ok"].as_bool().unwrap() {
                let got = result.unwrap_or_else(|e| panic!("{}: {e}", name(&case)));
                assert_eq!(
                    got.map(|p| p.to_string()).as_deref(),
                    case["public_key"].as_str(),
                    "{}",
                    name(&case)
                );
                ok += 1;
            } else {
                let err = result.expect_err(name(&case));
                assert_eq!(err.code().as_str(), case["error"].as_str().unwrap(), "{}", name(&case));
                // The message never carries the key text.
                let digits = text.trim().trim_start_matches("whsk_").trim_start_matches("whpk_");
                assert!(digits.len() < 8 || !err.to_string().contains(digits), "{}", name(&case));
                failing += 1;
            }
        }
        assert!(ok > 5 && failing > 5);
    }

    #[test]
    fn sign_vectors() {
        for case in load("sign_v1a.json") {
            let key = SigningKey::parse(case["signing_key"].as_str().unwrap()).unwrap();
            assert_eq!(key.public_key().to_string(), case["public_key"].as_str().unwrap());
            let ts = UnixTime::from_secs(case["timestamp"].as_i64().unwrap());
            let sig = key.sign(case["id"].as_str().unwrap(), ts, &body(&case)).unwrap();
            assert_eq!(sig.to_string(), case["signature"].as_str().unwrap(), "{}", name(&case));
        }
    }

    #[test]
    fn verify_vectors() {
        let (mut ok, mut failing) = (0, 0);
        for case in load("verify_v1a.json") {
            let keys: Vec<&str> = case["keys"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| k.as_str().unwrap())
                .collect();
            let headers: Vec<(String, String)> = case["headers"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                .collect();
            let now = UnixTime::from_secs(case["now"].as_i64().unwrap());
            let result = Verifier::parse_keys(&keys).and_then(|v| v.verify(&headers, &body(&case), now).map(|_| ()));
            if case["ok"].as_bool().unwrap() {
                assert!(result.is_ok(), "{}: expected ok, got {:?}", name(&case), result);
                ok += 1;
            } else {
                let err = result.expect_err(name(&case));
                assert_eq!(
                    err.code().as_str(),
                    case["error"].as_str().unwrap(),
                    "{}: {err}",
                    name(&case)
                );
                failing += 1;
            }
        }
        assert!(ok > 10 && failing > 10, "both outcomes are exercised");
    }
}
