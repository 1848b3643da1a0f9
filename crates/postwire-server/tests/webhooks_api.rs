//! The public API over real HTTP: creation and each validation rule, reading,
//! updating and deleting, tokens, scopes, workspace selection, the hourly limit, and
//! error bodies for every status.

mod common;

use common::{Harness, Options, PUBLIC_URL};
use postwire_server::Scope;
use serde_json::json;

#[tokio::test]
async fn creation_returns_the_full_subscription_and_the_secret_only_once() {
    let h = Harness::start_with(Options {
        insecure_local: false,
        ..Options::default()
    })
    .await;
    let t = h.writer().await;
    let r = h
        .json("POST", "/public/v1/workspaces/ws_a/webhooks", &t, json!({"name": "prod", "url": PUBLIC_URL, "events": ["post.published", "post.failed", "post.published"], "integrationIds": ["acc_a1"]}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let b = &r.json;
    let mut keys: Vec<&str> = b.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "consecutiveFailures",
            "createdAt",
            "createdByKind",
            "disabled",
            "disabledReason",
            "events",
            "id",
            "integrations",
            "lastSuccessAt",
            "name",
            "secret",
            "signing",
            "url"
        ]
    );
    assert_eq!(b["signing"], "symmetric", "the spec's signatures unless asked");
    assert_eq!(b["name"], "prod");
    assert_eq!(b["url"], PUBLIC_URL);
    assert_eq!(b["events"], json!(["post.published", "post.failed"]));
    assert_eq!(
        b["integrations"],
        json!([{"id": "acc_a1", "name": "Account acc_a1", "providerIdentifier": "x"}])
    );
    assert_eq!(b["disabled"], false);
    assert!(b["disabledReason"].is_null());
    assert_eq!(b["createdByKind"], "api_token");
    assert_eq!(b["consecutiveFailures"], 0);
    assert!(b["lastSuccessAt"].is_null());
    let created_at = b["createdAt"].as_str().unwrap();
    assert!(
        created_at.len() == 24 && created_at.ends_with('Z') && created_at.as_bytes()[19] == b'.',
        "{created_at}"
    );
    let secret = b["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_") && secret.len() > 30);
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let id = b["id"].as_str().unwrap().to_owned();

    // No other response carries the secret.
    let key = &secret["whsec_".len()..];
    let base = format!("/public/v1/workspaces/ws_a/webhooks/{id}");
    for reply in [
        h.send("GET", "/public/v1/workspaces/ws_a/webhooks", Some(&t), None)
            .await,
        h.send("GET", &base, Some(&t), None).await,
        h.json("PATCH", &base, &t, json!({"name": "renamed"})).await,
        h.json("PUT", &format!("{base}/enabled"), &t, json!({"enabled": false}))
            .await,
        h.json("PUT", &format!("{base}/enabled"), &t, json!({"enabled": true}))
            .await,
        h.send("GET", &format!("{base}/deliveries"), Some(&t), None).await,
    ] {
        assert!(reply.status < 300, "{}", reply.text);
        assert!(
            !reply.text.contains(key) && !reply.text.contains("\"secret\""),
            "{}",
            reply.text
        );
    }
    h.stop().await;
}

