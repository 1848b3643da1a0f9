//! Throughput, latency and memory of the sender, against a loopback receiver, compared
//! with `wrk` hitting the same receiver in the same run.
//!
//! ```text
//! cargo run --release -p postwire-sender --example bench -- [--deliveries N] [--held N] [--skip-wrk]
//!     [--per-subscription N] [--in-flight N]   (the dispatcher's limits; defaults 32 and 256)
//!     [--subscriptions 1|10|100]               (only that throughput run)
//!     [--backlog N]       (the outage's backlog drained, default 1,000,000; 0 skips it)
//!     [--claim-depths N,N,..] (claim time at these depths, default 1000,100000,1000000)
//!     [--signing symmetric|asymmetric|both] (the subscriptions' signatures: v1 HMAC, the
//!                         default; v1a ed25519; or both, v1 then v1a)
//! BENCH_DIR=/dev/shm (where the database goes)  BENCH_WORKERS=N (runtime threads, default 2)
//! BENCH_VERBOSE=1 (how long publishing took, and the CPU per delivery of each kind of thread)
//! BENCH_DRAIN_ONLY=1 (publish every event first, then time the dispatcher alone: splits
//!                     the cost of publishing from the cost of delivering; the latency
//!                     columns then include the wait for the dispatcher to start)
//! BENCH_KEEP_THP=1 (leave transparent huge pages on; see `postwire_sender::tuning`)
//! ```
//! (`crates/postwire-sender/scripts/bench.sh` runs it with the settings used for the
//! figures in the notes.)
//!
//! * **Throughput**: deliveries per second from the first publish to the last `2xx`, with
//!   the durable SQLite store (WAL, `synchronous=NORMAL`), 1 KiB events, each about a
//!   different post, for 1, 10 and 100 subscriptions. Events are published in batches of
//!   100 (`publish_many`) while the dispatcher runs.
//! * **Latency**: publish-to-first-attempt p50/p99, measured at the receiver, both under
//!   the throughput load and at a light load (one event every 2 ms).
//! * **Backlog** (`backlog.rs`): claim time by queue depth (1k, 100k, 1M pending), and
//!   the drain of 1M deliveries over 250k posts that an outage left queued, against the
//!   1-subscription case's steady-state rate.
//! * **Memory**: resident set size while one million events are held for a paused
//!   subscription, sampled as they are published.
//! * **wrk**: `wrk -t2 -c64 -d5s` POSTing the same 1 KiB body to the same receiver,
//!   before the first throughput run and after each one; each run's ratio is to the mean
//!   of the wrk runs just before and just after it. On a shared VM the machine's speed
//!   drifts by tens of percent within minutes, and wrk and the sender drift together, so
//!   a ratio to a wrk run taken minutes away says more about the drift than the sender.
//!   The throughput runs default to 100,000 deliveries, about 3 s at 1 subscription, so
//!   that they too measure a steady state, as wrk's 5 s do: a run of 30,000 lasts about
//!   1 s, and its ramp (connections opened, the first claims) and tail weigh on its rate.
//! * **CPU per delivery**: user + system time of the whole process (sender, receiver and
//!   publisher) over the throughput run, divided by the deliveries. Rates vary by up to
//!   30 % between runs on a small shared VM; this moves by a few percent, so it is what
//!   to compare when changing the sender (run the two builds interleaved).
//! * **Stolen**: the share of the machine's CPU time the hypervisor gave to someone else
//!   during the throughput run (`steal` in `/proc/stat`). A run with more than a few
//!   percent stolen is slow for reasons outside this process: compare only runs near 0.

mod backlog;

use std::collections::HashMap;

/// The allocator `postwire serve` uses (see `crates/postwire-cli/src/main.rs`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use postwire_core::{Clock, CreatedByKind, Integration, PostState, SystemClock, Timestamp};
use postwire_sender::{
    DomainChange, NewSubscription, PostChange, PostChangeKind, PostRecord, Sender, SenderConfig, Workspace,
};

