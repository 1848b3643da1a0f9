//! The Worker's settings, read from its environment (Worker secrets and `[vars]` of
//! `wrangler.toml`) and checked before any request is processed.
//!
//! Parsing is a plain function of a name → value lookup, so it is unit-tested natively; the
//! Worker passes a lookup into its `env`. A setting that is missing or malformed gives a
//! [`ConfigError`] naming the variable and what is wrong, never its value: several of them
//! are secrets.

use std::fmt;

use postwire_core::{
    DEFAULT_REPLAY_TTL_SECS, DEFAULT_TOLERANCE_SECS, PUBLIC_KEY_PREFIX, PublicKey, SIGNING_KEY_PREFIX, Secret,
    TrustedKey, Verifier,
};

pub use crate::verify::bearer::AdminToken;
pub use crate::verify::key_set::KeySetSettings;
use crate::verify::payload::PayloadPolicy;

/// Worker secret: the sender's signing secret(s), `whsec_…`, separated by spaces or commas.
/// Several during a rotation; a delivery signed with any of them is accepted. Optional when
/// [`VAR_WEBHOOK_PUBLIC_KEYS`] is set.
pub const VAR_WEBHOOK_SECRETS: &str = "WEBHOOK_SECRETS";
/// Variable: the sender's `v1a` public key(s), `whpk_…`, separated by spaces or commas (the
/// opt-in asymmetric extension). Recommended over [`VAR_WEBHOOK_SECRETS`]: a public key
/// verifies but cannot sign, so it need not even be a secret. Either or both may be set.
pub const VAR_WEBHOOK_PUBLIC_KEYS: &str = "WEBHOOK_PUBLIC_KEYS";
/// Variable: the URL of the sender's published key set (a JSON Web Key Set of `v1a` public
/// keys), fetched and kept per isolate, and fetched again after a rotation
/// ([`crate::verify::key_set`]). Beside or instead of the two above.
pub const VAR_WEBHOOK_KEYS_URL: &str = "WEBHOOK_KEYS_URL";
/// Variable: the least time between two fetches of [`VAR_WEBHOOK_KEYS_URL`] in one isolate,
/// in seconds (default 60).
pub const VAR_WEBHOOK_KEYS_MIN_REFRESH_SECS: &str = "WEBHOOK_KEYS_MIN_REFRESH_SECS";
/// Variable: how long one fetch of [`VAR_WEBHOOK_KEYS_URL`] may take, headers and body, in
/// milliseconds (default 5000).
pub const VAR_WEBHOOK_KEYS_TIMEOUT_MS: &str = "WEBHOOK_KEYS_TIMEOUT_MS";
/// Variable: where verified deliveries go, an `https://` (or, for local tests, `http://`) URL.
pub const VAR_ORIGIN_URL: &str = "ORIGIN_URL";
/// Optional Worker secret (`whsec_…`): when set, each forwarded delivery also carries a
/// signature made with it, the proof for the origin that the delivery came through here.
pub const VAR_ORIGIN_SECRET: &str = "ORIGIN_SECRET";
/// Variable: how long a delivered id is remembered, in seconds (default 25 h).
pub const VAR_DEDUP_TTL_SECS: &str = "DEDUP_TTL_SECS";
/// Variable: how long an in-flight marker lives if the Worker dies mid-forward (default 60 s).
pub const VAR_IN_FLIGHT_TTL_SECS: &str = "IN_FLIGHT_TTL_SECS";
/// Variable: the `webhook-timestamp` tolerance, both ways, in seconds (default 300).
pub const VAR_TIMESTAMP_TOLERANCE_SECS: &str = "TIMESTAMP_TOLERANCE_SECS";
/// Variable: the largest body accepted, in bytes (default 1 MiB).
pub const VAR_MAX_BODY_BYTES: &str = "MAX_BODY_BYTES";
/// Variable: how long to wait for the origin's answer, in milliseconds (default 8000).
pub const VAR_FORWARD_TIMEOUT_MS: &str = "FORWARD_TIMEOUT_MS";
/// Variable: which de-duplication store, `kv` (default) or `durable-object`.
pub const VAR_DEDUP_STORE: &str = "DEDUP_STORE";
/// Variable: `"true"` forwards bodies that are not a JSON object (default `"false"`).
pub const VAR_ALLOW_NON_JSON: &str = "ALLOW_NON_JSON";
/// Variable: `"postwire"` accepts only postwire events (`postwire_core::Event`); unset or
/// `"none"` accepts any JSON object.
pub const VAR_VALIDATE_EVENTS: &str = "VALIDATE_EVENTS";
/// Variable: how verified deliveries reach the origin: `forward` (default: forwarded while
/// the sender waits, acknowledged once the origin accepted) or `inbox` (stored at the edge,
/// acknowledged `202`, then delivered paced and in order by the `InboxObject`).
pub const VAR_DELIVERY_MODE: &str = "DELIVERY_MODE";
/// Variable (inbox mode): the most requests to the origin at once, across every isolate
/// (default 10).
pub const VAR_ORIGIN_MAX_IN_FLIGHT: &str = "ORIGIN_MAX_IN_FLIGHT";
/// Variable (inbox mode): the most requests to the origin started in any second (default 0:
/// no cap).
pub const VAR_ORIGIN_MAX_PER_SECOND: &str = "ORIGIN_MAX_PER_SECOND";
/// Variable (inbox mode): how long after its `202` a delivery is retried before it is dead
/// (default 3 days).
pub const VAR_ORIGIN_RETRY_HORIZON_SECS: &str = "ORIGIN_RETRY_HORIZON_SECS";
/// Variable (inbox mode): how long a delivered or dead delivery is kept, visible and
/// de-duplicating, after it finished (default 7 days).
pub const VAR_INBOX_RETENTION_SECS: &str = "INBOX_RETENTION_SECS";
/// Variable (inbox mode): `key` (one at a time per ordering key, in acceptance order; the
/// default with `VALIDATE_EVENTS = "postwire"`) or `none` (pacing only; the default otherwise).
pub const VAR_ORDERING: &str = "ORDERING";
/// Optional Worker secret: the bearer token of the admin API under `/_postwire/` (inbox
/// mode). Without it every admin path is `404`.
pub const VAR_ADMIN_TOKEN: &str = "ADMIN_TOKEN";
/// Optional Worker secret: the bearer token of `postwire listen`'s WebSocket at
/// `/_postwire/listen` ([`crate::listen`]). Set, the connected listener takes the origin's
/// place in both delivery modes; unset (the default), listen mode is off and the path `404`.
pub const VAR_LISTEN_TOKEN: &str = "LISTEN_TOKEN";
/// The Durable Object namespace binding of inbox mode (`[[durable_objects.bindings]] name`);
/// its class is `InboxObject`.
pub const INBOX_BINDING: &str = "INBOX";
/// The KV namespace binding used for de-duplication in KV mode (`[[kv_namespaces]] binding`).
pub const KV_BINDING: &str = "DEDUP";
/// The Durable Object namespace binding used in Durable Object mode
/// (`[[durable_objects.bindings]] name`); its class is `DedupObject`.
pub const DO_BINDING: &str = "DEDUP_OBJECT";

