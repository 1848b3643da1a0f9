//! Keep-alive HTTP/1.1 connections to receivers, each used by one attempt at a time and
//! driven inside that attempt's task.
//!
//! hyper's pooled client (`hyper_util::client::legacy`) runs every connection as a task
//! of its own and hands each request to it over a channel, after a pool checkout: per
//! request the sender's side cost 1.5 times the receiver's (perf, 1 subscription). Here
//! an attempt takes an idle connection (or opens one through the checking connector,
//! see [`crate::ssrf`]), writes its request and reads the answer while polling the
//! connection itself, and puts the connection back once the response has been read to
//! its end. A response whose body is not read to the end (longer than the sender reads)
//! closes its connection.
//!
//! An idle connection is not polled, so a receiver closing it is noticed when it is next
//! taken: it is then dropped and the next one tried, and a request that was not written
//! goes out on another connection. Idle connections are closed after [`IDLE_TIMEOUT`],
//! and at most `max_idle_per_host` are kept per scheme and authority.

use std::collections::HashMap;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response, Uri};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use tower_service::Service;

use crate::ssrf::CheckedResolver;

/// What opens connections: TCP through the address-checking resolver, then TLS for
/// `https` URLs.
pub(crate) type Connector = hyper_rustls::HttpsConnector<HttpConnector<CheckedResolver>>;
type Io = hyper_rustls::MaybeHttpsStream<TokioIo<tokio::net::TcpStream>>;
/// Any error on the way to a response: connecting (with the resolver's [`Blocked`]
/// among its sources) or HTTP.
///
/// [`Blocked`]: crate::ssrf::Blocked
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How long an unused connection is kept open (as hyper's pooled client does).
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// One open connection: the handle requests go through, and the connection itself, which
/// makes progress only while polled.
pub(crate) struct Connection {
    sender: http1::SendRequest<Full<Bytes>>,
    conn: http1::Connection<Io, Full<Bytes>>,
    /// The connection future has completed: it must not be polled again or reused.
    closed: bool,
}

/// Where requests go: an absolute URI, and the key its connections are pooled under
/// (scheme and authority), worked out once per URL rather than once per request.
#[derive(Debug, Clone)]
pub(crate) struct Destination {
    uri: Uri,
    key: Arc<str>,
}

impl Destination {
    /// The destination of an absolute URI.
    pub(crate) fn new(uri: Uri) -> Self {
        let key = format!(
            "{}://{}",
            uri.scheme_str().unwrap_or(""),
            uri.authority().map(|a| a.as_str()).unwrap_or("")
        );
        Destination { uri, key: key.into() }
    }
}

/// A connection lent to one exchange, with the pool key it goes back under.
pub(crate) struct Lent {
    key: Arc<str>,
    connection: Connection,
}

impl Lent {
    /// Polls `fut` while driving the connection (a response body's frames arrive only
    /// while it is polled); `None` if the connection closed first.
    pub(crate) async fn drive<F: Future>(&mut self, fut: F) -> Option<F::Output> {
        let c = &mut self.connection;
        drive(&mut c.conn, &mut c.closed, pin!(fut)).await
    }
}

/// Polls `fut`, polling `conn` alongside until it completes. `None` if the connection
/// has closed and `fut` is still pending: only the connection could complete it, so it
/// never would.
async fn drive<F: Future>(
    conn: &mut http1::Connection<Io, Full<Bytes>>,
    closed: &mut bool,
    mut fut: Pin<&mut F>,
) -> Option<F::Output> {
    poll_fn(|cx| {
        if !*closed && Pin::new(&mut *conn).poll(cx).is_ready() {
            *closed = true;
        }
        match fut.as_mut().poll(cx) {
            Poll::Ready(out) => Poll::Ready(Some(out)),
            Poll::Pending if *closed => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// The error of an exchange whose connection closed before the response came.
fn closed_early() -> BoxError {
    "the connection closed before the response".into()
}

/// A connection waiting in the pool, and since when.
type IdleConnection = (Connection, Instant);

/// The idle connections, by `scheme://authority`.
pub(crate) struct ConnectionPool {
    connector: Connector,
    idle: Mutex<HashMap<Arc<str>, Vec<IdleConnection>>>,
    max_idle_per_host: usize,
}

impl ConnectionPool {
    /// An empty pool that opens connections with `connector`.
    pub(crate) fn new(connector: Connector, max_idle_per_host: usize) -> Self {
        ConnectionPool {
            connector,
            idle: Mutex::default(),
            max_idle_per_host: max_idle_per_host.max(1),
        }
    }

    /// Sends `request` to `to` (the request itself carries the origin-form target and
    /// the `Host` header) and returns the response head, with the connection it came on:
    /// read the body through [`Lent::drive`], then [`put_back`](Self::put_back).
    pub(crate) async fn send(
        &self,
        to: &Destination,
        mut request: Request<Full<Bytes>>,
    ) -> Result<(Response<Incoming>, Lent), BoxError> {
        loop {
            let (mut connection, reused) = match self.take(&to.key) {
                Some(c) => (c, true),
                None => (self.connect(&to.uri).await?, false),
            };
            let Connection { sender, conn, closed } = &mut connection;
            // Polling the connection first notices a close that came while it was idle
            // (the handle alone may still say it is ready).
            let ready = drive(conn, closed, pin!(poll_fn(|cx| sender.poll_ready(cx)))).await;
            match ready {
                Some(Ok(())) if !*closed => {}
                _ if reused => continue, // closed while idle: try the next one
                Some(Err(e)) => return Err(e.into()),
                _ => return Err(closed_early()),
            }
            let sent = drive(conn, closed, pin!(sender.try_send_request(request))).await;
            match sent {
                Some(Ok(response)) => {
                    let key = to.key.clone();
                    return Ok((response, Lent { key, connection }));
                }
                Some(Err(mut e)) => match e.take_message() {
                    // Not written: nothing reached the receiver, so it may go on another.
                    Some(unsent) if reused => request = unsent,
                    _ => return Err(e.into_error().into()),
                },
                None => return Err(closed_early()),
            }
        }
    }

    /// Keeps `lent` for a later request, if its connection can take one.
    pub(crate) fn put_back(&self, lent: Lent) {
        let Lent { key, connection } = lent;
        if connection.closed {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let list = idle.entry(key).or_default();
        // The oldest are at the front: drop those that have waited too long.
        let expired = list
            .iter()
            .take_while(|(_, since)| since.elapsed() >= IDLE_TIMEOUT)
            .count();
        list.drain(..expired);
        if list.len() < self.max_idle_per_host {
            list.push((connection, Instant::now()));
        }
    }

    /// The most recently used idle connection for `key` that has not waited too long.
    fn take(&self, key: &str) -> Option<Connection> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let list = idle.get_mut(key)?;
        let found = std::iter::from_fn(|| list.pop())
            .find(|(c, since)| !c.closed && since.elapsed() < IDLE_TIMEOUT)
            .map(|(c, _)| c);
        if list.is_empty() {
            idle.remove(key);
        }
        found
    }

    async fn connect(&self, uri: &Uri) -> Result<Connection, BoxError> {
        let mut connector = self.connector.clone();
        poll_fn(|cx| connector.poll_ready(cx)).await?;
        let io = connector.call(uri.clone()).await?;
        let (sender, conn) = http1::Builder::new().handshake(io).await?;
        Ok(Connection {
            sender,
            conn,
            closed: false,
        })
    }
}
