//! A bare HTTP/1 receiver on loopback for load tests and benchmarks: no verification, no
//! routing, `TCP_NODELAY` on every connection, one task per connection, so it costs as
//! little as a receiver can and the numbers measure the sender.
//!
//! The caller decides each answer from the request's headers (`answer`, called before
//! the body is read: a benchmark that times arrivals takes the time there); the body is
//! then read in full, as a real receiver would, and dropped.
//!
//! [`start_delayed`] plays a slow receiver instead: each request is answered a fixed
//! time after its body was read (a Tokio sleep in the request's own task, so requests
//! on different connections wait side by side, as many as the sender opens: there is no
//! limit on connections), and `answer` is called when that time is over.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{HeaderMap, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

/// Starts the receiver on `127.0.0.1` (a free port) and returns its address; it runs
/// until the runtime ends. `answer` gives the status of each request from its headers.
pub async fn start<F>(answer: F) -> std::io::Result<SocketAddr>
where
    F: Fn(&HeaderMap) -> StatusCode + Send + Sync + 'static,
{
    serve(answer, None).await
}

/// As [`start`], but each request is answered `delay` after its body was read, and
/// `answer` is called then (so a count kept in it counts answers, not arrivals).
pub async fn start_delayed<F>(delay: Duration, answer: F) -> std::io::Result<SocketAddr>
where
    F: Fn(&HeaderMap) -> StatusCode + Send + Sync + 'static,
{
    serve(answer, Some(delay)).await
}

async fn serve<F>(answer: F, delay: Option<Duration>) -> std::io::Result<SocketAddr>
where
    F: Fn(&HeaderMap) -> StatusCode + Send + Sync + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let answer = answer.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                    // Without a delay the answer is taken on arrival, before the body.
                    let answer = match delay {
                        None => Ok(answer(req.headers())),
                        Some(delay) => Err((delay, answer.clone())),
                    };
                    async move {
                        let (parts, body) = req.into_parts();
                        let _ = body.collect().await;
                        let status = match answer {
                            Ok(status) => status,
                            Err((delay, answer)) => {
                                tokio::time::sleep(delay).await;
                                answer(&parts.headers)
                            }
                        };
                        let mut response = Response::new(Full::new(Bytes::from_static(b"ok")));
                        *response.status_mut() = status;
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(addr)
}

/// A receiver that answers `200` to everything.
pub async fn always_ok() -> std::io::Result<SocketAddr> {
    start(|_| StatusCode::OK).await
}
