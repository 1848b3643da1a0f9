//! `postwire verify`: check a delivery and say exactly why it fails, with the same error
//! codes as every other part of postwire. `whpk_` public keys check `v1a` (ed25519)
//! entries, beside `whsec_` secrets for `v1`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use postwire_core::{DEFAULT_TOLERANCE_SECS, UnixTime, Verifier, WebhookHeaders};

use crate::input;

/// Arguments of `postwire verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Signing secret (`whsec_...`) or `v1a` public key (`whpk_...`); repeat to accept a
    /// signature by any of them (rotation, or `v1` and `v1a` side by side).
    #[arg(long = "secret", required = true, env = "POSTWIRE_SECRET", hide_env_values = true)]
    secrets: Vec<String>,
    /// The `webhook-id` header.
    #[arg(long)]
    id: String,
    /// The `webhook-timestamp` header, exactly as received.
    #[arg(long)]
    timestamp: String,
    /// The `webhook-signature` header.
    #[arg(long)]
    signature: String,
    /// The current time in Unix seconds; defaults to now.
    #[arg(long)]
    now: Option<i64>,
    /// Timestamp tolerance in seconds, each way.
    #[arg(long, default_value_t = DEFAULT_TOLERANCE_SECS)]
    tolerance: u64,
    /// The raw body file; `-` or absent reads standard input.
    file: Option<PathBuf>,
}

/// Runs `postwire verify`: exit 0 and `ok`, or exit 1 and `<code>: <message>`.
pub fn run(args: VerifyArgs) -> Result<ExitCode, String> {
    let verifier = Verifier::with_keys(input::parse_trusted(&args.secrets)?)
        .map_err(|e| e.to_string())?
        .with_tolerance_secs(args.tolerance);
    let body = input::read_body(args.file.as_ref())?;
    let now = args.now.map(UnixTime::from_secs).unwrap_or_else(input::now);
    let result = WebhookHeaders::new(&args.id, &args.timestamp, &args.signature)
        .and_then(|headers| verifier.verify_headers(headers, &body, now));
    match result {
        Ok(_) => {
            println!("ok");
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => {
            println!("{}: {err}", err.code());
            Ok(ExitCode::FAILURE)
        }
    }
}
