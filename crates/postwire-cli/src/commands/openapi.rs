//! `postwire openapi`: print the OpenAPI 3.1 document of the HTTP API, the same bytes
//! `postwire serve` serves at `/public/v1/openapi.json` and `docs/openapi.json` holds.

use std::process::ExitCode;

/// Runs `postwire openapi`.
pub fn run() -> Result<ExitCode, String> {
    print!("{}", postwire_server::openapi::document_json());
    Ok(ExitCode::SUCCESS)
}
