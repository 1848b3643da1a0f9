//! Serving HTTP/1.1 connections with limits that slow, idle and malformed clients cannot
//! get around.
//!
//! `axum::serve` has no read timeouts and no cap on connections: a client that sends half
//! its headers, or declares a large body and sends it a byte at a time, holds a task and a
//! file descriptor for as long as it likes. This module runs the accept loop itself, on
//! hyper's HTTP/1.1 connection builder, and adds:
//!
//! - a **header-read timeout** (hyper's `header_read_timeout`): the time allowed from the
//!   moment the server waits for a request head (a new connection, or a kept-alive one
//!   after its last response) until the whole head is in. It is also the **idle
//!   timeout**: an idle kept-alive connection is closed when it runs out;
//! - a **body-read timeout**: the whole request body must arrive within this time of its
//!   head, or the handler reading it answers `408 request_timeout` and the connection
//!   is closed;
//! - a **cap on open connections**: past it, new connections are accepted and closed at
//!   once (the server keeps its descriptors for the clients it serves);
//! - an over-limit `Content-Length` refused before any body byte is read (see
//!   `app::app`'s pre-routing check);
//! - the spec's error body on the answers hyper writes by itself before any handler runs
//!   (an unparsable request line or header, e.g. an `Authorization` value with a NUL
//!   byte): [`ErrorBodyIo`] replaces hyper's empty `400`/`414`/`431` with the same status,
//!   a `{statusCode, code, message}` body and `Connection: close`.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::Request;
use axum::response::Response;
use http_body::Frame;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, oneshot};
use tower::ServiceExt;

/// Default header-read (and idle) timeout: 10 s.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default body-read timeout: 30 s for the whole body.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Default cap on open connections: 10,000.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

/// The limits every connection is served under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// From waiting for a request head (new or kept-alive connection) to having all of it.
    pub header_read_timeout: Duration,
    /// From a request's head to the last byte of its body.
    pub body_read_timeout: Duration,
    /// Connections open at once; more are closed as soon as they are accepted.
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// The error a request body yields when its body-read timeout runs out. Handlers that
/// read bodies turn it into `408 request_timeout` (`validation::read_body`).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the request body did not arrive within {0:?}")]
pub struct BodyTimeout(pub Duration);

/// A request body that fails with [`BodyTimeout`] once its deadline passes.
struct DeadlineBody {
    inner: hyper::body::Incoming,
    deadline: Pin<Box<tokio::time::Sleep>>,
    limit: Duration,
    expired: bool,
}

