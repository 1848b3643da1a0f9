//! The order that loses nothing: claim the id, forward, then confirm (origin `2xx`) or
//! release (anything else). Only a confirmed delivery, or a repeat of one, is answered `2xx`.
//!
//! | store says / origin does | Worker answers | store afterwards |
//! | --- | --- | --- |
//! | delivered before | `200 duplicate` + `x-postwire-duplicate: true`, not forwarded | unchanged |
//! | in flight (another attempt is being forwarded) | `409 delivery_in_progress` + `retry-after` | unchanged |
//! | store unreadable | `503 dedup_unavailable` + `retry-after`, not forwarded | unchanged |
//! | claimed; origin `2xx` | `200 delivered` | delivered (long TTL) |
//! | claimed; origin non-`2xx` | `502 origin_rejected` + `x-postwire-origin-status` | released |
//! | claimed; origin unreachable (listen mode: the listener's local endpoint gave no answer) | `502 origin_unavailable` | released |
//! | claimed; origin timeout | `504 origin_timeout` | released |
//!
//! If recording "delivered" fails after the origin accepted, the answer is still `200`: the
//! origin has the event, and a `5xx` would only make the sender send it again. The failure
//! is logged, and a retry could then reach the origin twice (the in-flight marker, which
//! expires after its TTL, holds off retries that come within it). If releasing fails after
//! a refusal, the answer is still the `5xx`; the marker expires after its short TTL and the
//! sender's next retry goes through.

use postwire_core::UnixTime;

use crate::config::Config;
use crate::forward::dedup::{Claim, DedupStore};
use crate::handoff::{Origin, OriginOutcome, build_request};
use crate::reply::{DUPLICATE_HEADER, ORIGIN_STATUS_HEADER, Reply, ReplyCode};
use crate::verify::inspect::VerifiedDelivery;

/// De-duplicates and forwards one verified delivery; see the module table for the answers.
pub async fn deliver<S: DedupStore, O: Origin>(
    config: &Config,
    delivery: &VerifiedDelivery,
    store: &S,
    origin: &O,
    now: UnixTime,
) -> Reply {
    let id = delivery.headers.id.as_str();
    match store.claim(id, now).await {
        Err(e) => {
            return Reply::new(
                ReplyCode::DedupUnavailable,
                "the de-duplication store could not be read or written; the delivery was not forwarded, retry later",
            )
            .with_header("retry-after", "60")
            .with_warning(format!("webhook-id {id}: {e}"));
        }
        Ok(Claim::Delivered) => return duplicate(),
        Ok(Claim::InFlight) => return in_progress(config),
        Ok(Claim::Claimed) => {}
    }

    let request = build_request(
        config.origin_url.as_str(),
        config.forward_timeout_ms,
        config.origin_secret.as_ref(),
        delivery,
    );
    let outcome = origin.forward(&request).await;

    if let OriginOutcome::Accepted { status } = outcome {
        let reply = Reply::new(ReplyCode::Delivered, format!("forwarded; the origin answered {status}"));
        return match store.confirm(id, now).await {
            Ok(()) => reply,
            Err(e) => reply.with_warning(format!(
                "webhook-id {id}: the origin accepted it but {e}; a retry of it may be forwarded again"
            )),
        };
    }

    let reply = match outcome {
        OriginOutcome::Refused { status } => Reply::new(
            ReplyCode::OriginRejected,
            format!("the origin answered {status}; not acknowledged, retry later"),
        )
        .with_header(ORIGIN_STATUS_HEADER, status.to_string()),
        OriginOutcome::TimedOut => Reply::new(
            ReplyCode::OriginTimeout,
            format!(
                "the origin did not answer within {} ms; not acknowledged, retry later",
                config.forward_timeout_ms
            ),
        ),
        OriginOutcome::ListenerAbsent => Reply::new(
            ReplyCode::ListenerAbsent,
            "no listener is connected to this relay; not acknowledged, retry later",
        )
        .with_header("retry-after", crate::listen::RETRY_AFTER_SECS.to_string()),
        // Listen mode: the listener reported that its local endpoint gave no answer (refused,
        // or slower than the listener's share of the wait).
        _ if config.listen_token.is_some() => Reply::new(
            ReplyCode::OriginUnavailable,
            "the listener's local endpoint gave no answer (refused, or not in time); not acknowledged, retry later",
        ),
        _ => Reply::new(
            ReplyCode::OriginUnavailable,
            "the origin could not be reached; not acknowledged, retry later",
        ),
    };
    match store.release(id).await {
        Ok(()) => reply,
        Err(e) => reply.with_warning(format!(
            "webhook-id {id}: {e}; its in-flight marker holds off retries until it expires ({} s)",
            config.in_flight_ttl_secs
        )),
    }
}

