//! The delivery queue: enqueue (an event and its deliveries, one transaction), claim
//! (due rows of `queue_heads`, leased in place), and the moves of a whole subscription's
//! queue (pause holds it, resume expires and re-sorts it). The statements are the SQLite
//! store's; the locks that make them safe between processes are described in the module
//! doc of `postgres`.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use bytes::Bytes;
use deadpool_postgres::{GenericClient, Transaction};
use postwire_core::{EventType, Integration, SigningMode, SubscriptionRef};

use super::*;
use crate::model::DeliveryId;
use crate::ordering::{self, Placement, ordering_hash};
use crate::routing::{self, EndpointRole, Route, Routed};
use crate::secret_box::{SecretCipher, StoredSecret};
use crate::signer::DeliverySigner;
use crate::signing::{SigningMaterial, signer_at};

/// The namespace (first key) of the two-key advisory locks claims take per subscription.
pub(super) const CLAIM_LOCK: i32 = 0x7077; // "pw"

/// Does (subscription, key) have an unfinished delivery? Then a new one waits behind it.
pub(super) const KEY_OPEN_SQL: &str = "SELECT 1 FROM deliveries
     WHERE sub_seq = $1 AND okey = $2 AND finished_at IS NULL LIMIT 1";

/// Which of the (subscription $1[i], key $2[i]) queues have an unfinished delivery? A
/// new one waits behind it. One index probe per queue: `OFFSET 0` keeps the `EXISTS` a
/// lookup per row, where the planner, with statistics taken while the table was small,
/// made it a hash join over every unfinished keyed delivery (150,000 rows hashed for
/// each publish of 100 events with that backlog, in the benchmark).
const KEYS_OPEN_SQL: &str = "SELECT k.sub, k.okey FROM unnest($1::bigint[], $2::bigint[]) AS k(sub, okey)
     WHERE EXISTS (SELECT 1 FROM deliveries d
                   WHERE d.sub_seq = k.sub AND d.okey = k.okey AND d.finished_at IS NULL OFFSET 0)";

/// Holds a subscription's unfinished deliveries, heads and waiting ones alike, and takes
/// its heads out of `queue_heads`, except the leased ones: an attempt in flight still
/// ends (its outcome deletes the row), and resume must not expire it. Claims skip a
/// paused subscription, so a leased row left here is never claimed.
const HOLD_SQL: &str = "WITH held AS (UPDATE deliveries SET state = 1 WHERE sub_seq = $1 AND state IN (0, 5))
     DELETE FROM queue_heads WHERE sub_seq = $1 AND owner IS NULL";

/// Inserts delivery rows (columns as arrays: row $1, subscription $2, event $3, key $4,
/// state $5; due and created at $6) and a `queue_heads` row for each head among them.
const INSERT_DELIVERIES_SQL: &str = "WITH d AS (
         INSERT INTO deliveries (seq, sub_seq, event_seq, okey, state, due_at, created_at)
         SELECT seq, sub, ev, okey, state, $6, $6
         FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[])
              AS u(seq, sub, ev, okey, state)
         RETURNING seq, sub_seq, event_seq, state)
     INSERT INTO queue_heads (delivery_seq, sub_seq, due_at, event_seq, attempts, created_at)
     SELECT seq, sub_seq, $6, event_seq, 0, $6 FROM d WHERE state = 0";

/// Inserts one delivery (subscription $1, event $2, key $3, state $4, due and created at
/// $5), with its `queue_heads` row if it is a head; returns its row number.
pub(super) const INSERT_DELIVERY_SQL: &str = "WITH d AS (
         INSERT INTO deliveries (sub_seq, event_seq, okey, state, due_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $5) RETURNING seq, sub_seq, event_seq, state),
     h AS (INSERT INTO queue_heads (delivery_seq, sub_seq, due_at, event_seq, attempts, created_at)
           SELECT seq, sub_seq, $5, event_seq, 0, $5 FROM d WHERE state = 0)
     SELECT seq FROM d";

/// The advisory lock of one (subscription, ordering key) queue, taken by publishes.
pub(super) fn queue_lock(sub_seq: i64, okey: i64) -> i64 {
    okey ^ sub_seq.wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as i64)
}

/// Holds every unfinished delivery of a subscription (it is being paused).
pub(super) async fn hold_unfinished(tx: &impl GenericClient, sub_seq: i64) -> Result<(), PgErr> {
    let st = tx.prepare_cached(HOLD_SQL).await?;
    tx.execute(&st, &[&sub_seq]).await?;
    Ok(())
}

/// Tells every listening process that something may be claimable (sent on commit).
pub(super) async fn notify_due(tx: &impl GenericClient) -> Result<(), PgErr> {
    let st = tx.prepare_cached("SELECT pg_notify($1, '')").await?;
    tx.execute(&st, &[&CHANNEL]).await?;
    Ok(())
}

/// Releases `owner`'s leases: a head is due again at its own due time, and the row of a
/// held delivery (its subscription was paused during the attempt) goes.
pub(super) async fn recover(store: &PostgresStore, owner: String) -> StoreResult<u64> {
    store
        .run("release leases", move |c: Client| {
            let owner = owner.clone();
            Box::pin(async move {
                let st = c
                    .prepare_cached(
                        "WITH mine AS (
                             SELECT q.delivery_seq, d.state, d.due_at FROM queue_heads q
                             JOIN deliveries d ON d.seq = q.delivery_seq
                             WHERE q.owner = $1 FOR UPDATE OF q),
                         gone AS (DELETE FROM queue_heads WHERE delivery_seq IN (
                             SELECT delivery_seq FROM mine WHERE state <> 0)),
                         back AS (UPDATE queue_heads q SET owner = NULL, due_at = m.due_at
                             FROM mine m WHERE q.delivery_seq = m.delivery_seq AND m.state = 0)
                         SELECT count(*) FROM mine",
                    )
                    .await?;
                Ok(c.query_one(&st, &[&owner]).await?.try_get::<_, i64>(0)?.max(0) as u64)
            })
        })
        .await
}

