//! `PROVIDER_ROUTES`: which provider signs the deliveries arriving on which path, and where
//! its keys are.
//!
//! One route per line, fields separated by spaces:
//!
//! ```text
//! /stripe  stripe   STRIPE_WEBHOOK_SECRETS
//! /github  github   GITHUB_WEBHOOK_SECRET
//! /slack   slack    SLACK_SIGNING_SECRET   tolerance=600
//! /twilio  twilio   TWILIO_AUTH_TOKEN      url=https://hooks.example.com/twilio
//! /acme    generic  ACME_SECRET            header=X-Acme-Signature prefix=sha256= id-header=X-Acme-Delivery
//! ```
//!
//! the path (`/` and 1 to 63 of `A-Z a-z 0-9 - _ . ~ /`, not under `/_postwire`), the
//! provider (a preset name of `postwire_core::providers`, `twilio` or `generic`), the name
//! of the Worker secret holding its key(s) (several separated by spaces or commas: a
//! rotation), then `name=value` options. Blank lines and lines starting with `#` are skipped.
//!
//! Parsing is a plain function of a name → value lookup (unit-tested natively). A malformed
//! table is a [`RoutesError`] naming the setting, the line and what is wrong; it never holds
//! a key (keys are not in this setting, only the names of the secrets holding them).

use std::fmt;

use postwire_core::providers::{GenericHmac, HmacAlgorithm, Provider, SignatureEncoding, SignedContent, TwilioConfig};

/// Variable: the provider routes (this module's format). Unset or blank (the default): one
/// Standard Webhooks route on every path, verified with `WEBHOOK_SECRETS` /
/// `WEBHOOK_PUBLIC_KEYS`.
pub const VAR_PROVIDER_ROUTES: &str = "PROVIDER_ROUTES";
/// The origin secret, required with provider routes: it signs what the origin receives.
const VAR_ORIGIN_SECRET: &str = crate::config::VAR_ORIGIN_SECRET;
/// Most routes in one table.
pub const MAX_ROUTES: usize = 32;
/// Longest `PROVIDER_ROUTES` value, in bytes.
pub const MAX_ROUTES_LEN: usize = 16 * 1024;
/// Longest route path, with its leading `/`.
pub const MAX_PATH_LEN: usize = 64;
/// Largest `tolerance=`: one day, as `TIMESTAMP_TOLERANCE_SECS`.
pub const MAX_TOLERANCE_SECS: u64 = crate::config::MAX_TOLERANCE_SECS;

/// One route: a path, its provider, the secret binding of its keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderRoute {
    /// The request path it serves, exactly (e.g. `/stripe`).
    pub path: String,
    /// The provider and its settings (Twilio's public URL, a generic recipe).
    pub provider: Provider,
    /// The name of the Worker secret (or variable) holding the key(s).
    pub secret_binding: String,
    /// `tolerance=`: the timestamp tolerance in seconds, both ways; `None` keeps the
    /// provider's default.
    pub tolerance_secs: Option<u64>,
}

impl ProviderRoute {
    /// The prefix that keeps this route's ids apart from every other route's: its path
    /// without the leading `/` (`/stripe` → `stripe`).
    pub fn namespace(&self) -> &str {
        self.path.trim_start_matches('/')
    }
}

/// The routes, in the order written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderRoutes {
    routes: Vec<ProviderRoute>,
}

/// What is wrong with `PROVIDER_ROUTES` (or the setting it needs), with its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutesError {
    /// The setting at fault.
    pub variable: &'static str,
    /// The line of `PROVIDER_ROUTES` at fault (1-based), when it is one line.
    pub line: Option<usize>,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for RoutesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}, line {line}: {}", self.variable, self.reason),
            None => write!(f, "{} {}", self.variable, self.reason),
        }
    }
}

impl std::error::Error for RoutesError {}

