//! Operational notices end to end: a subscriber's endpoint fails through the pause rules
//! under the injected clock, and the workspace's operator endpoints (real HTTP receivers
//! on loopback, one of them down for part of the run) get every notice once, in order
//! per subscription, signed with their own secrets, with no secret in any body; a notice
//! about an operator endpoint never goes to that endpoint.

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine;
use common::*;
use postwire_core::{Secret, UnixTime, Verifier};
use postwire_sender::{PostgresStore, SqliteStore, Store};

const SEC: i64 = 1_000;
const MIN: i64 = 60 * SEC;
const HOUR: i64 = 60 * MIN;
/// The retry schedule's delays after the first attempt: nine attempts in all.
const RETRIES: [i64; 8] = [
    30 * SEC,
    2 * MIN,
    10 * MIN,
    30 * MIN,
    HOUR,
    3 * HOUR,
    6 * HOUR,
    12 * HOUR,
];

/// An operator endpoint: a receiver that answers 503 while `down`, and keeps the
/// requests it accepted.
struct Operator {
    id: String,
    secret: Secret,
    down: Arc<AtomicBool>,
    accepted: Arc<Mutex<Vec<Recorded>>>,
    _rx: Receiver,
}

impl Operator {
    async fn start(h: &Harness, name: &str) -> Operator {
        let down = Arc::new(AtomicBool::new(false));
        let accepted: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let (d, a) = (down.clone(), accepted.clone());
        let rx = Receiver::start(move |r, _| {
            if d.load(Ordering::SeqCst) {
                Reply::status(503)
            } else {
                a.lock().unwrap().push(r.clone());
                Reply::ok()
            }
        })
        .await;
        let created = h
            .sender
            .create_operator_endpoint(unfiltered(name, &rx.url))
            .await
            .unwrap();
        Operator {
            id: created.subscription.id,
            secret: created.secret,
            down,
            accepted,
            _rx: rx,
        }
    }

    fn accepted(&self) -> Vec<Recorded> {
        self.accepted.lock().unwrap().clone()
    }

