//! What goes to the origin, and how its answer is classified.
//!
//! The forwarded request is a `POST` of the raw body, byte for byte, with the original
//! `webhook-id`, `webhook-timestamp` and `webhook-signature` (and `content-type`). When an
//! origin secret is configured, the Worker adds one more `v1` signature, made with that
//! secret by the same Standard Webhooks scheme over the same id, timestamp and body, in
//! front of the sender's. Standard Webhooks verifiers accept a header when *any* entry
//! matches, so the origin verifies with the npm package or postwire-core holding only the
//! origin secret: a request that did not come through the Worker has no such signature.
//!
//! A delivery from a provider route (`PROVIDER_ROUTES`) has no Standard Webhooks signature
//! of its sender: it carries the origin signature alone, and after the `webhook-*` headers
//! the provider's name, event type and own headers ([`DeliveryHeaders::forwarded`]).
//!
//! [`DeliveryHeaders::forwarded`]: crate::verify::DeliveryHeaders::forwarded

use postwire_core::{
    ID_HEADER, MAX_SIGNATURE_HEADER_LEN, MAX_SIGNATURES, SIGNATURE_HEADER, Secret, TIMESTAMP_HEADER, WebhookHeaders,
};

use crate::verify::inspect::VerifiedDelivery;

/// A request to the origin, ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForwardRequest<'a> {
    /// The origin URL.
    pub url: &'a str,
    /// Headers to set, lower-case names.
    pub headers: Vec<(&'static str, String)>,
    /// The raw body, as received.
    pub body: &'a [u8],
    /// How long to wait for the origin's response headers.
    pub timeout_ms: u64,
}

/// How the origin answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OriginOutcome {
    /// `2xx`: the origin has the event.
    Accepted {
        /// The origin's status.
        status: u16,
    },
    /// Any other status, including redirects (which are not followed, as the spec's sender
    /// does not follow them).
    Refused {
        /// The origin's status.
        status: u16,
    },
    /// No answer within the forward timeout (the request was aborted).
    TimedOut,
    /// The connection failed (DNS, refused, reset, TLS...).
    Unreachable,
    /// Listen mode (`LISTEN_TOKEN` set): no listener is connected, or it went away before
    /// answering ([`crate::listen`]).
    ListenerAbsent,
}

impl OriginOutcome {
    /// Classifies a status code.
    pub fn from_status(status: u16) -> Self {
        if (200..300).contains(&status) {
            OriginOutcome::Accepted { status }
        } else {
            OriginOutcome::Refused { status }
        }
    }
}

/// Sends a [`ForwardRequest`]. The Worker's implementation uses `fetch` with an abort
/// signal for the timeout; tests can use anything.
#[allow(async_fn_in_trait)]
pub trait Origin {
    /// Sends the request and classifies the answer. Never fails: every failure is an
    /// outcome.
    async fn forward(&self, request: &ForwardRequest<'_>) -> OriginOutcome;
}

/// The request to the origin for a verified delivery.
pub fn build_request<'a>(
    origin_url: &'a str,
    timeout_ms: u64,
    origin_secret: Option<&Secret>,
    delivery: &'a VerifiedDelivery,
) -> ForwardRequest<'a> {
    let h = &delivery.headers;
    let signature = match origin_secret {
        None => h.signature.clone(),
        Some(secret) => {
            let ours = origin_signature(secret, &h.id, &h.timestamp_raw, &delivery.body);
            if h.signature.trim().is_empty() {
                ours
            } else {
                signature_header_with(&ours, &h.signature)
            }
        }
    };
    let mut headers = vec![
        (ID_HEADER, h.id.clone()),
        (TIMESTAMP_HEADER, h.timestamp_raw.clone()),
        (SIGNATURE_HEADER, signature),
    ];
    if let Some(ct) = &h.content_type {
        headers.push(("content-type", ct.clone()));
    }
    headers.extend(h.forwarded.iter().cloned());
    ForwardRequest {
        url: origin_url,
        headers,
        body: &delivery.body,
        timeout_ms,
    }
}

/// The Standard Webhooks `v1` signature over `<id>.<timestamp>.<body>`, with the timestamp
/// text exactly as sent (a sender may pad it with leading zeros; the origin verifies the
/// text it receives), by postwire-core's [`Secret::sign_as_sent`].
pub fn origin_signature(secret: &Secret, id: &str, timestamp_raw: &str, body: &[u8]) -> String {
    match WebhookHeaders::new(id, timestamp_raw, "") {
        Ok(sent) => secret.sign_as_sent(&sent, body).to_string(),
        // Only verified deliveries are forwarded, so their headers are valid; never panic.
        Err(_) => String::new(),
    }
}

