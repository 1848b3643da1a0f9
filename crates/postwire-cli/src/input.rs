//! Reading a body from a file or standard input, byte for byte (bodies need not be UTF-8,
//! and a signature covers the exact bytes), plus parsing repeated `--secret` values
//! (`whsec_` secrets, and `v1a` `whsk_`/`whpk_` keys).

use std::io::Read;
use std::path::PathBuf;

use postwire_core::{Secret, SigningKey, TrustedKey};

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

/// Parses every `--secret` value of `sign`: `whsk_…` is a `v1a` signing key, anything else
/// a `whsec_` secret. The error names which one, never its content.
pub fn parse_signing(values: &[String]) -> Result<(Vec<Secret>, Vec<SigningKey>), String> {
    let mut secrets = Vec::new();
    let mut keys = Vec::new();
    for (i, s) in values.iter().enumerate() {
        let err = |e: postwire_core::Error| format!("--secret #{}: {e}", i + 1);
        if s.trim_ascii_start().starts_with(postwire_core::SIGNING_KEY_PREFIX) {
            keys.push(SigningKey::parse(s).map_err(err)?);
        } else {
            secrets.push(Secret::parse(s).map_err(err)?);
        }
    }
    Ok((secrets, keys))
}

/// Parses every `--secret` value of `verify`: `whpk_…` is a `v1a` public key, anything else
/// a `whsec_` secret (a `whsk_` signing key is refused: give its public key).
pub fn parse_trusted(values: &[String]) -> Result<Vec<TrustedKey>, String> {
    values
        .iter()
        .enumerate()
        .map(|(i, s)| TrustedKey::parse(s).map_err(|e| format!("--secret #{}: {e}", i + 1)))
        .collect()
}

/// The current Unix time in seconds, from the system clock (the CLI is not wasm).
pub fn now() -> postwire_core::UnixTime {
    use postwire_core::Clock;
    postwire_core::SystemClock.now().unix_time()
}
