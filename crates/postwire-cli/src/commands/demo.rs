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

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use postwire_core::{Clock, EventType, Secret, SystemClock, Timestamp};
use postwire_sender::SenderConfig;
use postwire_server::clock::ScaledClock;
use postwire_server::receiver::{FailurePlan, LostAckPlan, Receiver, ReceiverStats};
use postwire_server::{NewToken, Scope, Server, ServerOptions};
use serde_json::{Value, json};

/// Arguments of `postwire demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// How many times faster than real time the sender's clock runs.
    #[arg(long, default_value_t = 60.0)]
    speed: f64,
    /// One line per attempt instead of a table redrawn in place (the default when
    /// standard output is not a terminal).
    #[arg(long)]
    plain: bool,
    /// Keep the temporary database and print where it is.
    #[arg(long)]
    keep: bool,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 50)]
    timeout_secs: u64,
}

const WORKSPACE: &str = "ws_demo";

/// One event the demo made, in the order it made them.
#[derive(Debug, Clone)]
struct DemoEvent {
    event_id: String,
    event_type: String,
    subject: String,
}

/// The API's view of one delivery (from `GET …/deliveries`).
#[derive(Debug, Clone, Default)]
struct DeliveryView {
    state: String,
    next_attempt_at: Option<Timestamp>,
    /// Oldest first: the status code or error of each attempt.
    attempts: Vec<String>,
}

struct Demo {
    http: reqwest::Client,
    base: String,
    token: String,
    ingest_token: String,
}

impl Demo {
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        bearer: &str,
        body: Option<Value>,
    ) -> Result<(u16, Value), String> {
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .bearer_auth(bearer);
        if let Some(b) = body {
            req = req.header("content-type", "application/json").body(b.to_string());
        }
        let resp = req.send().await.map_err(|e| format!("{method} {path}: {e}"))?;
        let status = resp.status().as_u16();
        let text = resp.text().await.map_err(|e| format!("{method} {path}: {e}"))?;
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Ok((status, value))
    }

    async fn api(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        expect: u16,
    ) -> Result<Value, String> {
        let (status, value) = self.call(method.clone(), path, &self.token, body).await?;
        if status != expect {
            return Err(format!("{method} {path} answered {status}: {value}"));
        }
        Ok(value)
    }

    async fn ingest(&self, method: reqwest::Method, path: &str, body: Value) -> Result<Value, String> {
        let (status, value) = self.call(method.clone(), path, &self.ingest_token, Some(body)).await?;
        if status != 200 {
            return Err(format!("{method} {path} answered {status}: {value}"));
        }
        Ok(value)
    }
}

