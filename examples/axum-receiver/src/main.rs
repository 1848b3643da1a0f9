//! Runs the axum receiver:
//! `POSTWIRE_WEBHOOK_SECRET=whsec_... PORT=3000 cargo run -p postwire-example-axum-receiver`
//! and point a subscription at `http(s)://<host>:<port>/webhooks/postwire`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use postwire_core::{Event, Secret};
use postwire_example_axum_receiver::{EventHandler, events, router};

/// Your handling goes here: update your records, notify someone, enqueue a job...
struct PrintEvents;

impl EventHandler for PrintEvents {
    fn handle(&self, event: Event) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + '_>> {
        Box::pin(async move {
            println!("{}", events::describe(&event));
            Ok(())
        })
    }
}

#[tokio::main]
async fn main() {
    let secret = match std::env::var("POSTWIRE_WEBHOOK_SECRET").map(|s| Secret::parse(s.trim())) {
        Ok(Ok(secret)) => secret,
        Ok(Err(e)) => {
            // The error names the problem, never the value.
            eprintln!("POSTWIRE_WEBHOOK_SECRET: {e}");
            std::process::exit(2);
        }
        Err(_) => {
            eprintln!("set POSTWIRE_WEBHOOK_SECRET to the subscription's whsec_… secret");
            std::process::exit(2);
        }
    };
    let port: u16 = std::env::var("PORT").ok().and_then(|p| p.parse().ok()).unwrap_or(3000);
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("cannot listen on 127.0.0.1:{port}: {e}");
            std::process::exit(1);
        }
    };
    println!("listening on http://127.0.0.1:{port}/webhooks/postwire");
    if let Err(e) = axum::serve(listener, router(secret, Arc::new(PrintEvents))).await {
        eprintln!("server error: {e}");
        std::process::exit(1);
    }
}
