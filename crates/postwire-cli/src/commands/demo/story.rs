//! The demo's scripted story: the platform registers a workspace and two accounts, a
//! client subscribes, a test event and a sequence of post and account changes are
//! reported through the ingest API, and the deliveries are polled and drawn until every
//! event is final. Then it sums up: `N events, N delivered, N verified, 0 lost`.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use postwire_core::{EventType, Secret};
use serde_json::{Value, json};

use super::client::Demo;
use super::clock::ScaledClock;
use super::poll::fetch_deliveries;
use super::receiver::{FailurePlan, LostAckPlan, Receiver};
use super::view::View;
use super::{DemoArgs, WORKSPACE};

/// One event the demo made, in the order it made them.
#[derive(Debug, Clone)]
pub(crate) struct DemoEvent {
    pub(crate) event_id: String,
    pub(crate) event_type: String,
    pub(crate) subject: String,
}

/// A post as the platform reports it to the ingest API (with content, which events never carry).
fn post_record(
    id: &str,
    external_id: &str,
    account: (&str, &str, &str),
    state: &str,
    release: Option<(&str, &str)>,
) -> Value {
    let mut post = json!({
        "id": id,
        "externalId": external_id,
        "group": "launch-week",
        "state": state,
        "publishDate": "2026-12-01T09:00:00.000Z",
        "integration": {"id": account.0, "name": account.1, "providerIdentifier": account.2},
        "content": "This text stays inside the platform: events never carry post content."
    });
    if let Some((url, rid)) = release {
        post["releaseURL"] = json!(url);
        post["releaseId"] = json!(rid);
    }
    post
}

