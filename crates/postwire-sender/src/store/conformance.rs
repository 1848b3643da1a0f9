//! The store conformance suite: the same tests against every backend (SQLite, and
//! PostgreSQL in a throwaway cluster), so both keep the invariants of [`super`] alike.
//! Backend-specific tests (schema versions, query plans, several processes on one
//! database) live beside each backend.

use std::collections::HashMap;
use std::sync::Arc;

use postwire_core::{CreatedByKind, Event, Secret, Subscription, SubscriptionStatus, Timestamp};

use super::postgres::PostgresStore;
use super::sqlite::SqliteStore;
use super::{ClaimRequest, DeliveryCounts, FinishedAttempt, NextState, Store};
use crate::events::BuiltEvent;
use crate::model::{AttemptErrorKind, AttemptOutcome, Purpose, StoredSubscription, Workspace};

/// Which backend a test runs against.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Backend {
    Sqlite,
    Postgres,
}

/// What keeps a test's database alive (a temp dir, or a database in the test cluster).
pub(crate) type Guard = Box<dyn std::any::Any + Send>;

impl Backend {
    /// A new, empty store.
    pub(crate) async fn open(self) -> (Guard, Arc<dyn Store>) {
        match self {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().unwrap();
                let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
                (Box::new(dir), Arc::new(store))
            }
            Backend::Postgres => {
                let db = postwire_testpg::database();
                let store = PostgresStore::connect(db.url()).await.unwrap();
                (Box::new(db), Arc::new(store))
            }
        }
    }
}

/// Runs each named test against every backend: `sqlite::<name>` and `postgres::<name>`.
macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Backend::Sqlite).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Backend::Postgres).await
                }
            )*
        }
    };
}

/// A store with workspace `ws` and one subscription, and the time of the tests.
pub(crate) async fn store_with_a_subscription(backend: Backend) -> (Guard, Arc<dyn Store>, Timestamp) {
    let (dir, store) = backend.open().await;
    let t0 = Timestamp::from_unix_millis(1_800_000_000_000);
    store
        .upsert_workspace(Workspace {
            id: "ws".into(),
            name: "ws".into(),
        })
        .await
        .unwrap();
    store
        .insert_subscription(stored_subscription("wh_1", Purpose::Events, t0), None, None)
        .await
        .unwrap();
    (dir, store, t0)
}

/// A new enabled subscription `id` of workspace `ws` for `purpose`, made at `t0`.
fn stored_subscription(id: &str, purpose: Purpose, t0: Timestamp) -> StoredSubscription {
    StoredSubscription {
        workspace_id: "ws".into(),
        subscription: Subscription {
            id: id.into(),
            name: "s".into(),
            url: "https://example.com/hook".into(),
            events: vec![],
            integrations: vec![],
            status: SubscriptionStatus::Enabled,
            created_by_kind: CreatedByKind::ApiToken,
            consecutive_failures: 0,
            last_success_at: None,
            created_at: t0,
            signing: Default::default(),
        },
        secret: Secret::generate().unwrap(),
        previous_secret: None,
        failing_since: None,
        purpose,
    }
}

pub(crate) fn test_event(at: Timestamp) -> BuiltEvent {
    let change = crate::events::TestEvent {
        workspace_id: "ws".into(),
        subscription_id: None,
        message: "m".into(),
    }
    .into();
    crate::events::build_event(&change, Event::generate_id(at).unwrap(), at)
        .unwrap()
        .unwrap()
}

/// A `post.scheduled` event of post `post` in workspace `ws`, whose client reference
/// is `external_id`.
fn post_event(ws: &str, post: &str, external_id: &str, at: Timestamp) -> BuiltEvent {
    use crate::events::{PostChange, PostChangeKind, PostRecord};
    let change = PostChange {
        workspace_id: ws.into(),
        post: PostRecord {
            id: post.into(),
            external_id: external_id.into(),
            ..crate::events::tests::record(false)
        },
        kind: PostChangeKind::Scheduled,
    }
    .into();
    crate::events::build_event(&change, Event::generate_id(at).unwrap(), at)
        .unwrap()
        .unwrap()
}

pub(crate) fn claim_at(now: Timestamp) -> ClaimRequest {
    ClaimRequest {
        now,
        limit: 10_000,
        lease_until: now.add_millis(120_000),
        owner: "test".into(),
        per_subscription_limit: 10_000,
        shared_per_subscription_limit: 10_000,
        in_flight: HashMap::new(),
    }
}

