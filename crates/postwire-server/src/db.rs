//! The server's own tables, kept in the sender's SQLite file.
//!
//! The sender owns its schema and the server never touches it; the server adds a
//! table of its own next to them — API tokens and portal sessions (only their SHA-256
//! hashes) — through a
//! second connection to the same file. SQLite in WAL mode lets both connections (and a `postwire token create`
//! run from another process while the server is up) work at once; writes here are rare.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

use crate::errors::ApiError;

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS server_api_tokens (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, hash BLOB NOT NULL UNIQUE,
    scopes TEXT NOT NULL, workspaces TEXT NOT NULL,
    created_at INTEGER NOT NULL, revoked_at INTEGER);
-- Portal sessions of the Settings screen (`crate::portal`): a single-use magic link and
-- the session it opened, both as SHA-256 hashes only.
CREATE TABLE IF NOT EXISTS server_portal_sessions (
    id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL,
    link_hash BLOB NOT NULL UNIQUE, link_expires_at INTEGER NOT NULL,
    session_hash BLOB UNIQUE, session_expires_at INTEGER,
    created_at INTEGER NOT NULL, revoked_at INTEGER);
-- The external-id index of older versions: events now carry their post's external id
-- in the sender's own tables, written in the event's transaction.
DROP TABLE IF EXISTS server_post_external_ids;
"#;

/// A connection to the server's tables. Cheap to clone.
#[derive(Clone)]
pub struct ServerDb {
    conn: Arc<Mutex<Connection>>,
}

impl std::fmt::Debug for ServerDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerDb")
    }
}

impl ServerDb {
    /// Opens (creating if needed) the file at `path` and the server's tables in it.
    pub fn open(path: impl AsRef<Path>) -> Result<ServerDb, ApiError> {
        let err = |e: rusqlite::Error| ApiError::Internal(format!("opening {}: {e}", path.as_ref().display()));
        let conn = Connection::open(path.as_ref()).map_err(err)?;
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(err)?;
        let _mode: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(err)?;
        conn.execute_batch("PRAGMA synchronous=NORMAL;").map_err(err)?;
        conn.execute_batch(SCHEMA).map_err(err)?;
        Ok(ServerDb {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// Runs `f` on the connection in Tokio's blocking pool.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, ApiError> {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let mut guard = conn.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut guard).map_err(|e| ApiError::Internal(format!("server database: {e}")))
        })
        .await
        .map_err(|e| ApiError::Internal(format!("server database task: {e}")))?
    }
}