/// KV refuses an `expirationTtl` below 60 seconds.
pub const KV_MIN_TTL_SECS: u64 = 60;
/// Durable Object alarms have no minimum: in Durable Object mode a delivered id may be
/// remembered for as little as this (useful for tests; production wants the 25 h default).
pub const DO_MIN_TTL_SECS: u64 = 1;
/// Default in-flight marker lifetime: KV's minimum, already far above the forward timeout.
pub const DEFAULT_IN_FLIGHT_TTL_SECS: u64 = KV_MIN_TTL_SECS;
/// Default body limit: 1 MiB, far above any event of the API and far below Workers' limits.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;
/// Largest accepted body limit: the 100 MB request limit of the Workers free plan.
pub const MAX_MAX_BODY_BYTES: usize = 100 * 1000 * 1000;
/// Default forward timeout: below the sender's 10 s, leaving room for the KV writes.
pub const DEFAULT_FORWARD_TIMEOUT_MS: u64 = 8_000;
/// Largest accepted forward timeout: the sender gives up after 10 s, and the Worker still
/// needs time to record the outcome and answer.
pub const MAX_FORWARD_TIMEOUT_MS: u64 = 9_000;
/// Largest accepted timestamp tolerance (one day).
pub const MAX_TOLERANCE_SECS: u64 = 24 * 3600;
/// Most secrets accepted in [`VAR_WEBHOOK_SECRETS`]: each costs one HMAC per request.
pub const MAX_SECRETS: usize = 8;
/// Most public keys accepted in [`VAR_WEBHOOK_PUBLIC_KEYS`]: each costs up to one ed25519
/// verification per `v1a` entry of a request.
pub const MAX_PUBLIC_KEYS: usize = 8;
/// Default [`VAR_WEBHOOK_KEYS_MIN_REFRESH_SECS`]: one fetch a minute at most.
pub const DEFAULT_KEYS_MIN_REFRESH_SECS: u64 = 60;
/// Default [`VAR_WEBHOOK_KEYS_TIMEOUT_MS`].
pub const DEFAULT_KEYS_TIMEOUT_MS: u64 = 5_000;
/// Largest [`VAR_WEBHOOK_KEYS_TIMEOUT_MS`].
pub const MAX_KEYS_TIMEOUT_MS: u64 = 30_000;

/// Default `ORIGIN_MAX_IN_FLIGHT`.
pub const DEFAULT_ORIGIN_MAX_IN_FLIGHT: u64 = 10;
/// Largest `ORIGIN_MAX_IN_FLIGHT`: a Worker invocation may have at most 6 connections open at
/// once and queues the rest, so more would only queue inside the object.
pub const MAX_ORIGIN_MAX_IN_FLIGHT: u64 = 1000;
/// Largest `ORIGIN_MAX_PER_SECOND`.
pub const MAX_ORIGIN_MAX_PER_SECOND: u64 = 100_000;
/// Default `ORIGIN_RETRY_HORIZON_SECS`: 3 days.
pub const DEFAULT_RETRY_HORIZON_SECS: u64 = 3 * 24 * 3600;
/// Largest `ORIGIN_RETRY_HORIZON_SECS`: 30 days.
pub const MAX_RETRY_HORIZON_SECS: u64 = 30 * 24 * 3600;
/// Default `INBOX_RETENTION_SECS`: 7 days.
pub const DEFAULT_INBOX_RETENTION_SECS: u64 = 7 * 24 * 3600;
/// Largest `INBOX_RETENTION_SECS`: 365 days.
pub const MAX_INBOX_RETENTION_SECS: u64 = 365 * 24 * 3600;
/// Largest `MAX_BODY_BYTES` in inbox mode: a row of Durable Object SQL storage holds at most
/// 2 MB, and the body shares it with its headers.
pub const MAX_INBOX_BODY_BYTES: usize = 1_900_000;
/// Shortest `ADMIN_TOKEN`: a guessable token would open the admin API.
pub const MIN_ADMIN_TOKEN_LEN: usize = 16;

/// How verified deliveries reach the origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryMode {
    /// `DELIVERY_MODE = "forward"` (default): forwarded while the sender waits; the sender
    /// hears `2xx` only once the origin accepted.
    Forward,
    /// `DELIVERY_MODE = "inbox"`: stored in the `InboxObject`, answered `202`, delivered
    /// later, paced and in order.
    Inbox,
}

/// Which deliveries the inbox keeps in order relative to each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ordering {
    /// `ORDERING = "key"`: deliveries with the same ordering key (the post, or the account for
    /// account events: `postwire_core::OrderingKey`) reach the origin one at a time, in
    /// acceptance order. Needs `VALIDATE_EVENTS = "postwire"`.
    Key,
    /// `ORDERING = "none"`: only the pacing applies.
    None,
}

