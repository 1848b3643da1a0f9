//! Which posts carry which client-supplied `externalId`, for `GET …/posts/lookup`.
//!
//! The sender finds events by post id only. Clients usually know their own
//! `externalId`, so the ingest endpoint records each (workspace, external id, post id)
//! it sees, and the look-up turns an external id into post ids first. Posts published
//! through the Rust API directly, bypassing ingest, are not in this index; see
//! docs/api.md.

use postwire_core::Timestamp;
use rusqlite::params;

use crate::db::ServerDb;
use crate::errors::ApiError;

/// Most post ids one external id resolves to.
pub const MAX_POSTS_PER_EXTERNAL_ID: usize = 20;

/// The external-id index. Cheap to clone.
#[derive(Debug, Clone)]
pub struct PostIndex {
    db: ServerDb,
}

impl PostIndex {
    /// The index in `db`.
    pub fn new(db: ServerDb) -> PostIndex {
        PostIndex { db }
    }

    /// Records that `post_id` of `workspace_id` carries `external_id` (empty ones are skipped).
    pub async fn record(&self, entries: Vec<(String, String, String)>, now: Timestamp) -> Result<(), ApiError> {
        let entries: Vec<_> = entries.into_iter().filter(|(_, ext, _)| !ext.is_empty()).collect();
        if entries.is_empty() {
            return Ok(());
        }
        self.db
            .run(move |c| {
                let tx = c.transaction()?;
                {
                    let mut st = tx.prepare_cached(
                        "INSERT INTO server_post_external_ids (workspace_id, external_id, post_id, seen_at) VALUES (?1, ?2, ?3, ?4)
                         ON CONFLICT (workspace_id, external_id, post_id) DO UPDATE SET seen_at = excluded.seen_at",
                    )?;
                    for (ws, ext, post) in &entries {
                        st.execute(params![ws, ext, post, now.unix_millis()])?;
                    }
                }
                tx.commit()
            })
            .await
    }

    /// The posts carrying `external_id`, most recently seen first.
    pub async fn posts_for(&self, workspace_id: &str, external_id: &str) -> Result<Vec<String>, ApiError> {
        let (ws, ext) = (workspace_id.to_owned(), external_id.to_owned());
        self.db
            .run(move |c| {
                let mut st = c.prepare_cached(
                    "SELECT post_id FROM server_post_external_ids WHERE workspace_id = ?1 AND external_id = ?2
                     ORDER BY seen_at DESC, post_id LIMIT ?3",
                )?;
                let rows = st.query_map(params![ws, ext, MAX_POSTS_PER_EXTERNAL_ID as i64], |r| r.get(0))?;
                rows.collect()
            })
            .await
    }
}
