//! Every answer the Worker gives, as plain data: a status, a stable code, a message, extra
//! headers, and the JSON body of the spec (`{"statusCode", "code", "message"}`).
//!
//! Keeping replies as data (not `worker::Response`) lets the whole decision logic be tested
//! natively; the edge module turns a [`Reply`] into a response at the last moment. Messages
//! name what is wrong and what to do; they never contain secrets, signatures or body bytes.

use postwire_core::{Error as CoreError, ErrorCode};

/// Header on a `200` answer to a repeat of an already delivered id.
pub const DUPLICATE_HEADER: &str = "x-postwire-duplicate";
/// Header carrying the origin's status code when the origin refused a delivery.
pub const ORIGIN_STATUS_HEADER: &str = "x-postwire-origin-status";

/// The stable codes of the Worker's answers. Six are postwire-core's (`missing_header`,
/// `invalid_header`, `invalid_payload`, the two timestamp codes, `invalid_signature`); the
/// others are about HTTP, the origin and the de-duplication store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReplyCode {
    /// 200: forwarded; the origin answered `2xx`; the id is now recorded as delivered.
    Delivered,
    /// 200: the id was delivered before; not forwarded again (inbox mode: the id was
    /// accepted before).
    Duplicate,
    /// 202 (inbox mode): verified and stored at the edge; it will be delivered to the origin.
    Accepted,
    /// 400: a `webhook-*` header is missing.
    MissingHeader,
    /// 400: a `webhook-*` header is malformed.
    InvalidHeader,
    /// 400: the request could not be read (e.g. the client broke off while sending the body).
    InvalidRequest,
    /// 400: the signature is valid but the body is not a JSON object (or, with
    /// `VALIDATE_EVENTS = "postwire"`, not a postwire event); never forwarded, never recorded.
    InvalidPayload,
    /// 401: `webhook-timestamp` is older than the tolerance.
    TimestampTooOld,
    /// 401: `webhook-timestamp` is further ahead than the tolerance.
    TimestampTooNew,
    /// 401: no signature matches any configured secret.
    InvalidSignature,
    /// 405: only `POST` is accepted.
    MethodNotAllowed,
    /// 404: no such path (every admin path without the right token), or no such delivery.
    NotFound,
    /// 409: the same id is being forwarded right now; retry later.
    DeliveryInProgress,
    /// 413: the body is over the configured limit.
    PayloadTooLarge,
    /// 500: the Worker's settings are missing or malformed.
    WorkerMisconfigured,
    /// 502: the origin answered, but not `2xx` (redirects are not followed).
    OriginRejected,
    /// 502: the origin could not be reached.
    OriginUnavailable,
    /// 503: the de-duplication store could not be read or written before forwarding.
    DedupUnavailable,
    /// 504: the origin did not answer within the forward timeout.
    OriginTimeout,
    /// 503 (inbox mode): the delivery could not be stored; it was not accepted, retry later.
    InboxUnavailable,
    /// 503 (`LISTEN_TOKEN` set, forward mode): no listener is connected, or it went away
    /// before answering; not acknowledged, retry later.
    ListenerAbsent,
    /// 503 (`WEBHOOK_KEYS_URL` set): no key to verify with, the key set not fetched (or not
    /// usable) yet; not forwarded, retry later.
    KeySetUnavailable,
}

impl ReplyCode {
    /// Every code, for documentation and exhaustive tests.
    pub const ALL: [ReplyCode; 22] = [
        ReplyCode::Delivered,
        ReplyCode::Duplicate,
        ReplyCode::Accepted,
        ReplyCode::NotFound,
        ReplyCode::InboxUnavailable,
        ReplyCode::MissingHeader,
        ReplyCode::InvalidHeader,
        ReplyCode::InvalidRequest,
        ReplyCode::InvalidPayload,
        ReplyCode::TimestampTooOld,
        ReplyCode::TimestampTooNew,
        ReplyCode::InvalidSignature,
        ReplyCode::MethodNotAllowed,
        ReplyCode::DeliveryInProgress,
        ReplyCode::PayloadTooLarge,
        ReplyCode::WorkerMisconfigured,
        ReplyCode::OriginRejected,
        ReplyCode::OriginUnavailable,
        ReplyCode::DedupUnavailable,
        ReplyCode::OriginTimeout,
        ReplyCode::ListenerAbsent,
        ReplyCode::KeySetUnavailable,
    ];