/// The inbox's settings (inbox mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InboxSettings {
    /// `ORIGIN_MAX_IN_FLIGHT`: requests to the origin at once.
    pub max_in_flight: u32,
    /// `ORIGIN_MAX_PER_SECOND`: requests to the origin started in any second; 0 = no cap.
    pub max_per_second: u32,
    /// `ORIGIN_RETRY_HORIZON_SECS`: retries stop this long after the `202`.
    pub retry_horizon_secs: u64,
    /// `INBOX_RETENTION_SECS`: finished deliveries are kept this long.
    pub retention_secs: u64,
    /// `ORDERING`.
    pub ordering: Ordering,
}

/// Where de-duplication records live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DedupBackend {
    /// Workers KV (`DEDUP_STORE = "kv"`, the default): cheap, eventually consistent across
    /// locations; concurrent copies within one isolate are held off in memory.
    Kv,
    /// One Durable Object per `webhook-id` (`DEDUP_STORE = "durable-object"`): claim,
    /// forward and record run one request at a time inside the object, so each id is
    /// forwarded once at a time, everywhere.
    DurableObject,
}

/// The checked settings of the Worker.
#[derive(Debug, Clone)]
pub struct Config {
    /// Checks incoming deliveries: the sender's secrets and public keys, and the timestamp
    /// tolerance. `None` when only [`VAR_WEBHOOK_KEYS_URL`] gives keys.
    pub verifier: Option<Verifier>,
    /// The keys of [`VAR_WEBHOOK_SECRETS`] and [`VAR_WEBHOOK_PUBLIC_KEYS`], which the key
    /// set's keys are added to.
    pub static_keys: Vec<TrustedKey>,
    /// The `webhook-timestamp` tolerance, in seconds.
    pub tolerance_secs: u64,
    /// [`VAR_WEBHOOK_KEYS_URL`] and its knobs, when set.
    pub key_set: Option<KeySetSettings>,
    /// Where verified, first-time deliveries are forwarded.
    pub origin_url: url::Url,
    /// Signs forwarded deliveries for the origin, when configured.
    pub origin_secret: Option<Secret>,
    /// How long a delivered id is remembered (KV `expirationTtl`).
    pub dedup_ttl_secs: u64,
    /// How long an in-flight marker lives (KV `expirationTtl`).
    pub in_flight_ttl_secs: u64,
    /// The largest body accepted, in bytes.
    pub max_body_bytes: usize,
    /// How long to wait for the origin's answer.
    pub forward_timeout_ms: u64,
    /// Where de-duplication records live.
    pub dedup_store: DedupBackend,
    /// Which verified bodies are forwarded.
    pub payload: PayloadPolicy,
    /// Forward (default) or inbox.
    pub delivery_mode: DeliveryMode,
    /// The inbox's settings (read and checked in every mode; used in inbox mode).
    pub inbox: InboxSettings,
    /// The admin API's token, when configured (inbox mode).
    pub admin_token: Option<AdminToken>,
    /// The listen WebSocket's token, when configured: then deliveries go to the listener.
    pub listen_token: Option<AdminToken>,
}

/// A setting is missing or malformed. Shows the variable's name and the rule, never the
/// value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The environment variable at fault.
    pub variable: &'static str,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "setting {} {}", self.variable, self.reason)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Reads every setting through `lookup` (variable name → value, `None` when unset).
    /// Empty or blank values count as unset.
    ///
    /// ```
    /// use postwire_worker::Config;
    /// let env = [("WEBHOOK_SECRETS", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), ("ORIGIN_URL", "https://origin.example/hooks")];
    /// let cfg = Config::from_lookup(|name| env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())).unwrap();
    /// assert_eq!(cfg.dedup_ttl_secs, 25 * 3600);
    /// assert!(cfg.origin_secret.is_none());
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());

        let public_keys = parse_public_keys(get(VAR_WEBHOOK_PUBLIC_KEYS).as_deref())?;
        let key_set = parse_key_set(&get)?;
        let secrets = parse_secrets(
            get(VAR_WEBHOOK_SECRETS).as_deref(),
            !public_keys.is_empty() || key_set.is_some(),
        )?;
        let dedup_store = match get(VAR_DEDUP_STORE).as_deref().map(str::trim) {
            None | Some("kv") => DedupBackend::Kv,
            Some("durable-object") => DedupBackend::DurableObject,
            Some(_) => {
                return Err(ConfigError {
                    variable: VAR_DEDUP_STORE,
                    reason: "must be \"kv\" or \"durable-object\"",
                });
            }
        };
        let payload = parse_payload_policy(get(VAR_ALLOW_NON_JSON).as_deref(), get(VAR_VALIDATE_EVENTS).as_deref())?;
        let origin_url = parse_origin_url(get(VAR_ORIGIN_URL).as_deref())?;
        let origin_secret = match get(VAR_ORIGIN_SECRET) {
            None => None,
            Some(v) => Some(Secret::parse(v.trim()).map_err(|_| ConfigError {
                variable: VAR_ORIGIN_SECRET,
                reason: "is not a valid `whsec_<base64>` secret",
            })?),
        };
        let tolerance_secs = parse_number(
            VAR_TIMESTAMP_TOLERANCE_SECS,
            get(VAR_TIMESTAMP_TOLERANCE_SECS).as_deref(),
            DEFAULT_TOLERANCE_SECS,
            1,
            MAX_TOLERANCE_SECS,
            "must be whole seconds from 1 to 86400",
        )?;
        let (min_ttl, ttl_rule) = match dedup_store {
            DedupBackend::Kv => (KV_MIN_TTL_SECS, "must be whole seconds, at least 60 (KV's minimum TTL)"),
            DedupBackend::DurableObject => (DO_MIN_TTL_SECS, "must be whole seconds, at least 1"),
        };
        let dedup_ttl_secs = parse_number(
            VAR_DEDUP_TTL_SECS,
            get(VAR_DEDUP_TTL_SECS).as_deref(),
            DEFAULT_REPLAY_TTL_SECS,
            min_ttl,
            u64::from(u32::MAX),
            ttl_rule,
        )?;
        let in_flight_ttl_secs = parse_number(
            VAR_IN_FLIGHT_TTL_SECS,
            get(VAR_IN_FLIGHT_TTL_SECS).as_deref(),
            DEFAULT_IN_FLIGHT_TTL_SECS,
            KV_MIN_TTL_SECS,
            24 * 3600,
            "must be whole seconds from 60 (KV's minimum TTL) to 86400",
        )?;
        let max_body_bytes = parse_number(
            VAR_MAX_BODY_BYTES,
            get(VAR_MAX_BODY_BYTES).as_deref(),
            DEFAULT_MAX_BODY_BYTES as u64,
            1,
            MAX_MAX_BODY_BYTES as u64,
            "must be a byte count from 1 to 100000000",
        )? as usize;
        let forward_timeout_ms = parse_number(
            VAR_FORWARD_TIMEOUT_MS,
            get(VAR_FORWARD_TIMEOUT_MS).as_deref(),
            DEFAULT_FORWARD_TIMEOUT_MS,
            1,
            MAX_FORWARD_TIMEOUT_MS,
            "must be milliseconds from 1 to 9000 (below the sender's 10 s)",
        )?;

        let delivery_mode = match get(VAR_DELIVERY_MODE).as_deref().map(str::trim) {
            None | Some("forward") => DeliveryMode::Forward,
            Some("inbox") => DeliveryMode::Inbox,
            Some(_) => {
                return Err(ConfigError {
                    variable: VAR_DELIVERY_MODE,
                    reason: "must be \"forward\" or \"inbox\"",
                });
            }
        };
        if delivery_mode == DeliveryMode::Inbox && max_body_bytes > MAX_INBOX_BODY_BYTES {
            return Err(ConfigError {
                variable: VAR_MAX_BODY_BYTES,
                reason: "must be at most 1900000 in inbox mode (a Durable Object SQL row holds at most 2 MB)",
            });
        }
        let inbox = parse_inbox(&get, payload)?;
        let admin_token = parse_bearer_token(VAR_ADMIN_TOKEN, get(VAR_ADMIN_TOKEN).as_deref())?;
        let listen_token = parse_bearer_token(VAR_LISTEN_TOKEN, get(VAR_LISTEN_TOKEN).as_deref())?;

        let static_keys: Vec<TrustedKey> = secrets
            .into_iter()
            .map(TrustedKey::Secret)
            .chain(public_keys.into_iter().map(TrustedKey::PublicKey))
            .collect();
        let verifier = match Verifier::with_keys(static_keys.iter().cloned()) {
            Ok(v) => Some(v.with_tolerance_secs(tolerance_secs)),
            Err(_) if key_set.is_some() => None,
            Err(_) => {
                return Err(ConfigError {
                    variable: VAR_WEBHOOK_SECRETS,
                    reason: "is required",
                });
            }
        };
        Ok(Config {
            verifier,
            static_keys,
            tolerance_secs,
            key_set,
            origin_url,
            origin_secret,
            dedup_ttl_secs,
            in_flight_ttl_secs,
            max_body_bytes,
            forward_timeout_ms,
            dedup_store,
            payload,
            delivery_mode,
            inbox,
            admin_token,
            listen_token,
        })
    }
}

