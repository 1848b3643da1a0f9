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
//!
//! Connections are boxed, so taking one out and putting it back moves a pointer rather
//! than the connection's buffers and TLS state; and a host's list of idle connections is
//! kept while it runs empty (at one busy subscription every connection is out at once,
//! and a list dropped then had to grow back from nothing, at a fresh allocation per
//! doubling). Lists are swept every [`SWEEP_EVERY`] instead: connections that waited
//! past [`IDLE_TIMEOUT`] are closed, and empty lists dropped, for hosts no attempt goes
//! to any more as well.

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

/// How often the idle lists of every host are swept (see the module doc).
const SWEEP_EVERY: Duration = Duration::from_secs(10);

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
    connection: Box<Connection>,
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

/// Idle connections (`C`: a boxed [`Connection`], or a stand-in in tests) by
/// `scheme://authority`, each list oldest first, with when each was put back.
struct Idle<C> {
    by_host: HashMap<Arc<str>, Vec<(C, Instant)>>,
    /// When every list was last swept.
    swept: Instant,
}

impl<C> Idle<C> {
    fn new(now: Instant) -> Self {
        Idle {
            by_host: HashMap::new(),
            swept: now,
        }
    }

    /// Keeps `c` under `key`, unless `max` are kept there already. Sweeps first if it is
    /// time to (see [`sweep`](Self::sweep)).
    fn put(&mut self, key: Arc<str>, c: C, now: Instant, max: usize) {
        self.sweep(now);
        let list = self.by_host.entry(key).or_default();
        if list.len() < max {
            list.push((c, now));
        }
    }

    /// The most recently put back connection under `key` that has not waited past
    /// [`IDLE_TIMEOUT`] and is `usable`; the ones above it in the list are dropped. The
    /// list stays, even if empty (see the module doc).
    fn take(&mut self, key: &str, now: Instant, usable: impl Fn(&C) -> bool) -> Option<C> {
        let list = self.by_host.get_mut(key)?;
        std::iter::from_fn(|| list.pop())
            .find(|(c, since)| usable(c) && now.duration_since(*since) < IDLE_TIMEOUT)
            .map(|(c, _)| c)
    }

    /// Drops every connection that has waited past [`IDLE_TIMEOUT`], and the lists left
    /// empty, if the last sweep was [`SWEEP_EVERY`] ago.
    fn sweep(&mut self, now: Instant) {
        if now.duration_since(self.swept) < SWEEP_EVERY {
            return;
        }
        self.swept = now;
        self.by_host.retain(|_, list| {
            let expired = list
                .iter()
                .take_while(|(_, since)| now.duration_since(*since) >= IDLE_TIMEOUT)
                .count();
            list.drain(..expired);
            !list.is_empty()
        });
    }
}

/// Idle connections, by `scheme://authority`, and what opens new ones.
pub(crate) struct ConnectionPool {
    connector: Connector,
    idle: Mutex<Idle<Box<Connection>>>,
    max_idle_per_host: usize,
}

impl ConnectionPool {
    /// An empty pool that opens connections with `connector`.
    pub(crate) fn new(connector: Connector, max_idle_per_host: usize) -> Self {
        ConnectionPool {
            connector,
            idle: Mutex::new(Idle::new(Instant::now())),
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
            let Connection { sender, conn, closed } = &mut *connection;
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
        idle.put(key, connection, Instant::now(), self.max_idle_per_host);
    }

    /// The most recently used idle connection for `key` that has not waited too long.
    fn take(&self, key: &str) -> Option<Box<Connection>> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        idle.take(key, Instant::now(), |c| !c.closed)
    }

    async fn connect(&self, uri: &Uri) -> Result<Box<Connection>, BoxError> {
        let mut connector = self.connector.clone();
        poll_fn(|cx| connector.poll_ready(cx)).await?;
        let io = connector.call(uri.clone()).await?;
        let (sender, conn) = http1::Builder::new().handshake(io).await?;
        Ok(Box::new(Connection {
            sender,
            conn,
            closed: false,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = 4;

    fn key(host: &str) -> Arc<str> {
        Arc::from(host)
    }

    #[test]
    fn the_most_recent_usable_connection_is_taken_and_an_emptied_list_stays() {
        let t0 = Instant::now();
        let mut idle = Idle::new(t0);
        for c in [1, 2, 3] {
            idle.put(key("a"), c, t0, MAX);
        }
        // 3 is not usable (closed while idle): dropped on the way to 2.
        assert_eq!(idle.take("a", t0, |c| *c != 3), Some(2));
        assert_eq!(idle.take("a", t0, |_| true), Some(1));
        assert_eq!(idle.take("a", t0, |_| true), None);
        assert!(idle.by_host.contains_key("a"), "kept for the next put_back");
        assert_eq!(idle.take("b", t0, |_| true), None);
    }

    #[test]
    fn at_most_max_are_kept_per_host_and_none_past_the_idle_timeout_is_taken() {
        let t0 = Instant::now();
        let mut idle = Idle::new(t0);
        for c in 0..MAX + 2 {
            idle.put(key("a"), c, t0, MAX);
        }
        assert_eq!(idle.by_host["a"].len(), MAX);
        let later = t0 + IDLE_TIMEOUT;
        assert_eq!(idle.take("a", later, |_| true), None);
    }

    #[test]
    fn a_sweep_every_few_seconds_closes_expired_connections_of_every_host_and_drops_empty_lists() {
        let t0 = Instant::now();
        let mut idle = Idle::new(t0);
        idle.put(key("old"), 1, t0, MAX);
        idle.put(key("a"), 2, t0, MAX);
        idle.put(key("a"), 3, t0 + SWEEP_EVERY / 2, MAX);
        // No sweep before SWEEP_EVERY has passed since the last one (at t0, in `put`s).
        idle.sweep(t0 + SWEEP_EVERY - Duration::from_millis(1));
        assert_eq!(idle.by_host.len(), 2);
        // At the idle timeout: "old" and 2 have expired, 3 has not.
        idle.put(key("b"), 4, t0 + IDLE_TIMEOUT, MAX);
        assert!(!idle.by_host.contains_key("old"), "no attempt goes there any more");
        let a: Vec<_> = idle.by_host["a"].iter().map(|(c, _)| *c).collect();
        assert_eq!(a, [3]);
        assert_eq!(idle.by_host["b"].len(), 1);
    }
}
