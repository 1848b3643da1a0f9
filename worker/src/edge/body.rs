//! Reading the request body without holding more than the configured limit: the stream is
//! read chunk by chunk and abandoned as soon as it exceeds `max_body_bytes` (a missing or
//! lying `content-length` cannot make the Worker buffer more).

use futures_util::StreamExt;
use worker::Request;

/// The body, or the fact that it was over the limit.
pub(crate) enum Body {
    /// All of it.
    Complete(Vec<u8>),
    /// More than the limit; reading stopped.
    TooLarge,
}

/// Reads at most `max_body_bytes` (+ one chunk) of the body.
pub(crate) async fn read_limited(req: &mut Request, max_body_bytes: usize) -> worker::Result<Body> {
    if req.inner().body().is_none() {
        return Ok(Body::Complete(Vec::new()));
    }
    let mut stream = req.stream()?;
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        if body.len() + chunk.len() > max_body_bytes {
            return Ok(Body::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Body::Complete(body))
}
