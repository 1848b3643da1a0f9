//! Opening, running and stopping the whole server: the sender on its SQLite file, the
//! dispatcher, and the HTTP API on a TCP listener.
//!
//! [`Server::open`] opens (or creates) the database; [`Server::start`] binds, starts the
//! dispatcher and serves; [`RunningServer::shutdown`] stops in the order that loses
//! nothing: first the HTTP side stops accepting and lets requests in progress finish
//! (so every accepted event is on disk), then the dispatcher lets attempts in flight
//! finish and records their outcomes. Deliveries not yet attempted stay in the file for
//! the next start.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use postwire_core::{Clock, SystemClock};
use postwire_sender::retention::RetentionPolicy;
use postwire_sender::secret_box::KEY_FILE_CHECK_INTERVAL;
use postwire_sender::{DispatcherHandle, Sender, SenderConfig, SenderError};
use tokio::sync::oneshot;

use crate::db::ServerDb;
use crate::errors::ApiError;
use crate::limits::{DailyQuota, Limits};
use crate::listener::{ConnectionCounter, ConnectionLimits};
use crate::metrics::Metrics;
use crate::portal::PortalStore;
use crate::rate_limit::RateLimiter;
use crate::state::{AppState, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_INGEST_BODY_BYTES, DEFAULT_RATE_LIMIT_PER_HOUR};
use crate::tokens::TokenStore;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The sender could not open its store.
    #[error("opening the sender: {0}")]
    Sender(#[from] SenderError),
    /// The server's own tables could not be opened, or a setting is invalid.
    #[error("{0}")]
    Setup(#[from] ApiError),
    /// The listen address could not be bound.
    #[error("listening on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// How to open the server.
#[derive(Clone)]
pub struct ServerOptions {
    /// The SQLite file (created on first run).
    pub db_path: PathBuf,
    /// A PostgreSQL database (`postgres://…`) instead of the SQLite file at `db_path`:
    /// the sender's queue and the server's tables (tokens, rate-limit windows) go there,
    /// and any number of server processes may share it. `None` (the default): SQLite.
    pub database_url: Option<String>,
    /// The sender's settings (timeouts, address policy, …).
    pub sender_config: SenderConfig,
    /// The sender's clock: delivery times, retries, event times.
    pub sender_clock: Arc<dyn Clock>,
    /// The API's clock: the hourly limit and token records.
    pub api_clock: Arc<dyn Clock>,
    /// Calls per token per hour.
    pub rate_limit_per_hour: u32,
    /// Largest public request body, in bytes.
    pub max_body_bytes: usize,
    /// Largest ingest request body, in bytes.
    pub max_ingest_body_bytes: usize,
    /// The internal ingest token; `None` disables ingest over HTTP.
    pub ingest_token: Option<String>,
    /// How long a Settings magic link works if unused.
    pub portal_link_ttl: Duration,
    /// How long a Settings session lasts.
    pub portal_session_ttl: Duration,
    /// The server's public URL (e.g. `https://webhooks.example.com`) for magic links;
    /// `None`: `http://` and the request's `Host`.
    pub public_url: Option<String>,
    /// Read timeouts and the connection cap.
    pub connection_limits: ConnectionLimits,
    /// Subscriptions per workspace, daily event quota, unauthenticated calls per address.
    pub limits: Limits,
    /// How long finished deliveries and unreferenced events are kept; `None` keeps them
    /// forever. Default: 30 days, checked every minute.
    pub retention: Option<RetentionPolicy>,
    /// Where to serve Prometheus metrics (`GET /metrics`); `None` serves none.
    pub metrics_addr: Option<String>,
    /// How often the at-rest key file is read again to pick up `postwire keys rotate`
    /// ([`KEY_FILE_CHECK_INTERVAL`], 30 s); `None` never reads it again.
    pub key_file_check_interval: Option<Duration>,
}

impl std::fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerOptions")
            .field("db_path", &self.db_path)
            .field("database_url", &self.database_url.as_ref().map(|_| "postgres://…"))
            .field("sender_config", &self.sender_config)
            .field("rate_limit_per_hour", &self.rate_limit_per_hour)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("connection_limits", &self.connection_limits)
            .field("limits", &self.limits)
            .field("retention", &self.retention)
            .field("ingest_token", &self.ingest_token.as_ref().map(|_| "…"))
            .finish_non_exhaustive()
    }
}

