//! `postwire verify`: check a delivery and say exactly why it fails, with the same error
//! codes as every other part of postwire. `whpk_` public keys check `v1a` (ed25519)
//! entries, beside `whsec_` secrets for `v1`; `--keys-url` fetches a sender's published
//! key set (a JSON Web Key Set, read by `postwire_core::key_set`) and trusts its keys.
//!
//! The fetch is bounded like every receiver's: one deadline for headers and body, the body
//! capped at [`MAX_KEY_SET_BYTES`], redirects followed only within the URL's origin (at
//! most 3). Its failures have the stable codes `key_set_unavailable` and `invalid_key_set`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use postwire_core::key_set::{KEY_SET_CONTENT_TYPE, KeySet, MAX_KEY_SET_BYTES};
use postwire_core::{DEFAULT_TOLERANCE_SECS, Error, TrustedKey, UnixTime, Verifier, WebhookHeaders};

use crate::input;

/// Arguments of `postwire verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Signing secret (`whsec_...`) or `v1a` public key (`whpk_...`); repeat to accept a
    /// signature by any of them (rotation, or `v1` and `v1a` side by side).
    #[arg(
        long = "secret",
        required_unless_present = "keys_url",
        env = "POSTWIRE_SECRET",
        hide_env_values = true
    )]
    secrets: Vec<String>,
    /// The URL of the sender's published key set (a JSON Web Key Set of `v1a` public keys):
    /// its keys are trusted beside any `--secret`. Fetched once, with no redirect to another
    /// origin and at most 64 KiB.
    #[arg(long, value_name = "URL")]
    keys_url: Option<String>,
    /// How long fetching `--keys-url` may take, headers and body, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 5)]
    keys_timeout: u64,
    /// The `webhook-id` header.
    #[arg(long)]
    id: String,
    /// The `webhook-timestamp` header, exactly as received.
    #[arg(long)]
    timestamp: String,
    /// The `webhook-signature` header.
    #[arg(long)]
    signature: String,
    /// The current time in Unix seconds; defaults to now.
    #[arg(long)]
    now: Option<i64>,
    /// Timestamp tolerance in seconds, each way.
    #[arg(long, default_value_t = DEFAULT_TOLERANCE_SECS)]
    tolerance: u64,
    /// The raw body file; `-` or absent reads standard input.
    file: Option<PathBuf>,
}

/// Runs `postwire verify`: exit 0 and `ok`, or exit 1 and `<code>: <message>`.
pub fn run(args: VerifyArgs) -> Result<ExitCode, String> {
    let mut trusted = input::parse_trusted(&args.secrets)?;
    if let Some(url) = &args.keys_url {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the runtime: {e}"))?;
        match runtime.block_on(fetch_key_set(url, Duration::from_secs(args.keys_timeout))) {
            Ok(set) => trusted.extend(set.public_keys().copied().map(TrustedKey::PublicKey)),
            Err(err) => {
                println!("{}: {err}", err.code());
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    let verifier = Verifier::with_keys(trusted)
        .map_err(|e| e.to_string())?
        .with_tolerance_secs(args.tolerance);
    let body = input::read_body(args.file.as_ref())?;
    let now = args.now.map(UnixTime::from_secs).unwrap_or_else(input::now);
    let result = WebhookHeaders::new(&args.id, &args.timestamp, &args.signature)
        .and_then(|headers| verifier.verify_headers(headers, &body, now));
    match result {
        Ok(_) => {
            println!("ok");
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => {
            println!("{}: {err}", err.code());
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The most redirects followed (each within the key set URL's origin).
const MAX_REDIRECTS: usize = 3;

fn unavailable(reason: impl Into<String>) -> Error {
    Error::KeySetUnavailable { reason: reason.into() }
}

/// Fetches and parses the key set at `url` within `timeout`: GET, redirects only within
/// the URL's origin, HTTP 200 only, the body read up to [`MAX_KEY_SET_BYTES`].
pub async fn fetch_key_set(url: &str, timeout: Duration) -> Result<KeySet, Error> {
    let start = reqwest::Url::parse(url).map_err(|_| unavailable("the key set URL is not an absolute URL"))?;
    if start.scheme() != "https" && start.scheme() != "http" {
        return Err(unavailable(
            "the key set URL must be https: (or http: for a local test)",
        ));
    }
    let origin = start.origin();
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.url().origin() != origin {
                attempt.error("a redirect to another origin was refused")
            } else if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error("more than 3 redirects")
            } else {
                attempt.follow()
            }
        }))
        .build()
        .map_err(|e| unavailable(format!("cannot build the HTTP client: {e}")))?;
    let described = |e: reqwest::Error| {
        if e.is_timeout() {
            unavailable(format!(
                "no complete answer within {} s (--keys-timeout)",
                timeout.as_secs()
            ))
        } else if e.is_redirect() {
            unavailable(std::error::Error::source(&e).map_or_else(|| e.to_string(), ToString::to_string))
        } else {
            unavailable(format!("the fetch failed: {}", e.without_url()))
        }
    };
    let mut response = client
        .get(start)
        .header(
            reqwest::header::ACCEPT,
            format!("{KEY_SET_CONTENT_TYPE}, application/json"),
        )
        .send()
        .await
        .map_err(described)?;
    if response.status() != reqwest::StatusCode::OK {
        return Err(unavailable(format!(
            "the server answered HTTP {}",
            response.status().as_u16()
        )));
    }
    let too_large = Error::InvalidKeySet {
        reason: "larger than 65536 bytes",
    };
    if response.content_length().is_some_and(|n| n > MAX_KEY_SET_BYTES as u64) {
        return Err(too_large);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(described)? {
        if body.len() + chunk.len() > MAX_KEY_SET_BYTES {
            return Err(too_large);
        }
        body.extend_from_slice(&chunk);
    }
    KeySet::parse(&body)
}