#[tokio::test]
async fn each_validation_rule_is_a_400_with_the_spec_body() {
    let h = Harness::start_with(Options {
        insecure_local: false,
        ..Options::default()
    })
    .await;
    let t = h.writer().await;
    let path = "/public/v1/workspaces/ws_a/webhooks";
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "missing name",
            json!({"url": PUBLIC_URL}).to_string(),
            "`name` is required",
        ),
        (
            "empty name",
            json!({"name": "", "url": PUBLIC_URL}).to_string(),
            "`name` must not be empty",
        ),
        (
            "blank name",
            json!({"name": "   ", "url": PUBLIC_URL}).to_string(),
            "`name` must not be empty",
        ),
        ("missing url", json!({"name": "n"}).to_string(), "`url` is required"),
        (
            "malformed url",
            json!({"name": "n", "url": "not-a-url"}).to_string(),
            "not a valid absolute URL",
        ),
        (
            "http url",
            json!({"name": "n", "url": "http://93.184.216.34/h"}).to_string(),
            "must use https (for local development only, a server started with `--dangerously-allow-insecure-local-urls`",
        ),
        (
            "private url",
            json!({"name": "n", "url": "https://10.1.2.3/h"}).to_string(),
            "private",
        ),
        (
            "loopback url",
            json!({"name": "n", "url": "https://127.0.0.1/h"}).to_string(),
            "loopback address; webhook URLs must point to public addresses (for local development only, a server started with `--dangerously-allow-insecure-local-urls`",
        ),
        (
            "metadata url",
            json!({"name": "n", "url": "https://169.254.169.254/latest"}).to_string(),
            "cloud metadata",
        ),
        (
            "credentials in url",
            json!({"name": "n", "url": "https://u:p@93.184.216.34/"}).to_string(),
            "user name or password",
        ),
        (
            "unknown event type",
            json!({"name": "n", "url": PUBLIC_URL, "events": ["post.exploded"]}).to_string(),
            "unknown event type `post.exploded`",
        ),
        (
            "account of another workspace",
            json!({"name": "n", "url": PUBLIC_URL, "integrationIds": ["acc_b1"]}).to_string(),
            "`acc_b1` is not a connected account",
        ),
        (
            "unknown account",
            json!({"name": "n", "url": PUBLIC_URL, "integrationIds": ["nope"]}).to_string(),
            "`nope` is not a connected account",
        ),
        (
            "name of wrong type",
            json!({"name": 5, "url": PUBLIC_URL}).to_string(),
            "`name` must be a string, not a number",
        ),
        (
            "events of wrong type",
            json!({"name": "n", "url": PUBLIC_URL, "events": "post.published"}).to_string(),
            "`events` must be an array",
        ),
        (
            "event of wrong type",
            json!({"name": "n", "url": PUBLIC_URL, "events": [1]}).to_string(),
            "`events[0]` must be a string",
        ),
        (
            "integrationIds of wrong type",
            json!({"name": "n", "url": PUBLIC_URL, "integrationIds": {}}).to_string(),
            "`integrationIds` must be an array",
        ),
        (
            "body not an object",
            "[1, 2]".to_owned(),
            "must be a JSON object, not an array",
        ),
        ("empty body", String::new(), "the body must be a JSON object"),
        ("malformed JSON", "{\"name\": ".to_owned(), "not valid JSON"),
        (
            "unknown field",
            json!({"name": "n", "url": PUBLIC_URL, "event": ["post.published"]}).to_string(),
            "unknown field `event`",
        ),
        (
            "body over the limit",
            json!({"name": "x".repeat(5000), "url": PUBLIC_URL}).to_string(),
            "larger than the limit of 4096 bytes",
        ),
    ];
    for (what, body, expected) in cases {
        let r = h.send("POST", path, Some(&t), Some(&body)).await;
        let m = r.messages();
        assert_eq!(m.len(), 1, "{what}: {m:?}");
        assert!(r.json["message"].is_string(), "{what}: one problem is a string");
        assert!(m[0].contains(expected), "{what}: {m:?}");
        if what.ends_with(" url") && !matches!(what, "http url" | "loopback url") {
            // Only what the local-development switch would allow points at it.
            assert!(!m[0].contains("dangerously"), "{what}: {m:?}");
        }
    }
    // Several problems: `message` is an array, one entry each.
    let r = h
        .json("POST", path, &t, json!({"name": "", "url": "http://93.184.216.34/"}))
        .await;
    let m = r.messages();
    assert!(r.json["message"].is_array());
    assert_eq!(m.len(), 2, "{m:?}");
    let r = h.json("POST", path, &t, json!({"url": 1, "events": ["nope"]})).await;
    assert_eq!(r.messages().len(), 3, "{:?}", r.messages());
    // Nothing was created.
    let list = h.send("GET", path, Some(&t), None).await;
    assert_eq!(list.json["data"], json!([]));
    h.stop().await;
}

