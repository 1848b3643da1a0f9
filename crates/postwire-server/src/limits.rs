//! The per-workspace limits the spec names (`plan_limit`, `quota_exceeded`) and the
//! per-address limit on unauthenticated requests.
//!
//! * **Subscriptions per workspace** ([`Limits::max_subscriptions_per_workspace`]): a
//!   creation past it answers `403 plan_limit`. Creations go through one lock, so two at
//!   once cannot both take the last place.
//! * **Daily event quota per workspace** ([`DailyQuota`]): the changes the ingest accepts
//!   for a workspace per UTC day; past it a batch answers `429 quota_exceeded` with
//!   `Retry-After` (seconds to 00:00 UTC) and none of it is accepted. Counters live in
//!   memory, like the hourly API limit: a restart starts the day's count again, which
//!   errs on the side of the platform.
//! * **Unauthenticated requests per address**: each `401` counts against the client's
//!   IP address in an hourly window (the `rate_limit::RateLimiter` keyed by
//!   address); past the limit the address gets `429 rate_limited` before any token
//!   look-up. Behind a reverse proxy every client has the proxy's address: raise the
//!   limit there, or let the proxy limit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use postwire_core::Clock;

/// Default most subscriptions per workspace.
pub const DEFAULT_MAX_SUBSCRIPTIONS_PER_WORKSPACE: u64 = 100;
/// Default most events (ingested changes) per workspace per UTC day.
pub const DEFAULT_DAILY_EVENT_QUOTA: u64 = 100_000;
/// Default most unauthenticated (401) requests per client address per hour.
pub const DEFAULT_UNAUTHENTICATED_PER_HOUR: u32 = 100;

const DAY_MS: i64 = 86_400_000;

/// The configured limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most subscriptions per workspace (`plan_limit` past it).
    pub max_subscriptions_per_workspace: u64,
    /// Most ingested changes per workspace per UTC day (`quota_exceeded` past it).
    pub daily_event_quota: u64,
    /// Most `401` answers per client address per hour (`rate_limited` past it).
    pub unauthenticated_per_hour: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_subscriptions_per_workspace: DEFAULT_MAX_SUBSCRIPTIONS_PER_WORKSPACE,
            daily_event_quota: DEFAULT_DAILY_EVENT_QUOTA,
            unauthenticated_per_hour: DEFAULT_UNAUTHENTICATED_PER_HOUR,
        }
    }
}

/// Per-workspace counts of ingested changes in the current UTC day. Cheap to clone.
#[derive(Clone)]
pub struct DailyQuota {
    limit: u64,
    clock: Arc<dyn Clock>,
    /// workspace → (day number, count).
    counts: Arc<Mutex<HashMap<String, (i64, u64)>>>,
}

impl std::fmt::Debug for DailyQuota {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DailyQuota")
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

/// What [`DailyQuota::reserve`] took, to give back if the batch is not accepted.
#[derive(Debug)]
#[must_use = "release it when the batch is not accepted"]
pub struct Reservation {
    day: i64,
    taken: Vec<(String, u64)>,
}

impl DailyQuota {
    /// `limit` changes per workspace per UTC day, timed by `clock`.
    pub fn new(limit: u64, clock: Arc<dyn Clock>) -> DailyQuota {
        DailyQuota {
            limit,
            clock,
            counts: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Takes `per_workspace` counts if every workspace stays within its quota; otherwise
    /// takes nothing and returns `(limit, seconds until 00:00 UTC)`.
    pub fn reserve(&self, per_workspace: &HashMap<String, u64>) -> Result<Reservation, (u64, u64)> {
        let now = self.clock.now().unix_millis();
        let day = now.div_euclid(DAY_MS);
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        counts.retain(|_, (d, _)| *d == day);
        for (ws, n) in per_workspace {
            let used = counts.get(ws).map(|(_, c)| *c).unwrap_or(0);
            if used.saturating_add(*n) > self.limit {
                let retry = ((day + 1) * DAY_MS - now).max(1000) as u64;
                return Err((self.limit, retry.div_ceil(1000)));
            }
        }
        let mut taken = Vec::with_capacity(per_workspace.len());
        for (ws, n) in per_workspace {
            counts.entry(ws.clone()).or_insert((day, 0)).1 += n;
            taken.push((ws.clone(), *n));
        }
        Ok(Reservation { day, taken })
    }

    /// Gives back a reservation (the batch failed, or was a replay of one counted before).
    pub fn release(&self, r: Reservation) {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        for (ws, n) in r.taken {
            if let Some((d, c)) = counts.get_mut(&ws)
                && *d == r.day
            {
                *c = c.saturating_sub(n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use postwire_core::{ManualClock, Timestamp};

    #[test]
    fn a_batch_over_the_quota_takes_nothing_and_the_count_resets_at_midnight() {
        let clock = Arc::new(ManualClock::new(Timestamp::from_unix_millis(10 * DAY_MS + 1000)));
        let q = DailyQuota::new(5, clock.clone());
        let batch = |ws: &str, n: u64| HashMap::from([(ws.to_owned(), n)]);
        let _ = q.reserve(&batch("a", 4)).unwrap();
        let (limit, retry) = q.reserve(&batch("a", 2)).unwrap_err();
        assert_eq!(limit, 5);
        assert_eq!(retry, 86_399);
        let one = q.reserve(&batch("a", 1)).unwrap();
        assert!(q.reserve(&batch("a", 1)).is_err());
        q.release(one);
        let _ = q.reserve(&batch("a", 1)).unwrap();
        assert!(q.reserve(&batch("b", 5)).is_ok(), "each workspace has its own quota");
        clock.advance_millis(DAY_MS);
        assert!(q.reserve(&batch("a", 5)).is_ok());
    }
}
