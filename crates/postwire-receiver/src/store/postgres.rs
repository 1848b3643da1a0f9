//! [`PostgresStore`]: the once-store in a PostgreSQL table, over the application's own
//! `deadpool_postgres::Pool` (this store never configures, opens or closes it). The table
//! and the statements are the npm package's (`postwire/stores/postgres`): both load them
//! from the crate's `protocol/postgres/` (see its README), so Rust and Node receivers can
//! share the table. One row per `webhook-id`, created on first use:
//!
//! ```sql
//! CREATE TABLE IF NOT EXISTS postwire_once (
//!   id         text PRIMARY KEY,
//!   token      text,                 -- the claim's token; NULL once done
//!   expires_at timestamptz NOT NULL  -- the lease's end while claimed; when the id is forgotten once done
//! );
//! CREATE INDEX IF NOT EXISTS postwire_once_expires_at ON postwire_once (expires_at);
//! ```
//!
//! `claim` is one `INSERT … ON CONFLICT` that takes the row over only when it has expired,
//! then reads the row in the same statement; `complete`, `release` and `renew` act only on
//! the caller's token. Times are the database's clock (`clock_timestamp()`), so instances
//! with skewed clocks agree. Every `sweep_every` claims, up to `sweep_limit` expired rows
//! are deleted beside the claim (in a task of its own), so the table holds about the ids of
//! the last `keep`; the sweep checks expiry again on each row it deletes, so a claim that
//! takes an expired row over while the sweep runs is kept.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use deadpool_postgres::Pool;
use tokio::sync::OnceCell;

use super::{Claim, ClaimToken, Store, StoreError, millis};

/// The table by default (the npm store's too).
pub const DEFAULT_POSTGRES_TABLE: &str = "postwire_once";
/// A sweep of expired rows runs every this many claims by default.
pub const DEFAULT_SWEEP_EVERY: u64 = 100;
/// A sweep deletes at most this many rows by default.
pub const DEFAULT_SWEEP_LIMIT: i64 = 1000;

/// SQLSTATEs of a concurrent `CREATE … IF NOT EXISTS`: unique_violation, duplicate_table,
/// duplicate_object. The other process's table is there then.
const SCHEMA_RACE: [&str; 3] = ["23505", "42P07", "42710"];

/// A table name [`PostgresStore::with_table`] refused, with a stable code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the table name must be lower-case letters, digits and _ (at most 63), starting with a letter or _")]
pub struct InvalidTableName;

impl InvalidTableName {
    /// The stable code: `invalid_table_name`.
    pub const fn code(&self) -> &'static str {
        "invalid_table_name"
    }
}

/// The statements, as the shared protocol files hold them (`{table}` for the table's name).
mod statements {
    pub(super) const CREATE_TABLE: &str = include_str!("../../protocol/postgres/create_table.sql");
    pub(super) const CREATE_INDEX: &str = include_str!("../../protocol/postgres/create_index.sql");
    pub(super) const CLAIM: &str = include_str!("../../protocol/postgres/claim.sql");
    pub(super) const COMPLETE: &str = include_str!("../../protocol/postgres/complete.sql");
    pub(super) const RELEASE: &str = include_str!("../../protocol/postgres/release.sql");
    pub(super) const RENEW: &str = include_str!("../../protocol/postgres/renew.sql");
    pub(super) const SWEEP: &str = include_str!("../../protocol/postgres/sweep.sql");
}

/// A shared statement for the table `table` (a name [`valid_table`] accepted).
fn for_table(statement: &str, table: &str) -> String {
    statement.replace("{table}", table)
}

/// The DDL of the store's table `table` (run once, on first use; shown for your migrations).
pub fn postgres_schema(table: &str) -> [String; 2] {
    [
        for_table(statements::CREATE_TABLE, table),
        for_table(statements::CREATE_INDEX, table),
    ]
}

/// The once-store in PostgreSQL (see the [module docs](self)). Cheap to clone.
#[derive(Clone)]
pub struct PostgresStore {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    table: String,
    ready: OnceCell<()>,
    claims: AtomicU64,
    sweep_every: u64,
    sweep_limit: i64,
    sql: Sql,
}

struct Sql {
    claim: String,
    complete: String,
    release: String,
    renew: String,
    sweep: String,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("table", &self.inner.table)
            .finish_non_exhaustive()
    }
}

fn valid_table(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z' | b'_'))
        && name.len() <= 63
        && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_'))
}

fn sql(table: &str) -> Sql {
    Sql {
        claim: for_table(statements::CLAIM, table),
        complete: for_table(statements::COMPLETE, table),
        release: for_table(statements::RELEASE, table),
        renew: for_table(statements::RENEW, table),
        sweep: for_table(statements::SWEEP, table),
    }
}

fn pg_error(e: tokio_postgres::Error) -> StoreError {
    StoreError::unavailable(&e)
}

fn pool_error(e: deadpool_postgres::PoolError) -> StoreError {
    StoreError::unavailable(&e)
}