impl ProviderRoutes {
    /// Reads `PROVIDER_ROUTES` through `get`: `Ok(None)` when it is unset or blank (the
    /// single Standard Webhooks route), the table otherwise. With routes, `ORIGIN_SECRET`
    /// is required (the origin verifies what it receives with it).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, RoutesError> {
        let Some(text) = get(VAR_PROVIDER_ROUTES).filter(|v| !v.trim().is_empty()) else {
            return Ok(None);
        };
        let routes = Self::parse(&text)?;
        if get(VAR_ORIGIN_SECRET).is_none_or(|v| v.trim().is_empty()) {
            return Err(RoutesError {
                variable: VAR_ORIGIN_SECRET,
                line: None,
                reason: "is required with PROVIDER_ROUTES: the origin receives every provider's deliveries \
                         signed with it as Standard Webhooks"
                    .into(),
            });
        }
        Ok(Some(routes))
    }

    /// Parses the table (this module's format).
    pub fn parse(text: &str) -> Result<Self, RoutesError> {
        if text.len() > MAX_ROUTES_LEN {
            return Err(error(None, "is longer than 16384 bytes"));
        }
        let mut routes: Vec<ProviderRoute> = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line_no = index + 1;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let route = parse_line(line).map_err(|reason| error(Some(line_no), reason))?;
            if routes.iter().any(|r| r.path == route.path) {
                return Err(error(Some(line_no), "repeats a path of an earlier line"));
            }
            if routes.len() == MAX_ROUTES {
                return Err(error(Some(line_no), "is one route too many (at most 32)"));
            }
            routes.push(route);
        }
        if routes.is_empty() {
            return Err(error(None, "holds no route (only blank lines and comments)"));
        }
        Ok(ProviderRoutes { routes })
    }

    /// The route serving `path`, if any.
    pub fn find(&self, path: &str) -> Option<&ProviderRoute> {
        self.routes.iter().find(|r| r.path == path)
    }

    /// Every route, in the order written.
    pub fn routes(&self) -> &[ProviderRoute] {
        &self.routes
    }
}

/// The lookup the Worker's [`Config`](crate::config::Config) is read through. With
/// provider routes set, every path is a route with its own keys, so `WEBHOOK_SECRETS` and
/// `WEBHOOK_PUBLIC_KEYS` are not read, and the default route's verifier gets a fresh
/// random secret no sender has (it verifies nothing; it is never consulted). Unset, `get`
/// as it is.
pub fn config_lookup(get: impl Fn(&str) -> Option<String>) -> impl Fn(&str) -> Option<String> {
    let routes = get(VAR_PROVIDER_ROUTES).is_some_and(|v| !v.trim().is_empty());
    move |name: &str| match name {
        crate::config::VAR_WEBHOOK_SECRETS if routes => postwire_core::Secret::generate().ok().map(|s| s.expose()),
        crate::config::VAR_WEBHOOK_PUBLIC_KEYS if routes => None,
        other => get(other),
    }
}

fn error(line: Option<usize>, reason: impl Into<String>) -> RoutesError {
    RoutesError {
        variable: VAR_PROVIDER_ROUTES,
        line,
        reason: reason.into(),
    }
}

