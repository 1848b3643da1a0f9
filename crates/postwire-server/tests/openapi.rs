//! The OpenAPI document: the served one equals `docs/openapi.json`, every documented
//! operation is routed, no undocumented method is, and the documented response shapes
//! are the ones sent.

mod common;

use std::collections::BTreeSet;

use common::{Harness, receiver};
use postwire_core::{EventType, Secret};
use postwire_server::schemas::{EventTypeName, SigningChoice};
use serde_json::{Value, json};

const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

fn checked_in() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("docs/openapi.json exists")).unwrap()
}

#[tokio::test]
async fn the_served_document_is_the_checked_in_one() {
    let h = Harness::start().await;
    let r = h.send("GET", "/public/v1/openapi.json", None, None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");
    let file = std::fs::read_to_string(path).unwrap();
    assert!(
        r.text == file,
        "docs/openapi.json is stale: regenerate it with `cargo run -p postwire-cli -- openapi > docs/openapi.json`"
    );
    assert_eq!(r.json["openapi"], "3.1.0");
    assert_eq!(r.json["info"]["version"], "1.0.0");
    assert_eq!(r.json["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
    h.stop().await;
}

/// Fills `{param}` segments with plausible values.
fn concrete(path: &str) -> String {
    path.replace("{workspaceId}", "ws_a")
        .replace("{webhookId}", "wh_probe")
        .replace("{endpointId}", "wh_probe")
}

#[tokio::test]
async fn every_documented_operation_is_routed_and_nothing_else_on_its_paths() {
    let h = Harness::start().await;
    let doc = checked_in();
    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        assert!(path.starts_with("/public/v1/"), "{path} is under /public/v1");
        let methods: BTreeSet<String> = item.as_object().unwrap().keys().map(|m| m.to_uppercase()).collect();
        for m in METHODS {
            let r = h.send(m, &concrete(path), None, None).await;
            if methods.contains(m) {
                // Routed: the handler (or its authentication) answered, not the fallback.
                assert_ne!(r.status, 405, "{m} {path}");
                assert!(
                    !r.text.contains("no route for"),
                    "{m} {path} is documented but not routed"
                );
                documented.insert((m.to_owned(), path.clone()));
            } else {
                assert_eq!(r.status, 405, "{m} {path} is routed but not documented: {}", r.text);
            }
        }
    }
    assert_eq!(documented.len(), 29);
    // Around every documented path (its parents, one segment more, a sibling), nothing
    // undocumented is routed: each such path gets the fallback 404 for every method.
    let templates: Vec<&String> = doc["paths"].as_object().unwrap().keys().collect();
    let matches_a_template = |path: &str| {
        templates.iter().any(|t| {
            let (ts, ps): (Vec<&str>, Vec<&str>) = (t.split('/').collect(), path.split('/').collect());
            ts.len() == ps.len() && ts.iter().zip(&ps).all(|(a, b)| a.starts_with('{') || a == b)
        })
    };
    let concrete_documented: BTreeSet<String> = templates.iter().map(|p| concrete(p)).collect();
    let mut neighbours = BTreeSet::new();
    for path in &concrete_documented {
        neighbours.insert(format!("{path}/extra"));
        neighbours.insert(format!("{path}x"));
        let mut parent = path.as_str();
        while let Some((p, _)) = parent.rsplit_once('/') {
            if p.is_empty() {
                break;
            }
            neighbours.insert(p.to_owned());
            neighbours.insert(format!("{p}/other"));
            parent = p;
        }
    }
    let internal = [
        "/internal/v1/events",
        "/internal/v1/workspaces/ws_a",
        "/internal/v1/workspaces/ws_a/integrations/acc",
    ];
    let mut probed = 0;
    for path in neighbours
        .iter()
        .filter(|p| !matches_a_template(p) && !internal.contains(&p.as_str()))
    {
        for m in METHODS {
            let r = h.send(m, path, None, None).await;
            assert_eq!(r.status, 404, "{m} {path} is routed but not documented: {}", r.text);
            assert!(r.text.contains("no route for"), "{m} {path}: {}", r.text);
            probed += 1;
        }
    }
    assert!(probed > 100, "{probed}");
    // Every documented operation says which statuses it may answer, with the error body.
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (m, op) in item.as_object().unwrap() {
            let responses = op["responses"].as_object().unwrap();
            // The open routes: the document itself, and the published key sets (public
            // keys, behind an unguessable id).
            if path.ends_with("openapi.json") || path.ends_with("jwks.json") {
                assert_eq!(op["security"], serde_json::json!([{}]), "{m} {path} is open");
                continue;
            }
            for status in ["401", "429"] {
                assert!(responses.contains_key(status), "{m} {path} documents {status}");
            }
            assert!(
                op["security"][0]["bearer"].is_array(),
                "{m} {path} needs the bearer token"
            );
        }
    }
    h.stop().await;
}

fn documented_properties(doc: &Value, schema: &str) -> BTreeSet<String> {
    doc["components"]["schemas"][schema]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

#[tokio::test]
async fn documented_shapes_are_the_ones_sent() {
    let h = Harness::start().await;
    let doc = checked_in();
    let t = h.writer().await;
    let rx = receiver().await;
    let created = h
        .json(
            "POST",
            "/public/v1/workspaces/ws_a/webhooks",
            &t,
            json!({"name": "n", "url": rx.url(), "integrationIds": ["acc_a1"]}),
        )
        .await;
    rx.set_secrets(vec![Secret::parse(created.json["secret"].as_str().unwrap()).unwrap()]);
    assert_eq!(
        keys(&created.json),
        documented_properties(&doc, "CreatedWebhookSubscription")
    );
    let id = created.json["id"].as_str().unwrap();
    let base = format!("/public/v1/workspaces/ws_a/webhooks/{id}");
    let one = h.send("GET", &base, Some(&t), None).await;
    assert_eq!(keys(&one.json), documented_properties(&doc, "WebhookSubscription"));
    let mut integration = documented_properties(&doc, "Integration");
    integration.remove("picture");
    assert_eq!(
        keys(&one.json["integrations"][0]),
        integration,
        "picture is left out when absent"
    );
    let test = h.send("POST", &format!("{base}/test"), Some(&t), None).await;
    assert_eq!(keys(&test.json), documented_properties(&doc, "TestEventQueued"));
    common::eventually("the test event", || rx.stats().handled == 1).await;
    let mut page = Value::Null;
    for _ in 0..200 {
        page = h.send("GET", &format!("{base}/deliveries"), Some(&t), None).await.json;
        if page["data"][0]["state"] == "delivered" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(keys(&page), documented_properties(&doc, "DeliveryList"));
    assert_eq!(keys(&page["data"][0]), documented_properties(&doc, "Delivery"));
    assert_eq!(
        keys(&page["data"][0]["attempts"][0]),
        documented_properties(&doc, "Attempt")
    );
    let rotated = h.send("POST", &format!("{base}/rotate-secret"), Some(&t), None).await;
    assert_eq!(keys(&rotated.json), documented_properties(&doc, "RotatedSecret"));
    let listed = h
        .send("GET", "/public/v1/workspaces/ws_a/signing-keys", Some(&t), None)
        .await;
    assert_eq!(keys(&listed.json), documented_properties(&doc, "SigningKeyList"));
    assert_eq!(
        keys(&listed.json["data"][0]),
        documented_properties(&doc, "SigningPublicKey")
    );
    let rotated = h
        .send("POST", "/public/v1/workspaces/ws_a/rotate-signing-key", Some(&t), None)
        .await;
    assert_eq!(keys(&rotated.json), documented_properties(&doc, "RotatedSigningKey"));
    let ops = "/public/v1/workspaces/ws_a/operator-webhooks";
    let op = h.json("POST", ops, &t, json!({"name": "ops", "url": rx.url()})).await;
    assert_eq!(keys(&op.json), documented_properties(&doc, "CreatedOperatorEndpoint"));
    let listed = h.send("GET", ops, Some(&t), None).await;
    assert_eq!(keys(&listed.json), documented_properties(&doc, "OperatorEndpointList"));
    assert_eq!(
        keys(&listed.json["data"][0]),
        documented_properties(&doc, "OperatorEndpoint")
    );
    let rotated = h
        .send(
            "POST",
            &format!("{ops}/{}/rotate-secret", op.json["id"].as_str().unwrap()),
            Some(&t),
            None,
        )
        .await;
    assert_eq!(keys(&rotated.json), documented_properties(&doc, "RotatedSecret"));
    let op_base = format!("{ops}/{}", op.json["id"].as_str().unwrap());
    let test = h.send("POST", &format!("{op_base}/test"), Some(&t), None).await;
    assert_eq!(test.status, 202, "{}", test.text);
    assert_eq!(keys(&test.json), documented_properties(&doc, "TestEventQueued"));
    let op_page = h
        .send("GET", &format!("{op_base}/deliveries"), Some(&t), None)
        .await
        .json;
    assert_eq!(keys(&op_page), documented_properties(&doc, "OperatorDeliveryList"));
    assert_eq!(
        keys(&op_page["data"][0]),
        documented_properties(&doc, "OperatorDelivery")
    );
    let error = h.send("GET", &base, None, None).await;
    assert_eq!(keys(&error.json), documented_properties(&doc, "ErrorBody"));
    let invalid = h
        .json("POST", "/public/v1/workspaces/ws_a/webhooks", &t, json!({}))
        .await;
    assert_eq!(keys(&invalid.json), documented_properties(&doc, "ValidationErrorBody"));
    let event = rx.stats().events.values().next().unwrap().event.clone().unwrap();
    assert_eq!(
        keys(&serde_json::to_value(&event).unwrap()),
        documented_properties(&doc, "EventEnvelope")
    );
    h.stop().await;
    rx.stop().await;
}

/// An enum of the checked-in OpenAPI document, by schema name.
fn documented_enum(doc: &Value, schema: &str) -> Vec<String> {
    doc["components"]["schemas"][schema]["enum"]
        .as_array()
        .unwrap_or_else(|| panic!("{schema} has no enum"))
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

use postwire_testkit::vectors::catalogue_list as catalogue;

#[test]
fn documented_enums_are_the_catalogues() {
    let documented: Vec<String> = EventTypeName::ALL
        .iter()
        .map(|t| serde_json::to_value(t).unwrap().as_str().unwrap().to_owned())
        .collect();
    let catalogue_types = catalogue("eventTypes");
    assert_eq!(documented, catalogue_types);
    let core: Vec<String> = EventType::ALL.iter().map(|t| t.as_str().to_owned()).collect();
    assert_eq!(core, catalogue_types);
    let doc = checked_in();
    assert_eq!(documented_enum(&doc, "EventTypeName"), catalogue_types);
    assert_eq!(documented_enum(&doc, "CreatedByKindName"), catalogue("createdByKinds"));
    // The `signing` extension: the documented choices are core's.
    let choices: Vec<String> = SigningChoice::ALL
        .iter()
        .map(|c| serde_json::to_value(c).unwrap().as_str().unwrap().to_owned())
        .collect();
    let core: Vec<String> = postwire_core::SigningMode::ALL
        .iter()
        .map(|m| m.as_str().to_owned())
        .collect();
    assert_eq!(choices, core);
    assert_eq!(documented_enum(&doc, "SigningChoice"), core);
    // An operator endpoint's deliveries: the operational catalogue, and the test event.
    let mut operational: Vec<String> = postwire_core::OperationalEventType::ALL
        .iter()
        .map(|t| t.as_str().to_owned())
        .collect();
    operational.push("webhook.test".to_owned());
    assert_eq!(documented_enum(&doc, "OperatorDeliveryTypeName"), operational);
}
