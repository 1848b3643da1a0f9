//! The Worker relay: `postwire listen --worker https://edge.example.com --forward
//! http://localhost:3000/webhooks` holds a WebSocket to the Worker's `/_postwire/listen`
//! (authenticated with its `LISTEN_TOKEN`), and for each delivery the Worker verified and
//! pushed down it: re-signs it with the local secret (so the local code verifies exactly as
//! in production), POSTs it to the local endpoint, reports the local status back over the
//! socket (the Worker answers the sender with it) and prints it. It reconnects with
//! back-off when the socket drops; it stops when a newer listener replaces it.
//!
//! The frames, the path and the close code are `postwire_edge_wire::listen`'s, the
//! definitions the Worker is built on. The Worker's first frame is its hello, with how long
//! it waits for each answer; the local endpoint gets that less the margin
//! ([`local_timeout_ms`](postwire_edge_wire::listen::local_timeout_ms)), so the relay's answer, "no answer in time" included, reaches
//! the Worker while it still waits, and the sender hears what the relay printed.
//!
//! The WebSocket is tokio-tungstenite over a plain TCP stream, or over tokio-rustls
//! (aws-lc-rs, the platform's roots) for `https` Workers: the TLS stack the rest of the CLI
//! uses.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use postwire_core::{Secret, Signer, UnixTime};
use postwire_edge_wire::admin;
use postwire_edge_wire::listen::{
    Answer, Delivery, Hello, LISTEN_PATH, ListenerFrame, REPLACED_CLOSE_CODE, WorkerFrame,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use url::Url;

use super::print::{DeliveryLine, Output};

/// First wait before reconnecting; doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// Longest wait before reconnecting.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The longest the TCP connection, the WebSocket handshake, and then the Worker's hello,
/// may each take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// How long `--replay`'s request to the admin API may take.
const REPLAY_TIMEOUT: Duration = Duration::from_secs(30);
/// A ping this often keeps the socket open through idle proxies and notices a dead one.
const PING_EVERY: Duration = Duration::from_secs(20);

/// Everything the relay needs.
pub struct Relay {
    /// The Worker's base URL.
    pub worker: Url,
    /// The Worker's `LISTEN_TOKEN`.
    pub token: String,
    /// The local endpoint.
    pub forward: Url,
    /// Signs for the local endpoint.
    pub signer: Signer,
    /// How each delivery is printed.
    pub output: Output,
    /// The Worker's `ADMIN_TOKEN` and a `webhook-id` to replay once connected.
    pub replay: Option<(String, String)>,
}

/// Why one connection ended.
enum Ended {
    /// A newer listener took over: stop.
    Replaced,
    /// Anything else: reconnect.
    Lost(String),
}

/// Any byte stream the WebSocket can run over (TCP, or TLS over TCP).
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Runs until Ctrl-C, or until a newer listener replaces this one.
pub async fn run(relay: Relay) -> Result<(), String> {
    let relay = Arc::new(relay);
    // No client-wide timeout: each local request gets the one the Worker's hello implies.
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let mut backoff = FIRST_BACKOFF;
    let mut replayed = false;
    loop {
        let attempt = async {
            let (ws, hello) = connect(&relay.worker, &relay.token).await?;
            let local_timeout = Duration::from_millis(hello.local_timeout_ms());
            eprintln!(
                "postwire listen: connected to {}; forwarding to {} (it has {} to answer: the Worker waits {})",
                origin_of(&relay.worker),
                relay.forward,
                seconds(local_timeout),
                seconds(Duration::from_millis(hello.wait_ms)),
            );
            Ok::<_, ConnectError>((ws, local_timeout))
        };
        let outcome = tokio::select! {
            r = attempt => r,
            _ = tokio::signal::ctrl_c() => return Ok(()),
        };
        match outcome {
            Ok((ws, local_timeout)) => {
                backoff = FIRST_BACKOFF;
                if !replayed && let Some((admin_token, id)) = relay.replay.clone() {
                    replayed = true;
                    let (client, worker) = (http.clone(), relay.worker.clone());
                    tokio::spawn(async move { replay(&client, &worker, &admin_token, &id).await });
                }
                let ended = tokio::select! {
                    e = serve(ws, Arc::clone(&relay), http.clone(), local_timeout) => e,
                    _ = tokio::signal::ctrl_c() => return Ok(()),
                };
                match ended {
                    Ended::Replaced => {
                        return Err("a newer listener connected to this Worker and replaced this one".to_owned());
                    }
                    Ended::Lost(why) => eprintln!("postwire listen: disconnected ({why})"),
                }
            }
            Err(ConnectError::Refused) => {
                return Err(
                    "the Worker refused the connection: wrong token, or LISTEN_TOKEN is not set on it".to_owned(),
                );
            }
            Err(ConnectError::NoHello) => {
                return Err(
                    "the Worker did not start with its hello frame: it runs another version of postwire's Worker; \
deploy the Worker of this postwire version"
                        .to_owned(),
                );
            }
            Err(ConnectError::Failed(why)) => eprintln!("postwire listen: cannot connect: {why}"),
        }
        let wait = jittered(backoff);
        eprintln!("postwire listen: reconnecting in {} ms", wait.as_millis());
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = tokio::signal::ctrl_c() => return Ok(()),
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// `backoff` ± 20 %, so that many listeners do not reconnect in step.
fn jittered(backoff: Duration) -> Duration {
    let mut byte = [0u8; 1];
    let _ = getrandom::fill(&mut byte);
    let factor = 0.8 + 0.4 * f64::from(byte[0]) / 255.0;
    backoff.mul_f64(factor)
}

/// Why a connection attempt failed.
enum ConnectError {
    /// The Worker answered without upgrading (wrong token, listen mode off): do not retry.
    Refused,
    /// The Worker's first frame was not its hello (another version of the Worker): do not retry.
    NoHello,
    /// Network, TLS, or a Worker answering 5xx: retry.
    Failed(String),
}

type Socket = tokio_tungstenite::WebSocketStream<Box<dyn Io>>;

/// `scheme://host[:port]`, never a path or query.
fn origin_of(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// The WebSocket URL of the Worker's listen endpoint: `wss` for an `https` Worker, `ws`
/// only for `http` to a loopback address (the token must not cross a network in clear).
pub fn listen_url(worker: &Url) -> Result<Url, String> {
    let loopback = match worker.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    let scheme = match worker.scheme() {
        "https" => "wss",
        "http" if loopback => "ws",
        "http" => {
            return Err("--worker: the token is sent only over https (http only to a loopback address)".to_owned());
        }
        other => return Err(format!("--worker: expected an https URL, not {other}")),
    };
    if !worker.username().is_empty() || worker.password().is_some() {
        return Err("--worker must not carry a user name or password".to_owned());
    }
    let host = worker.host_str().ok_or("--worker: the URL has no host")?;
    let port = worker.port().map(|p| format!(":{p}")).unwrap_or_default();
    let host = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_owned()
    };
    Url::parse(&format!("{scheme}://{host}{port}{LISTEN_PATH}")).map_err(|e| format!("--worker: {e}"))
}

/// A duration for people: `7 s`, `0.5 s`.
fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// Connects, authenticates and reads the Worker's hello.
async fn connect(worker: &Url, token: &str) -> Result<(Socket, Hello), ConnectError> {
    let url = listen_url(worker).map_err(ConnectError::Failed)?;
    let host = url.host_str().unwrap_or_default().trim_matches(['[', ']']).to_owned();
    let port = url.port_or_known_default().unwrap_or(443);
    let tcp = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect((host.as_str(), port)))
        .await
        .map_err(|_| ConnectError::Failed("timed out connecting".to_owned()))?
        .map_err(|e| ConnectError::Failed(e.to_string()))?;
    let _ = tcp.set_nodelay(true);
    let stream: Box<dyn Io> = if url.scheme() == "wss" {
        Box::new(tls(tcp, &host).await?)
    } else {
        Box::new(tcp)
    };
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(|e| ConnectError::Failed(e.to_string()))?;
    let bearer = format!("Bearer {token}")
        .parse()
        .map_err(|_| ConnectError::Failed("the token is not a valid header value".to_owned()))?;
    request.headers_mut().insert("authorization", bearer);
    let handshake = tokio_tungstenite::client_async(request, stream);
    let mut ws = match tokio::time::timeout(CONNECT_TIMEOUT, handshake).await {
        Err(_) => return Err(ConnectError::Failed("timed out in the WebSocket handshake".to_owned())),
        Ok(Ok((ws, _))) => ws,
        Ok(Err(tokio_tungstenite::tungstenite::Error::Http(response))) => {
            let status = response.status().as_u16();
            return Err(if (400..500).contains(&status) {
                ConnectError::Refused
            } else {
                ConnectError::Failed(format!("the Worker answered {status}"))
            });
        }
        Ok(Err(e)) => return Err(ConnectError::Failed(e.to_string())),
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, first_text(&mut ws)).await {
        Err(_) => Err(ConnectError::Failed("the Worker sent no hello".to_owned())),
        Ok(Err(e)) => Err(e),
        Ok(Ok(text)) => match WorkerFrame::parse(&text) {
            Ok(WorkerFrame::Hello(hello)) => Ok((ws, hello)),
            _ => Err(ConnectError::NoHello),
        },
    }
}

/// The first text frame on a new socket (pings and pongs skipped).
async fn first_text(ws: &mut Socket) -> Result<String, ConnectError> {
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(text))) => return Ok(text.as_str().to_owned()),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
            Some(Ok(Message::Close(_))) | None => {
                return Err(ConnectError::Failed(
                    "the Worker closed the socket before its hello".to_owned(),
                ));
            }
            Some(Ok(_)) => return Err(ConnectError::NoHello),
            Some(Err(e)) => return Err(ConnectError::Failed(e.to_string())),
        }
    }
}