pub(super) async fn pause(store: &PostgresStore, id: String, reason: String) -> StoreResult<bool> {
    store
        .run("pause", move |mut c: Client| {
            let (id, reason) = (id.clone(), reason.clone());
            Box::pin(async move {
                let tx = c.transaction().await?;
                let Some(row) = tx
                    .query_opt(
                        "UPDATE subscriptions SET paused_reason = $2 WHERE id = $1 RETURNING seq",
                        &[&id, &reason],
                    )
                    .await?
                else {
                    return Ok(false);
                };
                hold_unfinished(&tx, row.try_get(0)?).await?;
                tx.commit().await.map_err(PgErr::Commit)?;
                Ok(true)
            })
        })
        .await
}

pub(super) async fn resume(
    store: &PostgresStore,
    id: String,
    now: Timestamp,
    cutoff: Timestamp,
) -> StoreResult<Option<ResumeSummary>> {
    store
        .run("resume", move |mut c: Client| {
            let id = id.clone();
            Box::pin(async move {
                let now_ms = now.unix_millis();
                let tx = c.transaction().await?;
                let Some(row) = tx
                    .query_opt(
                        "WITH old AS (
                             SELECT seq, paused_reason IS NOT NULL AS was_paused, workspace_id, name
                             FROM subscriptions WHERE id = $1 FOR UPDATE)
                         UPDATE subscriptions s SET paused_reason = NULL, consecutive_failures = 0,
                             failing_since = NULL, pause_warned = FALSE
                         FROM old WHERE s.seq = old.seq
                         RETURNING old.seq, old.was_paused, old.workspace_id, old.name",
                        &[&id],
                    )
                    .await?
                else {
                    return Ok(None);
                };
                let seq: i64 = row.try_get(0)?;
                let was_paused: bool = row.try_get(1)?;
                // A delivery whose attempt is still in flight (in any process) is not
                // expired under it: its outcome decides, and its successor must not
                // start before that.
                let expired = tx
                    .query_one(
                        "WITH gone AS (
                             UPDATE deliveries d SET state = $4, finished_at = $2
                             WHERE d.sub_seq = $1 AND d.state = 1 AND d.created_at < $3
                               AND NOT EXISTS (SELECT 1 FROM queue_heads q WHERE q.delivery_seq = d.seq
                                               AND q.owner IS NOT NULL AND q.due_at > $2)
                             RETURNING d.seq),
                         ended AS (DELETE FROM queue_heads WHERE delivery_seq IN (SELECT seq FROM gone))
                         SELECT count(*) FROM gone",
                        &[&seq, &now_ms, &cutoff.unix_millis(), &EXPIRED],
                    )
                    .await?
                    .try_get::<_, i64>(0)?
                    .max(0) as u64;
                // What is left is delivered in order: per key, the earliest is the head
                // and the others wait behind it.
                let waiting = tx
                    .execute(
                        "UPDATE deliveries d SET state = 5
                         WHERE d.sub_seq = $1 AND d.state = 1 AND d.okey IS NOT NULL AND EXISTS (
                             SELECT 1 FROM deliveries p
                             WHERE p.sub_seq = $1 AND p.okey = d.okey AND p.finished_at IS NULL AND p.seq < d.seq)",
                        &[&seq],
                    )
                    .await?;
                // The heads get their rows; one whose attempt is still in flight keeps its
                // lease (it is due again when the lease ends).
                let heads = tx
                    .query_one(
                        "WITH heads AS (
                             UPDATE deliveries SET state = 0, due_at = $2 WHERE sub_seq = $1 AND state = 1
                             RETURNING seq, sub_seq, due_at, event_seq, attempts, created_at),
                         rows AS (
                             INSERT INTO queue_heads (delivery_seq, sub_seq, due_at, event_seq, attempts, created_at)
                             SELECT * FROM heads
                             ON CONFLICT (delivery_seq) DO UPDATE SET due_at = excluded.due_at, owner = NULL
                                 WHERE queue_heads.owner IS NULL OR queue_heads.due_at <= $2)
                         SELECT count(*) FROM heads",
                        &[&seq, &now_ms],
                    )
                    .await?
                    .try_get::<_, i64>(0)?
                    .max(0) as u64;
                if heads > 0 {
                    notify_due(&tx).await?;
                }
                let summary = ResumeSummary {
                    released: waiting + heads,
                    expired,
                };
                if was_paused {
                    let about = SubscriptionRef {
                        id: id.clone(),
                        name: row.try_get(3)?,
                    };
                    let workspace_id: String = row.try_get(2)?;
                    let notice =
                        crate::notices::new_notice(&workspace_id, crate::notices::resumed_data(about, summary), now)
                            .map_err(data)?;
                    super::notices::insert(&tx, &notice).await?;
                }
                tx.commit().await.map_err(PgErr::Commit)?;
                Ok(Some(summary))
            })
        })
        .await
}

/// Most ordering queues one transaction locks one by one, with an advisory lock each.
/// PostgreSQL keeps advisory locks in a shared table sized for `max_locks_per_transaction`
/// (default 64) per connection, whatever the transaction; a publish of 1,000 events
/// into a workspace of 100 subscriptions has up to 100,000 queues, and locking each
/// failed with "out of shared memory" (every time it was tried again). Past this many
/// (together with the tables and indexes a publish touches, within the default
/// budget), the transaction locks its subscriptions' rows `FOR UPDATE` instead: one
/// row lock covers all of a subscription's queues, and row locks are kept in the rows,
/// not in that table.
const MAX_QUEUE_LOCKS: usize = 32;

