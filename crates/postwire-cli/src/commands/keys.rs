//! `postwire keys rotate`, `postwire keys new` (a `v1a` signing key pair, in
//! [`super::signing_keys`]), and how `postwire serve` finds the key that seals signing
//! secrets at rest (see `postwire_sender::secret_box`).
//!
//! The key comes from `POSTWIRE_SECRET_KEY` (the key-file text itself: `<id>:<base64>`
//! lines, current first), else from `--secret-key-file` / `POSTWIRE_SECRET_KEY_FILE`,
//! else from `<db>.secret-key`. When none exists, `serve` generates `<db>.secret-key`
//! (mode 0600) and says so; if the database then turns out to hold secrets sealed under
//! another key, the generated file is removed again and start-up fails, naming the key
//! id it needs: a lost key is never papered over.
//!
//! `keys rotate` puts a new key in front of the key file (the old ones stay, to open
//! what they sealed) and seals every secret again under the new key: at once when no
//! server has the SQLite file open, or on PostgreSQL (in one transaction); a running
//! server reads its key file again every 30 s, seals new secrets under the new key from
//! then on, and re-encrypts the stored ones in the background, a batch at a time.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Subcommand};
use postwire_sender::secret_box::SecretCipher;
use postwire_sender::store::sqlite::{SqliteOptions, SqliteStore};
use zeroize::Zeroizing;

use crate::settings;

/// Subcommands of `postwire keys`.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Add a new current key to the key file and re-encrypt every secret under it. A
    /// running `postwire serve` that reads this key file picks the new key up within
    /// 30 s and re-encrypts in the background; one given the key by POSTWIRE_SECRET_KEY
    /// needs the new text and a restart.
    Rotate(RotateArgs),
    /// Print a new `v1a` (ed25519) signing key pair: the `whsk_` signing key on the first
    /// line (keep it secret, give it to the sender), the `whpk_` public key on the second
    /// (publish it, give it to receivers).
    New,
}

/// Arguments of `postwire keys rotate`.
#[derive(Debug, Args)]
pub struct RotateArgs {
    /// The SQLite file of `postwire serve` [default: postwire.db].
    #[arg(long, env = "POSTWIRE_DB")]
    db: Option<PathBuf>,
    /// A PostgreSQL database (`postgres://…`) instead of the SQLite file; then
    /// --secret-key-file is required.
    #[arg(long, env = "POSTWIRE_DATABASE_URL", hide_env_values = true)]
    database_url: Option<String>,
    /// TOML config file (its `db` and `secret_key_file` are used when not given here).
    #[arg(long, env = "POSTWIRE_CONFIG")]
    config: Option<PathBuf>,
    /// The key file [default: the database file + `.secret-key`].
    #[arg(long, env = "POSTWIRE_SECRET_KEY_FILE")]
    secret_key_file: Option<PathBuf>,
}

/// The default key file next to the database.
pub fn default_key_path(db: &Path) -> PathBuf {
    let mut name = db.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".secret-key");
    db.with_file_name(name)
}