/// Copies of `template` in `store`, one per id, in workspace `workspace_id`.
pub(crate) async fn add_copies(
    store: &dyn Store,
    template: &StoredSubscription,
    workspace_id: &str,
    ids: impl IntoIterator<Item = String>,
) {
    for id in ids {
        let mut sub = template.clone();
        sub.subscription.id = id;
        sub.workspace_id = workspace_id.into();
        store.insert_subscription(sub, None, None).await.unwrap();
    }
}

/// The outcome of `d`'s attempt: delivered (a `200`) at `at`.
pub(crate) fn delivered(d: &super::ClaimedDelivery, at: Timestamp) -> FinishedAttempt {
    FinishedAttempt {
        delivery: d.id,
        subscription_id: d.subscription_id.clone(),
        attempt: d.attempt,
        started_at: at,
        duration_ms: 1,
        outcome: AttemptOutcome::Response {
            status: 200,
            body_prefix: String::new(),
        },
        next: NextState::Delivered,
    }
}

async fn a_claimed_delivery_whose_outcome_is_never_written_is_claimed_again_when_its_lease_ends(backend: Backend) {
    let (_dir, store, t0) = store_with_a_subscription(backend).await;
    assert_eq!(store.enqueue(vec![test_event(t0)], t0, None).await.unwrap(), vec![1]);
    let first = store.claim(claim_at(t0)).await.unwrap();
    assert_eq!(first.len(), 1);
    // Nothing recorded (as if the outcome's write failed): leased, so not claimable...
    assert!(store.claim(claim_at(t0.add_millis(119_999))).await.unwrap().is_empty());
    // ...until the lease ends, with no other write to the subscription in between.
    let again = store.claim(claim_at(t0.add_millis(120_000))).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].id, first[0].id);
    assert_eq!(again[0].body, first[0].body);
}

/// A first claim takes what it needs from memory (`fresh.rs`); a retry must read the
/// row, with its attempt count, from the file.
async fn a_retried_delivery_is_claimed_with_its_attempt_count_and_the_same_body(backend: Backend) {
    let (_dir, store, t0) = store_with_a_subscription(backend).await;
    let event = test_event(t0);
    let (id, body) = (event.id().to_owned(), event.body.clone());
    store.enqueue(vec![event], t0, None).await.unwrap();
    let first = store.claim(claim_at(t0)).await.unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!((first[0].attempt, first[0].event_id.as_str()), (1, id.as_str()));
    assert_eq!(first[0].body, body.as_bytes());
    store
        .record_attempts(
            vec![FinishedAttempt {
                delivery: first[0].id,
                subscription_id: first[0].subscription_id.clone(),
                attempt: 1,
                started_at: t0,
                duration_ms: 1,
                outcome: AttemptOutcome::Error {
                    error: AttemptErrorKind::Connection,
                },
                next: NextState::RetryAt(t0.add_millis(30_000)),
            }],
            t0,
        )
        .await
        .unwrap();
    let retry = store.claim(claim_at(t0.add_millis(30_000))).await.unwrap();
    assert_eq!(retry.len(), 1);
    assert_eq!((retry[0].id, retry[0].attempt), (first[0].id, 2));
    assert_eq!(
        (retry[0].event_id.as_str(), &retry[0].body),
        (id.as_str(), &first[0].body)
    );
}

/// In-memory state is keyed by delivery row (leases, `fresh.rs`): SQLite would give
/// the row numbers of deleted deliveries again, the store does not.
async fn delivery_rows_are_never_numbered_twice_while_the_store_is_open(backend: Backend) {
    let (_dir, store, t0) = store_with_a_subscription(backend).await;
    store.enqueue(vec![test_event(t0)], t0, None).await.unwrap();
    let before = store.claim(claim_at(t0)).await.unwrap()[0].id;
    let sub = store.subscription("wh_1".into()).await.unwrap().unwrap();
    assert!(store.delete_subscription("wh_1".into()).await.unwrap());
    // The same subscription again, with none of its old deliveries left.
    store.insert_subscription(sub, None, None).await.unwrap();
    store.enqueue(vec![test_event(t0)], t0, None).await.unwrap();
    let after = store.claim(claim_at(t0)).await.unwrap()[0].id;
    assert!(after.0 > before.0, "{after:?} after {before:?}");
}

