//! What every handler shares: the sender, the token table, the rate limiter, the
//! external-id index and the API settings.

use std::sync::Arc;

use postwire_core::Clock;
use postwire_sender::Sender;

use crate::errors::{ApiError, ApiResult};
use crate::ingest_auth::IngestAuth;
use crate::limits::{DailyQuota, Limits};
use crate::portal::PortalStore;
use crate::rate_limit::RateLimiter;
use crate::tokens::TokenStore;

/// Default largest accepted request body: 64 KiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 64 * 1024;
/// Default hourly limit of calls per token.
pub const DEFAULT_RATE_LIMIT_PER_HOUR: u32 = 1000;
/// Default largest accepted ingest body (a batch of changes): 4 MiB.
pub const DEFAULT_MAX_INGEST_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The handlers' shared state. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// The sender engine.
    pub sender: Sender,
    /// API tokens.
    pub tokens: TokenStore,
    /// Portal sessions of the Settings screen.
    pub portal: PortalStore,
    /// The hourly limit per token.
    pub limiter: RateLimiter,
    /// The internal ingest token (its hash); `None` disables ingest.
    pub ingest: Option<Arc<IngestAuth>>,
    /// Largest accepted public request body, in bytes.
    pub max_body_bytes: usize,
    /// Largest accepted ingest body, in bytes.
    pub max_ingest_body_bytes: usize,
    /// Time for token records and the index (the sender has its own clock).
    pub clock: Arc<dyn Clock>,
    /// The configured per-workspace and per-address limits.
    pub limits: Limits,
    /// Ingested changes per workspace today.
    pub quota: DailyQuota,
    /// `401` answers per client address per hour.
    pub unauthenticated: RateLimiter,
    /// Held while counting a workspace's subscriptions and creating one, so the
    /// subscription limit is exact.
    pub create_lock: Arc<tokio::sync::Mutex<()>>,
    /// Prometheus metrics (requests are counted by the logging middleware).
    pub metrics: crate::metrics::Metrics,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("limiter", &self.limiter)
            .field("max_body_bytes", &self.max_body_bytes)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// `not_found` unless the workspace is registered with the sender.
    pub async fn require_workspace(&self, workspace_id: &str) -> ApiResult<postwire_sender::Workspace> {
        match self.sender.workspace(workspace_id).await? {
            Some(w) => Ok(w),
            None => {
                let shown: String = workspace_id.chars().take(64).collect();
                Err(ApiError::NotFound(format!("workspace `{shown}` not found")))
            }
        }
    }
}
