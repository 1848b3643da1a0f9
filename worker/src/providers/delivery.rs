//! One request on a provider route: verified with the provider's scheme
//! (`postwire_core::providers`), then either a handshake answered here or a
//! [`VerifiedDelivery`] the modes handle exactly like a Standard Webhooks one.
//!
//! The delivery the modes see is the provider's, restated as Standard Webhooks:
//! - `webhook-id`: the route's namespace, `:`, and the provider's id (`stripe:evt_1`), so
//!   two routes' ids never collide in the de-duplication store or the inbox. When that is
//!   longer than 256 characters, the provider's id is replaced by its SHA-256 in hex
//!   (`stripe:sha256:…`).
//! - `webhook-timestamp`: the provider's signed timestamp, or the time the Worker received
//!   the request when the scheme signs none (GitHub, Shopify, Twilio).
//! - no sender signature: the origin's (`ORIGIN_SECRET`) is the only one it carries.
//! - beside them, [`DeliveryHeaders::forwarded`]: `postwire-provider`, `postwire-event-type`
//!   and the provider's own headers listed in [`kept_headers`].

use postwire_core::UnixTime;
use postwire_core::providers::{Provider, ProviderVerifier};
use sha2::{Digest, Sha256};

use super::routes::ProviderRoute;
use crate::reply::{Reply, ReplyCode};
use crate::verify::inspect::{DeliveryHeaders, VerifiedDelivery};

/// Header to the origin: the provider's name (`stripe`, `github`, …; `generic` for a recipe).
pub const PROVIDER_HEADER: &str = "postwire-provider";
/// Header to the origin: the provider's event type, when it names one.
pub const EVENT_TYPE_HEADER: &str = "postwire-event-type";
/// Longest `webhook-id`.
const MAX_ID_LEN: usize = postwire_core::MAX_ID_LEN;

/// What a verified request on a provider route is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteOutcome {
    /// An event: de-duplicated and handed to the origin by the Worker's mode.
    Delivery(VerifiedDelivery),
    /// A handshake the provider expects answered now, never forwarded.
    Handshake(Handshake),
}

/// A synchronous answer to a provider's handshake: `200`, this JSON body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handshake {
    /// The JSON body.
    pub body: String,
}

/// The provider's own headers handed to the origin beside the `webhook-*` ones (lower-case
/// names; each only when the request has it). A generic recipe keeps none: its headers are
/// named in the route, not known here. None is a `webhook-*` header, `content-type` or a
/// `postwire-*` one, which the Worker sets itself.
pub fn kept_headers(provider: &Provider) -> &'static [&'static str] {
    match provider {
        Provider::Stripe => &["stripe-signature"],
        Provider::GitHub => &[
            "x-github-event",
            "x-github-delivery",
            "x-github-hook-id",
            "x-github-hook-installation-target-id",
            "x-github-hook-installation-target-type",
            "x-hub-signature-256",
        ],
        Provider::Shopify => &[
            "x-shopify-topic",
            "x-shopify-hmac-sha256",
            "x-shopify-shop-domain",
            "x-shopify-api-version",
            "x-shopify-webhook-id",
            "x-shopify-event-id",
            "x-shopify-triggered-at",
        ],
        Provider::Slack => &[
            "x-slack-signature",
            "x-slack-request-timestamp",
            "x-slack-retry-num",
            "x-slack-retry-reason",
        ],
        Provider::Twilio(_) => &[
            "x-twilio-signature",
            "i-twilio-idempotency-token",
            "x-twilio-webhooks-signature-settings",
        ],
        Provider::Paddle => &["paddle-signature"],
        Provider::Linear => &["linear-signature", "linear-delivery", "linear-event"],
        Provider::SendGrid => &[
            "x-twilio-email-event-webhook-signature",
            "x-twilio-email-event-webhook-timestamp",
        ],
        Provider::Discord => &["x-signature-ed25519", "x-signature-timestamp"],
        // Its `webhook-*` headers are restated; the sender's signature gives way to the
        // origin's.
        _ => &[],
    }
}