/// The inbox's knobs. `ORDERING = "key"` needs typed events to find the key.
fn parse_inbox(get: &impl Fn(&str) -> Option<String>, payload: PayloadPolicy) -> Result<InboxSettings, ConfigError> {
    let max_in_flight = parse_number(
        VAR_ORIGIN_MAX_IN_FLIGHT,
        get(VAR_ORIGIN_MAX_IN_FLIGHT).as_deref(),
        DEFAULT_ORIGIN_MAX_IN_FLIGHT,
        1,
        MAX_ORIGIN_MAX_IN_FLIGHT,
        "must be a whole number from 1 to 1000",
    )? as u32;
    let max_per_second = parse_number(
        VAR_ORIGIN_MAX_PER_SECOND,
        get(VAR_ORIGIN_MAX_PER_SECOND).as_deref(),
        0,
        0,
        MAX_ORIGIN_MAX_PER_SECOND,
        "must be a whole number from 0 (no cap) to 100000",
    )? as u32;
    let retry_horizon_secs = parse_number(
        VAR_ORIGIN_RETRY_HORIZON_SECS,
        get(VAR_ORIGIN_RETRY_HORIZON_SECS).as_deref(),
        DEFAULT_RETRY_HORIZON_SECS,
        1,
        MAX_RETRY_HORIZON_SECS,
        "must be whole seconds from 1 to 2592000 (30 days)",
    )?;
    let retention_secs = parse_number(
        VAR_INBOX_RETENTION_SECS,
        get(VAR_INBOX_RETENTION_SECS).as_deref(),
        DEFAULT_INBOX_RETENTION_SECS,
        1,
        MAX_INBOX_RETENTION_SECS,
        "must be whole seconds from 1 to 31536000 (365 days)",
    )?;
    let typed = payload == PayloadPolicy::PostwireEvent;
    let ordering = match get(VAR_ORDERING).as_deref().map(str::trim) {
        None if typed => Ordering::Key,
        None | Some("none") => Ordering::None,
        Some("key") if typed => Ordering::Key,
        Some("key") => {
            return Err(ConfigError {
                variable: VAR_ORDERING,
                reason: "= \"key\" needs VALIDATE_EVENTS = \"postwire\" (the key comes from the typed event)",
            });
        }
        Some(_) => {
            return Err(ConfigError {
                variable: VAR_ORDERING,
                reason: "must be \"key\" or \"none\"",
            });
        }
    };
    Ok(InboxSettings {
        max_in_flight,
        max_per_second,
        retry_horizon_secs,
        retention_secs,
        ordering,
    })
}

/// `ADMIN_TOKEN` or `LISTEN_TOKEN`: at least 16 visible ASCII characters, when set.
fn parse_bearer_token(variable: &'static str, value: Option<&str>) -> Result<Option<AdminToken>, ConfigError> {
    let Some(value) = value.map(str::trim) else {
        return Ok(None);
    };
    if value.len() < MIN_ADMIN_TOKEN_LEN || !value.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ConfigError {
            variable,
            reason: "must be at least 16 visible ASCII characters (e.g. `openssl rand -hex 32`)",
        });
    }
    Ok(Some(AdminToken::new(value.to_owned())))
}

