//! The layer over real HTTP on loopback: its answers (the npm adapters'), and the
//! protocol's cases with a real handler: a slow handler with a retry meanwhile, a failing
//! one, a dropped request, a store that goes away.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::post;
use axum::{Extension, Router};
use common::{Delivery, unique_id};
use postwire_core::{Event, Verifier};
use postwire_receiver::{MemoryStore, OnceLayer, Store};
use serde_json::Value;

/// What the handler does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    Succeed,
    Fail,
    /// Sleeps this long, then fails.
    SlowThenFail(u64),
    /// Sleeps this long, then succeeds.
    SlowThenSucceed(u64),
    /// Never returns.
    Hang,
}

/// The handler under test: counts its runs and follows the plan.
#[derive(Clone)]
struct Probe {
    runs: Arc<AtomicUsize>,
    plan: Arc<std::sync::Mutex<Plan>>,
}

impl Probe {
    fn new(plan: Plan) -> Self {
        Probe {
            runs: Arc::new(AtomicUsize::new(0)),
            plan: Arc::new(std::sync::Mutex::new(plan)),
        }
    }

    fn set(&self, plan: Plan) {
        *self.plan.lock().unwrap() = plan;
    }

    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }

    async fn wait_for_runs(&self, n: usize) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while self.runs() < n {
            assert!(tokio::time::Instant::now() < deadline, "the handler did not start");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    async fn handle(self, event: Event) -> StatusCode {
        assert!(event.id().starts_with("msg_"), "the typed event is in the extensions");
        self.runs.fetch_add(1, Ordering::SeqCst);
        let plan = *self.plan.lock().unwrap();
        match plan {
            Plan::Succeed => StatusCode::NO_CONTENT,
            Plan::Fail => StatusCode::INTERNAL_SERVER_ERROR,
            Plan::SlowThenFail(ms) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                StatusCode::INTERNAL_SERVER_ERROR
            }
            Plan::SlowThenSucceed(ms) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                StatusCode::NO_CONTENT
            }
            Plan::Hang => {
                std::future::pending::<()>().await;
                StatusCode::NO_CONTENT
            }
        }
    }
}

fn app<S: Store>(layer: OnceLayer<S>, probe: &Probe) -> Router {
    let probe = probe.clone();
    Router::new()
        .route(
            "/webhooks",
            post(move |Extension(event): Extension<Event>| probe.clone().handle(event)),
        )
        .route_layer(layer)
}

fn layer<S: Store>(store: S) -> OnceLayer<S> {
    OnceLayer::new(Verifier::new(common::secret()), store)
}

