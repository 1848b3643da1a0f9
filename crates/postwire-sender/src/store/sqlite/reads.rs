//! The API's reads: delivery records with their attempts, events about a post,
//! notifications, and counts by state.

use postwire_core::Event;
use rusqlite::params;

use super::*;
use crate::model::{
    AttemptErrorKind, AttemptOutcome, AttemptRecord, DeliveryId, DeliveryRecord, DeliveryState, Notification,
};
use crate::store::{BoxFuture, DeliveryCounts, QueueCounts, StoreResult};

pub(super) fn list_deliveries(
    store: &SqliteStore,
    subscription_id: String,
    before: Option<i64>,
    limit: usize,
) -> BoxFuture<'_, StoreResult<Vec<DeliveryRecord>>> {
    store.read(move |c| {
        let mut stmt = c.prepare_cached(
            "SELECT d.seq, ?1, e.id, e.event_type, d.state, d.due_at, d.created_at, d.finished_at, e.body,
                    e.erased_at IS NOT NULL
             FROM deliveries d JOIN events e ON e.seq = d.event_seq
             WHERE d.sub_seq = (SELECT seq FROM subscriptions WHERE id = ?1) AND d.seq < ?2
             ORDER BY d.seq DESC LIMIT ?3",
        )?;
        let mut attempts = c.prepare_cached(
            "SELECT number, started_at, duration_ms, status, error, body_prefix FROM attempts
             WHERE delivery_seq = ?1 ORDER BY number DESC",
        )?;
        let rows = stmt.query_map(
            params![subscription_id, before.unwrap_or(i64::MAX), limit as i64],
            |r| {
                let state = match r.get::<_, i64>(4)? {
                    // Waiting behind an earlier delivery of its key: pending, with
                    // no attempt time yet.
                    PENDING | WAITING => DeliveryState::Pending,
                    HELD => DeliveryState::Held,
                    DELIVERED => DeliveryState::Delivered,
                    FAILED => DeliveryState::Failed,
                    CANCELLED => DeliveryState::Cancelled,
                    _ => DeliveryState::Expired,
                };
                Ok(DeliveryRecord {
                    id: DeliveryId(r.get(0)?),
                    subscription_id: r.get(1)?,
                    event_id: r.get(2)?,
                    event_type: r.get::<_, String>(3)?.parse().map_err(conversion)?,
                    state,
                    next_attempt_at: (state == DeliveryState::Pending).then(|| ts(r.get(5).unwrap_or(0))),
                    created_at: ts(r.get(6)?),
                    finished_at: opt_ts(r.get(7)?),
                    attempts: Vec::new(),
                    payload: r.get(8)?,
                    payload_erased: r.get(9)?,
                })
            },
        )?;
        let mut out: Vec<DeliveryRecord> = rows.collect::<rusqlite::Result<_>>()?;
        for d in &mut out {
            let list = attempts.query_map([d.id.0], |r| {
                let outcome = match (r.get::<_, Option<i64>>(3)?, r.get::<_, Option<String>>(4)?) {
                    (Some(status), _) => AttemptOutcome::Response {
                        status: status.clamp(0, u16::MAX as i64) as u16,
                        body_prefix: r.get::<_, Option<String>>(5)?.unwrap_or_default(),
                    },
                    (None, e) => AttemptOutcome::Error {
                        error: AttemptErrorKind::parse(e.as_deref().unwrap_or("")),
                    },
                };
                Ok(AttemptRecord {
                    number: r.get::<_, i64>(0)? as u32,
                    started_at: ts(r.get(1)?),
                    duration_ms: r.get::<_, i64>(2)?.max(0) as u64,
                    outcome,
                })
            })?;
            d.attempts = list.collect::<rusqlite::Result<_>>()?;
        }
        Ok(out)
    })
}

pub(super) fn events_for_post(
    store: &SqliteStore,
    workspace_id: String,
    post_id: String,
    limit: usize,
) -> BoxFuture<'_, StoreResult<Vec<Event>>> {
    store.read(move |c| {
        let mut stmt = c.prepare_cached(
            "SELECT body FROM events WHERE workspace_id = ?1 AND post_id = ?2 AND erased_at IS NULL
             ORDER BY seq DESC LIMIT ?3",
        )?;
        let rows = stmt.query_map(params![workspace_id, post_id, limit as i64], |r| {
            Event::from_json(r.get::<_, String>(0)?.as_bytes()).map_err(conversion)
        })?;
        rows.collect()
    })
}

pub(super) fn notifications(
    store: &SqliteStore,
    workspace_id: String,
    limit: usize,
) -> BoxFuture<'_, StoreResult<Vec<Notification>>> {
    store.read(move |c| {
        let mut stmt = c.prepare_cached(&format!(
            "SELECT {} FROM notifications WHERE workspace_id = ?1 ORDER BY id DESC LIMIT ?2",
            super::notices::COLUMNS
        ))?;
        let rows = stmt.query_map(params![workspace_id, limit as i64], super::notices::from_row)?;
        rows.collect()
    })
}

