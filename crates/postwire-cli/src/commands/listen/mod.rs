//! `postwire listen`: deliveries on a developer's machine.
//!
//! - With `--port`, the local inspector ([`inspector`]): it receives deliveries on
//!   loopback, verifies them and prints each with its verdict; for debugging a sender.
//!
//! [`print`] is the line both modes print per delivery.

mod inspector;
mod print;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use clap::Args;
use postwire_core::{DEFAULT_TOLERANCE_SECS, Verifier};

use crate::input;

/// Arguments of `postwire listen`.
#[derive(Debug, Args)]
pub struct ListenArgs {
    /// Local inspector: receive deliveries on this port (any path), verify and print
    /// each, answer `204` when it verifies and `400` with the error code when not. `0`
    /// picks a free port (printed at start).
    #[arg(long)]
    port: u16,
    /// Address the inspector listens on.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    bind: IpAddr,
    /// A `whsec_` secret (a `v1` signature) or a `whpk_` public key (`v1a`) to verify
    /// with; repeat to accept any of several (rotation, `v1` beside `v1a`).
    #[arg(long = "secret", env = "POSTWIRE_SECRET", hide_env_values = true)]
    secrets: Vec<String>,
    /// A `whpk_` public key to verify `v1a` signatures with (the same as giving it to
    /// `--secret`); repeatable.
    #[arg(long = "public-key")]
    public_keys: Vec<String>,
    /// Timestamp tolerance in seconds, each way.
    #[arg(long, default_value_t = DEFAULT_TOLERANCE_SECS)]
    tolerance: u64,
    /// Print one JSON object per delivery (one line each) instead of the human line.
    #[arg(long)]
    json: bool,
}

/// Runs `postwire listen` until Ctrl-C.
pub fn run(args: ListenArgs) -> Result<ExitCode, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let mut keys = args.secrets.clone();
    keys.extend(args.public_keys.iter().cloned());
    if keys.is_empty() {
        return Err("the inspector needs --secret whsec_… or --public-key whpk_… to verify with".to_owned());
    }
    let verifier = Verifier::with_keys(input::parse_trusted(&keys)?)
        .map_err(|e| e.to_string())?
        .with_tolerance_secs(args.tolerance);
    let addr = SocketAddr::new(args.bind, args.port);
    runtime.block_on(inspector::run(addr, verifier, args.json))?;
    Ok(ExitCode::SUCCESS)
}
