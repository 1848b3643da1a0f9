//! The API's reads: delivery records with their attempts, events about a post,
//! notifications, and counts by state.

use super::*;
use crate::model::{AttemptErrorKind, AttemptOutcome, AttemptRecord, DeliveryId, DeliveryState};

pub(super) async fn list_deliveries(
    store: &PostgresStore,
    subscription_id: String,
    before: Option<i64>,
    limit: usize,
) -> StoreResult<Vec<DeliveryRecord>> {
    store
        .run("list deliveries", move |c: Client| {
            let subscription_id = subscription_id.clone();
            Box::pin(async move {
                let list = c
                    .prepare_cached(
                        "SELECT d.seq, e.id, e.event_type, d.state, d.due_at, d.created_at, d.finished_at, e.body,
                                e.erased_at IS NOT NULL
                         FROM deliveries d JOIN events e ON e.seq = d.event_seq
                         WHERE d.sub_seq = (SELECT seq FROM subscriptions WHERE id = $1) AND d.seq < $2
                         ORDER BY d.seq DESC LIMIT $3",
                    )
                    .await?;
                let attempts = c
                    .prepare_cached(
                        "SELECT delivery_seq, number, started_at, duration_ms, status, error, body_prefix
                         FROM attempts WHERE delivery_seq = ANY($1) ORDER BY delivery_seq, number DESC",
                    )
                    .await?;
                let rows = c
                    .query(&list, &[&subscription_id, &before.unwrap_or(i64::MAX), &bigint(limit)])
                    .await?;
                let mut out = Vec::with_capacity(rows.len());
                for r in rows {
                    let state = match r.try_get::<_, i64>(3)? {
                        // Waiting behind an earlier delivery of its key: pending.
                        PENDING | WAITING => DeliveryState::Pending,
                        HELD => DeliveryState::Held,
                        DELIVERED => DeliveryState::Delivered,
                        FAILED => DeliveryState::Failed,
                        CANCELLED => DeliveryState::Cancelled,
                        _ => DeliveryState::Expired,
                    };
                    out.push(DeliveryRecord {
                        id: DeliveryId(r.try_get(0)?),
                        subscription_id: subscription_id.clone(),
                        event_id: r.try_get(1)?,
                        event_type: r.try_get::<_, &str>(2)?.parse().map_err(data)?,
                        state,
                        next_attempt_at: match state {
                            DeliveryState::Pending => Some(ts(r.try_get(4)?)),
                            _ => None,
                        },
                        created_at: ts(r.try_get(5)?),
                        finished_at: opt_ts(r.try_get(6)?),
                        attempts: Vec::new(),
                        payload: r.try_get(7)?,
                        payload_erased: r.try_get(8)?,
                    });
                }
                let ids: Vec<i64> = out.iter().map(|d| d.id.0).collect();
                let mut by_delivery: HashMap<i64, Vec<AttemptRecord>> = HashMap::new();
                for r in c.query(&attempts, &[&ids]).await? {
                    let outcome = match (r.try_get::<_, Option<i64>>(4)?, r.try_get::<_, Option<String>>(5)?) {
                        (Some(status), _) => AttemptOutcome::Response {
                            status: status.clamp(0, u16::MAX as i64) as u16,
                            body_prefix: r.try_get::<_, Option<String>>(6)?.unwrap_or_default(),
                        },
                        (None, e) => AttemptOutcome::Error {
                            error: AttemptErrorKind::parse(e.as_deref().unwrap_or("")),
                        },
                    };
                    by_delivery.entry(r.try_get(0)?).or_default().push(AttemptRecord {
                        number: r.try_get::<_, i64>(1)?.clamp(0, u32::MAX as i64) as u32,
                        started_at: ts(r.try_get(2)?),
                        duration_ms: r.try_get::<_, i64>(3)?.max(0) as u64,
                        outcome,
                    });
                }
                for d in &mut out {
                    d.attempts = by_delivery.remove(&d.id.0).unwrap_or_default();
                }
                Ok(out)
            })
        })
        .await
}

use std::collections::HashMap;

pub(super) async fn events_for_post(
    store: &PostgresStore,
    workspace_id: String,
    post_id: String,
    limit: usize,
) -> StoreResult<Vec<Event>> {
    store
        .run("events for post", move |c: Client| {
            let (ws, post) = (workspace_id.clone(), post_id.clone());
            Box::pin(async move {
                let st = c
                    .prepare_cached(
                        "SELECT body FROM events WHERE workspace_id = $1 AND post_id = $2 AND erased_at IS NULL
                         ORDER BY seq DESC LIMIT $3",
                    )
                    .await?;
                c.query(&st, &[&ws, &post, &bigint(limit)])
                    .await?
                    .iter()
                    .map(|r| Event::from_json(r.try_get::<_, &str>(0)?.as_bytes()).map_err(data))
                    .collect()
            })
        })
        .await
}

