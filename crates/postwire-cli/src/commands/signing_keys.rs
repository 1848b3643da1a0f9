//! `postwire keys new`: print a fresh `v1a` (ed25519) key pair, the opt-in asymmetric
//! extension of Standard Webhooks. The `whsk_` signing key goes to whoever signs
//! (`postwire sign --secret whsk_…`); the `whpk_` public key to whoever only verifies (the
//! edge Worker's `PUBLIC_KEYS`, `new Webhook("whpk_…")`, `postwire verify`), who can then
//! check deliveries without being able to forge one.

use std::process::ExitCode;

use postwire_core::SigningKey;
use zeroize::Zeroizing;

/// Prints the signing key on the first line and its public key on the second, nothing
/// else, so a script can take either (`sed -n 2p`).
pub fn new_pair() -> Result<ExitCode, String> {
    let key = SigningKey::generate().map_err(|e| e.to_string())?;
    let secret = Zeroizing::new(key.expose());
    println!("{}", *secret);
    println!("{}", key.public_key());
    Ok(ExitCode::SUCCESS)
}
