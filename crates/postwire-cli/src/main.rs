//! `postwire`: the command-line face of postwire.
//!
//! `postwire demo` shows the whole sender working in seconds; `postwire serve` runs the
//! webhooks HTTP API and the dispatcher on an embedded SQLite file; `postwire token`
//! manages API tokens; `postwire portal link` prints a magic link to a workspace's
//! Settings screen; `postwire openapi` prints the API description. `postwire webhooks`,
//! `deliveries`, `recover`, `operator-webhooks` and `trigger` are clients of a running
//! server's HTTP API (`commands/api_client.rs`). It also makes
//! secrets, signs and verifies deliveries from the shell, which is handy for debugging a
//! receiver (`postwire verify` says exactly why a delivery fails) and for scripting
//! tests. Each subcommand lives in its own module under `commands/`.

use std::process::ExitCode;

/// mimalloc: under the sender's load (many small allocations across threads) it saves
/// 5 to 15 % of CPU per delivery against glibc's allocator (sender bench, A/B).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};

mod commands;
mod input;
mod settings;
mod telemetry;

/// postwire: a Standard Webhooks sender with its HTTP API, and the tools around it.
#[derive(Debug, Parser)]
#[command(name = "postwire", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Watch the whole story in seconds: server, receiver, subscription, events, a retry.
    Demo(commands::demo::DemoArgs),
    /// Run the webhooks HTTP API and the dispatcher on a SQLite file or a PostgreSQL database.
    Serve(Box<commands::serve::ServeArgs>),
    /// API tokens: create (shown once), list, revoke.
    #[command(subcommand)]
    Token(commands::token::TokenCommand),
    /// The Settings screen: `portal link --workspace ID` prints a magic link to it.
    #[command(subcommand)]
    Portal(commands::portal::PortalCommand),
    /// Print the OpenAPI 3.1 document of the HTTP API (`--ingest`: of the internal ingest API).
    Openapi(commands::openapi::OpenapiArgs),
    /// Signing secrets.
    #[command(subcommand)]
    Secret(commands::secret::SecretCommand),
    /// Keys: `rotate` the ones that encrypt signing secrets at rest; `new` prints a v1a
    /// (ed25519) signing key pair.
    #[command(subcommand)]
    Keys(commands::keys::KeysCommand),
    /// Receive deliveries on this machine: `--port` inspects and verifies them locally;
    /// `--worker` relays real ones from your edge Worker to a local endpoint.
    Listen(Box<commands::listen::ListenArgs>),
    /// Print the `webhook-signature` value for a body.
    Sign(commands::sign::SignArgs),
    /// Verify a delivery: prints `ok` and exits 0, or prints the error code and exits 1.
    Verify(commands::verify::VerifyArgs),
    /// The edge inbox (the Worker in inbox mode): status, list, show, replay, pause, resume, erase.
    Edge(commands::edge::EdgeArgs),
    /// Webhook subscriptions through a running server's API: list, show, create, update,
    /// delete, rotate-secret, pause, resume, test.
    Webhooks(Box<commands::webhooks::WebhooksArgs>),
    /// A subscription's deliveries through a running server's API: list, show, resend.
    Deliveries(Box<commands::deliveries::DeliveriesArgs>),
    /// Resend a subscription's deliveries that failed for good since a time.
    Recover(Box<commands::deliveries::RecoverArgs>),
    /// Operator endpoints (operational notices) through a running server's API.
    OperatorWebhooks(Box<commands::operator_webhooks::OperatorWebhooksArgs>),
    /// Send a sample event (a post published, an account disconnected, …) through the
    /// server's ingest API, so subscribed receivers get a real, signed delivery.
    Trigger(Box<commands::trigger::TriggerArgs>),
}

fn main() -> ExitCode {
    // `serve` and `demo` run a sender; see the function's doc for why. Best effort: on a
    // kernel without the setting, the process just keeps huge pages.
    let _ = postwire_sender::tuning::disable_transparent_huge_pages();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => commands::demo::run(args),
        Command::Serve(args) => commands::serve::run(*args),
        Command::Token(cmd) => commands::token::run(cmd),
        Command::Portal(cmd) => commands::portal::run(cmd),
        Command::Openapi(args) => commands::openapi::run(args),
        Command::Secret(cmd) => commands::secret::run(cmd),
        Command::Keys(cmd) => commands::keys::run(cmd),
        Command::Listen(args) => commands::listen::run(*args),
        Command::Sign(args) => commands::sign::run(args),
        Command::Verify(args) => commands::verify::run(args),
        Command::Edge(args) => commands::edge::run(args),
        // The API commands print their own one-line error and pick their exit code.
        Command::Webhooks(args) => return commands::webhooks::run(*args),
        Command::Deliveries(args) => return commands::deliveries::run(*args),
        Command::Recover(args) => return commands::deliveries::run_recover(*args),
        Command::OperatorWebhooks(args) => return commands::operator_webhooks::run(*args),
        Command::Trigger(args) => return commands::trigger::run(*args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("postwire: {err}");
            ExitCode::from(2)
        }
    }
}