impl PostgresStore {
    /// The store over `pool`, in the table `postwire_once`.
    pub fn new(pool: Pool) -> Self {
        PostgresStore::build(
            pool,
            DEFAULT_POSTGRES_TABLE.to_owned(),
            DEFAULT_SWEEP_EVERY,
            DEFAULT_SWEEP_LIMIT,
        )
    }

    /// In the table `table` instead: lower-case letters, digits and `_`, at most 63,
    /// starting with a letter or `_`.
    pub fn with_table(self, table: &str) -> Result<Self, InvalidTableName> {
        if !valid_table(table) {
            return Err(InvalidTableName);
        }
        let inner = &self.inner;
        Ok(PostgresStore::build(
            inner.pool.clone(),
            table.to_owned(),
            inner.sweep_every,
            inner.sweep_limit,
        ))
    }

    /// Sweeps expired rows every `every` claims (default 100; at least 1), at most `limit`
    /// rows each time (default 1000; at least 1).
    pub fn with_sweep(self, every: u64, limit: i64) -> Self {
        let inner = &self.inner;
        PostgresStore::build(inner.pool.clone(), inner.table.clone(), every.max(1), limit.max(1))
    }

    fn build(pool: Pool, table: String, sweep_every: u64, sweep_limit: i64) -> Self {
        PostgresStore {
            inner: Arc::new(Inner {
                pool,
                sql: sql(&table),
                table,
                ready: OnceCell::new(),
                claims: AtomicU64::new(0),
                sweep_every,
                sweep_limit,
            }),
        }
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.inner.table
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        let client = self.inner.pool.get().await.map_err(pool_error)?;
        self.inner
            .ready
            .get_or_try_init(|| async {
                for ddl in postgres_schema(&self.inner.table) {
                    if let Err(e) = client.batch_execute(&ddl).await {
                        let race = e.code().is_some_and(|c| SCHEMA_RACE.contains(&c.code()));
                        if !race {
                            return Err(pg_error(e));
                        }
                        client.batch_execute(&ddl).await.map_err(pg_error)?;
                    }
                }
                Ok(())
            })
            .await?;
        Ok(client)
    }

    /// Deletes up to `limit` expired rows now; returns how many.
    pub async fn sweep(&self, limit: i64) -> Result<u64, StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(&self.inner.sql.sweep).await.map_err(pg_error)?;
        client.execute(&statement, &[&limit]).await.map_err(pg_error)
    }

    fn maybe_sweep(&self) {
        let n = self.inner.claims.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_multiple_of(self.inner.sweep_every) {
            let store = self.clone();
            let limit = self.inner.sweep_limit;
            // A failed sweep is left to the next one (and so is one outside a tokio runtime).
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let _ = store.sweep(limit).await;
                });
            }
        }
    }
}

fn as_float_millis(d: Duration) -> f64 {
    millis(d) as f64
}

impl Store for PostgresStore {
    async fn claim(&self, id: &str, token: &ClaimToken, lease: Duration) -> Result<Claim, StoreError> {
        let client = self.client().await?;
        self.maybe_sweep();
        let statement = client.prepare_cached(&self.inner.sql.claim).await.map_err(pg_error)?;
        let row = client
            .query_one(&statement, &[&id, &token.as_str(), &as_float_millis(lease)])
            .await
            .map_err(pg_error)?;
        let claimed: bool = row.try_get(0).map_err(|e| StoreError::Protocol(e.to_string()))?;
        if claimed {
            return Ok(Claim::Claimed);
        }
        let done: Option<bool> = row.try_get(1).map_err(|e| StoreError::Protocol(e.to_string()))?;
        if done == Some(true) {
            return Ok(Claim::Done);
        }
        let left: Option<i64> = row.try_get(2).map_err(|e| StoreError::Protocol(e.to_string()))?;
        let retry_after = match left {
            Some(ms) => Duration::from_millis(ms.max(1).unsigned_abs()),
            None => Duration::from_secs(1),
        };
        Ok(Claim::InFlight { retry_after })
    }

    async fn complete(&self, id: &str, token: &ClaimToken, keep: Duration) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(&self.inner.sql.complete)
            .await
            .map_err(pg_error)?;
        let n = client
            .execute(&statement, &[&id, &token.as_str(), &as_float_millis(keep)])
            .await
            .map_err(pg_error)?;
        Ok(n == 1)
    }

    async fn release(&self, id: &str, token: &ClaimToken) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(&self.inner.sql.release).await.map_err(pg_error)?;
        let n = client
            .execute(&statement, &[&id, &token.as_str()])
            .await
            .map_err(pg_error)?;
        Ok(n == 1)
    }

    async fn renew(&self, id: &str, token: &ClaimToken, lease: Duration) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(&self.inner.sql.renew).await.map_err(pg_error)?;
        let n = client
            .execute(&statement, &[&id, &token.as_str(), &as_float_millis(lease)])
            .await
            .map_err(pg_error)?;
        Ok(n == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names() {
        assert!(valid_table("postwire_once"));
        assert!(valid_table("_x9"));
        assert!(!valid_table(""));
        assert!(!valid_table("9x"));
        assert!(!valid_table("Once"));
        assert!(!valid_table("a;drop table x"));
        assert!(!valid_table(&"a".repeat(64)));
    }
}
