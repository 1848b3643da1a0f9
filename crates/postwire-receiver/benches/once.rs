//! Handler-free overhead per delivery, over loopback, one delivery at a time:
//!
//! * `store`: the protocol's store calls alone (claim + complete) for each store, beside a
//!   hand-written `SET key 1 NX PX <keep>` on the same Redis;
//! * `layer`: a whole delivery through the axum router in-process (read the body, verify
//!   the signature, parse the typed event, claim, call a handler that returns 204,
//!   complete), beside a hand-written route that verifies and does one `SET NX` itself.
//!
//! Starts its own `redis-server` and PostgreSQL cluster (as the tests do).
//! Run: `cargo bench -p postwire-receiver --features redis,postgres --bench once`
//! (`ONCE_BENCH_N=<deliveries>` per case; default 5000, PostgreSQL a fifth of it).

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::routing::post;
use postwire_core::{Clock, SystemClock, Verifier};
use postwire_receiver::{Claim, ClaimToken, MemoryStore, OnceLayer, PostgresStore, RedisStore, Store};
use tower_service::Service;

fn summary(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    println!(
        "{name:<40} n={:<6} p50={:>8.1} µs  p99={:>8.1} µs  mean={:>8.1} µs",
        samples.len(),
        at(0.50).as_secs_f64() * 1e6,
        at(0.99).as_secs_f64() * 1e6,
        mean.as_secs_f64() * 1e6
    );
}

const KEEP: Duration = Duration::from_secs(25 * 3600);
const LEASE: Duration = Duration::from_secs(30);

async fn store_case<S: Store>(name: &str, store: &S, n: usize) {
    let mut samples = Vec::with_capacity(n);
    for i in 0..n + n / 10 {
        let id = format!("msg_store_{name}_{i}");
        let token = ClaimToken::generate();
        let start = Instant::now();
        let claim = store.claim(&id, &token, LEASE).await.unwrap();
        assert_eq!(claim, Claim::Claimed);
        assert!(store.complete(&id, &token, KEEP).await.unwrap());
        if i >= n / 10 {
            samples.push(start.elapsed()); // the first tenth warms up
        }
    }
    summary(&format!("store {name} (claim+complete)"), samples);
}

async fn set_nx_case(conn: &redis::aio::ConnectionManager, n: usize) {
    let mut conn = conn.clone();
    let mut samples = Vec::with_capacity(n);
    for i in 0..n + n / 10 {
        let key = format!("bench:setnx:{i}");
        let start = Instant::now();
        let set: Option<String> = redis::cmd("SET")
            .arg(&key)
            .arg("1")
            .arg("NX")
            .arg("PX")
            .arg(KEEP.as_millis() as u64)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(set.is_some());
        if i >= n / 10 {
            samples.push(start.elapsed());
        }
    }
    summary("store hand-written SET NX (redis)", samples);
}

fn request(delivery: &common::Delivery) -> Request<Body> {
    Request::post("/webhooks")
        .header("webhook-id", &delivery.id)
        .header("webhook-timestamp", delivery.timestamp.to_string())
        .header("webhook-signature", &delivery.signature)
        .body(Body::from(delivery.body.clone()))
        .unwrap()
}

async fn layer_case(name: &str, mut router: Router, n: usize, expect: StatusCode) {
    let tag: String = name.chars().filter(char::is_ascii_alphanumeric).collect();
    let deliveries: Vec<_> = (0..n + n / 10)
        .map(|i| common::Delivery::new(&format!("msg_layer_{tag}_{i}")))
        .collect();
    let mut samples = Vec::with_capacity(n);
    for (i, delivery) in deliveries.iter().enumerate() {
        let req = request(delivery);
        let start = Instant::now();
        std::future::poll_fn(|cx| Service::<Request<Body>>::poll_ready(&mut router, cx))
            .await
            .unwrap();
        let response = router.call(req).await.unwrap();
        if i >= n / 10 {
            samples.push(start.elapsed());
        }
        assert_eq!(response.status(), expect);
    }
    summary(&format!("layer {name}"), samples);
}

fn with_layer<S: Store>(store: S) -> Router {
    Router::new()
        .route("/webhooks", post(|| async { StatusCode::NO_CONTENT }))
        .route_layer(OnceLayer::new(Verifier::new(common::secret()), store))
}

/// What a team writes by hand: verify, then one SET NX; no lease, no release, no 409.
fn hand_written(conn: redis::aio::ConnectionManager) -> Router {
    async fn receive(
        State((verifier, mut conn)): State<(std::sync::Arc<Verifier>, redis::aio::ConnectionManager)>,
        headers: HeaderMap,
        body: axum::body::Bytes,
    ) -> StatusCode {
        let now = SystemClock.now().unix_time();
        let Ok(event) = verifier.verify_event(&headers, &body, now) else {
            return StatusCode::BAD_REQUEST;
        };
        let set: Result<Option<String>, _> = redis::cmd("SET")
            .arg(format!("hand:{}", event.id()))
            .arg("1")
            .arg("NX")
            .arg("PX")
            .arg(KEEP.as_millis() as u64)
            .query_async(&mut conn)
            .await;
        match set {
            Ok(Some(_)) => StatusCode::NO_CONTENT,
            Ok(None) => StatusCode::OK,
            Err(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
    Router::new()
        .route("/webhooks", post(receive))
        .with_state((std::sync::Arc::new(Verifier::new(common::secret())), conn))
}

fn main() {
    let n: usize = std::env::var("ONCE_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let redis_server = common::RedisServer::start();
        let conn = common::redis_manager(&redis_server.url()).await;
        let db = postwire_testpg::database();
        let pool = common::pg_pool(db.url());
        println!("one delivery at a time over loopback (PostgreSQL: Unix socket); n per case");

        store_case("memory", &MemoryStore::new(), n).await;
        set_nx_case(&conn, n).await;
        store_case("redis", &RedisStore::new(conn.clone()), n).await;
        store_case("postgres", &PostgresStore::new(pool.clone()), n / 5).await;

        layer_case("memory", with_layer(MemoryStore::new()), n, StatusCode::NO_CONTENT).await;
        layer_case(
            "hand-written verify+SET NX (redis)",
            hand_written(conn.clone()),
            n,
            StatusCode::NO_CONTENT,
        )
        .await;
        layer_case(
            "redis",
            with_layer(RedisStore::new(conn.clone()).with_prefix("l:")),
            n,
            StatusCode::NO_CONTENT,
        )
        .await;
        let pg = PostgresStore::new(pool.clone()).with_table("bench_once").unwrap();
        layer_case("postgres", with_layer(pg), n / 5, StatusCode::NO_CONTENT).await;
    });
}