#[tokio::test]
async fn list_read_update_delete() {
    let h = Harness::start_with(Options {
        insecure_local: false,
        ..Options::default()
    })
    .await;
    let t = h.writer().await;
    let a = h.subscribe(&t, PUBLIC_URL).await;
    let b = h.subscribe(&t, "https://93.184.216.35/other").await;
    let (a_id, b_id) = (a["id"].as_str().unwrap(), b["id"].as_str().unwrap());
    let list = h
        .send("GET", "/public/v1/workspaces/ws_a/webhooks", Some(&t), None)
        .await;
    assert_eq!(list.status, 200);
    let ids: Vec<&str> = list.json["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [a_id, b_id], "oldest first");

    let one = h
        .send(
            "GET",
            &format!("/public/v1/workspaces/ws_a/webhooks/{a_id}"),
            Some(&t),
            None,
        )
        .await;
    assert_eq!(one.status, 200);
    let mut expected = a.clone();
    expected.as_object_mut().unwrap().remove("secret");
    assert_eq!(one.json, expected);

    let path = format!("/public/v1/workspaces/ws_a/webhooks/{a_id}");
    let up = h
        .json(
            "PATCH",
            &path,
            &t,
            json!({"name": "renamed", "events": ["post.failed"], "integrationIds": ["acc_a2"]}),
        )
        .await;
    assert_eq!(up.status, 200, "{}", up.text);
    assert_eq!(up.json["name"], "renamed");
    assert_eq!(up.json["url"], PUBLIC_URL);
    assert_eq!(up.json["events"], json!(["post.failed"]));
    assert_eq!(up.json["integrations"][0]["id"], "acc_a2");
    let up = h.json("PATCH", &path, &t, json!({"events": []})).await;
    assert_eq!(up.json["events"], json!([]));
    assert_eq!(up.json["name"], "renamed");
    // Updates follow creation's rules and refuse null.
    assert!(
        h.json("PATCH", &path, &t, json!({"url": "http://93.184.216.34/"}))
            .await
            .messages()[0]
            .contains("https")
    );
    assert!(h.json("PATCH", &path, &t, json!({"events": null})).await.messages()[0].contains("must not be null"));
    assert!(h.json("PATCH", &path, &t, json!({"name": ""})).await.messages()[0].contains("must not be empty"));
    assert!(
        h.json("PATCH", &path, &t, json!({"integrationIds": ["acc_b1"]}))
            .await
            .messages()[0]
            .contains("not a connected account")
    );

    let del = h.send("DELETE", &path, Some(&t), None).await;
    assert_eq!(del.status, 204);
    assert!(del.text.is_empty());
    h.send("GET", &path, Some(&t), None)
        .await
        .assert_error(404, "not_found");
    h.send("DELETE", &path, Some(&t), None)
        .await
        .assert_error(404, "not_found");
    let list = h
        .send("GET", "/public/v1/workspaces/ws_a/webhooks", Some(&t), None)
        .await;
    assert_eq!(list.json["data"].as_array().unwrap().len(), 1);
    h.stop().await;
}

#[tokio::test]
async fn bearer_tokens_are_required_and_checked() {
    let h = Harness::start().await;
    let t = h.writer().await;
    let path = "/public/v1/workspaces/ws_a/webhooks";
    let body = json!({"name": "n", "url": PUBLIC_URL}).to_string();
    let missing = h.send("POST", path, None, Some(&body)).await;
    missing.assert_error(401, "unauthorized");
    assert!(missing.header("www-authenticate").unwrap().starts_with("Bearer"));
    for header in ["Basic dXNlcjpwdw==", "Bearer", "Bearer ", "pw_abc", "Token pw_abc"] {
        let r = h
            .http
            .post(format!("{}{path}", h.base))
            .header("authorization", header)
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 401, "{header}");
        let v: serde_json::Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
        assert_eq!(v["code"], "unauthorized");
    }
    let wrong = h
        .send(
            "POST",
            path,
            Some("pw_Zm9vYmFyYmF6cXV4cXV1eHh5enp5MTIzNDU2Nzg5MGFi"),
            Some(&body),
        )
        .await;
    wrong.assert_error(401, "unauthorized");
    assert!(!wrong.text.contains("Zm9vYmFy"), "the token is not echoed");
    // Every authenticated route refuses a missing token.
    for (m, p) in [
        ("GET", "/public/v1/workspaces".to_owned()),
        ("GET", path.to_owned()),
        ("GET", format!("{path}/wh_x")),
        ("PATCH", format!("{path}/wh_x")),
        ("DELETE", format!("{path}/wh_x")),
        ("PUT", format!("{path}/wh_x/enabled")),
        ("POST", format!("{path}/wh_x/test")),
        ("POST", format!("{path}/wh_x/rotate-secret")),
        ("GET", format!("{path}/wh_x/deliveries")),
        ("GET", "/public/v1/workspaces/ws_a/posts/lookup?postId=p".to_owned()),
    ] {
        h.send(m, &p, None, None).await.assert_error(401, "unauthorized");
    }
    // Revoked tokens stop working at once.
    assert_eq!(h.send("GET", path, Some(&t), None).await.status, 200);
    let tokens = &h.running().state().tokens;
    let id = tokens.list().await.unwrap()[0].id.clone();
    tokens
        .revoke(&id, postwire_core::Timestamp::from_unix_millis(1))
        .await
        .unwrap();
    h.send("GET", path, Some(&t), None)
        .await
        .assert_error(401, "unauthorized");
    // The ingest token is not an API token.
    h.send("GET", path, Some(common::INGEST), None)
        .await
        .assert_error(401, "unauthorized");
    h.stop().await;
}

