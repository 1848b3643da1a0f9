//! Every provider's verification (postwire_core::providers) on arbitrary header values and
//! bodies: must never panic, and a delivery it accepts always names an id and event type
//! that are safe as a `webhook-id` and a header value (1 to 256 visible ASCII characters).
#![no_main]

use libfuzzer_sys::fuzz_target;
use postwire_core::UnixTime;
use postwire_core::providers::{
    GenericHmac, HmacAlgorithm, Provider, ProviderVerifier, SignatureEncoding, SignedContent, TwilioConfig,
};

/// Each provider with the headers it reads and a key of its kind (the P-256 and ed25519
/// public keys of the private scalar and seed 0x07 repeated).
fn cases() -> Vec<(ProviderVerifier, &'static [&'static str])> {
    let hmac = |p: Provider| ProviderVerifier::new(p, ["fuzzing secret"]).unwrap();
    let recipe = GenericHmac {
        signature_header: "x-sig".into(),
        algorithm: HmacAlgorithm::Sha1,
        encoding: SignatureEncoding::Base64,
        prefix: "v=".into(),
        signed: SignedContent::TimestampAndBody {
            timestamp_header: "x-ts".into(),
            separator: ".".into(),
            tolerance_secs: 300,
        },
        id_header: Some("x-id".into()),
        type_header: Some("x-type".into()),
    };
    vec![
        (
            ProviderVerifier::new(Provider::StandardWebhooks, ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]).unwrap(),
            &["webhook-id", "webhook-timestamp", "webhook-signature"],
        ),
        (hmac(Provider::Stripe), &["stripe-signature"]),
        (hmac(Provider::GitHub), &["x-hub-signature-256", "x-github-delivery", "x-github-event"]),
        (
            hmac(Provider::Shopify),
            &[
                "x-shopify-hmac-sha256",
                "x-shopify-topic",
                "x-shopify-shop-domain",
                "x-shopify-api-version",
                "x-shopify-webhook-id",
            ],
        ),
        (hmac(Provider::Slack), &["x-slack-signature", "x-slack-request-timestamp"]),
        (
            hmac(Provider::Twilio(TwilioConfig::new("https://example.com/twilio?x=1"))),
            &["x-twilio-signature", "x-twilio-webhooks-signature-settings", "i-twilio-idempotency-token"],
        ),
        (hmac(Provider::Paddle), &["paddle-signature"]),
        (hmac(Provider::Linear), &["linear-signature", "linear-delivery"]),
        (
            ProviderVerifier::new(
                Provider::SendGrid,
                ["MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEHhhTL9R1TALzBB2cdc6zO4P/2BrHzk/ogsyxyYvFiW6kbDEcTi/0DdlqNlPm5FRF0y3+SG7O11x6kMahiIHAow=="],
            )
            .unwrap(),
            &["x-twilio-email-event-webhook-signature", "x-twilio-email-event-webhook-timestamp"],
        ),
        (
            ProviderVerifier::new(
                Provider::Discord,
                ["ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c"],
            )
            .unwrap(),
            &["x-signature-ed25519", "x-signature-timestamp"],
        ),
        (hmac(Provider::Generic(recipe)), &["x-sig", "x-ts", "x-id", "x-type"]),
    ]
}

fn is_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= 256 && s.bytes().all(|b| b.is_ascii_graphic())
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let cases = cases();
    let (verifier, names) = &cases[usize::from(which) % cases.len()];
    // Header values, then the body, separated by 0xff bytes.
    let mut parts = rest.split(|&b| b == 0xff);
    let mut headers = Vec::new();
    for name in names.iter() {
        let Some(value) = parts.next() else { break };
        headers.push((name.to_string(), String::from_utf8_lossy(value).into_owned()));
    }
    let body: Vec<u8> = parts.flatten().copied().collect();
    if let Ok(d) = verifier.verify(&headers, &body, UnixTime::from_secs(1_700_000_000)) {
        assert!(is_name(&d.id), "{d:?}");
        assert!(d.event_type.as_deref().is_none_or(is_name), "{d:?}");
    }
});