/// How a transaction that places deliveries keeps another from placing in the same
/// (subscription, ordering key) queue at once (see the module doc of `postgres`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum QueueLocking {
    /// Subscription rows `FOR SHARE` (other publishes run beside it), and an advisory
    /// lock per queue, at most [`MAX_QUEUE_LOCKS`].
    PerQueue,
    /// Subscription rows `FOR UPDATE`: no other write places a delivery in any of their
    /// queues until it ends.
    WholeSubscriptions,
}

/// Most workspaces [`QueueLocking::expected`] remembers; past it, it starts over.
const WORKSPACES_REMEMBERED: usize = 10_000;

impl QueueLocking {
    /// How a publish of `events` should lock, from the workspaces' subscriptions at their
    /// last publish (`seen`): one lock per queue unless its keyed events times their
    /// workspace's subscriptions could pass [`MAX_QUEUE_LOCKS`]. A workspace not seen
    /// yet counts as none: the publish finds out after routing, and starts again.
    pub(super) fn expected(events: &[BuiltEvent], seen: &HashMap<String, usize>) -> QueueLocking {
        let queues: usize = events
            .iter()
            .filter(|e| e.ordering_key.is_some())
            .map(|e| seen.get(e.workspace_id()).copied().unwrap_or(0))
            .sum();
        if queues > MAX_QUEUE_LOCKS {
            QueueLocking::WholeSubscriptions
        } else {
            QueueLocking::PerQueue
        }
    }
}

/// Remembers how many subscriptions each of `routes`' workspaces has now: in place for a
/// workspace already known (no allocation on a publish's path), and by starting over
/// when a new one would pass [`WORKSPACES_REMEMBERED`].
fn remember(seen: &std::sync::Mutex<HashMap<String, usize>>, routes: &HashMap<String, Vec<(i64, Route)>>) {
    let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
    for (ws, subs) in routes {
        if let Some(n) = seen.get_mut(ws) {
            *n = subs.len();
            continue;
        }
        if seen.len() >= WORKSPACES_REMEMBERED {
            seen.clear();
        }
        seen.insert(ws.clone(), subs.len());
    }
}

/// Takes the advisory locks of `queues`, in one order for every process.
async fn lock_queues(tx: &impl GenericClient, queues: BTreeSet<i64>) -> Result<(), PgErr> {
    if queues.is_empty() {
        return Ok(());
    }
    let locks: Vec<i64> = queues.into_iter().collect();
    let st = tx
        .prepare_cached(
            "SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) WITH ORDINALITY AS t(k, n) ORDER BY n",
        )
        .await?;
    tx.query(&st, &[&locks]).await?;
    Ok(())
}

/// Each event's routes (subscription row, routing decision), and the advisory locks of
/// the ordering queues that get a delivery.
fn route_batch(
    events: &[BuiltEvent],
    routes: &HashMap<String, Vec<(i64, Route)>>,
) -> (Vec<Vec<(i64, Routed)>>, BTreeSet<i64>) {
    let mut routed: Vec<Vec<(i64, Routed)>> = Vec::with_capacity(events.len());
    let mut queues: BTreeSet<i64> = BTreeSet::new();
    for built in events {
        let key = built.ordering_key.as_ref().map(ordering_hash);
        let mut these = Vec::new();
        for (sub, route) in &routes[built.workspace_id()] {
            let Some(r) = routing::route(built, route) else {
                continue;
            };
            if let (Some(k), Routed::Deliver) = (key, r) {
                queues.insert(queue_lock(*sub, k));
            }
            these.push((*sub, r));
        }
        routed.push(these);
    }
    (routed, queues)
}

/// The routes of the subscriptions of `workspaces`, locked in row order (`FOR SHARE`,
/// or `FOR UPDATE` when the transaction does not lock queue by queue), with their row
/// numbers, by workspace.
async fn lock_routes(
    tx: &Transaction<'_>,
    workspaces: &[String],
    locking: QueueLocking,
) -> Result<HashMap<String, Vec<(i64, Route)>>, PgErr> {
    let st = tx
        .prepare_cached(match locking {
            QueueLocking::PerQueue => {
                "SELECT id, events, integrations, paused_reason IS NOT NULL, seq, workspace_id, purpose
                 FROM subscriptions WHERE workspace_id = ANY($1) ORDER BY seq FOR SHARE"
            }
            QueueLocking::WholeSubscriptions => {
                "SELECT id, events, integrations, paused_reason IS NOT NULL, seq, workspace_id, purpose
                 FROM subscriptions WHERE workspace_id = ANY($1) ORDER BY seq FOR UPDATE"
            }
        })
        .await?;
    let mut routes: HashMap<String, Vec<(i64, Route)>> = workspaces.iter().map(|w| (w.clone(), Vec::new())).collect();
    for r in tx.query(&st, &[&workspaces]).await? {
        let events: Vec<EventType> = serde_json::from_str(r.try_get::<_, &str>(1)?).map_err(data)?;
        let integrations: Vec<Integration> = serde_json::from_str(r.try_get::<_, &str>(2)?).map_err(data)?;
        let ids = integrations.into_iter().map(|i| i.id).collect();
        let route = Route {
            id: r.try_get(0)?,
            paused: r.try_get(3)?,
            role: EndpointRole::from_stored(r.try_get::<_, &str>(6)?, events, ids).map_err(data)?,
        };
        routes.entry(r.try_get(5)?).or_default().push((r.try_get(4)?, route));
    }
    Ok(routes)
}

