//! Handler-free overhead per delivery, over loopback, one delivery at a time:
//!
//! * `store`: the protocol's store calls alone (claim + complete) for each store, beside a
//!   hand-written `SET key 1 NX PX <keep>` on the same Redis;
//! * `layer`: a whole delivery through the axum router in-process (read the body, verify
//!   the signature, parse the typed event, claim, call a handler that returns 204,
//!   complete), beside a hand-written route that verifies and does one `SET NX` itself.
//!
//! * `expiry`: `ONCE_BENCH_EXPIRY_N` done ids (default 100 000) kept 2 s, then what is
//!   left of them once expired: the memory store's size after a claim, Redis's key count
//!   and memory, the PostgreSQL table's rows after the claims of new ids swept them.
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

async fn pg_rows(client: &deadpool_postgres::Object) -> i64 {
    client
        .query_one("SELECT count(*) FROM exp_once", &[])
        .await
        .unwrap()
        .get::<_, i64>(0)
}

/// Marks `n` ids done with a short keep, 16 at a time.
async fn fill<S: Store + Clone>(store: &S, prefix: &str, n: usize, keep: Duration) {
    let mut tasks = Vec::new();
    for t in 0..16 {
        let store = store.clone();
        let prefix = prefix.to_owned();
        tasks.push(tokio::spawn(async move {
            for i in (t..n).step_by(16) {
                let id = format!("{prefix}{i}");
                let token = ClaimToken::generate();
                store.claim(&id, &token, LEASE).await.unwrap();
                store.complete(&id, &token, keep).await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}

async fn redis_info(conn: &redis::aio::ConnectionManager) -> (u64, String) {
    let mut conn = conn.clone();
    let keys: u64 = redis::cmd("DBSIZE").query_async(&mut conn).await.unwrap();
    let info: String = redis::cmd("INFO").arg("memory").query_async(&mut conn).await.unwrap();
    let used = info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory_human:"))
        .unwrap_or("?")
        .trim()
        .to_owned();
    (keys, used)
}

async fn expiry(conn: &redis::aio::ConnectionManager, pool: &deadpool_postgres::Pool, n: usize) {
    const KEEP_SHORT: Duration = Duration::from_secs(5);
    println!("expiry: {n} done ids kept {} s", KEEP_SHORT.as_secs());

    let memory = MemoryStore::new().with_capacity(n);
    fill(&memory, "msg_exp_", n, KEEP_SHORT).await;
    let full = memory.len();
    tokio::time::sleep(KEEP_SHORT + Duration::from_millis(100)).await;
    memory
        .claim("msg_exp_new", &ClaimToken::generate(), LEASE)
        .await
        .unwrap();
    println!("  memory: {full} ids held, {} after expiry and one claim", memory.len());

    let (before, before_mem) = redis_info(conn).await;
    let started = Instant::now();
    fill(
        &RedisStore::new(conn.clone()).with_prefix("exp:"),
        "msg_exp_",
        n,
        KEEP_SHORT,
    )
    .await;
    let filled = started.elapsed();
    let (full, full_mem) = redis_info(conn).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    tokio::time::sleep(KEEP_SHORT).await;
    let (mut left, mut left_mem) = redis_info(conn).await;
    while left > before && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(250)).await;
        (left, left_mem) = redis_info(conn).await;
    }
    println!(
        "  redis: {before} keys ({before_mem}) of the cases above; {full} ({full_mem}) when the fill ended ({:.1} s; the first ids expired meanwhile); {left} ({left_mem}) {:.1} s after the last keep ran out",
        filled.as_secs_f64(),
        (Instant::now() - started - filled - KEEP_SHORT).as_secs_f64().max(0.0)
    );

    let pg = PostgresStore::new(pool.clone()).with_table("exp_once").unwrap();
    let started = Instant::now();
    fill(&pg, "msg_exp_", n, KEEP_SHORT).await;
    let filled = started.elapsed();
    let client = pool.get().await.unwrap();
    let full = pg_rows(&client).await;
    tokio::time::sleep(KEEP_SHORT + Duration::from_millis(100)).await;
    // New deliveries: every 100th claim sweeps up to 1000 expired rows beside it.
    let fresh = n / 10 + 100;
    fill(&pg, "msg_exp_fresh_", fresh, Duration::from_secs(3600)).await;
    tokio::time::sleep(Duration::from_millis(500)).await; // the last sweeps' tasks
    println!(
        "  postgres: {full} rows when the fill ended ({:.1} s; expired rows swept meanwhile); after the keep and {fresh} new ids (kept 1 h): {} rows",
        filled.as_secs_f64(),
        pg_rows(&client).await
    );
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

        let expiry_n = std::env::var("ONCE_BENCH_EXPIRY_N")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(100_000);
        expiry(&conn, &pool, expiry_n).await;
    });
}