/// Claims read a snapshot on their own connection while writes commit: a claim whose
/// snapshot missed a commit must not leave that commit's deliveries unclaimable.
async fn claims_beside_commits_leave_no_published_delivery_unclaimable(backend: Backend) {
    const EVENTS: usize = 400;
    let (_dir, store, t0) = store_with_a_subscription(backend).await;
    let publisher = {
        let store = store.clone();
        tokio::spawn(async move {
            for _ in 0..EVENTS {
                store.enqueue(vec![test_event(t0)], t0, None).await.unwrap();
            }
        })
    };
    let mut claimed = 0;
    while !publisher.is_finished() {
        claimed += store.claim(claim_at(t0)).await.unwrap().len();
    }
    publisher.await.unwrap();
    // What is left is claimable now, by the store's own hints.
    claimed += store.claim(claim_at(t0)).await.unwrap().len();
    assert_eq!(claimed, EVENTS);
}
/// Many subscriptions with a delivery or two due each (a platform's usual shape): one
/// claim with the dispatcher's limits (room 512, 64 per subscription) takes every due
/// delivery it has room for, from as many subscriptions as it takes, and never more than
/// a subscription's room. (PostgreSQL once shared the claim out by each subscription's
/// room, due or not: 8 subscriptions took it all, and this claim returned 8 rows.)
async fn one_claim_fills_its_room_from_many_subscriptions_with_little_due_each(backend: Backend) {
    let (_dir, store, t0) = store_with_a_subscription(backend).await;
    let template = store.subscription("wh_1".into()).await.unwrap().unwrap();
    add_copies(&*store, &template, "ws", (2..=300).map(|i| format!("wh_{i}"))).await;
    // Two events, each to all 300 subscriptions: 600 due deliveries.
    store
        .enqueue(vec![test_event(t0), test_event(t0)], t0, None)
        .await
        .unwrap();
    let request = |limit| ClaimRequest {
        limit,
        per_subscription_limit: 64,
        shared_per_subscription_limit: 64,
        ..claim_at(t0)
    };
    let first = store.claim(request(512)).await.unwrap();
    assert_eq!(first.len(), 512);
    let mut per_subscription: HashMap<&str, usize> = HashMap::new();
    for d in &first {
        *per_subscription.entry(d.subscription_id.as_str()).or_default() += 1;
    }
    assert!(
        per_subscription.len() >= 256,
        "{} subscriptions",
        per_subscription.len()
    );
    let rest = store.claim(request(512)).await.unwrap();
    assert_eq!(rest.len(), 88, "the rest, in the next claim");
    // A room of one per subscription holds.
    let (_dir, store, t0) = store_with_a_subscription(backend).await;
    add_copies(&*store, &template, "ws", (2..=10).map(|i| format!("wh_{i}"))).await;
    let events: Vec<BuiltEvent> = (0..5).map(|_| test_event(t0)).collect();
    store.enqueue(events, t0, None).await.unwrap();
    let one_each = ClaimRequest {
        per_subscription_limit: 1,
        shared_per_subscription_limit: 1,
        ..claim_at(t0)
    };
    let claimed = store.claim(one_each).await.unwrap();
    assert_eq!(claimed.len(), 10, "one per subscription");
}

/// `queue_counts` (what metrics read, through the queue's indexes) agrees with
/// `delivery_counts` (a count of every delivery) on what is queued, through pending,
/// waiting, delivered and held deliveries.
async fn queue_counts_agree_with_a_count_of_every_delivery(backend: Backend) {
    let (_dir, store, t0) = store_with_a_subscription(backend).await;
    let check = |expected: (u64, u64, u64)| {
        let store = store.clone();
        async move {
            let queued = store.queue_counts().await.unwrap();
            let all = store.delivery_counts(None).await.unwrap();
            assert_eq!((queued.pending, queued.waiting, queued.held), expected, "{queued:?}");
            assert_eq!((all.pending, all.waiting, all.held), expected, "{all:?}");
            all
        }
    };
    check((0, 0, 0)).await;
    // Three events of one post (a head, two behind it) and two of no post.
    let events = vec![
        post_event("ws", "p1", "e1", t0),
        post_event("ws", "p1", "e2", t0),
        post_event("ws", "p1", "e3", t0),
        test_event(t0),
        test_event(t0),
    ];
    store.enqueue(events, t0, None).await.unwrap();
    check((3, 2, 0)).await;
    let claimed = store.claim(claim_at(t0)).await.unwrap();
    assert_eq!(claimed.len(), 3);
    let done = claimed.iter().map(|d| delivered(d, t0)).collect();
    store.record_attempts(done, t0).await.unwrap();
    // The post's second event is its head now.
    let all = check((1, 1, 0)).await;
    assert_eq!(all.delivered, 3);
    assert!(store.pause("wh_1".into(), "test".into()).await.unwrap());
    check((0, 0, 2)).await;
}