/// TLS with aws-lc-rs and the platform's certificate verifier.
async fn tls(
    tcp: tokio::net::TcpStream,
    host: &str,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, ConnectError> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let failed = |e: String| ConnectError::Failed(format!("TLS: {e}"));
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| failed(e.to_string()))?
        .with_platform_verifier()
        .map_err(|e| failed(e.to_string()))?
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(host.to_owned()).map_err(|e| failed(e.to_string()))?;
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| failed(e.to_string()))
}

/// One connection: each delivery frame is relayed in its own task, the local endpoint
/// given `local_timeout`; answers go back in whatever order the local endpoint gives them.
async fn serve(ws: Socket, relay: Arc<Relay>, http: reqwest::Client, local_timeout: Duration) -> Ended {
    let (mut sink, mut stream) = ws.split();
    let (answers, mut to_send) = mpsc::unbounded_channel::<String>();
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.tick().await;
    loop {
        tokio::select! {
            frame = stream.next() => match frame {
                None => return Ended::Lost("the connection closed".to_owned()),
                Some(Err(e)) => return Ended::Lost(e.to_string()),
                Some(Ok(Message::Close(close))) => {
                    if close.as_ref().is_some_and(|c| c.code == CloseCode::from(REPLACED_CLOSE_CODE)) {
                        return Ended::Replaced;
                    }
                    let why = close.map(|c| format!("closed by the Worker: {} {}", u16::from(c.code), c.reason));
                    return Ended::Lost(why.unwrap_or_else(|| "closed by the Worker".to_owned()));
                }
                Some(Ok(Message::Text(text))) => {
                    // Anything but a delivery (a frame of a later version) is ignored.
                    if let Ok(WorkerFrame::Delivery(frame)) = WorkerFrame::parse(&text) {
                        let (relay, http, answers) = (Arc::clone(&relay), http.clone(), answers.clone());
                        tokio::spawn(async move {
                            let answer = deliver_locally(&relay, &http, frame, local_timeout).await;
                            let _ = answers.send(answer);
                        });
                    }
                }
                Some(Ok(_)) => {}
            },
            Some(answer) = to_send.recv() => {
                if let Err(e) = sink.send(Message::text(answer)).await {
                    return Ended::Lost(e.to_string());
                }
            }
            _ = ping.tick() => {
                if let Err(e) = sink.send(Message::Ping(Vec::new().into())).await {
                    return Ended::Lost(e.to_string());
                }
            }
        }
    }
}

