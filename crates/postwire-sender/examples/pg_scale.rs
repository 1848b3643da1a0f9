//! Deliveries per second with 1, 2 and 4 sender processes on one PostgreSQL database,
//! beside the embedded SQLite store and `wrk` on the same loopback receiver, in one run.
//!
//! ```text
//! cargo run --release -p postwire-sender --example pg_scale -- [--deliveries N] [--subscriptions N]
//!     [--idle-subscriptions N] [--publish-batch N] [--processes 1,2,4] [--rounds N]
//!     [--receiver-delay-ms N] [--skip-wrk]
//! ```
//!
//! Each case publishes every event first (10 subscriptions by default, 1 KiB events each
//! about another post), then starts the dispatchers and times the drain, from their
//! start to the last `2xx`: what is measured is dispatching, the part that scales out.
//! The PostgreSQL cases run each dispatcher in a process of its own (this example,
//! started again with `--worker URL`) on a throwaway cluster (`postwire-testpg`, socket
//! only; a new database per run, dropped after it); the receiver and the publisher stay
//! in this process. **CPU per delivery** is the user + system time of this process, the
//! worker processes and the cluster's server processes over the drain, divided by the
//! deliveries: on a machine with fewer cores than processes, it is the figure to
//! compare, since the rate is bounded by the cores; the last column splits it between
//! the dispatchers, PostgreSQL and this process (the receiver). **Published
//! deliveries/s**: deliveries stored per second while publishing (`publish_many` of 100
//! events, or `--publish-batch N`, before the drain). `wrk -t2 -c64 -d5s` runs before and
//! after, against the same receiver.
//!
//! **Rounds.** A single run on a shared machine is noisy (±10 % and more between runs of
//! one case). `--rounds N` (default 3) runs the cases interleaved, round by round (SQLite,
//! PostgreSQL with 1, 2, 4 processes, then again), so that a slow stretch hits every
//! case, and reports per case the median and the range (min-max) of the rounds, with
//! the rate as a share of SQLite's median. 40,000 deliveries in 3 rounds take about a
//! minute and a half on two cores. `BENCH_VERBOSE=1` prints every round's figures,
//! with the context switches per delivery of the same processes (every thread's sleeps
//! and preemptions, from `/proc`); `BENCH_PG_STATEMENTS=1` (with pg_stat_statements) the statements per delivery after
//! each PostgreSQL run, and the rows each table wrote per delivery (HOT updates apart).
//!
//! **Idle subscriptions.** `--idle-subscriptions N` (default 0) adds N subscriptions in
//! other workspaces (100 each) that get no events, as a platform has: most of its
//! subscriptions have nothing queued at any moment. A claim must not cost more for them.
//!
//! **A slow receiver.** `--receiver-delay-ms N` (default 0: answer at once) makes the
//! receiver answer each request N ms after reading it (a Tokio sleep per request, no
//! limit on connections: `postwire_testkit::fast_receiver::start_delayed`), as real
//! receivers do, which take tens to hundreds of milliseconds. The rate is then bound by
//! the deliveries in flight (256 requests per process, `max_in_flight`, and 32 per
//! subscription, `max_in_flight_per_subscription`), not by the CPU: one process makes
//! at most 256 / N ms deliveries per second, and each process adds as much until the
//! CPU is the bound. Use enough subscriptions that their limit does not cap it (with
//! `--subscriptions 100`, each event goes to 100 subscriptions and a claim shares a
//! process's room among them), e.g. `--receiver-delay-ms 50 --subscriptions 100
//! --deliveries 100000 --skip-wrk`; `wrk` (64 connections) would measure the delay.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use postwire_core::{CreatedByKind, Integration, PostState, SystemClock, Timestamp};
use postwire_sender::{
    DomainChange, NewSubscription, PostChange, PostChangeKind, PostRecord, Sender, SenderConfig, Workspace,
};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn config() -> SenderConfig {
    SenderConfig {
        max_in_flight: 256,
        max_in_flight_per_subscription: 32,
        ..SenderConfig::default()
    }
    .dangerously_allow_insecure_local_urls()
}

/// The loopback receiver; `delay` (when not zero) before each answer. `ok` counts the
/// answers (with a delay, as they are sent; without one, as requests arrive).
async fn start_receiver(ok: Arc<AtomicUsize>, delay: Duration) -> std::net::SocketAddr {
    let answer = move |_: &hyper::HeaderMap| {
        ok.fetch_add(1, Ordering::Relaxed);
        hyper::StatusCode::OK
    };
    if delay.is_zero() {
        postwire_testkit::fast_receiver::start(answer).await
    } else {
        postwire_testkit::fast_receiver::start_delayed(delay, answer).await
    }
    .unwrap()
}