/// The headers a provider delivery carries to the origin beside the `webhook-*` ones, read
/// back from an internal request the Worker made (a Durable Object's): `None` when it is
/// not a provider delivery.
pub fn forwarded_from(headers: &[(String, String)]) -> Option<Vec<(&'static str, String)>> {
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let name = get(PROVIDER_HEADER)?;
    let provider = provider_by_name(&name)?;
    let mut out = vec![(PROVIDER_HEADER, provider.name().to_owned())];
    if let Some(t) = get(EVENT_TYPE_HEADER) {
        out.push((EVENT_TYPE_HEADER, t));
    }
    for &kept in kept_headers(&provider) {
        if let Some(v) = get(kept) {
            out.push((kept, v));
        }
    }
    Some(out)
}

/// A provider by name, with placeholder settings where it needs some (only its name and
/// kept headers are read).
fn provider_by_name(name: &str) -> Option<Provider> {
    match name {
        "twilio" => Some(Provider::Twilio(postwire_core::providers::TwilioConfig::new(""))),
        "generic" => Some(Provider::Generic(postwire_core::providers::GenericHmac {
            signature_header: String::new(),
            algorithm: postwire_core::providers::HmacAlgorithm::Sha256,
            encoding: postwire_core::providers::SignatureEncoding::Hex,
            prefix: String::new(),
            signed: postwire_core::providers::SignedContent::Body,
            id_header: None,
            type_header: None,
        })),
        other => Provider::preset(other),
    }
}

/// The verifier of a route with the keys in its secret binding (`keys`: one or more,
/// separated by spaces or commas). A key that does not parse is the Worker's
/// misconfiguration (`500`), named by the binding, never shown.
pub fn route_verifier(route: &ProviderRoute, keys: &str) -> Result<ProviderVerifier, String> {
    let entries: Vec<&str> = keys
        .split(|c: char| c == ',' || c.is_ascii_whitespace())
        .filter(|s| !s.is_empty())
        .collect();
    if entries.is_empty() {
        return Err(format!(
            "PROVIDER_ROUTES route {}: the secret {} is empty",
            route.path, route.secret_binding
        ));
    }
    if entries.len() > crate::config::MAX_SECRETS {
        return Err(format!(
            "PROVIDER_ROUTES route {}: the secret {} holds more than 8 keys",
            route.path, route.secret_binding
        ));
    }
    let verifier = ProviderVerifier::new(route.provider.clone(), entries).map_err(|e| {
        format!(
            "PROVIDER_ROUTES route {}: the secret {} holds a key {} cannot use ({})",
            route.path,
            route.secret_binding,
            route.provider.name(),
            e.code().as_str()
        )
    })?;
    Ok(match route.tolerance_secs {
        Some(secs) => verifier.with_tolerance_secs(secs),
        None => verifier,
    })
}

/// Verifies one request on `route` (`headers` as received, `body` read whole within the
/// limit, `now` and `received` from the Worker's clock): a delivery restated as Standard
/// Webhooks, a handshake's answer, or the refusal with the same codes as a Standard
/// Webhooks delivery's (`400`, `401`).
pub fn verify_on_route(
    route: &ProviderRoute,
    verifier: &ProviderVerifier,
    headers: &[(String, String)],
    body: Vec<u8>,
    now: UnixTime,
) -> Result<RouteOutcome, Reply> {
    let verified = verifier.verify(headers, &body, now).map_err(|e| Reply::from(&e))?;
    if let Some(handshake) = handshake(&route.provider, verified.event_type.as_deref(), &body) {
        return Ok(RouteOutcome::Handshake(handshake));
    }
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    };
    let mut forwarded = vec![(PROVIDER_HEADER, route.provider.name().to_owned())];
    if let Some(t) = &verified.event_type {
        forwarded.push((EVENT_TYPE_HEADER, t.clone()));
    }
    for &kept in kept_headers(&route.provider) {
        if let Some(v) = get(kept).filter(|v| is_header_value(v)) {
            forwarded.push((kept, v.to_owned()));
        }
    }
    let timestamp = verified.timestamp.unwrap_or(now);
    let content_type = get("content-type")
        .filter(|v| !v.is_empty() && is_header_value(v))
        .map(str::to_owned);
    Ok(RouteOutcome::Delivery(VerifiedDelivery {
        headers: DeliveryHeaders {
            id: namespaced_id(route.namespace(), &verified.id),
            timestamp_raw: timestamp.as_secs().to_string(),
            timestamp,
            signature: String::new(),
            content_type,
            forwarded,
        },
        body,
    }))
}

