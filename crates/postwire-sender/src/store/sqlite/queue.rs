//! The delivery queue: enqueue (an event and its deliveries, one transaction), claim
//! (due queue heads, leased in memory), and the moves of a whole subscription's queue
//! (pause holds it, resume expires and re-sorts it). See the module doc of `sqlite` for
//! the queue-of-heads design these keep.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use postwire_core::{EventType, Integration, SubscriptionRef, Timestamp};
use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::registry::sub_seq;
use super::*;
use crate::events::BuiltEvent;
use crate::idempotency::Completion;
use crate::model::{DeliveryId, ResumeSummary};
use crate::notices;
use crate::ordering::{self, Placement, ordering_hash};
use crate::routing::{self, EndpointRole, Route, Routed};
use crate::store::{BoxFuture, ClaimRequest, ClaimedDelivery, StoreResult};

// The queries that must be served by a partial index spell their states as literals:
// SQLite uses a partial index only when the query's own terms imply its condition. The
// test `hot_queries_use_their_indexes` checks the plans.

/// One subscription's queue heads, by due time.
pub(super) const QUEUE_SQL: &str = "SELECT seq, due_at FROM deliveries INDEXED BY deliveries_due
     WHERE state = 0 AND sub_seq = ?1 ORDER BY due_at, seq";

/// Does (subscription, key) have an unfinished delivery? Then a new one waits behind it.
pub(super) const KEY_OPEN_SQL: &str = "SELECT 1 FROM deliveries INDEXED BY deliveries_open
     WHERE sub_seq = ?1 AND okey = ?2 AND finished_at IS NULL LIMIT 1";

/// Makes the earliest waiting delivery of (subscription, key) its queue's head, in state
/// ?3, due at ?4.
pub(super) const PROMOTE_SQL: &str = "UPDATE deliveries SET state = ?3, due_at = ?4 WHERE seq = (
     SELECT seq FROM deliveries INDEXED BY deliveries_open
     WHERE sub_seq = ?1 AND okey = ?2 AND finished_at IS NULL AND state = 5 ORDER BY seq LIMIT 1)";

/// Holds a subscription's unfinished deliveries, heads and waiting ones alike: resume
/// sorts them into heads and waiting again.
pub(super) const HOLD_PENDING_SQL: &str = "UPDATE deliveries SET state = 1 WHERE sub_seq = ?1 AND state = 0";

pub(super) const HOLD_WAITING_SQL: &str = "UPDATE deliveries SET state = 1 WHERE seq IN (
     SELECT seq FROM deliveries INDEXED BY deliveries_open
     WHERE sub_seq = ?1 AND okey IS NOT NULL AND finished_at IS NULL AND state = 5)";

/// After an expiry, a held keyed delivery behind an earlier unfinished one of its key
/// waits.
pub(super) const REQUEUE_WAITING_SQL: &str = "UPDATE deliveries SET state = 5
     WHERE sub_seq = ?1 AND state = 1 AND okey IS NOT NULL AND EXISTS (
         SELECT 1 FROM deliveries p INDEXED BY deliveries_open
         WHERE p.sub_seq = ?1 AND p.okey = deliveries.okey AND p.finished_at IS NULL AND p.seq < deliveries.seq)";

/// Expires held deliveries created before ?4.
pub(super) const EXPIRE_HELD_SQL: &str =
    "UPDATE deliveries SET state = ?2, finished_at = ?3 WHERE sub_seq = ?1 AND state = 1 AND created_at < ?4";

/// Makes held deliveries (by then, the heads) pending, due at ?2.
pub(super) const RELEASE_HELD_SQL: &str =
    "UPDATE deliveries SET state = 0, due_at = ?2 WHERE sub_seq = ?1 AND state = 1";

/// The routes of a workspace's subscriptions, with their row numbers.
fn routes_of(tx: &Connection, workspace_id: &str) -> rusqlite::Result<Vec<(i64, Route)>> {
    let mut stmt = tx.prepare_cached(
        "SELECT id, events, integrations, paused_reason IS NOT NULL, seq, purpose FROM subscriptions
         WHERE workspace_id = ?1 ORDER BY seq",
    )?;
    let rows = stmt.query_map([workspace_id], |r| {
        let events: Vec<EventType> = serde_json::from_str(&r.get::<_, String>(1)?).map_err(conversion)?;
        let integrations: Vec<Integration> = serde_json::from_str(&r.get::<_, String>(2)?).map_err(conversion)?;
        let ids = integrations.into_iter().map(|i| i.id).collect();
        let route = Route {
            id: r.get(0)?,
            paused: r.get(3)?,
            role: EndpointRole::from_stored(&r.get::<_, String>(5)?, events, ids).map_err(conversion)?,
        };
        Ok((r.get(4)?, route))
    })?;
    rows.collect()
}