/// `200 duplicate` (+ `x-postwire-duplicate: true`): the id was delivered before.
pub fn duplicate() -> Reply {
    Reply::new(
        ReplyCode::Duplicate,
        "this webhook-id was delivered before; not forwarded again",
    )
    .with_header(DUPLICATE_HEADER, "true")
}

/// `409 delivery_in_progress` (+ `retry-after`): another attempt of the id is being
/// forwarded, and its outcome is not known yet.
pub fn in_progress(config: &Config) -> Reply {
    Reply::new(
        ReplyCode::DeliveryInProgress,
        "another attempt of this webhook-id is being forwarded now; retry later",
    )
    .with_header("retry-after", config.in_flight_ttl_secs.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forward::dedup::memory::MemoryDedupStore;
    use crate::forward::dedup::{DedupRecord, key_for};
    use crate::handoff::ForwardRequest;
    use crate::verify::inspect::DeliveryHeaders;
    use std::cell::{Cell, RefCell};
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    /// The test stores and origins never wait, so one poll finishes the flow.
    fn run<F: Future>(f: F) -> F::Output {
        match pin!(f).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(v) => v,
            Poll::Pending => panic!("the flow waited on something in a test"),
        }
    }

    /// What the scripted origin was sent: URL, headers, body.
    type Received = (String, Vec<(&'static str, String)>, Vec<u8>);

    /// An origin that answers with a scripted outcome and records what it was sent.
    struct ScriptedOrigin {
        outcome: Cell<OriginOutcome>,
        received: RefCell<Vec<Received>>,
    }

    impl ScriptedOrigin {
        fn new(outcome: OriginOutcome) -> Self {
            ScriptedOrigin {
                outcome: Cell::new(outcome),
                received: RefCell::default(),
            }
        }
        fn count(&self) -> usize {
            self.received.borrow().len()
        }
    }

    impl Origin for ScriptedOrigin {
        async fn forward(&self, r: &ForwardRequest<'_>) -> OriginOutcome {
            self.received
                .borrow_mut()
                .push((r.url.to_owned(), r.headers.clone(), r.body.to_vec()));
            self.outcome.get()
        }
    }

    fn config() -> Config {
        Config::from_lookup(|name| match name {
            "WEBHOOK_SECRETS" => Some("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into()),
            "ORIGIN_URL" => Some("https://origin.example/hook".into()),
            _ => None,
        })
        .unwrap()
    }

    fn delivery(id: &str) -> VerifiedDelivery {
        VerifiedDelivery {
            headers: DeliveryHeaders {
                id: id.into(),
                timestamp_raw: "1700000000".into(),
                timestamp: UnixTime::from_secs(1_700_000_000),
                signature: "v1,sender".into(),
                content_type: None,
                forwarded: Vec::new(),
            },
            body: b"{\"raw\": true}".to_vec(),
        }
    }

    const NOW: UnixTime = UnixTime::from_secs(1_700_000_001);

    #[test]
    fn first_delivery_is_forwarded_then_recorded_then_repeats_are_duplicates() {
        let (cfg, store, origin) = (
            config(),
            MemoryDedupStore::default(),
            ScriptedOrigin::new(OriginOutcome::Accepted { status: 202 }),
        );
        let r = run(deliver(&cfg, &delivery("msg_1"), &store, &origin, NOW));
        assert_eq!((r.status(), r.code), (200, ReplyCode::Delivered));
        assert_eq!(origin.count(), 1);
        let (url, headers, body) = origin.received.borrow()[0].clone();
        assert_eq!(url, "https://origin.example/hook");
        assert_eq!(body, b"{\"raw\": true}");
        assert!(headers.contains(&("webhook-signature", "v1,sender".into())));
        assert_eq!(
            store.records.borrow()[&key_for("msg_1")],
            DedupRecord::Delivered { at: NOW }
        );

        let again = run(deliver(&cfg, &delivery("msg_1"), &store, &origin, NOW));
        assert_eq!((again.status(), again.code), (200, ReplyCode::Duplicate));
        assert_eq!(again.header(DUPLICATE_HEADER), Some("true"));
        assert_eq!(origin.count(), 1, "a duplicate is not forwarded");
    }

    #[test]
    fn every_origin_failure_is_5xx_and_releases_the_id() {
        for (outcome, status, code) in [
            (OriginOutcome::Refused { status: 500 }, 502, ReplyCode::OriginRejected),
            (OriginOutcome::Refused { status: 404 }, 502, ReplyCode::OriginRejected),
            (OriginOutcome::Refused { status: 302 }, 502, ReplyCode::OriginRejected),
            (OriginOutcome::TimedOut, 504, ReplyCode::OriginTimeout),
            (OriginOutcome::Unreachable, 502, ReplyCode::OriginUnavailable),
        ] {
            let (cfg, store, origin) = (config(), MemoryDedupStore::default(), ScriptedOrigin::new(outcome));
            let r = run(deliver(&cfg, &delivery("msg_2"), &store, &origin, NOW));
            assert_eq!((r.status(), r.code), (status, code), "{outcome:?}");
            assert!(
                store.records.borrow().is_empty(),
                "{outcome:?}: the id must not stay recorded"
            );
            // The sender's retry is forwarded, and recorded once the origin accepts it.
            origin.outcome.set(OriginOutcome::Accepted { status: 200 });
            let retry = run(deliver(&cfg, &delivery("msg_2"), &store, &origin, NOW));
            assert_eq!(retry.code, ReplyCode::Delivered);
            assert_eq!(origin.count(), 2);
        }
        let (cfg, store, origin) = (
            config(),
            MemoryDedupStore::default(),
            ScriptedOrigin::new(OriginOutcome::Refused { status: 418 }),
        );
        let r = run(deliver(&cfg, &delivery("msg_3"), &store, &origin, NOW));
        assert_eq!(r.header(ORIGIN_STATUS_HEADER), Some("418"));
    }

    #[test]
    fn an_id_in_flight_is_not_acknowledged() {
        let (cfg, store, origin) = (
            config(),
            MemoryDedupStore::default(),
            ScriptedOrigin::new(OriginOutcome::Accepted { status: 200 }),
        );
        store
            .records
            .borrow_mut()
            .insert(key_for("msg_4"), DedupRecord::InFlight { since: NOW });
        let r = run(deliver(&cfg, &delivery("msg_4"), &store, &origin, NOW));
        assert_eq!((r.status(), r.code), (409, ReplyCode::DeliveryInProgress));
        assert_eq!(r.header("retry-after"), Some("60"));
        assert_eq!(origin.count(), 0);
    }

    #[test]
    fn an_unreadable_store_means_no_forward_and_no_ack() {
        let (cfg, store, origin) = (
            config(),
            MemoryDedupStore::default(),
            ScriptedOrigin::new(OriginOutcome::Accepted { status: 200 }),
        );
        store.fail_claim.set(true);
        let r = run(deliver(&cfg, &delivery("msg_5"), &store, &origin, NOW));
        assert_eq!((r.status(), r.code), (503, ReplyCode::DedupUnavailable));
        assert_eq!(origin.count(), 0);
        assert_eq!(r.warnings.len(), 1);
    }

    #[test]
    fn store_failures_after_forwarding_keep_the_origin_s_verdict() {
        let (cfg, store, origin) = (
            config(),
            MemoryDedupStore::default(),
            ScriptedOrigin::new(OriginOutcome::Accepted { status: 200 }),
        );
        store.fail_confirm.set(true);
        let r = run(deliver(&cfg, &delivery("msg_6"), &store, &origin, NOW));
        assert_eq!(r.code, ReplyCode::Delivered, "the origin has it: acknowledge");
        assert_eq!(r.warnings.len(), 1);

        let (store, origin) = (
            MemoryDedupStore::default(),
            ScriptedOrigin::new(OriginOutcome::Refused { status: 500 }),
        );
        store.fail_release.set(true);
        let r = run(deliver(&cfg, &delivery("msg_7"), &store, &origin, NOW));
        assert_eq!(
            r.code,
            ReplyCode::OriginRejected,
            "the origin refused: never acknowledge"
        );
        assert_eq!(r.warnings.len(), 1);
    }
}
