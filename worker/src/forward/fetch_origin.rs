//! [`Origin`] over the Workers `fetch` API: a `POST` with redirects not followed, aborted
//! through an `AbortController` when the forward timeout passes first. In listen mode
//! (`LISTEN_TOKEN` set) the connected listener stands in for the origin
//! ([`crate::listen`]).

use std::pin::pin;
use std::time::Duration;

use futures_util::future::{Either, select};
use worker::{AbortController, Delay, Fetch, Stub};

use crate::edge::to_request;
use crate::handoff::{ForwardRequest, Origin, OriginOutcome};

/// Forwards with the global `fetch`, or to the listener when `listen` is set.
pub(crate) struct FetchOrigin {
    /// Listen mode: the listen object, which relays to the connected listener.
    pub listen: Option<Stub>,
}

impl Origin for FetchOrigin {
    async fn forward(&self, request: &ForwardRequest<'_>) -> OriginOutcome {
        if let Some(stub) = &self.listen {
            return crate::listen::relay(stub, request).await;
        }
        let Ok(req) = to_request(request) else {
            return OriginOutcome::Unreachable;
        };
        let controller = AbortController::default();
        let signal = controller.signal();
        let fetch = Fetch::Request(req);
        let send = pin!(fetch.send_with_signal(&signal));
        let timeout = pin!(Delay::from(Duration::from_millis(request.timeout_ms)));
        match select(send, timeout).await {
            Either::Left((Ok(response), _)) => OriginOutcome::from_status(response.status_code()),
            Either::Left((Err(_), _)) => OriginOutcome::Unreachable,
            Either::Right(((), _)) => {
                controller.abort();
                OriginOutcome::TimedOut
            }
        }
    }
}