pub(super) async fn notifications(
    store: &PostgresStore,
    workspace_id: String,
    limit: usize,
) -> StoreResult<Vec<Notification>> {
    store
        .run("notifications", move |c: Client| {
            let ws = workspace_id.clone();
            Box::pin(async move {
                let st = c
                    .prepare_cached(&format!(
                        "SELECT {} FROM notifications WHERE workspace_id = $1 ORDER BY id DESC LIMIT $2",
                        super::notices::COLUMNS
                    ))
                    .await?;
                c.query(&st, &[&ws, &bigint(limit)])
                    .await?
                    .iter()
                    .map(super::notices::from_row)
                    .collect()
            })
        })
        .await
}

/// Pending deliveries through `queue_heads` (every pending delivery has its row there;
/// a held one may keep a leased row, hence the look-up of each), waiting ones through
/// `deliveries_open`, held ones through `deliveries_held`: nothing reads the finished
/// history, which a count by state scanned whole at every metrics scrape.
pub(super) const QUEUE_COUNTS_SQL: &str = "SELECT
     (SELECT count(*) FROM queue_heads q CROSS JOIN LATERAL (
          SELECT 1 FROM deliveries d WHERE d.seq = q.delivery_seq AND d.state = 0 OFFSET 0) x),
     (SELECT count(*) FROM deliveries WHERE finished_at IS NULL AND okey IS NOT NULL AND state = 5),
     (SELECT count(*) FROM deliveries WHERE state = 1)";

pub(super) async fn queue_counts(store: &PostgresStore) -> StoreResult<crate::store::QueueCounts> {
    store
        .run("queue counts", |c: Client| {
            Box::pin(async move {
                let st = c.prepare_cached(QUEUE_COUNTS_SQL).await?;
                let row = c.query_one(&st, &[]).await?;
                let n = |i: usize| -> Result<u64, PgErr> { Ok(row.try_get::<_, i64>(i)?.max(0) as u64) };
                Ok(crate::store::QueueCounts {
                    pending: n(0)?,
                    waiting: n(1)?,
                    held: n(2)?,
                })
            })
        })
        .await
}

pub(super) async fn delivery_counts(
    store: &PostgresStore,
    subscription_id: Option<String>,
) -> StoreResult<DeliveryCounts> {
    store
        .run("delivery counts", move |c: Client| {
            let subscription_id = subscription_id.clone();
            Box::pin(async move {
                let rows = match &subscription_id {
                    Some(id) => {
                        let st = c
                            .prepare_cached(
                                "SELECT state, COUNT(*) FROM deliveries
                                 WHERE sub_seq = (SELECT seq FROM subscriptions WHERE id = $1) GROUP BY state",
                            )
                            .await?;
                        c.query(&st, &[id]).await?
                    }
                    None => {
                        let st = c
                            .prepare_cached("SELECT state, COUNT(*) FROM deliveries GROUP BY state")
                            .await?;
                        c.query(&st, &[]).await?
                    }
                };
                let mut counts = DeliveryCounts::default();
                for r in rows {
                    let n = r.try_get::<_, i64>(1)?.max(0) as u64;
                    match r.try_get::<_, i64>(0)? {
                        PENDING => counts.pending += n,
                        WAITING => counts.waiting += n,
                        HELD => counts.held += n,
                        DELIVERED => counts.delivered += n,
                        FAILED => counts.failed += n,
                        CANCELLED => counts.cancelled += n,
                        _ => counts.expired += n,
                    }
                }
                Ok(counts)
            })
        })
        .await
}

pub(super) async fn posts_with_external_id(
    store: &PostgresStore,
    workspace_id: String,
    external_id: String,
    limit: usize,
) -> StoreResult<Vec<String>> {
    store
        .run("posts by external id", move |c: Client| {
            let (ws, ext) = (workspace_id.clone(), external_id.clone());
            Box::pin(async move {
                // Newest event first; each post once, in the order of its newest event.
                // The index holds a hash: the body says whether the event really is
                // about it.
                let st = c
                    .prepare_cached(
                        "SELECT post_id FROM events
                         WHERE external_key = $1 AND workspace_id = $2 AND post_id IS NOT NULL
                           AND (body::jsonb #>> '{data,post,externalId}') = $3
                         ORDER BY seq DESC",
                    )
                    .await?;
                let key = crate::store::sqlite::external_key(&ws, &ext);
                let mut posts: Vec<String> = Vec::new();
                for r in c.query(&st, &[&key, &ws, &ext]).await? {
                    let post: String = r.try_get(0)?;
                    if !posts.contains(&post) {
                        posts.push(post);
                        if posts.len() >= limit {
                            break;
                        }
                    }
                }
                Ok(posts)
            })
        })
        .await
}

pub(super) async fn paused_subscriptions(store: &PostgresStore) -> StoreResult<u64> {
    store
        .run("count paused subscriptions", |c: Client| {
            Box::pin(async move {
                let row = c
                    .query_one(
                        "SELECT count(*) FROM subscriptions WHERE paused_reason IS NOT NULL",
                        &[],
                    )
                    .await?;
                Ok(row.try_get::<_, i64>(0)?.max(0) as u64)
            })
        })
        .await
}
