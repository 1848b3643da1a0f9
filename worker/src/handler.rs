//! The `fetch` event handler (compiled only for `wasm32`): verifies each request with
//! [`crate::verify`] and hands it to its mode: [`crate::forward`] (KV or the `DedupObject`),
//! [`crate::inbox`] (the `InboxObject`, and its admin API under `/_postwire/`) or
//! [`crate::listen`] (the listener's WebSocket). With `PROVIDER_ROUTES` set, each path is
//! a provider's route ([`crate::providers`]): verified by its scheme, its handshakes
//! answered here, its deliveries handed to the same modes. Tested in workerd through
//! Miniflare by `worker/test.sh`.

use std::rc::Rc;

use worker::{Context, Env, Request, Response, event};

use crate::config::{Config, DedupBackend, DeliveryMode, INBOX_BINDING, KV_BINDING};
use crate::edge::{Answer, body, env_string, log_warnings, misconfigured, now_ms, read_config, to_response};
use crate::forward::{FetchOrigin, InFlightSet, IsolateGuardedStore, KvDedupStore};
use crate::providers::{ProviderRoute, ProviderRoutes, RouteOutcome};
use crate::reply::{Reply, ReplyCode};
use crate::verify::VerifiedDelivery;
use crate::verify::check_payload;
use crate::verify::inspect::{body_too_large, check_declared_length, check_method, precheck};
use postwire_core::UnixTime;

thread_local! {
    /// The ids this isolate is forwarding now (KV mode). One isolate runs on one thread, so
    /// this is shared by every request the isolate serves.
    static IN_FLIGHT: Rc<InFlightSet> = Rc::new(InFlightSet::new());
}

#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> worker::Result<Response> {
    match handle(req, &env).await {
        Answer::Reply(reply) => {
            log_warnings(&reply);
            to_response(&reply)
        }
        Answer::Response(response) => Ok(response),
    }
}

/// One request, start to end. Every path returns an answer; nothing panics.
async fn handle(mut req: Request, env: &Env) -> Answer {
    let method = req.inner().method();
    let path = req.url().map(|url| url.path().to_owned()).unwrap_or_default();
    if let Ok(url) = req.url() {
        if url.path() == crate::listen::LISTEN_PATH {
            return listen(req, env).await;
        }
        if url.path().starts_with(crate::inbox::ADMIN_PREFIX) {
            return admin(&req, env, &url).await;
        }
    }
    let routes = match ProviderRoutes::from_lookup(|name| env_string(env, name)) {
        Ok(routes) => routes,
        Err(e) => return misconfigured(e.to_string()).into(),
    };
    if let Some(routes) = routes {
        let Some(route) = routes.find(&path) else {
            return crate::providers::delivery::no_route().into();
        };
        return provider_route(req, env, route, &method).await;
    }
    if let Err(reply) = check_method(&method) {
        return reply.into();
    }
    let config = match read_config(env) {
        Ok(c) => c,
        Err(e) => return misconfigured(e.to_string()).into(),
    };
    let headers: Vec<(String, String)> = req.headers().entries().collect();
    let delivery_headers = match precheck(&method, &headers, config.max_body_bytes) {
        Ok(h) => h,
        Err(reply) => return reply.into(),
    };
    let body = match read_body(&mut req, config.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(answer) => return answer,
    };
    let received_ms = now_ms();
    let now = UnixTime::from_secs((received_ms / 1000.0) as i64);
    // The static keys, plus WEBHOOK_KEYS_URL's (fetched and kept in this isolate).
    let trust = crate::verify::key_set_fetch::Trust {
        verifier: config.verifier.as_ref(),
        static_keys: &config.static_keys,
        tolerance_secs: config.tolerance_secs,
        key_set: config.key_set.as_ref(),
    };
    let delivery = match crate::verify::key_set_fetch::verify_delivery(&trust, delivery_headers, body, now).await {
        Ok(d) => d,
        Err(reply) => return reply.into(),
    };
    if let Err(reply) = check_payload(config.payload, &delivery.headers.id, &delivery.body) {
        return reply.into();
    }
    let key = match config.delivery_mode {
        DeliveryMode::Inbox => crate::inbox::ordering_key(config.inbox.ordering, &delivery.body),
        DeliveryMode::Forward => None,
    };
    dispatch(env, &config, &delivery, key.as_deref(), received_ms).await
}

/// The request's body within `max_body_bytes`, or the answer that refuses it: `413` when
/// it is larger, `400` when it cannot be read to its end.
async fn read_body(req: &mut Request, max_body_bytes: usize) -> Result<Vec<u8>, Answer> {
    match body::read_limited(req, max_body_bytes).await {
        Ok(body::Body::Complete(bytes)) => Ok(bytes),
        Ok(body::Body::TooLarge) => Err(body_too_large(max_body_bytes).into()),
        Err(_) => Err(Reply::new(
            ReplyCode::InvalidRequest,
            "the request body could not be read to its end",
        )
        .into()),
    }
}

