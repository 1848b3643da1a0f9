//! The operator endpoints API (`…/operator-webhooks`) over real HTTP: create (the secret
//! once), list (never a secret), pause and resume, rotate, delete; each kind's id is `not_found` under the
//! other kind's routes; the SSRF rules and the limit of 10; a real notice delivered
//! to a loopback receiver, verified with the endpoint's own secret; and the endpoint's
//! deliveries (the notice with its operational type, a test notice, a resend).

mod common;

use std::time::Duration;

use common::{Harness, Options, PUBLIC_URL};
use postwire_core::{Secret, UnixTime, Verifier};
use postwire_server::limits::Limits;
use postwire_testkit::scripted::Receiver;
use serde_json::json;

const OPS: &str = "/public/v1/workspaces/ws_a/operator-webhooks";

#[tokio::test]
async fn create_list_rotate_delete() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let created = h
        .json("POST", OPS, &t, json!({"name": "on-call", "url": PUBLIC_URL}))
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let secret = created.json["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{secret}");
    Secret::parse(&secret).expect("a valid whsec_ secret");
    let id = created.json["id"].as_str().unwrap().to_owned();
    assert_eq!(created.json["name"], "on-call");
    assert_eq!(created.json["url"], PUBLIC_URL);
    assert_eq!(created.json["disabled"], false);
    assert_eq!(created.json["consecutiveFailures"], 0);
    assert!(created.json["failingSince"].is_null());
    assert!(created.json.get("events").is_none(), "{}", created.text);

    let reader = h.token(&[postwire_server::Scope::WebhooksRead], &["ws_a"]).await;
    let listed = h.send("GET", OPS, Some(&reader), None).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert_eq!(listed.json["data"].as_array().unwrap().len(), 1);
    assert_eq!(listed.json["data"][0]["id"], id.as_str());
    assert!(
        !listed.text.contains("whsec_") && !listed.text.contains("\"secret\""),
        "{}",
        listed.text
    );
    // A reader may not create, rotate or delete.
    let r = h
        .json("POST", OPS, &reader, json!({"name": "x", "url": PUBLIC_URL}))
        .await;
    r.assert_error(403, "insufficient_scope");

    // The subscribers' list does not show it.
    let subs = h
        .send("GET", "/public/v1/workspaces/ws_a/webhooks", Some(&t), None)
        .await;
    assert_eq!(subs.json["data"], json!([]), "{}", subs.text);

    let rotated = h
        .send("POST", &format!("{OPS}/{id}/rotate-secret"), Some(&t), None)
        .await;
    assert_eq!(rotated.status, 200, "{}", rotated.text);
    let new_secret = rotated.json["secret"].as_str().unwrap();
    assert!(new_secret.starts_with("whsec_") && new_secret != secret);
    assert!(rotated.json["previousSecretExpiresAt"].is_string());
    let again = h.send("GET", OPS, Some(&t), None).await;
    assert!(!again.text.contains("whsec_"), "{}", again.text);

    // Paused and resumed like a subscription.
    let paused = h
        .json("PUT", &format!("{OPS}/{id}/enabled"), &t, json!({"enabled": false}))
        .await;
    assert_eq!(paused.status, 200, "{}", paused.text);
    assert_eq!(paused.json["disabled"], true);
    assert!(paused.json["disabledReason"].is_string(), "{}", paused.text);
    let m = h
        .json("PUT", &format!("{OPS}/{id}/enabled"), &t, json!({"enabled": "yes"}))
        .await
        .messages();
    assert!(m[0].contains("`enabled`"), "{m:?}");
    let resumed = h
        .json("PUT", &format!("{OPS}/{id}/enabled"), &t, json!({"enabled": true}))
        .await;
    assert_eq!(resumed.json["disabled"], false, "{}", resumed.text);
    assert!(resumed.json["disabledReason"].is_null());

    // Another workspace's token does not reach it.
    let other = h.token(&[postwire_server::Scope::WebhooksWrite], &["ws_b"]).await;
    let r = h
        .send(
            "DELETE",
            &format!("/public/v1/workspaces/ws_b/operator-webhooks/{id}"),
            Some(&other),
            None,
        )
        .await;
    r.assert_error(404, "not_found");

    let deleted = h.send("DELETE", &format!("{OPS}/{id}"), Some(&t), None).await;
    assert_eq!(deleted.status, 204, "{}", deleted.text);
    let listed = h.send("GET", OPS, Some(&t), None).await;
    assert_eq!(listed.json["data"], json!([]));
    h.send("DELETE", &format!("{OPS}/{id}"), Some(&t), None)
        .await
        .assert_error(404, "not_found");
    h.stop().await;
}