/// A first request that died after beginning its key (no work committed) holds the key
/// for the lease only; then a retry starts it afresh, and the dead request's lease can
/// no longer complete it, so its work could never commit beside the retry's.
async fn an_idempotency_key_whose_request_died_is_taken_over_after_its_lease_and_fenced(backend: Backend) {
    use crate::idempotency::{Completion, Decision, IN_PROGRESS_LEASE_MS, IdempotencyKey, Response};
    let (_dir, store, t0) = store_with_a_subscription(backend).await;
    let key = IdempotencyKey::new("tok", "k", b"request").unwrap();
    let Decision::Start { lease_until_ms: dead } = store.begin_idempotent(key.clone(), t0).await.unwrap() else {
        panic!("a new key starts")
    };
    let retry_early = store.begin_idempotent(key.clone(), t0.add_millis(1_000)).await.unwrap();
    assert_eq!(retry_early, Decision::InProgress);
    let later = t0.add_millis(IN_PROGRESS_LEASE_MS);
    let Decision::Start { lease_until_ms: live } = store.begin_idempotent(key.clone(), later).await.unwrap() else {
        panic!("taken over once the lease ended")
    };
    let completion = |lease_until_ms| Completion {
        key: key.clone(),
        lease_until_ms,
        response: Response::FromCounts(Box::new(|counts| format!("{counts:?}"))),
        created: None,
    };
    // The dead request's commit fails, and takes its events with it.
    assert!(
        store
            .enqueue(vec![test_event(later)], later, Some(completion(dead)))
            .await
            .is_err()
    );
    assert_eq!(store.delivery_counts(None).await.unwrap(), DeliveryCounts::default());
    assert_eq!(
        store
            .enqueue(vec![test_event(later)], later, Some(completion(live)))
            .await
            .unwrap(),
        vec![1]
    );
    assert_eq!(
        store.begin_idempotent(key.clone(), later.add_millis(1)).await.unwrap(),
        Decision::Replay("[1]".into())
    );
}

/// The entries of a claimed delivery's signature, by version.
async fn versions(d: &super::ClaimedDelivery) -> Vec<String> {
    d.signer
        .sign(
            &crate::signer::InProcessKeys,
            &d.event_id,
            postwire_core::UnixTime::from_secs(1_800_000_000),
            &d.body,
        )
        .await
        .unwrap()
        .split(' ')
        .map(|e| e.split(',').next().unwrap().to_owned())
        .collect()
}