fn post_change(i: usize) -> DomainChange {
    PostChange {
        workspace_id: "ws_bench".into(),
        post: PostRecord {
            id: format!("post-{i}"),
            external_id: format!("ext-{i}-{}", "x".repeat(700)),
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

/// Events per `publish_many` call while preparing (`--publish-batch`, default 100).
static PUBLISH_BATCH: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

/// Subscriptions to the receiver (and `idle` more, in workspaces that publish nothing),
/// then every event, published before any dispatching; returns how long publishing took.
async fn prepare(sender: &Sender, url: &str, (subscriptions, idle): (usize, usize), events: usize) -> Duration {
    for i in 0..idle.div_ceil(100) {
        sender
            .upsert_workspace(Workspace {
                id: format!("ws_idle{i}"),
                name: "idle".into(),
            })
            .await
            .unwrap();
    }
    sender
        .upsert_workspace(Workspace {
            id: "ws_bench".into(),
            name: "bench".into(),
        })
        .await
        .unwrap();
    for i in 0..subscriptions + idle {
        let workspace_id = if i < subscriptions {
            "ws_bench".into()
        } else {
            format!("ws_idle{}", (i - subscriptions) / 100)
        };
        sender
            .create_subscription(NewSubscription {
                workspace_id,
                name: format!("s{i}"),
                url: url.to_owned(),
                events: vec![],
                integration_ids: vec![],
                created_by_kind: CreatedByKind::ApiToken,
                signing: Default::default(),
            })
            .await
            .unwrap();
    }
    let publishing = Instant::now();
    let mut i = 0;
    while i < events {
        let n = std::env::var("BENCH_PUBLISH_BATCH")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(100usize)
            .min(events - i);
        sender
            .publish_many((i..i + n).map(post_change).collect())
            .await
            .unwrap();
        i += n;
    }
    publishing.elapsed()
}

/// User + system CPU ticks of process `pid` (0 when it is gone).
fn ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let Some(close) = stat.rfind(')') else { return 0 };
    let f: Vec<&str> = stat[close + 2..].split_whitespace().collect();
    let field = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    field(11) + field(12)
}

/// Context switches (voluntary and not) of every thread of process `pid` so far: how
/// often its threads went to sleep or were put off a core (0 when it is gone).
fn switches(pid: u32) -> u64 {
    let mut n = 0;
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        for line in status.lines() {
            if let Some(v) = line
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                n += v.trim().parse::<u64>().unwrap_or(0);
            }
        }
    }
    n
}

/// The cluster's server processes: the postmaster (first line of `postmaster.pid`) and
/// its children.
fn cluster_pids(socket_dir: &std::path::Path) -> Vec<u32> {
    let Some(master) = std::fs::read_to_string(socket_dir.join("data/postmaster.pid"))
        .ok()
        .and_then(|s| s.lines().next().and_then(|l| l.trim().parse::<u32>().ok()))
    else {
        return Vec::new();
    };
    let mut pids = vec![master];
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let ppid = stat
            .rfind(')')
            .and_then(|c| stat[c + 2..].split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(master) {
            pids.push(pid);
        }
    }
    pids
}

fn total_ticks(pids: &[u32]) -> u64 {
    pids.iter().map(|p| ticks(*p)).sum()
}

