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
use std::time::Duration;

use clap::Args;
use postwire_sender::SenderConfig;
use postwire_server::limits::{self, Limits};
use postwire_server::listener::{self, ConnectionLimits};
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
    /// TLS with `?sslmode=require` (the certificate is always verified; a private CA as
    /// `&sslrootcert=/path/ca.pem`); without sslmode, plain [default: none, SQLite].
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
    /// Seconds a client has to send a request head, counted from when the server starts
    /// waiting for it; also how long an idle kept-alive connection stays open [default: 10].
    #[arg(long, env = "POSTWIRE_HEADER_READ_TIMEOUT_SECS")]
    header_read_timeout_secs: Option<u64>,
    /// Seconds a client has to send a whole request body after its head; later, the
    /// answer is 408 `request_timeout` and the connection is closed [default: 30].
    #[arg(long, env = "POSTWIRE_BODY_READ_TIMEOUT_SECS")]
    body_read_timeout_secs: Option<u64>,
    /// Most open HTTP connections; past it new connections are closed at once [default: 10000].
    #[arg(long, env = "POSTWIRE_MAX_CONNECTIONS")]
    max_connections: Option<usize>,
    /// Most subscriptions per workspace; past it creation answers 403 `plan_limit` [default: 100].
    #[arg(long, env = "POSTWIRE_MAX_SUBSCRIPTIONS_PER_WORKSPACE")]
    max_subscriptions_per_workspace: Option<u64>,
    /// Most events the ingest accepts per workspace per UTC day; past it 429
    /// `quota_exceeded` [default: 100000].
    #[arg(long, env = "POSTWIRE_DAILY_EVENT_QUOTA")]
    daily_event_quota: Option<u64>,
    /// Most unauthenticated (401) requests per client address per hour; past it the
    /// address gets 429 `rate_limited` [default: 100].
    #[arg(long, env = "POSTWIRE_UNAUTHENTICATED_PER_HOUR")]
    unauthenticated_per_hour: Option<u32>,
    /// Key file that encrypts signing secrets at rest (`<id>:<base64>` lines, current
    /// first). `POSTWIRE_SECRET_KEY` may hold the same text instead. Without either,
    /// the database file + `.secret-key` is used, and generated (mode 0600) for a
    /// database without encrypted secrets (never with `--database-url`). The file is read
    /// again every 30 s, so `postwire keys rotate` takes effect without a restart.
    #[arg(long, env = "POSTWIRE_SECRET_KEY_FILE")]
    secret_key_file: Option<PathBuf>,
    /// Days to keep finished deliveries (with their attempts), events no delivery
    /// refers to and sent operational notices; 0 keeps them forever. Pending and held
    /// deliveries are never removed [default: 30].
    #[arg(long, env = "POSTWIRE_RETENTION_DAYS")]
    retention_days: Option<u64>,
    /// Address of a separate listener serving Prometheus metrics at `GET /metrics`
    /// (e.g. `127.0.0.1:9090`); keep it off the public network. Served with the API's
    /// header and body timeouts and at most 64 connections at once [default: none].
    #[arg(long, env = "POSTWIRE_METRICS_ADDR")]
    metrics_addr: Option<String>,
    /// Log format: `text` (one readable line per event) or `json` (one JSON object per
    /// line, with the request id of every API log line) [default: text].
    #[arg(long, env = "POSTWIRE_LOG_FORMAT")]
    log_format: Option<String>,
    /// OpenTelemetry collector to send traces to over OTLP/HTTP (e.g.
    /// `http://127.0.0.1:4318`; spans go to `<endpoint>/v1/traces`, batched every 5 s).
    /// Only in a build with the `otel` cargo feature [default: none, no traces].
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    otlp_endpoint: Option<String>,
    /// DANGEROUS, local development only: accept `http://` and loopback subscription
    /// URLs. Never in production: it lets API clients make the server call local services.
    #[arg(long, env = "POSTWIRE_DANGEROUSLY_ALLOW_INSECURE_LOCAL_URLS", num_args = 0..=1, default_missing_value = "true")]
    dangerously_allow_insecure_local_urls: Option<bool>,
    /// The server's public URL (e.g. `https://webhooks.example.com`), for Settings magic
    /// links [default: http:// and the request's Host].
    #[arg(long, env = "POSTWIRE_PUBLIC_URL")]
    public_url: Option<String>,
    /// How long an unused Settings magic link works, in seconds [default: 300].
    #[arg(long, env = "POSTWIRE_PORTAL_LINK_TTL_SECS")]
    portal_link_ttl_secs: Option<u64>,
    /// How long a Settings session lasts, in seconds [default: 3600].
    #[arg(long, env = "POSTWIRE_PORTAL_SESSION_TTL_SECS")]
    portal_session_ttl_secs: Option<u64>,
    /// A PKCS #11 module (the shared library of an HSM, a cloud HSM or SoftHSM2, e.g.
    /// `/usr/lib/softhsm/libsofthsm2.so`) in whose token new `v1a` signing keys are
    /// generated (ed25519, non-extractable) and every `v1a` signature by them is made.
    /// Needs --pkcs11-token-label or --pkcs11-slot, and the user PIN in
    /// POSTWIRE_PKCS11_PIN or --pkcs11-pin-file (never on the command line). Keys made
    /// before keep signing in process until the next rotation [default: none, keys in
    /// process].
    #[arg(long, env = "POSTWIRE_PKCS11_MODULE")]
    pkcs11_module: Option<PathBuf>,
    /// The label of the PKCS #11 token to use [default: none; one of this or --pkcs11-slot
    /// with --pkcs11-module].
    #[arg(long, env = "POSTWIRE_PKCS11_TOKEN_LABEL", conflicts_with = "pkcs11_slot")]
    pkcs11_token_label: Option<String>,
    /// The slot of the PKCS #11 token to use, instead of its label [default: none].
    #[arg(long, env = "POSTWIRE_PKCS11_SLOT")]
    pkcs11_slot: Option<u64>,
    /// A file holding the token's user PIN (read at each log-in; surrounding whitespace
    /// ignored), when POSTWIRE_PKCS11_PIN is not set [default: none].
    #[arg(long, env = "POSTWIRE_PKCS11_PIN_FILE")]
    pkcs11_pin_file: Option<PathBuf>,
}