async fn a_workspace_key_pair_is_made_once_rotated_and_signs_what_signing_asks(backend: Backend) {
    use postwire_core::{SigningKey, SigningMode};
    let (_dir, store, t0) = store_with_a_subscription(backend).await;
    assert_eq!(store.signing_keys("ws".into()).await.unwrap(), None);
    let key = || crate::signer::WorkspaceKey::from(SigningKey::generate().unwrap());
    let (k1, k2, k3) = (key(), key(), key());
    // A second first use keeps the first key and key-set id; no workspace, no key.
    let (ks1, ks2) = (
        crate::signing::new_key_set_id().unwrap(),
        crate::signing::new_key_set_id().unwrap(),
    );
    assert_eq!(store.key_set(ks1.clone()).await.unwrap(), None);
    let made = store
        .ensure_signing_key("ws".into(), k1.clone(), ks1.clone(), t0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            made.current.clone(),
            made.created_at,
            made.previous.clone(),
            made.key_set_id.clone()
        ),
        (k1.clone(), t0, None, ks1.clone())
    );
    let again = store
        .ensure_signing_key("ws".into(), k2.clone(), ks2.clone(), t0.add_millis(5))
        .await
        .unwrap();
    assert_eq!(again, Some(made.clone()));
    assert_eq!(
        store
            .ensure_signing_key("nope".into(), k2.clone(), ks2.clone(), t0)
            .await
            .unwrap(),
        None
    );
    // The key set is found by its id alone; the unused id finds nothing.
    assert_eq!(store.key_set(ks1.clone()).await.unwrap(), Some(made.clone()));
    assert_eq!(store.key_set(ks2.clone()).await.unwrap(), None);
    assert!(
        !store
            .rotate_signing_key("nope".into(), k2.clone(), t0, t0, key_notice(t0))
            .await
            .unwrap()
    );

    // The choice is stored and read back; an update changes it.
    assert_eq!(
        store
            .subscription("wh_1".into())
            .await
            .unwrap()
            .unwrap()
            .subscription
            .signing,
        SigningMode::Symmetric
    );
    let change = |signing| crate::model::SubscriptionChanges {
        name: None,
        url: None,
        events: None,
        integrations: None,
        signing: Some(signing),
    };
    assert!(
        store
            .update_subscription("wh_1".into(), change(SigningMode::Both))
            .await
            .unwrap()
    );
    let stored = store.subscription("wh_1".into()).await.unwrap().unwrap();
    assert_eq!(stored.subscription.signing, SigningMode::Both);
    assert_eq!(
        store.list_subscriptions("ws".into()).await.unwrap()[0]
            .subscription
            .signing,
        SigningMode::Both
    );

    // Claims sign as the choice says, with the workspace's key.
    store.enqueue(vec![test_event(t0)], t0, None).await.unwrap();
    let claimed = store.claim(claim_at(t0)).await.unwrap();
    assert_eq!(versions(&claimed[0]).await, ["v1", "v1a"]);

    // A rotation: the old key signs beside the new one until the window's end.
    let until = t0.add_millis(1_000);
    assert!(
        store
            .rotate_signing_key("ws".into(), k2.clone(), t0.add_millis(10), until, key_notice(t0))
            .await
            .unwrap()
    );
    let keys = store.signing_keys("ws".into()).await.unwrap().unwrap();
    assert_eq!(keys.current, k2);
    assert_eq!(keys.created_at, t0.add_millis(10));
    let previous = keys.previous.unwrap();
    assert_eq!(
        (previous.key, previous.created_at, previous.until),
        (k1.clone(), t0, until)
    );
    assert!(
        store
            .update_subscription("wh_1".into(), change(SigningMode::Asymmetric))
            .await
            .unwrap()
    );
    store.enqueue(vec![test_event(t0)], t0, None).await.unwrap();
    let claimed = store.claim(claim_at(t0.add_millis(999))).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(versions(&claimed[0]).await, ["v1a", "v1a"]);
    store.enqueue(vec![test_event(until)], until, None).await.unwrap();
    let claimed = store.claim(claim_at(until)).await.unwrap();
    // The two earlier deliveries' leases are still running: only the new one.
    assert_eq!(claimed.len(), 1);
    assert_eq!(versions(&claimed[0]).await, ["v1a"]);
    let value = claimed[0]
        .signer
        .sign(
            &crate::signer::InProcessKeys,
            &claimed[0].event_id,
            until.unix_time(),
            &claimed[0].body,
        )
        .await
        .unwrap();
    let ts = until.unix_time().as_secs().to_string();
    let headers = [
        ("webhook-id", claimed[0].event_id.as_str()),
        ("webhook-timestamp", ts.as_str()),
        ("webhook-signature", value.as_str()),
    ];
    let verify = |k: &crate::signer::WorkspaceKey| {
        postwire_core::Verifier::from_public_key(k.public_key()).verify(&headers, &claimed[0].body, until.unix_time())
    };
    assert!(verify(&k2).is_ok() && verify(&k1).is_err());

    // Rotating again drops the oldest key.
    assert!(
        store
            .rotate_signing_key("ws".into(), k3.clone(), until, until.add_millis(5), key_notice(until))
            .await
            .unwrap()
    );
    let keys = store.signing_keys("ws".into()).await.unwrap().unwrap();
    // Rotations keep the key-set id: the published set is found by it, with both keys.
    assert_eq!(store.key_set(ks1).await.unwrap(), Some(keys.clone()));
    assert_eq!((keys.current, keys.previous.unwrap().key), (k3, k2));
}

/// Look-ups by external id find a post among many events (SQLite files its keys in
/// buckets of event numbers: these events span three), newest post first, each post
/// once, only in its own workspace.
async fn posts_are_found_by_external_id_among_many_events(backend: Backend) {
    const EVENTS: usize = 10_000;
    let (_dir, store, t0) = store_with_a_subscription(backend).await;
    store
        .upsert_workspace(Workspace {
            id: "ws2".into(),
            name: "ws2".into(),
        })
        .await
        .unwrap();
    let external = |i: usize| match i {
        3 | 5_000 | 9_000 => "shared".to_owned(),
        _ => format!("ext-{i}"),
    };
    for start in (0..EVENTS).step_by(500) {
        let events = (start..start + 500)
            .map(|i| post_event("ws", &format!("post-{i}"), &external(i), t0))
            .collect();
        store.enqueue(events, t0, None).await.unwrap();
    }
    // The same reference in another workspace, and a second event of one post.
    let later = vec![
        post_event("ws2", "other", "shared", t0),
        post_event("ws", "post-5000", "shared", t0),
    ];
    store.enqueue(later, t0, None).await.unwrap();
    let lookup = |ext: &str, limit: usize| store.posts_with_external_id("ws".into(), ext.into(), limit);
    assert_eq!(
        lookup("shared", 20).await.unwrap(),
        ["post-5000", "post-9000", "post-3"]
    );
    assert_eq!(lookup("shared", 2).await.unwrap(), ["post-5000", "post-9000"]);
    assert_eq!(lookup("ext-0", 20).await.unwrap(), ["post-0"]);
    assert_eq!(lookup("ext-4097", 20).await.unwrap(), ["post-4097"]);
    assert_eq!(lookup("ext-9999", 20).await.unwrap(), ["post-9999"]);
    assert!(lookup("ext-10000", 20).await.unwrap().is_empty());
    let other = store.posts_with_external_id("ws2".into(), "shared".into(), 20);
    assert_eq!(other.await.unwrap(), ["other"]);
}

