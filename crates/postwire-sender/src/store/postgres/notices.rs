//! Operational notices in the database: the `notifications` table, written in the
//! transaction of the change a notice is about, and relayed once (`crate::notices`).
//! Same statements as the SQLite store's `notices.rs`.

use deadpool_postgres::GenericClient;
use postwire_core::OperationalEventType;
use tokio_postgres::Row;

use super::*;
use crate::model::{Notification, PauseCause};
use crate::notices::{NewNotice, PendingNotice};

/// The columns [`from_row`] reads, in its order.
pub(super) const COLUMNS: &str = "id, workspace_id, kind, subscription_id, cause, message, event_id, created_at";

/// Stores `notice`, not relayed yet; returns its id.
pub(super) async fn insert(tx: &impl GenericClient, notice: &NewNotice) -> Result<i64, PgErr> {
    let st = tx
        .prepare_cached(
            "INSERT INTO notifications (workspace_id, kind, subscription_id, cause, message, event_id, body, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
        )
        .await?;
    let row = tx
        .query_one(
            &st,
            &[
                &notice.workspace_id,
                &notice.kind.as_str(),
                &notice.subscription_id,
                &notice.cause.map(PauseCause::as_str),
                &notice.message,
                &notice.event_id,
                &notice.body,
                &notice.created_at.unix_millis(),
            ],
        )
        .await?;
    Ok(row.try_get(0)?)
}

/// A notification from the [`COLUMNS`] of a row.
pub(super) fn from_row(r: &Row) -> Result<Notification, PgErr> {
    Ok(Notification {
        id: r.try_get(0)?,
        workspace_id: r.try_get(1)?,
        kind: r.try_get::<_, &str>(2)?.parse::<OperationalEventType>().map_err(data)?,
        subscription_id: r.try_get(3)?,
        cause: r.try_get::<_, Option<&str>>(4)?.and_then(PauseCause::from_code),
        message: r.try_get(5)?,
        event_id: r.try_get(6)?,
        created_at: ts(r.try_get(7)?),
    })
}

/// Marks notice `id` relayed at `now_ms`; false when it was relayed already (then its
/// event must not be queued again). A relay of the same notice in another transaction
/// waits for that one to end, and then finds it relayed.
pub(super) async fn mark_relayed(tx: &impl GenericClient, id: i64, now_ms: i64) -> Result<bool, PgErr> {
    let st = tx
        .prepare_cached("UPDATE notifications SET relayed_at = $2 WHERE id = $1 AND relayed_at IS NULL")
        .await?;
    Ok(tx.execute(&st, &[&id, &now_ms]).await? > 0)
}

pub(super) async fn pending(store: &PostgresStore, limit: usize) -> StoreResult<Vec<PendingNotice>> {
    store
        .run("pending notices", move |c: Client| {
            Box::pin(async move {
                let st = c
                    .prepare_cached(&format!(
                        "SELECT {COLUMNS}, body FROM notifications WHERE relayed_at IS NULL ORDER BY id LIMIT $1"
                    ))
                    .await?;
                c.query(&st, &[&i64::try_from(limit).unwrap_or(i64::MAX)])
                    .await?
                    .iter()
                    .map(|r| {
                        Ok(PendingNotice {
                            notification: from_row(r)?,
                            body: r.try_get(8)?,
                        })
                    })
                    .collect()
            })
        })
        .await
}