/// The environment variable holding the PKCS #11 user PIN (there is no flag for it).
pub const PKCS11_PIN_ENV: &str = "POSTWIRE_PKCS11_PIN";

/// The PKCS #11 settings, checked: all or none.
fn pkcs11_config(args: &ServeArgs) -> Result<Option<postwire_sender::Pkcs11Config>, String> {
    let Some(module) = args.pkcs11_module.clone() else {
        if args.pkcs11_token_label.is_some() || args.pkcs11_slot.is_some() || args.pkcs11_pin_file.is_some() {
            return Err("--pkcs11-token-label, --pkcs11-slot and --pkcs11-pin-file need --pkcs11-module".to_owned());
        }
        return Ok(None);
    };
    let token = match (&args.pkcs11_token_label, args.pkcs11_slot) {
        (Some(label), None) => postwire_sender::TokenSelector::Label(label.clone()),
        (None, Some(slot)) => postwire_sender::TokenSelector::Slot(slot),
        _ => return Err("--pkcs11-module needs --pkcs11-token-label or --pkcs11-slot".to_owned()),
    };
    let pin = match (
        std::env::var(PKCS11_PIN_ENV).ok().filter(|p| !p.is_empty()),
        &args.pkcs11_pin_file,
    ) {
        (Some(pin), None) => postwire_sender::PinSource::Value(std::sync::Arc::new(zeroize::Zeroizing::new(pin))),
        (None, Some(file)) => postwire_sender::PinSource::File(file.clone()),
        (Some(_), Some(_)) => {
            return Err(format!(
                "give the PKCS #11 PIN once: {PKCS11_PIN_ENV} or --pkcs11-pin-file, not both"
            ));
        }
        (None, None) => {
            return Err(format!(
                "--pkcs11-module needs the token's user PIN in {PKCS11_PIN_ENV} or --pkcs11-pin-file"
            ));
        }
    };
    Ok(Some(postwire_sender::Pkcs11Config { module, token, pin }))
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
    connection_limits: ConnectionLimits,
    limits: Limits,
    secret_key_file: Option<PathBuf>,
    retention_days: u64,
    metrics_addr: Option<String>,
    json_logs: bool,
    otlp_endpoint: Option<String>,
    pkcs11: Option<postwire_sender::Pkcs11Config>,
}

