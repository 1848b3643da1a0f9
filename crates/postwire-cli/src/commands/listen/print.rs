//! How `postwire listen` shows one delivery: a human line (time, type, `webhook-id`,
//! verdict or local status, latency) or, with `--json`, one JSON object per line for
//! scripts; with `--print-body`, the body too. Shared by the local inspector and the
//! Worker relay so both read the same.

use std::io::Write;

use postwire_core::{Clock, SystemClock};
use serde::Serialize;
use serde_json::Value;

/// How deliveries are printed (`--json`, `--print-body`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Output {
    /// One JSON object per line instead of the human line.
    pub json: bool,
    /// The body too: indented JSON below the human line, or a `body` field.
    pub body: bool,
}

/// The most of a body `--print-body` shows; the rest is cut with a note.
const MAX_PRINTED_BODY: usize = 64 * 1024;

/// One delivery as printed. Fields that a mode does not know are `None` and left out of
/// the JSON line.
#[derive(Debug, Clone, Serialize)]
pub struct DeliveryLine {
    /// When it arrived, RFC 3339 in UTC with milliseconds.
    pub time: String,
    /// The `webhook-id` header, as received (at most 256 characters kept).
    pub id: String,
    /// The body's `type` field when the body is a JSON object with one.
    #[serde(rename = "type")]
    pub event_type: Option<String>,
    /// Inspector: `ok`, or the stable error code of postwire-core (`invalid_signature`…).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// Inspector: the error's message when verification failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The status answered: by the inspector itself, or by the local endpoint (relay).
    pub status: Option<u16>,
    /// Relay: how long the local endpoint took, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    /// Relay: why the local endpoint gave no status (connection refused, timeout…).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// With `--print-body`: the body as JSON, or as text when it is not JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
}

impl DeliveryLine {
    /// A line stamped now, for `id` and `body` (the type is read from the body; the body
    /// itself is kept when `output.body`).
    pub fn new(id: &str, body: &[u8], output: Output) -> Self {
        let parsed: Option<Value> = serde_json::from_slice(body).ok();
        DeliveryLine {
            time: SystemClock.now().to_string(),
            id: id.chars().take(256).collect(),
            event_type: parsed.as_ref().and_then(event_type),
            verdict: None,
            detail: None,
            status: None,
            latency_ms: None,
            error: None,
            body: output.body.then(|| printed_body(parsed, body)),
        }
    }

    /// Writes the line to standard output, as JSON or for people, and flushes it so a
    /// pipe sees each delivery at once.
    pub fn print(&self, output: Output) {
        let text = if output.json {
            serde_json::to_string(self).unwrap_or_default()
        } else {
            self.human()
        };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }

    /// The human form: `time  type  id  verdict/status  latency`.
    pub fn human(&self) -> String {
        let mut s = format!(
            "{}  {:<24}  {}",
            self.time,
            self.event_type.as_deref().unwrap_or("-"),
            if self.id.is_empty() { "-" } else { &self.id }
        );
        if let Some(verdict) = &self.verdict {
            s.push_str("  ");
            s.push_str(verdict);
        }
        match (self.status, &self.error) {
            (Some(status), _) => s.push_str(&format!("  {status}")),
            (None, Some(error)) => s.push_str(&format!("  {error}")),
            (None, None) => {}
        }
        if let Some(ms) = self.latency_ms {
            s.push_str(&format!("  {ms} ms"));
        }
        if let Some(detail) = &self.detail {
            s.push_str(&format!("  ({detail})"));
        }
        if let Some(body) = &self.body {
            let text = match body {
                Value::String(text) => text.clone(),
                json => serde_json::to_string_pretty(json).unwrap_or_default(),
            };
            for line in text.lines() {
                s.push_str("\n    ");
                s.push_str(line);
            }
        }
        s
    }
}

/// The body's top-level `type` string, when the body is a JSON object that has one.
fn event_type(value: &Value) -> Option<String> {
    let t = value.get("type")?.as_str()?;
    Some(t.chars().take(128).collect())
}

/// The body as printed: its JSON when it parsed, else its text (invalid UTF-8 replaced),
/// cut at [`MAX_PRINTED_BODY`] bytes with a note.
fn printed_body(parsed: Option<Value>, body: &[u8]) -> Value {
    match parsed {
        Some(json) if body.len() <= MAX_PRINTED_BODY => json,
        _ => {
            let shown = &body[..body.len().min(MAX_PRINTED_BODY)];
            let mut text = String::from_utf8_lossy(shown).into_owned();
            if body.len() > MAX_PRINTED_BODY {
                text.push_str(&format!("… ({} bytes in all)", body.len()));
            }
            Value::String(text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_comes_from_a_json_object_only() {
        let output = Output::default();
        let line = DeliveryLine::new("msg_1", br#"{"type":"post.published"}"#, output);
        assert_eq!(line.event_type.as_deref(), Some("post.published"));
        for body in [&b"[1]"[..], b"\xff", br#"{"type":3}"#] {
            assert_eq!(DeliveryLine::new("msg_1", body, output).event_type, None);
        }
        assert!(line.time.ends_with('Z') && line.time.len() == 24, "{}", line.time);
    }

    #[test]
    fn print_body_shows_json_indented_and_other_bodies_as_text() {
        let output = Output {
            json: false,
            body: true,
        };
        let line = DeliveryLine::new("msg_1", br#"{"type":"post.failed","data":{"n":1}}"#, output);
        assert!(line.human().contains("\n    {\n      \"data\": {"), "{}", line.human());
        let text = DeliveryLine::new("msg_1", b"not json \xff", output);
        assert_eq!(text.body, Some(Value::String("not json \u{fffd}".into())));
        let big = vec![b'x'; MAX_PRINTED_BODY + 1];
        let cut = DeliveryLine::new("msg_1", &big, output).body.unwrap();
        assert!(
            cut.as_str()
                .unwrap()
                .ends_with(&format!("… ({} bytes in all)", MAX_PRINTED_BODY + 1))
        );
        assert_eq!(DeliveryLine::new("msg_1", b"{}", Output::default()).body, None);
    }
}
