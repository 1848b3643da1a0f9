//! Listen mode (`LISTEN_TOKEN` set): the `ListenObject` Durable Object that holds the
//! WebSocket of `postwire listen`, and how the Worker reaches it. The frames and the
//! rules are in [`crate::listen`].
//!
//! One object (named `listener`) holds the socket, with the hibernation API, so every
//! isolate of the Worker, in every location, reaches the same listener. A delivery is a
//! request to the object: it pushes a `delivery` frame down the socket and waits (at most
//! the forward timeout, never more than 10 s) for the `answer` frame with the same
//! correlation id; the socket closing or failing ends every wait on it at once (`absent`).
//! The Worker passes that wait to the object with each request (the upgrade included), and
//! the object greets each new listener with it (the `hello` frame), so the listener's own
//! timeout is derived from the one number. A new connection closes the older socket (code
//! 4001): the newest listener wins.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::pin::pin;
use std::time::Duration;

use futures_channel::oneshot;
use futures_util::future::{Either, select};
use worker::{
    Delay, DurableObject, Env, Method, Request, Response, State, Stub, WebSocket, WebSocketIncomingMessage,
    WebSocketPair, durable_object,
};

use postwire_edge_wire::listen::{Delivery, Hello, ListenerFrame, LocalOutcome, MAX_WAIT_MS, WorkerFrame};

use super::{LISTEN_BINDING, REPLACED_CLOSE_CODE, RelayResult, wait_ms};
use crate::config::Config;
use crate::edge::to_request;
use crate::edge::{Answer, misconfigured, now_ms};
use crate::handoff::{ForwardRequest, OriginOutcome};
use crate::reply::{Reply, ReplyCode};

/// The name of the one listen object.
const LISTENER_NAME: &str = "listener";
/// Internal: how long the object waits for the listener's answers, in ms ([`wait_ms`] of
/// the forward timeout), on every request the Worker makes to it.
const WAIT_HEADER: &str = "x-postwire-listen-wait-ms";
/// The URL of a relayed delivery (the object reads only the path).
const DELIVER_URL: &str = "https://listen.internal/deliver";
/// Headers passed down to the listener.
const PASSED_HEADERS: [&str; 4] = [
    postwire_core::ID_HEADER,
    postwire_core::TIMESTAMP_HEADER,
    postwire_core::SIGNATURE_HEADER,
    "content-type",
];

/// The listen object's stub when `LISTEN_TOKEN` is set: `Ok(None)` when listen mode is
/// off; an error reply when it is on but the `LISTEN` binding is missing.
pub(crate) fn listen_stub(env: &Env, config: &Config) -> Result<Option<Stub>, Reply> {
    if config.listen_token.is_none() {
        return Ok(None);
    }
    let stub = env
        .durable_object(LISTEN_BINDING)
        .and_then(|ns| ns.id_from_name(LISTENER_NAME)?.get_stub());
    match stub {
        Ok(stub) => Ok(Some(stub)),
        Err(_) => Err(misconfigured(format!(
            "LISTEN_TOKEN is set but the Durable Object binding {LISTEN_BINDING} is missing"
        ))),
    }
}

/// `GET /_postwire/listen`, already authorized: handed to the object, which answers `101`
/// with the socket. Anything but a WebSocket upgrade is `400`.
pub(crate) async fn connect_listener(req: Request, env: &Env, config: &Config) -> Answer {
    let upgrade = req.headers().get("upgrade").ok().flatten().unwrap_or_default();
    if !upgrade.eq_ignore_ascii_case("websocket") {
        return Reply::new(ReplyCode::InvalidRequest, "expected a WebSocket upgrade").into();
    }
    let stub = match listen_stub(env, config) {
        Ok(Some(stub)) => stub,
        Ok(None) => return crate::verify::not_found().into(),
        Err(reply) => return reply.into(),
    };
    // The object greets the listener with the wait; the incoming request's headers are
    // immutable, so it goes on a copy.
    let with_wait = req.clone_mut().and_then(|req| {
        req.headers()
            .set(WAIT_HEADER, &wait_ms(config.forward_timeout_ms).to_string())?;
        Ok(req)
    });
    let req = match with_wait {
        Ok(req) => req,
        Err(e) => return misconfigured(format!("the listen request could not be copied: {e}")).into(),
    };
    match stub.fetch_with_request(req).await {
        Ok(response) => Answer::Response(response),
        Err(e) => misconfigured(format!("the listen object could not be reached: {e}")).into(),
    }
}