fn resolve(args: ServeArgs) -> Result<Resolved, String> {
    let file = settings::load(args.config.as_deref())?;
    let pkcs11 = pkcs11_config(&args)?;
    let db = args.db.or(file.db);
    let location = settings::location(args.database_url.or(file.database_url), db.clone())?;
    Ok(Resolved {
        db: match &location {
            settings::Location::Sqlite(path) => path.clone(),
            settings::Location::Postgres(_) => db.unwrap_or_else(|| PathBuf::from(DEFAULT_DB)),
        },
        location,
        pkcs11,
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
        secret_key_file: args.secret_key_file.or(file.secret_key_file),
        retention_days: args.retention_days.or(file.retention_days).unwrap_or(30),
        metrics_addr: args.metrics_addr.or(file.metrics_addr),
        otlp_endpoint: args.otlp_endpoint.or(file.otlp_endpoint),
        json_logs: match args.log_format.or(file.log_format).as_deref() {
            None | Some("text") => false,
            Some("json") => true,
            Some(other) => return Err(format!("--log-format must be `text` or `json`, not `{other}`")),
        },
        connection_limits: ConnectionLimits {
            header_read_timeout: args
                .header_read_timeout_secs
                .or(file.header_read_timeout_secs)
                .map(Duration::from_secs)
                .unwrap_or(listener::DEFAULT_HEADER_READ_TIMEOUT),
            body_read_timeout: args
                .body_read_timeout_secs
                .or(file.body_read_timeout_secs)
                .map(Duration::from_secs)
                .unwrap_or(listener::DEFAULT_BODY_READ_TIMEOUT),
            max_connections: args
                .max_connections
                .or(file.max_connections)
                .unwrap_or(listener::DEFAULT_MAX_CONNECTIONS),
        },
        limits: Limits {
            max_subscriptions_per_workspace: args
                .max_subscriptions_per_workspace
                .or(file.max_subscriptions_per_workspace)
                .unwrap_or(limits::DEFAULT_MAX_SUBSCRIPTIONS_PER_WORKSPACE),
            daily_event_quota: args
                .daily_event_quota
                .or(file.daily_event_quota)
                .unwrap_or(limits::DEFAULT_DAILY_EVENT_QUOTA),
            unauthenticated_per_hour: args
                .unauthenticated_per_hour
                .or(file.unauthenticated_per_hour)
                .unwrap_or(limits::DEFAULT_UNAUTHENTICATED_PER_HOUR),
        },
    })
}