/// Re-signs, POSTs to the local endpoint (given `local_timeout`), prints; the answer
/// frame to send back.
async fn deliver_locally(relay: &Relay, http: &reqwest::Client, frame: Delivery, local_timeout: Duration) -> String {
    let correlation_id = frame.correlation_id.clone();
    let body = match frame.body_bytes() {
        Ok(body) => body,
        Err(e) => {
            let mut line = DeliveryLine::new(&frame.id, &[], relay.output);
            line.error = Some(e.to_string());
            line.print(relay.output);
            return ListenerFrame::Answer(Answer::no_answer(correlation_id, e.to_string())).to_text();
        }
    };
    let mut line = DeliveryLine::new(&frame.id, &body, relay.output);
    let started = Instant::now();
    let result = forward(relay, http, &frame, body, local_timeout).await;
    line.latency_ms = Some(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX));
    let answer = match result {
        Ok(status) => {
            line.status = Some(status);
            Answer::status(correlation_id, status)
        }
        Err(error) => {
            line.error = Some(error.clone());
            Answer::no_answer(correlation_id, error)
        }
    };
    line.print(relay.output);
    ListenerFrame::Answer(answer).to_text()
}

/// The local endpoint's status within `local_timeout`, or why there is none.
async fn forward(
    relay: &Relay,
    http: &reqwest::Client,
    frame: &Delivery,
    body: Vec<u8>,
    local_timeout: Duration,
) -> Result<u16, String> {
    let timestamp = frame
        .headers
        .get(postwire_core::TIMESTAMP_HEADER)
        .and_then(|t| t.trim().parse::<i64>().ok())
        .ok_or("the delivery has no valid webhook-timestamp")?;
    let signature = relay
        .signer
        .sign(&frame.id, UnixTime::from_secs(timestamp), &body)
        .map_err(|e| e.to_string())?;
    let mut request = http
        .post(relay.forward.clone())
        .timeout(local_timeout)
        .header(postwire_core::ID_HEADER, &frame.id)
        .header(postwire_core::TIMESTAMP_HEADER, timestamp.to_string())
        .header(postwire_core::SIGNATURE_HEADER, signature.as_str());
    if let Some(ct) = frame.headers.get("content-type") {
        request = request.header("content-type", ct);
    }
    match request.body(body).send().await {
        Ok(response) => Ok(response.status().as_u16()),
        Err(e) if e.is_timeout() => Err(format!("no answer within {}", seconds(local_timeout))),
        Err(e) if e.is_connect() => Err(format!("cannot connect to {}", relay.forward)),
        Err(_) => Err("the local endpoint's answer could not be read".to_owned()),
    }
}

