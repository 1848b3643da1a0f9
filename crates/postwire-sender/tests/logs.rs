//! Secrets never reach the logs: every log line the sender writes at every level, through
//! creation, rotation, failed and successful attempts and a pause by failures, is
//! captured and searched for the secrets.

mod common;

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use common::*;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Collects every event and span field, formatted, at every level.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<String>>);

struct Fields<'a>(&'a mut String);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={:?}", field.name(), value);
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut out = self.0.lock().unwrap();
        span.record(&mut Fields(&mut out));
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, values: &Record<'_>) {
        values.record(&mut Fields(&mut self.0.lock().unwrap()));
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut out = self.0.lock().unwrap();
        let _ = write!(out, "\n{} {}", event.metadata().level(), event.metadata().target());
        event.record(&mut Fields(&mut out));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

// One thread, so the thread-local subscriber sees the dispatcher's tasks too.
#[tokio::test(flavor = "current_thread")]
async fn no_secret_appears_in_any_log_line() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());

    let h = Harness::with_config(test_config()).await;
    let failing = Receiver::failing().await;
    let ok = Receiver::succeeding().await;
    let (bad_sub, bad_secret) = h.subscribe(&failing.url).await;
    let (_, ok_secret) = h.subscribe(&ok.url).await;
    let rotated = h.sender.rotate_secret(&bad_sub).await.unwrap().secret;
    let changes = (0..50).map(|p| scheduled(&format!("p{p}")).into()).collect();
    h.sender.publish_many(changes).await.unwrap();
    h.idle().await;
    for delay in [
        30_000, 120_000, 600_000, 1_800_000, 3_600_000, 10_800_000, 21_600_000, 43_200_000,
    ] {
        h.advance(delay).await;
    }
    assert!(
        h.sender
            .subscription(&bad_sub)
            .await
            .unwrap()
            .subscription
            .status
            .is_paused()
    );
    h.shutdown().await;

    let logs = capture.0.lock().unwrap().clone();
    assert!(
        logs.contains("endpoint.paused") && logs.contains("was paused"),
        "the pause was logged: {logs}"
    );
    assert!(
        logs.contains("delivery attempt answered") && logs.contains("status=500"),
        "each attempt outcome was logged"
    );
    for secret in [&bad_secret, &ok_secret, &rotated] {
        let text = secret.expose();
        assert!(!logs.contains(&text[6..]), "a secret appeared in the logs");
    }
}