impl ServerOptions {
    /// Defaults for the file at `db_path`: the spec's sender settings, the system clock,
    /// 1000 calls per hour, 64 KiB bodies, no ingest, 5-minute magic links and 1-hour
    /// Settings sessions.
    pub fn new(db_path: impl Into<PathBuf>) -> ServerOptions {
        ServerOptions {
            db_path: db_path.into(),
            database_url: None,
            sender_config: SenderConfig::default(),
            sender_clock: Arc::new(SystemClock),
            api_clock: Arc::new(SystemClock),
            rate_limit_per_hour: DEFAULT_RATE_LIMIT_PER_HOUR,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_ingest_body_bytes: DEFAULT_MAX_INGEST_BODY_BYTES,
            ingest_token: None,
            portal_link_ttl: crate::portal::DEFAULT_LINK_TTL,
            portal_session_ttl: crate::portal::DEFAULT_SESSION_TTL,
            public_url: None,
            connection_limits: ConnectionLimits::default(),
            limits: Limits::default(),
            retention: Some(RetentionPolicy::default()),
            metrics_addr: None,
            key_file_check_interval: Some(KEY_FILE_CHECK_INTERVAL),
        }
    }
}

/// An opened, not yet serving, server.
#[derive(Debug)]
pub struct Server {
    state: AppState,
    limits: ConnectionLimits,
    retention: Option<RetentionPolicy>,
    key_file_check_interval: Option<Duration>,
    metrics_addr: Option<String>,
}

impl Server {
    /// Opens the database (creating it on first run) and the sender. Does not listen or
    /// deliver yet.
    pub async fn open(options: ServerOptions) -> Result<Server, ServerError> {
        let ingest = crate::ingest_auth::auth_from(options.ingest_token.as_deref())?;
        let metrics = Metrics::new();
        let mut sender_config = options.sender_config;
        // The plan limit is also counted in the creation's transaction: the API's own
        // check (under its lock) is per process, this one holds across processes.
        sender_config.max_subscriptions_per_workspace = Some(options.limits.max_subscriptions_per_workspace);
        if sender_config.observer.is_none() {
            sender_config.observer = Some(Arc::new(metrics.clone()));
        }
        let (sender, db) = match &options.database_url {
            Some(url) => (
                Sender::open_postgres(url, sender_config, options.sender_clock).await?,
                ServerDb::connect_postgres(url).await.map_err(ApiError::from)?,
            ),
            None => {
                let sender = Sender::open_sqlite(&options.db_path, sender_config, options.sender_clock).await?;
                let path = options.db_path.clone();
                let db = tokio::task::spawn_blocking(move || ServerDb::open(path))
                    .await
                    .map_err(|e| ApiError::Internal(format!("opening the database: {e}")))?
                    .map_err(ApiError::from)?;
                (sender, db)
            }
        };
        let quota = DailyQuota::shared(options.limits.daily_event_quota, options.api_clock.clone(), &db);
        let state = AppState {
            sender,
            limiter: RateLimiter::shared(options.rate_limit_per_hour, options.api_clock.clone(), &db),
            tokens: TokenStore::new(db.clone()),
            portal: PortalStore::new(db, options.portal_link_ttl, options.portal_session_ttl)
                .with_public_url(options.public_url),
            ingest,
            max_body_bytes: options.max_body_bytes,
            max_ingest_body_bytes: options.max_ingest_body_bytes,
            limits: options.limits,
            quota,
            unauthenticated: RateLimiter::new(options.limits.unauthenticated_per_hour, options.api_clock.clone()),
            create_lock: Arc::new(tokio::sync::Mutex::new(())),
            metrics,
            clock: options.api_clock,
        };
        Ok(Server {
            state,
            limits: options.connection_limits,
            retention: options.retention,
            key_file_check_interval: options.key_file_check_interval,
            metrics_addr: options.metrics_addr,
        })
    }

