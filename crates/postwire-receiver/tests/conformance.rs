//! The store conformance suite: the same tests against every store (memory; Redis and
//! PostgreSQL, each a throwaway server, with features `redis` and `postgres`), so they
//! keep the protocol alike. Your own `Store` should pass it too.
//!
//! Time: the memory store runs on a `ManualClock`; Redis and PostgreSQL expire by their
//! own clocks, so their tests wait out short leases (a few hundred ms).

mod common;

use std::sync::Arc;
use std::time::Duration;

use postwire_core::{ManualClock, Timestamp};
use postwire_receiver::{Claim, ClaimToken, MemoryStore, Store};

/// A store under test, and how to let time pass for it.
struct Harness<S> {
    store: Arc<S>,
    clock: Option<Arc<ManualClock>>,
    _guard: Box<dyn std::any::Any + Send>,
}

impl<S: Store> Harness<S> {
    async fn wait(&self, ms: u64) {
        match &self.clock {
            Some(clock) => clock.advance_millis(ms as i64),
            None => tokio::time::sleep(Duration::from_millis(ms)).await,
        }
    }
}

fn memory() -> Harness<MemoryStore> {
    let clock = Arc::new(ManualClock::new(Timestamp::from_unix_millis(1_800_000_000_000)));
    Harness {
        store: Arc::new(MemoryStore::with_clock(clock.clone())),
        clock: Some(clock),
        _guard: Box::new(()),
    }
}

#[cfg(feature = "redis")]
async fn redis() -> Harness<postwire_receiver::RedisStore<::redis::aio::ConnectionManager>> {
    let server = common::RedisServer::start();
    let conn = common::redis_manager(&server.url()).await;
    Harness {
        store: Arc::new(postwire_receiver::RedisStore::new(conn)),
        clock: None,
        _guard: Box::new(server),
    }
}

#[cfg(feature = "postgres")]
async fn postgres() -> Harness<postwire_receiver::PostgresStore> {
    let db = postwire_testpg::database();
    let pool = common::pg_pool(db.url());
    Harness {
        store: Arc::new(postwire_receiver::PostgresStore::new(pool)),
        clock: None,
        _guard: Box::new(db),
    }
}

fn token() -> ClaimToken {
    ClaimToken::generate()
}

const LEASE: Duration = Duration::from_millis(400);
const KEEP: Duration = Duration::from_millis(1000);
const LONG: Duration = Duration::from_secs(60);

async fn claimed_then_in_flight_then_done<S: Store>(h: Harness<S>) {
    let (a, b) = (token(), token());
    assert_eq!(h.store.claim("msg_1", &a, LONG).await.unwrap(), Claim::Claimed);
    match h.store.claim("msg_1", &b, LONG).await.unwrap() {
        Claim::InFlight { retry_after } => {
            assert!(retry_after > Duration::ZERO && retry_after <= LONG, "{retry_after:?}")
        }
        other => panic!("a live claim must answer InFlight, got {other:?}"),
    }
    assert!(h.store.complete("msg_1", &a, LONG).await.unwrap());
    assert_eq!(h.store.claim("msg_1", &b, LONG).await.unwrap(), Claim::Done);
    // A done id cannot be released nor completed by another token.
    assert!(!h.store.release("msg_1", &b).await.unwrap());
    assert!(!h.store.complete("msg_1", &b, LONG).await.unwrap());
    assert_eq!(h.store.claim("msg_1", &token(), LONG).await.unwrap(), Claim::Done);
}

async fn release_lets_the_next_copy_claim<S: Store>(h: Harness<S>) {
    let (a, b) = (token(), token());
    assert_eq!(h.store.claim("msg_r", &a, LONG).await.unwrap(), Claim::Claimed);
    assert!(h.store.release("msg_r", &a).await.unwrap());
    assert!(!h.store.release("msg_r", &a).await.unwrap(), "released twice");
    assert_eq!(h.store.claim("msg_r", &b, LONG).await.unwrap(), Claim::Claimed);
}

