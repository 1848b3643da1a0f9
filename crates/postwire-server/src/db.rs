//! The server's own tables, kept in the sender's database: its SQLite file, or its
//! PostgreSQL database (`--database-url`), so that every API process of a deployment
//! agrees on tokens and on the hourly limit.
//!
//! The sender owns its schema and the server never touches it; the server adds a
//! table of its own next to them — API tokens and portal sessions (only their SHA-256
//! hashes) — through a
//! second connection to the same file. SQLite in WAL mode lets both connections (and a `postwire token create`
//! run from another process while the server is up) work at once; writes here are rare.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

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

/// The server's tables on PostgreSQL: tokens as in SQLite, and the hourly rate-limit
/// windows (one row per token) and daily event counts (one row per workspace and day),
/// which in SQLite deployments (one process) stay in memory.
const PG_SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS server_api_tokens (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, hash BYTEA NOT NULL UNIQUE,
    scopes TEXT NOT NULL, workspaces TEXT NOT NULL,
    created_at BIGINT NOT NULL, revoked_at BIGINT);
CREATE TABLE IF NOT EXISTS server_rate_windows (
    token_id TEXT PRIMARY KEY, window_start BIGINT NOT NULL, calls BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS server_portal_sessions (
    id TEXT PRIMARY KEY, workspace_id TEXT NOT NULL,
    link_hash BYTEA NOT NULL UNIQUE, link_expires_at BIGINT NOT NULL,
    session_hash BYTEA UNIQUE, session_expires_at BIGINT,
    created_at BIGINT NOT NULL, revoked_at BIGINT);
CREATE TABLE IF NOT EXISTS server_daily_quota (
    workspace_id TEXT NOT NULL, day BIGINT NOT NULL, count BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, day));
"#;

/// How long a query on PostgreSQL is tried again while the connection is lost.
const PG_RETRY_FOR: std::time::Duration = std::time::Duration::from_secs(30);

/// A connection to the server's tables. Cheap to clone.
#[derive(Clone)]
pub struct ServerDb {
    conn: Option<Arc<Mutex<Connection>>>,
    pg: Option<deadpool_postgres::Pool>,
}

impl std::fmt::Debug for ServerDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.pg.is_some() {
            "ServerDb(postgres)"
        } else {
            "ServerDb(sqlite)"
        })
    }
}

/// A failure of the server's own tables (opening the file, connecting to PostgreSQL, a
/// query): what failed, with the driver's message. The API turns it into an internal
/// error (`From<DbError> for ApiError`), whose detail the client never sees.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DbError(String);

/// A query on a pooled PostgreSQL connection.
pub(crate) type PgQuery<T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, tokio_postgres::Error>> + Send>>;

impl ServerDb {
    /// Connects to the PostgreSQL database at `url` and creates the server's tables.
    pub async fn connect_postgres(url: &str) -> Result<ServerDb, DbError> {
        // The sender's target, so the server's tables are reached with the same TLS.
        let target = postwire_sender::store::postgres::PgTarget::parse(url)
            .map_err(|e| DbError(format!("server database: {e}")))?;
        let manager = target.manager(deadpool_postgres::ManagerConfig {
            recycling_method: deadpool_postgres::RecyclingMethod::Fast,
        });
        let pool = deadpool_postgres::Pool::builder(manager)
            .max_size(8)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .create_timeout(Some(std::time::Duration::from_secs(10)))
            .wait_timeout(Some(std::time::Duration::from_secs(30)))
            .build()
            .map_err(|e| DbError(format!("server database: {e}")))?;
        let db = ServerDb {
            conn: None,
            pg: Some(pool),
        };
        db.pg_run(|c| Box::pin(async move { c.batch_execute(PG_SCHEMA).await }))
            .await?;
        Ok(db)
    }

    /// Whether the tables are on PostgreSQL.
    pub(crate) fn is_postgres(&self) -> bool {
        self.pg.is_some()
    }

    /// Runs `f` on a pooled PostgreSQL connection, again while the connection is lost
    /// (PostgreSQL restarting), for up to 30 s.
    pub(crate) async fn pg_run<T: Send + 'static>(
        &self,
        f: impl Fn(deadpool_postgres::Object) -> PgQuery<T>,
    ) -> Result<T, DbError> {
        let Some(pool) = &self.pg else {
            return Err(DbError("the server database is not PostgreSQL".into()));
        };
        let started = std::time::Instant::now();
        loop {
            let outcome = match pool.get().await {
                Ok(c) => f(c).await.map_err(|e| {
                    let lost = e.is_closed() || e.as_db_error().is_none();
                    (lost, e.to_string())
                }),
                Err(e) => Err((true, e.to_string())),
            };
            match outcome {
                Ok(v) => return Ok(v),
                Err((true, e)) if started.elapsed() < PG_RETRY_FOR => {
                    tracing::warn!(error = %e, "server database unavailable; trying again");
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                Err((_, e)) => return Err(DbError(format!("server database: {e}"))),
            }
        }
    }
}

impl ServerDb {
    /// Opens (creating if needed) the file at `path` and the server's tables in it.
    pub fn open(path: impl AsRef<Path>) -> Result<ServerDb, DbError> {
        let err = |e: rusqlite::Error| DbError(format!("opening {}: {e}", path.as_ref().display()));
        let conn = Connection::open(path.as_ref()).map_err(err)?;
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(err)?;
        let _mode: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(err)?;
        conn.execute_batch("PRAGMA synchronous=NORMAL;").map_err(err)?;
        conn.execute_batch(SCHEMA).map_err(err)?;
        Ok(ServerDb {
            conn: Some(Arc::new(Mutex::new(conn))),
            pg: None,
        })
    }

    /// Runs `f` on the connection in Tokio's blocking pool.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, DbError> {
        let Some(conn) = self.conn.clone() else {
            return Err(DbError("the server database is not SQLite".into()));
        };
        tokio::task::spawn_blocking(move || {
            let mut guard = conn.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut guard).map_err(|e| DbError(format!("server database: {e}")))
        })
        .await
        .map_err(|e| DbError(format!("server database task: {e}")))?
    }
}
