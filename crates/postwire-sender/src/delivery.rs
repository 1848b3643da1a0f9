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
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{CONTENT_TYPE, RETRY_AFTER, USER_AGENT};
use http::{HeaderValue, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use postwire_core::{ID_HEADER, SIGNATURE_HEADER, Signer, TIMESTAMP_HEADER, UnixTime};

use crate::config::SenderConfig;
use crate::error::SenderError;
use crate::model::{AttemptErrorKind, AttemptOutcome};
use crate::ssrf::{AddressPolicy, Blocked, CheckedResolver};

/// Checked URLs kept by [`HttpDeliverer`]; past this many the cache starts over.
const MAX_CHECKED_URLS: usize = 4096;

type Connector = hyper_rustls::HttpsConnector<HttpConnector<CheckedResolver>>;

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
#[derive(Clone)]
pub struct HttpDeliverer {
    client: Client<Connector, Full<Bytes>>,
    policy: AddressPolicy,
    timeout: Duration,
    max_body: usize,
    user_agent: HeaderValue,
    /// URL text -> the result of checking it (form, scheme, literal address): the same
    /// answer every time for a given text and policy, so it is worked out once.
    checked: Arc<Mutex<std::collections::HashMap<String, Result<Uri, Blocked>>>>,
}

impl std::fmt::Debug for HttpDeliverer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpDeliverer")
            .field("policy", &self.policy)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl HttpDeliverer {
    /// A deliverer with the timeouts, address policy and user agent of `config`.
    pub fn new(config: &SenderConfig) -> Result<Self, SenderError> {
        let client_error =
            |e: &dyn std::fmt::Display| SenderError::storage(format!("could not build the HTTP client: {e}"));
        let mut http = HttpConnector::new_with_resolver(CheckedResolver::new(config.address_policy));
        http.enforce_http(false); // the TLS layer wraps it; the policy decides the schemes
        http.set_nodelay(true);
        http.set_connect_timeout(Some(config.connect_timeout.min(config.attempt_timeout)));
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_platform_verifier(rustls::crypto::aws_lc_rs::default_provider())
            .map_err(|e| client_error(&e))?
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            // Many subscriptions may share one host: keep a connection for every attempt in flight.
            .pool_max_idle_per_host(config.max_in_flight.max(1))
            .pool_timer(TokioTimer::new())
            .timer(TokioTimer::new())
            .build(https);
        let user_agent = HeaderValue::from_str(&config.user_agent).map_err(|e| client_error(&e))?;
        Ok(HttpDeliverer {
            client,
            policy: config.address_policy,
            timeout: config.attempt_timeout,
            max_body: config.max_response_body,
            user_agent,
            checked: Arc::default(),
        })
    }

    /// `url` checked against the policy (see [`AddressPolicy::check_url`]), as a URI.
    fn check(&self, url: &str) -> Result<Uri, Blocked> {
        let mut cache = self.checked.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(known) = cache.get(url) {
            return known.clone();
        }
        let checked = self.policy.check_url(url).and_then(|u| {
            u.as_str()
                .parse::<Uri>()
                .map_err(|_| Blocked::InvalidUrl("the URL is not a valid HTTP request target"))
        });
        if cache.len() >= MAX_CHECKED_URLS {
            cache.clear();
        }
        cache.insert(url.to_owned(), checked.clone());
        checked
    }

    /// Sends one attempt of `body` to `url`, signed with `signer`, stamped `timestamp`.
    /// The body is shared with the request, not copied.
    pub async fn attempt(
        &self,
        url: &str,
        event_id: &str,
        body: Bytes,
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
        let uri = match self.check(url) {
            Ok(u) => u,
            Err(Blocked::Address { .. }) => return report(error(AttemptErrorKind::BlockedAddress), None),
            Err(_) => return report(error(AttemptErrorKind::InvalidUrl), None),
        };
        let signature = match signer.sign(event_id, timestamp, &body) {
            Ok(s) => s,
            Err(_) => return report(error(AttemptErrorKind::Protocol), None),
        };
        let request = Request::post(uri)
            .header(ID_HEADER, event_id)
            .header(TIMESTAMP_HEADER, timestamp.as_secs())
            .header(SIGNATURE_HEADER, signature.into_string())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .header(USER_AGENT, self.user_agent.clone())
            .body(Full::new(body));
        let request = match request {
            Ok(r) => r,
            // An event id that is not a valid header value cannot be sent.
            Err(_) => return report(error(AttemptErrorKind::Protocol), None),
        };
        let deadline = tokio::time::Instant::now() + self.timeout;
        let response = match tokio::time::timeout_at(deadline, self.client.request(request)).await {
            Err(_) => return report(error(AttemptErrorKind::Timeout), None),
            Ok(Err(e)) => return report(error(classify(&e)), None),
            Ok(Ok(r)) => r,
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| crate::schedule::parse_retry_after(v, unix_millis_now()));
        let mut body = response.into_body();
        let mut body_prefix = Vec::new();
        while body_prefix.len() < self.max_body {
            match tokio::time::timeout_at(deadline, body.frame()).await {
                Ok(Some(Ok(frame))) => {
                    if let Some(chunk) = frame.data_ref() {
                        let room = self.max_body - body_prefix.len();
                        body_prefix.extend_from_slice(&chunk[..chunk.len().min(room)]);
                    }
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

fn classify(e: &hyper_util::client::legacy::Error) -> AttemptErrorKind {
    let mut source = e.source();
    while let Some(s) = source {
        if let Some(blocked) = s.downcast_ref::<Blocked>() {
            return match blocked {
                Blocked::Unresolvable => AttemptErrorKind::Dns,
                _ => AttemptErrorKind::BlockedAddress,
            };
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::TimedOut
        {
            return AttemptErrorKind::Timeout;
        }
        if let Some(h) = s.downcast_ref::<hyper::Error>()
            && h.is_parse()
        {
            return AttemptErrorKind::Protocol;
        }
        source = s.source();
    }
    // Refused, reset or closed connections, TLS failures, and anything else on the way.
    AttemptErrorKind::Connection
}