/// Arrival time of the first request per `webhook-id`, and a count of all requests.
#[derive(Default)]
struct Arrivals {
    first: Mutex<HashMap<String, Instant>>,
    count: AtomicUsize,
    /// Requests answered `2xx`.
    ok: AtomicUsize,
    /// While set, the receiver is "down": it answers `503`.
    down: AtomicBool,
    /// While set, first arrivals are not kept (the backlog case measures the sender's
    /// memory, which a map of a million ids here would hide).
    skip_first: AtomicBool,
}

async fn start_receiver(arrivals: Arc<Arrivals>) -> std::net::SocketAddr {
    postwire_testkit::fast_receiver::start(move |headers| {
        let now = Instant::now();
        if !arrivals.skip_first.load(Ordering::Relaxed)
            && let Some(id) = headers.get("webhook-id").and_then(|v| v.to_str().ok())
        {
            arrivals.first.lock().unwrap().entry(id.to_owned()).or_insert(now);
        }
        arrivals.count.fetch_add(1, Ordering::Relaxed);
        if arrivals.down.load(Ordering::Relaxed) {
            hyper::StatusCode::SERVICE_UNAVAILABLE
        } else {
            arrivals.ok.fetch_add(1, Ordering::Relaxed);
            hyper::StatusCode::OK
        }
    })
    .await
    .unwrap()
}

fn post_change(i: usize, pad: usize) -> DomainChange {
    PostChange {
        workspace_id: "ws_bench".into(),
        post: PostRecord {
            id: format!("post-{i}"),
            external_id: format!("ext-{i}-{}", "x".repeat(pad)),
            group: "group-1".into(),
            state: PostState::Queue,
            is_draft: false,
            publish_date: Timestamp::from_unix_millis(1_800_000_000_000),
            integration: Integration {
                id: "acc-1".into(),
                name: "Bench account".into(),
                provider_identifier: "x".into(),
                picture: None,
            },
            release_url: None,
            release_id: None,
            error: None,
            content: String::new(),
        },
        kind: PostChangeKind::Scheduled,
    }
    .into()
}

/// Padding that makes the event body 1024 bytes.
fn padding_for_1kib() -> usize {
    let probe = postwire_sender::events::build_event(
        &post_change(0, 0),
        "msg_01MCC5RM00AAAAAAAAAAAAAAAA".into(),
        Timestamp::from_unix_millis(1_800_000_000_000),
    )
    .unwrap()
    .unwrap();
    1024usize.saturating_sub(probe.body.len())
}

/// CPU time (user + system) this process has used so far, from `/proc/self/stat`.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let ticks = stat_cpu(&stat).map_or(0, |(_, ticks)| ticks);
    Duration::from_secs_f64(ticks as f64 / 100.0) // USER_HZ on Linux
}

/// The command name and the CPU time (user + system, in clock ticks) in a
/// `/proc/.../stat` line.
fn stat_cpu(stat: &str) -> Option<(&str, u64)> {
    // The name is in parentheses (and may hold spaces); the fields follow it.
    let (open, close) = (stat.find('(')?, stat.rfind(')')?);
    let f: Vec<&str> = stat.get(close + 2..)?.split_whitespace().collect();
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some((&stat[open + 1..close], utime + stime))
}

/// CPU time the hypervisor took from this machine so far (all CPUs), from `/proc/stat`.
fn stolen_time() -> Duration {
    std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| {
            let cpu = s.lines().next()?;
            let ticks: f64 = cpu.split_whitespace().nth(8)?.parse().ok()?;
            Some(Duration::from_secs_f64(ticks / 100.0)) // USER_HZ
        })
        .unwrap_or_default()
}

/// CPU time (user + system, in clock ticks) of each thread of this process, by thread id,
/// with the thread's name, from `/proc/self/task/*/stat`.
fn thread_ticks() -> HashMap<u32, (String, u64)> {
    let mut out = HashMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for task in tasks.flatten() {
        let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        if let Some((name, ticks)) = stat_cpu(&stat) {
            out.insert(tid, (name.to_owned(), ticks));
        }
    }
    out
}

