//! The embeddable API: subscription life cycle, validation with stable error codes,
//! look-ups, and that secrets never leak through reads, `Debug` or errors.

mod common;

use common::*;
use postwire_core::{CreatedByKind, EventType, Timestamp};
use postwire_sender::{
    NewSubscription, PostChangeKind, SenderConfig, SenderErrorCode, SubscriptionUpdate, TestEvent, Workspace,
};

fn new_sub(url: &str) -> NewSubscription {
    NewSubscription {
        workspace_id: WS.into(),
        name: "prod".into(),
        url: url.into(),
        events: vec![],
        integration_ids: vec![],
        created_by_kind: CreatedByKind::Dashboard,
        signing: Default::default(),
    }
}

fn strict() -> SenderConfig {
    SenderConfig {
        jitter: postwire_sender::schedule::Jitter::None,
        ..SenderConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creation_returns_an_enabled_subscription_with_its_secret_once() {
    let h = Harness::with_config(strict()).await;
    let mut req = new_sub("https://93.184.216.34/hooks/postwire");
    req.events = vec![
        EventType::PostPublished,
        EventType::PostFailed,
        EventType::PostPublished,
    ];
    req.integration_ids = vec!["acc-2".into(), "acc-2".into()];
    let created = h.sender.create_subscription(req).await.unwrap();
    let json = serde_json::to_value(&created).unwrap();
    assert_eq!(json["disabled"], false);
    assert!(json["disabledReason"].is_null());
    assert_eq!(json["consecutiveFailures"], 0);
    assert!(json["lastSuccessAt"].is_null());
    assert_eq!(json["createdByKind"], "dashboard");
    assert_eq!(json["createdAt"], Timestamp::from_unix_millis(T0).to_string());
    assert_eq!(json["events"], serde_json::json!(["post.published", "post.failed"]));
    assert_eq!(json["integrations"][0]["id"], "acc-2");
    assert_eq!(json["integrations"][0]["name"], "Account acc-2");
    assert_eq!(json["integrations"].as_array().unwrap().len(), 1);
    let secret = json["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"));
    assert!(created.subscription.id.starts_with("wh_"));

    // Never again: reads, lists, updates carry no secret, nor does Debug.
    let id = created.subscription.id.clone();
    let read = h.sender.subscription(&id).await.unwrap();
    assert_eq!(read.workspace_id, WS);
    assert!(
        serde_json::to_string(&read.subscription)
            .unwrap()
            .find(&secret[6..])
            .is_none()
    );
    let list = h.sender.list_subscriptions(WS).await.unwrap();
    assert_eq!(list.len(), 1);
    assert!(!format!("{list:?} {read:?} {created:?} {:?}", h.sender).contains(&secret[6..]));
    let rotated = h.sender.rotate_secret(&id).await.unwrap();
    assert!(!format!("{rotated:?}").contains(&rotated.secret.expose()[6..]));
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_subscriptions_are_rejected_with_every_reason() {
    let h = Harness::with_config(strict()).await;
    let mut req = new_sub("http://93.184.216.34/hook");
    req.name = "  ".into();
    req.integration_ids = vec!["acc-1".into(), "not-mine".into()];
    let err = h.sender.create_subscription(req).await.unwrap_err();
    assert_eq!(err.code(), SenderErrorCode::InvalidRequest);
    assert_eq!(err.code().http_status(), 400);
    let messages = err.messages();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert!(messages.iter().any(|m| m.contains("name")));
    assert!(messages.iter().any(|m| m.contains("https")));
    assert!(messages.iter().any(|m| m.contains("not-mine")));

    for url in [
        "https://127.0.0.1/hook",
        "https://10.0.0.8/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://[fd00:ec2::254]/",
        "https://100.64.1.1/",
        "https://[::ffff:192.168.0.1]/",
        "https://0.0.0.0/",
        "https://224.0.0.1/",
        "https://localhost/hook",
        "ftp://93.184.216.34/",
        "https://user:pw@93.184.216.34/",
        "not a url",
        "",
    ] {
        let err = h.sender.create_subscription(new_sub(url)).await.unwrap_err();
        assert_eq!(err.code(), SenderErrorCode::InvalidRequest, "{url}");
        assert!(err.messages()[0].starts_with("`url`"), "{url}: {:?}", err.messages());
    }

    let mut other_ws = new_sub("https://93.184.216.34/");
    other_ws.workspace_id = "ws_nope".into();
    assert_eq!(
        h.sender.create_subscription(other_ws).await.unwrap_err().code(),
        SenderErrorCode::NotFound
    );
    let mut bad_ws = new_sub("https://93.184.216.34/");
    bad_ws.workspace_id = "x".repeat(10_000);
    assert_eq!(
        h.sender.create_subscription(bad_ws).await.unwrap_err().code(),
        SenderErrorCode::InvalidRequest
    );
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dangerous_setting_allows_http_and_loopback_only() {
    let h = Harness::new().await;
    assert!(
        h.sender
            .create_subscription(new_sub("http://127.0.0.1:9/hook"))
            .await
            .is_ok()
    );
    assert!(
        h.sender
            .create_subscription(new_sub("http://localhost:9/hook"))
            .await
            .is_ok()
    );
    for url in ["http://10.0.0.1/", "http://169.254.169.254/", "http://192.168.1.1/"] {
        assert_eq!(
            h.sender.create_subscription(new_sub(url)).await.unwrap_err().code(),
            SenderErrorCode::InvalidRequest,
            "{url}"
        );
    }
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_malformed_ids_get_not_found_or_invalid_request() {
    let h = Harness::new().await;
    assert_eq!(
        h.sender.subscription("wh_nope").await.unwrap_err().code(),
        SenderErrorCode::NotFound
    );
    assert_eq!(
        h.sender.subscription("").await.unwrap_err().code(),
        SenderErrorCode::InvalidRequest
    );
    assert_eq!(
        h.sender.subscription("a\u{0}b").await.unwrap_err().code(),
        SenderErrorCode::InvalidRequest
    );
    assert_eq!(
        h.sender.pause("wh_nope").await.unwrap_err().code(),
        SenderErrorCode::NotFound
    );
    assert_eq!(
        h.sender.resume("wh_nope").await.unwrap_err().code(),
        SenderErrorCode::NotFound
    );
    assert_eq!(
        h.sender.rotate_secret("wh_nope").await.unwrap_err().code(),
        SenderErrorCode::NotFound
    );
    assert_eq!(
        h.sender.delete_subscription("wh_nope").await.unwrap_err().code(),
        SenderErrorCode::NotFound
    );
    assert_eq!(
        h.sender.list_deliveries("wh_nope", None, 10).await.unwrap_err().code(),
        SenderErrorCode::NotFound
    );
    assert_eq!(
        h.sender.list_subscriptions("ws_nope").await.unwrap_err().code(),
        SenderErrorCode::NotFound
    );
    let err = h
        .sender
        .update_subscription(
            "wh_nope",
            SubscriptionUpdate {
                name: Some("x".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.code().as_str(), "not_found");
    assert_eq!(err.code().http_status(), 404);
    let err = h.sender.events_for_post(WS, "p1", 1000).await.unwrap_err();
    assert_eq!(err.code(), SenderErrorCode::InvalidRequest);
    let err = h
        .sender
        .upsert_integration("ws_nope", integration("a"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), SenderErrorCode::NotFound);
    let err = h
        .sender
        .upsert_workspace(Workspace {
            id: String::new(),
            name: "n".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), SenderErrorCode::InvalidRequest);
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_changes_matching_and_delete_removes_everything() {
    let h = Harness::new().await;
    let rx = Receiver::succeeding().await;
    let (sub, _) = h.subscribe(&rx.url).await;
    let updated = h
        .sender
        .update_subscription(
            &sub,
            SubscriptionUpdate {
                name: Some("renamed".into()),
                events: Some(vec![EventType::PostDeleted]),
                integration_ids: Some(vec!["acc-1".into()]),
                url: None,
                signing: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(updated.subscription.name, "renamed");
    assert_eq!(updated.subscription.events, vec![EventType::PostDeleted]);
    assert_eq!(updated.subscription.integrations[0].id, "acc-1");
    let bad = h
        .sender
        .update_subscription(
            &sub,
            SubscriptionUpdate {
                url: Some("https://10.1.1.1/".into()),
                ..Default::default()
            },
        )
        .await;
    assert_eq!(bad.unwrap_err().code(), SenderErrorCode::InvalidRequest);

    h.sender.publish(scheduled("p1")).await.unwrap();
    let deleted_by = postwire_core::Actor {
        kind: postwire_core::ActorKind::ApiToken,
        id: Some("tok".into()),
    };
    h.sender
        .publish(change("p1", "acc-1", PostChangeKind::Deleted { by: deleted_by }))
        .await
        .unwrap();
    h.idle().await;
    let types: Vec<String> = rx
        .requests()
        .iter()
        .map(|r| r.json()["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(types, vec!["post.deleted"]);

    h.sender.delete_subscription(&sub).await.unwrap();
    assert_eq!(
        h.sender.subscription(&sub).await.unwrap_err().code(),
        SenderErrorCode::NotFound
    );
    assert_eq!(h.sender.delivery_counts(Some(&sub)).await.unwrap(), Default::default());
    assert!(h.sender.list_subscriptions(WS).await.unwrap().is_empty());
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_for_a_post_are_listed_newest_first_without_content() {
    let h = Harness::new().await;
    let a = h.sender.publish(scheduled("p1")).await.unwrap();
    h.sender.publish(scheduled("p2")).await.unwrap();
    let b = h
        .sender
        .publish(change(
            "p1",
            "acc-1",
            PostChangeKind::Published {
                release_url: "https://x.example/9".into(),
                release_id: "9".into(),
            },
        ))
        .await
        .unwrap();
    let mut draft = scheduled("p1");
    draft.post.is_draft = true;
    h.sender.publish(draft).await.unwrap();
    let events = h.sender.events_for_post(WS, "p1", 10).await.unwrap();
    let ids: Vec<&str> = events.iter().map(|e| e.id()).collect();
    assert_eq!(ids, vec![b.event_id().unwrap(), a.event_id().unwrap()]);
    assert_eq!(events[0].data().post().unwrap().release_id(), Some("9"));
    assert!(events.iter().all(|e| !e.to_json().contains("CONTENT-MUST-NOT-LEAK")));
    assert!(h.sender.events_for_post("other", "p1", 10).await.unwrap().is_empty());
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_event_can_target_one_subscription_of_its_workspace() {
    let h = Harness::new().await;
    let a = Receiver::succeeding().await;
    let b = Receiver::succeeding().await;
    // `a` does not subscribe to webhook.test; a targeted test still reaches it.
    let (sub_a, secret_a) = h.subscribe_with(&a.url, vec![EventType::PostFailed], vec![]).await;
    h.subscribe(&b.url).await;
    let p = h
        .sender
        .publish(TestEvent {
            workspace_id: WS.into(),
            subscription_id: Some(sub_a.clone()),
            message: "ping".into(),
        })
        .await
        .unwrap();
    assert!(matches!(p, postwire_sender::Published::Event { deliveries: 1, .. }));
    h.idle().await;
    assert_eq!(a.count(), 1);
    assert_eq!(b.count(), 0);
    let ev = a.requests()[0].verify(&[secret_a]).unwrap();
    assert!(ev.to_json().contains("\"message\":\"ping\""));

    h.sender
        .upsert_workspace(Workspace {
            id: "ws_other".into(),
            name: "o".into(),
        })
        .await
        .unwrap();
    let err = h
        .sender
        .publish(TestEvent {
            workspace_id: "ws_other".into(),
            subscription_id: Some(sub_a),
            message: "x".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), SenderErrorCode::NotFound);
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_changes_are_rejected_and_nothing_is_stored() {
    let h = Harness::new().await;
    let mut c = scheduled("p1");
    c.workspace_id = String::new();
    c.post.integration.id = "x".repeat(1000);
    let err = h.sender.publish(c).await.unwrap_err();
    assert_eq!(err.code(), SenderErrorCode::InvalidRequest);
    assert_eq!(err.messages().len(), 2);
    // A batch with one bad change stores none of it.
    let mut bad = scheduled("p2");
    bad.post.id = String::new();
    let err = h
        .sender
        .publish_many(vec![scheduled("p1").into(), bad.into()])
        .await
        .unwrap_err();
    assert_eq!(err.code(), SenderErrorCode::InvalidRequest);
    assert!(h.sender.events_for_post(WS, "p1", 10).await.unwrap().is_empty());
    let too_many = (0..10_001).map(|i| scheduled(&format!("p{i}")).into()).collect();
    assert_eq!(
        h.sender.publish_many(too_many).await.unwrap_err().code(),
        SenderErrorCode::InvalidRequest
    );
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_published_before_start_wait_in_the_store_and_a_second_start_adds_no_dispatcher() {
    let dir = tempfile::tempdir().unwrap();
    let clock = std::sync::Arc::new(postwire_core::ManualClock::new(Timestamp::from_unix_millis(T0)));
    let sender = postwire_sender::Sender::open_sqlite(dir.path().join("s.db"), test_config(), clock)
        .await
        .unwrap();
    assert_eq!(
        sender.wait_idle().await.unwrap_err().code(),
        SenderErrorCode::Unavailable,
        "not started"
    );
    sender
        .upsert_workspace(Workspace {
            id: WS.into(),
            name: "w".into(),
        })
        .await
        .unwrap();
    let rx = Receiver::succeeding().await;
    let sub = sender
        .create_subscription(new_sub(&rx.url))
        .await
        .unwrap()
        .subscription
        .id;
    sender.publish(scheduled("p1")).await.unwrap();
    assert_eq!(sender.delivery_counts(Some(&sub)).await.unwrap().pending, 1);
    let first = sender.start();
    let second = sender.start();
    sender.wait_idle().await.unwrap();
    assert_eq!(rx.count(), 1);
    second.shutdown().await;
    first.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_that_cannot_work_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let clock = std::sync::Arc::new(postwire_core::ManualClock::new(Timestamp::from_unix_millis(T0)));
    for config in [
        SenderConfig {
            max_in_flight: 0,
            ..SenderConfig::default()
        },
        SenderConfig {
            attempt_timeout: std::time::Duration::ZERO,
            ..SenderConfig::default()
        },
        SenderConfig {
            lease: std::time::Duration::from_secs(5),
            ..SenderConfig::default()
        },
    ] {
        let err = postwire_sender::Sender::open_sqlite(dir.path().join("s.db"), config, clock.clone())
            .await
            .unwrap_err();
        assert_eq!(err.code(), SenderErrorCode::InvalidRequest);
    }
}
