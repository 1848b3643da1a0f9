//! `postwire serve`: the webhooks HTTP API and the dispatcher on an embedded SQLite
//! file (created on first run), or on a PostgreSQL database shared by any number of
//! `postwire serve` processes (`--database-url`), until SIGTERM or Ctrl-C.
//!
//! Settings come from flags, then `POSTWIRE_*` variables, then `--config FILE` (see
//! [`crate::settings`]). On a signal it stops accepting requests, lets the ones in
//! progress finish, then lets the deliveries in flight finish and records them;
//! deliveries not yet attempted stay in the file and go out on the next start.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use postwire_sender::SenderConfig;
use postwire_server::{Server, ServerOptions};

use crate::settings::{self, DEFAULT_DB, DEFAULT_LISTEN};

/// Arguments of `postwire serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The SQLite file (created on first run) [default: postwire.db].
    #[arg(long, env = "POSTWIRE_DB")]
    db: Option<PathBuf>,
    /// A PostgreSQL database, `postgres://user:password@host:port/db`, instead of the
    /// SQLite file: any number of `postwire serve` processes may share it (the queue,
    /// tokens and hourly limits are in the database). `sqlite:PATH` is the same as --db.
    #[arg(long, env = "POSTWIRE_DATABASE_URL", hide_env_values = true)]
    database_url: Option<String>,
    /// How long a claimed delivery stays leased to this process, in seconds [default:
    /// 120]. If the process dies, another one attempts its deliveries again once their
    /// leases end. Must be longer than --attempt-timeout-secs.
    #[arg(long, env = "POSTWIRE_LEASE_SECS")]
    lease_secs: Option<u64>,
    /// How long one delivery attempt may take, in seconds [default: 10].
    #[arg(long, env = "POSTWIRE_ATTEMPT_TIMEOUT_SECS")]
    attempt_timeout_secs: Option<u64>,
    /// Address to listen on [default: 127.0.0.1:8080]; port 0 picks a free port.
    #[arg(long, env = "POSTWIRE_LISTEN")]
    listen: Option<String>,
    /// TOML config file with the same settings (lowest precedence).
    #[arg(long, env = "POSTWIRE_CONFIG")]
    config: Option<PathBuf>,
    /// Bearer token of the internal ingest API (at least 16 characters). Without one, a
    /// token is generated once and kept in `<db>.ingest-token` (mode 0600).
    #[arg(long, env = "POSTWIRE_INGEST_TOKEN", hide_env_values = true)]
    ingest_token: Option<String>,
    /// API calls per token per hour [default: 1000].
    #[arg(long, env = "POSTWIRE_RATE_LIMIT_PER_HOUR")]
    rate_limit_per_hour: Option<u32>,
    /// Largest accepted request body in bytes [default: 65536].
    #[arg(long, env = "POSTWIRE_MAX_BODY_BYTES")]
    max_body_bytes: Option<usize>,
    /// Log filter, e.g. `info`, `debug`, `postwire_sender=debug` [default: info].
    #[arg(long, env = "POSTWIRE_LOG")]
    log: Option<String>,
    /// DANGEROUS, local development only: accept `http://` and loopback subscription
    /// URLs. Never in production: it lets API clients make the server call local services.
    #[arg(long, env = "POSTWIRE_DANGEROUSLY_ALLOW_INSECURE_LOCAL_URLS", num_args = 0..=1, default_missing_value = "true")]
    dangerously_allow_insecure_local_urls: Option<bool>,
    /// The server's public URL (e.g. https://webhooks.example.com), for Settings magic
    /// links [default: http:// and the request's Host].
    #[arg(long, env = "POSTWIRE_PUBLIC_URL")]
    public_url: Option<String>,
    /// How long an unused Settings magic link works, in seconds [default: 300].
    #[arg(long, env = "POSTWIRE_PORTAL_LINK_TTL_SECS")]
    portal_link_ttl_secs: Option<u64>,
    /// How long a Settings session lasts, in seconds [default: 3600].
    #[arg(long, env = "POSTWIRE_PORTAL_SESSION_TTL_SECS")]
    portal_session_ttl_secs: Option<u64>,
}

