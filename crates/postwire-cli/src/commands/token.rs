//! `postwire token create|list|revoke`: API tokens of the HTTP API.
//!
//! `create` prints the token once on standard output (details on standard error), so
//! `TOKEN=$(postwire token create …)` works; the database keeps only its SHA-256 hash.
//! Workspaces named with `--workspace` that the database does not know yet are
//! registered (named after their id), so a fresh `postwire serve` is usable at once.
//! These commands work while `postwire serve` runs on the same file.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use postwire_core::{Clock, SystemClock};
use postwire_sender::{Workspace, register_workspaces};
use postwire_server::db::ServerDb;
use postwire_server::{NewToken, Scope, TokenStore};

use crate::settings::{self, Location};

/// Where the database is.
#[derive(Debug, Args)]
pub struct DbArgs {
    /// The SQLite file of `postwire serve` [default: postwire.db].
    #[arg(long, env = "POSTWIRE_DB")]
    db: Option<PathBuf>,
    /// The PostgreSQL database of `postwire serve --database-url` (`postgres://…`), or
    /// `sqlite:PATH`.
    #[arg(long, env = "POSTWIRE_DATABASE_URL", hide_env_values = true)]
    database_url: Option<String>,
    /// TOML config file (its `db` is used when --db and POSTWIRE_DB are absent).
    #[arg(long, env = "POSTWIRE_CONFIG")]
    config: Option<PathBuf>,
}

impl DbArgs {
    /// The database: `--database-url`, `--db`, their environment variables, the config
    /// file, or the default SQLite file.
    pub fn path(&self) -> Result<Location, String> {
        let file = settings::load(self.config.as_deref())?;
        settings::location(
            self.database_url.clone().or(file.database_url),
            self.db.clone().or(file.db),
        )
    }

    /// [`path`](Self::path), refusing a SQLite file that does not exist: run from the
    /// wrong directory, a command would otherwise make a fresh, empty database that no
    /// server reads (its token then answered `401`), without a word.
    pub fn existing(&self) -> Result<Location, String> {
        let location = self.path()?;
        if let Location::Sqlite(path) = &location
            && !path.exists()
        {
            return Err(format!(
                "no database at {}: start `postwire serve` there first, or point --db (POSTWIRE_DB) \
                 or --database-url at the server's database",
                location.shown()
            ));
        }
        Ok(location)
    }
}

/// Subcommands of `postwire token`.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create an API token; it is printed once and stored only as a hash.
    Create {
        #[command(flatten)]
        db: DbArgs,
        /// Workspaces the token may use (repeat, or list them: `--workspace a b` / `a,b`).
        #[arg(long = "workspace", required = true, num_args = 1.., value_delimiter = ',')]
        workspaces: Vec<String>,
        /// Scopes: webhooks:read, webhooks:write (implies read); repeat or list them.
        #[arg(long = "scope", required = true, num_args = 1.., value_delimiter = ',')]
        scopes: Vec<String>,
        /// A label for the token.
        #[arg(long, default_value = "")]
        name: String,
        /// Create the SQLite database if it does not exist yet (a token made before the
        /// first `postwire serve`); without it a missing file is refused.
        #[arg(long)]
        create_database: bool,
    },
    /// List tokens (never their values).
    List {
        #[command(flatten)]
        db: DbArgs,
    },
    /// Revoke a token by id (`tok_…`); it stops working at once.
    Revoke {
        #[command(flatten)]
        db: DbArgs,
        /// The token id.
        id: String,
    },
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start Tokio: {e}"))
}

/// Runs `postwire token …`.
pub fn run(cmd: TokenCommand) -> Result<ExitCode, String> {
    runtime()?.block_on(async move {
        match cmd {
            TokenCommand::Create {
                db,
                workspaces,
                scopes,
                name,
                create_database,
            } => {
                let location = if create_database { db.path()? } else { db.existing()? };
                create(location, workspaces, scopes, name).await
            }
            TokenCommand::List { db } => list(db.existing()?).await,
            TokenCommand::Revoke { db, id } => {
                let tokens = open_tokens(db.existing()?).await?;
                tokens.revoke(&id, SystemClock.now()).await.map_err(|e| e.to_string())?;
                println!("revoked {id}");
                Ok(ExitCode::SUCCESS)
            }
        }
    })
}

async fn open_tokens(location: Location) -> Result<TokenStore, String> {
    let db = match location {
        Location::Sqlite(path) => tokio::task::spawn_blocking(move || ServerDb::open(path))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?,
        Location::Postgres(url) => ServerDb::connect_postgres(&url).await.map_err(|e| e.to_string())?,
    };
    Ok(TokenStore::new(db))
}

async fn create(
    path: Location,
    workspaces: Vec<String>,
    scopes: Vec<String>,
    name: String,
) -> Result<ExitCode, String> {
    let scopes: Vec<Scope> = scopes
        .iter()
        .map(|s| s.parse::<Scope>().map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let tokens = open_tokens(path.clone()).await?;
    let created = tokens
        .create(
            NewToken {
                name,
                scopes,
                workspaces: workspaces.clone(),
            },
            SystemClock.now(),
        )
        .await
        .map_err(|e| e.to_string())?;
    // Through the file, not a store: `postwire serve` may have the store open.
    let register: Vec<Workspace> = workspaces
        .iter()
        .map(|w| Workspace {
            id: w.clone(),
            name: w.clone(),
        })
        .collect();
    let added = match &path {
        Location::Sqlite(file) => {
            let file = file.clone();
            tokio::task::spawn_blocking(move || register_workspaces(file, &register))
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?
        }
        Location::Postgres(url) => postwire_sender::store::postgres::register_workspaces(url, &register)
            .await
            .map_err(|e| e.to_string())?,
    };
    for w in added {
        eprintln!("registered workspace {w}");
    }
    let r = &created.record;
    println!("{}", created.token);
    eprintln!(
        "created token {} (scopes: {}; workspaces: {}) in {}",
        r.id,
        r.scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" "),
        r.workspaces.join(" "),
        path.shown()
    );
    eprintln!("This is the only time the token is shown: the database keeps only its SHA-256 hash.");
    Ok(ExitCode::SUCCESS)
}

async fn list(path: Location) -> Result<ExitCode, String> {
    let tokens = open_tokens(path).await?;
    let all = tokens.list().await.map_err(|e| e.to_string())?;
    println!(
        "{:<22} {:<10} {:<30} {:<30} CREATED",
        "ID", "STATUS", "SCOPES", "WORKSPACES"
    );
    for t in all {
        println!(
            "{:<22} {:<10} {:<30} {:<30} {}",
            t.id,
            if t.revoked_at.is_some() { "revoked" } else { "active" },
            t.scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(","),
            t.workspaces.join(","),
            t.created_at
        );
    }
    Ok(ExitCode::SUCCESS)
}
