//! The API after real deliveries to loopback receivers: pause and resume, the
//! deliveries listing, test events, secret rotation, the post look-up, and ingest.

mod common;

use common::{Harness, INGEST, eventually, receiver};
use postwire_core::{EventType, Secret, Timestamp};
use serde_json::json;

#[tokio::test]
async fn pause_holds_events_and_resume_delivers_them() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let rx = receiver().await;
    let sub = h.subscribe(&t, &rx.url()).await;
    rx.set_secrets(vec![Secret::parse(sub["secret"].as_str().unwrap()).unwrap()]);
    let id = sub["id"].as_str().unwrap();
    let base = format!("/public/v1/workspaces/ws_a/webhooks/{id}");

    let paused = h
        .json("PUT", &format!("{base}/enabled"), &t, json!({"enabled": false}))
        .await;
    assert_eq!(paused.status, 200, "{}", paused.text);
    assert_eq!(paused.json["disabled"], true);
    assert_eq!(paused.json["disabledReason"], "paused by request");
    let again = h
        .json("PUT", &format!("{base}/enabled"), &t, json!({"enabled": false}))
        .await;
    assert_eq!(again.json["disabled"], true, "pausing twice is fine");

    let e1 = h.post_event("ws_a", "post_1", "ext_1", "scheduled").await;
    let e2 = h.post_event("ws_a", "post_1", "ext_1", "publishing").await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(rx.stats().events.is_empty(), "nothing is sent while paused");
    let list = h.send("GET", &format!("{base}/deliveries"), Some(&t), None).await;
    let states: Vec<&str> = list.json["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["held", "held"]);

    let resumed = h
        .json("PUT", &format!("{base}/enabled"), &t, json!({"enabled": true}))
        .await;
    assert_eq!(resumed.status, 200);
    assert_eq!(resumed.json["disabled"], false);
    assert!(resumed.json["disabledReason"].is_null());
    eventually("both held events delivered", || rx.stats().handled == 2).await;
    let stats = rx.stats();
    assert!(stats.events[&e1].verified && stats.events[&e2].verified);
    assert!(
        stats.events[&e1].handled_order < stats.events[&e2].handled_order,
        "in order"
    );
    h.stop().await;
    rx.stop().await;
}