/// The CPU time each kind of thread (by name) used since `before`, in µs per delivery.
fn cpu_by_thread(before: &HashMap<u32, (String, u64)>, deliveries: usize) -> String {
    let mut by_name: std::collections::BTreeMap<String, u64> = Default::default();
    for (tid, (name, ticks)) in thread_ticks() {
        let earlier = before.get(&tid).map_or(0, |(_, t)| *t);
        *by_name.entry(name).or_default() += ticks.saturating_sub(earlier);
    }
    by_name
        .into_iter()
        .filter(|(_, ticks)| *ticks > 0)
        .map(|(name, ticks)| format!("{name} {:.1}", ticks as f64 * 1e4 / deliveries as f64)) // 1 tick = 10 ms
        .collect::<Vec<_>>()
        .join(", ")
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

async fn open_sender(dir: &std::path::Path, subs: usize, url: &str) -> (Sender, Vec<String>) {
    open_sender_with_clock(dir, subs, url, Arc::new(SystemClock)).await
}

async fn open_sender_with_clock(
    dir: &std::path::Path,
    subs: usize,
    url: &str,
    clock: Arc<dyn Clock>,
) -> (Sender, Vec<String>) {
    let defaults = SenderConfig::default();
    let config = SenderConfig {
        jitter: postwire_sender::schedule::Jitter::None,
        max_in_flight_per_subscription: arg("--per-subscription", defaults.max_in_flight_per_subscription),
        max_in_flight: arg("--in-flight", defaults.max_in_flight),
        ..defaults
    }
    .dangerously_allow_insecure_local_urls();
    let sender = Sender::open_sqlite(dir.join("bench.db"), config, clock).await.unwrap();
    sender
        .upsert_workspace(Workspace {
            id: "ws_bench".into(),
            name: "bench".into(),
        })
        .await
        .unwrap();
    let mut ids = vec![];
    for i in 0..subs {
        let created = sender
            .create_subscription(NewSubscription {
                workspace_id: "ws_bench".into(),
                name: format!("sub {i}"),
                url: url.to_owned(),
                events: vec![],
                integration_ids: vec![],
                created_by_kind: CreatedByKind::ApiToken,
                signing: signing_choice(),
            })
            .await
            .unwrap();
        ids.push(created.subscription.id);
    }
    (sender, ids)
}

struct RunResult {
    rate: f64,
    /// CPU time of the whole process (sender and receiver) per delivery.
    cpu_per_delivery: Duration,
    /// Share of the machine's CPU time stolen by the hypervisor during the run.
    stolen: f64,
    p50: Duration,
    p99: Duration,
}

async fn throughput(subs: usize, deliveries: usize, pad: usize, url: &str, arrivals: &Arc<Arrivals>) -> RunResult {
    let dir = tempfile::tempdir_in(std::env::var("BENCH_DIR").unwrap_or("/tmp".into())).unwrap();
    let (sender, _) = open_sender(dir.path(), subs, url).await;
    let drain_only = std::env::var_os("BENCH_DRAIN_ONLY").is_some();
    let mut dispatcher = (!drain_only).then(|| sender.start());
    let events = deliveries / subs;
    let base = arrivals.count.load(Ordering::SeqCst);
    let mut published: Vec<(String, Instant)> = Vec::with_capacity(events);
    let start = Instant::now();
    let (cpu_start, stolen_start) = (cpu_time(), stolen_time());
    let mut threads_start = thread_ticks();
    let batch = 100;
    let mut i = 0;
    while i < events {
        let n = batch.min(events - i);
        let changes = (i..i + n).map(|k| post_change(k, pad)).collect();
        let out = sender.publish_many(changes).await.unwrap();
        let at = Instant::now();
        published.extend(out.into_iter().map(|p| (p.event_id().unwrap().to_owned(), at)));
        i += n;
    }
    let total = events * subs;
    if std::env::var_os("BENCH_VERBOSE").is_some() {
        eprintln!(
            "{subs} subscriptions: {events} events published in {:.2} s, {} deliveries made meanwhile",
            start.elapsed().as_secs_f64(),
            arrivals.count.load(Ordering::SeqCst) - base
        );
    }
    // In drain-only mode the clocks start now, with every delivery already pending.
    let (start, cpu_start, stolen_start) = match dispatcher {
        Some(_) => (start, cpu_start, stolen_start),
        None => {
            let (publishing, publishing_cpu) = (start.elapsed(), cpu_time().saturating_sub(cpu_start));
            eprintln!(
                "{subs} subscriptions: {events} events published, dispatcher stopped, in {:.2} s ({:.1} µs CPU per event)",
                publishing.as_secs_f64(),
                publishing_cpu.as_secs_f64() * 1e6 / events as f64
            );
            dispatcher = Some(sender.start());
            threads_start = thread_ticks();
            (Instant::now(), cpu_time(), stolen_time())
        }
    };
    while arrivals.count.load(Ordering::SeqCst) - base < total {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let elapsed = start.elapsed();
    let cpu = cpu_time().saturating_sub(cpu_start);
    if std::env::var_os("BENCH_VERBOSE").is_some() {
        eprintln!(
            "{subs} subscriptions: CPU per delivery by thread (µs): {}",
            cpu_by_thread(&threads_start, events * subs)
        );
    }
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as f64;
    let stolen = stolen_time().saturating_sub(stolen_start).as_secs_f64() / (elapsed.as_secs_f64() * cpus);
    let mut lat: Vec<Duration> = {
        let first = arrivals.first.lock().unwrap();
        published
            .iter()
            .filter_map(|(id, at)| first.get(id).map(|arr| arr.saturating_duration_since(*at)))
            .collect()
    };
    lat.sort();
    if let Some(dispatcher) = dispatcher {
        dispatcher.shutdown().await;
    }
    RunResult {
        rate: total as f64 / elapsed.as_secs_f64(),
        cpu_per_delivery: cpu / total as u32,
        stolen,
        p50: percentile(&lat, 0.5),
        p99: percentile(&lat, 0.99),
    }
}

async fn light_load_latency(pad: usize, url: &str, arrivals: &Arc<Arrivals>) -> (Duration, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let (sender, _) = open_sender(dir.path(), 1, url).await;
    let dispatcher = sender.start();
    let mut published = vec![];
    for i in 0..2000 {
        let out = sender.publish(post_change(1_000_000 + i, pad)).await.unwrap();
        published.push((out.event_id().unwrap().to_owned(), Instant::now()));
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut lat: Vec<Duration> = {
        let first = arrivals.first.lock().unwrap();
        published
            .iter()
            .filter_map(|(id, at)| first.get(id).map(|arr| arr.saturating_duration_since(*at)))
            .collect()
    };
    lat.sort();
    dispatcher.shutdown().await;
    (percentile(&lat, 0.5), percentile(&lat, 0.99))
}

async fn held_memory(held: usize, pad: usize, url: &str) -> Vec<(usize, u64)> {
    let dir = tempfile::tempdir().unwrap();
    let (sender, subs) = open_sender(dir.path(), 1, url).await;
    sender.pause(&subs[0]).await.unwrap();
    let dispatcher = sender.start();
    let mut samples = vec![(0, rss_kib())];
    let batch = 5000;
    let mut i = 0;
    let step = (held / 4).max(1);
    while i < held {
        let n = batch.min(held - i);
        let changes = (i..i + n).map(|k| post_change(2_000_000 + k, pad)).collect();
        sender.publish_many(changes).await.unwrap();
        i += n;
        if i % step == 0 || i == held {
            // Let the dispatcher look at the store a few times with everything held.
            sender.wake();
            tokio::time::sleep(Duration::from_millis(50)).await;
            samples.push((i, rss_kib()));
        }
    }
    let counts = sender.delivery_counts(None).await.unwrap();
    assert_eq!(counts.held as usize, held);
    let size = std::fs::metadata(dir.path().join("bench.db"))
        .map(|m| m.len())
        .unwrap_or(0);
    eprintln!("held-events database: {:.0} MiB", size as f64 / 1048576.0);
    external_lookups(&sender, held, pad).await;
    let started = Instant::now();
    let (_, summary) = sender.resume(&subs[0]).await.unwrap();
    eprintln!(
        "resume released {} held deliveries in {:.1} s (one transaction); RSS {:.1} MiB",
        summary.released,
        started.elapsed().as_secs_f64(),
        rss_kib() as f64 / 1024.0
    );
    dispatcher.shutdown().await;
    samples
}

/// The cost of `posts/lookup?externalId=` among the `held` events just published: the
/// store probes one bucket of event numbers after another, newest first, so the newest
/// post is found at once and an unknown reference costs a probe per bucket. Medians of
/// 21 look-ups each.
async fn external_lookups(sender: &Sender, held: usize, pad: usize) {
    let external = |k: usize| format!("ext-{}-{}", 2_000_000 + k, "x".repeat(pad));
    let mut line = format!("external-id look-up among {held} events (median of 21):");
    for (what, reference) in [
        ("newest", external(held - 1)),
        ("oldest", external(0)),
        ("unknown", "no-such-reference".to_owned()),
    ] {
        let mut times = Vec::new();
        for _ in 0..21 {
            let started = Instant::now();
            let posts = sender.posts_with_external_id("ws_bench", &reference, 20).await.unwrap();
            times.push(started.elapsed());
            assert_eq!(posts.len(), usize::from(what != "unknown"), "{what}");
        }
        times.sort();
        line += &format!(" {what} {:.2} ms,", times[10].as_secs_f64() * 1e3);
    }
    eprintln!("{}", line.trim_end_matches(','));
}

/// Runs wrk against the receiver (see [`run_wrk`]); with `BENCH_VERBOSE`, also says what
/// the receiver's CPU per request was.
async fn measure_wrk(url: &str, arrivals: &Arc<Arrivals>) -> Option<f64> {
    let (cpu, count) = (cpu_time(), arrivals.count.load(Ordering::SeqCst));
    let rate = tokio::task::spawn_blocking({
        let url = url.to_owned();
        move || run_wrk(&url, 1024)
    })
    .await
    .ok()?;
    if std::env::var_os("BENCH_VERBOSE").is_some() {
        let requests = arrivals.count.load(Ordering::SeqCst) - count;
        eprintln!(
            "wrk: the receiver's CPU per request {:.1} µs",
            cpu_time().saturating_sub(cpu).as_secs_f64() * 1e6 / requests.max(1) as f64
        );
    }
    rate
}

fn run_wrk(url: &str, body_len: usize) -> Option<f64> {
    let which = std::process::Command::new("which").arg("wrk").output().ok()?;
    if !which.status.success() {
        return None;
    }
    let dir = tempfile::tempdir().ok()?;
    let script = dir.path().join("post.lua");
    let body = "x".repeat(body_len);
    std::fs::write(
        &script,
        format!(
            "wrk.method = \"POST\"\nwrk.body = \"{body}\"\nwrk.headers[\"content-type\"] = \"application/json\"\n\
             wrk.headers[\"webhook-id\"] = \"msg_wrk\"\n"
        ),
    )
    .ok()?;
    let out = std::process::Command::new("wrk")
        .args(["-t2", "-c64", "-d5s", "-s", script.to_str()?, url])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find(|l| l.starts_with("Requests/sec:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// `--signing`: which signatures the throughput runs' subscriptions get (default
/// `symmetric`, the spec's `v1`).
fn signing_choice() -> postwire_core::SigningMode {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--signing")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse().expect("--signing: symmetric, asymmetric or both"))
        .unwrap_or_default()
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    // As the binaries that run a sender do (the function's doc has this bench's figures).
    // BENCH_KEEP_THP=1 leaves huge pages on, to measure what this saves.
    if std::env::var_os("BENCH_KEEP_THP").is_none() {
        postwire_sender::tuning::disable_transparent_huge_pages().expect("could not turn transparent huge pages off");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(
            std::env::var("BENCH_WORKERS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(2),
        )
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let deliveries = arg("--deliveries", 100_000);
        let held = arg("--held", 1_000_000);
        let skip_wrk = std::env::args().any(|a| a == "--skip-wrk");
        let arrivals = Arc::new(Arrivals::default());
        let addr = start_receiver(arrivals.clone()).await;
        let url = format!("http://{addr}/hook");
        let pad = padding_for_1kib();
        println!(
            "machine: {} CPUs; event body 1024 bytes; receiver {url}; signing {}",
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
            signing_choice()
        );

        let mut wrk = if skip_wrk { None } else { measure_wrk(&url, &arrivals).await };
        match wrk {
            Some(r) => println!("wrk -t2 -c64 -d5s, POST 1 KiB, same receiver: {r:.0} requests/s"),
            None => println!("wrk: not run (not installed or --skip-wrk)"),
        }

        println!(
            "\n| subscriptions | deliveries | deliveries/s | wrk before / after | vs wrk | CPU per delivery | stolen | p50 publish→attempt | p99 publish→attempt |"
        );
        println!("|---|---|---|---|---|---|---|---|---|");
        let only = arg("--subscriptions", 0);
        let mut one_subscription_rate = None;
        for subs in [1, 10, 100].into_iter().filter(|s| only == 0 || *s == only) {
            let r = throughput(subs, deliveries, pad, &url, &arrivals).await;
            if subs == 1 {
                one_subscription_rate = Some(r.rate);
            }
            let before = wrk;
            let after = match before {
                Some(_) => measure_wrk(&url, &arrivals).await,
                None => None,
            };
            wrk = after.or(before);
            let (wrk_text, ratio) = match (before, after) {
                (Some(b), Some(a)) => (format!("{b:.0} / {a:.0}"), format!("{:.2}", r.rate / ((b + a) / 2.0))),
                (Some(b), None) => (format!("{b:.0} / -"), format!("{:.2}", r.rate / b)),
                _ => ("-".into(), "-".into()),
            };
            println!(
                "| {subs} | {deliveries} | {:.0} | {wrk_text} | {ratio} | {:.0} µs | {:.0} % | {:.1} ms | {:.1} ms |",
                r.rate,
                r.cpu_per_delivery.as_secs_f64() * 1e6,
                r.stolen * 100.0,
                r.p50.as_secs_f64() * 1e3,
                r.p99.as_secs_f64() * 1e3
            );
        }

        let depths: Vec<usize> = std::env::args()
            .skip_while(|a| a != "--claim-depths")
            .nth(1)
            .unwrap_or("1000,100000,1000000".into())
            .split(',')
            .filter_map(|d| d.parse().ok())
            .filter(|d| *d > 0)
            .collect();
        if !depths.is_empty() {
            println!("\nclaim time by depth (one subscription, 4 events per post, batches of 64):");
            println!("| pending | p50 claim | p99 claim |");
            println!("|---|---|---|");
            for depth in depths {
                let (p50, p99) = backlog::claim_time_at_depth(depth, pad).await;
                println!(
                    "| {depth} | {:.0} µs | {:.0} µs |",
                    p50.as_secs_f64() * 1e6,
                    p99.as_secs_f64() * 1e6
                );
            }
        }
        let backlog_deliveries = arg("--backlog", 1_000_000);
        if backlog_deliveries > 0 {
            let d = backlog::drain(backlog_deliveries, pad, &url, &arrivals).await;
            let vs = one_subscription_rate.map_or("-".into(), |r| format!("{:.2}", d.rate / r));
            println!(
                "\nbacklog: {backlog_deliveries} deliveries over {} posts queued behind an outage \
                 (published in {:.1} s, {} failed first attempts); drained at {:.0} deliveries/s, \
                 {vs} of the 1-subscription steady-state rate; RSS {:.1} MiB before, {:.1} MiB queued, {:.1} MiB drained",
                backlog_deliveries.div_ceil(4),
                d.published_in.as_secs_f64(),
                d.failed_attempts,
                d.rate,
                d.rss_kib[0] as f64 / 1024.0,
                d.rss_kib[1] as f64 / 1024.0,
                d.rss_kib[2] as f64 / 1024.0
            );
            let growth: Vec<String> = d
                .rss_while_queuing
                .iter()
                .map(|(n, kib)| format!("{n}: {:.1} MiB", *kib as f64 / 1024.0))
                .collect();
            println!("backlog RSS while queuing: {}", growth.join(", "));
        }

        let (p50, p99) = light_load_latency(pad, &url, &arrivals).await;
        println!(
            "\nlight load (1 subscription, one publish every 2 ms): p50 {:.2} ms, p99 {:.2} ms publish→first attempt",
            p50.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3
        );

        if held > 0 {
            println!("\nmemory while events are held for a paused subscription (1 KiB events):");
            println!("| held events | RSS |");
            println!("|---|---|");
            for (n, kib) in held_memory(held, pad, &url).await {
                println!("| {n} | {:.1} MiB |", kib as f64 / 1024.0);
            }
        }
    });
}