pub(super) async fn enqueue(
    store: &PostgresStore,
    events: Vec<BuiltEvent>,
    now: Timestamp,
    completion: Option<Completion>,
) -> StoreResult<Vec<usize>> {
    let events = Arc::new(events);
    let completion = super::idempotency::Once::new(completion);
    let seen = store.subscriptions_seen.clone();
    store
        .run("enqueue", move |mut c: Client| {
            let (events, completion, seen) = (events.clone(), completion.clone(), seen.clone());
            Box::pin(async move {
                let now_ms = now.unix_millis();
                let mut workspaces: Vec<String> = events.iter().map(|b| b.workspace_id().to_owned()).collect();
                workspaces.sort();
                workspaces.dedup();
                // Route first (the rules decide), then lock the ordering queues that get a
                // delivery. A batch with more queues than the lock table has room for locks
                // its subscriptions' rows `FOR UPDATE` instead: chosen up front from the
                // workspaces' last publish, or found out after routing (then from a fresh
                // start).
                let mut locking = {
                    let seen = seen.lock().unwrap_or_else(|p| p.into_inner());
                    QueueLocking::expected(&events, &seen)
                };
                let (tx, routed) = loop {
                    let tx = c.transaction().await?;
                    let routes = lock_routes(&tx, &workspaces, locking).await?;
                    remember(&seen, &routes);
                    let (routed, queues) = route_batch(&events, &routes);
                    if locking == QueueLocking::PerQueue && queues.len() > MAX_QUEUE_LOCKS {
                        tx.rollback().await?;
                        locking = QueueLocking::WholeSubscriptions;
                        continue;
                    }
                    if locking == QueueLocking::PerQueue {
                        lock_queues(&tx, queues).await?;
                    }
                    break (tx, routed);
                };
                // A notice is queued once: by the first relay that marks it (another
                // relay's mark of the same row makes this one wait, then skip it).
                let mut keep = Vec::with_capacity(events.len());
                for built in events.iter() {
                    keep.push(match built.notice() {
                        Some(n) => super::notices::mark_relayed(&tx, n.notification_id, now_ms).await?,
                        None => true,
                    });
                }
                let kept = keep.iter().filter(|k| **k).count();
                // The whole batch in a fixed number of statements (arrays): event rows
                // numbered up front, so each delivery knows its event's row.
                let number = tx
                    .prepare_cached(
                        "SELECT nextval(pg_get_serial_sequence('events', 'seq')) FROM generate_series(1, $1)",
                    )
                    .await?;
                let mut event_seqs: Vec<i64> = tx
                    .query(&number, &[&(kept as i32)])
                    .await?
                    .iter()
                    .map(|r| r.try_get(0))
                    .collect::<Result<_, _>>()?;
                event_seqs.sort_unstable();
                let mut ev = EventColumns::default();
                let kept_events = events.iter().zip(&keep).filter(|(_, k)| **k).map(|(b, _)| b);
                for (built, seq) in kept_events.zip(&event_seqs) {
                    ev.seq.push(*seq);
                    ev.id.push(built.id());
                    ev.workspace.push(built.workspace_id());
                    ev.kind.push(built.type_name());
                    ev.post.push(built.post_id.as_deref());
                    ev.account
                        .push(crate::ordering::account_of(built.ordering_key.as_ref()));
                    ev.created.push(built.created_at().unix_millis());
                    ev.body.push(&built.body);
                    ev.external.push(
                        built
                            .external_id
                            .as_deref()
                            .map(|ext| crate::store::sqlite::external_key(built.workspace_id(), ext)),
                    );
                }
                let insert_events = tx
                    .prepare_cached(
                        "INSERT INTO events (seq, id, workspace_id, event_type, post_id, created_at, body, external_key,
                                             account_id)
                         SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[],
                                              $6::bigint[], $7::text[], $8::bigint[], $9::text[])",
                    )
                    .await?;
                tx.execute(
                    &insert_events,
                    &[
                        &ev.seq,
                        &ev.id,
                        &ev.workspace,
                        &ev.kind,
                        &ev.post,
                        &ev.created,
                        &ev.body,
                        &ev.external,
                        &ev.account,
                    ],
                )
                .await?;
                // Which keyed queues of the batch have an unfinished delivery already.
                let (mut ask_subs, mut ask_keys) = (Vec::new(), Vec::new());
                for ((built, these), _) in events.iter().zip(&routed).zip(&keep).filter(|(_, k)| **k) {
                    if let Some(k) = built.ordering_key.as_ref().map(ordering_hash) {
                        for (sub, r) in these {
                            if *r == Routed::Deliver {
                                ask_subs.push(*sub);
                                ask_keys.push(k);
                            }
                        }
                    }
                }
                let mut open: HashSet<(i64, i64)> = HashSet::new();
                if !ask_subs.is_empty() {
                    let key_open = tx.prepare_cached(KEYS_OPEN_SQL).await?;
                    for r in tx.query(&key_open, &[&ask_subs, &ask_keys]).await? {
                        open.insert((r.try_get(0)?, r.try_get(1)?));
                    }
                }
                let mut counts = Vec::with_capacity(events.len());
                let mut any_pending = false;
                let mut d_cols: (Vec<i64>, Vec<i64>, Vec<Option<i64>>, Vec<i64>) = Default::default();
                let mut seq_of = event_seqs.iter();
                for ((built, these), keep) in events.iter().zip(routed).zip(&keep) {
                    let next_seq = if *keep { seq_of.next() } else { None };
                    let Some(event_seq) = next_seq else {
                        counts.push(0);
                        continue;
                    };
                    let key = built.ordering_key.as_ref().map(ordering_hash);
                    for (sub, r) in &these {
                        let has_unfinished = match key {
                            // A delivery of the batch placed before this one counts too.
                            Some(k) if *r == Routed::Deliver => !open.insert((*sub, k)),
                            _ => false,
                        };
                        let state = match ordering::place(*r, has_unfinished) {
                            Placement::Head => PENDING,
                            Placement::Waiting => WAITING,
                            Placement::Held => HELD,
                        };
                        any_pending |= state == PENDING;
                        d_cols.0.push(*sub);
                        d_cols.1.push(*event_seq);
                        d_cols.2.push(key);
                        d_cols.3.push(state);
                    }
                    counts.push(these.len());
                }
                if !d_cols.0.is_empty() {
                    // Row numbers taken first and given in the batch's order: a queue's
                    // deliveries are ordered by row number.
                    let number = tx
                        .prepare_cached(
                            "SELECT nextval(pg_get_serial_sequence('deliveries', 'seq')) FROM generate_series(1, $1)",
                        )
                        .await?;
                    let mut seqs: Vec<i64> = tx
                        .query(&number, &[&(d_cols.0.len() as i32)])
                        .await?
                        .iter()
                        .map(|r| r.try_get(0))
                        .collect::<Result<_, _>>()?;
                    seqs.sort_unstable();
                    let insert_deliveries = tx.prepare_cached(INSERT_DELIVERIES_SQL).await?;
                    tx.execute(
                        &insert_deliveries,
                        &[&seqs, &d_cols.0, &d_cols.1, &d_cols.2, &d_cols.3, &now_ms],
                    )
                    .await?;
                }
                super::idempotency::complete(&tx, &completion, &counts).await?;
                if any_pending {
                    notify_due(&tx).await?;
                }
                tx.commit().await.map_err(PgErr::Commit)?;
                Ok(counts)
            })
        })
        .await
}

