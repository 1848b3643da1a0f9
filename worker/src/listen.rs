//! Listen mode's logic (`postwire listen --worker …`): the Worker relays verified
//! deliveries down a WebSocket to a developer's machine instead of to the origin. Here is
//! what can be decided without the Workers runtime, so that it is tested natively: the
//! path, the frames on the socket and how a relay's result becomes an [`OriginOutcome`].
//! The `ListenObject` Durable Object that holds the socket is in `edge::listen_object`.
//!
//! It is off unless the `LISTEN_TOKEN` secret is set. Then `GET /_postwire/listen` with
//! `authorization: Bearer <LISTEN_TOKEN>` (compared in constant time, before the upgrade)
//! and `upgrade: websocket` opens the socket; anything else on that path is the same
//! `404 not_found` as any unknown admin path. With the token set, the listener takes the
//! origin's place in both delivery modes: forward mode answers the sender with the
//! listener's result, inbox mode's pump delivers to the listener. With no listener
//! connected the result is [`OriginOutcome::ListenerAbsent`] (`503` + `retry-after`
//! to the sender in forward mode; a retry later in inbox mode), so nothing is lost.
//!
//! Frames (JSON text):
//!
//! - Worker → listener, one per delivery: `{"type":"delivery","correlation_id":"…",
//!   "id":"<webhook-id>","headers":{"webhook-id":…,"webhook-timestamp":…,
//!   "webhook-signature":…,"content-type":…},"body":"<UTF-8 text>"}` (a body that is not
//!   UTF-8 comes as `"body_base64"` instead of `"body"`).
//! - listener → Worker, one per delivery: `{"type":"answer","correlation_id":"…",
//!   "status":204}`, or `{"type":"answer","correlation_id":"…","status":null,
//!   "error":"…"}` when the local endpoint gave no answer.
//!
//! A second listener replaces the first: the object closes the older socket with code
//! [`REPLACED_CLOSE_CODE`], and its unanswered deliveries fail (`503`, retried).

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::forward::OriginOutcome;

/// The WebSocket endpoint of listen mode.
pub const LISTEN_PATH: &str = "/_postwire/listen";
/// The Durable Object namespace binding of listen mode; its class is `ListenObject`.
pub const LISTEN_BINDING: &str = "LISTEN";
/// The WebSocket close code sent to a listener replaced by a newer one.
pub const REPLACED_CLOSE_CODE: u16 = 4001;
/// The longest a delivery waits for the listener's answer: the spec's 10 s.
pub const MAX_WAIT_MS: u64 = 10_000;
/// `retry-after` (seconds) answered when no listener is connected.
pub const RETRY_AFTER_SECS: u64 = 10;

/// One delivery, Worker → listener.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryFrame {
    /// Always `"delivery"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Names the delivery on this socket; the answer carries it back.
    pub correlation_id: String,
    /// The `webhook-id`.
    pub id: String,
    /// The `webhook-*` headers and `content-type` as the origin would receive them.
    pub headers: BTreeMap<String, String>,
    /// The body, when it is UTF-8.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub body: Option<String>,
    /// The body in standard base64, when it is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub body_base64: Option<String>,
}

impl DeliveryFrame {
    /// The frame for one delivery.
    pub fn new(correlation_id: String, id: String, headers: BTreeMap<String, String>, body: Vec<u8>) -> Self {
        let (body, body_base64) = match String::from_utf8(body) {
            Ok(text) => (Some(text), None),
            Err(e) => (
                None,
                Some(base64::engine::general_purpose::STANDARD.encode(e.as_bytes())),
            ),
        };
        DeliveryFrame {
            kind: "delivery".to_owned(),
            correlation_id,
            id,
            headers,
            body,
            body_base64,
        }
    }
}

/// One answer, listener → Worker, as sent.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
struct AnswerFrame {
    #[serde(rename = "type")]
    kind: String,
    correlation_id: String,
    #[serde(default)]
    status: Option<u16>,
}

/// What the listener said of one delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListenerAnswer {
    /// The local endpoint answered this status.
    Status(u16),
    /// The local endpoint gave no answer (refused, reset, timed out on the listener's side).
    NoAnswer,
}

/// Reads a listener's text frame: the correlation id and the answer, or `None` for
/// anything else (ignored: a listener cannot make the Worker fail).
pub fn parse_answer(text: &str) -> Option<(String, ListenerAnswer)> {
    let frame: AnswerFrame = serde_json::from_str(text).ok()?;
    if frame.kind != "answer" || frame.correlation_id.is_empty() || frame.correlation_id.len() > 128 {
        return None;
    }
    let answer = match frame.status {
        Some(status) if (100..=599).contains(&status) => ListenerAnswer::Status(status),
        Some(_) => return None,
        None => ListenerAnswer::NoAnswer,
    };
    Some((frame.correlation_id, answer))
}