/// The merged settings.
struct Resolved {
    db: PathBuf,
    location: settings::Location,
    lease_secs: Option<u64>,
    attempt_timeout_secs: Option<u64>,
    listen: String,
    ingest_token: Option<String>,
    rate_limit_per_hour: u32,
    max_body_bytes: usize,
    log: String,
    insecure_local: bool,
    public_url: Option<String>,
    portal_link_ttl_secs: u64,
    portal_session_ttl_secs: u64,
}

fn resolve(args: ServeArgs) -> Result<Resolved, String> {
    let file = settings::load(args.config.as_deref())?;
    let db = args.db.or(file.db);
    let location = settings::location(args.database_url.or(file.database_url), db.clone())?;
    Ok(Resolved {
        db: match &location {
            settings::Location::Sqlite(path) => path.clone(),
            settings::Location::Postgres(_) => db.unwrap_or_else(|| PathBuf::from(DEFAULT_DB)),
        },
        location,
        lease_secs: args.lease_secs.or(file.lease_secs),
        attempt_timeout_secs: args.attempt_timeout_secs.or(file.attempt_timeout_secs),
        listen: args.listen.or(file.listen).unwrap_or_else(|| DEFAULT_LISTEN.to_owned()),
        ingest_token: args.ingest_token.or(file.ingest_token),
        rate_limit_per_hour: args
            .rate_limit_per_hour
            .or(file.rate_limit_per_hour)
            .unwrap_or(postwire_server::state::DEFAULT_RATE_LIMIT_PER_HOUR),
        max_body_bytes: args
            .max_body_bytes
            .or(file.max_body_bytes)
            .unwrap_or(postwire_server::state::DEFAULT_MAX_BODY_BYTES),
        log: args.log.or(file.log).unwrap_or_else(|| "info".to_owned()),
        insecure_local: args
            .dangerously_allow_insecure_local_urls
            .or(file.dangerously_allow_insecure_local_urls)
            .unwrap_or(false),
        public_url: args.public_url.or(file.public_url),
        portal_link_ttl_secs: args
            .portal_link_ttl_secs
            .or(file.portal_link_ttl_secs)
            .unwrap_or(postwire_server::portal::DEFAULT_LINK_TTL_SECS)
            .clamp(1, 86_400),
        portal_session_ttl_secs: args
            .portal_session_ttl_secs
            .or(file.portal_session_ttl_secs)
            .unwrap_or(postwire_server::portal::DEFAULT_SESSION_TTL_SECS)
            .clamp(1, 30 * 86_400),
    })
}

/// Starts logging to standard error with `filter`.
pub fn init_logging(filter: &str) {
    let filter =
        tracing_subscriber::EnvFilter::try_new(filter).unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_target(false)
        .try_init();
}

/// The ingest token file next to the database.
fn ingest_token_path(db: &Path) -> PathBuf {
    let mut name = db.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".ingest-token");
    db.with_file_name(name)
}