/// A batch of events as arrays, one per column.
#[derive(Default)]
struct EventColumns<'a> {
    seq: Vec<i64>,
    id: Vec<&'a str>,
    workspace: Vec<&'a str>,
    kind: Vec<&'a str>,
    post: Vec<Option<&'a str>>,
    created: Vec<i64>,
    body: Vec<&'a str>,
    external: Vec<Option<i64>>,
    /// The account of an account's own event (erasure by account).
    account: Vec<Option<&'a str>>,
}

/// A subscription a claim may take deliveries from.
struct Candidate {
    seq: i64,
    id: String,
    url: String,
    secret: String,
    previous: Option<(String, i64)>,
    signing: String,
    key: Option<String>,
    previous_key: Option<(String, i64)>,
}

/// The candidate's signer at `now`, as [`crate::signing::signer_at`] decides; keys are
/// opened only for subscriptions that sign with them.
fn signer(c: &Candidate, now: Timestamp, cipher: Option<&SecretCipher>) -> Result<Arc<DeliverySigner>, PgErr> {
    let now_ms = now.unix_millis();
    let mode: SigningMode = c.signing.parse().map_err(data)?;
    let previous_secret = match &c.previous {
        Some((text, until)) if *until > now_ms => Some((StoredSecret::open(cipher, text).map_err(data)?, ts(*until))),
        _ => None,
    };
    let (key, previous_key) = if mode.asymmetric() {
        let key = c
            .key
            .as_deref()
            .map(|k| StoredSecret::open_signing_key(cipher, k))
            .transpose()
            .map_err(data)?;
        let previous = match &c.previous_key {
            Some((text, until)) if *until > now_ms => {
                Some((StoredSecret::open_signing_key(cipher, text).map_err(data)?, ts(*until)))
            }
            _ => None,
        };
        (key, previous)
    } else {
        (None, None)
    };
    let material = SigningMaterial {
        mode,
        secret: StoredSecret::open(cipher, &c.secret).map_err(data)?,
        previous_secret,
        key,
        previous_key,
    };
    Ok(Arc::new(signer_at(material, now).map_err(data)?.0))
}

/// Most subscriptions one claim looks at (in turn: [`CANDIDATES_SQL`]), and never more
/// than the rows it may take: each one with room gives at least one row (one at its
/// limit gives none, which can leave a claim short until the next); the others wait for
/// the next claim. (Looking at 256 for a claim of 128 rows cost the take statement 5 ms instead
/// of 3 with 1,000 subscriptions queued.)
const MAX_SUBSCRIPTIONS_PER_CLAIM: i64 = 256;

/// How often the store vacuums `queue_heads` while it claims (see [`vacuum_heads`]).
const VACUUM_EVERY: Duration = Duration::from_secs(1);

/// `queued(sub)`: the subscriptions that have a row in `queue_heads`, found by skipping
/// through its `(sub_seq, …)` index one subscription at a time (and a last row of NULL),
/// so a statement that starts from it costs what the subscriptions with something queued
/// cost, not every subscription of every workspace.
macro_rules! queued_subscriptions {
    () => {
        "WITH RECURSIVE queued(sub) AS (
         (SELECT q.sub_seq FROM queue_heads q ORDER BY q.sub_seq LIMIT 1)
         UNION ALL
         SELECT (SELECT q.sub_seq FROM queue_heads q WHERE q.sub_seq > queued.sub ORDER BY q.sub_seq LIMIT 1)
         FROM queued WHERE queued.sub IS NOT NULL)"
    };
}

