//! A scripted receiver on loopback: a real HTTP/1.1 server that records every request
//! (headers, body, arrival time) and answers as a handler says (status, delay, headers,
//! body), by the request and its number. Tests of the sender, the server and the
//! examples use it to play a receiver that fails, hangs or answers oddly.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use postwire_core::{Secret, UnixTime, Verifier};

/// One request a receiver got.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Its headers, in order.
    pub headers: Vec<(String, String)>,
    /// Its body.
    pub body: Vec<u8>,
    /// When it was read in full.
    pub at: Instant,
}

impl Recorded {
    /// A header's value, by name in any case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    /// The `webhook-id` header, or empty.
    pub fn id(&self) -> String {
        self.header("webhook-id").unwrap_or_default().to_owned()
    }
    /// The `webhook-timestamp` header, or -1.
    pub fn timestamp(&self) -> i64 {
        self.header("webhook-timestamp")
            .and_then(|t| t.parse().ok())
            .unwrap_or(-1)
    }
    /// The body as JSON; panics if it is not.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
    /// Verifies with postwire-core, at the request's own timestamp.
    pub fn verify(&self, secrets: &[Secret]) -> Result<postwire_core::Event, postwire_core::Error> {
        let v = Verifier::with_secrets(secrets.iter().cloned()).unwrap();
        v.verify_event(&self.headers, &self.body, UnixTime::from_secs(self.timestamp()))
    }
}

/// What a receiver answers.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Status code.
    pub status: u16,
    /// Wait before answering.
    pub delay: Duration,
    /// Headers.
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: String,
}

impl Reply {
    /// This status, at once, with no headers and an empty body.
    pub fn status(status: u16) -> Self {
        Reply {
            status,
            delay: Duration::ZERO,
            headers: vec![],
            body: String::new(),
        }
    }
    /// `200`.
    pub fn ok() -> Self {
        Reply::status(200)
    }
    /// Answers after this long.
    pub fn delay(mut self, d: Duration) -> Self {
        self.delay = d;
        self
    }
    /// With this header.
    pub fn header(mut self, k: &str, v: &str) -> Self {
        self.headers.push((k.into(), v.into()));
        self
    }
    /// With this body.
    pub fn body(mut self, b: impl Into<String>) -> Self {
        self.body = b.into();
        self
    }
}

type Handler = Arc<dyn Fn(&Recorded, usize) -> Reply + Send + Sync>;

/// A real HTTP/1.1 server on 127.0.0.1 that records every request.
pub struct Receiver {
    /// Where it listens.
    pub addr: SocketAddr,
    /// `http://<addr>/hook`.
    pub url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    /// Starts it on `127.0.0.1` (a free port); `handler` answers each request from what
    /// it recorded and its 0-based number. It stops when the `Receiver` is dropped.
    pub async fn start(handler: impl Fn(&Recorded, usize) -> Reply + Send + Sync + 'static) -> Receiver {
        let handler: Handler = Arc::new(handler);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let count = Arc::new(AtomicUsize::new(0));
        let (reqs, cnt) = (requests.clone(), count);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (handler, reqs, cnt) = (handler.clone(), reqs.clone(), cnt.clone());
                tokio::spawn(async move {
                    let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                        let (handler, reqs, cnt) = (handler.clone(), reqs.clone(), cnt.clone());
                        async move {
                            let headers = req
                                .headers()
                                .iter()
                                .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
                                .collect();
                            let body = req
                                .into_body()
                                .collect()
                                .await
                                .map(|b| b.to_bytes().to_vec())
                                .unwrap_or_default();
                            let rec = Recorded {
                                headers,
                                body,
                                at: Instant::now(),
                            };
                            let n = cnt.fetch_add(1, Ordering::SeqCst);
                            let reply = handler(&rec, n);
                            reqs.lock().unwrap().push(rec);
                            if !reply.delay.is_zero() {
                                tokio::time::sleep(reply.delay).await;
                            }
                            let mut resp = Response::builder().status(reply.status);
                            for (k, v) in &reply.headers {
                                resp = resp.header(k, v);
                            }
                            Ok::<_, Infallible>(resp.body(Full::new(Bytes::from(reply.body))).unwrap())
                        }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Receiver {
            addr,
            url: format!("http://{addr}/hook"),
            requests,
            task,
        }
    }

    /// Always `200 OK`.
    pub async fn succeeding() -> Receiver {
        Receiver::start(|_, _| Reply::ok().body("ok")).await
    }

    /// `500` for the first `n` requests, then `200`.
    pub async fn failing_first(n: usize) -> Receiver {
        Receiver::start(move |_, i| {
            if i < n {
                Reply::status(500).body("down")
            } else {
                Reply::ok()
            }
        })
        .await
    }

    /// Always `500`.
    pub async fn failing() -> Receiver {
        Receiver::start(|_, _| Reply::status(500)).await
    }

    /// Every request so far, in order of arrival.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// How many requests so far.
    pub fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    /// Waits until `n` requests arrived or `timeout` passed; whether they did.
    pub async fn wait_for_count(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.count() >= n {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        self.count() >= n
    }
}