/// A unique marker in the bodies of many events of post `pm` (and none of the others):
/// publishes them beside other posts' events, delivers some of each, and erases post
/// `pm`; returns the marker. For the backends' tests that scan their files for it.
pub(crate) async fn erase_a_marked_post(
    store: &dyn Store,
    t0: Timestamp,
    before_erasure: impl AsyncFnOnce(&str),
) -> String {
    use crate::model::{Erased, ErasureSubject};
    let marker = format!("marker-{}", Event::generate_id(t0).unwrap());
    for round in 0..4 {
        let at = t0.add_millis(round);
        let events: Vec<BuiltEvent> = (0..50)
            .flat_map(|i| {
                [
                    post_event("ws", "pm", &marker, at),
                    post_event("ws", &format!("other-{round}-{i}"), "x", at),
                ]
            })
            .collect();
        store.enqueue(events, at, None).await.unwrap();
        let claimed = store.claim(claim_at(at)).await.unwrap();
        let outcomes = claimed.iter().map(|d| delivered(d, at)).collect();
        store.record_attempts(outcomes, at).await.unwrap();
    }
    before_erasure(&marker).await;
    let erased = store
        .erase_payloads("ws".into(), ErasureSubject::Post("pm".into()), t0.add_millis(10))
        .await
        .unwrap();
    // 200 events; the post's queue had one delivered per round, the rest unfinished.
    assert_eq!(
        erased,
        Erased {
            events: 200,
            cancelled: 196
        }
    );
    marker
}

/// Whether any file under `path` (a file or a directory, recursively) holds `needle`.
pub(crate) fn files_hold(path: &std::path::Path, needle: &[u8]) -> bool {
    if path.is_dir() {
        return std::fs::read_dir(path)
            .unwrap()
            .flatten()
            .any(|e| files_hold(&e.path(), needle));
    }
    std::fs::read(path).is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle))
}

/// An `integration.reconnected` event of account `account` in workspace `ws`.
fn account_event(account: &str, at: Timestamp) -> BuiltEvent {
    use crate::events::{AccountChange, AccountChangeKind};
    let change = AccountChange {
        workspace_id: "ws".into(),
        integration: postwire_core::Integration {
            id: account.into(),
            name: "Account".into(),
            provider_identifier: "x".into(),
            picture: None,
        },
        kind: AccountChangeKind::Reconnected,
    }
    .into();
    crate::events::build_event(&change, Event::generate_id(at).unwrap(), at)
        .unwrap()
        .unwrap()
}

/// The outcome of `d`'s attempt: `next` after a `500`.
fn answered_500(d: &super::ClaimedDelivery, at: Timestamp, next: NextState) -> FinishedAttempt {
    FinishedAttempt {
        outcome: AttemptOutcome::Response {
            status: 500,
            body_prefix: String::new(),
        },
        next,
        ..delivered(d, at)
    }
}

