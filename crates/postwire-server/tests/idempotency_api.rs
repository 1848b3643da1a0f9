//! `Idempotency-Key` on the ingest and on subscription creation, over real HTTP against
//! a real server and SQLite file: a retry with the key does nothing twice.

mod common;

use common::*;
use serde_json::{Value, json};

/// Sends `body` to `path` with `key`, as `token`.
async fn keyed(h: &Harness, method: &str, path: &str, token: &str, key: &str, body: &str) -> Reply {
    let resp = h
        .http
        .request(
            reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
            format!("{}{path}", h.base),
        )
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("idempotency-key", key)
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap();
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    Reply {
        status,
        headers,
        text,
        json,
    }
}

fn post_changes(post_id: &str, n: usize) -> String {
    let changes: Vec<Value> = (0..n)
        .map(|_| {
            json!({"kind": "post", "workspaceId": "ws_a", "change": "scheduled", "post": {
                "id": post_id, "externalId": format!("ext-{post_id}"), "group": "g", "state": "QUEUE",
                "publishDate": "2026-12-01T09:00:00Z",
                "integration": {"id": "acc_a1", "name": "A", "providerIdentifier": "x"}}})
        })
        .collect();
    json!({ "changes": changes }).to_string()
}

async fn events_of(h: &Harness, token: &str, post_id: &str) -> usize {
    let r = h
        .send(
            "GET",
            &format!("/public/v1/workspaces/ws_a/posts/lookup?postId={post_id}"),
            Some(token),
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.json["data"].as_array().unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_duplicate_ingests_with_one_key_publish_one_event_set() {
    let h = Harness::start().await;
    let reader = h.writer().await;
    let body = post_changes("p_dup", 3);
    let calls = (0..16).map(|_| keyed(&h, "POST", "/internal/v1/events", INGEST, "batch-7", &body));
    let replies = futures_util::future::join_all(calls).await;
    let mut fresh = Vec::new();
    let mut replayed = Vec::new();
    for r in &replies {
        match r.status {
            200 if r.header("idempotent-replayed") == Some("true") => replayed.push(r.json.clone()),
            200 => fresh.push(r.json.clone()),
            409 => r.assert_error(409, "idempotency_in_progress"),
            other => panic!("{other}: {}", r.text),
        }
    }
    assert_eq!(fresh.len(), 1, "exactly one call did the work");
    assert!(
        replayed.iter().all(|j| *j == fresh[0]),
        "replays answer what the first did"
    );
    // A retry now, after every call ended, replays too.
    let again = keyed(&h, "POST", "/internal/v1/events", INGEST, "batch-7", &body).await;
    assert_eq!((again.status, again.header("idempotent-replayed")), (200, Some("true")));
    assert_eq!(again.json, fresh[0]);
    assert_eq!(events_of(&h, &reader, "p_dup").await, 3, "one event set, not sixteen");
    // Lookups by the client's reference, stored with each event.
    let by_ext = h
        .send(
            "GET",
            "/public/v1/workspaces/ws_a/posts/lookup?externalId=ext-p_dup",
            Some(&reader),
            None,
        )
        .await;
    assert_eq!(by_ext.json["postIds"], json!(["p_dup"]), "{}", by_ext.text);
    assert_eq!(by_ext.json["data"].as_array().unwrap().len(), 3);
    h.stop().await;
}

#[tokio::test]
async fn a_key_reused_with_another_body_is_refused_and_a_failed_request_frees_its_key() {
    let h = Harness::start().await;
    let reader = h.writer().await;
    let first = keyed(&h, "POST", "/internal/v1/events", INGEST, "k1", &post_changes("p_a", 1)).await;
    assert_eq!(first.status, 200, "{}", first.text);
    keyed(&h, "POST", "/internal/v1/events", INGEST, "k1", &post_changes("p_b", 1))
        .await
        .assert_error(409, "idempotency_key_reused");
    assert_eq!(events_of(&h, &reader, "p_b").await, 0);
    // A request refused by validation stores nothing: its key serves the corrected one.
    keyed(&h, "POST", "/internal/v1/events", INGEST, "k2", r#"{"changes": []}"#)
        .await
        .assert_error(400, "invalid_request");
    let fixed = keyed(&h, "POST", "/internal/v1/events", INGEST, "k2", &post_changes("p_c", 1)).await;
    assert_eq!((fixed.status, fixed.header("idempotent-replayed")), (200, None));
    // Malformed keys.
    for bad in ["", "has space", &"k".repeat(256)] {
        keyed(&h, "POST", "/internal/v1/events", INGEST, bad, &post_changes("p_d", 1))
            .await
            .assert_error(400, "invalid_request");
    }
    assert_eq!(events_of(&h, &reader, "p_d").await, 0);
    h.stop().await;
}

#[tokio::test]
async fn creation_with_a_key_returns_the_same_subscription_and_secret_once_per_token() {
    let h = Harness::start().await;
    let writer = h.writer().await;
    let other = h.writer().await;
    let body = json!({"name": "prod", "url": PUBLIC_URL}).to_string();
    let path = "/public/v1/workspaces/ws_a/webhooks";
    let first = keyed(&h, "POST", path, &writer, "create-1", &body).await;
    assert_eq!(first.status, 201, "{}", first.text);
    let again = keyed(&h, "POST", path, &writer, "create-1", &body).await;
    assert_eq!((again.status, again.header("idempotent-replayed")), (201, Some("true")));
    assert_eq!(again.json, first.json, "same id, same secret");
    // Keys are per token: another token's same key is another request.
    let theirs = keyed(&h, "POST", path, &other, "create-1", &body).await;
    assert_eq!(theirs.status, 201);
    assert_ne!(theirs.json["id"], first.json["id"]);
    keyed(
        &h,
        "POST",
        path,
        &writer,
        "create-1",
        &json!({"name": "x", "url": PUBLIC_URL}).to_string(),
    )
    .await
    .assert_error(409, "idempotency_key_reused");
    let list = h.send("GET", path, Some(&writer), None).await;
    assert_eq!(list.json["data"].as_array().unwrap().len(), 2, "{}", list.text);
    // Deleting the subscription frees its key (and the stored copy of its secret): the
    // same request then creates afresh rather than replaying one that is gone.
    let id = first.json["id"].as_str().unwrap();
    let deleted = h.send("DELETE", &format!("{path}/{id}"), Some(&writer), None).await;
    assert_eq!(deleted.status, 204, "{}", deleted.text);
    let after = keyed(&h, "POST", path, &writer, "create-1", &body).await;
    assert_eq!((after.status, after.header("idempotent-replayed")), (201, None));
    assert_ne!(after.json["id"], first.json["id"]);
    assert_ne!(after.json["secret"], first.json["secret"]);
    h.stop().await;
}
