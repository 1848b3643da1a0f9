//! `postwire openapi`: print the OpenAPI 3.1 document of the HTTP API, the same bytes
//! `postwire serve` serves at `/public/v1/openapi.json` and `docs/openapi.json` holds;
//! with `--ingest`, the document of the internal ingest API (served behind the ingest
//! token at `/internal/v1/openapi.json`, held in `docs/ingest-openapi.json`).

use std::process::ExitCode;

use clap::Args;

/// Arguments of `postwire openapi`.
#[derive(Debug, Args)]
pub struct OpenapiArgs {
    /// Print the internal ingest API's document instead of the public one.
    #[arg(long)]
    ingest: bool,
}

/// Runs `postwire openapi`.
pub fn run(args: OpenapiArgs) -> Result<ExitCode, String> {
    if args.ingest {
        print!("{}", postwire_server::ingest_openapi_document_json());
    } else {
        print!("{}", postwire_server::openapi_document_json());
    }
    Ok(ExitCode::SUCCESS)
}
