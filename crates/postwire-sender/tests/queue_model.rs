//! A property test of the store's queue against a model: random sequences of publish,
//! claim, succeed, fail (retry or for good), pause, resume (with expiry) and rotate, on
//! a real store (SQLite, or PostgreSQL with `POSTWIRE_TEST_BACKEND=postgres`), checking after every claim that only queue heads come out and
//! that no ordering key has two attempts at once; then a drain in which every accepted
//! delivery ends delivered, failed or expired, each key's in publish order. The store
//! applies the health rules too (a retry 72 h after the first failure pauses the
//! subscription), and the model follows the pauses it reports.

use std::collections::{HashMap, HashSet};

use postwire_core::{CreatedByKind, Event, Secret, Subscription, SubscriptionStatus, Timestamp};
use postwire_sender::model::{AttemptOutcome, StoredSubscription};
use postwire_sender::store::{ClaimRequest, ClaimedDelivery, FinishedAttempt, NextState};
use postwire_sender::{
    DomainChange, Integration, PostChange, PostChangeKind, PostRecord, PostgresStore, SqliteStore, Store, Workspace,
};
use proptest::prelude::*;

const SUB: &str = "wh_model";
const POSTS: usize = 3;
const T0: i64 = 1_800_000_000_000;
const WEEK: i64 = 7 * 24 * 3_600_000;

#[derive(Debug, Clone)]
enum Op {
    /// An event about post `n`.
    Publish(usize),
    /// A claim of at most this many.
    Claim(usize),
    /// The outcome of the in-flight delivery at this index (mod their number).
    Succeed(usize),
    RetryLater(usize),
    FailForGood(usize),
    Pause,
    /// Resume, expiring what was held longer than 7 days.
    Resume,
    Rotate,
    /// Move the clock by this many hours.
    Advance(i64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..POSTS).prop_map(Op::Publish),
        3 => (1usize..4).prop_map(Op::Claim),
        3 => any::<usize>().prop_map(Op::Succeed),
        1 => any::<usize>().prop_map(Op::RetryLater),
        1 => any::<usize>().prop_map(Op::FailForGood),
        1 => Just(Op::Pause),
        1 => Just(Op::Resume),
        1 => Just(Op::Rotate),
        1 => (1i64..100).prop_map(Op::Advance),
    ]
}

/// What the model knows of one delivery.
#[derive(Debug, Clone)]
struct Modeled {
    event_id: String,
    post: usize,
    created_at: i64,
    finished: bool,
}

struct Run {
    store: Box<dyn Store>,
    now: i64,
    paused: bool,
    /// In publish order.
    deliveries: Vec<Modeled>,
    in_flight: Vec<ClaimedDelivery>,
    /// Per post, the event ids whose attempts ended, in the order they ended.
    ended: HashMap<usize, Vec<String>>,
}

impl Run {
    fn ts(&self) -> Timestamp {
        Timestamp::from_unix_millis(self.now)
    }

    fn index_of(&self, event_id: &str) -> usize {
        self.deliveries.iter().position(|d| d.event_id == event_id).unwrap()
    }

    async fn publish(&mut self, post: usize) {
        let change = DomainChange::Post(PostChange {
            workspace_id: "ws".into(),
            post: PostRecord {
                id: format!("p{post}"),
                external_id: String::new(),
                group: "g".into(),
                state: postwire_core::PostState::Queue,
                is_draft: false,
                publish_date: self.ts(),
                integration: Integration {
                    id: "acc".into(),
                    name: "A".into(),
                    provider_identifier: "x".into(),
                    picture: None,
                },
                release_url: None,
                release_id: None,
                error: None,
                content: String::new(),
            },
            kind: PostChangeKind::Scheduled,
        });
        let id = Event::generate_id(self.ts()).unwrap();
        let built = postwire_sender::events::build_event(&change, id.clone(), self.ts())
            .unwrap()
            .unwrap();
        assert_eq!(self.store.enqueue(vec![built], self.ts(), None).await.unwrap(), vec![1]);
        self.deliveries.push(Modeled {
            event_id: id,
            post,
            created_at: self.now,
            finished: false,
        });
    }