async fn start<S: Store>(layer: OnceLayer<S>, probe: &Probe) -> String {
    let addr = common::serve(app(layer, probe)).await;
    format!("http://{addr}/webhooks")
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_are_the_npm_adapters() {
    let probe = Probe::new(Plan::Succeed);
    let url = start(layer(MemoryStore::new()).max_body_bytes(4096), &probe).await;
    let client = reqwest::Client::new();
    let delivery = Delivery::new(&unique_id("answers"));

    let (status, _, body) = delivery.post(&client, &url).await;
    assert_eq!((status, body.as_str()), (204, ""));
    let (status, _, body) = delivery.post(&client, &url).await;
    assert_eq!(status, 200);
    assert_eq!(json(&body), serde_json::json!({ "duplicate": true }));
    assert_eq!(probe.runs(), 1);

    // A bad signature, a missing header, an old timestamp: 400 {code, message}.
    let mut forged = Delivery::new(&unique_id("answers"));
    forged.body = forged.body.replace("hi", "ho");
    let (status, _, body) = forged.post(&client, &url).await;
    assert_eq!((status, json(&body)["code"].as_str()), (400, Some("invalid_signature")));
    let response = client.post(&url).body("{}").send().await.unwrap();
    assert_eq!(response.status(), 400);
    assert_eq!(json(&response.text().await.unwrap())["code"], "missing_header");
    let mut old = Delivery::new(&unique_id("answers"));
    old.timestamp -= 3600;
    let (status, _, body) = old.post(&client, &url).await;
    assert_eq!((status, json(&body)["code"].as_str()), (400, Some("timestamp_too_old")));

    // A type this version does not know, signed: acknowledged and ignored.
    let id = unique_id("answers");
    let unknown = Delivery::signed(
        &id,
        format!(
            r#"{{"id":"{id}","type":"post.archived","createdAt":"2026-01-01T00:00:00.000Z","workspaceId":"ws","data":{{}}}}"#
        ),
    );
    let (status, _, body) = unknown.post(&client, &url).await;
    assert_eq!(status, 202);
    assert_eq!(json(&body), serde_json::json!({ "ignored": "post.archived" }));

    // Over the body limit: 413.
    let big = Delivery::signed(&unique_id("answers"), "x".repeat(5000));
    let (status, _, body) = big.post(&client, &url).await;
    assert_eq!((status, json(&body)["code"].as_str()), (413, Some("payload_too_large")));

    assert_eq!(probe.runs(), 1, "no refused delivery reached the handler");
}

/// A handler slower than the sender's timeout and a retry meanwhile: 409 (never 2xx);
/// the handler fails: the next retry runs it; it succeeds: 200 duplicate.
async fn slow_handler_then_failure_then_success<S: Store>(store: S) {
    let probe = Probe::new(Plan::SlowThenFail(1500));
    let url = start(layer(store), &probe).await;
    let client = reqwest::Client::new();
    let delivery = Delivery::new(&unique_id("slow"));

    let first = tokio::spawn({
        let (client, url, delivery) = (client.clone(), url.clone(), delivery.clone());
        async move { delivery.post(&client, &url).await }
    });
    probe.wait_for_runs(1).await;
    let (status, retry_after, body) = delivery.post(&client, &url).await;
    assert_eq!((status, json(&body)["code"].as_str()), (409, Some("in_progress")));
    let retry_after: u64 = retry_after.expect("a 409 has retry-after").parse().unwrap();
    assert!((1..=30).contains(&retry_after), "retry-after {retry_after}");

    let (status, _, body) = first.await.unwrap();
    assert_eq!(status, 500, "the handler's own answer: {body}");
    probe.set(Plan::Succeed);
    let (status, _, _) = delivery.post(&client, &url).await;
    assert_eq!(status, 204, "the retry after a failure runs the handler");
    let (status, _, body) = delivery.post(&client, &url).await;
    assert_eq!((status, json(&body)), (200, serde_json::json!({ "duplicate": true })));
    assert_eq!(probe.runs(), 2);
}

/// A failing handler releases the id every time; the sender's retries run it.
async fn failures_release_until_success<S: Store>(store: S) {
    let probe = Probe::new(Plan::Fail);
    let url = start(layer(store), &probe).await;
    let client = reqwest::Client::new();
    let delivery = Delivery::new(&unique_id("fail"));
    for _ in 0..3 {
        assert_eq!(delivery.post(&client, &url).await.0, 500);
    }
    probe.set(Plan::Succeed);
    assert_eq!(delivery.post(&client, &url).await.0, 204);
    assert_eq!(delivery.post(&client, &url).await.0, 200);
    assert_eq!(probe.runs(), 4);
}

/// A request dropped mid-handler (the sender timed out and closed the connection)
/// releases its claim: the next copy runs the handler at once, not after the lease.
async fn a_dropped_request_releases_its_claim<S: Store>(store: S) {
    let probe = Probe::new(Plan::Hang);
    let url = start(layer(store), &probe).await;
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let delivery = Delivery::new(&unique_id("dropped"));
    let (sent, _) = tokio::join!(
        impatient
            .post(&url)
            .header("webhook-id", &delivery.id)
            .header("webhook-timestamp", delivery.timestamp.to_string())
            .header("webhook-signature", &delivery.signature)
            .body(delivery.body.clone())
            .send(),
        probe.wait_for_runs(1)
    );
    assert!(sent.is_err(), "the handler hangs; the client gave up");
    probe.set(Plan::Succeed);
    let client = reqwest::Client::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let (status, _, _) = delivery.post(&client, &url).await;
        if status == 204 {
            break;
        }
        assert_eq!(status, 409);
        assert!(tokio::time::Instant::now() < deadline, "the claim was not released");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(probe.runs(), 2);
}

/// A handler that runs three leases long keeps its claim (the layer renews it): it runs
/// once, every copy meanwhile is answered 409, and the copy after it 200 duplicate.
async fn a_handler_three_leases_long_runs_once<S: Store>(store: S) {
    let lease = Duration::from_millis(500);
    let probe = Probe::new(Plan::SlowThenSucceed(3 * lease.as_millis() as u64));
    let layer = layer(store).lease(lease).store_timeout(Duration::from_millis(150));
    let url = start(layer.clone(), &probe).await;
    let client = reqwest::Client::new();
    let delivery = Delivery::new(&unique_id("renewed"));

    let first = tokio::spawn({
        let (client, url, delivery) = (client.clone(), url.clone(), delivery.clone());
        async move { delivery.post(&client, &url).await }
    });
    probe.wait_for_runs(1).await;
    let mut copies = 0;
    while !first.is_finished() {
        let (status, _, body) = delivery.post(&client, &url).await;
        if first.is_finished() && status == 200 {
            break; // the first finished while this copy was on its way
        }
        assert_eq!(status, 409, "a copy while the first runs: {body}");
        copies += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(copies >= 5, "copies were sent all along the three leases ({copies})");
    assert_eq!(first.await.unwrap().0, 204);
    let (status, _, body) = delivery.post(&client, &url).await;
    assert_eq!((status, json(&body)), (200, serde_json::json!({ "duplicate": true })));
    assert_eq!(probe.runs(), 1);
    assert_eq!(layer.metrics().leases_lost(), 0);
    assert_eq!(layer.metrics().completes_refused(), 0);
}

mod memory {
    use super::*;
    use postwire_core::{ManualClock, Timestamp};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_handler_three_leases_long_runs_once() {
        super::a_handler_three_leases_long_runs_once(MemoryStore::new()).await
    }

    /// A memory store full of live claims takes no new id: 503 with retry-after, the
    /// handler not run; the claims it holds are not dropped for the newcomer.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn full_of_live_claims_answers_503() {
        let probe = Probe::new(Plan::Hang);
        let url = start(layer(MemoryStore::new().with_capacity(1)), &probe).await;
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(3))
            .build()
            .unwrap();
        let held = Delivery::new(&unique_id("full"));
        let hanging = tokio::spawn({
            let (client, url, held) = (client.clone(), url.clone(), held.clone());
            async move { held.post(&client, &url).await }
        });
        probe.wait_for_runs(1).await;
        let (status, retry_after, body) = Delivery::new(&unique_id("full")).post(&client, &url).await;
        assert_eq!((status, json(&body)["code"].as_str()), (503, Some("store_unavailable")));
        assert_eq!(retry_after.as_deref(), Some("5"));
        let (status, _, _) = held.post(&client, &url).await;
        assert_eq!(status, 409, "the live claim is still held");
        assert_eq!(probe.runs(), 1);
        hanging.abort();
    }

    /// The handler returns after its lease ran out and another copy took the id over
    /// (here the store's clock jumps past the lease, before the first renewal): complete
    /// answers false, which the layer counts and logs; the answer is still the handler's.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_complete_refused_after_a_takeover_is_counted() {
        let clock = Arc::new(ManualClock::new(Timestamp::from_unix_millis(1_800_000_000_000)));
        let store = Arc::new(MemoryStore::with_clock(clock.clone()));
        let probe = Probe::new(Plan::SlowThenSucceed(800));
        let layer = layer(Arc::clone(&store)).lease(Duration::from_secs(30));
        let url = start(layer.clone(), &probe).await;
        let client = reqwest::Client::new();
        let delivery = Delivery::new(&unique_id("lost"));
        let first = tokio::spawn({
            let (client, url, delivery) = (client.clone(), url.clone(), delivery.clone());
            async move { delivery.post(&client, &url).await }
        });
        probe.wait_for_runs(1).await;
        clock.advance_millis(31_000);
        let other = postwire_receiver::ClaimToken::generate();
        assert_eq!(
            store
                .claim(&delivery.id, &other, Duration::from_secs(30))
                .await
                .unwrap(),
            postwire_receiver::Claim::Claimed
        );
        assert_eq!(first.await.unwrap().0, 204);
        assert_eq!(layer.metrics().completes_refused(), 1);
        assert!(
            store
                .complete(&delivery.id, &other, Duration::from_secs(60))
                .await
                .unwrap()
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slow_handler_then_failure_then_success() {
        super::slow_handler_then_failure_then_success(MemoryStore::new()).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn failures_release_until_success() {
        super::failures_release_until_success(MemoryStore::new()).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dropped_request_releases_its_claim() {
        super::a_dropped_request_releases_its_claim(MemoryStore::new()).await
    }
}

#[cfg(feature = "redis")]
mod redis_store {
    use super::*;
    use postwire_receiver::RedisStore;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_handler_three_leases_long_runs_once() {
        let server = common::RedisServer::start();
        let store = RedisStore::new(common::redis_manager(&server.url()).await);
        super::a_handler_three_leases_long_runs_once(store).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slow_handler_then_failure_then_success() {
        let server = common::RedisServer::start();
        let store = RedisStore::new(common::redis_manager(&server.url()).await);
        super::slow_handler_then_failure_then_success(store).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn failures_release_until_success() {
        let server = common::RedisServer::start();
        let store = RedisStore::new(common::redis_manager(&server.url()).await);
        super::failures_release_until_success(store).await
    }

    /// Redis stopped mid-test: 503 with retry-after, the handler not run, nothing marked
    /// done; started again: the retries run the handler once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn store_outage_answers_503_and_runs_nothing() {
        let mut server = common::RedisServer::start();
        let store = RedisStore::new(common::redis_manager(&server.url()).await);
        let probe = Probe::new(Plan::Succeed);
        let url = start(layer(store).store_timeout(Duration::from_secs(2)), &probe).await;
        let client = reqwest::Client::new();
        let done_before = Delivery::new(&unique_id("outage"));
        assert_eq!(done_before.post(&client, &url).await.0, 204);

        server.stop();
        let delivery = Delivery::new(&unique_id("outage"));
        for _ in 0..3 {
            let (status, retry_after, body) = delivery.post(&client, &url).await;
            assert_eq!((status, json(&body)["code"].as_str()), (503, Some("store_unavailable")));
            assert_eq!(retry_after.as_deref(), Some("5"));
        }
        assert_eq!(probe.runs(), 1, "nothing runs without the claim");

        server.start_again();
        delivery
            .post_until_handled(&client, &url, &[503], Duration::from_secs(15), "after the restart")
            .await;
        assert_eq!(delivery.post(&client, &url).await.0, 200);
        assert_eq!(probe.runs(), 2);
    }
}

#[cfg(feature = "redis")]
mod redis_hanging {
    use super::*;
    use postwire_receiver::RedisStore;

    /// Redis frozen (SIGSTOP) mid-test: each copy is answered 503 after `store_timeout`,
    /// the handler not run. A claim that timed out may still land when Redis thaws: the
    /// id is then held until that lease ends (409 meanwhile), and the retry after it runs.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_store_that_does_not_answer_is_a_503_after_the_timeout() {
        let server = common::RedisServer::start();
        let store = RedisStore::new(common::redis_manager(&server.url()).await);
        let probe = Probe::new(Plan::Succeed);
        let layer = layer(store)
            .store_timeout(Duration::from_millis(300))
            .lease(Duration::from_millis(1500));
        let url = start(layer, &probe).await;
        let client = reqwest::Client::new();
        let delivery = Delivery::new(&unique_id("frozen"));

        server.pause();
        let started = std::time::Instant::now();
        let (status, retry_after, body) = delivery.post(&client, &url).await;
        let took = started.elapsed();
        server.resume();
        assert_eq!((status, json(&body)["code"].as_str()), (503, Some("store_unavailable")));
        assert_eq!(retry_after.as_deref(), Some("5"));
        assert!(
            took < Duration::from_secs(3),
            "answered after {took:?}, not the 300 ms timeout"
        );
        assert_eq!(probe.runs(), 0, "nothing runs without the claim");

        delivery
            .post_until_handled(&client, &url, &[409, 503], Duration::from_secs(10), "after the thaw")
            .await;
        assert_eq!(delivery.post(&client, &url).await.0, 200);
        assert_eq!(probe.runs(), 1);
    }
}

#[cfg(feature = "postgres")]
mod postgres_store {
    use super::*;
    use postwire_receiver::PostgresStore;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_handler_three_leases_long_runs_once() {
        let db = postwire_testpg::database();
        super::a_handler_three_leases_long_runs_once(PostgresStore::new(common::pg_pool(db.url()))).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slow_handler_then_failure_then_success() {
        let db = postwire_testpg::database();
        super::slow_handler_then_failure_then_success(PostgresStore::new(common::pg_pool(db.url()))).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn failures_release_until_success() {
        let db = postwire_testpg::database();
        super::failures_release_until_success(PostgresStore::new(common::pg_pool(db.url()))).await
    }

    /// PostgreSQL stopped mid-test: 503, the handler not run, nothing marked done;
    /// started again: the retries run the handler once (the rows survived the restart).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn store_outage_answers_503_and_runs_nothing() {
        let cluster = postwire_testpg::Cluster::start().unwrap();
        cluster.create_database("once").unwrap();
        let pool = common::pg_pool(&cluster.url("once"));
        let probe = Probe::new(Plan::Succeed);
        let layer = layer(PostgresStore::new(pool)).store_timeout(Duration::from_secs(2));
        let url = start(layer, &probe).await;
        let client = reqwest::Client::new();
        let done_before = Delivery::new(&unique_id("outage"));
        assert_eq!(done_before.post(&client, &url).await.0, 204);

        cluster.stop_server().unwrap();
        let delivery = Delivery::new(&unique_id("outage"));
        for _ in 0..3 {
            let (status, retry_after, body) = delivery.post(&client, &url).await;
            assert_eq!((status, json(&body)["code"].as_str()), (503, Some("store_unavailable")));
            assert_eq!(retry_after.as_deref(), Some("5"));
        }
        assert_eq!(probe.runs(), 1, "nothing runs without the claim");

        cluster.start_server().unwrap();
        delivery
            .post_until_handled(&client, &url, &[503], Duration::from_secs(15), "after the restart")
            .await;
        assert_eq!(delivery.post(&client, &url).await.0, 200);
        assert_eq!(
            done_before.post(&client, &url).await.0,
            200,
            "done before the outage, done after"
        );
        assert_eq!(probe.runs(), 2);
    }
}
