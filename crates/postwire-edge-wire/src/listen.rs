//! Listen mode's wire format: `postwire listen --worker …` holds a WebSocket to the Worker's
//! [`LISTEN_PATH`], and verified deliveries come down it instead of going to the origin.
//!
//! The frames are JSON text, one object each, told apart by `"type"`:
//!
//! - Worker → listener ([`WorkerFrame`]): first [`Hello`], once per connection, with the
//!   Worker's wait (`{"type":"hello","wait_ms":8000}`); then one [`Delivery`] per delivery
//!   (`{"type":"delivery","correlation_id":"…","id":"<webhook-id>","headers":{…},
//!   "body":"<UTF-8 text>"}`, or `"body_base64"` for a body that is not UTF-8).
//! - listener → Worker ([`ListenerFrame`]): one [`Answer`] per delivery, with the same
//!   correlation id: `{"type":"answer","correlation_id":"…","status":204}`, or
//!   `{"type":"answer","correlation_id":"…","status":null,"error":"…"}` when the local
//!   endpoint gave no answer.
//!
//! **The timing rule.** The Worker waits at most [`Hello::wait_ms`] for each answer (its
//! forward timeout, never more than [`MAX_WAIT_MS`]), then answers the sender with a
//! timeout. The listener gives its local endpoint [`local_timeout_ms`] of that: the wait
//! less [`ANSWER_MARGIN_MS`], so that its answer, even "no answer in time", reaches the
//! Worker while the Worker still waits, and the sender always gets the listener's verdict.
//!
//! A newer listener replaces the older one, whose socket the Worker closes with
//! [`REPLACED_CLOSE_CODE`]; the older listener then stops instead of reconnecting.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// The WebSocket endpoint of listen mode on the Worker's host.
pub const LISTEN_PATH: &str = "/_postwire/listen";
/// The WebSocket close code the Worker sends to a listener replaced by a newer one.
pub const REPLACED_CLOSE_CODE: u16 = 4001;
/// The longest the Worker waits for a listener's answer: the spec's 10 s, the sender's
/// own timeout. A [`Hello`] never announces more.
pub const MAX_WAIT_MS: u64 = 10_000;
/// How much sooner than the Worker's wait the listener gives up on its local endpoint: the
/// time its answer needs to travel back to the Worker (at most half the wait, for very
/// short waits).
pub const ANSWER_MARGIN_MS: u64 = 1_000;
/// The longest correlation id an [`Answer`] may carry.
pub const MAX_CORRELATION_ID_LEN: usize = 128;

/// How long the listener's local endpoint may take when the Worker waits `wait_ms` (taken
/// from [`Hello::wait_ms`], capped at [`MAX_WAIT_MS`]): the wait less [`ANSWER_MARGIN_MS`],
/// or half the wait when that is shorter than twice the margin. Never zero for a non-zero wait.
pub fn local_timeout_ms(wait_ms: u64) -> u64 {
    let wait = wait_ms.min(MAX_WAIT_MS);
    wait - ANSWER_MARGIN_MS.min(wait / 2)
}

/// Why a frame was refused. Each has a stable [`code`](WireError::code); none carries the
/// frame's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// Not JSON, not an object, an unknown `"type"`, or a field of the wrong type.
    MalformedFrame,
    /// A correlation id that is empty or longer than [`MAX_CORRELATION_ID_LEN`].
    InvalidCorrelationId,
    /// A status outside `100..=599`.
    InvalidStatus,
    /// A `body_base64` that is not standard base64.
    InvalidBody,
}

impl WireError {
    /// The stable code, e.g. `"malformed_frame"`.
    pub const fn code(self) -> &'static str {
        match self {
            WireError::MalformedFrame => "malformed_frame",
            WireError::InvalidCorrelationId => "invalid_correlation_id",
            WireError::InvalidStatus => "invalid_status",
            WireError::InvalidBody => "invalid_body",
        }
    }
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self {
            WireError::MalformedFrame => "the frame is not a known JSON frame",
            WireError::InvalidCorrelationId => "the correlation id is empty or too long",
            WireError::InvalidStatus => "the status is not an HTTP status (100 to 599)",
            WireError::InvalidBody => "body_base64 is not standard base64",
        };
        write!(f, "{what} ({})", self.code())
    }
}

impl std::error::Error for WireError {}

/// A frame from the Worker to the listener.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WorkerFrame {
    /// The first frame of every connection.
    Hello(Hello),
    /// One delivery to relay.
    Delivery(Delivery),
}

impl WorkerFrame {
    /// Reads a text frame.
    pub fn parse(text: &str) -> Result<Self, WireError> {
        serde_json::from_str(text).map_err(|_| WireError::MalformedFrame)
    }