/// `<namespace>:<id>`, or `<namespace>:sha256:<hex of id>` when that would be longer than
/// a `webhook-id` may be.
pub fn namespaced_id(namespace: &str, id: &str) -> String {
    let plain = format!("{namespace}:{id}");
    if plain.len() <= MAX_ID_LEN {
        return plain;
    }
    let digest = Sha256::digest(id.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{namespace}:sha256:{hex}")
}

/// Visible ASCII and spaces: what the Worker's `Headers` take as they are.
fn is_header_value(v: &str) -> bool {
    v.bytes().all(|b| b == b' ' || b == b'\t' || b.is_ascii_graphic())
}

/// Slack's `url_verification` (answer its `challenge`) and Discord's `PING` (`{"type":1}`),
/// for a request whose signature was verified.
fn handshake(provider: &Provider, event_type: Option<&str>, body: &[u8]) -> Option<Handshake> {
    match (provider, event_type) {
        (Provider::Slack, Some("url_verification")) => {
            #[derive(serde::Deserialize)]
            struct Challenge {
                #[serde(rename = "type")]
                kind: String,
                challenge: String,
            }
            let c: Challenge = serde_json::from_slice(body).ok()?;
            (c.kind == "url_verification").then(|| Handshake {
                body: serde_json::json!({ "challenge": c.challenge }).to_string(),
            })
        }
        (Provider::Discord, Some("PING")) => Some(Handshake {
            body: r#"{"type":1}"#.to_owned(),
        }),
        _ => None,
    }
}

/// A route's secret binding is unset: the Worker's misconfiguration.
pub fn missing_secret(route: &ProviderRoute) -> String {
    format!(
        "PROVIDER_ROUTES route {}: the secret {} is not set",
        route.path, route.secret_binding
    )
}

/// `404`: no route serves this path.
pub fn no_route() -> Reply {
    Reply::new(ReplyCode::NotFound, "no provider route serves this path")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::routes::ProviderRoutes;
    use hmac::{Hmac, Mac};

    const NOW: i64 = 1_700_000_000;

    fn hmac_hex(key: &str, parts: &[&[u8]]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).unwrap();
        for p in parts {
            mac.update(p);
        }
        mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
    }

    fn routes() -> ProviderRoutes {
        ProviderRoutes::parse("/stripe stripe S\n/github github G\n/slack slack L\n/discord discord D").unwrap()
    }

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn run(path: &str, keys: &str, headers: &[(String, String)], body: &[u8]) -> Result<RouteOutcome, Reply> {
        let routes = routes();
        let route = routes.find(path).unwrap();
        let verifier = route_verifier(route, keys).unwrap();
        verify_on_route(route, &verifier, headers, body.to_vec(), UnixTime::from_secs(NOW))
    }

    #[test]
    fn a_stripe_event_becomes_a_namespaced_standard_delivery() {
        let body = br#"{"id":"evt_1","type":"invoice.paid"}"#;
        let sig = format!(
            "t={NOW},v1={}",
            hmac_hex("whsec_s", &[format!("{NOW}.").as_bytes(), body])
        );
        let headers = h(&[("Stripe-Signature", &sig), ("Content-Type", "application/json")]);
        let RouteOutcome::Delivery(d) = run("/stripe", "whsec_old, whsec_s", &headers, body).unwrap() else {
            panic!("a delivery expected")
        };
        assert_eq!(d.headers.id, "stripe:evt_1");
        assert_eq!(d.headers.timestamp_raw, NOW.to_string());
        assert_eq!(d.headers.signature, "");
        assert_eq!(d.headers.content_type.as_deref(), Some("application/json"));
        assert_eq!(
            d.headers.forwarded,
            vec![
                (PROVIDER_HEADER, "stripe".to_owned()),
                (EVENT_TYPE_HEADER, "invoice.paid".to_owned()),
                ("stripe-signature", sig.clone())
            ]
        );
        assert_eq!(d.body, body);
        // Read back from the internal request as a Durable Object sees it.
        let internal: Vec<(String, String)> = d
            .headers
            .forwarded
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        assert_eq!(forwarded_from(&internal), Some(d.headers.forwarded.clone()));
        assert_eq!(forwarded_from(&h(&[("stripe-signature", "x")])), None);
        // Tampered, wrong key, stale: the Standard Webhooks codes.
        let code = |r: Result<RouteOutcome, Reply>| r.unwrap_err().code.as_str();
        assert_eq!(
            code(run(
                "/stripe",
                "whsec_s",
                &headers,
                br#"{"id":"evt_2","type":"invoice.paid"}"#
            )),
            "invalid_signature"
        );
        assert_eq!(code(run("/stripe", "whsec_other", &headers, body)), "invalid_signature");
        assert_eq!(code(run("/stripe", "whsec_s", &[], body)), "missing_header");
        let stale = format!(
            "t={},v1={}",
            NOW - 301,
            hmac_hex("whsec_s", &[format!("{}.", NOW - 301).as_bytes(), body])
        );
        assert_eq!(
            code(run("/stripe", "whsec_s", &h(&[("stripe-signature", &stale)]), body)),
            "timestamp_too_old"
        );
    }

    #[test]
    fn a_scheme_without_timestamp_takes_the_receipt_time() {
        let body = br#"{"zen":"hi"}"#;
        let sig = format!("sha256={}", hmac_hex("gh", &[body]));
        let headers = h(&[
            ("x-hub-signature-256", &sig),
            ("x-github-delivery", "d-1"),
            ("x-github-event", "ping"),
        ]);
        let RouteOutcome::Delivery(d) = run("/github", "gh", &headers, body).unwrap() else {
            panic!("a delivery expected")
        };
        assert_eq!(d.headers.id, "github:d-1");
        assert_eq!(d.headers.timestamp, UnixTime::from_secs(NOW));
        assert!(d.headers.forwarded.contains(&("x-github-delivery", "d-1".to_owned())));
    }

    #[test]
    fn handshakes_are_answered_after_the_signature() {
        let body = br#"{"token":"t","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#;
        let ts = NOW.to_string();
        let sig = format!("v0={}", hmac_hex("sl", &[b"v0:", ts.as_bytes(), b":", body]));
        let headers = h(&[("x-slack-signature", &sig), ("x-slack-request-timestamp", &ts)]);
        assert_eq!(
            run("/slack", "sl", &headers, body).unwrap(),
            RouteOutcome::Handshake(Handshake {
                body: r#"{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}"#.into()
            })
        );
        assert_eq!(
            run("/slack", "other", &headers, body).unwrap_err().code,
            ReplyCode::InvalidSignature,
            "no answer to a forged challenge"
        );
    }

    #[test]
    fn no_kept_header_overrides_one_the_worker_sets() {
        let twilio = Provider::Twilio(postwire_core::providers::TwilioConfig::new("https://x.example/t"));
        for provider in Provider::PRESETS.into_iter().chain([twilio]) {
            for name in kept_headers(&provider) {
                assert!(
                    !name.starts_with("webhook-") && !name.starts_with("postwire-") && *name != "content-type",
                    "{}: {name}",
                    provider.name()
                );
                assert_eq!(*name, name.to_ascii_lowercase());
            }
        }
    }

    #[test]
    fn long_ids_are_hashed_within_the_limit() {
        assert_eq!(namespaced_id("stripe", "evt_1"), "stripe:evt_1");
        let long = "x".repeat(256);
        let id = namespaced_id("stripe", &long);
        assert!(id.starts_with("stripe:sha256:") && id.len() == 14 + 64, "{id}");
        assert!(postwire_core::validate_id(&id).is_ok());
    }

    #[test]
    fn bad_keys_are_named_never_shown() {
        let routes = routes();
        let discord = routes.find("/discord").unwrap();
        let err = route_verifier(discord, "not-hex-secretvalue").unwrap_err();
        assert!(err.contains("D") && !err.contains("secretvalue"), "{err}");
        assert!(route_verifier(discord, " , ").unwrap_err().contains("empty"));
    }
}