/// Subscriptions (not paused) with a claimable head, at most $2, each with its claim lock
/// (namespace $3) tried, earliest due first: `true` when this claim has it, `false` when
/// another process is claiming from that subscription right now (it is left to that
/// one). The lock is taken here and the leases are counted in the next statement, which
/// reads a snapshot taken after it: the per-subscription limit then holds across
/// processes. The lock's second key is the row number's low 31 bits (a plain `::int`
/// cast would fail every claim once a row number passed 2³¹); rows that share them share
/// a lock, which only keeps two processes from claiming both at once. Each row ends with
/// its earliest due time.
///
/// The subscriptions are found by a walk through the ones that have a row in
/// `queue_heads` (skipping through its `(sub_seq, due_at, …)` index one subscription at
/// a time), in row order from after $4 (the walk's first row, which has no due head) up
/// to $5, that stops once it has found $2 with a due head: a claim costs what it looks
/// at, about 13 blocks a subscription, not what is queued. A subscription's first
/// entry in that index is its earliest head, so one probe tells both which subscription
/// comes next and whether it has a head due: the entries of heads just leased or
/// finished, which lie at the front of a busy subscription's range until they are
/// vacuumed, are stepped over once rather than twice.
/// (It read every queued subscription's first head to pick the earliest due: 20,011
/// blocks to look at 16 of 2,000 due, as after an outage of the sender, and 5.6 ms a
/// claim with 1,000 queued; and before that every subscription's, queued or not: 8.6 ms
/// with 5,000 that had nothing.) The store moves $4 along from claim to claim
/// (`claim`), so that with more subscriptions due than a claim looks at, each gets its
/// turn. Each subscription is looked up by its row number (`OFFSET 0`: never a scan of
/// `subscriptions`).
pub(super) const CANDIDATES_SQL: &str = "WITH RECURSIVE walk(sub, due, found) AS (
         SELECT $4::bigint, NULL::bigint, 0::bigint
         UNION ALL
         SELECT n.sub, d.due, w.found + CASE WHEN d.due IS NULL THEN 0 ELSE 1 END
         FROM walk w
         CROSS JOIN LATERAL (
             SELECT q.sub_seq AS sub, q.due_at AS first FROM queue_heads q
             WHERE q.sub_seq > w.sub AND q.sub_seq <= $5
             ORDER BY q.sub_seq, q.due_at LIMIT 1) n
         CROSS JOIN LATERAL (
             SELECT CASE WHEN n.first <= $1 AND EXISTS (
                 SELECT 1 FROM subscriptions s WHERE s.seq = n.sub AND s.paused_reason IS NULL)
             THEN n.first END AS due) d
         WHERE w.found < $2::bigint)
     SELECT c.seq, c.id, c.url, c.secret, c.previous_secret, c.previous_secret_until, c.signing,
         c.signing_key, c.previous_signing_key, c.previous_signing_key_until,
         pg_try_advisory_xact_lock($3, (c.seq & 2147483647)::int), c.due FROM (
         SELECT s.*, walk.due FROM walk
         CROSS JOIN LATERAL (
             SELECT s.seq, s.id, s.url, s.secret, s.previous_secret, s.previous_secret_until,
                 s.signing, w.signing_key, w.previous_signing_key, w.previous_signing_key_until
             FROM subscriptions s LEFT JOIN workspaces w ON w.id = s.workspace_id
             WHERE s.seq = walk.sub AND s.paused_reason IS NULL OFFSET 0) s
         WHERE walk.due IS NOT NULL
         ORDER BY walk.due, s.seq LIMIT $2 OFFSET 0) c";

/// Takes the due heads of subscriptions $1[i] (in that order). Each one's room is the
/// limit less this process's claimed ones $2[i] and the live leases of the other
/// processes (owner before or after $7 in `queue_heads_leased`, counted up to $4),
/// counted once per subscription (`free` is materialised: inlined, the planner ran the
/// count twice, once for the filter and once for the `LIMIT`). The limit is $4 (twice
/// the request limit: claimed ahead) while no other process holds a lease of the
/// subscription, and $8 (the request limit) while one does: with room for twice the
/// requests shared out, two processes could each claim and send the request limit,
/// twice as many requests at once as the subscription allows. This process's own
/// leases are not read: the ones that make or wait for a request are $2[i], and the
/// ones whose request has ended, waiting for their outcome to be written, take no room
/// (as in the SQLite store). (The count read every lease of the subscription and left
/// out this process's ended attempts by name, a hashed list of them built and probed
/// twice a claim: with one busy subscription, hundreds of leases and 14 µs of the take
/// per delivery, now 11.5.) The claim's own
/// limit $5 is shared out in order, to each as many as it has due within its room: the
/// subscriptions' due heads are taken one subscription after the other (a nested loop
/// over the array, in its order) until $5 rows, where the `LIMIT` stops the scan, so no
/// head past it is locked. (Shared out by room alone, the first few subscriptions took
/// all of it: with 1,000 subscriptions of a few due deliveries each, claims of 23 rows
/// where 512 were wanted. Then each subscription's due heads were counted first, up to
/// its room, to share the limit by: with 100 subscriptions and a slow receiver, the
/// window over the counts ran them twice, 10,000 blocks a claim for 100 rows; and a
/// connection whose generic plan was made from the statistics of a small queue could
/// count with a bitmap scan, which reads every due head, 200 blocks a claim with 40,000
/// due in one subscription.) The heads are locked (`SKIP LOCKED`: a row an outcome is
/// being written for is left) and leased in place: owner $7, due again at the lease's
/// end $6. Returns them with their event's id and body, and their due time before the
/// claim (for the queue order). The rows are updated by their `ctid` (a locked row
/// stays where it is until the transaction ends), not looked up again by key. `OFFSET 0`
/// keeps each lateral subquery a per-row lookup.
pub(super) const TAKE_SQL: &str = "WITH free AS MATERIALIZED (
         SELECT r.sub, greatest(CASE WHEN o.n = 0 THEN $4 ELSE $8 END - r.here - o.n, 0) AS free
         FROM unnest($1::bigint[], $2::bigint[]) AS r(sub, here)
         CROSS JOIN LATERAL (
             SELECT count(*) AS n FROM (
                 (SELECT 1 FROM queue_heads q WHERE q.sub_seq = r.sub AND q.owner < $7 AND q.due_at > $3)
                 UNION ALL
                 (SELECT 1 FROM queue_heads q WHERE q.sub_seq = r.sub AND q.owner > $7 AND q.due_at > $3)
                 LIMIT $4) x) o),
     picked AS (
         SELECT p.ctid, p.delivery_seq, p.due_at FROM free
         CROSS JOIN LATERAL (
             SELECT q.ctid, q.delivery_seq, q.due_at FROM queue_heads q
             WHERE q.sub_seq = free.sub AND q.due_at <= $3
             ORDER BY q.due_at, q.delivery_seq LIMIT free.free FOR UPDATE SKIP LOCKED) p
         WHERE free.free > 0
         LIMIT $5),
     taken AS (
         UPDATE queue_heads SET owner = $7, due_at = $6
         WHERE ctid = ANY(ARRAY(SELECT ctid FROM picked))
         RETURNING sub_seq, delivery_seq, attempts, created_at, event_seq)
     SELECT t.sub_seq, t.delivery_seq, t.attempts, t.created_at, p.due_at, e.id, e.body
     FROM taken t JOIN picked p ON p.delivery_seq = t.delivery_seq
     CROSS JOIN LATERAL (SELECT id, body FROM events WHERE events.seq = t.event_seq OFFSET 0) e";

