//! Operational notices in the file: the `notifications` table, written in the
//! transaction of the change a notice is about, and relayed once (`crate::notices`).

use postwire_core::OperationalEventType;
use rusqlite::{Connection, params};

use super::*;
use crate::model::{Notification, PauseCause};
use crate::notices::{NewNotice, PendingNotice};
use crate::store::{BoxFuture, StoreResult};

/// The columns [`from_row`] reads, in its order.
pub(super) const COLUMNS: &str = "id, workspace_id, kind, subscription_id, cause, message, event_id, created_at";

/// Stores `notice`, not relayed yet; returns its id.
pub(super) fn insert(tx: &Connection, notice: &NewNotice) -> rusqlite::Result<i64> {
    tx.prepare_cached(
        "INSERT INTO notifications (workspace_id, kind, subscription_id, cause, message, event_id, body, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        notice.workspace_id,
        notice.kind.as_str(),
        notice.subscription_id,
        notice.cause.map(PauseCause::as_str),
        notice.message,
        notice.event_id,
        notice.body,
        notice.created_at.unix_millis()
    ])?;
    Ok(tx.last_insert_rowid())
}

/// A notification from the [`COLUMNS`] of a row.
pub(super) fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Notification> {
    let kind: String = r.get(2)?;
    Ok(Notification {
        id: r.get(0)?,
        workspace_id: r.get(1)?,
        kind: kind.parse::<OperationalEventType>().map_err(conversion)?,
        subscription_id: r.get(3)?,
        cause: r
            .get::<_, Option<String>>(4)?
            .as_deref()
            .and_then(PauseCause::from_code),
        message: r.get(5)?,
        event_id: r.get(6)?,
        created_at: ts(r.get(7)?),
    })
}

/// Marks notice `id` relayed at `now_ms`; false when it was relayed already (then its
/// event must not be queued again).
pub(super) fn mark_relayed(tx: &Connection, id: i64, now_ms: i64) -> rusqlite::Result<bool> {
    Ok(tx
        .prepare_cached("UPDATE notifications SET relayed_at = ?2 WHERE id = ?1 AND relayed_at IS NULL")?
        .execute(params![id, now_ms])?
        > 0)
}

pub(super) fn pending(store: &SqliteStore, limit: usize) -> BoxFuture<'_, StoreResult<Vec<PendingNotice>>> {
    store.read(move |c| {
        let mut stmt = c.prepare_cached(&format!(
            "SELECT {COLUMNS}, body FROM notifications WHERE relayed_at IS NULL ORDER BY id LIMIT ?1"
        ))?;
        let rows = stmt.query_map([i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
            Ok(PendingNotice {
                notification: from_row(r)?,
                body: r.get(8)?,
            })
        })?;
        rows.collect()
    })
}