/// `--replay ID`: asks the Worker's admin API (inbox mode) to send one delivery again.
async fn replay(http: &reqwest::Client, worker: &Url, admin_token: &str, id: &str) {
    let mut url = worker.clone();
    url.set_query(None);
    url.set_fragment(None);
    let Ok(mut segments) = url.path_segments_mut() else {
        eprintln!("postwire listen: --replay: the Worker URL cannot take a path");
        return;
    };
    let prefix = admin::ADMIN_PREFIX.trim_matches('/');
    segments
        .clear()
        .extend([prefix, admin::path::DELIVERIES, id, admin::path::REPLAY]);
    drop(segments);
    let sent = http
        .post(url)
        .timeout(REPLAY_TIMEOUT)
        .bearer_auth(admin_token)
        .send()
        .await;
    match sent {
        Ok(r) if r.status().is_success() => eprintln!("postwire listen: replay of {id} requested"),
        Ok(r) if r.status().as_u16() == 404 => eprintln!(
            "postwire listen: --replay {id}: 404 (no such delivery, or the Worker is not in inbox mode, or the admin token is wrong)"
        ),
        Ok(r) => {
            let status = r.status().as_u16();
            // The Worker's stable code (`delivery_in_progress` for one still on its way).
            let body = r.bytes().await.unwrap_or_default();
            let code = serde_json::from_slice::<admin::ErrorBody>(&body)
                .map(|e| e.code)
                .unwrap_or_default();
            eprintln!("postwire listen: --replay {id}: the Worker answered {status} {code}");
        }
        Err(_) => eprintln!("postwire listen: --replay {id}: the Worker could not be reached"),
    }
}

/// A fresh local secret, printed by the caller.
pub fn fresh_secret() -> Result<Secret, String> {
    Secret::generate().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listen_url_follows_the_worker_s_scheme_and_drops_its_path() {
        let url = |s: &str| listen_url(&Url::parse(s).unwrap());
        assert_eq!(
            url("https://edge.example.com/x?y=1").unwrap().as_str(),
            "wss://edge.example.com/_postwire/listen"
        );
        assert_eq!(
            url("http://127.0.0.1:8787").unwrap().as_str(),
            "ws://127.0.0.1:8787/_postwire/listen"
        );
        assert_eq!(
            url("http://[::1]:9/").unwrap().as_str(),
            "ws://[::1]:9/_postwire/listen"
        );
        assert!(url("ftp://edge.example.com").is_err());
        assert!(
            url("http://edge.example.com").is_err(),
            "no token in clear over a network"
        );
        assert!(url("https://user:pw@edge.example.com").is_err());
    }
}