#[tokio::test]
async fn scopes_and_workspace_selection() {
    let h = Harness::start_with(Options {
        insecure_local: false,
        ..Options::default()
    })
    .await;
    let writer = h.writer().await;
    let reader = h.token(&[Scope::WebhooksRead], &["ws_a"]).await;
    let sub = h.subscribe(&writer, PUBLIC_URL).await;
    let id = sub["id"].as_str().unwrap();
    let base = format!("/public/v1/workspaces/ws_a/webhooks/{id}");

    // Read scope reads…
    for p in [
        "/public/v1/workspaces/ws_a/webhooks".to_owned(),
        base.clone(),
        format!("{base}/deliveries"),
        "/public/v1/workspaces/ws_a/posts/lookup?postId=p".to_owned(),
    ] {
        let r = h.send("GET", &p, Some(&reader), None).await;
        assert_eq!(r.status, 200, "{p}: {}", r.text);
    }
    // …and nothing else.
    for (m, p, body) in [
        (
            "POST",
            "/public/v1/workspaces/ws_a/webhooks".to_owned(),
            json!({"name": "n", "url": PUBLIC_URL}),
        ),
        ("PATCH", base.clone(), json!({"name": "x"})),
        ("PUT", format!("{base}/enabled"), json!({"enabled": false})),
        ("POST", format!("{base}/test"), json!({})),
        ("POST", format!("{base}/rotate-secret"), json!({})),
        ("DELETE", base.clone(), json!({})),
    ] {
        let r = h.json(m, &p, &reader, body).await;
        r.assert_error(403, "insufficient_scope");
        assert!(
            r.header("www-authenticate")
                .unwrap()
                .contains("scope=\"webhooks:write\"")
        );
    }
    // Scope is checked before the body: a bad body from a reader is still a 403.
    h.send("POST", "/public/v1/workspaces/ws_a/webhooks", Some(&reader), Some("{"))
        .await
        .assert_error(403, "insufficient_scope");

    // A workspace outside the selection is forbidden, whether or not it exists.
    for ws in ["ws_b", "ws_nowhere"] {
        h.json(
            "POST",
            &format!("/public/v1/workspaces/{ws}/webhooks"),
            &writer,
            json!({"name": "n", "url": PUBLIC_URL}),
        )
        .await
        .assert_error(403, "forbidden");
        h.send(
            "GET",
            &format!("/public/v1/workspaces/{ws}/webhooks"),
            Some(&writer),
            None,
        )
        .await
        .assert_error(403, "forbidden");
    }
    // A workspace in the selection that does not exist is not found.
    let ghost = h.token(&[Scope::WebhooksWrite], &["ws_a", "ws_ghost"]).await;
    h.json(
        "POST",
        "/public/v1/workspaces/ws_ghost/webhooks",
        &ghost,
        json!({"name": "n", "url": PUBLIC_URL}),
    )
    .await
    .assert_error(404, "not_found");
    // A subscription of another workspace is not found through this one.
    let writer_b = h.token(&[Scope::WebhooksWrite], &["ws_b"]).await;
    let r = h
        .json(
            "POST",
            "/public/v1/workspaces/ws_b/webhooks",
            &writer_b,
            json!({"name": "b", "url": PUBLIC_URL}),
        )
        .await;
    let b_id = r.json["id"].as_str().unwrap();
    let both = h.token(&[Scope::WebhooksWrite], &["ws_a", "ws_b"]).await;
    h.send(
        "GET",
        &format!("/public/v1/workspaces/ws_a/webhooks/{b_id}"),
        Some(&both),
        None,
    )
    .await
    .assert_error(404, "not_found");
    h.send(
        "DELETE",
        &format!("/public/v1/workspaces/ws_a/webhooks/{b_id}"),
        Some(&both),
        None,
    )
    .await
    .assert_error(404, "not_found");
    h.send(
        "GET",
        "/public/v1/workspaces/ws_a/webhooks/wh_unknown",
        Some(&both),
        None,
    )
    .await
    .assert_error(404, "not_found");

    // The workspace list shows the selection that exists.
    let r = h.send("GET", "/public/v1/workspaces", Some(&ghost), None).await;
    assert_eq!(r.json, json!({"data": [{"id": "ws_a", "name": "Workspace ws_a"}]}));
    let r = h.send("GET", "/public/v1/workspaces", Some(&both), None).await;
    assert_eq!(r.json["data"].as_array().unwrap().len(), 2);
    h.stop().await;
}

