//! The embedded sender against a real receiver on loopback that verifies every delivery
//! with postwire-core: the service's domain operations become signed deliveries, in
//! order per post, without drafts and without post content; a receiver that fails gets
//! the same event again (same webhook-id) after the 30 s retry delay; a receiver holding
//! the wrong secret refuses every delivery and the attempts say so. Time is a manual
//! clock, so the retry schedule runs in milliseconds.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use postwire_core::{
    Actor, ActorKind, Clock, CreatedByKind, DisconnectReason, Event, EventError, EventType, FailureCode, ManualClock,
    Secret, Timestamp, Verifier,
};
use postwire_example_embedded_sender::{Account, Post, PostStatus, Posts};
use postwire_sender::schedule::Jitter;
use postwire_sender::{AttemptOutcome, DeliveryState, NewSubscription, Sender, SenderConfig, Workspace};

/// What the receiver saw: every request's webhook-id, and the verified events.
#[derive(Default)]
struct Seen {
    requests: Mutex<Vec<String>>,
    events: Mutex<Vec<Event>>,
    bodies: Mutex<Vec<String>>,
    fail_next: AtomicUsize,
}

struct Receiver {
    verifier: Mutex<Option<Verifier>>,
    clock: Arc<ManualClock>,
    seen: Seen,
}