    /// The stable string form, e.g. `"invalid_signature"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ReplyCode::Delivered => "delivered",
            ReplyCode::Duplicate => "duplicate",
            ReplyCode::Accepted => "accepted",
            ReplyCode::NotFound => "not_found",
            ReplyCode::InboxUnavailable => "inbox_unavailable",
            ReplyCode::ListenerAbsent => "listener_absent",
            ReplyCode::KeySetUnavailable => ErrorCode::KeySetUnavailable.as_str(),
            ReplyCode::MissingHeader => ErrorCode::MissingHeader.as_str(),
            ReplyCode::InvalidHeader => ErrorCode::InvalidHeader.as_str(),
            ReplyCode::InvalidRequest => "invalid_request",
            ReplyCode::InvalidPayload => ErrorCode::InvalidPayload.as_str(),
            ReplyCode::TimestampTooOld => ErrorCode::TimestampTooOld.as_str(),
            ReplyCode::TimestampTooNew => ErrorCode::TimestampTooNew.as_str(),
            ReplyCode::InvalidSignature => ErrorCode::InvalidSignature.as_str(),
            ReplyCode::MethodNotAllowed => "method_not_allowed",
            ReplyCode::DeliveryInProgress => "delivery_in_progress",
            ReplyCode::PayloadTooLarge => "payload_too_large",
            ReplyCode::WorkerMisconfigured => "worker_misconfigured",
            ReplyCode::OriginRejected => "origin_rejected",
            ReplyCode::OriginUnavailable => "origin_unavailable",
            ReplyCode::DedupUnavailable => "dedup_unavailable",
            ReplyCode::OriginTimeout => "origin_timeout",
        }
    }

    /// The HTTP status that goes with the code.
    pub const fn status(self) -> u16 {
        match self {
            ReplyCode::Delivered | ReplyCode::Duplicate => 200,
            ReplyCode::Accepted => 202,
            ReplyCode::NotFound => 404,
            ReplyCode::MissingHeader
            | ReplyCode::InvalidHeader
            | ReplyCode::InvalidRequest
            | ReplyCode::InvalidPayload => 400,
            ReplyCode::TimestampTooOld | ReplyCode::TimestampTooNew | ReplyCode::InvalidSignature => 401,
            ReplyCode::MethodNotAllowed => 405,
            ReplyCode::DeliveryInProgress => 409,
            ReplyCode::PayloadTooLarge => 413,
            ReplyCode::WorkerMisconfigured => 500,
            ReplyCode::OriginRejected | ReplyCode::OriginUnavailable => 502,
            ReplyCode::DedupUnavailable
            | ReplyCode::InboxUnavailable
            | ReplyCode::ListenerAbsent
            | ReplyCode::KeySetUnavailable => 503,
            ReplyCode::OriginTimeout => 504,
        }
    }
}

/// One answer of the Worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// What happened.
    pub code: ReplyCode,
    /// For the person reading logs or the sender's delivery log. No secret material.
    pub message: String,
    /// Headers beyond `content-type` (e.g. `allow`, `retry-after`, the duplicate marker).
    pub headers: Vec<(&'static str, String)>,
    /// Things the operator should know that do not change the answer (e.g. a KV write that
    /// failed after the origin accepted). Logged by the Worker, not sent.
    pub warnings: Vec<String>,
}

impl Reply {
    /// A reply with `code` and `message` and no extra headers.
    pub fn new(code: ReplyCode, message: impl Into<String>) -> Self {
        Reply {
            code,
            message: message.into(),
            headers: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Adds a response header.
    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// Adds a warning for the log.
    pub fn with_warning(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        self.code.status()
    }

    /// The JSON body: `{"statusCode": …, "code": "…", "message": "…"}`.
    pub fn body_json(&self) -> String {
        serde_json::json!({
            "statusCode": self.status(),
            "code": self.code.as_str(),
            "message": self.message,
        })
        .to_string()
    }

    /// The value of a header of this reply, if set.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl From<&CoreError> for Reply {
    /// postwire-core's error, with its code and message (which never hold key material).
    fn from(err: &CoreError) -> Self {
        let code = match err.code() {
            ErrorCode::MissingHeader => ReplyCode::MissingHeader,
            ErrorCode::TimestampTooOld => ReplyCode::TimestampTooOld,
            ErrorCode::TimestampTooNew => ReplyCode::TimestampTooNew,
            ErrorCode::InvalidSignature => ReplyCode::InvalidSignature,
            // A provider's body without the fields its id and type come from.
            ErrorCode::InvalidPayload => ReplyCode::InvalidPayload,
            // InvalidHeader, and codes that verification does not produce (a new code of a
            // later core release is still a bad request, not a success).
            _ => ReplyCode::InvalidHeader,
        };
        Reply::new(code, err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_statuses_match_the_issue() {
        let mut seen = std::collections::HashSet::new();
        for code in ReplyCode::ALL {
            assert!(seen.insert(code.as_str()), "{code:?}");
        }
        assert_eq!(ReplyCode::MethodNotAllowed.status(), 405);
        assert_eq!(ReplyCode::PayloadTooLarge.status(), 413);
        assert_eq!(ReplyCode::InvalidSignature.status(), 401);
        assert_eq!(ReplyCode::TimestampTooOld.status(), 401);
        assert_eq!(ReplyCode::MissingHeader.status(), 400);
        // Nothing that was not accepted by the origin (or stored by the inbox) is answered 2xx.
        for code in ReplyCode::ALL {
            let ok = matches!(code, ReplyCode::Delivered | ReplyCode::Duplicate | ReplyCode::Accepted);
            assert_eq!((200..300).contains(&code.status()), ok, "{code:?}");
        }
    }

    #[test]
    fn body_is_the_spec_error_shape() {
        let r = Reply::new(ReplyCode::PayloadTooLarge, "too \"big\"");
        let v: serde_json::Value = serde_json::from_str(&r.body_json()).unwrap();
        assert_eq!(v["statusCode"], 413);
        assert_eq!(v["code"], "payload_too_large");
        assert_eq!(v["message"], "too \"big\"");
        assert_eq!(v.as_object().unwrap().len(), 3);
    }

    #[test]
    fn core_errors_keep_their_codes() {
        let cases = [
            (CoreError::MissingHeader { name: "webhook-id" }, 400, "missing_header"),
            (
                CoreError::InvalidHeader {
                    name: "webhook-id",
                    reason: "empty",
                },
                400,
                "invalid_header",
            ),
            (
                CoreError::TimestampTooOld {
                    age_secs: 301,
                    tolerance_secs: 300,
                },
                401,
                "timestamp_too_old",
            ),
            (
                CoreError::TimestampTooNew {
                    ahead_secs: 301,
                    tolerance_secs: 300,
                },
                401,
                "timestamp_too_new",
            ),
            (
                CoreError::InvalidSignature {
                    detail: postwire_core::SignatureDetail::NoMatch,
                },
                401,
                "invalid_signature",
            ),
        ];
        for (err, status, code) in cases {
            let r = Reply::from(&err);
            assert_eq!((r.status(), r.code.as_str()), (status, code));
        }
    }
}
