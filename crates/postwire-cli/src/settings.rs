//! Settings of `postwire serve` (and the database path of `postwire token`), from
//! three places in this order of precedence: command-line flags, `POSTWIRE_*`
//! environment variables (clap reads both), then an optional TOML file given with
//! `--config` / `POSTWIRE_CONFIG`; built-in defaults last.
//!
//! ```toml
//! db = "postwire.db"
//! # database_url = "postgres://user:password@host/db"   # instead of db; or POSTWIRE_DATABASE_URL
//! lease_secs = 120
//! attempt_timeout_secs = 10
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
//! # otlp_endpoint = "http://127.0.0.1:4318"   # a build with the `otel` feature only
//! dangerously_allow_insecure_local_urls = false
//! public_url = "https://webhooks.example.com"   # for Settings magic links
//! portal_link_ttl_secs = 300
//! portal_session_ttl_secs = 3600
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
    /// A database URL: `postgres://…` (several processes share it) or `sqlite:PATH`.
    pub database_url: Option<String>,
    /// How long a claimed delivery stays leased to its process, in seconds.
    pub lease_secs: Option<u64>,
    /// How long one attempt may take, in seconds.
    pub attempt_timeout_secs: Option<u64>,
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
    /// The server's public URL, for Settings magic links.
    pub public_url: Option<String>,
    /// Life of an unused Settings magic link, in seconds.
    pub portal_link_ttl_secs: Option<u64>,
    /// Life of a Settings session, in seconds.
    pub portal_session_ttl_secs: Option<u64>,
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
    /// Days to keep finished deliveries, unreferenced events and sent notices (0: forever).
    pub retention_days: Option<u64>,
    /// Address of the Prometheus metrics listener.
    pub metrics_addr: Option<String>,
    /// `text` or `json`.
    pub log_format: Option<String>,
    /// OpenTelemetry collector (OTLP/HTTP) to send traces to.
    pub otlp_endpoint: Option<String>,
}

/// Reads the config file, or nothing when there is none.
pub fn load(path: Option<&Path>) -> Result<FileSettings, String> {
    let Some(path) = path else {
        return Ok(FileSettings::default());
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read config file {}: {e}", path.display()))?;
    toml::from_str(&text).map_err(|e| format!("config file {}: {e}", path.display()))
}

/// Where the data lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// An embedded SQLite file (one dispatching process).
    Sqlite(PathBuf),
    /// A PostgreSQL database (`postgres://…`), shared by any number of processes.
    Postgres(String),
}

impl Location {
    /// How to show it: the file, or the URL without its password.
    pub fn shown(&self) -> String {
        match self {
            // Absolute: which directory a relative `--db` meant is what a wrong guess costs.
            Location::Sqlite(p) => std::path::absolute(p)
                .unwrap_or_else(|_| p.clone())
                .display()
                .to_string(),
            Location::Postgres(url) => match url::Url::parse(url) {
                Ok(mut u) if u.password().is_some() => {
                    let _ = u.set_password(Some("***"));
                    u.to_string()
                }
                _ => url.clone(),
            },
        }
    }
}

/// The database from `--database-url` (or its variable or config key), else `--db`:
/// a `postgres://` or `postgresql://` URL is PostgreSQL; `sqlite:PATH` (or
/// `sqlite://PATH`) and no URL at all are the SQLite file.
pub fn location(url: Option<String>, db: Option<PathBuf>) -> Result<Location, String> {
    let Some(url) = url.filter(|u| !u.trim().is_empty()) else {
        return Ok(Location::Sqlite(db.unwrap_or_else(|| PathBuf::from(DEFAULT_DB))));
    };
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(Location::Postgres(url));
    }
    if let Some(path) = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")) {
        if path.is_empty() {
            return Err("--database-url sqlite: needs a file path (sqlite:postwire.db)".into());
        }
        return Ok(Location::Sqlite(PathBuf::from(path)));
    }
    Err("--database-url must start with postgres://, postgresql:// or sqlite:".into())
}

#[cfg(test)]
mod location_tests {
    use super::*;

    #[test]
    fn urls_choose_the_backend_and_no_url_keeps_sqlite() {
        assert_eq!(location(None, None).unwrap(), Location::Sqlite(DEFAULT_DB.into()));
        assert_eq!(
            location(None, Some("x.db".into())).unwrap(),
            Location::Sqlite("x.db".into())
        );
        assert_eq!(
            location(Some("sqlite:a.db".into()), None).unwrap(),
            Location::Sqlite("a.db".into())
        );
        assert_eq!(
            location(Some("postgres://u@h/d".into()), Some("x.db".into())).unwrap(),
            Location::Postgres("postgres://u@h/d".into())
        );
        assert!(location(Some("mysql://h/d".into()), None).is_err());
        assert!(location(Some("sqlite:".into()), None).is_err());
        let shown = Location::Postgres("postgres://u:secret@h/d".into()).shown();
        assert!(!shown.contains("secret"), "{shown}");
    }
}