/// A request on a provider route: method, declared size, the route's keys, the body within
/// the limit, then the provider's verification; a handshake is answered here, a delivery
/// goes to the Worker's mode like any other.
async fn provider_route(mut req: Request, env: &Env, route: &ProviderRoute, method: &str) -> Answer {
    if let Err(reply) = check_method(method) {
        return reply.into();
    }
    let config = match read_config(env) {
        Ok(c) => c,
        Err(e) => return misconfigured(e.to_string()).into(),
    };
    let headers: Vec<(String, String)> = req.headers().entries().collect();
    let content_length = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| v.as_str());
    if let Err(reply) = check_declared_length(content_length, config.max_body_bytes) {
        return reply.into();
    }
    let Some(keys) = env_string(env, &route.secret_binding) else {
        return misconfigured(crate::providers::delivery::missing_secret(route)).into();
    };
    let verifier = match crate::providers::route_verifier(route, &keys) {
        Ok(v) => v,
        Err(detail) => return misconfigured(detail).into(),
    };
    let body = match read_body(&mut req, config.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(answer) => return answer,
    };
    let received_ms = now_ms();
    let now = UnixTime::from_secs((received_ms / 1000.0) as i64);
    match crate::providers::verify_on_route(route, &verifier, &headers, body, now) {
        Err(reply) => reply.into(),
        Ok(RouteOutcome::Handshake(handshake)) => match handshake_response(&handshake.body) {
            Ok(response) => Answer::Response(response),
            Err(e) => misconfigured(format!("the handshake answer could not be built: {e}")).into(),
        },
        Ok(RouteOutcome::Delivery(delivery)) => dispatch(env, &config, &delivery, None, received_ms).await,
    }
}

/// `200` with a handshake's JSON body.
fn handshake_response(body: &str) -> worker::Result<Response> {
    let headers = worker::Headers::new();
    headers.set("content-type", "application/json")?;
    headers.set("cache-control", "no-store")?;
    Ok(Response::from_bytes(body.as_bytes().to_vec())?
        .with_status(200)
        .with_headers(headers))
}

/// A verified delivery handed to the Worker's mode: the inbox, or forward mode through KV
/// or the `DedupObject`.
async fn dispatch(
    env: &Env,
    config: &Config,
    delivery: &VerifiedDelivery,
    ordering_key: Option<&str>,
    received_ms: f64,
) -> Answer {
    let now = UnixTime::from_secs((received_ms / 1000.0) as i64);
    let listen = match crate::listen::listen_stub(env, config) {
        Ok(listen) => listen,
        Err(reply) => return reply.into(),
    };
    if config.delivery_mode == DeliveryMode::Inbox {
        if env.durable_object(INBOX_BINDING).is_err() {
            return misconfigured(format!(
                "DELIVERY_MODE is \"inbox\" but the Durable Object binding {INBOX_BINDING} is missing"
            ))
            .into();
        }
        return crate::inbox::accept_through_inbox(env, delivery, ordering_key, received_ms).await;
    }
    match config.dedup_store {
        DedupBackend::Kv => {
            let kv = match env.kv(KV_BINDING) {
                Ok(kv) => kv,
                Err(_) => {
                    return misconfigured(format!("the KV namespace binding {KV_BINDING} is missing")).into();
                }
            };
            let store = IsolateGuardedStore::new(
                KvDedupStore::new(kv, config.dedup_ttl_secs, config.in_flight_ttl_secs),
                IN_FLIGHT.with(Rc::clone),
                now_ms,
                (config.in_flight_ttl_secs * 1000) as f64,
            );
            crate::forward::deliver(config, delivery, &store, &FetchOrigin { listen }, now)
                .await
                .into()
        }
        DedupBackend::DurableObject => crate::forward::deliver_through_object(env, delivery, received_ms).await,
    }
}

/// An admin request (`/_postwire/…`): `404` unless inbox mode with an `ADMIN_TOKEN` and the
/// request carries it; then the inbox answers.
async fn admin(req: &Request, env: &Env, url: &url::Url) -> Answer {
    let Ok(config) = read_config(env) else {
        return crate::verify::not_found().into();
    };
    let authorization = req.headers().get("authorization").ok().flatten();
    if config.delivery_mode != DeliveryMode::Inbox
        || !crate::verify::authorized(config.admin_token.as_ref(), authorization.as_deref())
    {
        return crate::verify::not_found().into();
    }
    let path_and_query = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    };
    crate::inbox::admin_through_inbox(env, req.method(), &path_and_query).await
}

/// `/_postwire/listen`: the WebSocket of `postwire listen`, when `LISTEN_TOKEN` is set and
/// the request carries it (compared in constant time, before any upgrade). Otherwise the
/// same `404` as any unknown admin path.
async fn listen(req: Request, env: &Env) -> Answer {
    let Ok(config) = read_config(env) else {
        return crate::verify::not_found().into();
    };
    let authorization = req.headers().get("authorization").ok().flatten();
    if !crate::verify::authorized(config.listen_token.as_ref(), authorization.as_deref()) {
        return crate::verify::not_found().into();
    }
    crate::listen::connect_listener(req, env, &config).await
}
