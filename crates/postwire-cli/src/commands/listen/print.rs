//! How `postwire listen` shows one delivery: a human line (time, type, `webhook-id`,
//! verdict or local status, latency) or, with `--json`, one JSON object per line for
//! scripts. Shared by the local inspector and the Worker relay so both read the same.

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

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
}

impl DeliveryLine {
    /// A line stamped now, for `id` and `body` (the type is read from the body).
    pub fn new(id: &str, body: &[u8]) -> Self {
        DeliveryLine {
            time: rfc3339_now(),
            id: id.chars().take(256).collect(),
            event_type: event_type(body),
            verdict: None,
            detail: None,
            status: None,
            latency_ms: None,
            error: None,
        }
    }

    /// Writes the line to standard output, as JSON or for people, and flushes it so a
    /// pipe sees each delivery at once.
    pub fn print(&self, json: bool) {
        let text = if json {
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
        s
    }
}

/// The body's top-level `type` string, when the body is a JSON object that has one.
fn event_type(body: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let t = value.get("type")?.as_str()?;
    Some(t.chars().take(128).collect())
}

/// The system clock as RFC 3339 in UTC, with milliseconds.
pub fn rfc3339_now() -> String {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    rfc3339(since.as_secs() as i64, since.subsec_millis())
}

/// Unix seconds (and milliseconds) as `YYYY-MM-DDTHH:MM:SS.mmmZ` (the civil-from-days
/// algorithm; no calendar crate for one line of output).
fn rfc3339(secs: i64, millis: u32) -> String {
    let days = secs.div_euclid(86_400);
    let in_day = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        in_day / 3600,
        in_day % 3600 / 60,
        in_day % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_matches_known_instants() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_614_265_330, 7), "2021-02-25T15:02:10.007Z");
        assert_eq!(rfc3339(951_782_400, 999), "2000-02-29T00:00:00.999Z");
        assert_eq!(rfc3339(4_102_444_799, 0), "2099-12-31T23:59:59.000Z");
    }

    #[test]
    fn the_type_comes_from_a_json_object_only() {
        assert_eq!(
            event_type(br#"{"type":"post.published"}"#).as_deref(),
            Some("post.published")
        );
        assert_eq!(event_type(b"[1]"), None);
        assert_eq!(event_type(b"\xff"), None);
        assert_eq!(event_type(br#"{"type":3}"#), None);
    }
}
