//! The hourly API limit, per token.
//!
//! The spec says an hourly limit applies to creation and answers 429 when it is
//! exceeded. Here it applies to every authenticated public call, counted per token in a
//! fixed one-hour window that starts at the token's first call; the 429 carries
//! `Retry-After` (seconds until the window ends) and every response carries
//! `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset` (Unix seconds),
//! the headers GitHub and others use. Counters live in memory (a restart gives every
//! token a fresh window, which errs on the side of the client), or, when the server runs
//! on PostgreSQL ([`RateLimiter::shared`]), in a table of the database, so that every API
//! process of a deployment counts against one window per token. Time comes from the
//! injected [`Clock`], so tests move it instead of waiting an hour.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use postwire_core::Clock;

/// One hour, in milliseconds.
const WINDOW_MS: i64 = 3_600_000;
/// Above this many tracked tokens, windows that have ended are dropped.
const PRUNE_ABOVE: usize = 10_000;

/// The outcome of counting one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowance {
    /// The hourly limit.
    pub limit: u32,
    /// Calls left in this window after this one.
    pub remaining: u32,
    /// When the window ends, in Unix seconds.
    pub reset_unix_secs: i64,
    /// Seconds until the window ends (at least 1).
    pub retry_after_secs: u64,
    /// False when this call is over the limit.
    pub allowed: bool,
}

/// Per-token hourly counters. Cheap to clone; clones share counters.
#[derive(Clone)]
pub struct RateLimiter {
    limit: u32,
    clock: Arc<dyn Clock>,
    windows: Arc<Mutex<HashMap<String, (i64, u32)>>>,
    /// The windows' table, when they are shared by several processes.
    shared: Option<crate::db::ServerDb>,
}

impl std::fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter")
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

impl RateLimiter {
    /// `limit` calls per hour per token (0 blocks everything), timed by `clock`.
    pub fn new(limit: u32, clock: Arc<dyn Clock>) -> RateLimiter {
        RateLimiter {
            limit,
            clock,
            windows: Arc::new(Mutex::new(HashMap::new())),
            shared: None,
        }
    }

    /// Like [`new`](Self::new), with the windows in `db`'s table when it is PostgreSQL
    /// (shared by every process on that database); in memory otherwise.
    pub fn shared(limit: u32, clock: Arc<dyn Clock>, db: &crate::db::ServerDb) -> RateLimiter {
        RateLimiter {
            shared: db.is_postgres().then(|| db.clone()),
            ..RateLimiter::new(limit, clock)
        }
    }

    /// Counts one call by `token_id`, in the shared table if there is one.
    pub async fn count(&self, token_id: &str) -> Result<Allowance, crate::errors::ApiError> {
        let Some(db) = &self.shared else {
            return Ok(self.check(token_id));
        };
        let now = self.clock.now().unix_millis();
        let token = token_id.to_owned();
        // One statement: a new window when the old one ended (or the clock went back),
        // else one more call in it.
        let (start, calls): (i64, i64) = db
            .pg_run(move |c| {
                let token = token.clone();
                Box::pin(async move {
                    let st = c
                        .prepare_cached(
                            "INSERT INTO server_rate_windows AS w (token_id, window_start, calls) VALUES ($1, $2, 1)
                             ON CONFLICT (token_id) DO UPDATE SET
                               window_start = CASE WHEN $2 >= w.window_start + $3 OR $2 < w.window_start
                                              THEN $2 ELSE w.window_start END,
                               calls = CASE WHEN $2 >= w.window_start + $3 OR $2 < w.window_start
                                       THEN 1 ELSE w.calls + 1 END
                             RETURNING window_start, calls",
                        )
                        .await?;
                    let row = c.query_one(&st, &[&token, &now, &WINDOW_MS]).await?;
                    Ok((row.get(0), row.get(1)))
                })
            })
            .await?;
        let used = calls.clamp(0, u32::MAX as i64) as u32;
        let end = start + WINDOW_MS;
        let retry_after_ms = (end - now).max(1000);
        Ok(Allowance {
            limit: self.limit,
            remaining: self.limit.saturating_sub(used),
            reset_unix_secs: end.div_euclid(1000),
            retry_after_secs: (retry_after_ms as u64).div_ceil(1000),
            allowed: used <= self.limit,
        })
    }

    /// The hourly limit.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Whether `key` has used up its window, without counting a call: the allowance of
    /// a refused call, or `None` when a call would be allowed.
    pub fn exhausted(&self, key: &str) -> Option<Allowance> {
        let now = self.clock.now().unix_millis();
        let windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        let (start, count) = *windows.get(key)?;
        if now >= start + WINDOW_MS || now < start || count < self.limit {
            return None;
        }
        let end = start + WINDOW_MS;
        Some(Allowance {
            limit: self.limit,
            remaining: 0,
            reset_unix_secs: end.div_euclid(1000),
            retry_after_secs: ((end - now).max(1000) as u64).div_ceil(1000),
            allowed: false,
        })
    }

    /// Counts one call by `token_id`.
    pub fn check(&self, token_id: &str) -> Allowance {
        let now = self.clock.now().unix_millis();
        let mut windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        if windows.len() > PRUNE_ABOVE {
            windows.retain(|_, (start, _)| now < *start + WINDOW_MS);
        }
        let entry = windows.entry(token_id.to_owned()).or_insert((now, 0));
        if now >= entry.0 + WINDOW_MS || now < entry.0 {
            *entry = (now, 0);
        }
        let allowed = entry.1 < self.limit;
        if allowed {
            entry.1 += 1;
        }
        let end = entry.0 + WINDOW_MS;
        let retry_after_ms = (end - now).max(1000);
        Allowance {
            limit: self.limit,
            remaining: self.limit.saturating_sub(entry.1),
            reset_unix_secs: end.div_euclid(1000),
            retry_after_secs: (retry_after_ms as u64).div_ceil(1000),
            allowed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use postwire_core::{ManualClock, Timestamp};

    #[test]
    fn counts_per_token_and_resets_after_an_hour() {
        let clock = Arc::new(ManualClock::new(Timestamp::from_unix_millis(1_000_000)));
        let rl = RateLimiter::new(2, clock.clone());
        assert!(rl.check("a").allowed);
        assert_eq!(rl.check("a").remaining, 0);
        let third = rl.check("a");
        assert!(!third.allowed);
        assert_eq!(third.retry_after_secs, 3600);
        assert!(rl.check("b").allowed, "another token has its own window");
        clock.advance_millis(3_599_000);
        assert_eq!(rl.check("a").retry_after_secs, 1);
        clock.advance_millis(1_000);
        assert!(rl.check("a").allowed);
    }
}
