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

/// A renewal extends only the holder's claim, and only while it holds it; a claim not
/// renewed (its process died) expires after one lease.
async fn renew_extends_only_the_holders_claim<S: Store>(h: Harness<S>) {
    let (a, b) = (token(), token());
    assert_eq!(h.store.claim("msg_n", &a, LEASE).await.unwrap(), Claim::Claimed);
    h.wait(LEASE.as_millis() as u64 * 2 / 3).await;
    assert!(h.store.renew("msg_n", &a, LEASE).await.unwrap());
    assert!(!h.store.renew("msg_n", &b, LEASE).await.unwrap(), "not b's claim");
    // Past the first lease's end: the renewed claim still holds.
    h.wait(LEASE.as_millis() as u64 * 2 / 3).await;
    assert!(matches!(
        h.store.claim("msg_n", &b, LEASE).await.unwrap(),
        Claim::InFlight { .. }
    ));
    // Not renewed any more: taken over after the lease.
    h.wait(LEASE.as_millis() as u64 + 200).await;
    assert_eq!(h.store.claim("msg_n", &b, LONG).await.unwrap(), Claim::Claimed);
    assert!(!h.store.renew("msg_n", &a, LONG).await.unwrap(), "a lost it to b");
    assert!(h.store.renew("msg_n", &b, LONG).await.unwrap());
    // A done id is not a claim: nothing to renew.
    assert!(h.store.complete("msg_n", &b, LONG).await.unwrap());
    assert!(!h.store.renew("msg_n", &b, LONG).await.unwrap());
    assert!(!h.store.renew("msg_none", &b, LONG).await.unwrap(), "never claimed");
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
    renew_extends_only_the_holders_claim,
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

/// Full, the memory store drops the oldest done mark, never a live claim: with the lease
/// shorter than the keep, a fresh claim is the entry that expires soonest, and dropping it
/// would let a second copy claim and run at once. Full of live claims only, it takes no
/// new claim (`store_full`: the layer answers 503) until one ends.
#[test]
fn memory_store_full_drops_done_marks_never_live_claims() {
    let clock = Arc::new(ManualClock::new(Timestamp::from_unix_millis(0)));
    let store = MemoryStore::with_clock(clock.clone()).with_capacity(3);
    let lease = Duration::from_secs(30);
    let keep = Duration::from_secs(3600);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(async {
        for id in ["done_1", "done_2"] {
            let t = token();
            assert_eq!(store.claim(id, &t, lease).await.unwrap(), Claim::Claimed);
            assert!(store.complete(id, &t, keep).await.unwrap());
            clock.advance_millis(1);
        }
        let live = token();
        assert_eq!(store.claim("live_1", &live, lease).await.unwrap(), Claim::Claimed);
        // Full: room for live_2 is made by dropping the oldest done mark.
        assert_eq!(store.claim("live_2", &token(), lease).await.unwrap(), Claim::Claimed);
        assert_eq!(store.len(), 3);
        assert!(
            matches!(
                store.claim("live_1", &token(), lease).await.unwrap(),
                Claim::InFlight { .. }
            ),
            "a live claim was dropped to make room: a second copy claimed it"
        );
        assert_eq!(store.claim("done_2", &token(), lease).await.unwrap(), Claim::Done);
        assert_eq!(
            store.claim("done_1", &token(), lease).await.unwrap(),
            Claim::Claimed,
            "the oldest done mark went first"
        );
        // Now three live claims: a new id is refused, the live ones still hold.
        let err = store.claim("live_3", &token(), lease).await.unwrap_err();
        assert_eq!(err.code().as_str(), "store_full");
        assert!(matches!(
            store.claim("live_1", &token(), lease).await.unwrap(),
            Claim::InFlight { .. }
        ));
        // A claim that becomes done takes no more room; its mark makes room for the next.
        assert!(store.complete("live_1", &live, keep).await.unwrap());
        assert_eq!(store.claim("live_3", &token(), lease).await.unwrap(), Claim::Claimed);
        assert_eq!(store.len(), 3);
        // Leases that end free their room.
        clock.advance_millis(31_000);
        assert_eq!(store.claim("live_4", &token(), lease).await.unwrap(), Claim::Claimed);
        assert_eq!(store.len(), 1, "the expired claims were swept");
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

/// A sweep that read a row as expired, and a claim that takes that row over before the
/// sweep deletes it: the sweep must keep the live claim, or a second copy claims the id
/// while the first runs. The claim runs in a transaction of its own, left open until the
/// sweep waits for its row lock, so the two interleave the same way every run. The lease
/// is shorter than the keep, as in use (a done mark beside it is kept).
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_sweep_keeps_a_claim_that_takes_an_expired_row_over_meanwhile() {
    let db = postwire_testpg::database();
    let pool = common::pg_pool(db.url());
    let store = postwire_receiver::PostgresStore::new(pool.clone());
    let (a, b) = (token(), token());
    assert_eq!(
        store.claim("msg_s", &a, Duration::from_millis(50)).await.unwrap(),
        Claim::Claimed
    );
    let kept = token();
    assert_eq!(store.claim("msg_kept", &kept, LONG).await.unwrap(), Claim::Claimed);
    assert!(store.complete("msg_kept", &kept, LONG).await.unwrap());
    tokio::time::sleep(Duration::from_millis(200)).await; // a's lease ran out (a died)

    // b takes the expired row over with the store's own claim statement, not yet committed.
    let mut claimer = pool.get().await.unwrap();
    let claim = include_str!("../protocol/postgres/claim.sql").replace("{table}", "postwire_once");
    let tx = claimer.transaction().await.unwrap();
    let row = tx
        .query_one(&claim, &[&"msg_s", &b.as_str(), &60_000f64])
        .await
        .unwrap();
    assert!(row.get::<_, bool>(0), "b took the expired row over");

    let sweep = tokio::spawn({
        let store = store.clone();
        async move { store.sweep(1000).await }
    });
    // The sweep's sub-select saw the row expired; its delete now waits for b's row lock.
    let watcher = pool.get().await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let waiting: i64 = watcher
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%DELETE FROM postwire_once%'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if waiting == 1 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the sweep never waited for the claim's row"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tx.commit().await.unwrap();

    assert_eq!(sweep.await.unwrap().unwrap(), 0, "the sweep deleted b's live claim");
    assert!(
        matches!(
            store.claim("msg_s", &token(), LONG).await.unwrap(),
            Claim::InFlight { .. }
        ),
        "a second copy claimed the id while b held it"
    );
    assert!(store.complete("msg_s", &b, LONG).await.unwrap());
    assert_eq!(store.claim("msg_kept", &token(), LONG).await.unwrap(), Claim::Done);
}