/// Pending, waiting and held deliveries, each through its partial index
/// (`deliveries_due`, `deliveries_open`, `deliveries_held`): it runs on the writer's
/// connection, and a count of the whole table, every finished delivery kept, held up
/// every write behind it for as long as it took.
pub(super) const QUEUE_COUNTS_SQL: &str = "SELECT
     (SELECT count(*) FROM deliveries WHERE state = 0),
     (SELECT count(*) FROM deliveries WHERE finished_at IS NULL AND okey IS NOT NULL AND state = 5),
     (SELECT count(*) FROM deliveries WHERE state = 1)";

pub(super) fn queue_counts(store: &SqliteStore) -> BoxFuture<'_, StoreResult<QueueCounts>> {
    store.read(|c| {
        c.prepare_cached(QUEUE_COUNTS_SQL)?.query_row([], |r| {
            Ok(QueueCounts {
                pending: r.get::<_, i64>(0)?.max(0) as u64,
                waiting: r.get::<_, i64>(1)?.max(0) as u64,
                held: r.get::<_, i64>(2)?.max(0) as u64,
            })
        })
    })
}

pub(super) fn delivery_counts(
    store: &SqliteStore,
    subscription_id: Option<String>,
) -> BoxFuture<'_, StoreResult<DeliveryCounts>> {
    store.read(move |c| {
        let mut counts = DeliveryCounts::default();
        let mut add = |state: i64, n: i64| {
            let n = n as u64;
            match state {
                PENDING => counts.pending += n,
                WAITING => counts.waiting += n,
                HELD => counts.held += n,
                DELIVERED => counts.delivered += n,
                FAILED => counts.failed += n,
                CANCELLED => counts.cancelled += n,
                _ => counts.expired += n,
            }
        };
        match subscription_id {
            Some(id) => {
                let mut stmt = c.prepare_cached(
                    "SELECT state, COUNT(*) FROM deliveries
                         WHERE sub_seq = (SELECT seq FROM subscriptions WHERE id = ?1) GROUP BY state",
                )?;
                let mut rows = stmt.query([id])?;
                while let Some(r) = rows.next()? {
                    add(r.get(0)?, r.get(1)?);
                }
            }
            None => {
                let mut stmt = c.prepare_cached("SELECT state, COUNT(*) FROM deliveries GROUP BY state")?;
                let mut rows = stmt.query([])?;
                while let Some(r) = rows.next()? {
                    add(r.get(0)?, r.get(1)?);
                }
            }
        }
        Ok(counts)
    })
}

/// The first and last event numbers. Two subqueries: SQLite reads MIN and MAX from the
/// ends of the table only when each is alone in its query (together, they scan every
/// event: 0.6 s among a million).
pub(super) const EVENT_RANGE_SQL: &str = "SELECT (SELECT MIN(seq) FROM events), (SELECT MAX(seq) FROM events)";

pub(super) fn posts_with_external_id(
    store: &SqliteStore,
    workspace_id: String,
    external_id: String,
    limit: usize,
) -> BoxFuture<'_, StoreResult<Vec<String>>> {
    use super::schema::{EXTERNAL_BUCKET_BITS, external_key, external_key_in_bucket};
    store.read(move |c| {
        let (first, last): (Option<i64>, Option<i64>) =
            c.query_row(EVENT_RANGE_SQL, [], |r| Ok((r.get(0)?, r.get(1)?)))?;
        let (Some(first), Some(last)) = (first, last) else {
            return Ok(Vec::new());
        };
        // Newest event first; each post once, in the order of its newest event. The
        // index holds a hash: the body says whether the event really is about it.
        let mut stmt = c.prepare_cached(
            "SELECT post_id FROM events INDEXED BY events_external
             WHERE external_key = ?1 AND workspace_id = ?2 AND post_id IS NOT NULL
               AND json_extract(body, '$.data.post.externalId') = ?3
             ORDER BY seq DESC",
        )?;
        // One probe per bucket of event numbers, newest first, then the plain hash that
        // events stored before schema version 8 carry (all older than any bucketed one).
        let buckets = (first >> EXTERNAL_BUCKET_BITS..=last >> EXTERNAL_BUCKET_BITS)
            .rev()
            .map(|bucket| external_key_in_bucket(bucket << EXTERNAL_BUCKET_BITS, &workspace_id, &external_id));
        let mut posts: Vec<String> = Vec::new();
        for key in buckets.chain([external_key(&workspace_id, &external_id)]) {
            let mut rows = stmt.query(params![key, workspace_id, external_id])?;
            while let Some(r) = rows.next()? {
                let post: String = r.get(0)?;
                if !posts.contains(&post) {
                    posts.push(post);
                    if posts.len() >= limit {
                        return Ok(posts);
                    }
                }
            }
        }
        Ok(posts)
    })
}
