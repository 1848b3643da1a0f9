//! `postwire sign`: print the `webhook-signature` value for a body (several secrets give
//! several space-separated signatures, as during a rotation). `whsk_` signing keys give
//! `v1a` (ed25519) entries, after the `v1` ones: the opt-in asymmetric extension.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use postwire_core::{Signer, UnixTime};

use crate::input;

/// Arguments of `postwire sign`.
#[derive(Debug, Args)]
pub struct SignArgs {
    /// Signing secret (`whsec_...`, a `v1` signature) or `v1a` signing key (`whsk_...`, from
    /// `postwire keys new`); repeat for one signature each (`v1` entries first).
    #[arg(long = "secret", required = true, env = "POSTWIRE_SECRET", hide_env_values = true)]
    secrets: Vec<String>,
    /// The `webhook-id`.
    #[arg(long)]
    id: String,
    /// The `webhook-timestamp` in Unix seconds; defaults to now.
    #[arg(long)]
    timestamp: Option<i64>,
    /// The body file; `-` or absent reads standard input.
    file: Option<PathBuf>,
}

/// Runs `postwire sign`.
pub fn run(args: SignArgs) -> Result<ExitCode, String> {
    let (secrets, keys) = input::parse_signing(&args.secrets)?;
    let signer = Signer::with_keys(secrets, keys).map_err(|e| e.to_string())?;
    let body = input::read_body(args.file.as_ref())?;
    let ts = args.timestamp.map(UnixTime::from_secs).unwrap_or_else(input::now);
    let value = signer.sign(&args.id, ts, &body).map_err(|e| e.to_string())?;
    println!("{value}");
    Ok(ExitCode::SUCCESS)
}