    /// The frame as the text sent on the socket.
    pub fn to_text(&self) -> String {
        // A map of strings and numbers always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The Worker's greeting: how long it waits for each answer on this connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// How long the Worker waits for the answer to each delivery, in milliseconds.
    pub wait_ms: u64,
}

impl Hello {
    /// How long the listener's local endpoint may take on this connection
    /// ([`local_timeout_ms`] of the wait).
    pub fn local_timeout_ms(&self) -> u64 {
        local_timeout_ms(self.wait_ms)
    }
}

/// One delivery, Worker → listener.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    /// Names the delivery on this socket; the answer carries it back.
    pub correlation_id: String,
    /// The `webhook-id`.
    pub id: String,
    /// The `webhook-*` headers and `content-type` as the origin would receive them
    /// (lower-case names).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The body, when it is UTF-8.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub body: Option<String>,
    /// The body in standard base64, when it is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub body_base64: Option<String>,
}

impl Delivery {
    /// The frame for one delivery: a UTF-8 body as text, any other in base64.
    pub fn new(correlation_id: String, id: String, headers: BTreeMap<String, String>, body: Vec<u8>) -> Self {
        let (body, body_base64) = match String::from_utf8(body) {
            Ok(text) => (Some(text), None),
            Err(e) => (
                None,
                Some(base64::engine::general_purpose::STANDARD.encode(e.as_bytes())),
            ),
        };
        Delivery {
            correlation_id,
            id,
            headers,
            body,
            body_base64,
        }
    }

    /// The body's bytes, exactly as the sender signed them (empty when the frame has none).
    pub fn body_bytes(&self) -> Result<Vec<u8>, WireError> {
        match (&self.body, &self.body_base64) {
            (Some(text), _) => Ok(text.as_bytes().to_vec()),
            (None, Some(b64)) => base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|_| WireError::InvalidBody),
            (None, None) => Ok(Vec::new()),
        }
    }
}

/// A frame from the listener to the Worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ListenerFrame {
    /// The answer to one delivery.
    Answer(Answer),
}

impl ListenerFrame {
    /// Reads a text frame: only a well-formed [`Answer`] (a correlation id of 1 to
    /// [`MAX_CORRELATION_ID_LEN`] bytes, a status of `100..=599` or `null`) is accepted.
    pub fn parse(text: &str) -> Result<Self, WireError> {
        let frame: ListenerFrame = serde_json::from_str(text).map_err(|_| WireError::MalformedFrame)?;
        let ListenerFrame::Answer(answer) = &frame;
        answer.check()?;
        Ok(frame)
    }

    /// The frame as the text sent on the socket.
    pub fn to_text(&self) -> String {
        // Strings and numbers always serialize.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// One answer, listener → Worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    /// The delivery's correlation id.
    pub correlation_id: String,
    /// The local endpoint's status; `null` when it gave none.
    #[serde(default)]
    pub status: Option<u16>,
    /// Why there is no status (for people; the Worker does not interpret it).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

/// What the listener said of one delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalOutcome {
    /// The local endpoint answered this status.
    Status(u16),
    /// The local endpoint gave no answer (refused, reset, or not within the listener's
    /// [`local_timeout_ms`]).
    NoAnswer,
}

impl Answer {
    /// The answer carrying the local endpoint's `status`.
    pub fn status(correlation_id: String, status: u16) -> Self {
        Answer {
            correlation_id,
            status: Some(status),
            error: None,
        }
    }

    /// The answer saying the local endpoint gave none, and why.
    pub fn no_answer(correlation_id: String, error: String) -> Self {
        Answer {
            correlation_id,
            status: None,
            error: Some(error),
        }
    }

    /// What the answer says.
    pub fn outcome(&self) -> LocalOutcome {
        match self.status {
            Some(status) => LocalOutcome::Status(status),
            None => LocalOutcome::NoAnswer,
        }
    }