/// The result of relaying one delivery, as the `ListenObject` reports it to the Worker
/// (JSON: `{"result":"answered","status":204}`, `{"result":"absent"}`…).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum RelayResult {
    /// The listener reported the local endpoint's status.
    Answered {
        /// The local status.
        status: u16,
    },
    /// The local endpoint gave no answer.
    NoAnswer,
    /// No listener connected, or it went away before answering.
    Absent,
    /// No answer within the wait.
    TimedOut,
}

impl RelayResult {
    /// What the Worker makes of it: the listener stands in for the origin.
    pub fn outcome(self) -> OriginOutcome {
        match self {
            RelayResult::Answered { status } => OriginOutcome::from_status(status),
            RelayResult::NoAnswer => OriginOutcome::Unreachable,
            RelayResult::Absent => OriginOutcome::ListenerAbsent,
            RelayResult::TimedOut => OriginOutcome::TimedOut,
        }
    }
}

/// How long a delivery waits for the listener: the forward timeout, at most [`MAX_WAIT_MS`].
pub fn wait_ms(forward_timeout_ms: u64) -> u64 {
    forward_timeout_ms.min(MAX_WAIT_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_frame_carries_text_bodies_as_text_and_others_as_base64() {
        let headers = BTreeMap::from([("webhook-id".to_owned(), "msg_1".to_owned())]);
        let frame = DeliveryFrame::new("c1".into(), "msg_1".into(), headers.clone(), br#"{"a":1}"#.to_vec());
        let json = serde_json::to_value(&frame).unwrap();
        assert_eq!(json["type"], "delivery");
        assert_eq!(json["correlation_id"], "c1");
        assert_eq!(json["body"], r#"{"a":1}"#);
        assert!(json.get("body_base64").is_none());
        let binary = DeliveryFrame::new("c2".into(), "msg_1".into(), headers, vec![0xff, 0x00]);
        let json = serde_json::to_value(&binary).unwrap();
        assert_eq!(json["body_base64"], "/wA=");
        assert!(json.get("body").is_none());
    }

    #[test]
    fn answers_are_read_strictly_and_anything_else_is_ignored() {
        assert_eq!(
            parse_answer(r#"{"type":"answer","correlation_id":"c1","status":204}"#),
            Some(("c1".into(), ListenerAnswer::Status(204)))
        );
        assert_eq!(
            parse_answer(r#"{"type":"answer","correlation_id":"c1","status":null,"error":"refused"}"#),
            Some(("c1".into(), ListenerAnswer::NoAnswer))
        );
        for bad in [
            "",
            "not json",
            "[]",
            r#"{"type":"hello","correlation_id":"c1","status":200}"#,
            r#"{"type":"answer","correlation_id":"","status":200}"#,
            r#"{"type":"answer","correlation_id":"c1","status":99}"#,
            r#"{"type":"answer","correlation_id":"c1","status":70000}"#,
            r#"{"type":"answer","correlation_id":"c1","status":"200"}"#,
        ] {
            assert_eq!(parse_answer(bad), None, "{bad}");
        }
        let long = format!(
            r#"{{"type":"answer","correlation_id":"{}","status":200}}"#,
            "c".repeat(129)
        );
        assert_eq!(parse_answer(&long), None);
    }

    #[test]
    fn relay_results_map_to_origin_outcomes() {
        assert_eq!(
            RelayResult::Answered { status: 204 }.outcome(),
            OriginOutcome::Accepted { status: 204 }
        );
        assert_eq!(
            RelayResult::Answered { status: 500 }.outcome(),
            OriginOutcome::Refused { status: 500 }
        );
        assert_eq!(RelayResult::NoAnswer.outcome(), OriginOutcome::Unreachable);
        assert_eq!(RelayResult::Absent.outcome(), OriginOutcome::ListenerAbsent);
        assert_eq!(RelayResult::TimedOut.outcome(), OriginOutcome::TimedOut);
        let json = serde_json::to_string(&RelayResult::Answered { status: 202 }).unwrap();
        assert_eq!(json, r#"{"result":"answered","status":202}"#);
        assert_eq!(
            serde_json::from_str::<RelayResult>(r#"{"result":"absent"}"#).unwrap(),
            RelayResult::Absent
        );
        assert_eq!(wait_ms(8000), 8000);
        assert_eq!(wait_ms(60_000), 10_000);
    }
}