pub(super) async fn claim(store: &PostgresStore, req: ClaimRequest) -> StoreResult<Vec<ClaimedDelivery>> {
    let cipher = store.cipher.clone();
    let cursor = store.claim_cursor.clone();
    let req = Arc::new(req);
    let out = store
        .run("claim", move |c: Client| {
            let cipher = cipher.clone();
            let cursor = cursor.clone();
            let req = req.clone();
            Box::pin(async move {
                let now_ms = req.now.unix_millis();
                let until_ms = req.lease_until.unix_millis();
                if req.limit == 0 {
                    return Ok(Vec::new());
                }
                // A claim of n rows takes them from at most n subscriptions.
                let looked_at = MAX_SUBSCRIPTIONS_PER_CLAIM.min(bigint(req.limit));
                // Two round trips: `BEGIN` with the candidates, the take with `COMMIT` (a
                // third when the walk through the subscriptions starts over).
                let candidates = c.prepare_cached(CANDIDATES_SQL).await?;
                let take = c.prepare_cached(TAKE_SQL).await?;
                let tx = PipelinedTx::new(c);
                let from = cursor.load(std::sync::atomic::Ordering::Relaxed);
                let mut rows = tx
                    .begin_with(
                        tx.client()
                            .query(&candidates, &[&now_ms, &looked_at, &CLAIM_LOCK, &from, &i64::MAX]),
                    )
                    .await?;
                let mut next = turn_ends_at(&rows, looked_at)?;
                if next.is_none() && from > 0 {
                    // The walk passed the last queued subscription before it found enough:
                    // it goes on from the first, up to where it began.
                    let rest = looked_at - rows.len() as i64;
                    let more = tx
                        .client()
                        .query(&candidates, &[&now_ms, &rest, &CLAIM_LOCK, &0i64, &from])
                        .await?;
                    next = turn_ends_at(&more, rest)?;
                    rows.extend(more);
                    let mut keyed = Vec::with_capacity(rows.len());
                    for r in rows {
                        keyed.push(((r.try_get::<_, i64>(11)?, r.try_get::<_, i64>(0)?), r));
                    }
                    keyed.sort_by_key(|(k, _)| *k);
                    rows = keyed.into_iter().map(|(_, r)| r).collect();
                }
                cursor.store(next.unwrap_or(0), std::sync::atomic::Ordering::Relaxed);
                let mut candidates = Vec::with_capacity(rows.len());
                for r in rows {
                    // Another process is claiming from this one: left to it.
                    if !r.try_get::<_, bool>(10)? {
                        continue;
                    }
                    let previous = match (r.try_get::<_, Option<String>>(4)?, r.try_get::<_, Option<i64>>(5)?) {
                        (Some(s), Some(until)) => Some((s, until)),
                        _ => None,
                    };
                    candidates.push(Candidate {
                        seq: r.try_get(0)?,
                        id: r.try_get(1)?,
                        url: r.try_get(2)?,
                        secret: r.try_get(3)?,
                        previous,
                        signing: r.try_get(6)?,
                        key: r.try_get(7)?,
                        previous_key: match (r.try_get::<_, Option<String>>(8)?, r.try_get::<_, Option<i64>>(9)?) {
                            (Some(k), Some(until)) => Some((k, until)),
                            _ => None,
                        },
                    });
                }
                if candidates.is_empty() {
                    tx.commit().await?;
                    return Ok(Vec::new());
                }
                let subs: Vec<i64> = candidates.iter().map(|c| c.seq).collect();
                let here: Vec<i64> = candidates
                    .iter()
                    .map(|c| bigint(req.in_flight.get(&c.id).copied().unwrap_or(0)))
                    .collect();
                let per_subscription = bigint(req.per_subscription_limit);
                let shared = bigint(req.shared_per_subscription_limit);
                let limit = bigint(req.limit);
                let rows = tx
                    .commit_with(tx.client().query(
                        &take,
                        &[
                            &subs,
                            &here,
                            &now_ms,
                            &per_subscription,
                            &limit,
                            &until_ms,
                            &req.owner,
                            &shared,
                        ],
                    ))
                    .await?;
                // Committed already: should the rows not make deliveries (a stored
                // secret that cannot be opened), the leases just taken are given back, as a
                // rollback would have left them, before the error is returned.
                match deliveries_of(&rows, &candidates, &req, cipher.as_deref()) {
                    Ok(out) => Ok(out),
                    Err(e) => {
                        let (mut seqs, mut due) = (Vec::new(), Vec::new());
                        for r in &rows {
                            seqs.push(r.try_get::<_, i64>(1)?);
                            due.push(r.try_get::<_, i64>(4)?);
                        }
                        let release = tx.client().prepare_cached(UNTAKE_SQL).await?;
                        tx.client().execute(&release, &[&seqs, &due, &req.owner]).await?;
                        Err(e)
                    }
                }
            })
        })
        .await?;
    if !out.is_empty() {
        vacuum_heads(store);
    }
    Ok(out)
}

/// Where the next claim's walk through the subscriptions starts: after the last one this
/// walk found when it found all it looked for (`limit` rows, in row order), otherwise
/// (it reached the end) from the first.
fn turn_ends_at(rows: &[tokio_postgres::Row], limit: i64) -> Result<Option<i64>, PgErr> {
    if (rows.len() as i64) < limit {
        return Ok(None);
    }
    let mut last = None;
    for r in rows {
        last = last.max(Some(r.try_get::<_, i64>(0)?));
    }
    Ok(last)
}