#[tokio::test]
async fn deliveries_are_listed_newest_first_with_cursor_paging() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let rx = receiver().await;
    let sub = h.subscribe(&t, &rx.url()).await;
    rx.set_secrets(vec![Secret::parse(sub["secret"].as_str().unwrap()).unwrap()]);
    let id = sub["id"].as_str().unwrap();
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(
            h.post_event("ws_a", &format!("post_{i}"), &format!("ext_{i}"), "scheduled")
                .await,
        );
    }
    eventually("five deliveries", || rx.stats().handled == 5).await;
    let path = format!("/public/v1/workspaces/ws_a/webhooks/{id}/deliveries");
    // The outcome is on disk a moment after the receiver answered.
    let mut seen = Vec::new();
    for _ in 0..200 {
        let all = h.send("GET", &format!("{path}?limit=100"), Some(&t), None).await;
        if all.json["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["state"] == "delivered")
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let q = match &cursor {
            Some(c) => format!("{path}?limit=2&cursor={c}"),
            None => format!("{path}?limit=2"),
        };
        let r = h.send("GET", &q, Some(&t), None).await;
        assert_eq!(r.status, 200, "{}", r.text);
        pages += 1;
        for d in r.json["data"].as_array().unwrap() {
            assert_eq!(d["state"], "delivered");
            assert_eq!(d["subscriptionId"], id);
            assert_eq!(d["eventType"], "post.scheduled");
            assert!(d["finishedAt"].is_string() && d["nextAttemptAt"].is_null());
            let a = &d["attempts"][0];
            assert_eq!(
                (
                    a["number"].as_u64(),
                    a["responseStatus"].as_u64(),
                    a["success"].as_bool()
                ),
                (Some(1), Some(200), Some(true))
            );
            assert!(a["error"].is_null());
            seen.push(d["eventId"].as_str().unwrap().to_owned());
        }
        match r.json["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    ids.reverse();
    assert_eq!(seen, ids, "newest first, each once");
    h.stop().await;
    rx.stop().await;
}

#[tokio::test]
async fn failed_attempts_show_in_the_listing() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let rx = receiver().await;
    let sub = h.subscribe(&t, &rx.url()).await;
    rx.set_secrets(vec![Secret::parse(sub["secret"].as_str().unwrap()).unwrap()]);
    rx.set_failure_plan(Some(postwire_testkit::receiver::FailurePlan {
        event_type: EventType::PostScheduled,
        failed_attempts: 1,
    }));
    h.post_event("ws_a", "post_1", "ext_1", "scheduled").await;
    eventually("one failed attempt", || {
        rx.stats().events.values().any(|e| e.failed_on_purpose == 1)
    })
    .await;
    let path = format!(
        "/public/v1/workspaces/ws_a/webhooks/{}/deliveries",
        sub["id"].as_str().unwrap()
    );
    let mut d = serde_json::Value::Null;
    for _ in 0..200 {
        d = h.send("GET", &path, Some(&t), None).await.json["data"][0].clone();
        if d["attempts"].as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(d["state"], "pending");
    assert!(d["nextAttemptAt"].is_string(), "{d}");
    let a = &d["attempts"][0];
    assert_eq!(a["responseStatus"], 503);
    assert_eq!(a["success"], false);
    assert!(a["responseBody"].as_str().unwrap().contains("on purpose"));
    h.stop().await;
    rx.stop().await;
}

#[tokio::test]
async fn a_test_event_is_delivered_to_that_subscription_only() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let (rx1, rx2) = (receiver().await, receiver().await);
    let s1 = h.subscribe(&t, &rx1.url()).await;
    let r = h
        .json(
            "POST",
            "/public/v1/workspaces/ws_a/webhooks",
            &t,
            json!({"name": "only published", "url": rx2.url(), "events": ["post.published"]}),
        )
        .await;
    let s2 = r.json;
    rx1.set_secrets(vec![Secret::parse(s1["secret"].as_str().unwrap()).unwrap()]);
    rx2.set_secrets(vec![Secret::parse(s2["secret"].as_str().unwrap()).unwrap()]);

    let r = h
        .json(
            "POST",
            &format!(
                "/public/v1/workspaces/ws_a/webhooks/{}/test",
                s2["id"].as_str().unwrap()
            ),
            &t,
            json!({"message": "ping"}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.json["type"], "webhook.test");
    let event_id = r.json["eventId"].as_str().unwrap().to_owned();
    eventually("the test event", || rx2.stats().handled == 1).await;
    let got = rx2.stats().events[&event_id].event.clone().unwrap();
    assert_eq!(got.event_type(), EventType::WebhookTest);
    assert_eq!(got.workspace_id(), "ws_a");
    assert_eq!(serde_json::to_value(got.data()).unwrap(), json!({"message": "ping"}));
    // Without a body: the default message. Sent to s1 only.
    let r = h
        .send(
            "POST",
            &format!(
                "/public/v1/workspaces/ws_a/webhooks/{}/test",
                s1["id"].as_str().unwrap()
            ),
            Some(&t),
            None,
        )
        .await;
    assert_eq!(r.status, 202);
    eventually("the second test event", || rx1.stats().handled == 1).await;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(rx2.stats().handled, 1, "a test event goes to its subscription only");
    assert!(
        h.json(
            "POST",
            &format!(
                "/public/v1/workspaces/ws_a/webhooks/{}/test",
                s1["id"].as_str().unwrap()
            ),
            &t,
            json!({"msg": 1})
        )
        .await
        .messages()[0]
            .contains("unknown field")
    );
    h.stop().await;
    rx1.stop().await;
    rx2.stop().await;
}

#[tokio::test]
async fn rotation_returns_the_new_secret_once_and_signs_with_both_for_a_day() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let rx = receiver().await;
    let sub = h.subscribe(&t, &rx.url()).await;
    let old = Secret::parse(sub["secret"].as_str().unwrap()).unwrap();
    let base = format!("/public/v1/workspaces/ws_a/webhooks/{}", sub["id"].as_str().unwrap());
    let before = postwire_core::Clock::now(&postwire_core::SystemClock);
    let r = h.send("POST", &format!("{base}/rotate-secret"), Some(&t), None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let new = Secret::parse(r.json["secret"].as_str().unwrap()).unwrap();
    assert_ne!(new, old);
    let until: Timestamp = r.json["previousSecretExpiresAt"].as_str().unwrap().parse().unwrap();
    let window = until.unix_millis() - before.unix_millis();
    assert!((86_390_000..=86_410_000).contains(&window), "{window}");
    // The new secret is not shown again.
    let one = h.send("GET", &base, Some(&t), None).await;
    assert!(!one.text.contains(&r.json["secret"].as_str().unwrap()[6..]));

    // Each delivery verifies with the old secret alone and with the new one alone.
    for secrets in [vec![old.clone()], vec![new.clone()]] {
        rx.set_secrets(secrets);
        let before = rx.stats().handled;
        let r = h.send("POST", &format!("{base}/test"), Some(&t), None).await;
        assert_eq!(r.status, 202);
        eventually("a verified test event", || rx.stats().handled == before + 1).await;
    }
    assert_eq!(rx.stats().rejected, 0);
    h.stop().await;
    rx.stop().await;
}

#[tokio::test]
async fn post_lookup_finds_events_by_post_id_or_external_id() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let a = h.post_event("ws_a", "post_1", "launch", "scheduled").await;
    let b = h.post_event("ws_a", "post_1", "launch", "publishing").await;
    let c = h.post_event("ws_a", "post_1", "launch", "published").await;
    h.post_event("ws_a", "post_2", "other", "failed").await;
    h.post_event("ws_b", "post_1", "launch", "scheduled").await;
    let lookup = "/public/v1/workspaces/ws_a/posts/lookup";
    let r = h.send("GET", &format!("{lookup}?postId=post_1"), Some(&t), None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let ids: Vec<&str> = r.json["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [c.as_str(), b.as_str(), a.as_str()],
        "newest first, this workspace only"
    );
    assert_eq!(r.json["postIds"], json!(["post_1"]));
    assert_eq!(r.json["hasMore"], false);
    let published = &r.json["data"][0];
    assert_eq!(published["type"], "post.published");
    assert_eq!(published["data"]["post"]["releaseURL"], "https://x.com/p/1");
    assert!(!r.text.contains("SECRET-CONTENT"), "post content never reaches events");

    let by_ext = h
        .send("GET", &format!("{lookup}?externalId=launch"), Some(&t), None)
        .await;
    assert_eq!(by_ext.json["data"], r.json["data"]);
    let limited = h
        .send("GET", &format!("{lookup}?postId=post_1&limit=2"), Some(&t), None)
        .await;
    assert_eq!(limited.json["data"].as_array().unwrap().len(), 2);
    assert_eq!(limited.json["hasMore"], true);
    let since = r.json["data"][0]["createdAt"].as_str().unwrap();
    let recent = h
        .send("GET", &format!("{lookup}?postId=post_1&since={since}"), Some(&t), None)
        .await;
    assert!(
        recent.json["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["createdAt"].as_str().unwrap() >= since)
    );
    assert!(!recent.json["data"].as_array().unwrap().is_empty());
    let unknown = h.send("GET", &format!("{lookup}?postId=nope"), Some(&t), None).await;
    assert_eq!(unknown.json["data"], json!([]));
    h.stop().await;
}

#[tokio::test]
async fn ingest_needs_its_own_token_and_validates_changes() {
    let h = Harness::start().await;
    let api = h.writer().await;
    let change = json!({"changes": [{"kind": "account", "workspaceId": "ws_a", "change": "reconnected",
        "integration": {"id": "acc_a1", "name": "A", "providerIdentifier": "x"}}]});
    let body = change.to_string();
    h.send("POST", "/internal/v1/events", None, Some(&body))
        .await
        .assert_error(401, "unauthorized");
    h.send("POST", "/internal/v1/events", Some(&api), Some(&body))
        .await
        .assert_error(401, "unauthorized");
    h.send(
        "POST",
        "/internal/v1/events",
        Some("not-the-ingest-token-at-all"),
        Some(&body),
    )
    .await
    .assert_error(401, "unauthorized");
    let ok = h.send("POST", "/internal/v1/events", Some(INGEST), Some(&body)).await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    assert!(ok.json["results"][0]["eventId"].as_str().unwrap().starts_with("msg_"));
    // Drafts emit nothing.
    let draft = json!({"changes": [{"kind": "post", "workspaceId": "ws_a", "change": "draft_saved", "post": {
        "id": "p", "state": "DRAFT", "isDraft": true, "publishDate": "2026-12-01T09:00:00Z",
        "integration": {"id": "acc_a1", "name": "A", "providerIdentifier": "x"}}}]});
    let r = h.ingest("POST", "/internal/v1/events", draft).await;
    assert_eq!(r.json["results"][0], json!({"eventId": null, "skipped": "draft"}));
    // Bad changes are refused, all or none.
    let bad = json!({"changes": [
        {"kind": "post", "workspaceId": "ws_a", "change": "failed", "post": {"id": "p", "state": "ERROR", "publishDate": "2026-12-01T09:00:00Z",
            "integration": {"id": "acc_a1", "name": "A", "providerIdentifier": "x"}}},
        {"kind": "account", "workspaceId": "ws_a", "change": "disconnected", "integration": {"id": "acc_a1", "name": "A", "providerIdentifier": "x"}}]});
    let r = h.ingest("POST", "/internal/v1/events", bad).await;
    assert_eq!(r.messages().len(), 2, "{:?}", r.messages());
    let r = h.ingest("POST", "/internal/v1/events", json!({"changes": []})).await;
    assert!(r.messages()[0].contains("1 to 1000"));
    let r = h
        .ingest("POST", "/internal/v1/events", json!({"changes": [{"kind": "weather"}]}))
        .await;
    r.assert_error(400, "invalid_request");
    let r = h.ingest("POST", "/internal/v1/events", json!({"changes": [{"kind": "post", "workspaceId": "ws_a", "change": "failed", "post": {"id": "p", "state": "ERROR", "publishDate": "2026-12-01T09:00:00Z",
            "integration": {"id": "acc_a1", "name": "A", "providerIdentifier": "x"}}, "error": {"code": "unknown", "message": "?", "retryable": true}}]})).await;
    assert!(r.messages()[0].contains("never retryable"), "{:?}", r.messages());
    // A change for a workspace the server does not know is refused (a misspelled id
    // would otherwise be accepted with nothing to deliver), with the rest of its batch.
    let account = |ws: &str| {
        json!({"kind": "account", "workspaceId": ws, "change": "reconnected",
            "integration": {"id": "acc_a1", "name": "A", "providerIdentifier": "x"}})
    };
    let r = h
        .ingest(
            "POST",
            "/internal/v1/events",
            json!({"changes": [account("ws_a"), account("ws_typo")]}),
        )
        .await;
    r.assert_error(404, "not_found");
    assert!(
        r.json["message"]
            .as_str()
            .unwrap()
            .contains("unknown workspace `ws_typo`"),
        "{}",
        r.text
    );
    h.stop().await;
}