/// Holds every unfinished delivery of a subscription (it is being paused).
pub(super) fn hold_unfinished(tx: &Connection, sub_seq: i64) -> rusqlite::Result<()> {
    tx.prepare_cached(HOLD_PENDING_SQL)?.execute([sub_seq])?;
    tx.prepare_cached(HOLD_WAITING_SQL)?.execute([sub_seq])?;
    Ok(())
}

pub(super) fn recover(store: &SqliteStore, _owner: String) -> BoxFuture<'_, StoreResult<u64>> {
    let leases = store.leases.clone();
    Box::pin(async move {
        let mut map = leases.lock().unwrap_or_else(|p| p.into_inner());
        let n = map.len() as u64;
        map.clear();
        Ok(n)
    })
}

pub(super) fn pause(store: &SqliteStore, id: String, reason: String) -> BoxFuture<'_, StoreResult<bool>> {
    store.write(move |tx| {
        let Some(seq) = sub_seq(tx, &id)? else { return Ok(false) };
        tx.execute(
            "UPDATE subscriptions SET paused_reason = ?2 WHERE seq = ?1",
            params![seq, reason],
        )?;
        hold_unfinished(tx, seq)?;
        Ok(true)
    })
}

pub(super) fn resume(
    store: &SqliteStore,
    id: String,
    now: Timestamp,
    cutoff: Timestamp,
) -> BoxFuture<'_, StoreResult<Option<ResumeSummary>>> {
    let (hints, leases) = (store.due.clone(), store.leases.clone());
    let write = move |tx: &Transaction<'_>| {
        let Some((seq, was_paused, workspace_id, name)) = tx
            .prepare_cached(
                "SELECT seq, paused_reason IS NOT NULL, workspace_id, name FROM subscriptions WHERE id = ?1",
            )?
            .query_row([&id], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, bool>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })
            .optional()?
        else {
            return Ok(None);
        };
        let now_ms = now.unix_millis();
        tx.execute(
            "UPDATE subscriptions SET paused_reason = NULL, consecutive_failures = 0, failing_since = NULL,
                 pause_warned = 0 WHERE seq = ?1",
            [seq],
        )?;
        let mut expired = tx.execute(EXPIRE_HELD_SQL, params![seq, EXPIRED, now_ms, cutoff.unix_millis()])?;
        // A delivery whose attempt is still in flight is not expired under it: its
        // outcome decides, and its successor must not start before that.
        let in_flight: Vec<i64> = {
            let leases = leases.lock().unwrap_or_else(|p| p.into_inner());
            leases
                .iter()
                .filter(|(_, until)| **until > now_ms)
                .map(|(d, _)| *d)
                .collect()
        };
        let mut unexpire = tx.prepare_cached(
            "UPDATE deliveries SET state = 1, finished_at = NULL
             WHERE seq = ?1 AND sub_seq = ?2 AND state = 4 AND finished_at = ?3",
        )?;
        for delivery in in_flight {
            expired -= unexpire.execute(params![delivery, seq, now_ms])?;
        }
        // What is left is delivered in order: per key, the earliest is the head and
        // the others wait behind it.
        let waiting = tx.execute(REQUEUE_WAITING_SQL, [seq])?;
        let released = waiting + tx.execute(RELEASE_HELD_SQL, params![seq, now_ms])?;
        let summary = ResumeSummary {
            released: released as u64,
            expired: expired as u64,
        };
        if was_paused {
            let about = SubscriptionRef { id: id.clone(), name };
            let notice =
                notices::new_notice(&workspace_id, notices::resumed_data(about, summary), now).map_err(conversion)?;
            super::notices::insert(tx, &notice)?;
        }
        Ok(Some((seq, now_ms, summary)))
    };
    store.write_then(write, move |out| {
        out.map(|(seq, released_due, summary)| {
            hints.lock().unwrap_or_else(|p| p.into_inner()).lower(seq, released_due);
            summary
        })
    })
}

