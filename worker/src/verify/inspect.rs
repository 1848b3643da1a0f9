//! The checks of one incoming request, cheapest first: the method, the `webhook-*` headers,
//! the declared and actual body size, then the timestamp and signature (postwire-core).
//!
//! The Worker runs them in two steps because the body arrives as a stream: [`precheck`]
//! before reading it (so an oversized or unsigned request costs nothing), then, with the
//! body read up to the limit, [`verify_body`]. [`check_request`] chains the same functions
//! for callers that hold the whole request, such as the native tests over the shared test
//! vectors. Every failure is a [`Reply`] with a stable code; nothing here panics.

use postwire_core::{HeaderSource, UnixTime, Verifier, WebhookHeaders};

use crate::reply::{Reply, ReplyCode};

/// The request headers that matter, copied out of the request once it passed [`precheck`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryHeaders {
    /// `webhook-id`, checked: 1 to 256 visible ASCII characters.
    pub id: String,
    /// `webhook-timestamp` exactly as sent (the signature covers this text), digits only.
    pub timestamp_raw: String,
    /// The parsed `webhook-timestamp`.
    pub timestamp: UnixTime,
    /// `webhook-signature` as sent.
    pub signature: String,
    /// `content-type`, passed on to the origin when present.
    pub content_type: Option<String>,
    /// More headers for the origin: empty for a Standard Webhooks delivery; on a provider
    /// route, the provider's name and event type and its own headers
    /// ([`crate::providers::delivery`]).
    pub forwarded: Vec<(&'static str, String)>,
}

/// A delivery whose signature and timestamp were checked: what may be forwarded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedDelivery {
    /// Its headers.
    pub headers: DeliveryHeaders,
    /// The raw body, byte for byte as received.
    pub body: Vec<u8>,
}

/// Only `POST` is accepted; anything else is `405` with `allow: POST`.
pub fn check_method(method: &str) -> Result<(), Reply> {
    if method.eq_ignore_ascii_case("POST") {
        Ok(())
    } else {
        Err(Reply::new(
            ReplyCode::MethodNotAllowed,
            "only POST is accepted: webhook deliveries are POST requests",
        )
        .with_header("allow", "POST"))
    }
}

/// Reads and checks the three `webhook-*` headers (presence, id and timestamp syntax).
pub fn read_headers<H: HeaderSource + ?Sized>(headers: &H) -> Result<DeliveryHeaders, Reply> {
    let parsed = WebhookHeaders::from_source(headers).map_err(|e| Reply::from(&e))?;
    let content_type = headers
        .header("content-type")
        .and_then(|v| std::str::from_utf8(v).ok())
        .filter(|v| v.is_ascii() && !v.is_empty())
        .map(str::to_owned);
    Ok(DeliveryHeaders {
        id: parsed.id().to_owned(),
        timestamp_raw: parsed.timestamp_raw().to_owned(),
        timestamp: parsed.timestamp(),
        signature: parsed.signature().to_owned(),
        content_type,
        forwarded: Vec::new(),
    })
}

/// `413` when `content-length` declares more than `max_body_bytes`. An absent or
/// unparsable `content-length` passes: the body is then counted as it is read.
pub fn check_declared_length(content_length: Option<&str>, max_body_bytes: usize) -> Result<(), Reply> {
    match content_length.map(str::trim).and_then(|v| v.parse::<u64>().ok()) {
        Some(n) if n > max_body_bytes as u64 => Err(body_too_large(max_body_bytes)),
        _ => Ok(()),
    }
}

/// The `413` answer.
pub fn body_too_large(max_body_bytes: usize) -> Reply {
    Reply::new(
        ReplyCode::PayloadTooLarge,
        format!("the body is larger than this endpoint's limit of {max_body_bytes} bytes"),
    )
}

/// The checks that need no body: method, headers, declared length.
pub fn precheck<H: HeaderSource + ?Sized>(
    method: &str,
    headers: &H,
    max_body_bytes: usize,
) -> Result<DeliveryHeaders, Reply> {
    check_method(method)?;
    let delivery_headers = read_headers(headers)?;
    let content_length = headers
        .header("content-length")
        .and_then(|v| std::str::from_utf8(v).ok());
    check_declared_length(content_length, max_body_bytes)?;
    Ok(delivery_headers)
}

/// The timestamp (against `now`, within the verifier's tolerance) and the signature over
/// `<id>.<timestamp>.<body>` (against any of the verifier's secrets).
pub fn verify_body(
    verifier: &Verifier,
    headers: DeliveryHeaders,
    body: Vec<u8>,
    now: UnixTime,
) -> Result<VerifiedDelivery, Reply> {
    let view =
        WebhookHeaders::new(&headers.id, &headers.timestamp_raw, &headers.signature).map_err(|e| Reply::from(&e))?;
    verifier.verify_headers(view, &body, now).map_err(|e| Reply::from(&e))?;
    Ok(VerifiedDelivery { headers, body })
}