/// `ours` first, then the sender's entries while the header stays within postwire-core's
/// limits (64 entries, 8 KiB), so that verifiers with those limits still read it. Only a
/// sender header already at 64 entries loses its last one.
fn signature_header_with(ours: &str, sender: &str) -> String {
    let mut out = String::with_capacity(ours.len() + 1 + sender.len());
    out.push_str(ours);
    // Entry 0 is ours; the sender's follow from 1.
    for (count, entry) in (1..).zip(sender.split_ascii_whitespace()) {
        if count == MAX_SIGNATURES || out.len() + 1 + entry.len() > MAX_SIGNATURE_HEADER_LEN {
            break;
        }
        out.push(' ');
        out.push_str(entry);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::inspect::DeliveryHeaders;
    use postwire_core::{Signer, UnixTime, Verifier};

    const SENDER: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ORIGIN: &str = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

    fn delivery(ts_raw: &str, body: &[u8]) -> VerifiedDelivery {
        let ts = UnixTime::from_secs(ts_raw.parse().unwrap());
        let sig = Signer::new(Secret::parse(SENDER).unwrap())
            .sign("msg_1", ts, body)
            .unwrap();
        VerifiedDelivery {
            headers: DeliveryHeaders {
                id: "msg_1".into(),
                timestamp_raw: ts_raw.into(),
                timestamp: ts,
                signature: sig.into_string(),
                content_type: Some("application/json".into()),
                forwarded: Vec::new(),
            },
            body: body.to_vec(),
        }
    }

    fn header<'a>(req: &'a ForwardRequest<'_>, name: &str) -> &'a str {
        req.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
            .unwrap()
    }

    #[test]
    fn without_origin_secret_the_headers_are_the_originals() {
        let d = delivery("1700000000", b"{}");
        let req = build_request("https://o.example/", 8000, None, &d);
        assert_eq!(header(&req, "webhook-signature"), d.headers.signature);
        assert_eq!(header(&req, "webhook-id"), "msg_1");
        assert_eq!(header(&req, "webhook-timestamp"), "1700000000");
        assert_eq!(header(&req, "content-type"), "application/json");
        assert_eq!(req.body, b"{}");
    }

    #[test]
    fn the_origin_verifies_with_the_origin_secret_alone() {
        let d = delivery("1700000000", br#"{"x":1}"#);
        let origin = Secret::parse(ORIGIN).unwrap();
        let req = build_request("https://o.example/", 8000, Some(&origin), &d);
        let sig = header(&req, "webhook-signature");
        assert!(sig.ends_with(&d.headers.signature), "the sender's signature is kept");
        let headers: Vec<(&str, &str)> = req.headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let now = UnixTime::from_secs(1_700_000_001);
        assert!(Verifier::new(origin).verify(&headers, req.body, now).is_ok());
        // The sender's secret still verifies too; a stranger's does not.
        assert!(
            Verifier::new(Secret::parse(SENDER).unwrap())
                .verify(&headers, req.body, now)
                .is_ok()
        );
        assert!(
            Verifier::new(Secret::generate().unwrap())
                .verify(&headers, req.body, now)
                .is_err()
        );
        // And it equals what postwire-core's signer makes.
        let expected = Signer::new(Secret::parse(ORIGIN).unwrap())
            .sign("msg_1", UnixTime::from_secs(1_700_000_000), req.body)
            .unwrap();
        assert!(sig.starts_with(expected.as_str()));
    }

    #[test]
    fn a_zero_padded_timestamp_is_signed_as_sent() {
        let d = delivery("0001700000000", b"{}");
        let origin = Secret::parse(ORIGIN).unwrap();
        let req = build_request("https://o.example/", 8000, Some(&origin), &d);
        let headers: Vec<(&str, &str)> = req.headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert!(
            Verifier::new(origin)
                .verify(&headers, req.body, UnixTime::from_secs(1_700_000_000))
                .is_ok()
        );
    }

    #[test]
    fn the_combined_header_stays_within_the_core_limits() {
        let sender: Vec<String> = (0..MAX_SIGNATURES).map(|i| format!("v1,{i:0>43}=")).collect();
        let combined = signature_header_with("v1,ours", &sender.join(" "));
        let entries: Vec<&str> = combined.split(' ').collect();
        assert_eq!(entries.len(), MAX_SIGNATURES);
        assert_eq!(entries[0], "v1,ours");
        assert!(postwire_core::SignatureHeader::parse(&combined).is_ok());
    }

    #[test]
    fn a_provider_delivery_carries_the_origin_signature_alone_and_its_headers() {
        let mut d = delivery("1700000000", br#"{"id":"evt_1"}"#);
        d.headers.id = "stripe:evt_1".into();
        d.headers.signature = String::new();
        d.headers.forwarded = vec![
            ("postwire-provider", "stripe".into()),
            ("stripe-signature", "t=1,v1=ab".into()),
        ];
        let origin = Secret::parse(ORIGIN).unwrap();
        let req = build_request("https://o.example/", 8000, Some(&origin), &d);
        let sig = header(&req, "webhook-signature");
        assert_eq!(sig.split(' ').count(), 1, "{sig}");
        assert_eq!(header(&req, "postwire-provider"), "stripe");
        assert_eq!(header(&req, "stripe-signature"), "t=1,v1=ab");
        let headers: Vec<(&str, &str)> = req.headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert!(
            Verifier::new(origin)
                .verify(&headers, req.body, UnixTime::from_secs(1_700_000_000))
                .is_ok()
        );
    }

    #[test]
    fn statuses_are_classified() {
        assert_eq!(OriginOutcome::from_status(204), OriginOutcome::Accepted { status: 204 });
        for s in [199, 301, 302, 400, 500, 503] {
            assert_eq!(OriginOutcome::from_status(s), OriginOutcome::Refused { status: s });
        }
    }
}