pub(super) fn enqueue(
    store: &SqliteStore,
    events: Vec<BuiltEvent>,
    now: Timestamp,
    completion: Option<Completion>,
) -> BoxFuture<'_, StoreResult<Vec<usize>>> {
    let hints = store.due.clone();
    let (fresh, next_delivery) = (store.fresh.clone(), store.next_delivery.clone());
    let write = move |tx: &Transaction<'_>| {
        let now_ms = now.unix_millis();
        // The subscriptions given a pending delivery: due from `now`, once committed.
        let mut became_due: Vec<i64> = Vec::new();
        let mut routes: HashMap<String, Vec<(i64, Route)>> = HashMap::new();
        let mut counts = Vec::with_capacity(events.len());
        // Each event with its new pending deliveries, for their first claims.
        let mut made: Vec<(Arc<FreshEvent>, Vec<i64>)> = Vec::with_capacity(events.len());
        let mut insert_event = tx.prepare_cached(
            "INSERT INTO events (seq, id, workspace_id, event_type, post_id, created_at, body, external_key, account_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?;
        // Numbered here, as SQLite would (one past the largest), since an event's
        // external-id key holds its number's bucket.
        let mut event_seq: i64 = tx
            .prepare_cached("SELECT IFNULL(MAX(seq), 0) FROM events")?
            .query_row([], |r| r.get(0))?;
        let mut key_open = tx.prepare_cached(KEY_OPEN_SQL)?;
        let mut insert_delivery = tx.prepare_cached(
            "INSERT INTO deliveries (seq, sub_seq, event_seq, okey, state, due_at, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?;
        for built in events {
            // A notice is queued once: by the first relay that marks it.
            if let Some(notice) = built.notice()
                && !super::notices::mark_relayed(tx, notice.notification_id, now_ms)?
            {
                counts.push(0);
                continue;
            }
            event_seq += 1;
            insert_event.execute(params![
                event_seq,
                built.id(),
                built.workspace_id(),
                built.type_name(),
                built.post_id,
                built.created_at().unix_millis(),
                built.body,
                built
                    .external_id
                    .as_deref()
                    .map(|ext| super::schema::external_key_in_bucket(event_seq, built.workspace_id(), ext)),
                crate::ordering::account_of(built.ordering_key.as_ref())
            ])?;
            if !routes.contains_key(built.workspace_id()) {
                routes.insert(built.workspace_id().to_owned(), routes_of(tx, built.workspace_id())?);
            }
            let key = built.ordering_key.as_ref().map(ordering_hash);
            let mut pending = Vec::new();
            let mut n = 0;
            for (sub, route) in &routes[built.workspace_id()] {
                // The rules decide (routing, then ordering); this stores what they say.
                let Some(routed) = routing::route(&built, route) else {
                    continue;
                };
                let has_unfinished = match key {
                    Some(k) if routed == Routed::Deliver => key_open.exists(params![sub, k])?,
                    _ => false,
                };
                let state = match ordering::place(routed, has_unfinished) {
                    Placement::Head => PENDING,
                    Placement::Waiting => WAITING,
                    Placement::Held => HELD,
                };
                let seq = next_delivery.fetch_add(1, Ordering::Relaxed);
                insert_delivery.execute(params![seq, sub, event_seq, key, state, now_ms, now_ms])?;
                if state == PENDING {
                    pending.push(seq);
                    if !became_due.contains(sub) {
                        became_due.push(*sub);
                    }
                }
                n += 1;
            }
            counts.push(n);
            if !pending.is_empty() {
                let event = FreshEvent {
                    id: built.id().to_owned(),
                    body: Bytes::from(built.body),
                };
                made.push((Arc::new(event), pending));
            }
        }
        if let Some(completion) = completion {
            super::idempotency::complete(tx, completion, &counts)?;
        }
        // Before the commit is safe: row numbers are never reused, so an entry whose
        // write rolls back is never asked for (see `fresh.rs`).
        let mut fresh = fresh.lock().unwrap_or_else(|p| p.into_inner());
        for (event, rows) in made {
            fresh.add(event, &rows, now_ms);
        }
        Ok((counts, became_due))
    };
    store.write_then(write, move |(counts, became_due)| {
        let mut due = hints.lock().unwrap_or_else(|p| p.into_inner());
        for sub in became_due {
            due.lower(sub, now.unix_millis());
        }
        counts
    })
}