async fn wait_for(ok: &AtomicUsize, target: usize) {
    let deadline = Instant::now() + Duration::from_secs(600);
    while ok.load(Ordering::Relaxed) < target {
        assert!(Instant::now() < deadline, "not drained in 10 minutes");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// One run of one case.
#[derive(Clone, Copy, Default)]
struct Sample {
    rate: f64,
    cpu_us: f64,
    /// Deliveries stored per second while publishing (before the drain).
    published: f64,
    /// CPU us per delivery of the dispatcher processes, the cluster and this process
    /// (PostgreSQL cases; SQLite's dispatcher runs in this process, counted in `me`).
    dispatchers: f64,
    server: f64,
    me: f64,
    /// Context switches per delivery of the same processes (all of them).
    switches: f64,
}

/// A case's runs, one per round.
struct Case {
    name: String,
    samples: Vec<Sample>,
}

/// Median and range of `f` over `samples`.
fn spread(samples: &[Sample], f: impl Fn(&Sample) -> f64) -> (f64, f64, f64) {
    let mut v: Vec<f64> = samples.iter().map(f).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return (0.0, 0.0, 0.0);
    }
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    (median, v[0], v[n - 1])
}

fn run_wrk(url: &str) -> Option<f64> {
    let dir = tempfile::tempdir().ok()?;
    let script = dir.path().join("post.lua");
    std::fs::write(
        &script,
        format!(
            "wrk.method = \"POST\"\nwrk.body = \"{}\"\nwrk.headers[\"content-type\"] = \"application/json\"\n",
            "x".repeat(1024)
        ),
    )
    .ok()?;
    let out = Command::new("wrk")
        .args(["-t2", "-c64", "-d5s", "-s", script.to_str()?, url])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.starts_with("Requests/sec:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The statements the server spent most time in since the reset, per delivery.
async fn print_statements(db_url: &str, deliveries: usize) {
    let (client, conn) = tokio_postgres::connect(db_url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    let rows = client
        .query(
            "SELECT calls, total_exec_time, query, (shared_blks_hit + shared_blks_read)::float8, rows FROM pg_stat_statements
             ORDER BY total_exec_time DESC LIMIT 12",
            &[],
        )
        .await
        .unwrap();
    // Counts that do not depend on how busy the machine is: blocks read and dirtied,
    // and WAL written, per delivery.
    let totals = client
        .query_one(
            "SELECT sum(calls)::float8, sum(total_exec_time), sum(shared_blks_hit + shared_blks_read)::float8,
                    sum(shared_blks_dirtied)::float8, sum(wal_bytes)::float8 FROM pg_stat_statements",
            &[],
        )
        .await
        .unwrap();
    let per = |i: usize| totals.get::<_, f64>(i) / deliveries as f64;
    eprintln!(
        "    per delivery: {:.2} statements, {:.1} us executing, {:.1} blocks read, {:.2} dirtied, {:.0} WAL bytes",
        per(0),
        per(1) * 1000.0,
        per(2),
        per(3),
        per(4)
    );
    eprintln!(
        "    {:>8} {:>10} {:>14} {:>12} {:>10}  statement",
        "calls", "us/call", "us/delivery", "blocks/call", "rows/call"
    );
    for r in rows {
        let (calls, total_ms, query, blocks, rows): (i64, f64, String, f64, i64) =
            (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4));
        let query: String = query.split_whitespace().collect::<Vec<_>>().join(" ");
        eprintln!(
            "    {calls:>8} {:>10.1} {:>14.2} {:>12.1} {:>10.1}  {}",
            total_ms * 1000.0 / calls.max(1) as f64,
            total_ms * 1000.0 / deliveries as f64,
            blocks / calls.max(1) as f64,
            rows as f64 / calls.max(1) as f64,
            query.chars().take(110).collect::<String>()
        );
    }
    // Row writes per delivery by table (publishing included), and how many updates were
    // HOT (no new index entries): a server process reports its counts when its
    // transaction ends or within a second, so wait for the dispatchers' last ones.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let tables = client
        .query(
            "SELECT relname::text, n_tup_ins::float8, n_tup_upd::float8, n_tup_hot_upd::float8, n_tup_del::float8
             FROM pg_stat_user_tables WHERE relname IN ('deliveries', 'queue_heads', 'attempts') ORDER BY relname",
            &[],
        )
        .await
        .unwrap();
    for t in tables {
        let per = |i: usize| t.get::<_, f64>(i) / deliveries as f64;
        eprintln!(
            "    {:<12} per delivery: {:.2} inserted, {:.2} updated ({:.2} HOT), {:.2} deleted",
            t.get::<_, String>(0),
            per(1),
            per(2),
            per(3),
            per(4)
        );
    }
}

async fn worker(url: String) {
    let sender = Sender::open_postgres(&url, config(), Arc::new(SystemClock))
        .await
        .unwrap();
    let _dispatcher = sender.start();
    std::future::pending::<()>().await;
}

/// The SQLite case: this process dispatches.
async fn run_sqlite(url: &str, ok: &AtomicUsize, (subscriptions, idle): (usize, usize), events: usize) -> Sample {
    let deliveries = events * subscriptions;
    let dir = tempfile::tempdir().unwrap();
    let sender = Sender::open_sqlite(dir.path().join("b.db"), config(), Arc::new(SystemClock))
        .await
        .unwrap();
    let publishing = prepare(&sender, url, (subscriptions, idle), events).await;
    let published = deliveries as f64 / publishing.as_secs_f64();
    let base = ok.load(Ordering::Relaxed);
    let cpu0 = ticks(std::process::id());
    let sw0 = switches(std::process::id());
    let t0 = Instant::now();
    let dispatcher = sender.start();
    wait_for(ok, base + deliveries).await;
    let elapsed = t0.elapsed();
    let cpu = ticks(std::process::id()) - cpu0;
    let sw = switches(std::process::id()).saturating_sub(sw0);
    dispatcher.shutdown().await;
    let cpu_us = cpu as f64 * 10_000.0 / deliveries as f64;
    Sample {
        rate: deliveries as f64 / elapsed.as_secs_f64(),
        cpu_us,
        published,
        me: cpu_us,
        switches: sw as f64 / deliveries as f64,
        ..Sample::default()
    }
}

/// Settings of the PostgreSQL cases.
struct PgRun<'a> {
    cluster: &'a postwire_testpg::Cluster,
    url: &'a str,
    ok: &'a AtomicUsize,
    subscriptions: usize,
    /// Subscriptions of other workspaces, which get nothing.
    idle: usize,
    events: usize,
    statements: bool,
}

/// A PostgreSQL case: `n` dispatcher processes on a new database `name`.
async fn run_pg(r: &PgRun<'_>, name: &str, n: usize) -> Sample {
    let deliveries = r.events * r.subscriptions;
    r.cluster.create_database(name).unwrap();
    let db_url = r.cluster.url(name);
    let publisher = Sender::open_postgres(&db_url, config(), Arc::new(SystemClock))
        .await
        .unwrap();
    let publishing = prepare(&publisher, r.url, (r.subscriptions, r.idle), r.events).await;
    let published = deliveries as f64 / publishing.as_secs_f64();
    if r.statements {
        r.cluster
            .psql(
                name,
                "CREATE EXTENSION pg_stat_statements; SELECT pg_stat_statements_reset()",
            )
            .unwrap();
    }
    let base = r.ok.load(Ordering::Relaxed);
    let pg_pids = cluster_pids(r.cluster.socket_dir());
    let pg0 = total_ticks(&pg_pids);
    let me0 = ticks(std::process::id());
    let sw0: u64 = pg_pids.iter().map(|p| switches(*p)).sum::<u64>() + switches(std::process::id());
    let t0 = Instant::now();
    let mut children: Vec<Child> = (0..n)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .args(["--worker", &db_url])
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    wait_for(r.ok, base + deliveries).await;
    let elapsed = t0.elapsed();
    let child_ticks: u64 = children.iter().map(|c| ticks(c.id())).sum();
    // Backends started during the drain are the workers' connections.
    let pg_now = cluster_pids(r.cluster.socket_dir());
    let pg = total_ticks(&pg_now).saturating_sub(pg0);
    let me = ticks(std::process::id()) - me0;
    let sw = (children.iter().map(|c| switches(c.id())).sum::<u64>()
        + pg_now.iter().map(|p| switches(*p)).sum::<u64>()
        + switches(std::process::id()))
    .saturating_sub(sw0);
    for c in &mut children {
        let _ = c.kill();
        let _ = c.wait();
    }
    drop(publisher);
    let per = |t: u64| t as f64 * 10_000.0 / deliveries as f64;
    if r.statements {
        print_statements(&db_url, deliveries).await;
        if let Some(to) = std::env::var_os("BENCH_PG_LOG") {
            std::fs::copy(r.cluster.socket_dir().join("log"), to).unwrap();
        }
    }
    // The database is not needed again: its files would only slow the next cases.
    let _ = r
        .cluster
        .psql("postgres", &format!("DROP DATABASE {name} WITH (FORCE)"));
    Sample {
        rate: deliveries as f64 / elapsed.as_secs_f64(),
        cpu_us: per(child_ticks + pg + me),
        published,
        dispatchers: per(child_ticks),
        server: per(pg),
        me: per(me),
        switches: sw as f64 / deliveries as f64,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if args.get(1).map(String::as_str) == Some("--worker") {
        rt.block_on(worker(args[2].clone()));
        return;
    }
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let deliveries: usize = arg("--deliveries").map_or(20_000, |v| v.parse().unwrap());
    let subscriptions: usize = arg("--subscriptions").map_or(10, |v| v.parse().unwrap());
    let idle: usize = arg("--idle-subscriptions").map_or(0, |v| v.parse().unwrap());
    let _ = PUBLISH_BATCH.set(arg("--publish-batch").map_or(100, |v| v.parse::<usize>().unwrap().max(1)));
    let rounds: usize = arg("--rounds").map_or(3, |v| v.parse::<usize>().unwrap().max(1));
    let processes: Vec<usize> = arg("--processes")
        .unwrap_or_else(|| "1,2,4".into())
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    let skip_wrk = args.iter().any(|a| a == "--skip-wrk");
    let receiver_delay = Duration::from_millis(arg("--receiver-delay-ms").map_or(0, |v| v.parse().unwrap()));
    let events = deliveries / subscriptions;
    let deliveries = events * subscriptions;
    rt.block_on(async move {
        let ok = Arc::new(AtomicUsize::new(0));
        let addr = start_receiver(ok.clone(), receiver_delay).await;
        let url = format!("http://{addr}/hook");
        let wrk_before = if skip_wrk { None } else { run_wrk(&url) };

        // BENCH_PG_STATEMENTS=1: where the server's time goes, per statement, after each case.
        let statements = std::env::var_os("BENCH_PG_STATEMENTS").is_some();
        let verbose = std::env::var_os("BENCH_VERBOSE").is_some();
        let cluster = if statements {
            postwire_testpg::Cluster::start_with_conf(&format!(
                "shared_preload_libraries = 'pg_stat_statements'\n{}\n",
                std::env::var("BENCH_PG_CONF").unwrap_or_default()
            ))
        } else {
            postwire_testpg::Cluster::start()
        }
        .expect("a throwaway PostgreSQL cluster");
        let pg = PgRun {
            cluster: &cluster,
            url: &url,
            ok: &ok,
            subscriptions,
            idle,
            events,
            statements,
        };
        let mut cases = vec![Case {
            name: "SQLite, 1 process".into(),
            samples: Vec::new(),
        }];
        for n in &processes {
            cases.push(Case {
                name: format!("PostgreSQL, {n} process{}", if *n == 1 { "" } else { "es" }),
                samples: Vec::new(),
            });
        }
        // Round by round, every case once, so that a slow stretch of a busy machine hits
        // every case rather than one.
        for round in 0..rounds {
            let s = run_sqlite(&url, &ok, (subscriptions, idle), events).await;
            cases[0].samples.push(s);
            for (i, n) in processes.iter().enumerate() {
                let s = run_pg(&pg, &format!("b{round}_{i}"), *n).await;
                cases[i + 1].samples.push(s);
            }
            if verbose {
                for c in &cases {
                    let s = c.samples[round];
                    eprintln!(
                        "  round {}: {:<24} {:>7.0}/s, CPU us/delivery {:>4.0} (dispatchers {:.0}, PostgreSQL {:.0}, this process {:.0}), {:.2} context switches/delivery",
                        round + 1,
                        c.name,
                        s.rate,
                        s.cpu_us,
                        s.dispatchers,
                        s.server,
                        s.me,
                        s.switches
                    );
                }
            }
        }
        let wrk_after = if skip_wrk { None } else { run_wrk(&url) };

        println!(
            "{deliveries} deliveries ({events} events x {subscriptions} subscriptions, 1 KiB), drained after publishing; receiver answers after {} ms; {} cores; median of {rounds} round{} (min-max)",
            receiver_delay.as_millis(),
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            if rounds == 1 { "" } else { "s" }
        );
        println!(
            "{:<26} {:>24} {:>18} {:>26}   CPU: dispatchers/PostgreSQL/receiver",
            "case", "deliveries/s", "CPU us/delivery", "published deliveries/s"
        );
        let sqlite_rate = spread(&cases[0].samples, |s| s.rate).0;
        for c in &cases {
            let (rate, rate_lo, rate_hi) = spread(&c.samples, |s| s.rate);
            let (cpu, cpu_lo, cpu_hi) = spread(&c.samples, |s| s.cpu_us);
            let published = spread(&c.samples, |s| s.published).0;
            let split = if c.name.starts_with("SQLite") {
                String::new()
            } else {
                format!(
                    "{:.0}/{:.0}/{:.0}",
                    spread(&c.samples, |s| s.dispatchers).0,
                    spread(&c.samples, |s| s.server).0,
                    spread(&c.samples, |s| s.me).0
                )
            };
            println!(
                "{:<26} {:>24} {:>18} {:>26.0}   {split}",
                c.name,
                format!("{rate:.0} ({rate_lo:.0}-{rate_hi:.0}) {:>3.0} %", rate * 100.0 / sqlite_rate),
                format!("{cpu:.0} ({cpu_lo:.0}-{cpu_hi:.0})"),
                published
            );
        }
        match (wrk_before, wrk_after) {
            (Some(a), Some(b)) => println!("wrk -t2 -c64 -d5s, same receiver: {a:.0} req/s before, {b:.0} after"),
            _ => println!("wrk: skipped or not installed"),
        }
    });
}