    async fn claim(&mut self, limit: usize) {
        let claimed = self
            .store
            .claim(ClaimRequest {
                now: self.ts(),
                limit,
                lease_until: self.ts().add_millis(3_600_000 * 1_000),
                owner: "model".into(),
                per_subscription_limit: 100,
                shared_per_subscription_limit: 100,
                in_flight: HashMap::new(),
            })
            .await
            .unwrap();
        if self.paused {
            assert!(claimed.is_empty(), "a paused subscription's deliveries are held");
        }
        for c in claimed {
            let i = self.index_of(&c.event_id);
            let d = &self.deliveries[i];
            assert!(!d.finished, "a finished delivery was claimed");
            let earlier_open = self.deliveries[..i].iter().any(|e| e.post == d.post && !e.finished);
            assert!(
                !earlier_open,
                "claimed {} behind an unfinished one of its post",
                d.event_id
            );
            let busy = self
                .in_flight
                .iter()
                .any(|f| self.deliveries[self.index_of(&f.event_id)].post == d.post);
            assert!(!busy, "two attempts of post p{} at once", d.post);
            self.in_flight.push(c);
        }
    }

    async fn finish(&mut self, pick: usize, next: NextState) {
        if self.in_flight.is_empty() {
            return;
        }
        let c = self.in_flight.remove(pick % self.in_flight.len());
        let next = match next {
            // Never past the last attempt: the store only records what it is told.
            NextState::RetryAt(_) => NextState::RetryAt(self.ts().add_millis(30_000)),
            other => other,
        };
        let outcome = match next {
            NextState::Delivered => AttemptOutcome::Response {
                status: 200,
                body_prefix: String::new(),
            },
            _ => AttemptOutcome::Response {
                status: 500,
                body_prefix: String::new(),
            },
        };
        let noticed = self
            .store
            .record_attempts(
                vec![FinishedAttempt {
                    delivery: c.id,
                    subscription_id: c.subscription_id.clone(),
                    attempt: c.attempt,
                    started_at: self.ts(),
                    duration_ms: 1,
                    outcome,
                    next,
                }],
                self.ts(),
            )
            .await
            .unwrap();
        // The health rules may pause it (72 h of failures, 50 failed deliveries).
        self.paused |= noticed
            .iter()
            .any(|n| n.kind == postwire_core::OperationalEventType::EndpointPaused);
        if matches!(next, NextState::Delivered | NextState::Failed) {
            let i = self.index_of(&c.event_id);
            self.deliveries[i].finished = true;
            let post = self.deliveries[i].post;
            self.ended.entry(post).or_default().push(c.event_id);
        }
    }

    async fn resume(&mut self) {
        if !self.paused {
            return;
        }
        let cutoff = self.now - WEEK;
        let summary = self
            .store
            .resume(SUB.into(), self.ts(), Timestamp::from_unix_millis(cutoff))
            .await
            .unwrap()
            .unwrap();
        // Unfinished and not in flight: expired when created before the cut-off. (An
        // attempt in flight stays the store's to record.)
        let flying: HashSet<&str> = self.in_flight.iter().map(|c| c.event_id.as_str()).collect();
        let mut expired = 0;
        for d in &mut self.deliveries {
            if !d.finished && d.created_at < cutoff && !flying.contains(d.event_id.as_str()) {
                d.finished = true;
                expired += 1;
            }
        }
        assert_eq!(summary.expired, expired, "expired by the model's count");
        self.paused = false;
    }

    async fn apply(&mut self, op: Op) {
        match op {
            Op::Publish(p) => self.publish(p).await,
            Op::Claim(n) => self.claim(n).await,
            Op::Succeed(i) => self.finish(i, NextState::Delivered).await,
            Op::RetryLater(i) => self.finish(i, NextState::RetryAt(self.ts())).await,
            Op::FailForGood(i) => self.finish(i, NextState::Failed).await,
            Op::Pause => {
                assert!(self.store.pause(SUB.into(), "paused by request".into()).await.unwrap());
                self.paused = true;
            }
            Op::Resume => self.resume().await,
            Op::Rotate => {
                let until = self.ts().add_millis(86_400_000);
                assert!(
                    self.store
                        .rotate_secret(SUB.into(), Secret::generate().unwrap(), until, rotated_notice(until))
                        .await
                        .unwrap()
                );
            }
            Op::Advance(hours) => self.now += hours * 3_600_000,
        }
    }
}

