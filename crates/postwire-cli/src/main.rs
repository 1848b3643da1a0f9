//! `postwire`: the command-line face of postwire.
//!
//! Today it makes secrets, signs and verifies deliveries from the shell, which is handy
//! for debugging a receiver (`postwire verify` says exactly why a delivery fails) and for
//! scripting tests. Each subcommand lives in its own module under `commands/`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod commands;
mod input;

/// Standard Webhooks secrets, signatures and verification for postwire.
#[derive(Debug, Parser)]
#[command(name = "postwire", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Signing secrets.
    #[command(subcommand)]
    Secret(commands::secret::SecretCommand),
    /// Print the `webhook-signature` value for a body.
    Sign(commands::sign::SignArgs),
    /// Verify a delivery: prints `ok` and exits 0, or prints the error code and exits 1.
    Verify(commands::verify::VerifyArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Secret(cmd) => commands::secret::run(cmd),
        Command::Sign(args) => commands::sign::run(args),
        Command::Verify(args) => commands::verify::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("postwire: {err}");
            ExitCode::from(2)
        }
    }
}
