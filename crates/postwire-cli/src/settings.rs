//! Settings of `postwire serve` (and the database path of `postwire token`), from
//! three places in this order of precedence: command-line flags, `POSTWIRE_*`
//! environment variables (clap reads both), then an optional TOML file given with
//! `--config` / `POSTWIRE_CONFIG`; built-in defaults last.
//!
//! ```toml
//! db = "postwire.db"
//! listen = "127.0.0.1:8080"
//! ingest_token = "a-long-random-string"   # or POSTWIRE_INGEST_TOKEN
//! rate_limit_per_hour = 1000
//! max_body_bytes = 65536
//! log = "info"
//! header_read_timeout_secs = 10
//! body_read_timeout_secs = 30
//! max_connections = 10000
//! max_subscriptions_per_workspace = 100
//! daily_event_quota = 100000
//! unauthenticated_per_hour = 100
//! secret_key_file = "postwire.db.secret-key"   # or POSTWIRE_SECRET_KEY (the key text)
//! retention_days = 30
//! metrics_addr = "127.0.0.1:9090"
//! log_format = "json"
//! dangerously_allow_insecure_local_urls = false
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The default database file.
pub const DEFAULT_DB: &str = "postwire.db";
/// The default listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// What a config file may hold; every key is optional and unknown keys are errors.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSettings {
    /// The SQLite file.
    pub db: Option<PathBuf>,
    /// Address to listen on.
    pub listen: Option<String>,
    /// The internal ingest token.
    pub ingest_token: Option<String>,
    /// Calls per token per hour.
    pub rate_limit_per_hour: Option<u32>,
    /// Largest public request body.
    pub max_body_bytes: Option<usize>,
    /// Log filter, e.g. `info` or `postwire_server=debug`.
    pub log: Option<String>,
    /// DANGEROUS: allow `http` and loopback subscription URLs.
    pub dangerously_allow_insecure_local_urls: Option<bool>,
    /// Seconds to receive a request head (also the idle keep-alive timeout).
    pub header_read_timeout_secs: Option<u64>,
    /// Seconds to receive a request body after its head.
    pub body_read_timeout_secs: Option<u64>,
    /// Most open connections.
    pub max_connections: Option<usize>,
    /// Most subscriptions per workspace.
    pub max_subscriptions_per_workspace: Option<u64>,
    /// Most ingested events per workspace per UTC day.
    pub daily_event_quota: Option<u64>,
    /// Most unauthenticated (401) requests per client address per hour.
    pub unauthenticated_per_hour: Option<u32>,
    /// The key file that encrypts signing secrets at rest.
    pub secret_key_file: Option<PathBuf>,
    /// Days to keep finished deliveries and unreferenced events (0: forever).
    pub retention_days: Option<u64>,
    /// Address of the Prometheus metrics listener.
    pub metrics_addr: Option<String>,
    /// `text` or `json`.
    pub log_format: Option<String>,
}

/// Reads the config file, or nothing when there is none.
pub fn load(path: Option<&Path>) -> Result<FileSettings, String> {
    let Some(path) = path else {
        return Ok(FileSettings::default());
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read config file {}: {e}", path.display()))?;
    toml::from_str(&text).map_err(|e| format!("config file {}: {e}", path.display()))
}
