//! Reading a body from a file or standard input, byte for byte (bodies need not be UTF-8,
//! and a signature covers the exact bytes), plus parsing repeated `--secret` values.

use std::io::Read;
use std::path::PathBuf;

use postwire_core::Secret;

/// Reads the body from `path`, or from standard input when it is `None` or `-`.
pub fn read_body(path: Option<&PathBuf>) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    match path {
        Some(p) if p.as_os_str() != "-" => {
            body = std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
        }
        _ => {
            std::io::stdin()
                .read_to_end(&mut body)
                .map_err(|e| format!("cannot read standard input: {e}"))?;
        }
    }
    Ok(body)
}

/// Parses every `--secret` value. The error names which one, never its content.
pub fn parse_secrets(values: &[String]) -> Result<Vec<Secret>, String> {
    values
        .iter()
        .enumerate()
        .map(|(i, s)| Secret::parse(s).map_err(|e| format!("--secret #{}: {e}", i + 1)))
        .collect()
}

/// The current Unix time in seconds, from the system clock (the CLI is not wasm).
pub fn now() -> postwire_core::UnixTime {
    use postwire_core::Clock;
    postwire_core::SystemClock.now().unix_time()
}