/// Reads the generated ingest token, or makes one (readable by the owner only).
fn generated_ingest_token(db: &Path) -> Result<(String, PathBuf), String> {
    let path = ingest_token_path(db);
    if let Ok(existing) = std::fs::read_to_string(&path) {
        let t = existing.trim().to_owned();
        if t.len() >= 16 {
            return Ok((t, path));
        }
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|_| "no secure random source is available".to_owned())?;
    let token: String = format!("pwi_{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>());
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    use std::io::Write;
    let mut f = options
        .open(&path)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    f.write_all(format!("{token}\n").as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok((token, path))
}

/// Runs `postwire serve`.
pub fn run(args: ServeArgs) -> Result<ExitCode, String> {
    let s = resolve(args)?;
    init_logging(&s.log);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start Tokio: {e}"))?;
    runtime.block_on(serve(s))
}

async fn serve(s: Resolved) -> Result<ExitCode, String> {
    let existed = match &s.location {
        settings::Location::Sqlite(path) => path.exists(),
        settings::Location::Postgres(_) => true,
    };
    let (ingest_token, ingest_source) = match s.ingest_token.clone() {
        Some(t) => (t, "from POSTWIRE_INGEST_TOKEN / --ingest-token / config".to_owned()),
        None => {
            let (t, path) = generated_ingest_token(&s.db)?;
            (t, format!("in {} (generated; mode 0600)", path.display()))
        }
    };
    let mut sender_config = SenderConfig::default();
    if s.insecure_local {
        sender_config = sender_config.dangerously_allow_insecure_local_urls();
    }
    if let Some(secs) = s.lease_secs {
        sender_config.lease = std::time::Duration::from_secs(secs);
    }
    if let Some(secs) = s.attempt_timeout_secs {
        sender_config.attempt_timeout = std::time::Duration::from_secs(secs);
    }
    let mut options = ServerOptions::new(&s.db);
    if let settings::Location::Postgres(url) = &s.location {
        options.database_url = Some(url.clone());
    }
    options.sender_config = sender_config;
    options.rate_limit_per_hour = s.rate_limit_per_hour;
    options.max_body_bytes = s.max_body_bytes;
    options.ingest_token = Some(ingest_token);
    options.public_url = s.public_url.clone();
    options.portal_link_ttl = std::time::Duration::from_secs(s.portal_link_ttl_secs);
    options.portal_session_ttl = std::time::Duration::from_secs(s.portal_session_ttl_secs);
    let server = Server::open(options).await.map_err(|e| e.to_string())?;
    let tokens = server.state().tokens.list().await.map_err(|e| e.to_string())?;
    let live_tokens = tokens.iter().filter(|t| t.revoked_at.is_none()).count();
    let running = server.start(&s.listen).await.map_err(|e| e.to_string())?;
    let base = running.base_url();
    let db_shown = s.location.shown();
    let db_flag = match &s.location {
        settings::Location::Sqlite(_) => format!("--db {db_shown}"),
        settings::Location::Postgres(_) => "--database-url $POSTWIRE_DATABASE_URL".to_owned(),
    };
    println!("postwire serve");
    println!("  database  {db_shown}{}", if existed { "" } else { " (created)" });
    println!("  API       {base}/public/v1   (OpenAPI: {base}/public/v1/openapi.json)");
    println!("  ingest    {base}/internal/v1   (bearer token {ingest_source})");
    println!(
        "  limits    {} calls per token per hour; bodies up to {} bytes",
        s.rate_limit_per_hour, s.max_body_bytes
    );
    if s.insecure_local {
        println!(
            "  WARNING   --dangerously-allow-insecure-local-urls is on: http:// and loopback subscription URLs are accepted. Local development only."
        );
    }
    if live_tokens == 0 {
        println!("  tokens    none yet. Create one (shown once):");
        println!("            postwire token create {db_flag} --workspace ws_1 --scope webhooks:write");
    } else {
        println!(
            "  tokens    {live_tokens} active (postwire token list {db_flag}; new: postwire token create {db_flag} --workspace ID --scope webhooks:write)"
        );
    }
    println!(
        "  settings  {base}/settings/   (sign in with a magic link: postwire portal link --db {db_shown} --workspace ID)"
    );
    println!("  docs      docs/api.md in the repository: endpoints, scopes, errors, the ingest API, settings");
    println!("listening on {base}");
    tracing::info!(addr = %running.local_addr(), "serving; Ctrl-C or SIGTERM stops gracefully");
    postwire_server::shutdown_signal().await;
    println!("shutting down: finishing requests and deliveries in flight…");
    running.shutdown().await;
    println!("stopped");
    Ok(ExitCode::SUCCESS)
}
