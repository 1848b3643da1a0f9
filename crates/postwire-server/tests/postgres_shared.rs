//! Two API servers on one PostgreSQL database (as two processes of a deployment would
//! be): a token made through one works on the other, a revocation holds on both, the
//! hourly limit counts the calls made through both against one window, and the daily
//! event quota is one quota for both, kept across a restart.

use std::sync::Arc;

use postwire_core::{Clock, ManualClock, Timestamp};
use postwire_server::{NewToken, Scope, Server, ServerOptions};

const INGEST: &str = "pg-shared-ingest-token-0123456789";

async fn open(url: &str, clock: Arc<ManualClock>) -> postwire_server::RunningServer {
    let mut options = ServerOptions::new("unused.db");
    options.ingest_token = Some(INGEST.to_owned());
    options.limits.daily_event_quota = 3;
    options.database_url = Some(url.to_owned());
    options.api_clock = clock.clone();
    options.sender_clock = clock;
    options.rate_limit_per_hour = 3;
    Server::open(options).await.unwrap().start("127.0.0.1:0").await.unwrap()
}

async fn get(base: &str, token: &str) -> (u16, Option<String>) {
    let resp = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .get(format!("{base}/public/v1/workspaces"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let remaining = resp
        .headers()
        .get("x-ratelimit-remaining")
        .map(|v| v.to_str().unwrap().to_owned());
    (resp.status().as_u16(), remaining)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_on_one_database_share_tokens_and_the_hourly_limit() {
    let db = postwire_testpg::database();
    let clock = Arc::new(ManualClock::new(Timestamp::from_unix_millis(1_800_000_000_000)));
    let a = open(db.url(), clock.clone()).await;
    let b = open(db.url(), clock.clone()).await;
    let created = a
        .state()
        .tokens
        .create(
            NewToken {
                name: "t".into(),
                scopes: vec![Scope::WebhooksRead],
                workspaces: vec!["ws_1".into()],
            },
            clock.now(),
        )
        .await
        .unwrap();
    let token = created.token;
    assert_eq!(get(&a.base_url(), &token).await, (200, Some("2".into())));
    assert_eq!(
        get(&b.base_url(), &token).await,
        (200, Some("1".into())),
        "b knows a's token and its count"
    );
    assert_eq!(get(&a.base_url(), &token).await.0, 200);
    assert_eq!(
        get(&b.base_url(), &token).await.0,
        429,
        "the fourth call in the hour, through either"
    );
    clock.advance_millis(3_600_000);
    assert_eq!(
        get(&b.base_url(), &token).await,
        (200, Some("2".into())),
        "a new window"
    );
    assert_eq!(b.state().tokens.list().await.unwrap().len(), 1);
    b.state().tokens.revoke(&created.record.id, clock.now()).await.unwrap();
    assert_eq!(
        get(&a.base_url(), &token).await.0,
        401,
        "revoked through b, refused by a"
    );
    a.shutdown().await;
    b.shutdown().await;
}

/// Ingests `n` account changes of `ws_1` through `base`; the answer's status and code.
async fn ingest(base: &str, n: usize) -> (u16, String) {
    let change = serde_json::json!({"kind": "account", "workspaceId": "ws_1", "change": "disconnected",
        "integration": {"id": "acc_1", "name": "Account", "providerIdentifier": "x"},
        "reason": "reconnect_required"});
    let resp = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(format!("{base}/internal/v1/events"))
        .bearer_auth(INGEST)
        .header("content-type", "application/json")
        .body(serde_json::json!({"changes": vec![change; n]}).to_string())
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let body: serde_json::Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap_or_default();
    (status, body["code"].as_str().unwrap_or("").to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_on_one_database_draw_on_one_daily_quota_that_survives_a_restart() {
    let db = postwire_testpg::database();
    let clock = Arc::new(ManualClock::new(Timestamp::from_unix_millis(1_800_000_000_000)));
    let a = open(db.url(), clock.clone()).await;
    let b = open(db.url(), clock.clone()).await;
    a.state()
        .sender
        .upsert_workspace(postwire_sender::Workspace {
            id: "ws_1".into(),
            name: "One".into(),
        })
        .await
        .unwrap();
    // Quota 3: two through a, then two through b is one too many (nothing of it taken).
    assert_eq!(ingest(&a.base_url(), 2).await.0, 200);
    assert_eq!(ingest(&b.base_url(), 2).await, (429, "quota_exceeded".to_owned()));
    assert_eq!(ingest(&b.base_url(), 1).await.0, 200);
    // A restart of both does not give the day's quota back.
    a.shutdown().await;
    b.shutdown().await;
    let a = open(db.url(), clock.clone()).await;
    assert_eq!(ingest(&a.base_url(), 1).await, (429, "quota_exceeded".to_owned()));
    // The next UTC day it is whole again.
    clock.advance_millis(86_400_000);
    assert_eq!(ingest(&a.base_url(), 3).await.0, 200);
    a.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creations_through_two_servers_never_pass_the_plan_limit() {
    let db = postwire_testpg::database();
    let clock = Arc::new(ManualClock::new(Timestamp::from_unix_millis(1_800_000_000_000)));
    let url = db.url().to_owned();
    let open_limited = |clock: Arc<ManualClock>| {
        let url = url.clone();
        async move {
            let mut options = ServerOptions::new("unused.db");
            options.database_url = Some(url);
            options.api_clock = clock.clone();
            options.sender_clock = clock;
            options.sender_config = postwire_sender::SenderConfig::default().dangerously_allow_insecure_local_urls();
            options.limits.max_subscriptions_per_workspace = 3;
            Server::open(options).await.unwrap().start("127.0.0.1:0").await.unwrap()
        }
    };
    let a = open_limited(clock.clone()).await;
    let b = open_limited(clock.clone()).await;
    a.state()
        .sender
        .upsert_workspace(postwire_sender::Workspace {
            id: "ws_1".into(),
            name: "One".into(),
        })
        .await
        .unwrap();
    let token = a
        .state()
        .tokens
        .create(
            NewToken {
                name: "t".into(),
                scopes: vec![Scope::WebhooksWrite],
                workspaces: vec!["ws_1".into()],
            },
            clock.now(),
        )
        .await
        .unwrap()
        .token;
    // 16 creations at once, half through each server: each server's own lock lets one
    // of its creations through at a time, so only the database can keep the total at 3.
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let creations = (0..16).map(|i| {
        let base = if i % 2 == 0 { a.base_url() } else { b.base_url() };
        let (http, token) = (http.clone(), token.clone());
        async move {
            let resp = http
                .post(format!("{base}/public/v1/workspaces/ws_1/webhooks"))
                .bearer_auth(&token)
                .header("content-type", "application/json")
                .body(format!(r#"{{"name":"s{i}","url":"https://93.184.216.34/{i}"}}"#))
                .send()
                .await
                .unwrap();
            let status = resp.status().as_u16();
            let body: serde_json::Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
            (status, body["code"].as_str().unwrap_or("").to_owned())
        }
    });
    let answers = futures_util::future::join_all(creations).await;
    let created = answers.iter().filter(|(s, _)| *s == 201).count();
    assert_eq!(created, 3, "{answers:?}");
    assert!(
        answers
            .iter()
            .all(|(s, c)| *s == 201 || (*s == 403 && c == "plan_limit")),
        "{answers:?}"
    );
    assert_eq!(a.state().sender.list_subscriptions("ws_1").await.unwrap().len(), 3);
    a.shutdown().await;
    b.shutdown().await;
}