async fn receive(State(r): State<Arc<Receiver>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let id = headers
        .get("webhook-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    r.seen.requests.lock().unwrap().push(id);
    let verified = {
        let verifier = r.verifier.lock().unwrap();
        verifier
            .as_ref()
            .expect("secret set")
            .verify_event(&headers, &body, r.clock.now().unix_time())
    };
    let Ok(event) = verified else {
        return StatusCode::BAD_REQUEST;
    };
    if r.seen.fail_next.load(Ordering::SeqCst) > 0 {
        r.seen.fail_next.fetch_sub(1, Ordering::SeqCst);
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    r.seen
        .bodies
        .lock()
        .unwrap()
        .push(String::from_utf8_lossy(&body).into_owned());
    r.seen.events.lock().unwrap().push(event);
    StatusCode::NO_CONTENT
}

struct Harness {
    sender: Sender,
    receiver: Arc<Receiver>,
    clock: Arc<ManualClock>,
    subscription: String,
    _dir: tempfile::TempDir,
}

impl Harness {
    async fn start() -> Harness {
        let start = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        let clock = Arc::new(ManualClock::new(Timestamp::from_unix_millis(start)));
        let receiver = Arc::new(Receiver {
            verifier: Mutex::new(None),
            clock: clock.clone(),
            seen: Seen::default(),
        });
        let app = axum::Router::new()
            .route("/hooks", post(receive))
            .with_state(receiver.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hooks", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

        let dir = tempfile::tempdir().unwrap();
        // Loopback http receiver: only with the dangerous flag. No jitter: exact delays.
        let config = SenderConfig {
            jitter: Jitter::None,
            ..SenderConfig::default()
        }
        .dangerously_allow_insecure_local_urls();
        let sender = Sender::open_sqlite(dir.path().join("webhooks.db"), config, clock.clone())
            .await
            .unwrap();
        Posts::new(&sender)
            .register(
                Workspace {
                    id: "ws_1".into(),
                    name: "Acme".into(),
                },
                &[account()],
            )
            .await
            .unwrap();
        let created = sender
            .create_subscription(NewSubscription {
                workspace_id: "ws_1".into(),
                name: "receiver".into(),
                url,
                events: vec![],
                integration_ids: vec![],
                created_by_kind: CreatedByKind::ApiToken,
                signing: Default::default(),
            })
            .await
            .unwrap();
        *receiver.verifier.lock().unwrap() = Some(Verifier::new(created.secret.clone()));
        // The dispatcher runs for the rest of the test.
        std::mem::forget(sender.start());
        Harness {
            sender,
            receiver,
            clock,
            subscription: created.subscription.id,
            _dir: dir,
        }
    }

    async fn idle(&self) {
        tokio::time::timeout(Duration::from_secs(30), self.sender.wait_idle())
            .await
            .expect("idle in time")
            .unwrap();
    }

    async fn advance(&self, ms: i64) {
        self.clock.advance_millis(ms);
        self.sender.wake();
        self.idle().await;
    }
}

fn account() -> Account {
    Account {
        id: "int_1".into(),
        name: "Acme on LinkedIn".into(),
        provider: "linkedin".into(),
    }
}

fn new_post(id: &str, clock: &ManualClock) -> Post {
    Post {
        id: id.into(),
        workspace_id: "ws_1".into(),
        external_id: format!("ext-{id}"),
        group: "grp".into(),
        account: account(),
        content: "SECRET LAUNCH TEXT".into(),
        publish_at: clock.now(),
        status: PostStatus::Draft,
    }
}

#[tokio::test]
async fn a_post_life_is_delivered_signed_in_order_without_drafts_or_content() {
    let h = Harness::start().await;
    let posts = Posts::new(&h.sender);
    let mut post = new_post("post_1", &h.clock);
    assert_eq!(
        posts
            .save_draft(&mut post, "SECRET LAUNCH TEXT v2")
            .await
            .unwrap()
            .event_id(),
        None,
        "drafts emit nothing"
    );
    let at = h.clock.now().add_millis(3_600_000);
    let mut ids = vec![
        posts.schedule(&mut post, at).await.unwrap(),
        posts.start_publishing(&mut post).await.unwrap(),
        posts
            .published(&mut post, "https://www.linkedin.com/feed/update/1", "urn:li:share:1")
            .await
            .unwrap(),
        posts
            .account_disconnected("ws_1", &account(), DisconnectReason::ReconnectRequired)
            .await
            .unwrap(),
        posts.account_reconnected("ws_1", &account()).await.unwrap(),
    ]
    .into_iter()
    .map(|p| p.event_id().unwrap().to_owned())
    .collect::<Vec<_>>();
    let mut other = new_post("post_2", &h.clock);
    ids.push(
        posts
            .schedule(&mut other, at)
            .await
            .unwrap()
            .event_id()
            .unwrap()
            .to_owned(),
    );
    let error = EventError::new(FailureCode::MediaInvalid, "image too large", false).unwrap();
    ids.push(
        posts
            .failed(&mut other, error)
            .await
            .unwrap()
            .event_id()
            .unwrap()
            .to_owned(),
    );
    ids.push(
        posts
            .delete(
                &other,
                Actor {
                    kind: ActorKind::ApiToken,
                    id: Some("tok_1".into()),
                },
            )
            .await
            .unwrap()
            .event_id()
            .unwrap()
            .to_owned(),
    );
    h.idle().await;

    let events = h.receiver.seen.events.lock().unwrap().clone();
    let mut got: Vec<_> = events.iter().map(|e| e.id().to_owned()).collect();
    assert_eq!(got.len(), ids.len(), "every event verified and accepted once");
    // Per post (and per account), in the order reported.
    let order = |pred: &dyn Fn(&Event) -> bool| {
        events
            .iter()
            .filter(|e| pred(e))
            .map(|e| e.event_type())
            .collect::<Vec<_>>()
    };
    let about = |post: &'static str| move |e: &Event| e.data().post().is_some_and(|p| p.id() == post);
    assert_eq!(
        order(&about("post_1")),
        [
            EventType::PostScheduled,
            EventType::PostPublishing,
            EventType::PostPublished
        ]
    );
    assert_eq!(
        order(&about("post_2")),
        [EventType::PostScheduled, EventType::PostFailed, EventType::PostDeleted]
    );
    assert_eq!(
        order(&|e: &Event| e.data().post().is_none()),
        [EventType::IntegrationDisconnected, EventType::IntegrationReconnected]
    );
    got.sort();
    ids.sort();
    assert_eq!(got, ids);
    assert!(
        h.receiver
            .seen
            .bodies
            .lock()
            .unwrap()
            .iter()
            .all(|b| !b.contains("SECRET LAUNCH TEXT")),
        "content never leaves"
    );
}

#[tokio::test]
async fn a_failing_receiver_gets_the_same_event_again_after_30_seconds() {
    let h = Harness::start().await;
    let posts = Posts::new(&h.sender);
    h.receiver.seen.fail_next.store(1, Ordering::SeqCst);
    let mut post = new_post("post_retry", &h.clock);
    let id = posts
        .schedule(&mut post, h.clock.now())
        .await
        .unwrap()
        .event_id()
        .unwrap()
        .to_owned();
    h.idle().await;
    assert_eq!(*h.receiver.seen.requests.lock().unwrap(), std::slice::from_ref(&id));
    assert!(h.receiver.seen.events.lock().unwrap().is_empty());
    h.advance(29_999).await;
    assert_eq!(h.receiver.seen.requests.lock().unwrap().len(), 1, "not before 30 s");
    h.advance(1).await;
    // The retry: the same webhook-id (so receivers can de-duplicate), verified again.
    assert_eq!(*h.receiver.seen.requests.lock().unwrap(), [id.clone(), id.clone()]);
    assert_eq!(h.receiver.seen.events.lock().unwrap().len(), 1);
    let page = h.sender.list_deliveries(&h.subscription, None, 10).await.unwrap();
    let d = &page.items[0];
    assert_eq!((d.state, d.attempts.len()), (DeliveryState::Delivered, 2));
    assert!(
        matches!(d.attempts[1].outcome, AttemptOutcome::Response { status: 503, .. }),
        "{:?}",
        d.attempts
    );
}

#[tokio::test]
async fn a_receiver_with_the_wrong_secret_refuses_and_the_attempts_say_so() {
    let h = Harness::start().await;
    *h.receiver.verifier.lock().unwrap() = Some(Verifier::new(Secret::generate().unwrap()));
    let mut post = new_post("post_wrong_secret", &h.clock);
    Posts::new(&h.sender).schedule(&mut post, h.clock.now()).await.unwrap();
    h.idle().await;
    assert!(h.receiver.seen.events.lock().unwrap().is_empty(), "nothing verified");
    let page = h.sender.list_deliveries(&h.subscription, None, 10).await.unwrap();
    let d = &page.items[0];
    assert_eq!(d.state, DeliveryState::Pending, "retried later");
    assert!(matches!(
        d.attempts[0].outcome,
        AttemptOutcome::Response { status: 400, .. }
    ));
    assert!(d.next_attempt_at.is_some());
}