    /// The types of the notices about `subscription` it accepted, in arrival order.
    fn kinds_about(&self, subscription: Option<&str>) -> Vec<String> {
        self.accepted()
            .iter()
            .map(Recorded::json)
            .filter(|b| b["data"]["subscription"]["id"].as_str() == subscription)
            .map(|b| b["type"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// Every accepted request: verifies with this endpoint's secret, once per
    /// `webhook-id`, and carries none of `secrets`.
    fn check(&self, secrets: &[&Secret]) {
        let verifier = Verifier::with_secrets([self.secret.clone()]).unwrap();
        let mut ids = HashSet::new();
        for r in self.accepted() {
            verifier
                .verify(&r.headers, &r.body, UnixTime::from_secs(r.timestamp()))
                .expect("a notice verifies with the operator endpoint's own secret");
            assert!(ids.insert(r.id()), "notice {} accepted twice", r.id());
            assert_eq!(r.json()["id"], r.id(), "the body's id is the webhook-id");
            let text = String::from_utf8(r.body.clone()).unwrap();
            assert!(!text.contains("whsec_") && !text.contains("whsk_"), "{text}");
            for s in secrets {
                let key = s.expose();
                let raw = base64::engine::general_purpose::STANDARD.decode(&key[6..]).unwrap();
                for form in [
                    key[6..].to_owned(),
                    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&raw),
                    hex(&raw),
                ] {
                    assert!(!text.contains(&form), "a secret is in a notice: {text}");
                }
            }
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_failures_reach_every_operator_endpoint_once_in_order_and_never_the_one_concerned() {
    let h = Harness::new().await;
    let one = Operator::start(&h, "pager").await;
    let two = Operator::start(&h, "chat").await;
    let failing = Receiver::failing().await;
    let (sub, sub_secret) = h.subscribe(&failing.url).await;

    // 50 deliveries fail through all nine attempts; the first operator endpoint is down
    // when the notices come, and for two of their retries.
    h.sender
        .publish_many((0..50).map(|p| scheduled(&format!("p{p}")).into()).collect())
        .await
        .unwrap();
    h.idle().await;
    one.down.store(true, Ordering::SeqCst);
    for delay in RETRIES {
        h.advance(delay).await;
    }
    assert!(
        h.sender
            .subscription(&sub)
            .await
            .unwrap()
            .subscription
            .status
            .is_paused()
    );
    let expected = ["endpoint.failing", "endpoint.pause_warning", "endpoint.paused"];
    assert_eq!(two.kinds_about(Some(&sub)), expected);
    assert!(one.accepted().is_empty());
    h.advance(30 * SEC).await;
    h.advance(2 * MIN).await;
    assert!(one.accepted().is_empty());
    one.down.store(false, Ordering::SeqCst);
    h.advance(10 * MIN).await;
    assert_eq!(one.kinds_about(Some(&sub)), expected, "retried, in order");

    // A held event, a resume, a rotation of its secret and of the workspace's key.
    h.sender.publish(scheduled("held")).await.unwrap();
    let (_, summary) = h.sender.resume(&sub).await.unwrap();
    assert_eq!(summary.released, 1);
    let rotated = h.sender.rotate_secret(&sub).await.unwrap().secret;
    h.sender.rotate_signing_key(WS).await.unwrap();
    h.idle().await;
    let expected = [
        "endpoint.failing",
        "endpoint.pause_warning",
        "endpoint.paused",
        "endpoint.resumed",
        "endpoint.secret_rotated",
    ];
    for op in [&one, &two] {
        assert_eq!(op.kinds_about(Some(&sub)), expected);
        assert_eq!(op.kinds_about(None), ["signing_key.rotated"]);
    }
    let resumed = two.accepted()[3].json();
    assert_eq!(resumed["data"]["released"], 1);
    assert_eq!(resumed["data"]["expired"], 0);
    let paused = two.accepted()[2].json();
    assert_eq!(paused["data"]["cause"], "consecutive_failures");
    assert_eq!(paused["data"]["consecutiveFailures"], 50);
    assert_eq!(paused["data"]["subscription"]["name"], "test");

    // The first operator endpoint fails a notice for good: the notice about it goes to
    // the second only, and so does its recovery. (Meanwhile the released event failed
    // too: a new failing run of the subscriber, queued behind at the first.)
    one.down.store(true, Ordering::SeqCst);
    h.sender.rotate_secret(&sub).await.unwrap();
    h.idle().await;
    for delay in RETRIES {
        h.advance(delay).await;
    }
    one.down.store(false, Ordering::SeqCst);
    h.sender.rotate_secret(&sub).await.unwrap();
    h.advance(12 * HOUR).await;
    h.advance(SEC).await;
    let mut expected = expected.to_vec();
    expected.extend(["endpoint.secret_rotated", "endpoint.failing", "endpoint.secret_rotated"]);
    assert_eq!(two.kinds_about(Some(&sub)), expected);
    expected.remove(5); // failed for good at the first endpoint: never sent again
    assert_eq!(
        one.kinds_about(Some(&sub)),
        expected,
        "in order, the failed one skipped"
    );
    assert_eq!(
        two.kinds_about(Some(&one.id)),
        ["endpoint.failing", "endpoint.recovered"]
    );
    assert!(one.kinds_about(Some(&one.id)).is_empty(), "never told about itself");
    assert!(two.kinds_about(Some(&two.id)).is_empty() && one.kinds_about(Some(&two.id)).is_empty());

    // Every stored notice reached the second endpoint once; the subscriber got none.
    let listed = h.sender.notifications(WS, 100).await.unwrap();
    let at_two: HashMap<String, usize> = two.accepted().iter().fold(HashMap::new(), |mut m, r| {
        *m.entry(r.id()).or_default() += 1;
        m
    });
    assert_eq!(listed.len(), at_two.len());
    for n in &listed {
        assert_eq!(at_two.get(&n.event_id), Some(&1), "{} ({})", n.kind, n.event_id);
    }
    assert!(failing.requests().iter().all(|r| {
        let t = r.json()["type"].as_str().unwrap_or_default().to_owned();
        t.starts_with("post.")
    }));
    // An operator endpoint's delivery log lists its notices.
    let log = h.sender.list_deliveries(&two.id, None, 100).await.unwrap().items;
    assert_eq!(log.len(), at_two.len());
    assert!(
        log.iter()
            .all(|d| matches!(d.event_type, postwire_sender::DeliveryEventType::Notice(_)))
    );
    let secrets = [&sub_secret, &rotated, &one.secret, &two.secret];
    one.check(&secrets);
    two.check(&secrets);
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_hours_of_failing_warn_and_seventy_two_pause_with_their_causes() {
    let h = Harness::new().await;
    let op = Operator::start(&h, "pager").await;
    let failing = Receiver::failing().await;
    let (sub, _) = h.subscribe(&failing.url).await;
    // One new event every 12 hours keeps deliveries failing.
    h.sender.publish(scheduled("p0")).await.unwrap();
    h.idle().await;
    let mut elapsed = 0;
    while elapsed < 72 * HOUR {
        h.advance(30 * MIN).await;
        elapsed += 30 * MIN;
        if elapsed % (12 * HOUR) == 0 {
            h.sender.publish(scheduled(&format!("p{elapsed}"))).await.unwrap();
            h.idle().await;
        }
        let kinds = op.kinds_about(Some(&sub));
        if elapsed < 60 * HOUR {
            assert!(kinds.len() <= 1, "only failing before 60 h: {kinds:?}");
        }
    }
    let bodies: Vec<serde_json::Value> = op.accepted().iter().map(Recorded::json).collect();
    let kinds: Vec<&str> = bodies.iter().map(|b| b["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["endpoint.failing", "endpoint.pause_warning", "endpoint.paused"]);
    assert_eq!(bodies[1]["data"]["reason"], "failing_for_60_hours");
    assert_eq!(bodies[2]["data"]["cause"], "failing_for_72_hours");
    assert!(bodies[2]["data"]["consecutiveFailures"].as_u64().unwrap() < 40);
    op.check(&[]);
    // Retention removes queued notices with the rest of the history.
    h.advance(31 * 24 * HOUR).await;
    let policy = postwire_sender::retention::RetentionPolicy::default();
    assert_eq!(h.sender.purge_expired(&policy).await.unwrap().notifications, 3);
    assert!(h.sender.notifications(WS, 10).await.unwrap().is_empty());
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notice_stored_by_a_process_that_stopped_before_queuing_it_is_sent_by_the_next_start() {
    let h = Harness::stopped(test_config()).await;
    let op = Operator::start(&h, "pager").await;
    let (sub, _) = h.subscribe("http://127.0.0.1:9/never").await;
    let Harness { sender, db, clock, .. } = h;
    drop(sender);
    // What such a process leaves: the change and its notice committed, nothing queued.
    let store: Box<dyn Store> = match &db {
        Db::Sqlite(_) => Box::new(SqliteStore::open(db.sqlite_path()).unwrap()),
        Db::Postgres(pg) => Box::new(PostgresStore::connect(pg.url()).await.unwrap()),
    };
    let now = postwire_core::Timestamp::from_unix_millis(T0);
    let data = postwire_core::OperationalData::EndpointSecretRotated {
        subscription: postwire_core::SubscriptionRef {
            id: sub.clone(),
            name: "test".into(),
        },
        previous_secret_expires_at: now,
    };
    let notice = postwire_sender::notices::new_notice(WS, data, now).unwrap();
    let event_id = notice.event_id.clone();
    assert!(
        store
            .rotate_secret(sub.clone(), Secret::generate().unwrap(), now, notice)
            .await
            .unwrap()
    );
    assert_eq!(store.pending_notices(10).await.unwrap().len(), 1);
    drop(store);

    let sender = db.open(test_config(), clock).await;
    let dispatcher = sender.start();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while op.accepted().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let got = op.accepted();
    assert_eq!(got.len(), 1, "sent once by the start's relay");
    assert_eq!(got[0].id(), event_id);
    assert_eq!(got[0].json()["type"], "endpoint.secret_rotated");
    op.check(&[]);
    dispatcher.shutdown().await;
}

/// An operator endpoint made by `h`, at a receiver that accepts everything.
async fn plain_operator(h: &Harness, rx: &Receiver) -> String {
    h.sender
        .create_operator_endpoint(unfiltered("Ops", &rx.url))
        .await
        .unwrap()
        .subscription
        .id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_endpoint_takes_no_subscriber_filters_on_update() {
    let h = Harness::stopped(test_config()).await;
    let rx = Receiver::start(|_, _| Reply::ok()).await;
    let op = plain_operator(&h, &rx).await;
    for update in [
        postwire_sender::SubscriptionUpdate {
            events: Some(vec![postwire_core::EventType::PostPublished]),
            ..Default::default()
        },
        postwire_sender::SubscriptionUpdate {
            integration_ids: Some(vec!["acc-1".into()]),
            ..Default::default()
        },
    ] {
        let err = h.sender.update_subscription(&op, update).await.unwrap_err();
        assert_eq!(err.code(), postwire_sender::SenderErrorCode::InvalidRequest, "{err}");
        assert!(
            err.to_string().contains("`events` and `integrationIds` must be empty"),
            "{err}"
        );
    }
    // Its name and URL still change, and empty filters are no filters.
    let renamed = h
        .sender
        .update_subscription(
            &op,
            postwire_sender::SubscriptionUpdate {
                name: Some("Ops 2".into()),
                events: Some(vec![]),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(renamed.subscription.name, "Ops 2");
    let stored = h.sender.subscription(&op).await.unwrap();
    assert!(stored.subscription.events.is_empty() && stored.subscription.integrations.is_empty());
    assert_eq!(stored.purpose, postwire_sender::Purpose::Operator);
}

/// Runs `sql` (one statement with the subscription id as its only parameter) on the
/// harness's database, behind the store's back.
async fn write_behind(h: &Harness, sql: &str, id: &str) {
    match &h.db {
        Db::Sqlite(_) => {
            let conn = rusqlite::Connection::open(h.db.sqlite_path()).unwrap();
            assert_eq!(conn.execute(sql, [id]).unwrap(), 1);
        }
        Db::Postgres(db) => {
            let (client, connection) = tokio_postgres::connect(db.url(), tokio_postgres::NoTls).await.unwrap();
            let task = tokio::spawn(connection);
            let pg_sql = sql.replace("?1", "$1");
            assert_eq!(client.execute(pg_sql.as_str(), &[&id]).await.unwrap(), 1);
            drop(client);
            let _ = task.await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_endpoint_that_makes_no_role_is_refused_at_read_with_a_typed_error() {
    let h = Harness::stopped(test_config()).await;
    let rx = Receiver::start(|_, _| Reply::ok()).await;
    let op = plain_operator(&h, &rx).await;
    let (sub, _) = h.subscribe(&rx.url).await;
    assert!(h.sender.publish(scheduled("p1")).await.unwrap().event_id().is_some());

    // An operator endpoint with subscriber filters: neither read nor routed.
    write_behind(
        &h,
        r#"UPDATE subscriptions SET events = '["post.published"]' WHERE id = ?1"#,
        &op,
    )
    .await;
    let refused = |e: postwire_sender::SenderError, what: &str| {
        assert_eq!(e.code(), postwire_sender::SenderErrorCode::Internal, "{e}");
        assert!(e.to_string().contains(what), "{e}");
    };
    refused(h.sender.subscription(&op).await.unwrap_err(), "subscriber filters");
    refused(h.sender.list_all_endpoints(WS).await.unwrap_err(), "subscriber filters");
    refused(
        h.sender.publish(scheduled("p2")).await.unwrap_err(),
        "subscriber filters",
    );
    // The subscriber's own row still reads.
    assert_eq!(h.sender.subscription(&sub).await.unwrap().subscription.id, sub);

    // A purpose that is neither kind is not read as a subscriber's.
    write_behind(
        &h,
        r#"UPDATE subscriptions SET events = '[]', purpose = 'operatr' WHERE id = ?1"#,
        &op,
    )
    .await;
    refused(
        h.sender.subscription(&op).await.unwrap_err(),
        "unknown purpose `operatr`",
    );
    refused(h.sender.publish(scheduled("p3")).await.unwrap_err(), "unknown purpose");

    // Repaired, everything reads and routes again.
    write_behind(&h, "UPDATE subscriptions SET purpose = 'operator' WHERE id = ?1", &op).await;
    assert_eq!(
        h.sender.subscription(&op).await.unwrap().purpose,
        postwire_sender::Purpose::Operator
    );
    assert!(h.sender.publish(scheduled("p4")).await.unwrap().event_id().is_some());
}