impl http_body::Body for DeadlineBody {
    type Data = bytes::Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        if self.expired {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(frame) => Poll::Ready(frame.map(|r| r.map_err(Into::into))),
            Poll::Pending => {
                ready!(self.deadline.as_mut().poll(cx));
                self.expired = true;
                Poll::Ready(Some(Err(Box::new(BodyTimeout(self.limit)))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.expired || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Open connections, for tests and metrics.
#[derive(Debug, Clone, Default)]
pub struct ConnectionCounter(Arc<AtomicUsize>);

impl ConnectionCounter {
    /// Connections open now.
    pub fn open(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

struct Counted(ConnectionCounter);

impl Drop for Counted {
    fn drop(&mut self) {
        (self.0).0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Serves `app` on `listener` under `limits` until `stop` fires, then lets the requests
/// in progress finish (kept-alive idle connections are closed at once).
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: ConnectionLimits,
    counter: ConnectionCounter,
    mut stop: oneshot::Receiver<()>,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    loop {
        let accepted = tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                // Out of descriptors (EMFILE/ENFILE) or a connection reset before accept:
                // wait a little instead of spinning; the cap keeps this rare.
                tracing::warn!(error = %e, "accept failed; retrying shortly");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            tracing::debug!(%peer, max = limits.max_connections, "connection cap reached; closing a new connection");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        counter.0.fetch_add(1, Ordering::Relaxed);
        let counted = Counted(counter.clone());
        let app = app.clone();
        let body_timeout = limits.body_read_timeout;
        let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
            let app = app.clone();
            async move { Ok::<Response, Infallible>(handle(app, request, peer, body_timeout).await) }
        });
        let connection = builder.serve_connection(TokioIo::new(ErrorBodyIo::new(stream)), service);
        let watched = graceful.watch(connection);
        tokio::spawn(async move {
            let _permit = permit;
            let _counted = counted;
            if let Err(e) = watched.await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

async fn handle(
    app: axum::Router,
    request: Request<hyper::body::Incoming>,
    peer: SocketAddr,
    body_timeout: Duration,
) -> Response {
    let mut request = request.map(|inner| {
        Body::new(DeadlineBody {
            inner,
            deadline: Box::pin(tokio::time::sleep(body_timeout)),
            limit: body_timeout,
            expired: false,
        })
    });
    request.extensions_mut().insert(ConnectInfo(peer));
    match app.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// A TCP stream whose writes are watched for the answers hyper writes by itself when a
/// request cannot be parsed: a `4xx` head with `content-length: 0`. Every answer the
/// application writes has a body, so such a head is always hyper's; it is replaced by
/// the same status with the spec's error body and `connection: close`.
pub struct ErrorBodyIo {
    stream: TcpStream,
    /// A replacement still being written, and how much of it is out.
    pending: Option<(Vec<u8>, usize)>,
}

impl ErrorBodyIo {
    /// Wraps `stream`.
    pub fn new(stream: TcpStream) -> ErrorBodyIo {
        ErrorBodyIo { stream, pending: None }
    }

    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((bytes, written)) = &mut self.pending {
            if *written >= bytes.len() {
                self.pending = None;
                break;
            }
            let n = ready!(Pin::new(&mut self.stream).poll_write(cx, &bytes[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        Poll::Ready(Ok(()))
    }
}

/// The replacement for one of hyper's own empty error heads, if `buf` is one.
fn replacement(buf: &[u8]) -> Option<Vec<u8>> {
    let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = &buf[..head_end + 2];
    if !(head.starts_with(b"HTTP/1.1 4") || head.starts_with(b"HTTP/1.0 4")) {
        return None;
    }
    let lower = head.to_ascii_lowercase();
    if !lower.windows(19).any(|w| w == b"\r\ncontent-length: 0") {
        return None;
    }
    let status: u16 = std::str::from_utf8(head.get(9..12)?).ok()?.parse().ok()?;
    let (reason, code, message) = match status {
        400 => (
            "Bad Request",
            "invalid_request",
            "the request line or a header could not be parsed (e.g. a control character in a header value)",
        ),
        414 => ("URI Too Long", "invalid_request", "the request URI is too long"),
        431 => (
            "Request Header Fields Too Large",
            "invalid_request",
            "the request headers are too large",
        ),
        _ => return None,
    };
    let body = serde_json::json!({ "statusCode": status, "code": code, "message": message }).to_string();
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncache-control: no-store\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    Some(out)
}

impl AsyncRead for ErrorBodyIo {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for ErrorBodyIo {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        ready!(self.poll_pending(cx))?;
        if let Some(out) = replacement(buf) {
            self.pending = Some((out, 0));
            // The replacement stands for the whole of hyper's buffer; it is flushed by
            // the next write, flush or shutdown.
            let _ = self.poll_pending(cx)?;
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hypers_empty_error_heads_are_replaced() {
        let hyper_400 = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let out = String::from_utf8(replacement(hyper_400).unwrap()).unwrap();
        assert!(out.starts_with("HTTP/1.1 400 Bad Request\r\n"));
        let body: serde_json::Value = serde_json::from_str(out.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!(body["statusCode"], 400);
        assert_eq!(body["code"], "invalid_request");
        // An application answer (with a body) and a success are left alone.
        assert!(replacement(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 57\r\n\r\n{}").is_none());
        assert!(replacement(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n").is_none());
        assert!(replacement(b"{\"a\":1}").is_none());
    }
}
