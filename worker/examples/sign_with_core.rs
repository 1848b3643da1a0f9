//! Signs a delivery with postwire-core's [`Signer`], for the Worker's workerd tests
//! (`worker/test/signers.test.mjs`): proof that what the Rust signer produces passes the
//! Worker, next to deliveries signed by Node's crypto, the npm `standardwebhooks` package
//! and the `postwire sign` CLI.
//!
//! Usage: `sign_with_core --id ID --timestamp UNIX --secret whsec_… [--secret …] < body`
//! prints the `webhook-signature` value.

use std::io::Read;
use std::process::ExitCode;

use postwire_core::{Secret, Signer, UnixTime};

fn main() -> ExitCode {
    match run() {
        Ok(value) => {
            println!("{value}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("sign_with_core: {message}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<String, String> {
    let mut args = std::env::args().skip(1);
    let (mut id, mut timestamp, mut secrets) = (None, None, Vec::new());
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--id" => id = Some(value),
            "--timestamp" => timestamp = Some(value.parse::<i64>().map_err(|_| "--timestamp must be Unix seconds")?),
            "--secret" => secrets.push(Secret::parse(&value).map_err(|e| e.to_string())?),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let id = id.ok_or("--id is required")?;
    let timestamp = UnixTime::from_secs(timestamp.ok_or("--timestamp is required")?);
    let mut body = Vec::new();
    std::io::stdin()
        .read_to_end(&mut body)
        .map_err(|e| format!("reading the body: {e}"))?;
    let signer = Signer::with_secrets(secrets).map_err(|e| e.to_string())?;
    signer
        .sign(&id, timestamp, &body)
        .map(|v| v.into_string())
        .map_err(|e| e.to_string())
}
