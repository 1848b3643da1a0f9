//! The local inspector: `postwire listen --port 9000 --secret whsec_…` receives
//! deliveries on loopback itself, verifies each with postwire-core (the given `whsec_`
//! secrets and `whpk_` public keys), prints it with the verdict (the stable error code
//! when it fails) and answers `204` or `400` accordingly. For debugging a sender: no
//! Worker, no application, just "did it sign this right?".

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use postwire_core::Verifier;

use super::print::{DeliveryLine, Output};
use crate::input;

/// What each request handler needs.
struct Inspector {
    verifier: Verifier,
    output: Output,
}

/// Binds `addr`, says where on standard error, and serves until Ctrl-C.
pub async fn run(addr: SocketAddr, verifier: Verifier, output: Output) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    eprintln!("postwire listen: inspecting deliveries at http://{local}/ (any path); Ctrl-C stops");
    let state = Arc::new(Inspector { verifier, output });
    let app = Router::new().fallback(inspect).with_state(state);
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| e.to_string())
}

/// One request: verify, print, answer `204` (verified) or `400` with the error code.
async fn inspect(State(inspector): State<Arc<Inspector>>, headers: HeaderMap, body: Bytes) -> (StatusCode, String) {
    let id = headers
        .get(postwire_core::ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let mut line = DeliveryLine::new(id, &body, inspector.output);
    let answer = match inspector.verifier.verify(&headers, &body, input::now()) {
        Ok(_) => {
            line.verdict = Some("ok".to_owned());
            (StatusCode::NO_CONTENT, String::new())
        }
        Err(err) => {
            let code = err.code().as_str();
            line.verdict = Some(code.to_owned());
            line.detail = Some(err.to_string());
            (StatusCode::BAD_REQUEST, format!("{code}: {err}\n"))
        }
    };
    line.status = Some(answer.0.as_u16());
    line.print(inspector.output);
    answer
}
