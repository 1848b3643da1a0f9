//! The per-workspace limits the spec names (`plan_limit`, `quota_exceeded`) and the
//! per-address limit on unauthenticated requests.
//!
//! * **Subscriptions per workspace** ([`Limits::max_subscriptions_per_workspace`]): a
//!   creation past it answers `403 plan_limit`. Creations go through one lock, so two at
//!   once cannot both take the last place.
//! * **Daily event quota per workspace** ([`DailyQuota`]): the changes the ingest accepts
//!   for a workspace per UTC day; past it a batch answers `429 quota_exceeded` with
//!   `Retry-After` (seconds to 00:00 UTC) and none of it is accepted. On PostgreSQL
//!   the counts live in the database (`server_daily_quota`, one row per workspace and
//!   day), so every process draws on one quota and a restart keeps it; with SQLite
//!   (one process) they live in memory, like the hourly API limit, and a restart starts
//!   the day's count again, which errs on the side of the platform.
//! * **Unauthenticated requests per address**: each `401` counts against the client's
//!   IP address in an hourly window (the `rate_limit::RateLimiter` keyed by
//!   address); past the limit the address gets `429 rate_limited` before any token
//!   look-up. Behind a reverse proxy every client has the proxy's address: raise the
//!   limit there, or let the proxy limit. These counters stay in each process's memory
//!   even on PostgreSQL (with N processes an address gets up to N times the limit): a
//!   database write per unauthenticated request would let anyone load the database.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use postwire_core::Clock;

use crate::db::ServerDb;
use crate::errors::ApiError;

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
    /// The database holding the counts, shared by every process (PostgreSQL only).
    shared: Option<ServerDb>,
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

/// A batch over the quota: the quota and the seconds until it resets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverQuota {
    /// The daily quota.
    pub limit: u64,
    /// Seconds until 00:00 UTC.
    pub retry_after_secs: u64,
}

impl DailyQuota {
    /// `limit` changes per workspace per UTC day, timed by `clock`, counted in memory.
    pub fn new(limit: u64, clock: Arc<dyn Clock>) -> DailyQuota {
        DailyQuota {
            limit,
            clock,
            counts: Arc::new(Mutex::new(HashMap::new())),
            shared: None,
        }
    }

    /// Like [`new`](Self::new), counted in `db` when it is PostgreSQL (shared by every
    /// process), else in memory.
    pub fn shared(limit: u64, clock: Arc<dyn Clock>, db: &ServerDb) -> DailyQuota {
        DailyQuota {
            shared: db.is_postgres().then(|| db.clone()),
            ..DailyQuota::new(limit, clock)
        }
    }

    /// Takes `per_workspace` counts if every workspace stays within its quota; otherwise
    /// takes nothing and says so. `Err` only when the shared counts cannot be reached.
    pub async fn reserve(
        &self,
        per_workspace: &HashMap<String, u64>,
    ) -> Result<Result<Reservation, OverQuota>, ApiError> {
        let now = self.clock.now().unix_millis();
        let day = now.div_euclid(DAY_MS);
        let over = OverQuota {
            limit: self.limit,
            retry_after_secs: (((day + 1) * DAY_MS - now).max(1000) as u64).div_ceil(1000),
        };
        let taken: Vec<(String, u64)> = per_workspace.iter().map(|(w, n)| (w.clone(), *n)).collect();
        let Some(db) = &self.shared else {
            return Ok(self
                .reserve_in_memory(day, &taken)
                .then_some(Reservation { day, taken })
                .ok_or(over));
        };
        let (workspaces, counts) = columns(&taken);
        let limit = i64::try_from(self.limit).unwrap_or(i64::MAX);
        let within = db
            .pg_run(move |mut c| {
                let (workspaces, counts) = (workspaces.clone(), counts.clone());
                Box::pin(async move {
                    let tx = c.transaction().await?;
                    // Yesterday's rows are of no use (one row per workspace and day).
                    tx.execute("DELETE FROM server_daily_quota WHERE day < $1", &[&day])
                        .await?;
                    let rows = tx
                        .query(
                            "INSERT INTO server_daily_quota AS q (workspace_id, day, count)
                             SELECT w, $1, n FROM unnest($2::text[], $3::bigint[]) AS u(w, n)
                             ON CONFLICT (workspace_id, day) DO UPDATE SET count = q.count + EXCLUDED.count
                             RETURNING count",
                            &[&day, &workspaces, &counts],
                        )
                        .await?;
                    let mut within = true;
                    for r in rows {
                        within &= r.try_get::<_, i64>(0)? <= limit;
                    }
                    if within {
                        tx.commit().await?;
                    } else {
                        tx.rollback().await?;
                    }
                    Ok(within)
                })
            })
            .await?;
        Ok(within.then_some(Reservation { day, taken }).ok_or(over))
    }

