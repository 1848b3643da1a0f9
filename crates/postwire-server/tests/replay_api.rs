//! Resend and recover over HTTP, against a real server and a verifying loopback
//! receiver: a resend arrives again with the same `webhook-id` (the receiver counts it
//! as a verified duplicate); recover validates its input and reports what it queued.
//! The recover semantics under a moving clock (failures for good after 22 h of
//! retries) are tested in the sender (`crates/postwire-sender/tests/resend.rs`).

mod common;

use common::{Harness, eventually, receiver};
use postwire_core::Secret;
use postwire_server::tokens::Scope;
use serde_json::json;

#[tokio::test]
async fn a_resent_delivery_arrives_again_with_the_same_webhook_id() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let rx = receiver().await;
    let sub = h.subscribe(&t, &rx.url()).await;
    rx.set_secrets(vec![Secret::parse(sub["secret"].as_str().unwrap()).unwrap()]);
    let id = sub["id"].as_str().unwrap();
    let base = format!("/public/v1/workspaces/ws_a/webhooks/{id}");
    let event = h.post_event("ws_a", "post_1", "ext_1", "scheduled").await;
    eventually("delivered", || rx.stats().handled == 1).await;
    let mut first = String::new();
    for _ in 0..200 {
        let list = h.send("GET", &format!("{base}/deliveries"), Some(&t), None).await;
        if list.json["data"][0]["state"] == "delivered" {
            first = list.json["data"][0]["id"].as_str().unwrap().to_owned();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(first.starts_with("dlv_"), "the delivery finished");

    let r = h
        .send("POST", &format!("{base}/deliveries/{first}/resend"), Some(&t), None)
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.json["resentFrom"], first.as_str());
    let new = r.json["deliveryId"].as_str().unwrap().to_owned();
    assert_ne!(new, first);
    eventually("the resend arrives", || {
        rx.stats().events.get(&event).is_some_and(|e| e.duplicates == 1)
    })
    .await;
    let list = h.send("GET", &format!("{base}/deliveries"), Some(&t), None).await;
    assert_eq!(list.json["data"][0]["id"], new.as_str(), "newest first");
    assert_eq!(list.json["data"][0]["eventId"], event.as_str());
    assert_eq!(list.json["data"][1]["id"], first.as_str());

    // Refusals, each with its code.
    let bad = h
        .send("POST", &format!("{base}/deliveries/42/resend"), Some(&t), None)
        .await;
    bad.assert_error(400, "invalid_request");
    let missing = h
        .send("POST", &format!("{base}/deliveries/dlv_999999/resend"), Some(&t), None)
        .await;
    missing.assert_error(404, "not_found");
    let reader = h.token(&[Scope::WebhooksRead], &["ws_a"]).await;
    let denied = h
        .send(
            "POST",
            &format!("{base}/deliveries/{first}/resend"),
            Some(&reader),
            None,
        )
        .await;
    denied.assert_error(403, "insufficient_scope");
    let other = h.token(&[Scope::WebhooksWrite], &["ws_b"]).await;
    let foreign = h
        .send(
            "POST",
            &format!("/public/v1/workspaces/ws_b/webhooks/{id}/deliveries/{first}/resend"),
            Some(&other),
            None,
        )
        .await;
    foreign.assert_error(404, "not_found");
    // A delivery still waiting for its retry: a state conflict (409), not a bad request.
    let down = h.subscribe(&t, "http://127.0.0.1:1/refused").await;
    let down_base = format!("/public/v1/workspaces/ws_a/webhooks/{}", down["id"].as_str().unwrap());
    h.post_event("ws_a", "post_2", "ext_2", "scheduled").await;
    let mut waiting = String::new();
    for _ in 0..200 {
        let list = h.send("GET", &format!("{down_base}/deliveries"), Some(&t), None).await;
        if list.json["data"][0]["attempts"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
        {
            assert_eq!(list.json["data"][0]["state"], "pending", "{}", list.text);
            waiting = list.json["data"][0]["id"].as_str().unwrap().to_owned();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(waiting.starts_with("dlv_"), "the delivery was attempted");
    let conflict = h
        .send(
            "POST",
            &format!("{down_base}/deliveries/{waiting}/resend"),
            Some(&t),
            None,
        )
        .await;
    conflict.assert_error(409, "delivery_unfinished");
    h.stop().await;
    rx.stop().await;
}

#[tokio::test]
async fn recover_checks_its_input_and_reports_what_it_queued() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let rx = receiver().await;
    let sub = h.subscribe(&t, &rx.url()).await;
    let id = sub["id"].as_str().unwrap();
    let path = format!("/public/v1/workspaces/ws_a/webhooks/{id}/recover");

    let ok = h
        .json("POST", &path, &t, json!({"since": "2020-01-01T00:00:00Z"}))
        .await;
    assert_eq!(ok.status, 202, "{}", ok.text);
    assert_eq!(ok.json["queued"], 0, "nothing failed");
    for body in [
        json!({}),
        json!({"since": 5}),
        json!({"since": "yesterday"}),
        json!({"since": "2020-01-01T00:00:00Z", "extra": 1}),
    ] {
        let r = h.json("POST", &path, &t, body.clone()).await;
        r.assert_error(400, "invalid_request");
    }
    let empty = h.send("POST", &path, Some(&t), None).await;
    empty.assert_error(400, "invalid_request");
    // A `since` in the future is schema-valid and queues nothing.
    let future = h
        .json("POST", &path, &t, json!({"since": "2999-01-01T00:00:00Z"}))
        .await;
    assert_eq!(future.status, 202, "{}", future.text);
    assert_eq!(future.json["queued"], 0);
    let missing = h
        .json(
            "POST",
            "/public/v1/workspaces/ws_a/webhooks/wh_nope/recover",
            &t,
            json!({"since": "2020-01-01T00:00:00Z"}),
        )
        .await;
    missing.assert_error(404, "not_found");
    h.stop().await;
    rx.stop().await;
}