/// `ALLOW_NON_JSON` (`"true"` / `"false"`) and `VALIDATE_EVENTS` (`"postwire"` / `"none"`).
/// Both at once contradict each other: an error rather than a silent choice.
fn parse_payload_policy(allow_non_json: Option<&str>, validate: Option<&str>) -> Result<PayloadPolicy, ConfigError> {
    let allow = match allow_non_json.map(str::trim) {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => {
            return Err(ConfigError {
                variable: VAR_ALLOW_NON_JSON,
                reason: "must be \"true\" or \"false\"",
            });
        }
    };
    let events = match validate.map(str::trim) {
        None | Some("none") => false,
        Some("postwire") => true,
        Some(_) => {
            return Err(ConfigError {
                variable: VAR_VALIDATE_EVENTS,
                reason: "must be \"postwire\" or \"none\"",
            });
        }
    };
    match (allow, events) {
        (true, true) => Err(ConfigError {
            variable: VAR_VALIDATE_EVENTS,
            reason: "= \"postwire\" cannot be combined with ALLOW_NON_JSON = \"true\"",
        }),
        (true, false) => Ok(PayloadPolicy::AnyBytes),
        (false, true) => Ok(PayloadPolicy::PostwireEvent),
        (false, false) => Ok(PayloadPolicy::JsonObject),
    }
}

/// The entries of a list separated by whitespace or commas (neither occurs in base64).
fn entries(value: &str) -> Vec<&str> {
    value
        .split(|c: char| c == ',' || c.is_ascii_whitespace())
        .filter(|s| !s.is_empty())
        .collect()
}

/// One or more `whsec_` secrets separated by whitespace or commas; none is fine when
/// `optional` (public keys are set).
fn parse_secrets(value: Option<&str>, optional: bool) -> Result<Vec<Secret>, ConfigError> {
    const V: &str = VAR_WEBHOOK_SECRETS;
    const REQUIRED: &str =
        "is required (one or more `whsec_` secrets), unless WEBHOOK_PUBLIC_KEYS or WEBHOOK_KEYS_URL is set";
    let entries = value.map(entries).unwrap_or_default();
    if entries.is_empty() {
        return if optional {
            Ok(Vec::new())
        } else {
            Err(ConfigError {
                variable: V,
                reason: REQUIRED,
            })
        };
    }
    if entries.len() > MAX_SECRETS {
        return Err(ConfigError {
            variable: V,
            reason: "holds more than 8 secrets",
        });
    }
    entries
        .into_iter()
        .map(|s| {
            Secret::parse(s).map_err(|_| ConfigError {
                variable: V,
                reason: "holds an entry that is not a valid `whsec_<base64>` secret",
            })
        })
        .collect()
}

/// Zero or more `whpk_` public keys separated by whitespace or commas. A `whsk_` signing
/// key is refused with its own reason: the Worker must never hold the power to sign.
fn parse_public_keys(value: Option<&str>) -> Result<Vec<PublicKey>, ConfigError> {
    const V: &str = VAR_WEBHOOK_PUBLIC_KEYS;
    let entries = value.map(entries).unwrap_or_default();
    if entries.len() > MAX_PUBLIC_KEYS {
        return Err(ConfigError {
            variable: V,
            reason: "holds more than 8 public keys",
        });
    }
    entries
        .into_iter()
        .map(|s| {
            if s.starts_with(SIGNING_KEY_PREFIX) {
                return Err(ConfigError {
                    variable: V,
                    reason: "holds a `whsk_` signing key: give its `whpk_` public key (`postwire keys new` \
                             prints both); the Worker never needs the power to sign",
                });
            }
            if !s.starts_with(PUBLIC_KEY_PREFIX) {
                return Err(ConfigError {
                    variable: V,
                    reason: "holds an entry without the `whpk_` prefix",
                });
            }
            PublicKey::parse(s).map_err(|_| ConfigError {
                variable: V,
                reason: "holds an entry that is not a valid `whpk_` ed25519 public key (32 bytes, not of small order)",
            })
        })
        .collect()
}

/// [`VAR_WEBHOOK_KEYS_URL`] (an `https://` or `http://` URL with a host) and its knobs;
/// `None` when the URL is unset.
fn parse_key_set(get: &impl Fn(&str) -> Option<String>) -> Result<Option<KeySetSettings>, ConfigError> {
    const V: &str = VAR_WEBHOOK_KEYS_URL;
    let Some(value) = get(V) else {
        return Ok(None);
    };
    let url = url::Url::parse(value.trim()).map_err(|_| ConfigError {
        variable: V,
        reason: "is not an absolute URL",
    })?;
    if !matches!(url.scheme(), "https" | "http") || url.host().is_none() {
        return Err(ConfigError {
            variable: V,
            reason: "must be an https:// (or http://) URL with a host",
        });
    }
    let min_refresh_secs = parse_number(
        VAR_WEBHOOK_KEYS_MIN_REFRESH_SECS,
        get(VAR_WEBHOOK_KEYS_MIN_REFRESH_SECS).as_deref(),
        DEFAULT_KEYS_MIN_REFRESH_SECS,
        1,
        24 * 3600,
        "must be whole seconds from 1 to 86400",
    )?;
    let timeout_ms = parse_number(
        VAR_WEBHOOK_KEYS_TIMEOUT_MS,
        get(VAR_WEBHOOK_KEYS_TIMEOUT_MS).as_deref(),
        DEFAULT_KEYS_TIMEOUT_MS,
        1,
        MAX_KEYS_TIMEOUT_MS,
        "must be milliseconds from 1 to 30000",
    )?;
    Ok(Some(KeySetSettings {
        url,
        min_refresh_ms: min_refresh_secs * 1000,
        timeout_ms,
    }))
}