/// Relays `request` to the listener through the object: the listener's result as an
/// outcome. The object bounds the wait; an object that cannot be reached is `Unreachable`.
pub(crate) async fn relay(stub: &Stub, request: &ForwardRequest<'_>) -> OriginOutcome {
    let Ok(req) = deliver_request(request) else {
        return OriginOutcome::Unreachable;
    };
    let Ok(mut response) = stub.fetch_with_request(req).await else {
        return OriginOutcome::Unreachable;
    };
    match response.json::<RelayResult>().await {
        Ok(result) => result.outcome(),
        Err(_) => OriginOutcome::Unreachable,
    }
}

fn deliver_request(request: &ForwardRequest<'_>) -> worker::Result<Request> {
    let relayed = ForwardRequest {
        url: DELIVER_URL,
        headers: request.headers.clone(),
        body: request.body,
        timeout_ms: request.timeout_ms,
    };
    let req = to_request(&relayed)?;
    req.headers()
        .set(WAIT_HEADER, &wait_ms(request.timeout_ms).to_string())?;
    Ok(req)
}

/// The wait the Worker set on `req` ([`WAIT_HEADER`]), at most [`MAX_WAIT_MS`]; the most
/// when it is missing.
fn wait_of(req: &Request) -> worker::Result<u64> {
    Ok(req
        .headers()
        .get(WAIT_HEADER)?
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(MAX_WAIT_MS, wait_ms))
}

/// A delivery waiting for the listener's answer.
struct Waiter {
    /// The socket it went down (its tag).
    socket: String,
    /// Where its answer goes; dropped (→ absent) when the socket goes.
    answer: oneshot::Sender<LocalOutcome>,
}

/// Holds the listener's socket and relays deliveries to it.
#[durable_object(websocket)]
pub struct ListenObject {
    state: State,
    /// Deliveries sent down the socket, by correlation id, waiting for their answer.
    waiting: RefCell<HashMap<String, Waiter>>,
    /// Makes tags and correlation ids unique within this instance.
    counter: Cell<u64>,
}

impl DurableObject for ListenObject {
    fn new(state: State, _env: Env) -> Self {
        ListenObject {
            state,
            waiting: RefCell::new(HashMap::new()),
            counter: Cell::new(0),
        }
    }

    async fn fetch(&self, req: Request) -> worker::Result<Response> {
        if req.path() == super::LISTEN_PATH {
            return self.accept_listener(wait_of(&req)?);
        }
        if req.method() == Method::Post {
            return self.deliver(req).await;
        }
        Response::error("no such path", 404)
    }

    async fn websocket_message(&self, _ws: WebSocket, message: WebSocketIncomingMessage) -> worker::Result<()> {
        // Anything but a well-formed answer is ignored: a listener cannot make the Worker fail.
        if let WebSocketIncomingMessage::String(text) = message
            && let Ok(ListenerFrame::Answer(answer)) = ListenerFrame::parse(&text)
        {
            let waiter = self.waiting.borrow_mut().remove(&answer.correlation_id);
            if let Some(waiter) = waiter {
                let _ = waiter.answer.send(answer.outcome());
            }
        }
        Ok(())
    }

    async fn websocket_close(&self, ws: WebSocket, _code: usize, _reason: String, _clean: bool) -> worker::Result<()> {
        self.forget(&ws);
        let _ = ws.close(Some(1000), Some("closed"));
        Ok(())
    }

