//! `postwire portal link --workspace ID`: a single-use, short-lived magic link that
//! logs a browser into that workspace's Settings screen (`/settings/`), printed once on
//! standard output. The database keeps only its hash. Works while `postwire serve` runs
//! on the same file; the same as `POST /public/v1/workspaces/{id}/portal-sessions`.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use postwire_core::{Clock, SystemClock};
use postwire_server::db::ServerDb;
use postwire_server::portal::{DEFAULT_LINK_TTL_SECS, DEFAULT_SESSION_TTL, PortalStore};

use crate::commands::token::DbArgs;
use crate::settings::Location;

/// Subcommands of `postwire portal`.
#[derive(Debug, Subcommand)]
pub enum PortalCommand {
    /// Print a magic link to a workspace's Settings screen (single use, short-lived).
    Link(LinkArgs),
}

/// Arguments of `postwire portal link`.
#[derive(Debug, Args)]
pub struct LinkArgs {
    #[command(flatten)]
    db: DbArgs,
    /// The workspace whose screen the link opens (it must exist).
    #[arg(long)]
    workspace: String,
    /// The server's public URL, the start of the printed link.
    #[arg(long, env = "POSTWIRE_PUBLIC_URL", default_value = "http://127.0.0.1:8080")]
    base_url: String,
    /// How long the link works if unused, in seconds.
    #[arg(long, default_value_t = DEFAULT_LINK_TTL_SECS)]
    ttl_secs: u64,
}

/// Runs `postwire portal …`.
pub fn run(cmd: PortalCommand) -> Result<ExitCode, String> {
    let PortalCommand::Link(args) = cmd;
    let location = args.db.existing()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start Tokio: {e}"))?;
    runtime.block_on(async move {
        let url = link(location, &args.workspace, &args.base_url, args.ttl_secs).await?;
        println!("{url}");
        Ok(ExitCode::SUCCESS)
    })
}

/// Makes a link to `workspace`'s screen on the server at `base_url`, valid `ttl_secs`.
pub async fn link(location: Location, workspace: &str, base_url: &str, ttl_secs: u64) -> Result<String, String> {
    let shown = location.shown();
    if !known_workspace(location.clone(), workspace.to_owned()).await? {
        return Err(format!("no workspace `{workspace}` in the database {shown}"));
    }
    let db = match location {
        Location::Sqlite(path) => tokio::task::spawn_blocking(move || ServerDb::open(path))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?,
        Location::Postgres(url) => ServerDb::connect_postgres(&url).await.map_err(|e| e.to_string())?,
    };
    let ttl = std::time::Duration::from_secs(ttl_secs.clamp(1, 86_400));
    let store = PortalStore::new(db, ttl, DEFAULT_SESSION_TTL);
    let created = store
        .create_link(workspace, SystemClock.now())
        .await
        .map_err(|e| e.to_string())?;
    eprintln!(
        "portal session {} for workspace {workspace} in {shown}; the link works once, until {} (revoke: DELETE /public/v1/workspaces/{workspace}/portal-sessions/{})",
        created.id, created.expires_at, created.id
    );
    Ok(format!(
        "{}/settings/login?link={}",
        base_url.trim_end_matches('/'),
        created.token
    ))
}

/// Whether the database has workspace `id` (read without opening a sender).
async fn known_workspace(location: Location, id: String) -> Result<bool, String> {
    match location {
        Location::Sqlite(path) => {
            tokio::task::spawn_blocking(move || postwire_sender::has_workspace(path, &id).map_err(|e| e.to_string()))
                .await
                .map_err(|e| e.to_string())?
        }
        Location::Postgres(url) => {
            use postwire_sender::Store as _;
            let options = postwire_sender::PostgresOptions {
                pool_size: 1,
                // Looking a workspace up reads no secret: no key needed.
                seal_on_connect: false,
                ..Default::default()
            };
            let store = postwire_sender::PostgresStore::connect_with(&url, options)
                .await
                .map_err(|e| e.to_string())?;
            Ok(store.workspace(id).await.map_err(|e| e.to_string())?.is_some())
        }
    }
}