/// Writes `text` to `path` readable by the owner only; `create_new` refuses to replace
/// an existing file.
fn write_private(path: &Path, text: &str, create_new: bool) -> Result<(), String> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if create_new {
        options.create_new(true);
    } else {
        options.create(true).truncate(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut f = options
        .open(path)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    f.write_all(text.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Where `serve`'s key came from, to say at start-up.
pub struct ResolvedKey {
    /// The keys.
    pub cipher: Arc<SecretCipher>,
    /// A sentence for the start-up banner.
    pub source: String,
    /// A key file generated now: removed again if the database refuses the key.
    pub generated: Option<PathBuf>,
}

/// Finds (or, for a database without one, generates) the key `serve` seals with.
pub fn resolve_for_serve(db: &Path, key_file: Option<&Path>) -> Result<ResolvedKey, String> {
    if let Ok(text) = std::env::var("POSTWIRE_SECRET_KEY") {
        let text = Zeroizing::new(text);
        let cipher = SecretCipher::from_key_text(&text).map_err(|e| format!("POSTWIRE_SECRET_KEY: {e}"))?;
        return Ok(ResolvedKey {
            source: format!("key {} from POSTWIRE_SECRET_KEY", cipher.current_key_id()),
            cipher: Arc::new(cipher),
            generated: None,
        });
    }
    if let Some(path) = key_file {
        let cipher = SecretCipher::from_file(path).map_err(|e| e.to_string())?;
        return Ok(ResolvedKey {
            source: format!("key {} from {}", cipher.current_key_id(), path.display()),
            cipher: Arc::new(cipher),
            generated: None,
        });
    }
    let path = default_key_path(db);
    if path.exists() {
        let cipher = SecretCipher::from_file(&path).map_err(|e| e.to_string())?;
        return Ok(ResolvedKey {
            source: format!("key {} from {}", cipher.current_key_id(), path.display()),
            cipher: Arc::new(cipher),
            generated: None,
        });
    }
    let line = SecretCipher::generate_key_line().map_err(|e| e.to_string())?;
    let text = Zeroizing::new(format!(
        "# postwire: keys that encrypt signing secrets at rest. Current key first. Back this file up apart from the database.\n{}\n",
        *line
    ));
    write_private(&path, &text, true)?;
    let cipher = SecretCipher::from_file(&path).map_err(|e| e.to_string())?;
    Ok(ResolvedKey {
        source: format!(
            "key {} GENERATED into {} (mode 0600): back it up apart from the database; without it the secrets cannot be read",
            cipher.current_key_id(),
            path.display()
        ),
        cipher: Arc::new(cipher),
        generated: Some(path),
    })
}

/// Runs `postwire keys …`.
pub fn run(cmd: KeysCommand) -> Result<ExitCode, String> {
    match cmd {
        KeysCommand::Rotate(args) => rotate(args),
        KeysCommand::New => super::signing_keys::new_pair(),
    }
}

fn rotate(args: RotateArgs) -> Result<ExitCode, String> {
    let file = settings::load(args.config.as_deref())?;
    let location = settings::location(args.database_url.or(file.database_url), args.db.or(file.db))?;
    let path = match (args.secret_key_file.or(file.secret_key_file), &location) {
        (Some(path), _) => path,
        (None, settings::Location::Sqlite(db)) => default_key_path(db),
        (None, settings::Location::Postgres(_)) => {
            return Err(
                "with a PostgreSQL database, give the key file: --secret-key-file or POSTWIRE_SECRET_KEY_FILE".into(),
            );
        }
    };
    let old = Zeroizing::new(
        std::fs::read_to_string(&path).map_err(|e| format!("cannot read the key file {}: {e}", path.display()))?,
    );
    SecretCipher::from_key_text(&old).map_err(|e| format!("{}: {e}", path.display()))?;
    let line = SecretCipher::generate_key_line().map_err(|e| e.to_string())?;
    let mut text = Zeroizing::new(String::new());
    let mut placed = false;
    for l in old.lines() {
        let t = l.trim();
        if !placed && !t.is_empty() && !t.starts_with('#') {
            text.push_str(&line);
            text.push('\n');
            placed = true;
        }
        text.push_str(l);
        text.push('\n');
    }
    // Write beside, then rename: the key file is never half written.
    let mut tmp_name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    tmp_name.push(".new");
    let tmp = path.with_file_name(tmp_name);
    let _ = std::fs::remove_file(&tmp);
    write_private(&tmp, &text, true)?;
    std::fs::rename(&tmp, &path).map_err(|e| format!("cannot replace {}: {e}", path.display()))?;
    let cipher = Arc::new(SecretCipher::from_file(&path).map_err(|e| e.to_string())?);
    let new_id = cipher.current_key_id();
    println!("new current key {new_id} added to {}", path.display());
    let db = match location {
        settings::Location::Sqlite(db) => db,
        settings::Location::Postgres(url) => {
            reseal_postgres(&url, cipher)?;
            println!(
                "every secret in the PostgreSQL database is now encrypted under {new_id}; running servers that read {} use it within 30 s",
                path.display()
            );
            return Ok(ExitCode::SUCCESS);
        }
    };
    if !db.exists() {
        println!("no database at {} yet: nothing to re-encrypt", db.display());
        return Ok(ExitCode::SUCCESS);
    }
    let options = SqliteOptions {
        secret_cipher: Some(cipher),
        ..Default::default()
    };
    match SqliteStore::open_with(&db, options) {
        Ok(store) => {
            drop(store);
            println!(
                "every secret in {} is now encrypted under {new_id}; older keys in the file can be removed once backups made before now are no longer needed",
                db.display()
            );
        }
        Err(e) if e.to_string().contains("already dispatching") => {
            println!(
                "{} is in use by a running server: within 30 s it reads the key file again, encrypts new secrets under {new_id} and re-encrypts the stored ones in the background (its log says when it is done)",
                db.display()
            );
        }
        Err(e) => return Err(e.to_string()),
    }
    Ok(ExitCode::SUCCESS)
}

/// Connects to PostgreSQL with the new keys: connecting seals every stored secret again
/// under the current key, in one transaction.
fn reseal_postgres(url: &str, cipher: Arc<SecretCipher>) -> Result<(), String> {
    use postwire_sender::store::postgres::{PostgresOptions, PostgresStore};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async {
        let options = PostgresOptions {
            secret_cipher: Some(cipher),
            ..Default::default()
        };
        PostgresStore::connect_with(url, options)
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    })
}
