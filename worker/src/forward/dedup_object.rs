//! Durable Object mode (`DEDUP_STORE = "durable-object"`): the `DedupObject` class, and how
//! the Worker hands it a verified delivery.
//!
//! The Worker verifies the request (method, headers, size, signature, timestamp, payload)
//! exactly as in KV mode, then sends the delivery to the object named by its `webhook-id`
//! (`idFromName`): one object per id, the same one from every location. The object runs
//! the whole flow, claim → forward → confirm or release (`crate::forward::flow::deliver`), inside
//! `blockConcurrencyWhile`: while one attempt is being forwarded, the runtime holds every
//! other event of that object (a copy of the delivery, its alarm) until the outcome is
//! recorded. A copy that waited then finds `delivered` (→ `200 duplicate`) or nothing (the
//! first failed → it is forwarded itself). A copy that waited longer than the forward
//! timeout is not forwarded (its sender has given up on it): it is answered from the
//! record, `200 duplicate` or `409 delivery_in_progress`.
//!
//! The object's answer is the Worker's answer, passed through unchanged. If the object
//! cannot be reached, the Worker answers `503 dedup_unavailable` (not forwarded by the
//! Worker; the sender retries).
//!
//! `GET` on an object (only possible through the binding, never from the Internet) answers
//! its record and alarm as JSON, `{"record": "delivered:<t>" | null, "alarm": <ms> |
//! null}`: for operators and for the tests.

use postwire_core::UnixTime;
use worker::{DurableObject, Env, Method, Request, Response, State, durable_object};

use super::do_store::ObjectStore;
use super::fetch_origin::FetchOrigin;
use crate::config::{Config, DO_BINDING};
use crate::edge::{Answer, RECEIVED_AT_HEADER, log_warnings, misconfigured, now_ms, object_request, to_response};
use crate::forward::dedup::Claim;
use crate::reply::{Reply, ReplyCode};
use crate::verify::inspect::{VerifiedDelivery, read_headers};

/// Sends a verified delivery to the `DedupObject` of its id; the object's answer, or `503`.
pub(crate) async fn deliver_through_object(env: &Env, delivery: &VerifiedDelivery, received_ms: f64) -> Answer {
    let namespace = match env.durable_object(DO_BINDING) {
        Ok(ns) => ns,
        Err(_) => {
            return misconfigured(format!(
                "DEDUP_STORE is \"durable-object\" but the Durable Object binding {DO_BINDING} is missing"
            ))
            .into();
        }
    };
    let id = delivery.headers.id.as_str();
    let sent = async {
        let stub = namespace.id_from_name(id)?.get_stub()?;
        stub.fetch_with_request(object_request(delivery, received_ms)?).await
    };
    match sent.await {
        Ok(response) => Answer::Response(response),
        Err(e) => unavailable(format!("webhook-id {id}: the Durable Object could not be reached: {e}")).into(),
    }
}

fn unavailable(detail: String) -> Reply {
    Reply::new(
        ReplyCode::DedupUnavailable,
        "the de-duplication store could not be read or written; the delivery was not forwarded, retry later",
    )
    .with_header("retry-after", "60")
    .with_warning(detail)
}

/// One object per `webhook-id`: its record, and the flow for that id, one attempt at a time.
#[durable_object(alarm)]
pub struct DedupObject {
    state: State,
    env: Env,
}

impl DurableObject for DedupObject {
    fn new(state: State, env: Env) -> Self {
        DedupObject { state, env }
    }

    async fn fetch(&self, req: Request) -> worker::Result<Response> {
        if req.method() == Method::Get {
            return self.describe().await;
        }
        let reply = self.deliver(req).await;
        log_warnings(&reply);
        to_response(&reply)
    }

    /// The record expired: forget everything, so the object holds no data.
    async fn alarm(&self) -> worker::Result<Response> {
        self.state.storage().delete_all().await?;
        Response::empty()
    }
}

impl DedupObject {
    async fn deliver(&self, mut req: Request) -> Reply {
        let config = match crate::edge::read_config(&self.env) {
            Ok(c) => c,
            Err(e) => return misconfigured(e.to_string()),
        };
        let headers: Vec<(String, String)> = req.headers().entries().collect();
        // The Worker checked these already; read again, never trusted blindly.
        let mut delivery_headers = match read_headers(&headers) {
            Ok(h) => h,
            Err(reply) => return reply,
        };
        // A provider route's delivery: its headers for the origin, read back.
        delivery_headers.forwarded = crate::providers::forwarded_from(&headers).unwrap_or_default();
        let received_ms = headers
            .iter()
            .find(|(k, _)| k == RECEIVED_AT_HEADER)
            .and_then(|(_, v)| v.parse::<f64>().ok())
            .filter(|v| v.is_finite())
            .unwrap_or_else(now_ms);
        let body = match req.bytes().await {
            Ok(b) => b,
            Err(_) => {
                return Reply::new(
                    ReplyCode::InvalidRequest,
                    "the request body could not be read to its end",
                );
            }
        };
        let delivery = VerifiedDelivery {
            headers: delivery_headers,
            body,
        };
        let origin = match crate::listen::listen_stub(&self.env, &config) {
            Ok(listen) => FetchOrigin { listen },
            Err(reply) => return reply,
        };
        let store = ObjectStore::new(self.state.storage(), config.dedup_ttl_secs, config.in_flight_ttl_secs);
        // Every other event of this object waits until this future is done: the input gate
        // held across the forward. The future never returns Err (that would reset the
        // object); failures are replies.
        let gated = self.state.block_concurrency_while(async move {
            let now_ms = now_ms();
            let now = UnixTime::from_secs((now_ms / 1000.0) as i64);
            let id = delivery.headers.id.as_str();
            if now_ms - received_ms > config.forward_timeout_ms as f64 {
                return Ok(late_answer(&config, &store, id, now).await);
            }
            Ok(crate::forward::flow::deliver(&config, &delivery, &store, &origin, now).await)
        });
        match gated.await {
            Ok(reply) => reply,
            Err(e) => unavailable(format!("Durable Object blockConcurrencyWhile failed: {e}")),
        }
    }

    /// `{"record": …, "alarm": …}`.
    async fn describe(&self) -> worker::Result<Response> {
        let storage = self.state.storage();
        let entries = storage.list().await?;
        // One object per id, so at most one key.
        let record = entries
            .values()
            .next()
            .ok()
            .filter(|next| !next.done())
            .and_then(|next| next.value().as_string());
        let alarm = storage.get_alarm().await?;
        Response::from_json(&serde_json::json!({ "record": record, "alarm": alarm }))
    }
}

/// The answer to an attempt that waited for earlier ones longer than the forward timeout:
/// from the record, without forwarding.
async fn late_answer(config: &Config, store: &ObjectStore, id: &str, now: UnixTime) -> Reply {
    match store.peek(id, now).await {
        Ok(Some(record)) if record.claim() == Claim::Delivered => crate::forward::flow::duplicate(),
        Ok(_) => crate::forward::flow::in_progress(config),
        Err(e) => unavailable(format!("webhook-id {id}: {e}")),
    }
}