#[tokio::test]
async fn each_kind_is_not_found_under_the_other_kinds_routes() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let op = h.json("POST", OPS, &t, json!({"name": "ops", "url": PUBLIC_URL})).await;
    assert_eq!(op.status, 201, "{}", op.text);
    let op_id = op.json["id"].as_str().unwrap().to_owned();
    let sub = h.subscribe(&t, PUBLIC_URL).await;
    let sub_id = sub["id"].as_str().unwrap().to_owned();

    let hooks = "/public/v1/workspaces/ws_a/webhooks";
    for (method, path, body) in [
        ("GET", format!("{hooks}/{op_id}"), None),
        ("PATCH", format!("{hooks}/{op_id}"), Some(r#"{"name":"x"}"#)),
        ("PUT", format!("{hooks}/{op_id}/enabled"), Some(r#"{"enabled":false}"#)),
        ("POST", format!("{hooks}/{op_id}/test"), None),
        ("POST", format!("{hooks}/{op_id}/rotate-secret"), None),
        ("GET", format!("{hooks}/{op_id}/deliveries"), None),
        (
            "POST",
            format!("{hooks}/{op_id}/recover"),
            Some(r#"{"since":"2026-01-01T00:00:00Z"}"#),
        ),
        ("DELETE", format!("{hooks}/{op_id}"), None),
        ("POST", format!("{OPS}/{sub_id}/rotate-secret"), None),
        ("DELETE", format!("{OPS}/{sub_id}"), None),
        ("PUT", format!("{OPS}/{sub_id}/enabled"), Some(r#"{"enabled":false}"#)),
        ("POST", format!("{OPS}/{sub_id}/test"), None),
        ("GET", format!("{OPS}/{sub_id}/deliveries"), None),
        ("POST", format!("{OPS}/{sub_id}/deliveries/dlv_1/resend"), None),
    ] {
        let r = h.send(method, &path, Some(&t), body).await;
        r.assert_error(404, "not_found");
        assert!(!r.text.contains("whsec_"), "{method} {path}: {}", r.text);
    }
    // Both are still there, untouched.
    let ops = h.send("GET", OPS, Some(&t), None).await;
    assert_eq!(ops.json["data"][0]["id"], op_id.as_str());
    assert_eq!(ops.json["data"][0]["name"], "ops");
    let one = h.send("GET", &format!("{hooks}/{sub_id}"), Some(&t), None).await;
    assert_eq!(one.status, 200, "{}", one.text);
    h.stop().await;
}

#[tokio::test]
async fn refused_urls_bodies_and_the_eleventh_endpoint() {
    let h = Harness::start_with(Options {
        insecure_local: false,
        limits: Limits {
            max_subscriptions_per_workspace: 1,
            unauthenticated_per_hour: 10_000,
            ..Limits::default()
        },
        ..Options::default()
    })
    .await;
    let t = h.writer().await;
    for (body, expected) in [
        (json!({"name": "n", "url": "https://10.1.2.3/h"}), "private"),
        (json!({"name": "n", "url": "https://127.0.0.1/h"}), "loopback"),
        (
            json!({"name": "n", "url": "https://169.254.169.254/latest"}),
            "cloud metadata",
        ),
        (json!({"name": "n", "url": "http://93.184.216.34/h"}), "must use https"),
        (json!({"name": "", "url": PUBLIC_URL}), "`name` must not be empty"),
        (json!({"url": PUBLIC_URL}), "`name` is required"),
        (
            json!({"name": "n", "url": PUBLIC_URL, "events": ["post.published"]}),
            "unknown field `events`",
        ),
        (json!({"name": 3, "url": PUBLIC_URL}), "`name` must be a string"),
    ] {
        let m = h.json("POST", OPS, &t, body.clone()).await.messages();
        assert!(m.iter().any(|m| m.contains(expected)), "{body}: {m:?}");
    }
    let m = h.send("POST", OPS, Some(&t), Some("{")).await.messages();
    assert!(m[0].contains("not valid JSON"), "{m:?}");
    assert_eq!(h.send("GET", OPS, Some(&t), None).await.json["data"], json!([]));

    // Operator endpoints do not count towards the subscription limit (here 1), and
    // subscriptions not towards theirs (10).
    h.subscribe(&t, PUBLIC_URL).await;
    for i in 0..postwire_sender::MAX_OPERATOR_ENDPOINTS {
        let r = h
            .json("POST", OPS, &t, json!({"name": format!("ops {i}"), "url": PUBLIC_URL}))
            .await;
        assert_eq!(r.status, 201, "{i}: {}", r.text);
    }
    let over = h
        .json("POST", OPS, &t, json!({"name": "eleventh", "url": PUBLIC_URL}))
        .await;
    over.assert_error(403, "plan_limit");
    assert!(
        over.json["message"].as_str().unwrap().contains("10 operator endpoints"),
        "{}",
        over.text
    );
    let listed = h.send("GET", OPS, Some(&t), None).await;
    assert_eq!(listed.json["data"].as_array().unwrap().len(), 10);
    h.json(
        "POST",
        "/public/v1/workspaces/ws_a/webhooks",
        &t,
        json!({"name": "2nd", "url": PUBLIC_URL}),
    )
    .await
    .assert_error(403, "plan_limit");
    h.stop().await;
}

#[tokio::test]
async fn a_notice_reaches_the_operator_endpoint_signed_with_its_own_secret() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let rx = Receiver::succeeding().await;
    let created = h.json("POST", OPS, &t, json!({"name": "ops", "url": rx.url})).await;
    assert_eq!(created.status, 201, "{}", created.text);
    let op_secret = Secret::parse(created.json["secret"].as_str().unwrap()).unwrap();
    let sub = h.subscribe(&t, PUBLIC_URL).await;
    let sub_id = sub["id"].as_str().unwrap();
    let r = h
        .send(
            "POST",
            &format!("/public/v1/workspaces/ws_a/webhooks/{sub_id}/rotate-secret"),
            Some(&t),
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let new_sub_secret = r.json["secret"].as_str().unwrap().to_owned();
    assert!(
        rx.wait_for_count(1, Duration::from_secs(20)).await,
        "the endpoint.secret_rotated notice arrives"
    );
    let verifier = Verifier::with_secrets([op_secret]).unwrap();
    let requests = rx.requests();
    for req in &requests {
        verifier
            .verify(&req.headers, &req.body, UnixTime::from_secs(req.timestamp()))
            .expect("signed with the operator endpoint's own secret");
        let body = String::from_utf8_lossy(&req.body);
        assert!(!body.contains("whsec_") && !body.contains(&new_sub_secret), "{body}");
    }
    let notice = requests[0].json();
    assert_eq!(notice["type"], "endpoint.secret_rotated", "{notice}");
    assert!(notice.to_string().contains(sub_id), "{notice}");
    h.stop().await;
}

#[tokio::test]
async fn endpoint_ids_follow_the_documented_rule_and_creation_and_the_list_link_to_their_operations() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let one = "/public/v1/workspaces/{workspaceId}/operator-webhooks/{endpointId}";
    let targets = [
        ("delete", one.to_owned(), "deleteOperatorWebhook"),
        ("put", format!("{one}/enabled"), "setOperatorWebhookEnabled"),
        ("post", format!("{one}/rotate-secret"), "rotateOperatorWebhookSecret"),
        ("post", format!("{one}/test"), "sendOperatorWebhookTest"),
        ("get", format!("{one}/deliveries"), "listOperatorWebhookDeliveries"),
    ];
    let h = Harness::start().await;
    let t = h.writer().await;
    for (method, template, op_id) in &targets {
        let op = &doc["paths"][template][method];
        assert_eq!(op["operationId"], *op_id);
        let param = op["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "endpointId")
            .unwrap();
        assert_eq!(param["schema"]["maxLength"], 200, "{op_id}");
        assert_eq!(param["schema"]["minLength"], 1, "{op_id}");
        assert!(op["responses"]["400"].is_object(), "{op_id}");
        for (id, why) in [
            ("wh_%0A", "control characters"),
            (&"a".repeat(201)[..], "at most 200 characters"),
        ] {
            let url = template.replace("{workspaceId}", "ws_a").replace("{endpointId}", id);
            let m = h.send(&method.to_uppercase(), &url, Some(&t), None).await.messages();
            assert!(
                m.iter().any(|m| m.contains("`endpointId`") && m.contains(why)),
                "{op_id}: {m:?}"
            );
        }
        let url = template
            .replace("{workspaceId}", "ws_a")
            .replace("{endpointId}", "wh_unknown");
        h.send(&method.to_uppercase(), &url, Some(&t), None)
            .await
            .assert_error(404, "not_found");
    }
    h.stop().await;
    let collection = &doc["paths"]["/public/v1/workspaces/{workspaceId}/operator-webhooks"];
    for (op, status, id_at) in [
        ("post", "201", "$response.body#/id"),
        ("get", "200", "$response.body#/data/0/id"),
    ] {
        let links = collection[op]["responses"][status]["links"].as_object().unwrap();
        let mut linked: Vec<&str> = links.values().map(|l| l["operationId"].as_str().unwrap()).collect();
        linked.sort();
        assert_eq!(
            linked,
            [
                "deleteOperatorWebhook",
                "listOperatorWebhookDeliveries",
                "rotateOperatorWebhookSecret",
                "sendOperatorWebhookTest",
                "setOperatorWebhookEnabled"
            ],
            "{op}"
        );
        for link in links.values() {
            assert_eq!(link["parameters"]["endpointId"], id_at);
            assert_eq!(link["parameters"]["workspaceId"], "$request.path.workspaceId");
        }
    }
}

/// The deliveries of `id` once the newest of `n` is finished (a state is recorded just
/// after the receiver answers), at most 20 s.
async fn finished_deliveries(h: &Harness, token: &str, id: &str, n: usize) -> serde_json::Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let r = h
            .send("GET", &format!("{OPS}/{id}/deliveries"), Some(token), None)
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        let data = r.json["data"].as_array().unwrap();
        if data.len() == n && data.iter().all(|d| d["state"] == "delivered") {
            return r.json;
        }
        assert!(std::time::Instant::now() < deadline, "not delivered: {}", r.text);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn an_endpoints_deliveries_list_its_notices_and_test_notices_which_resend() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let reader = h.token(&[postwire_server::Scope::WebhooksRead], &["ws_a"]).await;
    let rx = Receiver::succeeding().await;
    let created = h.json("POST", OPS, &t, json!({"name": "ops", "url": rx.url})).await;
    assert_eq!(created.status, 201, "{}", created.text);
    let op_id = created.json["id"].as_str().unwrap().to_owned();
    let op_secret = Secret::parse(created.json["secret"].as_str().unwrap()).unwrap();
    let empty = h
        .send("GET", &format!("{OPS}/{op_id}/deliveries"), Some(&reader), None)
        .await;
    assert_eq!(empty.status, 200, "{}", empty.text);
    assert_eq!(empty.json, json!({"data": [], "nextCursor": null}));

    // A real notice: rotating a subscription's secret.
    let sub = h.subscribe(&t, PUBLIC_URL).await;
    let sub_id = sub["id"].as_str().unwrap().to_owned();
    let r = h
        .send(
            "POST",
            &format!("/public/v1/workspaces/ws_a/webhooks/{sub_id}/rotate-secret"),
            Some(&t),
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        rx.wait_for_count(1, Duration::from_secs(20)).await,
        "the notice arrives"
    );
    let notice_id = rx.requests()[0].id();
    let listed = finished_deliveries(&h, &reader, &op_id, 1).await;
    let d = &listed["data"][0];
    assert_eq!(d["eventType"], "endpoint.secret_rotated", "{listed}");
    assert_eq!(d["eventId"], notice_id.as_str());
    assert_eq!(d["subscriptionId"], op_id.as_str());
    assert_eq!(d["attempts"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(d["attempts"][0]["success"], true);
    assert_eq!(d["attempts"][0]["responseStatus"], 200);
    assert_eq!(d["payloadErased"], false);
    assert!(d.get("payload").is_none(), "the list leaves the body out: {listed}");
    // The subscription's own log has nothing of it.
    let sub_log = h
        .send(
            "GET",
            &format!("/public/v1/workspaces/ws_a/webhooks/{sub_id}/deliveries"),
            Some(&reader),
            None,
        )
        .await;
    assert!(!sub_log.text.contains(&notice_id), "{}", sub_log.text);

    // A test notice: a reader may not send one; a writer reaches the real receiver, signed
    // with the endpoint's own secret.
    h.send("POST", &format!("{OPS}/{op_id}/test"), Some(&reader), None)
        .await
        .assert_error(403, "insufficient_scope");
    let m = h
        .json("POST", &format!("{OPS}/{op_id}/test"), &t, json!({"message": 3}))
        .await
        .messages();
    assert!(m.iter().any(|m| m.contains("`message`")), "{m:?}");
    let queued = h
        .json(
            "POST",
            &format!("{OPS}/{op_id}/test"),
            &t,
            json!({"message": "ping the on-call"}),
        )
        .await;
    assert_eq!(queued.status, 202, "{}", queued.text);
    assert_eq!(queued.json["type"], "webhook.test");
    let test_id = queued.json["eventId"].as_str().unwrap().to_owned();
    assert!(
        rx.wait_for_count(2, Duration::from_secs(20)).await,
        "the test notice arrives"
    );
    let req = &rx.requests()[1];
    assert_eq!(req.id(), test_id);
    let verifier = Verifier::with_secrets([op_secret.clone()]).unwrap();
    verifier
        .verify(&req.headers, &req.body, UnixTime::from_secs(req.timestamp()))
        .expect("signed with the operator endpoint's own secret");
    let body = req.json();
    assert_eq!(body["type"], "webhook.test", "{body}");
    assert_eq!(body["data"]["message"], "ping the on-call", "{body}");

    // Both listed, newest first, paged by `limit` and `cursor`.
    let listed = finished_deliveries(&h, &reader, &op_id, 2).await;
    assert_eq!(listed["data"][0]["eventType"], "webhook.test", "{listed}");
    assert_eq!(listed["data"][0]["eventId"], test_id.as_str());
    assert_eq!(listed["data"][1]["eventType"], "endpoint.secret_rotated");
    let first = h
        .send("GET", &format!("{OPS}/{op_id}/deliveries?limit=1"), Some(&reader), None)
        .await;
    assert_eq!(first.json["data"].as_array().unwrap().len(), 1, "{}", first.text);
    let cursor = first.json["nextCursor"].as_str().expect("a next page").to_owned();
    let second = h
        .send(
            "GET",
            &format!("{OPS}/{op_id}/deliveries?limit=1&cursor={cursor}"),
            Some(&reader),
            None,
        )
        .await;
    assert_eq!(second.json["data"][0]["eventId"], notice_id.as_str(), "{}", second.text);
    assert!(second.json["nextCursor"].is_null(), "{}", second.text);
    for bad in ["limit=0", "limit=101", "cursor=x", "page=2"] {
        let r = h
            .send("GET", &format!("{OPS}/{op_id}/deliveries?{bad}"), Some(&reader), None)
            .await;
        r.assert_error(400, "invalid_request");
    }

    // A finished notice resends: the same webhook-id, signed afresh.
    let notice_delivery = listed["data"][1]["id"].as_str().unwrap().to_owned();
    let resent = h
        .send(
            "POST",
            &format!("{OPS}/{op_id}/deliveries/{notice_delivery}/resend"),
            Some(&t),
            None,
        )
        .await;
    assert_eq!(resent.status, 202, "{}", resent.text);
    assert_eq!(resent.json["resentFrom"], notice_delivery.as_str());
    assert!(
        rx.wait_for_count(3, Duration::from_secs(20)).await,
        "the resent notice arrives"
    );
    let again = &rx.requests()[2];
    assert_eq!(again.id(), notice_id);
    verifier
        .verify(&again.headers, &again.body, UnixTime::from_secs(again.timestamp()))
        .expect("the resend verifies too");
    let listed = finished_deliveries(&h, &reader, &op_id, 3).await;
    assert_eq!(listed["data"][0]["eventType"], "endpoint.secret_rotated", "{listed}");
    for r in rx.requests() {
        let body = String::from_utf8_lossy(&r.body);
        assert!(!body.contains("whsec_"), "{body}");
    }

    // A subscription's delivery is not one of the endpoint's, and the subscriber route
    // does not list the endpoint.
    h.send(
        "POST",
        &format!("{OPS}/{op_id}/deliveries/dlv_999999/resend"),
        Some(&t),
        None,
    )
    .await
    .assert_error(404, "not_found");
    h.send(
        "GET",
        &format!("/public/v1/workspaces/ws_a/webhooks/{op_id}/deliveries"),
        Some(&reader),
        None,
    )
    .await
    .assert_error(404, "not_found");
    h.stop().await;
}
