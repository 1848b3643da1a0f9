//! Listen mode's logic (`postwire listen --worker …`): the Worker relays verified
//! deliveries down a WebSocket to a developer's machine instead of to the origin. Here is
//! what can be decided without the Workers runtime, so that it is tested natively: the
//! path, the frames on the socket and how a relay's result becomes an [`OriginOutcome`].
//! The `ListenObject` Durable Object that holds the socket is here too, compiled only for
//! `wasm32`.
//!
//! It is off unless the `LISTEN_TOKEN` secret is set. Then `GET /_postwire/listen` with
//! `authorization: Bearer <LISTEN_TOKEN>` (compared in constant time, before the upgrade)
//! and `upgrade: websocket` opens the socket; anything else on that path is the same
//! `404 not_found` as any unknown admin path. With the token set, the listener takes the
//! origin's place in both delivery modes: forward mode answers the sender with the
//! listener's result, inbox mode's pump delivers to the listener. With no listener
//! connected the result is [`OriginOutcome::ListenerAbsent`] (`503` + `retry-after`
//! to the sender in forward mode; a retry later in inbox mode), so nothing is lost.
//!
//! The frames on the socket, the path and the close code are
//! [`postwire_edge_wire::listen`]'s, the one definition `postwire listen` is built on too.
//! The Worker greets each listener with its wait ([`wait_ms`] of the forward timeout), and
//! the listener answers within that less a margin, so its verdict reaches the sender.
//!
//! A second listener replaces the first: the object closes the older socket with code
//! [`REPLACED_CLOSE_CODE`], and its unanswered deliveries fail (`503`, retried).

pub use postwire_edge_wire::listen::{LISTEN_PATH, REPLACED_CLOSE_CODE};
use postwire_edge_wire::listen::{LocalOutcome, MAX_WAIT_MS};
use serde::{Deserialize, Serialize};

use crate::handoff::OriginOutcome;

#[cfg(target_arch = "wasm32")]
mod listen_object;

#[cfg(target_arch = "wasm32")]
pub(crate) use listen_object::{connect_listener, listen_stub, relay};

/// The Durable Object namespace binding of listen mode; its class is `ListenObject`.
pub const LISTEN_BINDING: &str = "LISTEN";
/// `retry-after` (seconds) answered when no listener is connected.
pub const RETRY_AFTER_SECS: u64 = 10;

/// The result of relaying one delivery, as the `ListenObject` reports it to the Worker
/// (JSON: `{"result":"answered","status":204}`, `{"result":"absent"}`…).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum RelayResult {
    /// The listener reported the local endpoint's status.
    Answered {
        /// The local status.
        status: u16,
    },
    /// The local endpoint gave no answer.
    NoAnswer,
    /// No listener connected, or it went away before answering.
    Absent,
    /// No answer within the wait.
    TimedOut,
}

impl RelayResult {
    /// What the Worker makes of it: the listener stands in for the origin.
    pub fn outcome(self) -> OriginOutcome {
        match self {
            RelayResult::Answered { status } => OriginOutcome::from_status(status),
            RelayResult::NoAnswer => OriginOutcome::Unreachable,
            RelayResult::Absent => OriginOutcome::ListenerAbsent,
            RelayResult::TimedOut => OriginOutcome::TimedOut,
        }
    }
}

impl From<LocalOutcome> for RelayResult {
    fn from(outcome: LocalOutcome) -> Self {
        match outcome {
            LocalOutcome::Status(status) => RelayResult::Answered { status },
            LocalOutcome::NoAnswer => RelayResult::NoAnswer,
        }
    }
}

/// How long a delivery waits for the listener, announced in the hello: the forward
/// timeout, at most [`MAX_WAIT_MS`].
pub fn wait_ms(forward_timeout_ms: u64) -> u64 {
    forward_timeout_ms.min(MAX_WAIT_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relay_results_map_to_origin_outcomes() {
        assert_eq!(
            RelayResult::Answered { status: 204 }.outcome(),
            OriginOutcome::Accepted { status: 204 }
        );
        assert_eq!(
            RelayResult::Answered { status: 500 }.outcome(),
            OriginOutcome::Refused { status: 500 }
        );
        assert_eq!(RelayResult::NoAnswer.outcome(), OriginOutcome::Unreachable);
        assert_eq!(RelayResult::Absent.outcome(), OriginOutcome::ListenerAbsent);
        assert_eq!(RelayResult::TimedOut.outcome(), OriginOutcome::TimedOut);
        let json = serde_json::to_string(&RelayResult::Answered { status: 202 }).unwrap();
        assert_eq!(json, r#"{"result":"answered","status":202}"#);
        assert_eq!(
            serde_json::from_str::<RelayResult>(r#"{"result":"absent"}"#).unwrap(),
            RelayResult::Absent
        );
        assert_eq!(
            RelayResult::from(LocalOutcome::Status(204)),
            RelayResult::Answered { status: 204 }
        );
        assert_eq!(RelayResult::from(LocalOutcome::NoAnswer), RelayResult::NoAnswer);
        assert_eq!(wait_ms(8000), 8000);
        assert_eq!(wait_ms(60_000), 10_000);
    }
}