async fn only_the_holder_releases<S: Store>(h: Harness<S>) {
    let (a, b) = (token(), token());
    assert_eq!(h.store.claim("msg_h", &a, LONG).await.unwrap(), Claim::Claimed);
    assert!(!h.store.release("msg_h", &b).await.unwrap());
    assert!(!h.store.complete("msg_h", &b, LONG).await.unwrap());
    assert!(matches!(
        h.store.claim("msg_h", &token(), LONG).await.unwrap(),
        Claim::InFlight { .. }
    ));
}

async fn an_expired_lease_is_taken_over<S: Store>(h: Harness<S>) {
    let (a, b) = (token(), token());
    assert_eq!(h.store.claim("msg_e", &a, LEASE).await.unwrap(), Claim::Claimed);
    h.wait(LEASE.as_millis() as u64 + 200).await;
    assert_eq!(h.store.claim("msg_e", &b, LONG).await.unwrap(), Claim::Claimed);
    // The first holder, back from the dead, cannot undo the second's claim.
    assert!(!h.store.complete("msg_e", &a, LONG).await.unwrap());
    assert!(!h.store.release("msg_e", &a).await.unwrap());
    assert!(h.store.complete("msg_e", &b, LONG).await.unwrap());
    assert_eq!(h.store.claim("msg_e", &a, LONG).await.unwrap(), Claim::Done);
}

async fn complete_after_the_lease_with_no_other_claim<S: Store>(h: Harness<S>) {
    let a = token();
    assert_eq!(h.store.claim("msg_c", &a, LEASE).await.unwrap(), Claim::Claimed);
    h.wait(LEASE.as_millis() as u64 + 200).await;
    // The work was done: recording it is right, nobody else holds the id.
    assert!(h.store.complete("msg_c", &a, LONG).await.unwrap());
    assert_eq!(h.store.claim("msg_c", &token(), LONG).await.unwrap(), Claim::Done);
}

async fn done_ids_expire_after_keep<S: Store>(h: Harness<S>) {
    let a = token();
    assert_eq!(h.store.claim("msg_k", &a, LONG).await.unwrap(), Claim::Claimed);
    assert!(h.store.complete("msg_k", &a, KEEP).await.unwrap());
    assert_eq!(h.store.claim("msg_k", &token(), LONG).await.unwrap(), Claim::Done);
    h.wait(KEEP.as_millis() as u64 + 200).await;
    assert_eq!(h.store.claim("msg_k", &token(), LONG).await.unwrap(), Claim::Claimed);
}

async fn fifty_concurrent_claims_one_winner<S: Store>(h: Harness<S>) {
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let store = Arc::clone(&h.store);
        tasks.push(tokio::spawn(async move {
            store.claim("msg_50", &token(), LONG).await.unwrap()
        }));
    }
    let mut claimed = 0;
    for task in tasks {
        match task.await.unwrap() {
            Claim::Claimed => claimed += 1,
            Claim::InFlight { .. } => {}
            Claim::Done => panic!("nothing completed the id"),
        }
    }
    assert_eq!(claimed, 1);
}

async fn ids_are_independent<S: Store>(h: Harness<S>) {
    let a = token();
    assert_eq!(h.store.claim("msg_x", &a, LONG).await.unwrap(), Claim::Claimed);
    assert!(h.store.complete("msg_x", &a, LONG).await.unwrap());
    assert_eq!(h.store.claim("msg_y", &token(), LONG).await.unwrap(), Claim::Claimed);
    // Ids are taken as they are: unusual characters are not special.
    let odd = "msg_\u{e9}:*?[]%'\"";
    assert_eq!(h.store.claim(odd, &token(), LONG).await.unwrap(), Claim::Claimed);
    assert!(matches!(
        h.store.claim(odd, &token(), LONG).await.unwrap(),
        Claim::InFlight { .. }
    ));
}

/// Runs each named test against every store: `memory::<name>`, `redis::<name>`, `postgres::<name>`.
macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::memory()).await
                }
            )*
        }
        #[cfg(feature = "redis")]
        mod redis {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::redis().await).await
                }
            )*
        }
        #[cfg(feature = "postgres")]
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::postgres().await).await
                }
            )*
        }
    };
}

conformance!(
    claimed_then_in_flight_then_done,
    release_lets_the_next_copy_claim,
    only_the_holder_releases,
    an_expired_lease_is_taken_over,
    complete_after_the_lease_with_no_other_claim,
    done_ids_expire_after_keep,
    fifty_concurrent_claims_one_winner,
    ids_are_independent,
);