#[tokio::test]
async fn the_hourly_limit_answers_429_with_retry_after_and_resets() {
    let h = Harness::start_with(Options {
        insecure_local: false,
        rate_limit: 3,
        ..Options::default()
    })
    .await;
    let t = h.writer().await;
    let other = h.writer().await;
    let path = "/public/v1/workspaces/ws_a/webhooks";
    for remaining in ["2", "1", "0"] {
        let r = h.send("GET", path, Some(&t), None).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.header("x-ratelimit-limit"), Some("3"));
        assert_eq!(r.header("x-ratelimit-remaining"), Some(remaining));
    }
    let r = h.json("POST", path, &t, json!({"name": "n", "url": PUBLIC_URL})).await;
    r.assert_error(429, "rate_limited");
    assert_eq!(r.header("retry-after"), Some("3600"));
    h.send("GET", path, Some(&t), None)
        .await
        .assert_error(429, "rate_limited");
    // Another token has its own window.
    assert_eq!(h.send("GET", path, Some(&other), None).await.status, 200);
    h.api_clock.advance_millis(1_800_000);
    let r = h.send("GET", path, Some(&t), None).await;
    assert_eq!(r.header("retry-after"), Some("1800"));
    h.api_clock.advance_millis(1_800_000);
    let r = h.json("POST", path, &t, json!({"name": "n", "url": PUBLIC_URL})).await;
    assert_eq!(r.status, 201, "{}", r.text);
    h.stop().await;
}

#[tokio::test]
async fn unknown_routes_methods_and_bad_queries_use_the_error_body() {
    let h = Harness::start().await;
    let t = h.writer().await;
    h.send("GET", "/public/v1/nothing", Some(&t), None)
        .await
        .assert_error(404, "not_found");
    h.send("GET", "/", None, None).await.assert_error(404, "not_found");
    h.send("PUT", "/public/v1/workspaces", Some(&t), None)
        .await
        .assert_error(405, "method_not_allowed");
    h.send("DELETE", "/public/v1/workspaces/ws_a/webhooks", Some(&t), None)
        .await
        .assert_error(405, "method_not_allowed");
    let sub = h.subscribe(&t, "http://127.0.0.1:9/x").await;
    let d = format!(
        "/public/v1/workspaces/ws_a/webhooks/{}/deliveries",
        sub["id"].as_str().unwrap()
    );
    assert!(h.send("GET", &format!("{d}?limit=0"), Some(&t), None).await.messages()[0].contains("`limit`"));
    assert!(
        h.send("GET", &format!("{d}?limit=101"), Some(&t), None)
            .await
            .messages()[0]
            .contains("`limit`")
    );
    assert!(
        h.send("GET", &format!("{d}?cursor=zzz"), Some(&t), None)
            .await
            .messages()[0]
            .contains("`cursor`")
    );
    assert!(
        h.send("GET", &format!("{d}?page=2"), Some(&t), None).await.messages()[0]
            .contains("unknown query parameter `page`")
    );
    let lookup = "/public/v1/workspaces/ws_a/posts/lookup";
    assert!(h.send("GET", lookup, Some(&t), None).await.messages()[0].contains("required"));
    assert!(
        h.send("GET", &format!("{lookup}?postId=a&externalId=b"), Some(&t), None)
            .await
            .messages()[0]
            .contains("not both")
    );
    assert!(
        h.send("GET", &format!("{lookup}?postId=a&since=yesterday"), Some(&t), None)
            .await
            .messages()[0]
            .contains("`since`")
    );
    let enabled = d.replace("/deliveries", "/enabled");
    assert!(h.json("PUT", &enabled, &t, json!({"enabled": "no"})).await.messages()[0].contains("boolean"));
    assert!(h.json("PUT", &enabled, &t, json!({})).await.messages()[0].contains("required"));
    let health = h.send("GET", "/healthz", None, None).await;
    assert_eq!(health.json["status"], "ok");
    h.stop().await;
}
