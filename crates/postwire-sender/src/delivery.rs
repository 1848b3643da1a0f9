//! One HTTP attempt: sign, `POST`, classify the answer.
//!
//! The request carries the event body unchanged on every attempt, `webhook-id` (the event
//! id), `webhook-timestamp` (this attempt's time), `webhook-signature` (one entry per
//! active secret), `content-type: application/json` and the configured `user-agent`.
//!
//! A `2xx` status within the attempt timeout is a success. Anything else is a failure:
//! another status (every `3xx` included: redirects are never followed), a timeout, a
//! connection or DNS error, or an address refused by [`crate::ssrf`]. At most
//! `max_response_body` bytes of the body are read, within what is left of the timeout;
//! reading the body never changes the outcome. The status and headers decide it.

use std::error::Error as _;
use std::time::{Duration, Instant};

use postwire_core::{ID_HEADER, SIGNATURE_HEADER, Signer, TIMESTAMP_HEADER, UnixTime};

use crate::config::SenderConfig;
use crate::error::SenderError;
use crate::model::{AttemptErrorKind, AttemptOutcome};
use crate::ssrf::{AddressPolicy, Blocked, CheckedResolver};

/// What an attempt got, with what the scheduler needs.
#[derive(Debug, Clone)]
pub struct AttemptReport {
    /// The outcome to record.
    pub outcome: AttemptOutcome,
    /// The response's `Retry-After`, if any.
    pub retry_after: Option<Duration>,
    /// Real time from sending to the outcome.
    pub duration: Duration,
}

/// Sends deliveries over HTTP(S). One per sender; it keeps a connection pool.
#[derive(Debug, Clone)]
pub struct HttpDeliverer {
    client: reqwest::Client,
    policy: AddressPolicy,
    timeout: Duration,
    max_body: usize,
}

impl HttpDeliverer {
    /// A deliverer with the timeouts, address policy and user agent of `config`.
    pub fn new(config: &SenderConfig) -> Result<Self, SenderError> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(CheckedResolver::new(config.address_policy))
            .connect_timeout(config.connect_timeout.min(config.attempt_timeout))
            // Many subscriptions may share one host: keep a connection for every attempt in flight.
            .pool_max_idle_per_host(config.max_in_flight.max(1))
            .tcp_nodelay(true)
            .http1_only()
            .user_agent(config.user_agent.clone())
            .build()
            .map_err(|e| SenderError::storage(format!("could not build the HTTP client: {e}")))?;
        Ok(HttpDeliverer {
            client,
            policy: config.address_policy,
            timeout: config.attempt_timeout,
            max_body: config.max_response_body,
        })
    }

    /// Sends one attempt of `body` to `url`, signed with `signer`, stamped `timestamp`.
    /// The body is moved into the request, not copied.
    pub async fn attempt(
        &self,
        url: &str,
        event_id: &str,
        body: String,
        signer: &Signer,
        timestamp: UnixTime,
    ) -> AttemptReport {
        let start = Instant::now();
        let report = |outcome, retry_after| AttemptReport {
            outcome,
            retry_after,
            duration: start.elapsed(),
        };
        let error = |kind| AttemptOutcome::Error { error: kind };
        let url = match self.policy.check_url(url) {
            Ok(u) => u,
            Err(Blocked::Address { .. }) => return report(error(AttemptErrorKind::BlockedAddress), None),
            Err(_) => return report(error(AttemptErrorKind::InvalidUrl), None),
        };
        let signature = match signer.sign(event_id, timestamp, body.as_bytes()) {
            Ok(s) => s,
            Err(_) => return report(error(AttemptErrorKind::Protocol), None),
        };
        let request = self
            .client
            .post(url)
            .header(ID_HEADER, event_id)
            .header(TIMESTAMP_HEADER, timestamp.as_secs().to_string())
            .header(SIGNATURE_HEADER, signature.into_string())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .timeout(self.timeout);
        let deadline = tokio::time::Instant::now() + self.timeout;
        let mut response = match tokio::time::timeout_at(deadline, request.send()).await {
            Err(_) => return report(error(AttemptErrorKind::Timeout), None),
            Ok(Err(e)) => return report(error(classify(&e)), None),
            Ok(Ok(r)) => r,
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| crate::schedule::parse_retry_after(v, unix_millis_now()));
        let mut body_prefix = Vec::new();
        while body_prefix.len() < self.max_body {
            match tokio::time::timeout_at(deadline, response.chunk()).await {
                Ok(Ok(Some(chunk))) => {
                    let room = self.max_body - body_prefix.len();
                    body_prefix.extend_from_slice(&chunk[..chunk.len().min(room)]);
                }
                _ => break,
            }
        }
        let body_prefix = String::from_utf8_lossy(&body_prefix).into_owned();
        report(AttemptOutcome::Response { status, body_prefix }, retry_after)
    }
}

/// Real wall-clock milliseconds, only for turning an HTTP-date `Retry-After` into a delay.
fn unix_millis_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn classify(e: &reqwest::Error) -> AttemptErrorKind {
    let mut source = e.source();
    while let Some(s) = source {
        // `io::Error` hides a custom inner error from `source()`; look inside it too.
        let inner = s
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|i| i.downcast_ref::<Blocked>());
        if let Some(blocked) = s.downcast_ref::<Blocked>().or(inner) {
            return match blocked {
                Blocked::Unresolvable => AttemptErrorKind::Dns,
                _ => AttemptErrorKind::BlockedAddress,
            };
        }
        source = s.source();
    }
    // The HTTP client wraps resolver errors in a type that hides them from `source()`;
    // its debug form still names them. (Covered by the SSRF integration test.)
    let debug = format!("{e:?}");
    if debug.contains("DnsError") {
        return if debug.contains("Address { ip:") {
            AttemptErrorKind::BlockedAddress
        } else {
            AttemptErrorKind::Dns
        };
    }
    if e.is_timeout() {
        AttemptErrorKind::Timeout
    } else if e.is_connect() {
        AttemptErrorKind::Connection
    } else if e.is_builder() {
        AttemptErrorKind::InvalidUrl
    } else if e.is_request() || e.is_body() {
        AttemptErrorKind::Connection
    } else {
        AttemptErrorKind::Protocol
    }
}