fn random_hex(n: usize) -> String {
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

fn post_record(
    id: &str,
    external_id: &str,
    account: (&str, &str, &str),
    state: &str,
    release: Option<(&str, &str)>,
) -> Value {
    let mut post = json!({
        "id": id,
        "externalId": external_id,
        "group": "launch-week",
        "state": state,
        "publishDate": "2026-12-01T09:00:00.000Z",
        "integration": {"id": account.0, "name": account.1, "providerIdentifier": account.2},
        "content": "This text stays inside the platform: events never carry post content."
    });
    if let Some((url, rid)) = release {
        post["releaseURL"] = json!(url);
        post["releaseId"] = json!(rid);
    }
    post
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

    let outcome = story(&demo, &receiver, clock.clone(), &args, started).await;
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

async fn story(
    demo: &Arc<Demo>,
    receiver: &Receiver,
    clock: Arc<ScaledClock>,
    args: &DemoArgs,
    started: Instant,
) -> Result<ExitCode, String> {
    use reqwest::Method;
    // The platform registers the workspace and its accounts (internal ingest API).
    demo.ingest(
        Method::PUT,
        &format!("/internal/v1/workspaces/{WORKSPACE}"),
        json!({"name": "Acme Social"}),
    )
    .await?;
    demo.ingest(
        Method::PUT,
        &format!("/internal/v1/workspaces/{WORKSPACE}/integrations/acc_x"),
        json!({"name": "Acme on X", "providerIdentifier": "x"}),
    )
    .await?;
    demo.ingest(
        Method::PUT,
        &format!("/internal/v1/workspaces/{WORKSPACE}/integrations/acc_li"),
        json!({"name": "Acme on LinkedIn", "providerIdentifier": "linkedin"}),
    )
    .await?;

    // A client subscribes through the public API.
    let sub = demo
        .api(
            Method::POST,
            &format!("/public/v1/workspaces/{WORKSPACE}/webhooks"),
            Some(json!({"name": "demo receiver", "url": receiver.url()})),
            201,
        )
        .await?;
    let sub_id = sub["id"].as_str().unwrap_or_default().to_owned();
    let secret = Secret::parse(sub["secret"].as_str().unwrap_or_default())
        .map_err(|e| format!("creation returned no usable secret: {e}"))?;
    receiver.set_secrets(vec![secret]);
    receiver.set_failure_plan(Some(FailurePlan {
        event_type: EventType::PostPublished,
        failed_attempts: 2,
    }));
    receiver.set_lost_ack_plan(Some(LostAckPlan {
        event_type: EventType::IntegrationDisconnected,
        lost_acks: 1,
    }));
    println!(
        "POST /public/v1/workspaces/{WORKSPACE}/webhooks -> 201 {sub_id} (all event types; secret whsec_… shown once, handed to the receiver)"
    );
    println!("The receiver will answer 503 to the first 2 attempts of post.published, so you can watch the retries,");
    println!(
        "and will lose its 200 for integration.disconnected once, so the retry arrives as a duplicate it ignores."
    );
    println!();

    let events: Arc<Mutex<Vec<DemoEvent>>> = Arc::new(Mutex::new(Vec::new()));
    let test = demo
        .api(
            Method::POST,
            &format!("/public/v1/workspaces/{WORKSPACE}/webhooks/{sub_id}/test"),
            Some(json!({"message": "Hello from postwire demo"})),
            202,
        )
        .await?;
    events.lock().unwrap_or_else(|p| p.into_inner()).push(DemoEvent {
        event_id: test["eventId"].as_str().unwrap_or_default().to_owned(),
        event_type: "webhook.test".into(),
        subject: "(test event via API)".into(),
    });

    // The platform reports what happens to posts and accounts (internal ingest API).
    let x = ("acc_x", "Acme on X", "x");
    let li = ("acc_li", "Acme on LinkedIn", "linkedin");
    let script: Vec<(&str, &str, Value)> = vec![
        (
            "post.scheduled",
            "post_1 on X",
            json!({"kind": "post", "workspaceId": WORKSPACE, "change": "scheduled", "post": post_record("post_1", "launch-2026", x, "QUEUE", None)}),
        ),
        (
            "post.scheduled",
            "post_2 on LinkedIn",
            json!({"kind": "post", "workspaceId": WORKSPACE, "change": "scheduled", "post": post_record("post_2", "webinar-invite", li, "QUEUE", None)}),
        ),
        (
            "post.publishing",
            "post_1 on X",
            json!({"kind": "post", "workspaceId": WORKSPACE, "change": "publishing", "post": post_record("post_1", "launch-2026", x, "PUBLISHING", None)}),
        ),
        (
            "post.published",
            "post_1 on X",
            json!({"kind": "post", "workspaceId": WORKSPACE, "change": "published", "post": post_record("post_1", "launch-2026", x, "PUBLISHED", Some(("https://x.com/acme/status/1", "1")))}),
        ),
        (
            "post.publishing",
            "post_2 on LinkedIn",
            json!({"kind": "post", "workspaceId": WORKSPACE, "change": "publishing", "post": post_record("post_2", "webinar-invite", li, "PUBLISHING", None)}),
        ),
        (
            "post.failed",
            "post_2 on LinkedIn",
            json!({"kind": "post", "workspaceId": WORKSPACE, "change": "failed", "post": post_record("post_2", "webinar-invite", li, "ERROR", None),
            "error": {"code": "rate_limited", "message": "LinkedIn rate limit reached; try again in 15 minutes", "retryable": true}}),
        ),
        (
            "integration.disconnected",
            "Acme on LinkedIn",
            json!({"kind": "account", "workspaceId": WORKSPACE, "change": "disconnected", "reason": "reconnect_required",
            "integration": {"id": "acc_li", "name": "Acme on LinkedIn", "providerIdentifier": "linkedin"}}),
        ),
    ];
    let expected = script.len() + 1;
    let publisher = {
        let demo = demo.clone();
        let events = events.clone();
        tokio::spawn(async move {
            for (event_type, subject, change) in script {
                tokio::time::sleep(Duration::from_millis(300)).await;
                let out = demo
                    .ingest(Method::POST, "/internal/v1/events", json!({"changes": [change]}))
                    .await?;
                let id = out["results"][0]["eventId"].as_str().unwrap_or_default().to_owned();
                events.lock().unwrap_or_else(|p| p.into_inner()).push(DemoEvent {
                    event_id: id,
                    event_type: event_type.into(),
                    subject: subject.into(),
                });
            }
            Ok::<(), String>(())
        })
    };

    let live = !args.plain && std::io::stdout().is_terminal();
    let mut view = View::new(live);
    let deadline = started + Duration::from_secs(args.timeout_secs);
    let mut publisher = Some(publisher);
    let (deliveries, stats) = loop {
        tokio::time::sleep(Duration::from_millis(150)).await;
        if publisher.as_ref().is_some_and(|p| p.is_finished())
            && let Some(p) = publisher.take()
        {
            p.await.map_err(|e| e.to_string())??;
        }
        let deliveries = fetch_deliveries(demo, &sub_id).await?;
        let stats = receiver.stats();
        let snapshot = events.lock().unwrap_or_else(|p| p.into_inner()).clone();
        view.render(&snapshot, &deliveries, &stats, clock.as_ref(), started);
        let all_final = snapshot.len() == expected
            && snapshot.iter().all(|e| {
                deliveries
                    .get(&e.event_id)
                    .is_some_and(|d| d.state == "delivered" || d.state == "failed")
            });
        if publisher.is_none() && all_final {
            break (deliveries, stats);
        }
        if Instant::now() > deadline {
            view.finish();
            println!("gave up after {} s", args.timeout_secs);
            break (deliveries, stats);
        }
    };
    view.finish();
    let snapshot = events.lock().unwrap_or_else(|p| p.into_inner()).clone();

    // A receiver that missed events can reconcile through the look-up.
    let lookup = demo
        .api(
            Method::GET,
            &format!("/public/v1/workspaces/{WORKSPACE}/posts/lookup?externalId=launch-2026"),
            None,
            200,
        )
        .await?;
    let n = lookup["data"].as_array().map(Vec::len).unwrap_or(0);
    println!(
        "GET /public/v1/workspaces/{WORKSPACE}/posts/lookup?externalId=launch-2026 -> {n} events of post_1, newest first (for reconciling missed events)"
    );

    let delivered = snapshot
        .iter()
        .filter(|e| deliveries.get(&e.event_id).is_some_and(|d| d.state == "delivered"))
        .count();
    let verified = snapshot
        .iter()
        .filter(|e| stats.events.get(&e.event_id).is_some_and(|r| r.verified))
        .count();
    let retried: u32 = deliveries
        .values()
        .map(|d| d.attempts.len().saturating_sub(1) as u32)
        .sum();
    let duplicates: u32 = stats.events.values().map(|r| r.duplicates).sum();
    let lost = expected.saturating_sub(verified);
    println!(
        "{} events, {delivered} delivered, {verified} verified, {lost} lost ({retried} retries, {duplicates} duplicate(s) ignored, {} rejected signatures) in {:.1} s",
        expected,
        stats.rejected,
        started.elapsed().as_secs_f64()
    );
    if delivered == expected && verified == expected && lost == 0 && stats.rejected == 0 {
        println!(
            "Every event was delivered, signed and verified. Next: `postwire serve`, then `postwire token create` (see README)."
        );
        Ok(ExitCode::SUCCESS)
    } else {
        Ok(ExitCode::FAILURE)
    }
}

async fn fetch_deliveries(demo: &Demo, sub_id: &str) -> Result<BTreeMap<String, DeliveryView>, String> {
    let page = demo
        .api(
            reqwest::Method::GET,
            &format!("/public/v1/workspaces/{WORKSPACE}/webhooks/{sub_id}/deliveries?limit=100"),
            None,
            200,
        )
        .await?;
    let mut out = BTreeMap::new();
    for d in page["data"].as_array().cloned().unwrap_or_default() {
        let mut attempts: Vec<String> = d["attempts"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|a| match a["responseStatus"].as_u64() {
                Some(s) => s.to_string(),
                None => a["error"].as_str().unwrap_or("error").to_owned(),
            })
            .collect();
        attempts.reverse();
        out.insert(
            d["eventId"].as_str().unwrap_or_default().to_owned(),
            DeliveryView {
                state: d["state"].as_str().unwrap_or_default().to_owned(),
                next_attempt_at: d["nextAttemptAt"].as_str().and_then(|t| t.parse().ok()),
                attempts,
            },
        );
    }
    Ok(out)
}

/// The live table: redrawn in place on a terminal, or one line per new attempt.
struct View {
    live: bool,
    drawn_lines: usize,
    printed_attempts: BTreeMap<String, usize>,
    last: Option<Frame>,
}

/// What the last render showed, for the final table.
type Frame = (
    Vec<DemoEvent>,
    BTreeMap<String, DeliveryView>,
    ReceiverStats,
    Timestamp,
    String,
);

fn human_secs(ms: i64) -> String {
    let s = (ms.max(0) + 999) / 1000;
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

impl View {
    fn new(live: bool) -> View {
        View {
            live,
            drawn_lines: 0,
            printed_attempts: BTreeMap::new(),
            last: None,
        }
    }

    fn rows(
        events: &[DemoEvent],
        deliveries: &BTreeMap<String, DeliveryView>,
        stats: &ReceiverStats,
        now: Timestamp,
    ) -> Vec<String> {
        let mut rows = vec![format!(
            "  {:<2} {:<25} {:<21} {:<10} {:<28} {}",
            "#", "EVENT", "ABOUT", "STATE", "ATTEMPTS (receiver status)", "RECEIVER"
        )];
        for (i, e) in events.iter().enumerate() {
            let d = deliveries.get(&e.event_id).cloned().unwrap_or_default();
            let mut attempts = d.attempts.join(" > ");
            if d.state == "pending"
                && let Some(at) = d.next_attempt_at
            {
                let wait = at.unix_millis() - now.unix_millis();
                if wait > 0 && !d.attempts.is_empty() {
                    attempts.push_str(&format!(" > retry in {}", human_secs(wait)));
                }
            }
            let r = stats.events.get(&e.event_id);
            let receiver = match r {
                None => "-".to_owned(),
                Some(r) if r.verified && r.duplicates > 0 => format!("verified; {} duplicate ignored", r.duplicates),
                Some(r) if r.verified && r.lost_acks > 0 => "verified; answer lost (500)".to_owned(),
                Some(r) if r.verified => "verified".to_owned(),
                Some(r) if r.failed_on_purpose > 0 => "down (503 on purpose)".to_owned(),
                Some(_) => "rejected".to_owned(),
            };
            let state = if d.state.is_empty() {
                "queued".to_owned()
            } else {
                d.state.clone()
            };
            rows.push(format!(
                "  {:<2} {:<25} {:<21} {:<10} {:<28} {}",
                i + 1,
                e.event_type,
                e.subject,
                state,
                attempts,
                receiver
            ));
        }
        rows
    }

    fn progress(
        events: &[DemoEvent],
        deliveries: &BTreeMap<String, DeliveryView>,
        stats: &ReceiverStats,
        started: Instant,
        clock: &ScaledClock,
    ) -> String {
        let total = events.len();
        let delivered = events
            .iter()
            .filter(|e| deliveries.get(&e.event_id).is_some_and(|d| d.state == "delivered"))
            .count();
        let retrying = events
            .iter()
            .filter(|e| {
                deliveries
                    .get(&e.event_id)
                    .is_some_and(|d| d.state == "pending" && !d.attempts.is_empty())
            })
            .count();
        let verified = events
            .iter()
            .filter(|e| stats.events.get(&e.event_id).is_some_and(|r| r.verified))
            .count();
        let width = 20;
        let filled = (delivered * width).checked_div(total).unwrap_or(0);
        let real = started.elapsed().as_secs_f64();
        format!(
            "  [{}{}] {delivered}/{total} delivered, {retrying} retrying, {verified} verified | {real:.1} s real = {} on the sender's clock",
            "#".repeat(filled),
            ".".repeat(width - filled),
            human_secs((real * clock.factor() * 1000.0) as i64)
        )
    }

    fn render(
        &mut self,
        events: &[DemoEvent],
        deliveries: &BTreeMap<String, DeliveryView>,
        stats: &ReceiverStats,
        clock: &ScaledClock,
        started: Instant,
    ) {
        let now = clock.now();
        let mut out = std::io::stdout().lock();
        if self.live {
            let mut lines = View::rows(events, deliveries, stats, now);
            lines.push(String::new());
            lines.push(View::progress(events, deliveries, stats, started, clock));
            if self.drawn_lines > 0 {
                let _ = write!(out, "\x1b[{}A", self.drawn_lines);
            }
            for l in &lines {
                let _ = writeln!(out, "\x1b[2K{l}");
            }
            self.drawn_lines = lines.len();
        } else {
            for e in events {
                let Some(d) = deliveries.get(&e.event_id) else { continue };
                let seen = self.printed_attempts.entry(e.event_id.clone()).or_insert(0);
                while *seen < d.attempts.len() {
                    let n = *seen + 1;
                    let outcome = &d.attempts[*seen];
                    let next = if n == d.attempts.len() && d.state == "pending" {
                        d.next_attempt_at
                            .map(|at| {
                                format!(
                                    ", retry in {} (sender clock)",
                                    human_secs(at.unix_millis() - now.unix_millis())
                                )
                            })
                            .unwrap_or_default()
                    } else if n == d.attempts.len() {
                        format!(", {}", d.state)
                    } else {
                        String::new()
                    };
                    let _ = writeln!(
                        out,
                        "  {:>5.1}s  {:<25} {:<21} attempt {n} -> {outcome}{next}",
                        started.elapsed().as_secs_f64(),
                        e.event_type,
                        e.subject
                    );
                    *seen += 1;
                }
            }
        }
        let _ = out.flush();
        self.last = Some((
            events.to_vec(),
            deliveries.clone(),
            stats.clone(),
            now,
            View::progress(events, deliveries, stats, started, clock),
        ));
    }

    fn finish(&mut self) {
        if let Some((events, deliveries, stats, now, progress)) = self.last.take() {
            if !self.live {
                println!();
                for l in View::rows(&events, &deliveries, &stats, now) {
                    println!("{l}");
                }
                println!();
                println!("{progress}");
            }
            println!();
        }
    }
}