/// A new store of the suite's backend, with what keeps its database alive.
async fn open_store() -> (Box<dyn std::any::Any>, Box<dyn Store>) {
    match std::env::var("POSTWIRE_TEST_BACKEND").as_deref() {
        Ok("postgres") => {
            let db = postwire_testpg::database();
            let store = PostgresStore::connect(db.url()).await.unwrap();
            (Box::new(db), Box::new(store))
        }
        _ => {
            let dir = tempfile::tempdir().unwrap();
            let store = SqliteStore::open(dir.path().join("model.db")).unwrap();
            (Box::new(dir), Box::new(store))
        }
    }
}

async fn open() -> (Box<dyn std::any::Any>, Run) {
    let (dir, store) = open_store().await;
    let t0 = Timestamp::from_unix_millis(T0);
    store
        .upsert_workspace(Workspace {
            id: "ws".into(),
            name: "ws".into(),
        })
        .await
        .unwrap();
    let subscription = Subscription {
        id: SUB.into(),
        name: "model".into(),
        url: "https://hooks.example.com/model".into(),
        events: vec![],
        integrations: vec![],
        status: SubscriptionStatus::Enabled,
        created_by_kind: CreatedByKind::ApiToken,
        consecutive_failures: 0,
        last_success_at: None,
        created_at: t0,
        signing: Default::default(),
    };
    let stored = StoredSubscription {
        workspace_id: "ws".into(),
        subscription,
        secret: Secret::generate().unwrap(),
        previous_secret: None,
        failing_since: None,
        purpose: Default::default(),
    };
    store.insert_subscription(stored, None, None).await.unwrap();
    let run = Run {
        store,
        now: T0,
        paused: false,
        deliveries: Vec::new(),
        in_flight: Vec::new(),
        ended: HashMap::new(),
    };
    (dir, run)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn only_heads_are_claimed_and_every_delivery_ends_in_order(ops in prop::collection::vec(op(), 1..60)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let (_dir, mut run) = open().await;
            for op in ops {
                run.apply(op).await;
            }
            // Drain: resume, then claim and deliver until nothing is left.
            run.resume().await;
            for _ in 0..1_000 {
                if run.deliveries.iter().all(|d| d.finished) {
                    break;
                }
                while !run.in_flight.is_empty() {
                    run.finish(0, NextState::Delivered).await;
                }
                run.now += 3_600_000; // past any retry time
                run.claim(100).await;
            }
            assert!(run.deliveries.iter().all(|d| d.finished), "every delivery ended");
            let counts = run.store.delivery_counts(None).await.unwrap();
            assert_eq!((counts.pending, counts.waiting, counts.held), (0, 0, 0), "{counts:?}");
            assert_eq!(
                counts.delivered + counts.failed + counts.expired,
                run.deliveries.len() as u64
            );
            // Per post, attempts ended in publish order.
            for (post, ended) in &run.ended {
                let published: Vec<&String> = run
                    .deliveries
                    .iter()
                    .filter(|d| d.post == *post && ended.contains(&d.event_id))
                    .map(|d| &d.event_id)
                    .collect();
                let ended: Vec<&String> = ended.iter().collect();
                assert_eq!(ended, published, "post p{post} out of order");
            }
        });
    }
}

/// The case the property test found first: a retry 72 h after the first failed attempt
/// pauses the subscription (a health rule), so the drain must resume it.
#[test]
fn a_pause_by_the_health_rules_is_followed_by_the_model() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (_dir, mut run) = open().await;
        for op in [
            Op::Publish(0),
            Op::Claim(1),
            Op::RetryLater(0),
            Op::Advance(72),
            Op::Publish(0),
            Op::Claim(1),
            Op::RetryLater(0),
        ] {
            run.apply(op).await;
        }
        assert!(run.paused, "72 h of failures paused the subscription");
        run.resume().await;
        run.claim(100).await;
        assert_eq!(run.in_flight.len(), 1, "the head, and only it");
    });
}

/// The `endpoint.secret_rotated` notice a rotation of the model's subscription stores.
fn rotated_notice(until: Timestamp) -> postwire_sender::notices::NewNotice {
    let data = postwire_core::OperationalData::EndpointSecretRotated {
        subscription: postwire_core::SubscriptionRef {
            id: SUB.into(),
            name: "s".into(),
        },
        previous_secret_expires_at: until,
    };
    postwire_sender::notices::new_notice("ws", data, until).unwrap()
}