    async fn websocket_error(&self, ws: WebSocket, _error: worker::Error) -> worker::Result<()> {
        self.forget(&ws);
        Ok(())
    }
}

impl ListenObject {
    /// A fresh value: the time in ms and a counter, zero-padded so that later tags sort later.
    fn next_name(&self) -> String {
        let n = self.counter.get().wrapping_add(1);
        self.counter.set(n);
        format!("{:015}-{:06}", now_ms() as u64, n % 1_000_000)
    }

    /// Accepts a new listener and greets it with the wait; an older one is closed (code
    /// 4001) and its waits end.
    fn accept_listener(&self, wait_ms: u64) -> worker::Result<Response> {
        let pair = WebSocketPair::new()?;
        for old in self.state.get_websockets() {
            self.forget(&old);
            let _ = old.close(Some(REPLACED_CLOSE_CODE), Some("replaced by a newer listener"));
        }
        let tag = self.next_name();
        self.state.accept_websocket_with_tags(&pair.server, &[tag.as_str()]);
        pair.server
            .send_with_str(WorkerFrame::Hello(Hello { wait_ms }).to_text())?;
        Response::from_websocket(pair.client)
    }

    /// Ends every wait on `ws` (they answer `absent`).
    fn forget(&self, ws: &WebSocket) {
        let tags = self.state.get_tags(ws);
        self.waiting.borrow_mut().retain(|_, w| !tags.contains(&w.socket));
    }

    /// The newest socket and its tag.
    fn newest(&self) -> Option<(WebSocket, String)> {
        self.state
            .get_websockets()
            .into_iter()
            .filter_map(|ws| {
                let tag = self.state.get_tags(&ws).into_iter().next()?;
                Some((ws, tag))
            })
            .max_by(|a, b| a.1.cmp(&b.1))
    }

    /// One delivery: down the socket, then wait for its answer.
    async fn deliver(&self, mut req: Request) -> worker::Result<Response> {
        let wait = wait_of(&req)?;
        let mut headers = BTreeMap::new();
        for name in PASSED_HEADERS {
            if let Some(value) = req.headers().get(name)? {
                headers.insert(name.to_owned(), value);
            }
        }
        // A provider route's delivery: its provider, event type and own headers too.
        let all: Vec<(String, String)> = req.headers().entries().collect();
        for (name, value) in crate::providers::forwarded_from(&all).unwrap_or_default() {
            headers.insert(name.to_owned(), value);
        }
        let id = headers.get(postwire_core::ID_HEADER).cloned().unwrap_or_default();
        let body = req.bytes().await?;
        let result = self.relay(id, headers, body, wait).await;
        Response::from_json(&result)
    }

    async fn relay(&self, id: String, headers: BTreeMap<String, String>, body: Vec<u8>, wait: u64) -> RelayResult {
        let Some((ws, socket)) = self.newest() else {
            return RelayResult::Absent;
        };
        let correlation_id = format!("{socket}.{}", self.next_name());
        let text = WorkerFrame::Delivery(Delivery::new(correlation_id.clone(), id, headers, body)).to_text();
        let (answer, answered) = oneshot::channel();
        self.waiting
            .borrow_mut()
            .insert(correlation_id.clone(), Waiter { socket, answer });
        if ws.send_with_str(text).is_err() {
            self.waiting.borrow_mut().remove(&correlation_id);
            return RelayResult::Absent;
        }
        let timeout = pin!(Delay::from(Duration::from_millis(wait)));
        match select(answered, timeout).await {
            Either::Left((Ok(outcome), _)) => RelayResult::from(outcome),
            Either::Left((Err(_), _)) => RelayResult::Absent,
            Either::Right(((), _)) => {
                self.waiting.borrow_mut().remove(&correlation_id);
                RelayResult::TimedOut
            }
        }
    }
}