    /// The shared state (sender, tokens, …), e.g. to create a token before serving.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Binds `addr`, starts the dispatcher and serves until [`RunningServer::shutdown`].
    pub async fn start(self, addr: &str) -> Result<RunningServer, ServerError> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServerError::Bind {
                addr: addr.to_owned(),
                source,
            })?;
        let local_addr = listener.local_addr().map_err(|source| ServerError::Bind {
            addr: addr.to_owned(),
            source,
        })?;
        let metrics_listener = match &self.metrics_addr {
            Some(maddr) => Some(
                tokio::net::TcpListener::bind(maddr)
                    .await
                    .map_err(|source| ServerError::Bind {
                        addr: maddr.clone(),
                        source,
                    })?,
            ),
            None => None,
        };
        let dispatcher = self.state.sender.start();
        let retention = self
            .retention
            .map(|policy| spawn_retention(self.state.sender.clone(), policy));
        let key_watch = self
            .key_file_check_interval
            .map(|every| spawn_key_watch(self.state.sender.clone(), every));
        let app = crate::app::app(self.state.clone());
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let connections = ConnectionCounter::default();
        let mut metrics_addr = None;
        let metrics = match metrics_listener {
            Some(listener) => {
                metrics_addr = listener.local_addr().ok();
                let router = crate::metrics::router(
                    self.state.metrics.clone(),
                    self.state.sender.clone(),
                    connections.clone(),
                );
                let (tx, rx) = oneshot::channel::<()>();
                // The same accept loop as the API, so a slow or idle scraper is cut off
                // by the same timeouts; a small cap, as only scrapers should come here.
                let limits = ConnectionLimits {
                    max_connections: METRICS_MAX_CONNECTIONS,
                    ..self.limits
                };
                let task = tokio::spawn(crate::listener::serve(
                    listener,
                    router,
                    limits,
                    ConnectionCounter::default(),
                    rx,
                ));
                Some((tx, task))
            }
            None => None,
        };
        let http = tokio::spawn(crate::listener::serve(
            listener,
            app,
            self.limits,
            connections.clone(),
            stop_rx,
        ));
        Ok(RunningServer {
            state: self.state,
            connections,
            retention,
            key_watch,
            metrics,
            metrics_addr,
            local_addr,
            stop_tx: Some(stop_tx),
            http,
            dispatcher,
        })
    }
}

/// A serving server.
#[derive(Debug)]
pub struct RunningServer {
    state: AppState,
    connections: ConnectionCounter,
    retention: Option<Background>,
    key_watch: Option<Background>,
    metrics: Option<Background>,
    metrics_addr: Option<SocketAddr>,
    local_addr: SocketAddr,
    stop_tx: Option<oneshot::Sender<()>>,
    http: tokio::task::JoinHandle<()>,
    dispatcher: DispatcherHandle,
}

/// Connections open at once on the metrics listener (`--metrics-addr`): 64. It is served
/// with the API's header and body timeouts.
pub const METRICS_MAX_CONNECTIONS: usize = 64;

/// How long shutdown waits for HTTP requests in progress before giving up on them.
pub const HTTP_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