#[test]
fn memory_store_is_bounded_by_capacity() {
    let clock = Arc::new(ManualClock::new(Timestamp::from_unix_millis(0)));
    let store = MemoryStore::with_clock(clock.clone()).with_capacity(3);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(async {
        for i in 0..10 {
            let t = token();
            store.claim(&format!("m{i}"), &t, LONG).await.unwrap();
            store.complete(&format!("m{i}"), &t, LONG).await.unwrap();
        }
        assert_eq!(store.len(), 3);
        clock.advance_millis(61_000);
        store.claim("fresh", &token(), LONG).await.unwrap();
        assert_eq!(store.len(), 1, "expired ids are swept on claim");
    });
}

/// The npm package's `postwire/stores/redis` reads and writes the same keys: a claim is
/// `c:<token>`, a done mark `d`, under `postwire:once:<id>`.
#[cfg(feature = "redis")]
#[tokio::test]
async fn redis_layout_is_the_npm_stores() {
    let h = redis().await;
    let mut conn = common::redis_manager(&format!("redis://127.0.0.1:{}/", {
        let any: &dyn std::any::Any = h._guard.as_ref();
        any.downcast_ref::<common::RedisServer>().unwrap().port
    }))
    .await;
    let a = token();
    assert_eq!(h.store.claim("msg_l", &a, LONG).await.unwrap(), Claim::Claimed);
    let raw: String = ::redis::cmd("GET")
        .arg("postwire:once:msg_l")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(raw, format!("c:{}", a.as_str()));
    assert!(h.store.complete("msg_l", &a, LONG).await.unwrap());
    let raw: String = ::redis::cmd("GET")
        .arg("postwire:once:msg_l")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(raw, "d");
    // Written by another implementation: a done mark, a live claim.
    let _: () = ::redis::cmd("SET")
        .arg("postwire:once:msg_n")
        .arg("d")
        .arg("PX")
        .arg(60_000)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(h.store.claim("msg_n", &a, LONG).await.unwrap(), Claim::Done);
    let _: () = ::redis::cmd("SET")
        .arg("postwire:once:msg_m")
        .arg("c:0123")
        .arg("PX")
        .arg(60_000)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(matches!(
        h.store.claim("msg_m", &a, LONG).await.unwrap(),
        Claim::InFlight { .. }
    ));
    assert!(
        h.store
            .release("msg_m", &ClaimToken::from_string("0123".into()))
            .await
            .unwrap()
    );
}

/// The npm package's `postwire/stores/postgres` uses the same table and columns.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_layout_is_the_npm_stores() {
    let db = postwire_testpg::database();
    let pool = common::pg_pool(db.url());
    let store = postwire_receiver::PostgresStore::new(pool.clone());
    let a = token();
    assert_eq!(store.claim("msg_l", &a, LONG).await.unwrap(), Claim::Claimed);
    let client = pool.get().await.unwrap();
    let row = client
        .query_one("SELECT token FROM postwire_once WHERE id = 'msg_l'", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, Option<String>>(0).as_deref(), Some(a.as_str()));
    assert!(store.complete("msg_l", &a, LONG).await.unwrap());
    let row = client
        .query_one("SELECT token FROM postwire_once WHERE id = 'msg_l'", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, Option<String>>(0), None);
    // Written by another implementation (the npm store's SQL): a done row, a live claim.
    client
        .batch_execute(
            "INSERT INTO postwire_once (id, token, expires_at) VALUES
               ('msg_n', NULL, now() + interval '1 hour'), ('msg_m', 'abc', now() + interval '1 hour')",
        )
        .await
        .unwrap();
    assert_eq!(store.claim("msg_n", &a, LONG).await.unwrap(), Claim::Done);
    assert!(matches!(
        store.claim("msg_m", &a, LONG).await.unwrap(),
        Claim::InFlight { .. }
    ));
    // Sweeping removes only expired rows.
    client
        .batch_execute("INSERT INTO postwire_once VALUES ('msg_old', NULL, now() - interval '1 second')")
        .await
        .unwrap();
    assert_eq!(store.sweep(1000).await.unwrap(), 1);
    assert!(store.with_table("Bad-Name").is_err());
}