fn parse_origin_url(value: Option<&str>) -> Result<url::Url, ConfigError> {
    const V: &str = VAR_ORIGIN_URL;
    let value = value.ok_or(ConfigError {
        variable: V,
        reason: "is required",
    })?;
    let url = url::Url::parse(value.trim()).map_err(|_| ConfigError {
        variable: V,
        reason: "is not an absolute URL",
    })?;
    if !matches!(url.scheme(), "https" | "http") {
        return Err(ConfigError {
            variable: V,
            reason: "must be an https:// (or http://) URL",
        });
    }
    if url.host().is_none() {
        return Err(ConfigError {
            variable: V,
            reason: "has no host",
        });
    }
    Ok(url)
}

fn parse_number(
    variable: &'static str,
    value: Option<&str>,
    default: u64,
    min: u64,
    max: u64,
    rule: &'static str,
) -> Result<u64, ConfigError> {
    let Some(value) = value else {
        return Ok(default);
    };
    let value = value.trim();
    if value.is_empty() || value.len() > 20 || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ConfigError { variable, reason: rule });
    }
    match value.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(ConfigError { variable, reason: rule }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S1: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const S2: &str = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

    fn config(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::from_lookup(|name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
    }

    fn minimal() -> Vec<(&'static str, &'static str)> {
        vec![
            (VAR_WEBHOOK_SECRETS, S1),
            (VAR_ORIGIN_URL, "https://origin.example/hooks"),
        ]
    }

    #[test]
    fn defaults_cover_the_retry_span_and_the_spec() {
        let cfg = config(&minimal()).unwrap();
        // The sender's last retry is 22 h 43 min after the first attempt.
        let last_retry = 30 + 120 + 600 + 1800 + 3600 + 3 * 3600 + 6 * 3600 + 12 * 3600;
        assert!(cfg.dedup_ttl_secs > last_retry + 3600);
        assert_eq!(cfg.tolerance_secs, 300);
        assert_eq!(cfg.in_flight_ttl_secs, 60);
        assert!(cfg.forward_timeout_ms < 10_000);
        assert_eq!(cfg.max_body_bytes, 1024 * 1024);
    }

    #[test]
    fn several_secrets_for_rotation() {
        for sep in [" ", ",", ", ", "\n"] {
            let both = format!("{S1}{sep}{S2}");
            let mut pairs = minimal();
            pairs[0].1 = &both;
            assert!(config(&pairs).is_ok(), "{sep:?}");
        }
    }

    #[test]
    fn missing_required_settings_are_named() {
        assert_eq!(
            config(&[(VAR_ORIGIN_URL, "https://o.example")]).unwrap_err().variable,
            VAR_WEBHOOK_SECRETS
        );
        assert_eq!(
            config(&[(VAR_WEBHOOK_SECRETS, S1)]).unwrap_err().variable,
            VAR_ORIGIN_URL
        );
        assert_eq!(
            config(&[(VAR_WEBHOOK_SECRETS, " , "), (VAR_ORIGIN_URL, "https://o.example")])
                .unwrap_err()
                .variable,
            VAR_WEBHOOK_SECRETS
        );
    }

    #[test]
    fn key_set_url_alone_or_beside_static_keys() {
        let url = "https://webhooks.example.com/public/v1/key-sets/ks_1/jwks.json";
        let alone = config(&[(VAR_WEBHOOK_KEYS_URL, url), (VAR_ORIGIN_URL, "https://o.example")]).unwrap();
        assert!(alone.verifier.is_none() && alone.static_keys.is_empty());
        let set = alone.key_set.unwrap();
        assert_eq!(set.url.as_str(), url);
        assert_eq!(set.min_refresh_ms, 60_000);
        assert_eq!(set.timeout_ms, 5_000);
        let tuned = config(&[
            (VAR_WEBHOOK_KEYS_URL, "http://127.0.0.1:8080/jwks.json"),
            (VAR_WEBHOOK_KEYS_MIN_REFRESH_SECS, "5"),
            (VAR_WEBHOOK_KEYS_TIMEOUT_MS, "250"),
            (VAR_WEBHOOK_SECRETS, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
            (VAR_ORIGIN_URL, "https://o.example"),
        ])
        .unwrap();
        assert!(tuned.verifier.is_some() && tuned.static_keys.len() == 1);
        assert_eq!(
            tuned.key_set.as_ref().map(|k| (k.min_refresh_ms, k.timeout_ms)),
            Some((5_000, 250))
        );
        assert!(config(&minimal()).unwrap().key_set.is_none());
        for (name, value) in [
            (VAR_WEBHOOK_KEYS_URL, "not a url"),
            (VAR_WEBHOOK_KEYS_URL, "ftp://keys.example/jwks.json"),
            (VAR_WEBHOOK_KEYS_URL, "data:text/plain,x"),
            (VAR_WEBHOOK_KEYS_MIN_REFRESH_SECS, "0"),
            (VAR_WEBHOOK_KEYS_MIN_REFRESH_SECS, "86401"),
            (VAR_WEBHOOK_KEYS_TIMEOUT_MS, "30001"),
            (VAR_WEBHOOK_KEYS_TIMEOUT_MS, "soon"),
        ] {
            let mut pairs = vec![(VAR_WEBHOOK_KEYS_URL, url), (VAR_ORIGIN_URL, "https://o.example")];
            pairs.retain(|(k, _)| *k != name);
            pairs.push((name, value));
            let err = config(&pairs).unwrap_err();
            assert_eq!(err.variable, name, "{name}={value}");
            if value.len() > 4 {
                assert!(!err.to_string().contains(value), "the value is not shown");
            }
        }
        // Without any of the three, the secrets are required, and the message names all three.
        let err = config(&[(VAR_ORIGIN_URL, "https://o.example")]).unwrap_err();
        assert_eq!(err.variable, VAR_WEBHOOK_SECRETS);
        assert!(err.reason.contains("WEBHOOK_KEYS_URL"));
    }

    #[test]
    fn public_keys_alone_or_beside_secrets() {
        use postwire_core::{SigningKey, UnixTime, WebhookHeaders};
        let key = SigningKey::from_seed(&[9; 32]);
        let pk = key.public_key().to_string();
        let t = UnixTime::from_secs(1_700_000_000);
        let sig = key.sign("msg_1", t, b"{}").unwrap().to_string();
        let h = WebhookHeaders::new("msg_1", "1700000000", &sig).unwrap();
        let alone = config(&[(VAR_WEBHOOK_PUBLIC_KEYS, &pk), (VAR_ORIGIN_URL, "https://o.example")]).unwrap();
        assert!(alone.verifier.as_ref().unwrap().verify_headers(h, b"{}", t).is_ok());
        assert!(alone.verifier.as_ref().unwrap().verify_headers(h, b"{ }", t).is_err());
        let two = format!("{pk}, {}", SigningKey::from_seed(&[8; 32]).public_key());
        let both = config(&[
            (VAR_WEBHOOK_SECRETS, S1),
            (VAR_WEBHOOK_PUBLIC_KEYS, &two),
            (VAR_ORIGIN_URL, "https://o.example"),
        ])
        .unwrap();
        assert!(both.verifier.as_ref().unwrap().verify_headers(h, b"{}", t).is_ok());
        // Blank public keys and no secrets: the secrets are what is missing.
        assert_eq!(
            config(&[(VAR_WEBHOOK_PUBLIC_KEYS, " , "), (VAR_ORIGIN_URL, "https://o.example")])
                .unwrap_err()
                .variable,
            VAR_WEBHOOK_SECRETS
        );
    }

    #[test]
    fn bad_public_keys_are_named_never_shown() {
        let sk = postwire_core::SigningKey::from_seed(&[9; 32]).expose();
        let small_order = format!("whpk_AQ{}", "A".repeat(41) + "=");
        let nine = vec![postwire_core::SigningKey::from_seed(&[9; 32]).public_key().to_string(); 9].join(" ");
        for (bad, says) in [
            (sk.as_str(), "whsk_"),
            (S1, "prefix"),
            ("whpk_!!!!", "valid"),
            (small_order.as_str(), "small order"),
            (nine.as_str(), "more than 8"),
        ] {
            let err = config(&[(VAR_WEBHOOK_PUBLIC_KEYS, bad), (VAR_ORIGIN_URL, "https://o.example")]).unwrap_err();
            assert_eq!(err.variable, VAR_WEBHOOK_PUBLIC_KEYS, "{bad}");
            assert!(err.reason.contains(says), "{bad}: {err}");
            assert!(!err.to_string().contains(&sk[5..]));
        }
    }

    #[test]
    fn errors_never_show_the_value() {
        let bad_secret = "whsec_not!base64!secret";
        let mut pairs = minimal();
        pairs[0].1 = bad_secret;
        let err = config(&pairs).unwrap_err();
        assert_eq!(err.variable, VAR_WEBHOOK_SECRETS);
        assert!(!err.to_string().contains("not!base64"));

        let mut pairs = minimal();
        pairs.push((VAR_ORIGIN_SECRET, "whsec_also!bad"));
        let err = config(&pairs).unwrap_err();
        assert_eq!(err.variable, VAR_ORIGIN_SECRET);
        assert!(!err.to_string().contains("also!bad"));
    }

    #[test]
    fn origin_url_must_be_http_or_https() {
        for bad in ["not a url", "ftp://o.example/x", "/relative", "mailto:a@b.example"] {
            let mut pairs = minimal();
            pairs[1].1 = bad;
            assert_eq!(config(&pairs).unwrap_err().variable, VAR_ORIGIN_URL, "{bad}");
        }
        let mut pairs = minimal();
        pairs[1].1 = "http://127.0.0.1:8787/hook";
        assert!(config(&pairs).is_ok());
    }

    #[test]
    fn numbers_are_checked_against_their_bounds() {
        let cases = [
            (VAR_DEDUP_TTL_SECS, "59"),
            (VAR_DEDUP_TTL_SECS, "-1"),
            (VAR_IN_FLIGHT_TTL_SECS, "30"),
            (VAR_TIMESTAMP_TOLERANCE_SECS, "0"),
            (VAR_TIMESTAMP_TOLERANCE_SECS, "5m"),
            (VAR_MAX_BODY_BYTES, "0"),
            (VAR_MAX_BODY_BYTES, "1e6"),
            (VAR_FORWARD_TIMEOUT_MS, "10000"),
            (VAR_FORWARD_TIMEOUT_MS, "99999999999999999999999"),
        ];
        for (var, value) in cases {
            let mut pairs = minimal();
            pairs.push((var, value));
            assert_eq!(config(&pairs).unwrap_err().variable, var, "{var}={value}");
        }
        let mut pairs = minimal();
        pairs.extend([
            (VAR_DEDUP_TTL_SECS, "60"),
            (VAR_IN_FLIGHT_TTL_SECS, " 120 "),
            (VAR_TIMESTAMP_TOLERANCE_SECS, "600"),
            (VAR_MAX_BODY_BYTES, "2048"),
            (VAR_FORWARD_TIMEOUT_MS, "9000"),
            (VAR_ORIGIN_SECRET, S2),
        ]);
        let cfg = config(&pairs).unwrap();
        assert_eq!(
            (
                cfg.dedup_ttl_secs,
                cfg.in_flight_ttl_secs,
                cfg.tolerance_secs,
                cfg.max_body_bytes,
                cfg.forward_timeout_ms
            ),
            (60, 120, 600, 2048, 9000)
        );
        assert!(cfg.origin_secret.is_some());
    }

    #[test]
    fn dedup_store_and_payload_policy() {
        let cfg = config(&minimal()).unwrap();
        assert_eq!(cfg.dedup_store, DedupBackend::Kv);
        assert_eq!(cfg.payload, PayloadPolicy::JsonObject);
        for (pairs, store, payload) in [
            (
                vec![(VAR_DEDUP_STORE, "kv")],
                DedupBackend::Kv,
                PayloadPolicy::JsonObject,
            ),
            (
                vec![(VAR_DEDUP_STORE, "durable-object")],
                DedupBackend::DurableObject,
                PayloadPolicy::JsonObject,
            ),
            (
                vec![(VAR_ALLOW_NON_JSON, "true")],
                DedupBackend::Kv,
                PayloadPolicy::AnyBytes,
            ),
            (
                vec![(VAR_ALLOW_NON_JSON, "false")],
                DedupBackend::Kv,
                PayloadPolicy::JsonObject,
            ),
            (
                vec![(VAR_VALIDATE_EVENTS, "postwire")],
                DedupBackend::Kv,
                PayloadPolicy::PostwireEvent,
            ),
            (
                vec![(VAR_VALIDATE_EVENTS, "none")],
                DedupBackend::Kv,
                PayloadPolicy::JsonObject,
            ),
        ] {
            let mut all = minimal();
            all.extend(pairs.iter().copied());
            let cfg = config(&all).unwrap();
            assert_eq!((cfg.dedup_store, cfg.payload), (store, payload), "{pairs:?}");
        }
        for (var, value) in [
            (VAR_DEDUP_STORE, "durable_object"),
            (VAR_DEDUP_STORE, "d1"),
            (VAR_ALLOW_NON_JSON, "yes"),
            (VAR_VALIDATE_EVENTS, "svix"),
        ] {
            let mut all = minimal();
            all.push((var, value));
            assert_eq!(config(&all).unwrap_err().variable, var, "{var}={value}");
        }
        let mut both = minimal();
        both.extend([(VAR_ALLOW_NON_JSON, "true"), (VAR_VALIDATE_EVENTS, "postwire")]);
        assert_eq!(config(&both).unwrap_err().variable, VAR_VALIDATE_EVENTS);
    }

    #[test]
    fn the_ttl_minimum_is_kv_s_only_in_kv_mode() {
        let mut kv = minimal();
        kv.push((VAR_DEDUP_TTL_SECS, "5"));
        assert_eq!(config(&kv).unwrap_err().variable, VAR_DEDUP_TTL_SECS);
        kv.push((VAR_DEDUP_STORE, "durable-object"));
        assert_eq!(config(&kv).unwrap().dedup_ttl_secs, 5);
        let mut zero = minimal();
        zero.extend([(VAR_DEDUP_STORE, "durable-object"), (VAR_DEDUP_TTL_SECS, "0")]);
        assert_eq!(config(&zero).unwrap_err().variable, VAR_DEDUP_TTL_SECS);
    }

    #[test]
    fn inbox_knobs_have_defaults_and_ranges() {
        let cfg = config(&minimal()).unwrap();
        assert_eq!(cfg.delivery_mode, DeliveryMode::Forward);
        assert_eq!(
            cfg.inbox,
            InboxSettings {
                max_in_flight: 10,
                max_per_second: 0,
                retry_horizon_secs: 259_200,
                retention_secs: 604_800,
                ordering: Ordering::None,
            }
        );
        assert!(cfg.admin_token.is_none());
        let mut inbox = minimal();
        inbox.extend([
            (VAR_DELIVERY_MODE, "inbox"),
            (VAR_VALIDATE_EVENTS, "postwire"),
            (VAR_ORIGIN_MAX_IN_FLIGHT, "4"),
            (VAR_ORIGIN_MAX_PER_SECOND, "200"),
            (VAR_ADMIN_TOKEN, "0123456789abcdef"),
        ]);
        let cfg = config(&inbox).unwrap();
        assert_eq!(cfg.delivery_mode, DeliveryMode::Inbox);
        assert_eq!((cfg.inbox.max_in_flight, cfg.inbox.max_per_second), (4, 200));
        assert_eq!(
            cfg.inbox.ordering,
            Ordering::Key,
            "key is the default with typed events"
        );
        assert_eq!(format!("{:?}", cfg.admin_token), "Some(AdminToken(…))");
        for (var, value) in [
            (VAR_DELIVERY_MODE, "queue"),
            (VAR_ORIGIN_MAX_IN_FLIGHT, "0"),
            (VAR_ORIGIN_MAX_IN_FLIGHT, "1001"),
            (VAR_ORIGIN_MAX_PER_SECOND, "-1"),
            (VAR_ORIGIN_RETRY_HORIZON_SECS, "0"),
            (VAR_INBOX_RETENTION_SECS, "x"),
            (VAR_ORDERING, "post"),
            (VAR_ADMIN_TOKEN, "short"),
            (VAR_ADMIN_TOKEN, "has a space in it, too long"),
            (VAR_LISTEN_TOKEN, "short"),
            (VAR_LISTEN_TOKEN, "has a space in it, too long"),
            (VAR_MAX_BODY_BYTES, "2000000"),
        ] {
            let mut all = inbox.clone();
            all.retain(|(k, _)| *k != var);
            all.push((var, value));
            assert_eq!(config(&all).unwrap_err().variable, var, "{var}={value}");
        }
        let mut untyped_key = minimal();
        untyped_key.extend([(VAR_DELIVERY_MODE, "inbox"), (VAR_ORDERING, "key")]);
        assert_eq!(config(&untyped_key).unwrap_err().variable, VAR_ORDERING);
        let mut none = inbox.clone();
        none.push((VAR_ORDERING, "none"));
        assert_eq!(config(&none).unwrap().inbox.ordering, Ordering::None);
        assert!(
            config(&inbox).unwrap().listen_token.is_none(),
            "listen mode is off by default"
        );
        let mut listen = minimal();
        listen.push((VAR_LISTEN_TOKEN, "listen-token-0123456789"));
        assert_eq!(
            format!("{:?}", config(&listen).unwrap().listen_token),
            "Some(AdminToken(…))"
        );
    }

    #[test]
    fn blank_values_count_as_unset() {
        let mut pairs = minimal();
        pairs.push((VAR_ORIGIN_SECRET, "  "));
        pairs.push((VAR_DEDUP_TTL_SECS, ""));
        let cfg = config(&pairs).unwrap();
        assert!(cfg.origin_secret.is_none());
        assert_eq!(cfg.dedup_ttl_secs, DEFAULT_REPLAY_TTL_SECS);
    }
}