impl RunningServer {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// `http://<addr>`: the base URL the spec's paths are relative to.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.local_addr)
    }

    /// The shared state.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Where the metrics are served, if they are.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// HTTP connections open now.
    pub fn open_connections(&self) -> usize {
        self.connections.open()
    }

    /// Stops accepting connections, lets requests in progress finish (at most
    /// [`HTTP_DRAIN_TIMEOUT`]), then stops the dispatcher after its attempts in flight
    /// finish and are recorded.
    pub async fn shutdown(mut self) {
        if let Some(tx) = self.stop_tx.take() {
            let _ = tx.send(());
        }
        if tokio::time::timeout(HTTP_DRAIN_TIMEOUT, &mut self.http).await.is_err() {
            tracing::warn!("HTTP requests still running after {HTTP_DRAIN_TIMEOUT:?}; stopping them");
            self.http.abort();
        }
        if let Some((stop, task)) = self.metrics.take() {
            let _ = stop.send(());
            let _ = task.await;
        }
        for (stop, task) in [self.retention.take(), self.key_watch.take()].into_iter().flatten() {
            let _ = stop.send(());
            let _ = task.await;
        }
        self.dispatcher.shutdown().await;
    }
}

/// A background task and the means to stop it.
type Background = (oneshot::Sender<()>, tokio::task::JoinHandle<()>);

/// Runs `step` every `interval` until told to stop; a step in progress is dropped at
/// its next await (each step's work is made of short transactions, so nothing is left
/// half done).
fn spawn_every<F, Fut>(interval: Duration, mut step: F) -> Background
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (stop_tx, mut stop_rx) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = &mut stop_rx => return,
                _ = tokio::time::sleep(interval) => {}
            }
            tokio::select! {
                _ = &mut stop_rx => return,
                _ = step() => {}
            }
        }
    });
    (stop_tx, task)
}

/// Retention every `policy.interval`.
fn spawn_retention(sender: Sender, policy: RetentionPolicy) -> Background {
    spawn_every(policy.interval, move || {
        let sender = sender.clone();
        async move {
            match sender.purge_expired(&policy).await {
                Ok(p) if p.deliveries + p.events + p.notifications > 0 => tracing::info!(
                    deliveries = p.deliveries,
                    attempts = p.attempts,
                    events = p.events,
                    notifications = p.notifications,
                    "retention removed old history"
                ),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "retention failed; trying again at the next interval"),
            }
        }
    })
}

/// Reads the at-rest key file again every `interval`; when `postwire keys rotate` put a
/// new current key in it, seals every stored secret again under that key in the
/// background (and tries again at the next interval if that fails).
fn spawn_key_watch(sender: Sender, interval: Duration) -> Background {
    let pending = Arc::new(std::sync::atomic::AtomicBool::new(false));
    spawn_every(interval, move || {
        let (sender, pending) = (sender.clone(), pending.clone());
        async move {
            use std::sync::atomic::Ordering::Relaxed;
            match sender.reload_secret_key() {
                Ok(Some(key)) => {
                    tracing::info!(key = %key, "the key file names a new current key: encrypting every secret under it");
                    pending.store(true, Relaxed);
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "cannot read the key file again; keeping the keys in use"),
            }
            if pending.load(Relaxed) {
                match sender.reseal_secrets().await {
                    Ok(n) => {
                        tracing::info!(resealed = n, "every secret is encrypted under the current key");
                        pending.store(false, Relaxed);
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "re-encrypting secrets failed; trying again at the next check")
                    }
                }
            }
        }
    })
}

/// Resolves on Ctrl-C or, on Unix, SIGTERM. The SIGTERM handler is installed when this
/// is called, not when the future is first polled, so a caller that announces it is
/// ready after calling it cannot be killed by a SIGTERM sent in between. Must be called
/// inside a Tokio runtime.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    async move {
        let ctrl_c = async {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        #[cfg(unix)]
        let term = async move {
            match term {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        #[cfg(not(unix))]
        let term = std::future::pending::<()>();
        tokio::select! {
            _ = ctrl_c => {}
            _ = term => {}
        }
    }
}
