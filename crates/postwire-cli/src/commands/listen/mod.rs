//! `postwire listen`: deliveries on a developer's machine.
//!
//! - With `--port`, the local inspector ([`inspector`]): it receives deliveries on
//!   loopback, verifies them and prints each with its verdict; for debugging a sender.
//! - With `--worker`, the relay ([`relay`]): real deliveries, verified by the team's edge
//!   Worker, come down a WebSocket and are re-signed and forwarded to a local endpoint.
//!
//! [`print`](mod@print) is the line both modes print per delivery.

mod inspector;
mod print;
mod relay;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use postwire_core::{DEFAULT_TOLERANCE_SECS, Secret, Signer, Verifier};
use url::Url;

use super::edge::read_worker_token;
use crate::input;

/// The variable holding the Worker's `LISTEN_TOKEN` (or `--token-file`).
pub const TOKEN_ENV: &str = "POSTWIRE_LISTEN_TOKEN";
/// The variable holding the Worker's `ADMIN_TOKEN`, for `--replay`: `postwire edge`'s.
pub use super::edge::TOKEN_ENV as ADMIN_TOKEN_ENV;

/// Arguments of `postwire listen`.
#[derive(Debug, Args)]
#[command(
    after_help = "Either --port (the local inspector) or --worker with --forward (the relay). \
The relay takes the Worker's LISTEN_TOKEN from POSTWIRE_LISTEN_TOKEN or --token-file, never from the command line. \
It re-signs every delivery with the local secret, reconnects with back-off (0.5 s doubling to 30 s) \
and exits when a newer listener takes its place. The local endpoint has the Worker's wait (its FORWARD_TIMEOUT_MS, \
8 s by default, which the Worker announces when the relay connects) less 1 s to answer, so that the sender always \
gets the relay's verdict."
)]
pub struct ListenArgs {
    /// Local inspector: receive deliveries on this port (any path), verify and print
    /// each, answer `204` when it verifies and `400` with the error code when not. `0`
    /// picks a free port (printed at start).
    #[arg(long, required_unless_present = "worker", conflicts_with_all = ["worker", "forward", "token_file", "token", "replay"])]
    port: Option<u16>,
    /// Inspector: the address to listen on.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    bind: IpAddr,
    /// Inspector: a `whsec_` secret (`v1`) or `whpk_` public key (`v1a`) to verify with;
    /// repeat to accept any of several. Relay: the one `whsec_` secret the local endpoint
    /// verifies with [default: a fresh one, printed at start].
    #[arg(long = "secret", env = "POSTWIRE_SECRET", hide_env_values = true)]
    secrets: Vec<String>,
    /// Inspector: a `whpk_` public key to verify `v1a` signatures with (the same as giving
    /// it to `--secret`); repeatable.
    #[arg(long = "public-key", conflicts_with = "worker")]
    public_keys: Vec<String>,
    /// Inspector: timestamp tolerance in seconds, each way.
    #[arg(long, default_value_t = DEFAULT_TOLERANCE_SECS)]
    tolerance: u64,
    /// Print one JSON object per delivery (one line each) instead of the human line.
    #[arg(long)]
    json: bool,
    /// Print each delivery's body too: indented JSON below the line, or a `body` field
    /// with `--json` (at most 64 KiB of it).
    #[arg(long)]
    print_body: bool,
    /// Relay: the edge Worker's URL (`https://edge.example.com`), whose `LISTEN_TOKEN` is set.
    #[arg(long, requires = "forward")]
    worker: Option<Url>,
    /// Relay: a file whose first line is the Worker's `LISTEN_TOKEN` [default: the
    /// POSTWIRE_LISTEN_TOKEN variable]. The token is never taken on the command line, never printed.
    #[arg(long, value_name = "FILE", requires = "worker")]
    token_file: Option<PathBuf>,
    /// Refused: a token on the command line is kept by `ps` and the shell's history.
    #[arg(long, hide = true)]
    token: Option<String>,
    /// Relay: the local endpoint each delivery is POSTed to, e.g. http://localhost:3000/webhooks.
    #[arg(long, requires = "worker")]
    forward: Option<Url>,
    /// Relay: once connected, ask the Worker (inbox mode) to send this `webhook-id` again;
    /// needs its ADMIN_TOKEN in POSTWIRE_EDGE_TOKEN.
    #[arg(long, value_name = "ID", requires = "worker")]
    replay: Option<String>,
}

/// Runs `postwire listen` until Ctrl-C.
pub fn run(args: ListenArgs) -> Result<ExitCode, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    match (args.port, args.worker.clone(), args.forward.clone()) {
        (Some(port), _, _) => {
            let mut keys = args.secrets.clone();
            keys.extend(args.public_keys.iter().cloned());
            if keys.is_empty() {
                return Err("the inspector needs --secret whsec_… or --public-key whpk_… to verify with".to_owned());
            }
            let verifier = Verifier::with_keys(input::parse_trusted(&keys)?)
                .map_err(|e| e.to_string())?
                .with_tolerance_secs(args.tolerance);
            let output = print::Output {
                json: args.json,
                body: args.print_body,
            };
            runtime.block_on(inspector::run(SocketAddr::new(args.bind, port), verifier, output))?;
        }
        (None, Some(worker), Some(forward)) => {
            let relay = relay_settings(args, worker, forward)?;
            runtime.block_on(relay::run(relay))?;
        }
        _ => return Err("give --port (the local inspector) or --worker with --forward (the relay)".to_owned()),
    }
    Ok(ExitCode::SUCCESS)
}

/// The relay's settings, checked; prints the local secret when it was made here.
fn relay_settings(args: ListenArgs, worker: Url, forward: Url) -> Result<relay::Relay, String> {
    if args.token.is_some() {
        return Err(format!(
            "--token: the listen token is never taken on the command line (ps and shell history keep it); \
set {TOKEN_ENV} or pass --token-file"
        ));
    }
    relay::listen_url(&worker)?;
    if !matches!(forward.scheme(), "http" | "https") {
        return Err("--forward: expected an http or https URL".to_owned());
    }
    let token = read_worker_token(
        args.token_file.as_deref(),
        std::env::var(TOKEN_ENV).ok(),
        TOKEN_ENV,
        "LISTEN_TOKEN",
    )?;
    let secret = match args.secrets.as_slice() {
        [] => {
            let secret = relay::fresh_secret()?;
            eprintln!(
                "postwire listen: deliveries are signed for {forward} with this secret (verify with it locally):\n{}",
                secret.expose()
            );
            secret
        }
        [one] => Secret::parse(one).map_err(|e| format!("--secret: {e}"))?,
        _ => return Err("the relay signs with one --secret".to_owned()),
    };
    let replay = match args.replay {
        None => None,
        Some(id) => {
            let admin = std::env::var(ADMIN_TOKEN_ENV)
                .ok()
                .filter(|t| !t.trim().is_empty())
                .ok_or_else(|| format!("--replay needs the Worker's ADMIN_TOKEN in {ADMIN_TOKEN_ENV}"))?;
            Some((admin, id))
        }
    };
    Ok(relay::Relay {
        worker,
        token,
        forward,
        signer: Signer::new(secret),
        output: print::Output {
            json: args.json,
            body: args.print_body,
        },
        replay,
    })
}