    fn reserve_in_memory(&self, day: i64, taken: &[(String, u64)]) -> bool {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        counts.retain(|_, (d, _)| *d == day);
        for (ws, n) in taken {
            let used = counts.get(ws).map(|(_, c)| *c).unwrap_or(0);
            if used.saturating_add(*n) > self.limit {
                return false;
            }
        }
        for (ws, n) in taken {
            counts.entry(ws.clone()).or_insert((day, 0)).1 += n;
        }
        true
    }

    /// Gives back a reservation (the batch failed, or was a replay of one counted
    /// before). A failure to reach the shared counts is logged: the batch stays counted,
    /// which errs on the side of the platform.
    pub async fn release(&self, r: Reservation) {
        let Some(db) = &self.shared else {
            let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
            for (ws, n) in r.taken {
                if let Some((d, c)) = counts.get_mut(&ws)
                    && *d == r.day
                {
                    *c = c.saturating_sub(n);
                }
            }
            return;
        };
        let (workspaces, counts) = columns(&r.taken);
        let day = r.day;
        let released = db
            .pg_run(move |c| {
                let (workspaces, counts) = (workspaces.clone(), counts.clone());
                Box::pin(async move {
                    c.execute(
                        "UPDATE server_daily_quota q SET count = GREATEST(q.count - u.n, 0)
                         FROM unnest($2::text[], $3::bigint[]) AS u(w, n)
                         WHERE q.workspace_id = u.w AND q.day = $1",
                        &[&day, &workspaces, &counts],
                    )
                    .await
                })
            })
            .await;
        if let Err(e) = released {
            tracing::warn!(error = %e, "could not give back a daily quota reservation");
        }
    }
}

/// A reservation as two columns for `unnest`.
fn columns(taken: &[(String, u64)]) -> (Vec<String>, Vec<i64>) {
    taken
        .iter()
        .map(|(w, n)| (w.clone(), i64::try_from(*n).unwrap_or(i64::MAX)))
        .unzip()
}

#[cfg(test)]
mod tests {
    use super::*;
    use postwire_core::{ManualClock, Timestamp};

    #[tokio::test]
    async fn a_batch_over_the_quota_takes_nothing_and_the_count_resets_at_midnight() {
        let clock = Arc::new(ManualClock::new(Timestamp::from_unix_millis(10 * DAY_MS + 1000)));
        let q = DailyQuota::new(5, clock.clone());
        let batch = |ws: &str, n: u64| HashMap::from([(ws.to_owned(), n)]);
        let _ = q.reserve(&batch("a", 4)).await.unwrap().unwrap();
        let over = q.reserve(&batch("a", 2)).await.unwrap().unwrap_err();
        assert_eq!(over.limit, 5);
        assert_eq!(over.retry_after_secs, 86_399);
        let one = q.reserve(&batch("a", 1)).await.unwrap().unwrap();
        assert!(q.reserve(&batch("a", 1)).await.unwrap().is_err());
        q.release(one).await;
        let _ = q.reserve(&batch("a", 1)).await.unwrap().unwrap();
        assert!(
            q.reserve(&batch("b", 5)).await.unwrap().is_ok(),
            "each workspace has its own quota"
        );
        clock.advance_millis(DAY_MS);
        assert!(q.reserve(&batch("a", 5)).await.unwrap().is_ok());
    }
}
