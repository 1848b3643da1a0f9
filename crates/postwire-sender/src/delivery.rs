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

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HOST, RETRY_AFTER, USER_AGENT};
use http::{HeaderValue, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use postwire_core::{ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, UnixTime};

use crate::config::SenderConfig;
use crate::connection_pool::{ConnectionPool, Destination};
use crate::error::SenderError;
use crate::model::{AttemptErrorKind, AttemptOutcome};
use crate::signer::{DeliverySigner, KeyCustody};
use crate::ssrf::{AddressPolicy, Blocked, CheckedResolver};

/// Checked URLs kept by [`HttpDeliverer`]; past this many the cache starts over.
const MAX_CHECKED_URLS: usize = 4096;

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
    pool: Arc<ConnectionPool>,
    policy: AddressPolicy,
    timeout: Duration,
    max_body: usize,
    user_agent: HeaderValue,
    /// Signs with the `v1a` keys kept outside this process ([`crate::signer`]).
    custody: Arc<dyn KeyCustody>,
    /// URL text -> the result of checking it (form, scheme, literal address): the same
    /// answer every time for a given text and policy, so it is worked out once.
    checked: Arc<Mutex<std::collections::HashMap<String, Result<Target, Blocked>>>>,
}

/// A checked URL, and what a request to it carries.
#[derive(Debug, Clone)]
struct Target {
    /// Where to connect.
    destination: Destination,
    /// The request target in origin form (path and query).
    path: Uri,
    /// The `Host` header: the authority without user information (which is refused).
    host: HeaderValue,
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
        // Many subscriptions may share one host: keep a connection for every attempt in flight.
        let pool = Arc::new(ConnectionPool::new(https, config.max_in_flight));
        let user_agent = HeaderValue::from_str(&config.user_agent).map_err(|e| client_error(&e))?;
        Ok(HttpDeliverer {
            pool,
            policy: config.address_policy,
            timeout: config.attempt_timeout,
            max_body: config.max_response_body,
            user_agent,
            custody: config.key_custody.clone(),
            checked: Arc::default(),
        })
    }

    /// `url` checked against the policy (see [`AddressPolicy::check_url`]).
    fn check(&self, url: &str) -> Result<Target, Blocked> {
        let mut cache = self.checked.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(known) = cache.get(url) {
            return known.clone();
        }
        let invalid = || Blocked::InvalidUrl("the URL is not a valid HTTP request target");
        let checked = self.policy.check_url(url).and_then(|u| {
            let uri = u.as_str().parse::<Uri>().map_err(|_| invalid())?;
            let path = uri
                .path_and_query()
                .map_or("/", |p| p.as_str())
                .parse::<Uri>()
                .map_err(|_| invalid())?;
            let host = uri
                .authority()
                .and_then(|a| HeaderValue::from_str(a.as_str()).ok())
                .ok_or_else(invalid)?;
            Ok(Target {
                destination: Destination::new(uri),
                path,
                host,
            })
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
        signer: &DeliverySigner,
        timestamp: UnixTime,
    ) -> AttemptReport {
        let start = Instant::now();
        let report = |outcome, retry_after| AttemptReport {
            outcome,
            retry_after,
            duration: start.elapsed(),
        };
        let error = |kind| AttemptOutcome::Error { error: kind };
        let target = match self.check(url) {
            Ok(t) => t,
            Err(Blocked::Address { .. }) => return report(error(AttemptErrorKind::BlockedAddress), None),
            Err(_) => return report(error(AttemptErrorKind::InvalidUrl), None),
        };
        // A key in a hardware module signs there, within the attempt's time; a module
        // that does not sign fails the attempt (retried), and nothing is sent.
        let signed = if signer.uses_a_module() {
            tokio::time::timeout(self.timeout, signer.sign(&*self.custody, event_id, timestamp, &body))
                .await
                .unwrap_or(Err(crate::signer::SignError::Timeout))
        } else {
            signer.sign(&*self.custody, event_id, timestamp, &body).await
        };
        let signature = match signed {
            Ok(s) => s,
            Err(_) if signer.uses_a_module() => return report(error(AttemptErrorKind::Signing), None),
            // An event id that cannot be signed cannot be sent either.
            Err(_) => return report(error(AttemptErrorKind::Protocol), None),
        };
        let request = Request::post(target.path)
            .header(HOST, target.host)
            .header(ID_HEADER, event_id)
            .header(TIMESTAMP_HEADER, timestamp.as_secs())
            .header(SIGNATURE_HEADER, signature)
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .header(USER_AGENT, self.user_agent.clone())
            .body(Full::new(body));
        let request = match request {
            Ok(r) => r,
            // An event id that is not a valid header value cannot be sent.
            Err(_) => return report(error(AttemptErrorKind::Protocol), None),
        };
        let deadline = tokio::time::Instant::now() + self.timeout;
        let (response, mut connection) =
            match tokio::time::timeout_at(deadline, self.pool.send(&target.destination, request)).await {
                Err(_) => return report(error(AttemptErrorKind::Timeout), None),
                Ok(Err(e)) => return report(error(classify(&*e)), None),
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
        // The connection is reused only if the body is read to its end.
        let mut ended = false;
        while body_prefix.len() < self.max_body {
            match tokio::time::timeout_at(deadline, connection.drive(body.frame())).await {
                Ok(Some(Some(Ok(frame)))) => {
                    if let Some(chunk) = frame.data_ref() {
                        let room = self.max_body - body_prefix.len();
                        body_prefix.extend_from_slice(&chunk[..chunk.len().min(room)]);
                    }
                }
                Ok(Some(None)) => {
                    ended = true;
                    break;
                }
                _ => break,
            }
        }
        if ended {
            self.pool.put_back(connection);
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

fn classify(e: &(dyn std::error::Error + 'static)) -> AttemptErrorKind {
    let mut source = Some(e);
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use postwire_core::Secret;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    /// What a raw loopback receiver saw: connections accepted, and each request's head.
    #[derive(Default)]
    struct Seen {
        connections: AtomicUsize,
        heads: Mutex<Vec<String>>,
    }

    /// A receiver that answers every request with `response` and, if `close_after_each`
    /// is set, closes the connection that long after answering (as a server whose
    /// keep-alive has run out would).
    async fn raw_receiver(response: &'static str, close_after_each: Option<Duration>) -> (String, Arc<Seen>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook?x=1", listener.local_addr().unwrap());
        let seen = Arc::new(Seen::default());
        let state = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                state.connections.fetch_add(1, Ordering::SeqCst);
                let state = state.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    loop {
                        // One request: the head, then `content-length` bytes of body.
                        let head_end = loop {
                            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                                break i + 4;
                            }
                            let mut chunk = [0u8; 4096];
                            match stream.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        };
                        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
                        let length: usize = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse().unwrap())
                            })
                            .unwrap_or(0);
                        while buf.len() < head_end + length {
                            let mut chunk = [0u8; 4096];
                            match stream.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        }
                        buf.drain(..head_end + length);
                        state.heads.lock().unwrap().push(head);
                        if stream.write_all(response.as_bytes()).await.is_err() {
                            return;
                        }
                        if let Some(after) = close_after_each {
                            tokio::time::sleep(after).await;
                            return;
                        }
                    }
                });
            }
        });
        (url, seen)
    }

    async fn attempt(deliverer: &HttpDeliverer, url: &str) -> AttemptReport {
        let signer = DeliverySigner::new(vec![Secret::generate().unwrap()], vec![]).unwrap();
        let body = Bytes::from_static(br#"{"type":"test"}"#);
        deliverer
            .attempt(url, "msg_1", body, &signer, UnixTime::from_secs(1_800_000_000))
            .await
    }

    fn deliverer(max_response_body: usize) -> HttpDeliverer {
        let config = SenderConfig {
            max_response_body,
            ..SenderConfig::default()
        }
        .dangerously_allow_insecure_local_urls();
        HttpDeliverer::new(&config).unwrap()
    }

    const OK: &str = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";

    #[tokio::test]
    async fn requests_carry_an_origin_form_target_and_a_host_and_share_one_connection() {
        let (url, seen) = raw_receiver(OK, None).await;
        let d = deliverer(1024);
        for _ in 0..3 {
            let report = attempt(&d, &url).await;
            assert!(report.outcome.is_success(), "{:?}", report.outcome);
        }
        let host = url.trim_start_matches("http://").trim_end_matches("/hook?x=1");
        for head in seen.heads.lock().unwrap().iter() {
            assert!(head.starts_with("POST /hook?x=1 HTTP/1.1\r\n"), "{head}");
            assert!(
                head.to_ascii_lowercase().contains(&format!("\r\nhost: {host}\r\n")),
                "{head}"
            );
        }
        assert_eq!(seen.heads.lock().unwrap().len(), 3);
        assert_eq!(seen.connections.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_connection_the_receiver_closed_while_idle_is_replaced() {
        // Closed right after the answer, or later, while the connection sits in the pool.
        for close_after in [Duration::ZERO, Duration::from_millis(50)] {
            let (url, seen) = raw_receiver(OK, Some(close_after)).await;
            let d = deliverer(1024);
            for _ in 0..3 {
                let report = attempt(&d, &url).await;
                assert!(report.outcome.is_success(), "{:?}", report.outcome);
                // Let the receiver's close arrive before the next attempt takes the connection.
                tokio::time::sleep(close_after + Duration::from_millis(100)).await;
            }
            assert_eq!(seen.heads.lock().unwrap().len(), 3);
            assert_eq!(seen.connections.load(Ordering::SeqCst), 3);
        }
    }

    #[tokio::test]
    async fn a_response_not_read_to_its_end_does_not_leave_its_connection_for_reuse() {
        const LONG: &str = "HTTP/1.1 200 OK\r\ncontent-length: 64\r\n\r\n\
                            0123456789012345678901234567890123456789012345678901234567890123";
        let (url, seen) = raw_receiver(LONG, None).await;
        let d = deliverer(16);
        for _ in 0..2 {
            match attempt(&d, &url).await.outcome {
                AttemptOutcome::Response { status, body_prefix } => {
                    assert_eq!((status, body_prefix.as_str()), (200, "0123456789012345"));
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(seen.connections.load(Ordering::SeqCst), 2);
    }
}
