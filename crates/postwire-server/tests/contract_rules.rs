//! The rules the OpenAPI documents state, checked against the running server: the id
//! rule of `webhookId` (and its 400 on every operation that takes one), the lookup's
//! either-or rule, the cursor's form, a `null` test body, unresolvable hosts at
//! creation, the links, and the ingest document behind its token. Schemathesis
//! (`tests/contract/test.sh`) checks the same documents from the outside.

mod common;

use std::collections::BTreeSet;

use common::{Harness, INGEST, Options};
use serde_json::{Value, json};

fn checked_in(name: &str) -> Value {
    let path = format!("{}/../../docs/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("the document is checked in")).unwrap()
}

/// (method, path, operationId) of every operation taking a `webhookId`.
fn webhook_id_operations(doc: &Value) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let takes = op["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|p| p["name"] == "webhookId" && p["in"] == "path");
            if takes {
                out.push((
                    method.to_uppercase(),
                    path.clone(),
                    op["operationId"].as_str().unwrap().to_owned(),
                ));
            }
        }
    }
    out
}

#[tokio::test]
async fn webhook_ids_outside_the_documented_rule_are_a_documented_400_on_every_operation() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let doc = checked_in("openapi.json");
    let ops = webhook_id_operations(&doc);
    assert_eq!(ops.len(), 9, "{ops:?}");
    let too_long = "a".repeat(201);
    let bad: [(&str, &str); 3] = [
        ("%C2%87%1B", "control characters"),
        ("wh_%0A", "control characters"),
        (&too_long, "at most 200 characters"),
    ];
    for (method, path, op_id) in &ops {
        let op = &doc["paths"][path][method.to_lowercase()];
        assert!(op["responses"]["400"].is_object(), "{op_id} documents its 400");
        let param = op["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "webhookId")
            .unwrap();
        assert_eq!(param["schema"]["maxLength"], 200, "{op_id}");
        assert_eq!(param["schema"]["minLength"], 1, "{op_id}");
        assert_eq!(param["schema"]["pattern"], "^[^\\x00-\\x1f\\x7f-\\x9f]+$", "{op_id}");
        for (id, why) in &bad {
            let url = path.replace("{workspaceId}", "ws_a").replace("{webhookId}", id);
            let body = (method != "GET" && method != "DELETE").then_some("{}");
            let r = h.send(method, &url, Some(&t), body).await;
            let m = r.messages();
            assert!(
                m.iter().any(|m| m.contains("`webhookId`") && m.contains(why)),
                "{op_id} {id}: {m:?}"
            );
        }
        // Within the rule, an unknown id is a 404, also when it is 200 multi-byte characters.
        let url = path
            .replace("{workspaceId}", "ws_a")
            .replace("{webhookId}", &"%C3%A9".repeat(200));
        let body = (method != "GET" && method != "DELETE").then_some("{\"enabled\": true}");
        let r = h.send(method, &url, Some(&t), body).await;
        r.assert_error(404, "not_found");
    }
    h.stop().await;
}