/// Erasure (`Store::erase_payloads`): a subject's bodies go, its metadata stays, its
/// unfinished deliveries are cancelled (an attempt in flight included: its outcome
/// changes nothing), its key's next event is delivered, and nothing erased is sent again.
async fn erasure_tombstones_a_subjects_events_and_cancels_their_unfinished_deliveries(backend: Backend) {
    use crate::model::{DeliveryState, Erased, ErasureSubject};
    let (_dir, store, t0) = store_with_a_subscription(backend).await;
    let marker = "erase-me-7f3c9a";
    let p1: Vec<BuiltEvent> = (0..3).map(|_| post_event("ws", "p1", marker, t0)).collect();
    let events = vec![
        p1[0].clone(),
        p1[1].clone(),
        p1[2].clone(),
        post_event("ws", "p2", "keep", t0),
        account_event("acct-a", t0),
        account_event("acct-b", t0),
        post_event("ws", "p3", "failing", t0),
    ];
    store.enqueue(events, t0, None).await.unwrap();
    // Heads: p1's first, p2, acc1, acc2, p3 (p1's others wait).
    let claimed = store.claim(claim_at(t0)).await.unwrap();
    assert_eq!(claimed.len(), 5);
    let by_event = |id: &str| claimed.iter().find(|d| d.event_id == id).unwrap().clone();
    let first = by_event(p1[0].id());
    let p3 = claimed
        .iter()
        .find(|d| d.body.windows(7).any(|w| w == b"failing"))
        .unwrap();
    let acc1 = claimed
        .iter()
        .find(|d| d.body.windows(8).any(|w| w == b"\"acct-a\""))
        .unwrap()
        .clone();
    let mut outcomes = vec![delivered(&first, t0), answered_500(p3, t0, NextState::Failed)];
    outcomes.extend(
        claimed
            .iter()
            .filter(|d| d.id != first.id && d.id != p3.id && d.id != acc1.id)
            .map(|d| delivered(d, t0)),
    );
    store.record_attempts(outcomes, t0).await.unwrap();
    // p1's second is the head now, and claimed (in flight); its third waits.
    let t1 = t0.add_millis(1_000);
    let second = store.claim(claim_at(t1)).await.unwrap();
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].event_id, p1[1].id());

    let t2 = t0.add_millis(2_000);
    let erase = |subject: ErasureSubject| store.erase_payloads("ws".into(), subject, t2);
    assert_eq!(
        erase(ErasureSubject::Post("p1".into())).await.unwrap(),
        Erased {
            events: 3,
            cancelled: 2
        }
    );
    // Idempotent.
    assert_eq!(
        erase(ErasureSubject::Post("p1".into())).await.unwrap(),
        Erased::default()
    );
    // The account's event was in flight: cancelled; its late outcome changes nothing.
    assert_eq!(
        erase(ErasureSubject::Integration("acct-a".into())).await.unwrap(),
        Erased {
            events: 1,
            cancelled: 1
        }
    );
    store
        .record_attempts(vec![delivered(&acc1, t2), delivered(&second[0], t2)], t2)
        .await
        .unwrap();
    // Another workspace's subject of the same name is not touched, nor an unknown one.
    assert_eq!(
        erase(ErasureSubject::Post("p9".into())).await.unwrap(),
        Erased::default()
    );

    let list = store.list_deliveries("wh_1".into(), None, 100).await.unwrap();
    assert_eq!(list.len(), 7);
    for d in &list {
        let erased = d.event_id == acc1.event_id || p1.iter().any(|e| e.id() == d.event_id);
        assert_eq!(d.payload_erased, erased, "{d:?}");
        assert_eq!(d.payload.is_empty(), erased, "{d:?}");
        assert!(!d.payload.contains(marker));
    }
    let state = |id: &str| list.iter().find(|d| d.event_id == id).unwrap();
    // Metadata stays: the delivered one keeps its state and attempt.
    assert_eq!(state(p1[0].id()).state, DeliveryState::Delivered);
    assert_eq!(state(p1[0].id()).attempts.len(), 1);
    assert_eq!(state(p1[1].id()).state, DeliveryState::Cancelled);
    assert_eq!(state(p1[1].id()).finished_at, Some(t2));
    assert_eq!(state(p1[2].id()).state, DeliveryState::Cancelled);
    assert_eq!(state(&acc1.event_id).state, DeliveryState::Cancelled);
    let counts = store.delivery_counts(Some("wh_1".into())).await.unwrap();
    assert_eq!((counts.cancelled, counts.delivered, counts.failed), (3, 3, 1));
    assert_eq!(counts.pending + counts.waiting + counts.held, 0);
    // No look-up finds the erased post any more.
    assert!(
        store
            .events_for_post("ws".into(), "p1".into(), 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .posts_with_external_id("ws".into(), marker.into(), 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.events_for_post("ws".into(), "p2".into(), 10).await.unwrap().len(),
        1
    );

    // Nothing erased is sent again: resend refused, recover skips it.
    let t3 = t0.add_millis(3_000);
    let resend = store.resend("wh_1".into(), state(p1[0].id()).id, t3).await.unwrap();
    assert_eq!(resend, Err(super::RequeueError::Erased));
    let cancelled = store.resend("wh_1".into(), state(p1[1].id()).id, t3).await.unwrap();
    assert_eq!(cancelled, Err(super::RequeueError::Erased));
    erase(ErasureSubject::Post("p3".into())).await.unwrap();
    assert_eq!(store.recover_failed("wh_1".into(), t0, t3, 100).await.unwrap(), Some(0));
    assert!(
        store
            .resend("wh_1".into(), state(p2_id(&list)).id, t3)
            .await
            .unwrap()
            .is_ok()
    );
    assert!(store.claim(claim_at(t3)).await.unwrap().len() == 1);

    // The key moves on: the post's next event is a head at once, and claimed.
    let next = post_event("ws", "p1", "after", t3);
    let next_id = next.id().to_owned();
    store.enqueue(vec![next], t3, None).await.unwrap();
    let t4 = t0.add_millis(4_000);
    let claimed = store.claim(claim_at(t4)).await.unwrap();
    assert_eq!(
        claimed.iter().map(|d| d.event_id.as_str()).collect::<Vec<_>>(),
        [next_id.as_str()]
    );
}

/// The event id of p2's delivery in `list`.
fn p2_id(list: &[crate::model::DeliveryRecord]) -> &str {
    &list.iter().find(|d| d.payload.contains("\"keep\"")).unwrap().event_id
}

/// A notice stored by a change is queued once for every operator endpoint but the one it
/// is about, however many relays run at once (processes sharing a database), and a relay
/// after that finds nothing to do. A stored notice survives the store being reopened.
async fn a_stored_notice_is_relayed_once_by_concurrent_relays(backend: Backend) {
    let (_guard, store, t0) = store_with_a_subscription(backend).await;
    for id in ["wh_op1", "wh_op2"] {
        let ok = store
            .insert_subscription(stored_subscription(id, Purpose::Operator, t0), None, Some(2))
            .await
            .unwrap();
        assert!(ok, "operator endpoints are counted apart from the subscriptions");
    }
    let about = |id: &str| postwire_core::SubscriptionRef {
        id: id.into(),
        name: "x".into(),
    };
    for id in ["wh_1", "wh_op1"] {
        let data = postwire_core::OperationalData::EndpointSecretRotated {
            subscription: about(id),
            previous_secret_expires_at: t0,
        };
        let notice = crate::notices::new_notice("ws", data, t0).unwrap();
        assert!(
            store
                .rotate_secret(id.into(), Secret::generate().unwrap(), t0, notice)
                .await
                .unwrap()
        );
    }
    assert_eq!(store.pending_notices(10).await.unwrap().len(), 2);
    let (a, b, c) = tokio::join!(
        store.relay_notices(t0),
        store.relay_notices(t0),
        store.relay_notices(t0),
    );
    // wh_1's notice to both operator endpoints, wh_op1's to wh_op2 only.
    assert_eq!(a.unwrap() + b.unwrap() + c.unwrap(), 3);
    assert!(store.pending_notices(10).await.unwrap().is_empty());
    assert_eq!(store.relay_notices(t0).await.unwrap(), 0);
    let counts = |sub: &str| store.delivery_counts(Some(sub.into()));
    assert_eq!(counts("wh_op1").await.unwrap().pending, 1);
    assert_eq!(counts("wh_op2").await.unwrap().pending, 2);
    assert_eq!(
        counts("wh_1").await.unwrap().pending,
        0,
        "a subscriber never gets a notice"
    );
    let listed = store.notifications("ws".into(), 10).await.unwrap();
    let kinds: Vec<&str> = listed.iter().map(|n| n.kind.as_str()).collect();
    assert_eq!(kinds, ["endpoint.secret_rotated", "endpoint.secret_rotated"]);
}

conformance!(
    a_stored_notice_is_relayed_once_by_concurrent_relays,
    erasure_tombstones_a_subjects_events_and_cancels_their_unfinished_deliveries,
    posts_are_found_by_external_id_among_many_events,
    a_workspace_key_pair_is_made_once_rotated_and_signs_what_signing_asks,
    a_claimed_delivery_whose_outcome_is_never_written_is_claimed_again_when_its_lease_ends,
    a_retried_delivery_is_claimed_with_its_attempt_count_and_the_same_body,
    delivery_rows_are_never_numbered_twice_while_the_store_is_open,
    claims_beside_commits_leave_no_published_delivery_unclaimable,
    one_claim_fills_its_room_from_many_subscriptions_with_little_due_each,
    queue_counts_agree_with_a_count_of_every_delivery,
    an_idempotency_key_whose_request_died_is_taken_over_after_its_lease_and_fenced,
);

/// A `signing_key.rotated` notice of workspace `ws` for the rotations above.
fn key_notice(now: Timestamp) -> crate::notices::NewNotice {
    let data = postwire_core::OperationalData::SigningKeyRotated {
        previous_key_expires_at: now,
    };
    crate::notices::new_notice("ws", data, now).unwrap()
}