pub(super) fn claim(store: &SqliteStore, req: ClaimRequest) -> BoxFuture<'_, StoreResult<Vec<ClaimedDelivery>>> {
    let (leases, cache, due) = (store.leases.clone(), store.targets.clone(), store.due.clone());
    let fresh = store.fresh.clone();
    Box::pin(store.claims.read(move |conn| {
        // The hints are locked before the snapshot starts and until the claim is done
        // (see the module doc). Claiming writes nothing to the file (leases live in
        // memory); one read transaction gives the scan a single snapshot.
        let mut leases = leases.lock().unwrap_or_else(|p| p.into_inner());
        let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
        let mut due = due.lock().unwrap_or_else(|p| p.into_inner());
        let tx = conn.transaction()?;
        let now_ms = req.now.unix_millis();
        let mut chosen: Vec<(i64, Arc<Target>)> = Vec::new();
        {
            // Only queue heads are pending, so every due row read that is not in
            // flight is claimable: a claim's cost does not depend on how many
            // deliveries wait behind the heads.
            let mut queue = tx.prepare_cached(QUEUE_SQL)?;
            for sub in due.due(now_ms) {
                if chosen.len() >= req.limit {
                    break;
                }
                let Some(target) = cache.get(&tx, sub, req.now)? else {
                    due.set(sub, None); // deleted, with its deliveries
                    continue;
                };
                let busy = req.in_flight.get(&target.id).copied().unwrap_or(0);
                // A full subscription keeps its place: it is looked at again next time.
                let mut room = req.per_subscription_limit.saturating_sub(busy);
                if room == 0 {
                    continue;
                }
                // The next time this queue may have something to claim, from what it shows.
                let mut next: Option<i64> = None;
                let mut rows = queue.query([sub])?;
                while let Some(r) = rows.next()? {
                    let (seq, due_at): (i64, i64) = (r.get(0)?, r.get(1)?);
                    if due_at > now_ms {
                        next = Some(next.map_or(due_at, |n| n.min(due_at)));
                        break;
                    }
                    if let Some(until) = leases.get(&seq).copied().filter(|until| *until > now_ms) {
                        // In flight (at most the dispatcher's claim-ahead room per
                        // subscription); claimable again only if its lease runs out.
                        next = Some(next.map_or(until, |n| n.min(until)));
                        continue;
                    }
                    if room == 0 || chosen.len() >= req.limit {
                        next = Some(now_ms); // more is claimable now
                        break;
                    }
                    chosen.push((seq, target.clone()));
                    room -= 1;
                    // Leased from now on: if its outcome is never written (the write
                    // fails), the queue must be looked at again when the lease ends.
                    let until = req.lease_until.unix_millis();
                    next = Some(next.map_or(until, |n| n.min(until)));
                }
                due.set(sub, next);
            }
        }
        // First claims of new deliveries find what they need in memory; the others
        // read it from the file.
        let fresh: Vec<_> = {
            let mut fresh = fresh.lock().unwrap_or_else(|p| p.into_inner());
            chosen.iter().map(|(seq, _)| fresh.take(*seq)).collect()
        };
        let mut delivery =
            tx.prepare_cached("SELECT event_seq, attempts, created_at FROM deliveries WHERE seq = ?1")?;
        let mut event = tx.prepare_cached("SELECT id, body FROM events WHERE seq = ?1")?;
        // One event goes to many subscriptions: read its body once per claim and share it.
        let mut events: HashMap<i64, (String, Bytes)> = HashMap::new();
        let mut out = Vec::with_capacity(chosen.len());
        for ((seq, target), fresh) in chosen.into_iter().zip(fresh) {
            // (event id, body, attempts so far, created at)
            let (event_id, body, attempts, created_at) = match fresh {
                Some(f) => (f.event.id.clone(), f.event.body.clone(), 0, f.created_at),
                None => {
                    let (event_seq, attempts, created_at): (i64, i64, i64) =
                        delivery.query_row([seq], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
                    let (event_id, body) = match events.entry(event_seq) {
                        std::collections::hash_map::Entry::Occupied(e) => e.get().clone(),
                        std::collections::hash_map::Entry::Vacant(e) => e
                            .insert(event.query_row([event_seq], |r| {
                                Ok((r.get::<_, String>(0)?, Bytes::from(r.get::<_, String>(1)?)))
                            })?)
                            .clone(),
                    };
                    (event_id, body, attempts, created_at)
                }
            };
            leases.insert(seq, req.lease_until.unix_millis());
            out.push(ClaimedDelivery {
                id: DeliveryId(seq),
                subscription_id: target.id.clone(),
                event_id,
                body,
                url: target.url.clone(),
                signer: target.signer.clone(),
                attempt: attempts as u32 + 1,
                created_at: ts(created_at),
            });
        }
        drop((delivery, event));
        tx.commit()?;
        Ok(out)
    }))
}

pub(super) fn next_due_at(store: &SqliteStore) -> BoxFuture<'_, StoreResult<Option<Timestamp>>> {
    // Early, never late (see `due`): a sleep until then misses nothing. Asked through
    // the connection's thread so that writes queued before this call count.
    let due = store.due.clone();
    store.read(move |_| Ok(due.lock().unwrap_or_else(|p| p.into_inner()).earliest().map(ts)))
}