    fn check(&self) -> Result<(), WireError> {
        if self.correlation_id.is_empty() || self.correlation_id.len() > MAX_CORRELATION_ID_LEN {
            return Err(WireError::InvalidCorrelationId);
        }
        match self.status {
            Some(status) if !(100..=599).contains(&status) => Err(WireError::InvalidStatus),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_carries_text_bodies_as_text_and_others_as_base64() {
        let headers = BTreeMap::from([("webhook-id".to_owned(), "msg_1".to_owned())]);
        let frame = WorkerFrame::Delivery(Delivery::new(
            "c1".into(),
            "msg_1".into(),
            headers.clone(),
            br#"{"a":1}"#.to_vec(),
        ));
        let json: serde_json::Value = serde_json::from_str(&frame.to_text()).unwrap();
        assert_eq!(json["type"], "delivery");
        assert_eq!(json["correlation_id"], "c1");
        assert_eq!(json["headers"]["webhook-id"], "msg_1");
        assert_eq!(json["body"], r#"{"a":1}"#);
        assert!(json.get("body_base64").is_none());
        assert_eq!(WorkerFrame::parse(&frame.to_text()).unwrap(), frame);

        let binary = Delivery::new("c2".into(), "msg_1".into(), headers, vec![0xff, 0x00]);
        let json: serde_json::Value = serde_json::from_str(&WorkerFrame::Delivery(binary.clone()).to_text()).unwrap();
        assert_eq!(json["body_base64"], "/wA=");
        assert!(json.get("body").is_none());
        assert_eq!(binary.body_bytes().unwrap(), vec![0xff, 0x00]);
    }

    #[test]
    fn a_body_that_is_not_base64_is_a_typed_error() {
        let mut frame = Delivery::new("c".into(), "msg_1".into(), BTreeMap::new(), vec![0xff]);
        frame.body_base64 = Some("not base64!".into());
        assert_eq!(frame.body_bytes(), Err(WireError::InvalidBody));
        assert_eq!(WireError::InvalidBody.code(), "invalid_body");
    }

    #[test]
    fn the_hello_announces_the_wait_and_the_listener_answers_within_it_less_the_margin() {
        let hello = WorkerFrame::Hello(Hello { wait_ms: 8000 });
        assert_eq!(hello.to_text(), r#"{"type":"hello","wait_ms":8000}"#);
        let WorkerFrame::Hello(read) = WorkerFrame::parse(&hello.to_text()).unwrap() else {
            panic!("not a hello")
        };
        assert_eq!(read.local_timeout_ms(), 8000 - ANSWER_MARGIN_MS);
        // Every wait leaves the answer time to travel, and the listener some time to ask.
        for wait in [1, 2, 10, 999, 1000, 1999, 2000, 4000, 9000, 10_000, 60_000, u64::MAX] {
            let (capped, local) = (wait.min(MAX_WAIT_MS), local_timeout_ms(wait));
            assert!(local >= 1 && local <= capped, "{wait} → {local}");
            assert!(capped < 2 || local < capped, "{wait} → {local}");
            assert!(capped - local <= ANSWER_MARGIN_MS, "{wait} → {local}");
        }
        assert_eq!(local_timeout_ms(4000), 3000);
        assert_eq!(local_timeout_ms(60_000), MAX_WAIT_MS - ANSWER_MARGIN_MS);
        assert_eq!(local_timeout_ms(1000), 500);
        assert_eq!(local_timeout_ms(0), 0);
    }

    #[test]
    fn answers_are_read_strictly_and_anything_else_is_a_typed_error() {
        let ok = ListenerFrame::parse(r#"{"type":"answer","correlation_id":"c1","status":204}"#).unwrap();
        let ListenerFrame::Answer(answer) = &ok;
        assert_eq!(answer.correlation_id, "c1");
        assert_eq!(answer.outcome(), LocalOutcome::Status(204));
        let none =
            ListenerFrame::parse(r#"{"type":"answer","correlation_id":"c1","status":null,"error":"refused"}"#).unwrap();
        let ListenerFrame::Answer(answer) = &none;
        assert_eq!(answer.outcome(), LocalOutcome::NoAnswer);
        // What the listener sends reads back the same.
        for sent in [
            Answer::status("c9".into(), 500),
            Answer::no_answer("c9".into(), "no answer within 7 s".into()),
        ] {
            let frame = ListenerFrame::Answer(sent);
            assert_eq!(ListenerFrame::parse(&frame.to_text()).unwrap(), frame);
        }
        for (bad, error) in [
            ("", WireError::MalformedFrame),
            ("not json", WireError::MalformedFrame),
            ("[]", WireError::MalformedFrame),
            ("{}", WireError::MalformedFrame),
            (
                r#"{"type":"hello","correlation_id":"c1","status":200}"#,
                WireError::MalformedFrame,
            ),
            (
                r#"{"type":"answer","correlation_id":"c1","status":"200"}"#,
                WireError::MalformedFrame,
            ),
            (
                r#"{"type":"answer","correlation_id":"c1","status":70000}"#,
                WireError::MalformedFrame,
            ),
            (
                r#"{"type":"answer","correlation_id":"","status":200}"#,
                WireError::InvalidCorrelationId,
            ),
            (
                r#"{"type":"answer","correlation_id":"c1","status":99}"#,
                WireError::InvalidStatus,
            ),
            (
                r#"{"type":"answer","correlation_id":"c1","status":600}"#,
                WireError::InvalidStatus,
            ),
        ] {
            assert_eq!(ListenerFrame::parse(bad), Err(error), "{bad}");
        }
        let long = format!(
            r#"{{"type":"answer","correlation_id":"{}","status":200}}"#,
            "c".repeat(MAX_CORRELATION_ID_LEN + 1)
        );
        assert_eq!(ListenerFrame::parse(&long), Err(WireError::InvalidCorrelationId));
    }

    #[test]
    fn unknown_worker_frames_are_refused_not_guessed() {
        assert_eq!(WorkerFrame::parse(r#"{"type":"bye"}"#), Err(WireError::MalformedFrame));
        assert_eq!(
            WorkerFrame::parse(r#"{"type":"hello","wait_ms":-1}"#),
            Err(WireError::MalformedFrame)
        );
    }
}