/// Every check, for a request held whole: [`precheck`], the actual body size, then
/// [`verify_body`]. The Worker runs the same steps with a streamed body.
pub fn check_request<H: HeaderSource + ?Sized>(
    verifier: &Verifier,
    max_body_bytes: usize,
    method: &str,
    headers: &H,
    body: &[u8],
    now: UnixTime,
) -> Result<VerifiedDelivery, Reply> {
    let delivery_headers = precheck(method, headers, max_body_bytes)?;
    if body.len() > max_body_bytes {
        return Err(body_too_large(max_body_bytes));
    }
    verify_body(verifier, delivery_headers, body.to_vec(), now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use postwire_core::{Secret, Signer};

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const NOW: i64 = 1_700_000_000;

    fn signed(id: &str, ts: i64, body: &[u8]) -> Vec<(String, String)> {
        let sig = Signer::new(Secret::parse(SECRET).unwrap())
            .sign(id, UnixTime::from_secs(ts), body)
            .unwrap();
        vec![
            ("Webhook-Id".into(), id.into()),
            ("Webhook-Timestamp".into(), ts.to_string()),
            ("Webhook-Signature".into(), sig.into_string()),
            ("Content-Type".into(), "application/json".into()),
        ]
    }

    fn check(method: &str, headers: &[(String, String)], body: &[u8]) -> Result<VerifiedDelivery, Reply> {
        let verifier = Verifier::new(Secret::parse(SECRET).unwrap());
        check_request(&verifier, 64, method, headers, body, UnixTime::from_secs(NOW))
    }

    fn code(r: Result<VerifiedDelivery, Reply>) -> &'static str {
        r.map(|_| "ok").unwrap_or_else(|e| e.code.as_str())
    }

    #[test]
    fn a_good_delivery_passes_with_its_headers() {
        let body = br#"{"a":1}"#;
        let ok = check("POST", &signed("msg_1", NOW, body), body).unwrap();
        assert_eq!(ok.headers.id, "msg_1");
        assert_eq!(ok.headers.timestamp_raw, NOW.to_string());
        assert_eq!(ok.headers.content_type.as_deref(), Some("application/json"));
        assert_eq!(ok.body, body);
    }

    #[test]
    fn each_bad_input_has_its_code() {
        let body = br#"{"a":1}"#;
        let good = signed("msg_1", NOW, body);
        assert_eq!(code(check("GET", &good, body)), "method_not_allowed");
        assert_eq!(check("PUT", &good, body).unwrap_err().header("allow"), Some("POST"));
        assert_eq!(code(check("POST", &good[1..], body)), "missing_header");
        let mut bad_ts = good.clone();
        bad_ts[1].1 = format!("{NOW}abc");
        assert_eq!(code(check("POST", &bad_ts, body)), "invalid_header");
        assert_eq!(code(check("POST", &good, br#"{"a":2}"#)), "invalid_signature");
        assert_eq!(
            code(check("POST", &signed("msg_1", NOW - 301, body), body)),
            "timestamp_too_old"
        );
        assert_eq!(
            code(check("POST", &signed("msg_1", NOW + 301, body), body)),
            "timestamp_too_new"
        );
        assert_eq!(code(check("POST", &signed("msg_1", NOW - 300, body), body)), "ok");
        let big = vec![b'x'; 65];
        assert_eq!(
            code(check("POST", &signed("msg_1", NOW, &big), &big)),
            "payload_too_large"
        );
    }

    #[test]
    fn declared_length_is_checked_before_the_body() {
        assert_eq!(check_declared_length(Some("65"), 64).unwrap_err().status(), 413);
        assert!(check_declared_length(Some("64"), 64).is_ok());
        assert!(check_declared_length(Some("junk"), 64).is_ok());
        assert!(check_declared_length(None, 64).is_ok());
        let body = b"{}";
        let mut h = signed("msg_1", NOW, body);
        h.push(("content-length".into(), "100000".into()));
        assert_eq!(code(check("POST", &h, body)), "payload_too_large");
    }

    #[test]
    fn messages_hold_no_secret_or_signature() {
        let body = b"{}";
        let mut h = signed("msg_1", NOW, body);
        let sig = h[2].1.clone();
        h[2].1 = format!("v1,{}", "A".repeat(43) + "=");
        let err = check("POST", &h, body).unwrap_err();
        assert!(!err.message.contains(&sig[3..]) && !err.body_json().contains("MfKQ9r8G"));
    }
}