fn parse_line(line: &str) -> Result<ProviderRoute, String> {
    let mut fields = line.split_ascii_whitespace();
    let (Some(path), Some(provider), Some(binding)) = (fields.next(), fields.next(), fields.next()) else {
        return Err("needs a path, a provider and the name of the secret holding its keys".into());
    };
    check_path(path)?;
    check_binding(binding)?;
    let mut options: Vec<(&str, &str)> = Vec::new();
    for field in fields {
        if field.starts_with('#') {
            break;
        }
        let (name, value) = field
            .split_once('=')
            .ok_or_else(|| format!("`{}` is not a name=value option", shown(field)))?;
        if options.iter().any(|(n, _)| *n == name) {
            return Err(format!("repeats the option `{}`", shown(name)));
        }
        options.push((name, value));
    }
    let take = |name: &str| options.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
    let provider = match provider {
        "twilio" => Provider::Twilio(TwilioConfig::new(
            take("url").ok_or("a twilio route needs url=<the public URL Twilio calls, as in its console>")?,
        )),
        "generic" => Provider::Generic(generic_recipe(&take)?),
        name => Provider::preset(name).ok_or_else(|| {
            format!(
                "`{}` is not a provider: stripe, github, shopify, slack, twilio, paddle, linear, sendgrid, \
                 discord, standard-webhooks or generic",
                shown(name)
            )
        })?,
    };
    let allowed: &[&str] = match &provider {
        Provider::Twilio(_) => &["url"],
        Provider::Generic(_) => &GENERIC_OPTIONS,
        _ => &["tolerance"],
    };
    if let Some((name, _)) = options.iter().find(|(n, _)| !allowed.contains(n)) {
        return Err(format!(
            "the option `{}` does not apply to a {} route (it takes: {})",
            shown(name),
            provider.name(),
            allowed.join(", ")
        ));
    }
    let tolerance_secs = match take("tolerance") {
        Some(_) if provider.default_tolerance_secs().is_none() => {
            return Err(format!(
                "tolerance= does not apply: {} signs no timestamp (replay protection is the de-duplication by id)",
                provider.name()
            ));
        }
        Some(v) => Some(tolerance(v)?),
        None => None,
    };
    // Twilio's URL and the recipe are checked as postwire-core checks them, with an HMAC
    // key that is never used.
    if matches!(provider, Provider::Twilio(_) | Provider::Generic(_))
        && let Err(e) = postwire_core::providers::ProviderVerifier::new(provider.clone(), ["settings-check"])
    {
        return Err(format!("the {} settings cannot work: {e}", provider.name()));
    }
    Ok(ProviderRoute {
        path: path.to_owned(),
        provider,
        secret_binding: binding.to_owned(),
        tolerance_secs,
    })
}

/// The options of a `generic` route.
const GENERIC_OPTIONS: [&str; 9] = [
    "header",
    "algorithm",
    "encoding",
    "prefix",
    "timestamp-header",
    "separator",
    "tolerance",
    "id-header",
    "type-header",
];

fn generic_recipe<'a>(take: &impl Fn(&str) -> Option<&'a str>) -> Result<GenericHmac, String> {
    let algorithm = match take("algorithm").unwrap_or("sha256") {
        "sha1" => HmacAlgorithm::Sha1,
        "sha256" => HmacAlgorithm::Sha256,
        "sha512" => HmacAlgorithm::Sha512,
        _ => return Err("algorithm= must be sha1, sha256 or sha512".into()),
    };
    let encoding = match take("encoding").unwrap_or("hex") {
        "hex" => SignatureEncoding::Hex,
        "base64" => SignatureEncoding::Base64,
        _ => return Err("encoding= must be hex or base64".into()),
    };
    let signed = match take("timestamp-header") {
        None => {
            if take("separator").is_some() || take("tolerance").is_some() {
                return Err("separator= and tolerance= need timestamp-header=".into());
            }
            SignedContent::Body
        }
        Some(header) => SignedContent::TimestampAndBody {
            timestamp_header: header.to_owned(),
            separator: take("separator").unwrap_or(".").to_owned(),
            tolerance_secs: match take("tolerance") {
                Some(v) => tolerance(v)?,
                None => postwire_core::DEFAULT_TOLERANCE_SECS,
            },
        },
    };
    Ok(GenericHmac {
        signature_header: take("header")
            .ok_or("a generic route needs header=<the header holding the signature>")?
            .to_owned(),
        algorithm,
        encoding,
        prefix: take("prefix").unwrap_or("").to_owned(),
        signed,
        id_header: take("id-header").map(str::to_owned),
        type_header: take("type-header").map(str::to_owned),
    })
}