/// Gives back leases a claim took (rows $1, due before the claim at $2, owner $3).
const UNTAKE_SQL: &str = "UPDATE queue_heads q SET owner = NULL, due_at = u.due
     FROM unnest($1::bigint[], $2::bigint[]) AS u(seq, due)
     WHERE q.delivery_seq = u.seq AND q.owner = $3";

/// The deliveries of the heads a claim took (the rows of [`TAKE_SQL`]), in queue order
/// per subscription, each with its subscription's signer.
fn deliveries_of(
    rows: &[tokio_postgres::Row],
    candidates: &[Candidate],
    req: &ClaimRequest,
    cipher: Option<&SecretCipher>,
) -> Result<Vec<ClaimedDelivery>, PgErr> {
    // In queue order per subscription (the statement's rows come in no order).
    let mut keyed = Vec::with_capacity(rows.len());
    for r in rows.iter() {
        let key: (i64, i64, i64) = (r.try_get(0)?, r.try_get(4)?, r.try_get(1)?);
        keyed.push((key, r));
    }
    keyed.sort_by_key(|(key, _)| *key);
    let rows = keyed.into_iter().map(|(_, r)| r);
    let by_seq: HashMap<i64, &Candidate> = candidates.iter().map(|c| (c.seq, c)).collect();
    let mut signers: HashMap<i64, Arc<DeliverySigner>> = HashMap::new();
    let mut bodies: HashMap<String, Bytes> = HashMap::new();
    let mut out = Vec::new();
    for r in rows {
        let sub: i64 = r.try_get(0)?;
        let Some(cand) = by_seq.get(&sub) else { continue };
        let signer = match signers.get(&sub) {
            Some(s) => s.clone(),
            None => {
                let s = signer(cand, req.now, cipher)?;
                signers.insert(sub, s.clone());
                s
            }
        };
        let event_id: String = r.try_get(5)?;
        let body = match bodies.get(&event_id) {
            Some(b) => b.clone(),
            None => {
                let b = Bytes::from(r.try_get::<_, String>(6)?);
                bodies.insert(event_id.clone(), b.clone());
                b
            }
        };
        out.push(ClaimedDelivery {
            id: DeliveryId(r.try_get(1)?),
            subscription_id: cand.id.clone(),
            event_id,
            body,
            url: cand.url.clone(),
            signer,
            attempt: r.try_get::<_, i64>(2)? as u32 + 1,
            created_at: ts(r.try_get(3)?),
        });
    }
    Ok(out)
}

/// Vacuums `queue_heads` in the background, at most every [`VACUUM_EVERY`] (per store,
/// and only when no process has vacuumed it within that time: [`vacuum_if_due`];
/// `SKIP_LOCKED`, so a vacuum running already, from another process, is not waited
/// for; without truncating the table, which would lock out the claims while it looks
/// for empty pages at its end: they are reused anyway). Each claim and each outcome
/// leaves a dead entry in its indexes, at the front of the claimable range, that every
/// claim steps over until a vacuum removes it; the table holds the heads only, so
/// vacuuming it often costs little, where PostgreSQL's autovacuum looks once a minute by
/// default.
fn vacuum_heads(store: &PostgresStore) {
    {
        let mut last = store.vacuumed.lock().unwrap_or_else(|p| p.into_inner());
        if last.elapsed() < VACUUM_EVERY {
            return;
        }
        *last = Instant::now();
    }
    let pool = store.pool.clone();
    tokio::spawn(async move {
        let result = match pool.get().await {
            Ok(c) => vacuum_if_due(&c).await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = result {
            tracing::debug!(error = %e, "vacuuming queue_heads failed; the next claim tries again");
        }
    });
}

/// Was `queue_heads` last vacuumed (by hand: by a store) at least [`VACUUM_EVERY`] ago,
/// or never? The server's own statistics, so shared by every process: with several
/// processes claiming, the table is vacuumed about once a period rather than once per
/// process (each vacuum reads the whole table and its indexes: 40 ms at 25,000
/// deliveries/s in the benchmark).
const VACUUM_DUE_SQL: &str = "SELECT coalesce(
         pg_stat_get_last_vacuum_time('queue_heads'::regclass) < now() - make_interval(secs => $1), true)";

/// Vacuums `queue_heads` unless a process did within [`VACUUM_EVERY`]; true if it did.
pub(super) async fn vacuum_if_due(c: &tokio_postgres::Client) -> Result<bool, tokio_postgres::Error> {
    let due: bool = c
        .query_one(VACUUM_DUE_SQL, &[&VACUUM_EVERY.as_secs_f64()])
        .await?
        .try_get(0)?;
    if due {
        c.batch_execute("VACUUM (SKIP_LOCKED, TRUNCATE false) queue_heads")
            .await?;
    }
    Ok(due)
}

/// The earliest due time of a head of a subscription that is not paused: a due head, a
/// retry, or the end of a lease (when it is claimable again); from the subscriptions with
/// something queued only. An idle dispatcher asks at every poll.
pub(super) const NEXT_DUE_SQL: &str = concat!(
    queued_subscriptions!(),
    " SELECT min(h.due_at) FROM queued
     CROSS JOIN LATERAL (
         SELECT q.due_at FROM queue_heads q WHERE q.sub_seq = queued.sub ORDER BY q.due_at LIMIT 1) h
     WHERE EXISTS (SELECT 1 FROM subscriptions s WHERE s.seq = queued.sub AND s.paused_reason IS NULL)"
);

/// See [`NEXT_DUE_SQL`].
pub(super) async fn next_due_at(store: &PostgresStore) -> StoreResult<Option<Timestamp>> {
    store
        .run("next due time", |c: Client| {
            Box::pin(async move {
                let st = c.prepare_cached(NEXT_DUE_SQL).await?;
                Ok(c.query_one(&st, &[]).await?.try_get::<_, Option<i64>>(0)?.map(ts))
            })
        })
        .await
}
