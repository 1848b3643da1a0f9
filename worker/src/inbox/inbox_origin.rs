//! The inbox's request to the origin: like forward mode's (`FetchOrigin`), plus
//! what the inbox keeps of the answer: the `retry-after` of a `429`/`503` and the first
//! KiB of the body, for the admin API.

use std::pin::pin;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::{Either, select};
use worker::{AbortController, Delay, Fetch, Response, Stub};

use super::retry::{honours_retry_after, parse_retry_after};
use crate::edge::to_request;
use crate::handoff::{ForwardRequest, OriginOutcome};

/// How much of the origin's answer body is kept.
pub(crate) const ANSWER_EXCERPT_BYTES: usize = 1024;

/// The origin's answer to one attempt.
pub(crate) struct OriginAnswer {
    /// Accepted, refused, timed out or unreachable.
    pub outcome: OriginOutcome,
    /// The `retry-after` in seconds of a `429` or `503`.
    pub retry_after_secs: Option<u64>,
    /// The first [`ANSWER_EXCERPT_BYTES`] of the body, lossily as UTF-8.
    pub excerpt: String,
}

/// Sends `request`; the whole exchange, body excerpt included, within its timeout. In
/// listen mode (`listen` set) the connected listener stands in for the origin.
pub(crate) async fn send(request: &ForwardRequest<'_>, listen: Option<&Stub>) -> OriginAnswer {
    let failed = |outcome| OriginAnswer {
        outcome,
        retry_after_secs: None,
        excerpt: String::new(),
    };
    if let Some(stub) = listen {
        return failed(crate::listen::relay(stub, request).await);
    }
    let Ok(req) = to_request(request) else {
        return failed(OriginOutcome::Unreachable);
    };
    let controller = AbortController::default();
    let signal = controller.signal();
    let exchange = pin!(async {
        let mut response = Fetch::Request(req).send_with_signal(&signal).await?;
        let excerpt = excerpt(&mut response).await;
        Ok::<_, worker::Error>((response, excerpt))
    });
    let timeout = pin!(Delay::from(Duration::from_millis(request.timeout_ms)));
    match select(exchange, timeout).await {
        Either::Left((Ok((response, excerpt)), _)) => {
            let status = response.status_code();
            let retry_after_secs = if honours_retry_after(status) {
                response
                    .headers()
                    .get("retry-after")
                    .ok()
                    .flatten()
                    .and_then(|v| parse_retry_after(&v))
            } else {
                None
            };
            OriginAnswer {
                outcome: OriginOutcome::from_status(status),
                retry_after_secs,
                excerpt,
            }
        }
        Either::Left((Err(_), _)) => failed(OriginOutcome::Unreachable),
        Either::Right(((), _)) => {
            controller.abort();
            failed(OriginOutcome::TimedOut)
        }
    }
}

/// The start of the body; reading stops after [`ANSWER_EXCERPT_BYTES`].
async fn excerpt(response: &mut Response) -> String {
    let mut kept = Vec::new();
    if let Ok(mut stream) = response.stream() {
        while let Some(Ok(chunk)) = stream.next().await {
            let room = ANSWER_EXCERPT_BYTES.saturating_sub(kept.len());
            kept.extend(chunk.iter().take(room));
            if kept.len() >= ANSWER_EXCERPT_BYTES {
                break;
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}