fn tolerance(value: &str) -> Result<u64, String> {
    match value.parse::<u64>() {
        Ok(n) if (1..=MAX_TOLERANCE_SECS).contains(&n) && value.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
        _ => Err("tolerance= must be whole seconds from 1 to 86400".into()),
    }
}

fn check_path(path: &str) -> Result<(), String> {
    let ok_chars = path.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.~/".contains(&b));
    if !path.starts_with('/') || path.len() < 2 || path.len() > MAX_PATH_LEN || !ok_chars {
        return Err("the path must be `/` and 1 to 63 of A-Z a-z 0-9 - _ . ~ /".into());
    }
    if path.starts_with(postwire_edge_wire::admin::ADMIN_PREFIX) || path == "/_postwire" {
        return Err("the path must not be under /_postwire/ (the Worker's own paths)".into());
    }
    Ok(())
}

fn check_binding(name: &str) -> Result<(), String> {
    let mut bytes = name.bytes();
    let first_ok = bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
    if !first_ok || name.len() > 64 || !bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(
            "the third field must be the NAME of the secret holding the keys (letters, digits, _), \
                    never a key itself"
                .into(),
        );
    }
    Ok(())
}

/// A field quoted in an error: at most 32 characters of it, so a key pasted by mistake is
/// never shown whole.
fn shown(field: &str) -> String {
    field.chars().take(32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "
        # providers in front of one origin
        /stripe  stripe  STRIPE_SECRETS
        /github  github  GITHUB_SECRET
        /slack   slack   SLACK_SECRET tolerance=600   # Slack retries late
        /twilio  twilio  TWILIO_TOKEN url=https://hooks.example.com/twilio?x=1
        /acme    generic ACME_SECRET header=X-Acme-Signature prefix=sha256= timestamp-header=X-Acme-Timestamp id-header=X-Acme-Delivery
        /hooks/sw standard-webhooks SW_SECRETS
    ";

    #[test]
    fn a_table_of_routes() {
        let routes = ProviderRoutes::parse(TABLE).unwrap();
        assert_eq!(routes.routes().len(), 6);
        let stripe = routes.find("/stripe").unwrap();
        assert_eq!(
            (&stripe.provider, stripe.secret_binding.as_str(), stripe.tolerance_secs),
            (&Provider::Stripe, "STRIPE_SECRETS", None)
        );
        assert_eq!(routes.find("/slack").unwrap().tolerance_secs, Some(600));
        assert_eq!(
            routes.find("/twilio").unwrap().provider,
            Provider::Twilio(TwilioConfig::new("https://hooks.example.com/twilio?x=1"))
        );
        let Provider::Generic(acme) = &routes.find("/acme").unwrap().provider else {
            panic!("generic expected")
        };
        assert_eq!(acme.prefix, "sha256=");
        assert_eq!(
            acme.signed,
            SignedContent::TimestampAndBody {
                timestamp_header: "X-Acme-Timestamp".into(),
                separator: ".".into(),
                tolerance_secs: 300
            }
        );
        assert_eq!(routes.find("/hooks/sw").unwrap().namespace(), "hooks/sw");
        assert!(routes.find("/unknown").is_none());
        assert!(routes.find("/stripe/").is_none(), "paths match exactly");
    }

    #[test]
    fn unset_is_the_single_route_and_routes_need_the_origin_secret() {
        let none = ProviderRoutes::from_lookup(|_| None).unwrap();
        assert!(none.is_none());
        let blank = ProviderRoutes::from_lookup(|n| (n == VAR_PROVIDER_ROUTES).then(|| " \n ".into())).unwrap();
        assert!(blank.is_none());
        let no_origin = ProviderRoutes::from_lookup(|n| (n == VAR_PROVIDER_ROUTES).then(|| TABLE.into()));
        assert_eq!(no_origin.unwrap_err().variable, VAR_ORIGIN_SECRET);
        let ok = ProviderRoutes::from_lookup(|n| match n {
            VAR_PROVIDER_ROUTES => Some(TABLE.into()),
            VAR_ORIGIN_SECRET => Some("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into()),
            _ => None,
        });
        assert!(ok.unwrap().is_some());
    }

    #[test]
    fn with_routes_the_worker_needs_no_standard_webhooks_secret() {
        let without = |name: &str| match name {
            crate::config::VAR_ORIGIN_URL => Some("https://o.example/hooks".to_owned()),
            crate::config::VAR_WEBHOOK_PUBLIC_KEYS => Some("whpk_not-a-key".to_owned()),
            _ => None,
        };
        assert!(crate::config::Config::from_lookup(without).is_err());
        assert!(
            crate::config::Config::from_lookup(config_lookup(without)).is_err(),
            "no routes: unchanged"
        );
        let get = |name: &str| match name {
            VAR_PROVIDER_ROUTES => Some("/s stripe S".to_owned()),
            other => without(other),
        };
        assert!(crate::config::Config::from_lookup(config_lookup(get)).is_ok());
        // The placeholder is a fresh random secret each time, never a fixed one.
        let lookup = config_lookup(get);
        let (a, b) = (
            lookup(crate::config::VAR_WEBHOOK_SECRETS),
            lookup(crate::config::VAR_WEBHOOK_SECRETS),
        );
        assert!(a.as_deref().is_some_and(|s| s.starts_with("whsec_")) && a != b);
        assert_eq!(lookup(crate::config::VAR_WEBHOOK_PUBLIC_KEYS), None);
    }

    #[test]
    fn each_mistake_is_named_with_its_line() {
        for (table, line, says) in [
            ("/s stripe", Some(1), "needs a path"),
            ("stripe stripe S", Some(1), "path must be"),
            ("/_postwire/x stripe S", Some(1), "_postwire"),
            ("/a%20 stripe S", Some(1), "path must be"),
            ("\n/s nope S", Some(2), "not a provider"),
            ("/s stripe whsec_abc+/=", Some(1), "NAME of the secret"),
            ("/s stripe S\n/s github G", Some(2), "repeats a path"),
            ("/s stripe S tolerance=0", Some(1), "tolerance="),
            ("/s stripe S tolerance=86401", Some(1), "tolerance="),
            ("/s stripe S tolerance=5m", Some(1), "tolerance="),
            ("/s github S tolerance=60", Some(1), "signs no timestamp"),
            ("/s stripe S url=https://x.example", Some(1), "does not apply"),
            ("/s stripe S tolerance", Some(1), "name=value"),
            ("/s stripe S tolerance=1 tolerance=2", Some(1), "repeats the option"),
            ("/t twilio T", Some(1), "url="),
            ("/t twilio T url=ftp://x", Some(1), "cannot work"),
            ("/g generic G", Some(1), "header="),
            ("/g generic G header=X algorithm=md5", Some(1), "algorithm="),
            ("/g generic G header=X encoding=b32", Some(1), "encoding="),
            ("/g generic G header=X separator=:", Some(1), "need timestamp-header"),
            ("/g generic G header=bad:name", Some(1), "cannot work"),
            ("# only a comment", None, "no route"),
        ] {
            let err = ProviderRoutes::parse(table).unwrap_err();
            assert_eq!((err.variable, err.line), (VAR_PROVIDER_ROUTES, line), "{table}: {err}");
            assert!(err.to_string().contains(says), "{table}: {err}");
        }
        let many: String = (0..33).map(|i| format!("/p{i} stripe S\n")).collect();
        assert!(ProviderRoutes::parse(&many).unwrap_err().reason.contains("too many"));
        assert!(ProviderRoutes::parse(&"#".repeat(MAX_ROUTES_LEN + 1)).is_err());
    }

    #[test]
    fn a_key_pasted_as_an_option_is_never_shown_whole() {
        let key = "whsec_".to_owned() + &"k".repeat(40);
        let err = ProviderRoutes::parse(&format!("/s stripe S {key}")).unwrap_err();
        assert!(!err.to_string().contains(&key), "{err}");
    }
}
