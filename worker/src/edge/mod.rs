//! The Workers side: the `fetch` event handler and the bindings behind the crate's
//! interfaces ([`KvDedupStore`] for [`DedupStore`](crate::DedupStore), [`FetchOrigin`] for
//! [`Origin`](crate::Origin)). Compiled only for `wasm32`; tested in workerd through
//! Miniflare by `worker/test.sh`.
//!
//! The handler reads the clock from JavaScript (`Date.now()`): postwire-core never reads a
//! clock, and `SystemTime::now()` panics on `wasm32-unknown-unknown`.

mod body;
mod fetch_origin;
mod kv_store;

use worker::{Context, Env, Request, Response, event};

use crate::config::{Config, KV_BINDING};
use crate::inspect::{body_too_large, precheck, verify_body};
use crate::reply::{Reply, ReplyCode};
use fetch_origin::FetchOrigin;
use kv_store::KvDedupStore;
use postwire_core::UnixTime;

#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> worker::Result<Response> {
    let reply = handle(req, &env).await;
    for warning in &reply.warnings {
        worker::console_warn!("postwire-worker: {warning}");
    }
    to_response(&reply)
}

/// One request, start to end. Every path returns a [`Reply`]; nothing panics.
async fn handle(mut req: Request, env: &Env) -> Reply {
    let method = req.inner().method();
    if let Err(reply) = crate::inspect::check_method(&method) {
        return reply;
    }
    let config = match Config::from_lookup(|name| env_string(env, name)) {
        Ok(c) => c,
        Err(e) => return misconfigured(e.to_string()),
    };
    let headers: Vec<(String, String)> = req.headers().entries().collect();
    let delivery_headers = match precheck(&method, &headers, config.max_body_bytes) {
        Ok(h) => h,
        Err(reply) => return reply,
    };
    let body = match body::read_limited(&mut req, config.max_body_bytes).await {
        Ok(body::Body::Complete(bytes)) => bytes,
        Ok(body::Body::TooLarge) => return body_too_large(config.max_body_bytes),
        Err(_) => {
            return Reply::new(
                ReplyCode::InvalidRequest,
                "the request body could not be read to its end",
            );
        }
    };
    let now = UnixTime::from_secs((worker::Date::now().as_millis() / 1000) as i64);
    let delivery = match verify_body(&config.verifier, delivery_headers, body, now) {
        Ok(d) => d,
        Err(reply) => return reply,
    };
    let store = match env.kv(KV_BINDING) {
        Ok(kv) => KvDedupStore::new(kv, config.dedup_ttl_secs, config.in_flight_ttl_secs),
        Err(_) => {
            return misconfigured(format!("the KV namespace binding {KV_BINDING} is missing"));
        }
    };
    crate::flow::deliver(&config, &delivery, &store, &FetchOrigin, now).await
}

/// A string setting from `env` (a `[vars]` entry or a secret), `None` when unset.
fn env_string(env: &Env, name: &str) -> Option<String> {
    let value = js_sys::Reflect::get(env, &wasm_bindgen::JsValue::from_str(name)).ok()?;
    value.as_string()
}

fn misconfigured(detail: String) -> Reply {
    Reply::new(
        ReplyCode::WorkerMisconfigured,
        "the verifier is not configured correctly; the delivery was not forwarded, retry later",
    )
    .with_warning(detail)
}

fn to_response(reply: &Reply) -> worker::Result<Response> {
    let headers = worker::Headers::new();
    headers.set("content-type", "application/json")?;
    headers.set("cache-control", "no-store")?;
    for (name, value) in &reply.headers {
        headers.set(name, value)?;
    }
    Ok(Response::from_bytes(reply.body_json().into_bytes())?
        .with_status(reply.status())
        .with_headers(headers))
}
