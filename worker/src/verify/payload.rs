//! What a verified body must look like before it is forwarded.
//!
//! A Standard Webhooks payload is a JSON object. A body with a valid signature that is empty,
//! not JSON, or JSON but not an object (an array, a string, a number...) is answered `400
//! invalid_payload`: never forwarded, never recorded, so the sender's delivery log shows the
//! fault instead of the origin receiving something it cannot parse. The check runs after the
//! signature (an unsigned body is `401` whatever it holds) and before the de-duplication
//! store (a rejected body costs no store access).
//!
//! Three policies, chosen by two settings (see [`crate::config`]):
//!
//! | policy | setting | accepts |
//! | --- | --- | --- |
//! | [`PayloadPolicy::AnyBytes`] | `ALLOW_NON_JSON = "true"` | any body, as before |
//! | [`PayloadPolicy::JsonObject`] | default | a JSON object (any keys) |
//! | [`PayloadPolicy::PostwireEvent`] | `VALIDATE_EVENTS = "postwire"` | a postwire event envelope of a known type whose `id` equals `webhook-id` |
//!
//! Answers never quote the body: they name what is wrong and where (line and column), not
//! the bytes found there.

use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::reply::{Reply, ReplyCode};

/// Which bodies are forwarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadPolicy {
    /// Any bytes, including an empty body (`ALLOW_NON_JSON = "true"`).
    AnyBytes,
    /// A JSON object: the Standard Webhooks payload shape (the default).
    JsonObject,
    /// A postwire event (`postwire_core::Event`) whose `id` is the `webhook-id`
    /// (`VALIDATE_EVENTS = "postwire"`).
    PostwireEvent,
}

/// Checks `body` (of the delivery with `webhook_id`) against `policy`; `Err` is the `400
/// invalid_payload` answer.
///
/// ```
/// use postwire_worker::verify::payload::{PayloadPolicy, check_payload};
/// assert!(check_payload(PayloadPolicy::JsonObject, "msg_1", br#" {"a": [1, 2]} "#).is_ok());
/// assert_eq!(check_payload(PayloadPolicy::JsonObject, "msg_1", b"[1]").unwrap_err().status(), 400);
/// assert!(check_payload(PayloadPolicy::AnyBytes, "msg_1", b"").is_ok());
/// ```
pub fn check_payload(policy: PayloadPolicy, webhook_id: &str, body: &[u8]) -> Result<(), Reply> {
    match policy {
        PayloadPolicy::AnyBytes => Ok(()),
        PayloadPolicy::JsonObject => check_json_object(body),
        PayloadPolicy::PostwireEvent => {
            check_json_object(body)?;
            let event = postwire_core::Event::from_json(body).map_err(|_| {
                invalid("the body is not a postwire event: unknown `type`, or a field missing or of the wrong type")
            })?;
            if event.id() != webhook_id {
                return Err(invalid("the event's `id` is not the webhook-id header"));
            }
            Ok(())
        }
    }
}

/// The body is one JSON value, and that value is an object. Parses without building the
/// value (serde's `IgnoredAny`), so the cost is one pass over the bytes.
fn check_json_object(body: &[u8]) -> Result<(), Reply> {
    let first = body.iter().find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    match first {
        None => return Err(invalid("the body is empty; a webhook payload is a JSON object")),
        Some(b'{') => {}
        Some(_) => {
            return Err(invalid(
                "the body is not a JSON object (an array, string, number or not JSON at all)",
            ));
        }
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    IgnoredAny::deserialize(&mut de).and_then(|_| de.end()).map_err(|e| {
        invalid(format!(
            "the body is not valid JSON (at line {} column {})",
            e.line(),
            e.column()
        ))
    })
}

fn invalid(message: impl Into<String>) -> Reply {
    Reply::new(ReplyCode::InvalidPayload, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(policy: PayloadPolicy, body: &[u8]) -> &'static str {
        match check_payload(policy, "msg_1", body) {
            Ok(()) => "ok",
            Err(r) => r.code.as_str(),
        }
    }

    const EVENT: &str = r#"{"id":"msg_1","type":"webhook.test","createdAt":"2026-11-22T10:00:00.000Z","workspaceId":"ws_1","data":{"message":"hello"}}"#;

    #[test]
    fn json_objects_pass_everything_else_is_invalid_payload() {
        use PayloadPolicy::JsonObject as J;
        for ok in [
            &b"{}"[..],
            b" \r\n\t{\"a\":1} \n",
            br#"{"a":{"b":[1,"x",null,true]}}"#,
            EVENT.as_bytes(),
        ] {
            assert_eq!(code(J, ok), "ok", "{:?}", String::from_utf8_lossy(ok));
        }
        for bad in [
            &b""[..],
            b"   \n",
            b"not json",
            b"[1,2]",
            b"\"a string\"",
            b"42",
            b"null",
            b"{",
            b"{\"a\":1} trailing",
            b"{\"a\":1}{}",
            b"{'a':1}",
            b"\xef\xbb\xbf{}",
            &[0xff, 0xfe, 0x00, 0x80],
        ] {
            assert_eq!(code(J, bad), "invalid_payload", "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn any_bytes_passes_everything() {
        for body in [&b""[..], b"[1]", &[0xff, 0x00]] {
            assert_eq!(code(PayloadPolicy::AnyBytes, body), "ok");
        }
    }

    #[test]
    fn postwire_events_must_have_a_known_shape_and_the_header_s_id() {
        use PayloadPolicy::PostwireEvent as P;
        assert_eq!(code(P, EVENT.as_bytes()), "ok");
        assert_eq!(code(P, b"{}"), "invalid_payload");
        assert_eq!(
            code(P, EVENT.replace("webhook.test", "webhook.nope").as_bytes()),
            "invalid_payload"
        );
        assert_eq!(
            code(P, EVENT.replace("\"message\"", "\"msg\"").as_bytes()),
            "invalid_payload"
        );
        let other = check_payload(P, "msg_2", EVENT.as_bytes()).unwrap_err();
        assert!(other.message.contains("webhook-id"), "{}", other.message);
    }

    #[test]
    fn answers_never_quote_the_body() {
        for body in [&b"{\"secret\": sekrit}"[..], br#"{"id":"msg_1","type":"sekrit"}"#] {
            for policy in [PayloadPolicy::JsonObject, PayloadPolicy::PostwireEvent] {
                if let Err(r) = check_payload(policy, "msg_1", body) {
                    assert!(!r.body_json().contains("sekrit"), "{}", r.body_json());
                }
            }
        }
    }

    #[test]
    fn deep_nesting_never_crashes() {
        // Valid JSON, however deep, is an object here (serde's IgnoredAny does not recurse);
        // the typed parse has serde_json's depth limit, and says no instead of overflowing.
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(code(PayloadPolicy::JsonObject, deep.as_bytes()), "ok");
        assert_eq!(code(PayloadPolicy::PostwireEvent, deep.as_bytes()), "invalid_payload");
        let unclosed = "{\"a\":".to_owned() + &"[".repeat(100_000);
        assert_eq!(code(PayloadPolicy::JsonObject, unclosed.as_bytes()), "invalid_payload");
    }
}