#[tokio::test]
async fn creation_and_the_list_link_to_every_operation_taking_a_webhook_id() {
    let doc = checked_in("openapi.json");
    // Every operation whose only ids are the workspace's and the subscription's (a link
    // cannot fill a delivery id).
    let targets: BTreeSet<String> = webhook_id_operations(&doc)
        .into_iter()
        .filter(|(_, path, _)| !path.contains("{deliveryId}"))
        .map(|(_, _, id)| id)
        .collect();
    assert_eq!(targets.len(), 8);
    let webhooks = &doc["paths"]["/public/v1/workspaces/{workspaceId}/webhooks"];
    for (op, status, id_at) in [
        ("post", "201", "$response.body#/id"),
        ("get", "200", "$response.body#/data/0/id"),
    ] {
        let links = webhooks[op]["responses"][status]["links"].as_object().unwrap();
        let linked: BTreeSet<String> = links
            .values()
            .map(|l| l["operationId"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(linked, targets, "{op} {status}");
        for link in links.values() {
            assert_eq!(link["parameters"]["webhookId"], id_at);
            assert_eq!(link["parameters"]["workspaceId"], "$request.path.workspaceId");
            assert!(link.get("operation_id").is_none(), "OpenAPI's field name only");
        }
    }
    let from_workspaces = doc["paths"]["/public/v1/workspaces"]["get"]["responses"]["200"]["links"]
        .as_object()
        .unwrap();
    let linked: BTreeSet<&str> = from_workspaces.keys().map(String::as_str).collect();
    assert_eq!(
        linked,
        BTreeSet::from([
            "createOperatorWebhook",
            "createPortalSession",
            "createWebhook",
            "eraseIntegrationPayloads",
            "erasePostPayloads",
            "listOperatorWebhooks",
            "listSigningKeys",
            "listWebhooks",
            "lookupPostEvents",
            "rotateSigningKey"
        ])
    );
}

#[tokio::test]
async fn the_lookup_takes_exactly_one_non_empty_post_id_or_external_id() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let lookup = "/public/v1/workspaces/ws_a/posts/lookup";
    for (query, expected) in [
        ("", "`postId` or `externalId` is required"),
        ("?postId=&externalId=", "not both"),
        ("?postId=a&externalId=b", "not both"),
        ("?postId=", "`postId` must not be empty"),
        ("?externalId=", "`externalId` must not be empty"),
        ("?postId=%07", "`postId` must not contain control characters"),
        ("?since=2026-11-22T10:00:00Z", "`postId` or `externalId` is required"),
    ] {
        let m = h
            .send("GET", &format!("{lookup}{query}"), Some(&t), None)
            .await
            .messages();
        assert!(m.iter().any(|m| m.contains(expected)), "{query}: {m:?}");
    }
    let long = "p".repeat(201);
    let m = h
        .send("GET", &format!("{lookup}?postId={long}"), Some(&t), None)
        .await
        .messages();
    assert!(m[0].contains("at most 200 characters"), "{m:?}");
    for query in [
        "?postId=post_1",
        "?externalId=launch&limit=5",
        &format!("?postId={}", "%C3%A9".repeat(200)),
    ] {
        let r = h.send("GET", &format!("{lookup}{query}"), Some(&t), None).await;
        assert_eq!(r.status, 200, "{query}: {}", r.text);
        assert_eq!(r.json["data"], json!([]));
    }
    // The document says the same: one exploded form parameter, oneOf the two shapes.
    let doc = checked_in("openapi.json");
    let params = doc["paths"]["/public/v1/workspaces/{workspaceId}/posts/lookup"]["get"]["parameters"]
        .as_array()
        .unwrap();
    let q = params.iter().find(|p| p["in"] == "query").unwrap();
    assert_eq!(
        (q["style"].as_str(), q["explode"].as_bool()),
        (Some("form"), Some(true))
    );
    let branches = doc["components"]["schemas"]["PostLookupQuery"]["oneOf"]
        .as_array()
        .unwrap();
    let required: BTreeSet<String> = branches
        .iter()
        .map(|b| {
            let name = b["$ref"].as_str().unwrap().rsplit('/').next().unwrap();
            let schema = &doc["components"]["schemas"][name];
            assert_eq!(schema["additionalProperties"], false, "{name}");
            schema["required"][0].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(required, BTreeSet::from(["externalId".to_owned(), "postId".to_owned()]));
    h.stop().await;
}

#[tokio::test]
async fn cursors_have_the_documented_form_and_a_null_test_body_means_none() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let sub = h.subscribe(&t, "http://127.0.0.1:9/x").await;
    let base = format!("/public/v1/workspaces/ws_a/webhooks/{}", sub["id"].as_str().unwrap());
    for cursor in ["c_007", "c_+7", "c_0", "c_1234567890123456789", "7"] {
        let m = h
            .send("GET", &format!("{base}/deliveries?cursor={cursor}"), Some(&t), None)
            .await
            .messages();
        assert!(m[0].contains("`cursor`"), "{cursor}: {m:?}");
    }
    for cursor in ["c_7", "c_123456789012345678"] {
        let r = h
            .send("GET", &format!("{base}/deliveries?cursor={cursor}"), Some(&t), None)
            .await;
        assert_eq!(r.status, 200, "{cursor}: {}", r.text);
    }
    let r = h.send("POST", &format!("{base}/test"), Some(&t), Some("null")).await;
    assert_eq!(r.status, 202, "{}", r.text);
    h.stop().await;
}

#[tokio::test]
async fn creation_accepts_a_host_that_does_not_resolve_but_not_one_that_resolves_into_a_refused_range() {
    let h = Harness::start_with(Options {
        insecure_local: false,
        ..Options::default()
    })
    .await;
    let t = h.writer().await;
    let path = "/public/v1/workspaces/ws_a/webhooks";
    // `.invalid` never resolves (RFC 2606): accepted; its deliveries fail with `dns` and
    // wait for a retry, like those of any unreachable endpoint.
    let r = h
        .json(
            "POST",
            path,
            &t,
            json!({"name": "later", "url": "https://hooks.postwire.invalid/in"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let base = format!("{path}/{}", r.json["id"].as_str().unwrap());
    let queued = h.send("POST", &format!("{base}/test"), Some(&t), None).await;
    assert_eq!(queued.status, 202, "{}", queued.text);
    let mut delivery = Value::Null;
    // Up to 20 s: resolving the name may wait for a slow resolver.
    for _ in 0..1000 {
        delivery = h.send("GET", &format!("{base}/deliveries"), Some(&t), None).await.json["data"][0].clone();
        if delivery["attempts"].as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(delivery["attempts"][0]["error"], "dns", "{delivery}");
    assert_eq!(delivery["state"], "pending", "{delivery}");
    assert!(
        delivery["nextAttemptAt"].is_string(),
        "a retry is scheduled: {delivery}"
    );
    // `localhost` resolves, only into loopback: refused at creation.
    let m = h
        .json(
            "POST",
            path,
            &t,
            json!({"name": "local", "url": "https://localhost/in"}),
        )
        .await
        .messages();
    assert!(m[0].contains("loopback"), "{m:?}");
    // Names count characters: 200 accented letters are a valid name.
    let r = h
        .json(
            "POST",
            path,
            &t,
            json!({"name": "é".repeat(200), "url": "https://hooks.postwire.invalid/2"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let m = h
        .json(
            "POST",
            path,
            &t,
            json!({"name": "é".repeat(201), "url": "https://hooks.postwire.invalid/3"}),
        )
        .await
        .messages();
    assert!(m[0].contains("at most 200 characters"), "{m:?}");
    h.stop().await;
}

#[tokio::test]
async fn the_ingest_document_is_served_behind_the_ingest_token_and_is_the_checked_in_one() {
    let h = Harness::start().await;
    let path = "/internal/v1/openapi.json";
    h.send("GET", path, None, None).await.assert_error(401, "unauthorized");
    let api_token = h.writer().await;
    h.send("GET", path, Some(&api_token), None)
        .await
        .assert_error(401, "unauthorized");
    let r = h.send("GET", path, Some(INGEST), None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let file = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/ingest-openapi.json")).unwrap();
    assert!(
        r.text == file,
        "docs/ingest-openapi.json is stale: regenerate it with `cargo run -p postwire-cli -- openapi --ingest > docs/ingest-openapi.json`"
    );
    assert_eq!(r.json["openapi"], "3.1.0");
    // The public document does not describe the ingest API, and the other way round.
    let public = checked_in("openapi.json");
    assert!(
        public["paths"]
            .as_object()
            .unwrap()
            .keys()
            .all(|p| p.starts_with("/public/v1/"))
    );
    // Every documented ingest operation is routed (the handler answers, not the fallback
    // 404 or 405) and no other method is.
    let mut routed = 0;
    for (path, item) in r.json["paths"].as_object().unwrap() {
        assert!(path.starts_with("/internal/v1/"), "{path}");
        let concrete = path
            .replace("{workspaceId}", "ws_a")
            .replace("{integrationId}", "acc_a1");
        for method in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
            let reply = h.send(method, &concrete, Some(INGEST), Some("{}")).await;
            if item.get(method.to_lowercase()).is_some() {
                assert_ne!(reply.status, 405, "{method} {path}");
                assert!(!reply.text.contains("no route for"), "{method} {path}: {}", reply.text);
                for status in ["401", "5XX"] {
                    assert!(
                        item[method.to_lowercase()]["responses"][status].is_object(),
                        "{method} {path} {status}"
                    );
                }
                routed += 1;
            } else {
                reply.assert_error(405, "method_not_allowed");
            }
        }
    }
    assert_eq!(routed, 4);
    h.stop().await;
}
