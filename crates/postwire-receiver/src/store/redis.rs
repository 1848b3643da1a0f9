//! [`RedisStore`]: the once-store in Redis, over the application's own connection (a
//! `redis::aio::ConnectionManager`, a `MultiplexedConnection`, or anything
//! `ConnectionLike + Clone`): this store never opens, reconnects or closes it.
//!
//! The key layout and the Lua scripts are the npm package's (`postwire/stores/redis`): both
//! load the scripts from the crate's `protocol/redis/` (see its README), so Rust and Node
//! receivers can share one Redis. One key per `webhook-id`, `<prefix><id>`, holding
//! `c:<token>` with a PX of the lease while a copy holds the claim, and `d` with a PX of
//! `keep` once done. `claim` is one `SET key c:<token> NX PX <lease>` (atomic); only when
//! the key exists, a read-only script says whether it is done or claimed and for how long.
//! `complete`, `release` and `renew` are Lua scripts that act only while the key holds the
//! caller's token. Redis expires every key itself: memory holds only the ids of the last `keep`.

use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{Script, Value};

use super::{Claim, ClaimToken, Store, StoreError, millis};

/// The key prefix by default (the npm store's too).
pub const DEFAULT_REDIS_PREFIX: &str = "postwire:once:";

/// The key's state and time left: {1, ms} claimed, {2, ms} done, {0, 0} gone.
const PEEK: &str = include_str!("../../protocol/redis/peek.lua");
/// Done for ARGV[2] ms, unless another copy's claim or a done mark holds the key.
const COMPLETE: &str = include_str!("../../protocol/redis/complete.lua");
/// Deletes the key only while it holds the caller's claim.
const RELEASE: &str = include_str!("../../protocol/redis/release.lua");
/// Extends the caller's claim by ARGV[2] ms from now, only while the key holds it.
const RENEW: &str = include_str!("../../protocol/redis/renew.lua");

/// The once-store in Redis (see the [module docs](self)). Clones share nothing but the
/// connection's clone (for a `ConnectionManager`, the same connection).
#[derive(Clone)]
pub struct RedisStore<C> {
    conn: C,
    prefix: String,
    peek: Script,
    complete: Script,
    release: Script,
    renew: Script,
}

impl<C> std::fmt::Debug for RedisStore<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl<C> RedisStore<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// The store over `conn`, with keys `postwire:once:<webhook-id>`.
    pub fn new(conn: C) -> Self {
        RedisStore {
            conn,
            prefix: DEFAULT_REDIS_PREFIX.to_owned(),
            peek: Script::new(PEEK),
            complete: Script::new(COMPLETE),
            release: Script::new(RELEASE),
            renew: Script::new(RENEW),
        }
    }

    /// Keys `<prefix><webhook-id>` instead (e.g. one prefix per environment sharing a Redis).
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The key of `id`.
    pub fn key(&self, id: &str) -> String {
        let mut key = String::with_capacity(self.prefix.len() + id.len());
        key.push_str(&self.prefix);
        key.push_str(id);
        key
    }

    /// Runs one of the token-checked scripts (complete, release, renew) on `id`'s key with
    /// the claim's value and, where the script takes one, a duration in milliseconds; true
    /// when the script found the claim and acted on it.
    async fn run_token_checked(
        &self,
        script: &Script,
        id: &str,
        token: &ClaimToken,
        duration: Option<Duration>,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn.clone();
        let mut invocation = script.key(self.key(id));
        invocation.arg(format!("c:{}", token.as_str()));
        if let Some(duration) = duration {
            invocation.arg(millis(duration));
        }
        let acted: i64 = invocation.invoke_async(&mut conn).await.map_err(redis_error)?;
        Ok(acted == 1)
    }
}

fn redis_error(e: redis::RedisError) -> StoreError {
    StoreError::unavailable(&e)
}

fn value_claim(value: Value, lease: Duration) -> Result<Option<Claim>, StoreError> {
    let (state, ms): (i64, i64) =
        redis::from_redis_value(value).map_err(|e| StoreError::Protocol(format!("peek answered {e}")))?;
    let left = if ms > 0 {
        Duration::from_millis(ms.unsigned_abs())
    } else {
        lease
    };
    Ok(match state {
        2 => Some(Claim::Done),
        1 => Some(Claim::InFlight { retry_after: left }),
        _ => None,
    })
}

impl<C> Store for RedisStore<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    async fn claim(&self, id: &str, token: &ClaimToken, lease: Duration) -> Result<Claim, StoreError> {
        let key = self.key(id);
        let value = format!("c:{}", token.as_str());
        let mut conn = self.conn.clone();
        // A key that expires between the SET and the peek is claimed again; twice at most.
        for _ in 0..3 {
            let set: Option<String> = redis::cmd("SET")
                .arg(&key)
                .arg(&value)
                .arg("NX")
                .arg("PX")
                .arg(millis(lease))
                .query_async(&mut conn)
                .await
                .map_err(redis_error)?;
            if set.is_some() {
                return Ok(Claim::Claimed);
            }
            let peeked: Value = self.peek.key(&key).invoke_async(&mut conn).await.map_err(redis_error)?;
            if let Some(claim) = value_claim(peeked, lease)? {
                return Ok(claim);
            }
        }
        Ok(Claim::InFlight {
            retry_after: Duration::from_secs(1),
        })
    }

    async fn complete(&self, id: &str, token: &ClaimToken, keep: Duration) -> Result<bool, StoreError> {
        self.run_token_checked(&self.complete, id, token, Some(keep)).await
    }

    async fn release(&self, id: &str, token: &ClaimToken) -> Result<bool, StoreError> {
        self.run_token_checked(&self.release, id, token, None).await
    }

    async fn renew(&self, id: &str, token: &ClaimToken, lease: Duration) -> Result<bool, StoreError> {
        self.run_token_checked(&self.renew, id, token, Some(lease)).await
    }
}