/// Runs the story against the started server and receiver; the exit code says whether
/// every event was delivered and verified.
pub(crate) async fn story(
    demo: &Arc<Demo>,
    receiver: &Receiver,
    clock: Arc<ScaledClock>,
    args: &DemoArgs,
    started: Instant,
) -> Result<ExitCode, String> {
    use reqwest::Method;
    // The platform registers the workspace and its accounts (internal ingest API).
    demo.ingest(
        Method::PUT,
        &format!("/internal/v1/workspaces/{WORKSPACE}"),
        json!({"name": "Acme Social"}),
    )
    .await?;
    demo.ingest(
        Method::PUT,
        &format!("/internal/v1/workspaces/{WORKSPACE}/integrations/acc_x"),
        json!({"name": "Acme on X", "providerIdentifier": "x"}),
    )
    .await?;
    demo.ingest(
        Method::PUT,
        &format!("/internal/v1/workspaces/{WORKSPACE}/integrations/acc_li"),
        json!({"name": "Acme on LinkedIn", "providerIdentifier": "linkedin"}),
    )
    .await?;

    // A client subscribes through the public API.
    let sub = demo
        .api(
            Method::POST,
            &format!("/public/v1/workspaces/{WORKSPACE}/webhooks"),
            Some(json!({"name": "demo receiver", "url": receiver.url()})),
            201,
        )
        .await?;
    let sub_id = sub["id"].as_str().unwrap_or_default().to_owned();
    let secret = Secret::parse(sub["secret"].as_str().unwrap_or_default())
        .map_err(|e| format!("creation returned no usable secret: {e}"))?;
    receiver.set_secrets(vec![secret]);
    receiver.set_failure_plan(Some(FailurePlan {
        event_type: EventType::PostPublished,
        failed_attempts: 2,
    }));
    receiver.set_lost_ack_plan(Some(LostAckPlan {
        event_type: EventType::IntegrationDisconnected,
        lost_acks: 1,
    }));
    println!(
        "POST /public/v1/workspaces/{WORKSPACE}/webhooks -> 201 {sub_id} (all event types; secret whsec_… shown once, handed to the receiver)"
    );
    println!("The receiver will answer 503 to the first 2 attempts of post.published, so you can watch the retries,");
    println!(
        "and will lose its 200 for integration.disconnected once, so the retry arrives as a duplicate it ignores."
    );
    println!();

    let events: Arc<Mutex<Vec<DemoEvent>>> = Arc::new(Mutex::new(Vec::new()));
    let test = demo
        .api(
            Method::POST,
            &format!("/public/v1/workspaces/{WORKSPACE}/webhooks/{sub_id}/test"),
            Some(json!({"message": "Hello from postwire demo"})),
            202,
        )
        .await?;
    events.lock().unwrap_or_else(|p| p.into_inner()).push(DemoEvent {
        event_id: test["eventId"].as_str().unwrap_or_default().to_owned(),
        event_type: "webhook.test".into(),
        subject: "(test event via API)".into(),
    });

    // The platform reports what happens to posts and accounts (internal ingest API).
    let x = ("acc_x", "Acme on X", "x");
    let li = ("acc_li", "Acme on LinkedIn", "linkedin");
    let script: Vec<(&str, &str, Value)> = vec![
        (
            "post.scheduled",
            "post_1 on X",
            json!({"kind": "post", "workspaceId": WORKSPACE, "change": "scheduled", "post": post_record("post_1", "launch-2026", x, "QUEUE", None)}),
        ),
        (
            "post.scheduled",
            "post_2 on LinkedIn",
            json!({"kind": "post", "workspaceId": WORKSPACE, "change": "scheduled", "post": post_record("post_2", "webinar-invite", li, "QUEUE", None)}),
        ),
        (
            "post.publishing",
            "post_1 on X",
            json!({"kind": "post", "workspaceId": WORKSPACE, "change": "publishing", "post": post_record("post_1", "launch-2026", x, "PUBLISHING", None)}),
        ),
        (
            "post.published",
            "post_1 on X",
            json!({"kind": "post", "workspaceId": WORKSPACE, "change": "published", "post": post_record("post_1", "launch-2026", x, "PUBLISHED", Some(("https://x.com/acme/status/1", "1")))}),
        ),
        (
            "post.publishing",
            "post_2 on LinkedIn",
            json!({"kind": "post", "workspaceId": WORKSPACE, "change": "publishing", "post": post_record("post_2", "webinar-invite", li, "PUBLISHING", None)}),
        ),
        (
            "post.failed",
            "post_2 on LinkedIn",
            json!({"kind": "post", "workspaceId": WORKSPACE, "change": "failed", "post": post_record("post_2", "webinar-invite", li, "ERROR", None),
            "error": {"code": "rate_limited", "message": "LinkedIn rate limit reached; try again in 15 minutes", "retryable": true}}),
        ),
        (
            "integration.disconnected",
            "Acme on LinkedIn",
            json!({"kind": "account", "workspaceId": WORKSPACE, "change": "disconnected", "reason": "reconnect_required",
            "integration": {"id": "acc_li", "name": "Acme on LinkedIn", "providerIdentifier": "linkedin"}}),
        ),
    ];
    let expected = script.len() + 1;
    let publisher = {
        let demo = demo.clone();
        let events = events.clone();
        tokio::spawn(async move {
            for (event_type, subject, change) in script {
                tokio::time::sleep(Duration::from_millis(300)).await;
                let out = demo
                    .ingest(Method::POST, "/internal/v1/events", json!({"changes": [change]}))
                    .await?;
                let id = out["results"][0]["eventId"].as_str().unwrap_or_default().to_owned();
                events.lock().unwrap_or_else(|p| p.into_inner()).push(DemoEvent {
                    event_id: id,
                    event_type: event_type.into(),
                    subject: subject.into(),
                });
            }
            Ok::<(), String>(())
        })
    };

    let live = !args.plain && std::io::stdout().is_terminal();
    let mut view = View::new(live);
    let deadline = started + Duration::from_secs(args.timeout_secs);
    let mut publisher = Some(publisher);
    let (deliveries, stats) = loop {
        tokio::time::sleep(Duration::from_millis(150)).await;
        if publisher.as_ref().is_some_and(|p| p.is_finished())
            && let Some(p) = publisher.take()
        {
            p.await.map_err(|e| e.to_string())??;
        }
        let deliveries = fetch_deliveries(demo, &sub_id).await?;
        let stats = receiver.stats();
        let snapshot = events.lock().unwrap_or_else(|p| p.into_inner()).clone();
        view.render(&snapshot, &deliveries, &stats, clock.as_ref(), started);
        let all_final = snapshot.len() == expected
            && snapshot.iter().all(|e| {
                deliveries
                    .get(&e.event_id)
                    .is_some_and(|d| d.state == "delivered" || d.state == "failed")
            });
        if publisher.is_none() && all_final {
            break (deliveries, stats);
        }
        if Instant::now() > deadline {
            view.finish();
            println!("gave up after {} s", args.timeout_secs);
            break (deliveries, stats);
        }
    };
    view.finish();
    let snapshot = events.lock().unwrap_or_else(|p| p.into_inner()).clone();

    // A receiver that missed events can reconcile through the look-up.
    let lookup = demo
        .api(
            Method::GET,
            &format!("/public/v1/workspaces/{WORKSPACE}/posts/lookup?externalId=launch-2026"),
            None,
            200,
        )
        .await?;
    let n = lookup["data"].as_array().map(Vec::len).unwrap_or(0);
    println!(
        "GET /public/v1/workspaces/{WORKSPACE}/posts/lookup?externalId=launch-2026 -> {n} events of post_1, newest first (for reconciling missed events)"
    );

    let delivered = snapshot
        .iter()
        .filter(|e| deliveries.get(&e.event_id).is_some_and(|d| d.state == "delivered"))
        .count();
    let verified = snapshot
        .iter()
        .filter(|e| stats.events.get(&e.event_id).is_some_and(|r| r.verified))
        .count();
    let retried: u32 = deliveries
        .values()
        .map(|d| d.attempts.len().saturating_sub(1) as u32)
        .sum();
    let duplicates: u32 = stats.events.values().map(|r| r.duplicates).sum();
    let lost = expected.saturating_sub(verified);
    println!(
        "{} events, {delivered} delivered, {verified} verified, {lost} lost ({retried} retries, {duplicates} duplicate(s) ignored, {} rejected signatures) in {:.1} s",
        expected,
        stats.rejected,
        started.elapsed().as_secs_f64()
    );
    if delivered == expected && verified == expected && lost == 0 && stats.rejected == 0 {
        println!(
            "Every event was delivered, signed and verified. Next: `postwire serve`, then `postwire token create` (see README)."
        );
        Ok(ExitCode::SUCCESS)
    } else {
        Ok(ExitCode::FAILURE)
    }
}
