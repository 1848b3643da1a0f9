//! `postwire demo`: the whole webhook story on one machine, in seconds.
//!
//! It starts the real server on a temporary database, a local receiver that verifies
//! every delivery with postwire-core and de-duplicates by `webhook-id`, creates a
//! subscription through the HTTP API, sends a test event, and reports a realistic
//! sequence through the internal ingest API: a post scheduled, publishing, published;
//! another that fails with `rate_limited`; an account disconnected. The receiver is down
//! for the first two attempts of `post.published`, and loses its answer to the first
//! `integration.disconnected` (so the retry is a duplicate it ignores): the sender's
//! clock runs 60 times faster than real time, so the spec's 30 s and 2 min delays take
//! half a second and two seconds. A live table (redrawn in place on a terminal, one line
//! per attempt otherwise) shows deliveries and attempts as the API reports them, and the
//! last line sums up: `N events, N delivered, N verified, 0 lost`. Exit status 0 means
//! every event was delivered and verified. Run in a terminal, it then prints a magic
//! link to the workspace's Settings screen and keeps serving until Ctrl-C; otherwise
//! (CI, a pipe) it exits at once.
//!
//! The command is split by job: [`client`] speaks to the API, [`story`] is the scripted
//! sequence and its summary, [`poll`] reads the deliveries back, [`view`] draws them,
//! [`receiver`] is the verifying receiver and [`clock`] the sped-up clock.

mod client;
pub(crate) mod clock;
mod poll;
pub(crate) mod receiver;
mod story;
mod view;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use postwire_core::{Clock, SystemClock};
use postwire_sender::SenderConfig;
use postwire_server::{NewToken, Scope, Server, ServerOptions};

use client::Demo;
use clock::ScaledClock;
use receiver::Receiver;

/// Arguments of `postwire demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// How many times faster than real time the sender's clock runs.
    #[arg(long, default_value_t = 60.0)]
    pub(crate) speed: f64,
    /// One line per attempt instead of a table redrawn in place (the default when
    /// standard output is not a terminal).
    #[arg(long)]
    pub(crate) plain: bool,
    /// Keep the temporary database and print where it is.
    #[arg(long)]
    pub(crate) keep: bool,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 50)]
    pub(crate) timeout_secs: u64,
}

pub(crate) const WORKSPACE: &str = "ws_demo";

pub(crate) fn random_hex(n: usize) -> String {
    let mut b = vec![0u8; n];
    let _ = getrandom::fill(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Runs `postwire demo`.
pub fn run(args: DemoArgs) -> Result<ExitCode, String> {
    crate::commands::serve::init_logging("warn");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start Tokio: {e}"))?;
    let dir = std::env::temp_dir().join(format!("postwire-demo-{}-{}", std::process::id(), random_hex(4)));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let keep = args.keep;
    let result = runtime.block_on(demo(args, dir.clone()));
    if keep {
        println!("database kept in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

async fn demo(args: DemoArgs, dir: PathBuf) -> Result<ExitCode, String> {
    let started = Instant::now();
    let clock = Arc::new(ScaledClock::new(args.speed));
    let sender_clock: Arc<dyn Clock> = clock.clone();
    let ingest_token = format!("pwi_{}", random_hex(24));
    let sender_config = SenderConfig {
        attempt_timeout: Duration::from_secs(5),
        idle_poll: Duration::from_millis(50),
        ..SenderConfig::default()
    }
    .dangerously_allow_insecure_local_urls();
    let mut options = ServerOptions::new(dir.join("postwire.db"));
    options.sender_config = sender_config;
    options.sender_clock = sender_clock.clone();
    options.ingest_token = Some(ingest_token.clone());
    let server = Server::open(options).await.map_err(|e| e.to_string())?;
    let created = server
        .state()
        .tokens
        .create(
            NewToken {
                name: "demo".into(),
                scopes: vec![Scope::WebhooksWrite],
                workspaces: vec![WORKSPACE.into()],
            },
            SystemClock.now(),
        )
        .await
        .map_err(|e| e.to_string())?;
    let running = server.start("127.0.0.1:0").await.map_err(|e| e.to_string())?;
    let receiver = Receiver::start(sender_clock.clone())
        .await
        .map_err(|e| format!("cannot start the receiver: {e}"))?;
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .map_err(|e| e.to_string())?;
    let demo = Arc::new(Demo {
        http,
        base: running.base_url(),
        token: created.token,
        ingest_token,
    });

    println!("postwire demo: a webhook sender, its HTTP API and a verifying receiver, all on this machine.");
    println!(
        "  API        {}/public/v1  (temporary database in {})",
        demo.base,
        dir.display()
    );
    println!(
        "  receiver   {}  (verifies each delivery with postwire-core, de-duplicates by webhook-id)",
        receiver.url()
    );
    println!(
        "  clock      the sender's clock runs {}x real time: the 30 s and 2 min retry delays take {:.1} s and {:.1} s",
        args.speed,
        30.0 / args.speed,
        120.0 / args.speed
    );
    println!(
        "  DANGEROUS  --dangerously-allow-insecure-local-urls is on so the sender may call the http://127.0.0.1 receiver (never in production)"
    );
    println!();

    let outcome = story::story(&demo, &receiver, clock.clone(), &args, started).await;
    if outcome.is_ok() {
        if std::io::stdout().is_terminal() {
            settings_until_ctrl_c(&demo).await?;
        } else {
            println!("(In a terminal, the demo keeps serving and prints a link to its Settings screen.)");
        }
    }
    running.shutdown().await;
    receiver.stop().await;
    outcome
}

/// Prints a magic link to the demo workspace's Settings screen and keeps serving (the
/// receiver too, so test events sent from the screen arrive) until Ctrl-C or SIGTERM.
async fn settings_until_ctrl_c(demo: &Demo) -> Result<(), String> {
    let link = demo
        .api(
            reqwest::Method::POST,
            &format!("/public/v1/workspaces/{WORKSPACE}/portal-sessions"),
            None,
            201,
        )
        .await?;
    println!();
    println!("Settings screen of this workspace (the link works once, for 5 minutes):");
    println!("  {}", link["url"].as_str().unwrap_or_default());
    println!("Serving until Ctrl-C.");
    postwire_server::shutdown_signal().await;
    println!("stopping…");
    Ok(())
}