/// Starts logging to standard error with `filter`, as readable text (for commands
/// other than `serve`: `demo`).
pub fn init_logging(filter: &str) {
    // Without an endpoint there is no exporter, so nothing can fail.
    let _ = crate::telemetry::init(filter, crate::telemetry::LogFormat::Text, None);
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
    let format = if s.json_logs {
        crate::telemetry::LogFormat::Json
    } else {
        crate::telemetry::LogFormat::Text
    };
    // Kept until the runtime is gone: dropping it sends the last buffered spans.
    let _telemetry = crate::telemetry::init(&s.log, format, s.otlp_endpoint.as_deref())?;
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
    if matches!(s.location, settings::Location::Postgres(_))
        && s.secret_key_file.is_none()
        && std::env::var_os("POSTWIRE_SECRET_KEY").is_none()
    {
        // A key generated here would be this machine's alone, and every process on the
        // database must open the same secrets.
        return Err(
            "with --database-url, every process needs the same key to encrypt signing secrets at rest: \
             give it with --secret-key-file or POSTWIRE_SECRET_KEY (one line `<id>:<base64 of 32 random bytes>`, \
             e.g. `echo \"k1:$(head -c 32 /dev/urandom | base64)\"`)"
                .to_owned(),
        );
    }
    let key = crate::commands::keys::resolve_for_serve(&s.db, s.secret_key_file.as_deref())?;
    let mut sender_config = SenderConfig {
        secret_cipher: Some(key.cipher.clone()),
        ..SenderConfig::default()
    };
    if s.insecure_local {
        sender_config = sender_config.dangerously_allow_insecure_local_urls();
    }
    if let Some(secs) = s.lease_secs {
        sender_config.lease = std::time::Duration::from_secs(secs);
    }
    if let Some(secs) = s.attempt_timeout_secs {
        sender_config.attempt_timeout = std::time::Duration::from_secs(secs);
    }
    let signing_keys_shown = match &s.pkcs11 {
        Some(config) => {
            let shown = format!(
                "new v1a keys made and used in the PKCS #11 token {} of {}",
                match &config.token {
                    postwire_sender::TokenSelector::Label(label) => format!("{label:?}"),
                    postwire_sender::TokenSelector::Slot(slot) => format!("in slot {slot}"),
                },
                config.module.display()
            );
            let keys = postwire_sender::Pkcs11Keys::open(config.clone()).map_err(|e| e.to_string())?;
            sender_config.key_custody = std::sync::Arc::new(keys);
            shown
        }
        None => "v1a keys made and kept in process (sealed at rest)".to_owned(),
    };
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
    if s.connection_limits.header_read_timeout.is_zero() || s.connection_limits.body_read_timeout.is_zero() {
        return Err("read timeouts must be at least 1 second".to_owned());
    }
    if s.connection_limits.max_connections == 0 {
        return Err("--max-connections must be at least 1".to_owned());
    }
    options.connection_limits = s.connection_limits;
    options.limits = s.limits;
    options.metrics_addr = s.metrics_addr.clone();
    options.retention = (s.retention_days > 0).then(|| postwire_sender::retention::RetentionPolicy {
        keep: Duration::from_secs(s.retention_days.saturating_mul(86_400)),
        ..Default::default()
    });
    let server = match Server::open(options).await {
        Ok(server) => server,
        Err(e) => {
            if let Some(generated) = &key.generated {
                // The database wants another key: the one made just now is no use.
                let _ = std::fs::remove_file(generated);
            }
            return Err(e.to_string());
        }
    };
    let tokens = server.state().tokens.list().await.map_err(|e| e.to_string())?;
    let live_tokens = tokens.iter().filter(|t| t.revoked_at.is_none()).count();
    let running = server.start(&s.listen).await.map_err(|e| e.to_string())?;
    // Before `listening on` is printed: whoever waits for that line may send SIGTERM next.
    let stop = postwire_server::shutdown_signal();
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
    println!("  secrets   encrypted at rest with {}", key.source);
    println!("  signing   {signing_keys_shown}");
    if let Some(addr) = running.metrics_addr() {
        println!("  metrics   http://{addr}/metrics   (Prometheus; keep this address private)");
    }
    if s.retention_days > 0 {
        println!(
            "  history   finished deliveries and unreferenced events kept {} days",
            s.retention_days
        );
    } else {
        println!("  history   kept forever (--retention-days 0)");
    }
    println!(
        "  limits    {} calls per token per hour; bodies up to {} bytes; {} subscriptions per workspace; {} events per workspace per day; {} unauthenticated calls per address per hour",
        s.rate_limit_per_hour,
        s.max_body_bytes,
        s.limits.max_subscriptions_per_workspace,
        s.limits.daily_event_quota,
        s.limits.unauthenticated_per_hour
    );
    println!(
        "  clients   head within {} s (also the idle timeout), body within {} s, at most {} connections",
        s.connection_limits.header_read_timeout.as_secs(),
        s.connection_limits.body_read_timeout.as_secs(),
        s.connection_limits.max_connections
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
    stop.await;
    println!("shutting down: finishing requests and deliveries in flight…");
    running.shutdown().await;
    println!("stopped");
    Ok(ExitCode::SUCCESS)
}
