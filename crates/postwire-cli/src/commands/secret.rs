//! `postwire secret new`: print a fresh `whsec_` secret.

use std::process::ExitCode;

use clap::Subcommand;
use postwire_core::{DEFAULT_SECRET_LEN, Secret};

/// Subcommands of `postwire secret`.
#[derive(Debug, Subcommand)]
pub enum SecretCommand {
    /// Print a fresh random `whsec_` secret.
    New {
        /// Key length in bytes (24 to 64).
        #[arg(long, default_value_t = DEFAULT_SECRET_LEN)]
        bytes: usize,
    },
}

/// Runs `postwire secret ...`.
pub fn run(cmd: SecretCommand) -> Result<ExitCode, String> {
    match cmd {
        SecretCommand::New { bytes } => {
            let secret = Secret::generate_with_len(bytes).map_err(|e| e.to_string())?;
            println!("{}", secret.expose());
            Ok(ExitCode::SUCCESS)
        }
    }
}
