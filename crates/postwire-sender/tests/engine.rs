//! The delivery rules, end to end: real HTTP receivers on loopback, a real SQLite file,
//! and a manual clock that the tests move through a day of retries in milliseconds.

mod common;

use std::time::{Duration, Instant};

use common::*;
use postwire_core::{EventType, Secret};
use postwire_sender::{
    AttemptErrorKind, AttemptOutcome, DeliveryState, PostChangeKind, SenderConfig, SubscriptionUpdate, TestEvent,
};

const SEC: i64 = 1000;
const MIN: i64 = 60 * SEC;
const HOUR: i64 = 60 * MIN;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_is_one_signed_post_that_verifies_with_postwire_core() {
    let h = Harness::new().await;
    let rx = Receiver::succeeding().await;
    let (sub, secret) = h.subscribe(&rx.url).await;
    let published = h.sender.publish(scheduled("p1")).await.unwrap();
    let event_id = published.event_id().unwrap().to_owned();
    h.idle().await;

    let reqs = rx.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.id(), event_id);
    assert_eq!(r.timestamp(), h.now_secs());
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert!(r.header("user-agent").unwrap().starts_with("postwire-sender/"));
    let event = r.verify(&[secret]).expect("signature verifies with postwire-core");
    assert_eq!(event.id(), event_id);
    assert_eq!(event.event_type(), EventType::PostScheduled);
    assert_eq!(r.json()["workspaceId"], WS);
    assert!(!String::from_utf8_lossy(&r.body).contains("CONTENT-MUST-NOT-LEAK"));
    assert_eq!(r.header("webhook-signature").unwrap().split(' ').count(), 1);

    let page = h.sender.list_deliveries(&sub, None, 10).await.unwrap();
    assert_eq!(page.items.len(), 1);
    let d = &page.items[0];
    assert_eq!(d.state, DeliveryState::Delivered);
    assert_eq!(d.event_id, event_id);
    assert_eq!(d.attempts.len(), 1);
    assert_eq!(
        d.attempts[0].outcome,
        AttemptOutcome::Response {
            status: 200,
            body_prefix: "ok".into()
        }
    );
    let s = h.sender.subscription(&sub).await.unwrap().subscription;
    assert_eq!(s.consecutive_failures, 0);
    assert_eq!(s.last_success_at.map(|t| t.unix_millis()), Some(T0));
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_attempts_follow_the_schedule_exactly_and_the_ninth_failure_is_final() {
    let h = Harness::new().await;
    let rx = Receiver::failing().await;
    let (sub, secret) = h.subscribe(&rx.url).await;
    let id = h
        .sender
        .publish(scheduled("p1"))
        .await
        .unwrap()
        .event_id()
        .unwrap()
        .to_owned();
    h.idle().await;
    assert_eq!(rx.count(), 1);

    let delays = [
        30 * SEC,
        2 * MIN,
        10 * MIN,
        30 * MIN,
        HOUR,
        3 * HOUR,
        6 * HOUR,
        12 * HOUR,
    ];
    let mut expected_ts = vec![h.now_secs()];
    for (i, delay) in delays.iter().enumerate() {
        // One millisecond early: nothing happens.
        h.advance(delay - 1).await;
        assert_eq!(rx.count(), i + 1, "attempt {} must not start before its delay", i + 2);
        h.advance(1).await;
        assert_eq!(rx.count(), i + 2, "attempt {} starts exactly after {delay} ms", i + 2);
        expected_ts.push(h.now_secs());
    }
    // After the ninth failure nothing more is attempted.
    h.advance(48 * HOUR).await;
    assert_eq!(rx.count(), 9);
    let reqs = rx.requests();
    assert!(
        reqs.iter().all(|r| r.id() == id),
        "webhook-id never changes across retries"
    );
    assert_eq!(
        reqs.iter().map(|r| r.timestamp()).collect::<Vec<_>>(),
        expected_ts,
        "each attempt has its own timestamp"
    );
    assert!(reqs.iter().all(|r| r.verify(std::slice::from_ref(&secret)).is_ok()));
    assert!(
        reqs.windows(2).all(|w| w[0].body == w[1].body),
        "the body is identical on every attempt"
    );
    // 22 h 42 min 30 s from the first attempt to the last.
    assert_eq!(expected_ts[8] - expected_ts[0], 22 * 3600 + 42 * 60 + 30);

    let d = &h.sender.list_deliveries(&sub, None, 1).await.unwrap().items[0];
    assert_eq!(d.state, DeliveryState::Failed);
    assert_eq!(d.attempts.len(), 9);
    assert_eq!(d.attempts[0].number, 9, "attempts newest first");
    let s = h.sender.subscription(&sub).await.unwrap().subscription;
    assert_eq!(s.consecutive_failures, 1, "one delivery failed for good");
    assert!(!s.status.is_paused());
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_fails_twice_gets_the_event_on_the_third_attempt() {
    let h = Harness::new().await;
    let rx = Receiver::failing_first(2).await;
    let (sub, _) = h.subscribe(&rx.url).await;
    h.sender.publish(scheduled("p1")).await.unwrap();
    h.idle().await;
    h.advance(30 * SEC).await;
    let s = h.sender.subscription(&sub).await.unwrap().subscription;
    assert_eq!(
        s.consecutive_failures, 0,
        "a failed attempt being retried is not a failed delivery"
    );
    h.advance(2 * MIN).await;
    assert_eq!(rx.count(), 3);
    let d = &h.sender.list_deliveries(&sub, None, 1).await.unwrap().items[0];
    assert_eq!(d.state, DeliveryState::Delivered);
    assert_eq!(d.attempts.iter().map(|a| a.number).collect::<Vec<_>>(), vec![3, 2, 1]);
    assert!(
        matches!(&d.attempts[2].outcome, AttemptOutcome::Response { status: 500, body_prefix } if body_prefix == "down")
    );
    h.advance(24 * HOUR).await;
    assert_eq!(rx.count(), 3);
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_are_failures_and_are_not_followed() {
    let h = Harness::new().await;
    let target = Receiver::succeeding().await;
    let loc = target.url.clone();
    let rx = Receiver::start(move |_, _| Reply::status(302).header("location", &loc)).await;
    let (sub, _) = h.subscribe(&rx.url).await;
    h.sender.publish(scheduled("p1")).await.unwrap();
    h.idle().await;
    assert_eq!(rx.count(), 1);
    assert_eq!(target.count(), 0, "the redirect was not followed");
    let d = &h.sender.list_deliveries(&sub, None, 1).await.unwrap().items[0];
    assert_eq!(d.state, DeliveryState::Pending);
    assert_eq!(d.next_attempt_at.unwrap().unix_millis(), T0 + 30 * SEC);
    for status in [301, 303, 307, 308] {
        let rx = Receiver::start(move |_, _| Reply::status(status).header("location", "http://127.0.0.1:1/")).await;
        let (sub, _) = h.subscribe(&rx.url).await;
        h.sender
            .publish(TestEvent {
                workspace_id: WS.into(),
                subscription_id: Some(sub.clone()),
                message: "m".into(),
            })
            .await
            .unwrap();
        h.idle().await;
        let d = &h.sender.list_deliveries(&sub, None, 1).await.unwrap().items[0];
        assert_eq!(d.state, DeliveryState::Pending, "{status} is a failed attempt");
    }
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_hanging_past_the_timeout_is_a_failed_attempt_and_a_slow_one_within_it_succeeds() {
    let config = SenderConfig {
        attempt_timeout: Duration::from_millis(400),
        ..test_config()
    };
    let h = Harness::with_config(config).await;
    let hanging = Receiver::start(|_, _| Reply::ok().delay(Duration::from_secs(5))).await;
    let slow = Receiver::start(|_, _| Reply::ok().delay(Duration::from_millis(150)).body("slow but fine")).await;
    let (hang_sub, _) = h.subscribe(&hanging.url).await;
    let (slow_sub, _) = h.subscribe(&slow.url).await;
    let started = Instant::now();
    h.sender.publish(scheduled("p1")).await.unwrap();
    h.idle().await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the attempt was cut at the timeout"
    );
    let d = &h.sender.list_deliveries(&hang_sub, None, 1).await.unwrap().items[0];
    assert_eq!(d.state, DeliveryState::Pending);
    assert_eq!(
        d.attempts[0].outcome,
        AttemptOutcome::Error {
            error: AttemptErrorKind::Timeout
        }
    );
    assert!(
        d.attempts[0].duration_ms >= 400 && d.attempts[0].duration_ms < 2000,
        "{}",
        d.attempts[0].duration_ms
    );
    let d = &h.sender.list_deliveries(&slow_sub, None, 1).await.unwrap().items[0];
    assert_eq!(d.state, DeliveryState::Delivered);
    assert!(d.attempts[0].duration_ms >= 150);
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
// Takes 10 s of real time (in parallel with the other tests of this file).
async fn the_default_timeout_is_ten_seconds() {
    let config = SenderConfig {
        attempt_timeout: SenderConfig::default().attempt_timeout,
        ..test_config()
    };
    let h = Harness::with_config(config).await;
    let hanging = Receiver::start(|_, _| Reply::ok().delay(Duration::from_secs(11))).await;
    let just_in_time = Receiver::start(|_, _| Reply::ok().delay(Duration::from_millis(9_000))).await;
    let (a, _) = h.subscribe(&hanging.url).await;
    let (b, _) = h.subscribe(&just_in_time.url).await;
    h.sender.publish(scheduled("p1")).await.unwrap();
    h.idle().await;
    let da = &h.sender.list_deliveries(&a, None, 1).await.unwrap().items[0];
    assert_eq!(
        da.attempts[0].outcome,
        AttemptOutcome::Error {
            error: AttemptErrorKind::Timeout
        }
    );
    assert!((10_000..10_900).contains(&da.attempts[0].duration_ms));
    let db = &h.sender.list_deliveries(&b, None, 1).await.unwrap().items[0];
    assert_eq!(db.state, DeliveryState::Delivered);
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_errors_are_failed_attempts() {
    let h = Harness::new().await;
    // A port nobody listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", closed.local_addr().unwrap());
    drop(closed);
    let (sub, _) = h.subscribe(&url).await;
    h.sender.publish(scheduled("p1")).await.unwrap();
    h.idle().await;
    let d = &h.sender.list_deliveries(&sub, None, 1).await.unwrap().items[0];
    assert_eq!(
        d.attempts[0].outcome,
        AttemptOutcome::Error {
            error: AttemptErrorKind::Connection
        }
    );
    assert_eq!(d.state, DeliveryState::Pending);
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_start_of_a_large_response_body_is_kept() {
    let h = Harness::new().await;
    let rx = Receiver::start(|_, _| Reply::status(500).body("x".repeat(1_000_000))).await;
    let (sub, _) = h.subscribe(&rx.url).await;
    h.sender.publish(scheduled("p1")).await.unwrap();
    h.idle().await;
    let d = &h.sender.list_deliveries(&sub, None, 1).await.unwrap().items[0];
    match &d.attempts[0].outcome {
        AttemptOutcome::Response { status, body_prefix } => {
            assert_eq!(*status, 500);
            assert_eq!(body_prefix.len(), 4096);
        }
        other => panic!("{other:?}"),
    }
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_lengthens_a_delay_up_to_the_next_step_only() {
    let h = Harness::new().await;
    // Asks for 90 s after the first failure (scheduled 30 s, next step 2 min): honoured.
    // Then asks for a day after the second (scheduled 2 min, next step 10 min): capped.
    let rx = Receiver::start(|_, i| match i {
        0 => Reply::status(503).header("retry-after", "90"),
        1 => Reply::status(429).header("retry-after", "86400"),
        _ => Reply::ok(),
    })
    .await;
    let (sub, _) = h.subscribe(&rx.url).await;
    h.sender.publish(scheduled("p1")).await.unwrap();
    h.idle().await;
    h.advance(90 * SEC - 1).await;
    assert_eq!(rx.count(), 1);
    h.advance(1).await;
    assert_eq!(rx.count(), 2);
    h.advance(10 * MIN - 1).await;
    assert_eq!(rx.count(), 2);
    h.advance(1).await;
    assert_eq!(rx.count(), 3);
    let d = &h.sender.list_deliveries(&sub, None, 1).await.unwrap().items[0];
    assert_eq!(d.state, DeliveryState::Delivered);
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_about_one_post_wait_for_the_earlier_one_while_other_posts_go_ahead() {
    let h = Harness::new().await;
    // The first request (p1's first event) fails; everything else succeeds.
    let rx = Receiver::start(|r, _| {
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        // Fail p1's first event on its first attempt (sent at T0) only.
        if v["data"]["post"]["id"] == "p1" && v["type"] == "post.scheduled" && r.timestamp() == T0 / 1000 {
            Reply::status(500)
        } else {
            Reply::ok()
        }
    })
    .await;
    let (_sub, _) = h.subscribe(&rx.url).await;
    let kinds = [
        PostChangeKind::Scheduled,
        PostChangeKind::PublishingStarted,
        PostChangeKind::Published {
            release_url: "https://x.example/1".into(),
            release_id: "1".into(),
        },
    ];
    let mut p1_ids = vec![];
    for kind in kinds.clone() {
        p1_ids.push(
            h.sender
                .publish(change("p1", "acc-1", kind))
                .await
                .unwrap()
                .event_id()
                .unwrap()
                .to_owned(),
        );
    }
    let p2 = h
        .sender
        .publish(change("p2", "acc-1", PostChangeKind::Scheduled))
        .await
        .unwrap();
    h.idle().await;
    let seen: Vec<String> = rx.requests().iter().map(|r| r.id()).collect();
    assert_eq!(
        seen.len(),
        2,
        "p1's first attempt (failed) and p2; p1's later events wait: {seen:?}"
    );
    assert!(seen.contains(&p1_ids[0]) && seen.contains(&p2.event_id().unwrap().to_owned()));
    h.advance(30 * SEC).await;
    let seen: Vec<String> = rx.requests().iter().map(|r| r.id()).collect();
    let p1_seen: Vec<&String> = seen.iter().filter(|id| p1_ids.contains(id)).collect();
    assert_eq!(
        p1_seen,
        vec![&p1_ids[0], &p1_ids[0], &p1_ids[1], &p1_ids[2]],
        "in order after the retry succeeded"
    );
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordering_holds_under_concurrency_and_different_posts_run_in_parallel() {
    let config = SenderConfig {
        max_in_flight: 64,
        max_in_flight_per_subscription: 16,
        ..test_config()
    };
    let h = Harness::with_config(config).await;
    let rx = Receiver::start(|_, _| Reply::ok().delay(Duration::from_millis(40))).await;
    let (_, secret) = h.subscribe(&rx.url).await;
    let posts = 16;
    let per_post = 5;
    let mut changes = vec![];
    for round in 0..per_post {
        for p in 0..posts {
            let mut c = scheduled(&format!("p{p}"));
            c.post.external_id = format!("round-{round}");
            changes.push(c.into());
        }
    }
    let started = Instant::now();
    let published = h.sender.publish_many(changes).await.unwrap();
    assert_eq!(published.len(), posts * per_post);
    h.idle().await;
    let elapsed = started.elapsed();
    let reqs = rx.requests();
    assert_eq!(reqs.len(), posts * per_post);
    assert!(
        reqs.iter().all(|r| r.verify(std::slice::from_ref(&secret)).is_ok()),
        "every delivery verifies"
    );
    // Per post, rounds arrive in publish order, each only after the one before it was
    // answered (40 ms after it arrived): never two of one post in flight at once.
    for p in 0..posts {
        let (rounds, arrivals): (Vec<String>, Vec<Instant>) = reqs
            .iter()
            .filter(|r| r.json()["data"]["post"]["id"] == format!("p{p}"))
            .map(|r| {
                (
                    r.json()["data"]["post"]["externalId"].as_str().unwrap().to_owned(),
                    r.at,
                )
            })
            .unzip();
        let expected: Vec<String> = (0..per_post).map(|r| format!("round-{r}")).collect();
        assert_eq!(rounds, expected, "post p{p}");
        for pair in arrivals.windows(2) {
            let gap = pair[1].duration_since(pair[0]);
            assert!(
                gap >= Duration::from_millis(40),
                "post p{p}: a round started {gap:?} after the one before"
            );
        }
    }
    // 80 deliveries of 40 ms each: 3.2 s one at a time; 16 posts in parallel need ~5 rounds (0.2 s).
    assert!(
        elapsed < Duration::from_millis(2500),
        "different posts went in parallel: {elapsed:?}"
    );
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempts_claimed_ahead_are_not_started_after_shutdown_and_go_out_after_a_restart() {
    let config = SenderConfig {
        max_in_flight_per_subscription: 1,
        ..test_config()
    };
    let mut h = Harness::with_config(config.clone()).await;
    let rx = Receiver::start(|_, _| Reply::ok().delay(Duration::from_millis(300))).await;
    h.subscribe(&rx.url).await;
    // One slot: the first attempt runs, the second is claimed and waits for the slot.
    h.sender
        .publish_many(vec![scheduled("p1").into(), scheduled("p2").into()])
        .await
        .unwrap();
    while rx.count() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    h.dispatcher.take().unwrap().shutdown().await;
    assert_eq!(rx.count(), 1, "the waiting attempt did not start");
    let counts = h.sender.delivery_counts(None).await.unwrap();
    assert_eq!((counts.delivered, counts.pending), (1, 1));
    drop(h.sender);
    let again = h.db.open(config, h.clock.clone()).await;
    let dispatcher = again.start();
    tokio::time::timeout(Duration::from_secs(30), again.wait_idle())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rx.count(), 2);
    assert_eq!(again.delivery_counts(None).await.unwrap().delivered, 2);
    dispatcher.shutdown().await;
}

/// The most requests that arrived within `window` of one another: with every answer
/// taking longer than `window`, more than the requests in flight at once.
fn most_arrivals_within(requests: &[Recorded], window: Duration) -> usize {
    let mut times: Vec<Instant> = requests.iter().map(|r| r.at).collect();
    times.sort();
    times
        .iter()
        .enumerate()
        .map(|(i, t)| times[i..].iter().take_while(|u| u.duration_since(*t) < window).count())
        .max()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_subscription_concurrency_is_bounded() {
    let config = SenderConfig {
        max_in_flight: 64,
        max_in_flight_per_subscription: 4,
        ..test_config()
    };
    let h = Harness::with_config(config).await;
    let rx = Receiver::start(|_, _| Reply::ok().delay(Duration::from_millis(30))).await;
    h.subscribe(&rx.url).await;
    let changes = (0..40).map(|p| scheduled(&format!("p{p}")).into()).collect();
    h.sender.publish_many(changes).await.unwrap();
    h.idle().await;
    let reqs = rx.requests();
    assert_eq!(reqs.len(), 40);
    // Arrival times: no more than 4 requests within any 30 ms window (+ slack).
    let max_window = most_arrivals_within(&reqs, Duration::from_millis(25));
    assert!(
        max_window <= 4,
        "at most 4 in flight to one subscription, saw {max_window} within 25 ms"
    );
    h.shutdown().await;
}

/// Two senders on one PostgreSQL database (whatever the suite's backend: SQLite has one
/// process) share the subscription's limit: never more than 4 requests at once between
/// them, though each claims up to 8 ahead when it is alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_subscription_concurrency_is_bounded_across_two_senders() {
    let config = SenderConfig {
        max_in_flight: 64,
        max_in_flight_per_subscription: 4,
        ..test_config()
    };
    let mut h = Harness::stopped_on(Db::Postgres(postwire_testpg::database()), config.clone()).await;
    let rx = Receiver::start(|_, _| Reply::ok().delay(Duration::from_millis(60))).await;
    h.subscribe(&rx.url).await;
    let changes = (0..300).map(|p| scheduled(&format!("p{p}")).into()).collect();
    h.sender.publish_many(changes).await.unwrap();
    let second = h.db.open(config, h.clock.clone()).await;
    let second_dispatcher = second.start();
    h.dispatcher = Some(h.sender.start());
    tokio::time::timeout(Duration::from_secs(60), async {
        while rx.count() < 300 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("every delivery arrives");
    // Each request is answered 60 ms after it arrives: more than 4 arrivals within
    // 50 ms would be more than 4 in flight.
    let max_window = most_arrivals_within(&rx.requests(), Duration::from_millis(50));
    assert!(
        max_window <= 4,
        "at most 4 in flight to one subscription between two senders, saw {max_window} within 50 ms"
    );
    second_dispatcher.shutdown().await;
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_about_one_post_stay_in_order_when_the_clock_steps_back() {
    let mut h = Harness::stopped(test_config()).await;
    let rx = Receiver::succeeding().await;
    h.subscribe(&rx.url).await;
    // Both wait in the queue, unclaimed: the second is made a minute "earlier".
    let first = h.sender.publish(scheduled("p1")).await.unwrap();
    h.clock.advance_millis(-MIN);
    let mut unscheduled = scheduled("p1");
    unscheduled.kind = PostChangeKind::Unscheduled;
    let second = h.sender.publish(unscheduled).await.unwrap();
    h.dispatcher = Some(h.sender.start());
    h.idle().await;
    h.advance(MIN).await;
    let ids: Vec<String> = rx.requests().iter().map(|r| r.id()).collect();
    assert_eq!(ids, vec![first.event_id().unwrap(), second.event_id().unwrap()]);
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_about_one_account_stay_in_order() {
    let h = Harness::new().await;
    let rx = Receiver::failing_first(1).await;
    h.subscribe(&rx.url).await;
    let first = h.sender.publish(disconnected("acc-1")).await.unwrap();
    let mut re = disconnected("acc-1");
    re.kind = postwire_sender::AccountChangeKind::Reconnected;
    let second = h.sender.publish(re).await.unwrap();
    h.idle().await;
    assert_eq!(rx.count(), 1, "the reconnection waits for the disconnection");
    h.advance(30 * SEC).await;
    let ids: Vec<String> = rx.requests().iter().map(|r| r.id()).collect();
    assert_eq!(
        ids,
        vec![
            first.event_id().unwrap(),
            first.event_id().unwrap(),
            second.event_id().unwrap()
        ]
    );
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_failed_for_good_releases_the_next_one() {
    let h = Harness::new().await;
    let rx = Receiver::start(|r, _| {
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        if v["type"] == "post.scheduled" {
            Reply::status(500)
        } else {
            Reply::ok()
        }
    })
    .await;
    let (sub, _) = h.subscribe(&rx.url).await;
    h.sender.publish(scheduled("p1")).await.unwrap();
    let second = h
        .sender
        .publish(change("p1", "acc-1", PostChangeKind::PublishingStarted))
        .await
        .unwrap();
    h.idle().await;
    for delay in [30 * SEC, 2 * MIN, 10 * MIN, 30 * MIN, HOUR, 3 * HOUR, 6 * HOUR] {
        h.advance(delay).await;
        assert!(!rx.requests().iter().any(|r| r.id() == second.event_id().unwrap()));
    }
    h.advance(12 * HOUR).await;
    assert_eq!(rx.requests().last().unwrap().id(), second.event_id().unwrap());
    let items = h.sender.list_deliveries(&sub, None, 10).await.unwrap().items;
    assert_eq!(
        items.iter().map(|d| d.state).collect::<Vec<_>>(),
        vec![DeliveryState::Delivered, DeliveryState::Failed]
    );
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matching_by_event_type_and_account_and_drafts_emit_nothing() {
    let h = Harness::new().await;
    let all = Receiver::succeeding().await;
    let failed_only = Receiver::succeeding().await;
    let acc2_only = Receiver::succeeding().await;
    h.subscribe(&all.url).await;
    h.subscribe_with(&failed_only.url, vec![EventType::PostFailed], vec![])
        .await;
    h.subscribe_with(&acc2_only.url, vec![], vec!["acc-2".into()]).await;

    let mut draft = scheduled("d1");
    draft.post.is_draft = true;
    let p = h.sender.publish(draft).await.unwrap();
    assert_eq!(
        p,
        postwire_sender::Published::NoEvent(postwire_sender::NoEventReason::Draft)
    );
    let p = h.sender.publish(scheduled("p1")).await.unwrap();
    assert!(matches!(p, postwire_sender::Published::Event { deliveries: 1, .. }));
    let err = postwire_core::EventError::new(postwire_core::FailureCode::RateLimited, "slow down", true).unwrap();
    h.sender
        .publish(change("p2", "acc-2", PostChangeKind::Failed { error: err }))
        .await
        .unwrap();
    h.sender
        .publish(TestEvent {
            workspace_id: WS.into(),
            subscription_id: None,
            message: "hi".into(),
        })
        .await
        .unwrap();
    h.idle().await;
    let types = |r: &Receiver| {
        r.requests()
            .iter()
            .map(|q| q.json()["type"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let mut a = types(&all);
    a.sort();
    assert_eq!(a, vec!["post.failed", "post.scheduled", "webhook.test"]);
    assert_eq!(types(&failed_only), vec!["post.failed"]);
    let mut c = types(&acc2_only);
    c.sort();
    assert_eq!(c, vec!["post.failed", "webhook.test"]);
    let failed = failed_only.requests()[0].json();
    assert_eq!(failed["data"]["post"]["state"], "ERROR");
    assert_eq!(failed["data"]["error"]["code"], "rate_limited");
    h.shutdown().await;
}

/// A notifier that records what it is told, standing in for e-mail to workspace admins.
#[derive(Default)]
struct RecordingNotifier(std::sync::Mutex<Vec<postwire_sender::Notification>>);

impl postwire_sender::Notifier for RecordingNotifier {
    fn notice(&self, n: &postwire_sender::Notification) {
        self.0.lock().unwrap().push(n.clone());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_failed_deliveries_in_a_row_pause_the_subscription_and_notify() {
    let notifier = std::sync::Arc::new(RecordingNotifier::default());
    let h = Harness::with_config(SenderConfig {
        notifier: notifier.clone(),
        ..test_config()
    })
    .await;
    let rx = Receiver::failing().await;
    let (sub, _) = h.subscribe(&rx.url).await;
    let changes = (0..50).map(|p| scheduled(&format!("p{p}")).into()).collect();
    h.sender.publish_many(changes).await.unwrap();
    h.idle().await;
    for delay in [30 * SEC, 2 * MIN, 10 * MIN, 30 * MIN, HOUR, 3 * HOUR, 6 * HOUR] {
        h.advance(delay).await;
    }
    let s = h.sender.subscription(&sub).await.unwrap().subscription;
    assert_eq!(s.consecutive_failures, 0);
    assert!(!s.status.is_paused());
    assert_eq!(rx.count(), 50 * 8);
    h.advance(12 * HOUR).await;
    assert_eq!(rx.count(), 50 * 9);
    let s = h.sender.subscription(&sub).await.unwrap().subscription;
    assert_eq!(s.consecutive_failures, 50);
    assert_eq!(
        s.status,
        postwire_core::SubscriptionStatus::Paused {
            reason: "50 failed deliveries in a row".into()
        }
    );
    let mut notes = h.sender.notifications(WS, 10).await.unwrap();
    notes.reverse();
    let kinds: Vec<&str> = notes.iter().map(|n| n.kind.as_str()).collect();
    assert_eq!(kinds, ["endpoint.failing", "endpoint.pause_warning", "endpoint.paused"]);
    assert!(notes.iter().all(|n| n.subscription_id.as_deref() == Some(sub.as_str())));
    assert_eq!(notes[2].cause, Some(postwire_sender::PauseCause::ConsecutiveFailures));
    assert_eq!(
        notifier.0.lock().unwrap().as_slice(),
        notes.as_slice(),
        "the notifier was told of each notice once, after it was stored"
    );
    // Paused: new events are held, not attempted.
    h.sender.publish(scheduled("later")).await.unwrap();
    h.advance(HOUR).await;
    assert_eq!(rx.count(), 50 * 9);
    assert_eq!(h.sender.delivery_counts(Some(&sub)).await.unwrap().held, 1);
    // Resuming starts a fresh count, and sends the held event.
    let (rec, summary) = h.sender.resume(&sub).await.unwrap();
    assert_eq!(rec.subscription.consecutive_failures, 0);
    assert_eq!(summary.released, 1);
    h.idle().await;
    assert_eq!(rx.count(), 50 * 9 + 1);
    assert!(
        !h.sender
            .subscription(&sub)
            .await
            .unwrap()
            .subscription
            .status
            .is_paused()
    );
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seventy_two_hours_of_failures_without_a_success_pause_the_subscription() {
    let h = Harness::new().await;
    let rx = Receiver::failing().await;
    let (sub, _) = h.subscribe(&rx.url).await;
    // One new event every 12 hours keeps deliveries failing.
    h.sender.publish(scheduled("p0")).await.unwrap();
    h.idle().await;
    let mut elapsed = 0;
    let mut n = 1;
    while elapsed < 72 * HOUR - 30 * MIN {
        h.advance(30 * MIN).await;
        elapsed += 30 * MIN;
        if elapsed % (12 * HOUR) == 0 {
            h.sender.publish(scheduled(&format!("p{n}"))).await.unwrap();
            n += 1;
            h.idle().await;
        }
        let s = h.sender.subscription(&sub).await.unwrap().subscription;
        assert!(!s.status.is_paused(), "not paused after {} h", elapsed / HOUR);
    }
    // The first failed attempt was at T0: a failed attempt at T0 + 72 h pauses.
    h.sender.publish(scheduled("last")).await.unwrap();
    h.clock.set(postwire_core::Timestamp::from_unix_millis(T0 + 72 * HOUR));
    h.sender.publish(scheduled("at-72h")).await.unwrap();
    h.idle().await;
    let s = h.sender.subscription(&sub).await.unwrap().subscription;
    assert_eq!(
        s.status,
        postwire_core::SubscriptionStatus::Paused {
            reason: "72 hours without a successful delivery".into()
        }
    );
    assert!(s.consecutive_failures < 50);
    assert_eq!(
        h.sender.notifications(WS, 10).await.unwrap()[0].cause,
        Some(postwire_sender::PauseCause::FailingFor72Hours)
    );
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_delivers_events_held_in_the_last_7_days_in_order_and_expires_older_ones() {
    let h = Harness::new().await;
    let rx = Receiver::succeeding().await;
    let (sub, _) = h.subscribe(&rx.url).await;
    h.sender.pause(&sub).await.unwrap();
    let paused = h.sender.subscription(&sub).await.unwrap().subscription;
    assert_eq!(
        paused.status,
        postwire_core::SubscriptionStatus::Paused {
            reason: "paused by request".into()
        }
    );

    let old = h.sender.publish(scheduled("p1")).await.unwrap();
    h.advance(HOUR).await;
    assert_eq!(rx.count(), 0, "held while paused");
    // Just over 7 days after `old`: three events about one post and one about another.
    h.clock.advance_millis(7 * 24 * HOUR - HOUR + 1);
    let mut recent = vec![];
    for kind in [
        PostChangeKind::Scheduled,
        PostChangeKind::PublishingStarted,
        PostChangeKind::Unscheduled,
    ] {
        recent.push(
            h.sender
                .publish(change("p1", "acc-1", kind))
                .await
                .unwrap()
                .event_id()
                .unwrap()
                .to_owned(),
        );
    }
    recent.push(
        h.sender
            .publish(scheduled("p2"))
            .await
            .unwrap()
            .event_id()
            .unwrap()
            .to_owned(),
    );
    h.idle().await;
    assert_eq!(rx.count(), 0);
    assert_eq!(h.sender.delivery_counts(Some(&sub)).await.unwrap().held, 5);

    let (record, summary) = h.sender.resume(&sub).await.unwrap();
    assert!(!record.subscription.status.is_paused());
    assert_eq!(
        summary,
        postwire_sender::ResumeSummary {
            released: 4,
            expired: 1
        }
    );
    h.idle().await;
    let ids: Vec<String> = rx.requests().iter().map(|r| r.id()).collect();
    assert_eq!(ids.len(), 4);
    assert!(
        !ids.contains(&old.event_id().unwrap().to_owned()),
        "the 7-day-old event expired"
    );
    let p1: Vec<&String> = ids.iter().filter(|id| recent[..3].contains(id)).collect();
    assert_eq!(
        p1,
        recent[..3].iter().collect::<Vec<_>>(),
        "held events about one post go out in order"
    );
    let items = h.sender.list_deliveries(&sub, None, 10).await.unwrap().items;
    assert_eq!(items.last().unwrap().state, DeliveryState::Expired);
    assert!(items.last().unwrap().attempts.is_empty());
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_by_request_holds_deliveries_waiting_for_a_retry_and_resume_sends_them() {
    let h = Harness::new().await;
    let rx = Receiver::failing_first(1).await;
    let (sub, _) = h.subscribe(&rx.url).await;
    h.sender.publish(scheduled("p1")).await.unwrap();
    h.idle().await;
    assert_eq!(rx.count(), 1);
    h.sender.set_enabled(&sub, false).await.unwrap();
    h.advance(HOUR).await;
    assert_eq!(rx.count(), 1, "the retry is held while paused");
    let rec = h.sender.set_enabled(&sub, true).await.unwrap();
    assert!(!rec.subscription.status.is_paused());
    h.idle().await;
    assert_eq!(rx.count(), 2);
    let d = &h.sender.list_deliveries(&sub, None, 1).await.unwrap().items[0];
    assert_eq!(d.state, DeliveryState::Delivered);
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_rotation_deliveries_carry_both_signatures_for_24_hours_then_only_the_new_one() {
    let h = Harness::new().await;
    let rx = Receiver::succeeding().await;
    let (sub, old) = h.subscribe(&rx.url).await;
    let rotated = h.sender.rotate_secret(&sub).await.unwrap();
    let new = rotated.secret.clone();
    assert_ne!(new, old);
    assert_eq!(rotated.previous_valid_until.unix_millis(), T0 + 24 * HOUR);
    assert_eq!(
        h.sender.subscription(&sub).await.unwrap().previous_secret_valid_until,
        Some(rotated.previous_valid_until)
    );

    let send = |label: &str| {
        let sender = h.sender.clone();
        let label = label.to_owned();
        async move {
            sender
                .publish(TestEvent {
                    workspace_id: WS.into(),
                    subscription_id: None,
                    message: label,
                })
                .await
                .unwrap();
        }
    };
    send("right after").await;
    h.idle().await;
    h.clock.advance_millis(24 * HOUR - 1);
    send("last millisecond of the window").await;
    h.idle().await;
    h.clock.advance_millis(1);
    send("window closed").await;
    h.idle().await;

    let reqs = rx.requests();
    assert_eq!(reqs.len(), 3);
    for r in &reqs[..2] {
        assert_eq!(r.header("webhook-signature").unwrap().split(' ').count(), 2);
        assert!(
            r.verify(std::slice::from_ref(&old)).is_ok(),
            "verifies with the old secret alone"
        );
        assert!(
            r.verify(std::slice::from_ref(&new)).is_ok(),
            "verifies with the new secret alone"
        );
    }
    let last = &reqs[2];
    assert_eq!(last.header("webhook-signature").unwrap().split(' ').count(), 1);
    assert!(last.verify(std::slice::from_ref(&new)).is_ok());
    assert!(last.verify(std::slice::from_ref(&old)).is_err());
    let other = Secret::generate().unwrap();
    assert!(last.verify(&[other]).is_err());
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_address_is_checked_again_at_every_attempt() {
    // A subscription to a loopback receiver, made and published to while the dangerous
    // setting was on (no dispatcher running)...
    let db = Db::new();
    let rx = Receiver::succeeding().await;
    let clock = std::sync::Arc::new(postwire_core::ManualClock::new(
        postwire_core::Timestamp::from_unix_millis(T0),
    ));
    let lax = db.open(test_config(), clock.clone()).await;
    lax.upsert_workspace(postwire_sender::Workspace {
        id: WS.into(),
        name: "w".into(),
    })
    .await
    .unwrap();
    let created = lax
        .create_subscription(postwire_sender::NewSubscription {
            workspace_id: WS.into(),
            name: "n".into(),
            url: format!("https://{}/hook", rx.addr),
            events: vec![],
            integration_ids: vec![],
            created_by_kind: postwire_core::CreatedByKind::Dashboard,
            signing: Default::default(),
        })
        .await
        .unwrap();
    let sub = created.subscription.id;
    // The same receiver by name, so the check happens in the HTTP client's resolver.
    let by_name = lax
        .create_subscription(postwire_sender::NewSubscription {
            workspace_id: WS.into(),
            name: "by name".into(),
            url: format!("https://localhost:{}/hook", rx.addr.port()),
            events: vec![],
            integration_ids: vec![],
            created_by_kind: postwire_core::CreatedByKind::Dashboard,
            signing: Default::default(),
        })
        .await
        .unwrap()
        .subscription
        .id;
    lax.publish(scheduled("p1")).await.unwrap();
    drop(lax);
    // ...is refused at attempt time by a sender without it: nothing reaches loopback.
    let strict = SenderConfig {
        jitter: postwire_sender::schedule::Jitter::None,
        ..SenderConfig::default()
    };
    let sender = db.open(strict, clock).await;
    let dispatcher = sender.start();
    sender.wait_idle().await.unwrap();
    assert_eq!(rx.count(), 0);
    let d = &sender.list_deliveries(&sub, None, 1).await.unwrap().items[0];
    assert_eq!(
        d.attempts[0].outcome,
        AttemptOutcome::Error {
            error: AttemptErrorKind::BlockedAddress
        }
    );
    assert_eq!(d.state, DeliveryState::Pending);
    let d = &sender.list_deliveries(&by_name, None, 1).await.unwrap().items[0];
    assert_eq!(
        d.attempts[0].outcome,
        AttemptOutcome::Error {
            error: AttemptErrorKind::BlockedAddress
        }
    );
    dispatcher.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivery_records_page_newest_first_with_a_cursor() {
    let h = Harness::new().await;
    let rx = Receiver::succeeding().await;
    let (sub, _) = h.subscribe(&rx.url).await;
    let mut ids = vec![];
    for p in 0..7 {
        ids.push(
            h.sender
                .publish(scheduled(&format!("p{p}")))
                .await
                .unwrap()
                .event_id()
                .unwrap()
                .to_owned(),
        );
    }
    h.idle().await;
    let mut seen = vec![];
    let mut cursor = None;
    let mut pages = 0;
    loop {
        // The cursor a page returns is the one the next call takes, as is.
        let page = h.sender.list_deliveries(&sub, cursor, 3).await.unwrap();
        pages += 1;
        seen.extend(page.items.iter().map(|d| d.event_id.clone()));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    ids.reverse();
    assert_eq!(seen, ids);
    let err = "bogus".parse::<postwire_sender::DeliveryCursor>().unwrap_err();
    assert_eq!(err.code().as_str(), "invalid_request");
    let err = h.sender.list_deliveries(&sub, None, 0).await.unwrap_err();
    assert_eq!(err.code().as_str(), "invalid_request");
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_attempts_in_flight_finish_and_records_them() {
    let h = Harness::new().await;
    let rx = Receiver::start(|_, _| Reply::ok().delay(Duration::from_millis(300))).await;
    let (sub, _) = h.subscribe(&rx.url).await;
    h.sender.publish(scheduled("p1")).await.unwrap();
    assert!(rx.wait_for_count(1, Duration::from_secs(5)).await);
    let sender = h.sender.clone();
    h.shutdown().await;
    let d = &sender.list_deliveries(&sub, None, 1).await.unwrap().items[0];
    assert_eq!(
        d.state,
        DeliveryState::Delivered,
        "the attempt in flight finished and was recorded"
    );
    assert_eq!(
        sender.publish(scheduled("p2")).await.unwrap_err().code().as_str(),
        "unavailable"
    );
    assert_eq!(sender.wait_idle().await.unwrap_err().code().as_str(), "unavailable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotation_or_a_new_url_applies_to_the_very_next_attempt() {
    // The store keeps each subscription's URL and signer between claims; both must be
    // fresh right after a change, even when deliveries were made just before it.
    let h = Harness::new().await;
    let first = Receiver::succeeding().await;
    let second = Receiver::succeeding().await;
    let (sub, old) = h.subscribe(&first.url).await;
    h.sender.publish(scheduled("before")).await.unwrap();
    h.idle().await;
    assert_eq!(first.count(), 1);

    let new = h.sender.rotate_secret(&sub).await.unwrap().secret;
    h.sender.publish(scheduled("after-rotation")).await.unwrap();
    h.idle().await;
    let after_rotation = &first.requests()[1];
    assert_eq!(
        after_rotation.header("webhook-signature").unwrap().split(' ').count(),
        2
    );
    assert!(after_rotation.verify(std::slice::from_ref(&new)).is_ok());
    assert!(after_rotation.verify(std::slice::from_ref(&old)).is_ok());

    h.sender
        .update_subscription(
            &sub,
            SubscriptionUpdate {
                url: Some(second.url.clone()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    h.sender.publish(scheduled("after-new-url")).await.unwrap();
    h.idle().await;
    assert_eq!(first.count(), 2, "nothing more goes to the old URL");
    assert_eq!(second.count(), 1);
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hanging_endpoints_that_hold_most_of_the_room_do_not_delay_another() {
    // Seven endpoints hang, each with one request and one attempt claimed ahead: 14 of
    // the dispatcher's 16 claimed, 7 of its 8 request slots busy. A delivery to an eighth
    // subscription still goes out at once, in the slot that is free: holding claims back
    // while most of the room is claimed (which saves claims when every request is slow)
    // must not leave request slots idle while the other endpoints hang.
    let h = Harness::with_config(SenderConfig {
        max_in_flight: 8,
        max_in_flight_per_subscription: 1,
        attempt_timeout: Duration::from_secs(10),
        ..test_config()
    })
    .await;
    let hanging = Receiver::start(|_, _| Reply::ok().delay(Duration::from_secs(4))).await;
    let fast = Receiver::succeeding().await;
    let mut changes = Vec::new();
    for _ in 0..7 {
        let (sub, _) = h.subscribe(&hanging.url).await;
        for i in 0..2 {
            changes.push(
                TestEvent {
                    workspace_id: WS.into(),
                    subscription_id: Some(sub.clone()),
                    message: format!("{i}"),
                }
                .into(),
            );
        }
    }
    h.sender.publish_many(changes).await.unwrap();
    assert!(
        hanging.wait_for_count(7, Duration::from_secs(3)).await,
        "the seven hanging requests started"
    );
    let (fast_sub, _) = h.subscribe(&fast.url).await;
    let published = Instant::now();
    h.sender
        .publish_many(vec![
            TestEvent {
                workspace_id: WS.into(),
                subscription_id: Some(fast_sub),
                message: "x".into(),
            }
            .into(),
        ])
        .await
        .unwrap();
    assert!(
        fast.wait_for_count(1, Duration::from_millis(1500)).await,
        "the other subscription's delivery waited for the hanging requests"
    );
    assert!(published.elapsed() < Duration::from_millis(1500));
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claimed_delivery_whose_lease_could_end_during_its_request_waits_for_the_lease() {
    // One request slot, a lease of 6 s and attempts of up to 5 s. The first delivery's
    // request takes a while (1 s of real time); the second, claimed ahead, waits for
    // the slot, and meanwhile the clock moves 2 s: its request could then end after its
    // lease, when another process may have claimed it (two requests of one delivery at
    // once). It is not started, and goes out once the lease has ended, as its first
    // attempt.
    let h = Harness::with_config(SenderConfig {
        max_in_flight_per_subscription: 1,
        attempt_timeout: Duration::from_secs(5),
        lease: Duration::from_secs(6),
        ..test_config()
    })
    .await;
    let receiver = Receiver::start(|_, n| {
        if n == 0 {
            Reply::ok().delay(Duration::from_secs(1))
        } else {
            Reply::ok()
        }
    })
    .await;
    let (sub, _) = h.subscribe(&receiver.url).await;
    let changes = (0..2)
        .map(|i| {
            TestEvent {
                workspace_id: WS.into(),
                subscription_id: Some(sub.clone()),
                message: format!("{i}"),
            }
            .into()
        })
        .collect();
    h.sender.publish_many(changes).await.unwrap();
    assert!(receiver.wait_for_count(1, Duration::from_secs(3)).await);
    h.clock.advance_millis(2_000);
    h.idle().await;
    assert_eq!(
        receiver.count(),
        1,
        "the second request started with too little of its lease left"
    );
    h.advance(4_000).await;
    assert_eq!(receiver.count(), 2);
    let first = receiver.requests()[0].id();
    let page = h.sender.list_deliveries(&sub, None, 10).await.unwrap();
    let second = page.items.iter().find(|d| d.event_id != first).unwrap();
    assert_eq!(receiver.requests()[1].id(), second.event_id);
    assert_eq!(second.state, DeliveryState::Delivered);
    assert_eq!(second.attempts.len(), 1, "{:?}", second.attempts);
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_backlog_on_one_subscription_does_not_delay_another() {
    // One slow endpoint with a backlog of 1,000 deliveries, one attempt at a time. A
    // delivery to another subscription, published after the whole backlog, still goes
    // out at once: each subscription's queue is claimed on its own.
    let h = Harness::with_config(SenderConfig {
        max_in_flight_per_subscription: 1,
        ..test_config()
    })
    .await;
    let slow = Receiver::start(|_, _| Reply::ok().delay(Duration::from_millis(200))).await;
    let fast = Receiver::succeeding().await;
    let (slow_sub, _) = h.subscribe(&slow.url).await;
    let (fast_sub, _) = h.subscribe(&fast.url).await;
    let to = |sub: &str, n: usize| -> Vec<postwire_sender::DomainChange> {
        (0..n)
            .map(|i| {
                TestEvent {
                    workspace_id: WS.into(),
                    subscription_id: Some(sub.to_owned()),
                    message: format!("{i}"),
                }
                .into()
            })
            .collect()
    };
    h.sender.publish_many(to(&slow_sub, 1_000)).await.unwrap();
    let published = Instant::now();
    h.sender.publish_many(to(&fast_sub, 1)).await.unwrap();
    assert!(
        fast.wait_for_count(1, Duration::from_secs(3)).await,
        "the other subscription's delivery waited behind the backlog"
    );
    assert!(published.elapsed() < Duration::from_secs(3));
    assert!(
        slow.count() < 50,
        "the slow endpoint is still working through its backlog"
    );
    h.shutdown().await;
}
