//! Database size after many deliveries, with and without retention.
//!
//! Simulates `--days` days (default 100) of traffic on a manual clock: each day
//! publishes its share of `--deliveries` (default 1,000,000) over `--subscriptions`
//! (default 10) subscriptions, delivers every one of them for real over loopback HTTP to
//! a receiver answering 200, then runs retention (`--retention-days`, default 30; 0 turns
//! it off) and moves the clock one day. Prints the file size (database + WAL) every ten
//! days and at the end, the rows left, and how long the retention runs and each day's
//! deliveries took, so the cost of retention next to dispatch is visible. With
//! `--concurrent 1`, each day's retention run goes on while that day's deliveries are
//! dispatched, to see how much it slows dispatch down.
//!
//! ```sh
//! cargo run --release -p postwire-sender --example retention_size -- --retention-days 30
//! cargo run --release -p postwire-sender --example retention_size -- --retention-days 0
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use postwire_core::{CreatedByKind, Integration, ManualClock, PostState, Timestamp};
use postwire_sender::retention::RetentionPolicy;
use postwire_sender::{
    DomainChange, NewSubscription, PostChange, PostChangeKind, PostRecord, Sender, SenderConfig, Workspace,
};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const DAY_MS: i64 = 86_400_000;

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn start_receiver() -> String {
    let addr = postwire_testkit::fast_receiver::always_ok().await.unwrap();
    format!("http://{addr}/hook")
}

fn change(i: u64) -> DomainChange {
    PostChange {
        workspace_id: "ws".into(),
        post: PostRecord {
            id: format!("post-{i}"),
            external_id: format!("campaign-{}-{i}", i % 97),
            group: "group-1".into(),
            state: PostState::Queue,
            is_draft: false,
            publish_date: Timestamp::from_unix_millis(1_800_000_000_000),
            integration: Integration {
                id: "acc-1".into(),
                name: "An account".into(),
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

fn size_mib(db: &std::path::Path) -> f64 {
    let mut total = 0;
    for suffix in ["", "-wal"] {
        if let Ok(m) = std::fs::metadata(format!("{}{suffix}", db.display())) {
            total += m.len();
        }
    }
    total as f64 / (1024.0 * 1024.0)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let deliveries = arg("--deliveries", 1_000_000);
    let subs = arg("--subscriptions", 10).max(1);
    let days = arg("--days", 100).max(1);
    let retention_days = arg("--retention-days", 30);
    let concurrent = arg("--concurrent", 0) == 1;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("retention.db");
    let url = start_receiver().await;
    let clock = Arc::new(ManualClock::new(Timestamp::from_unix_millis(1_800_000_000_000)));
    let config = SenderConfig {
        jitter: postwire_sender::schedule::Jitter::None,
        ..SenderConfig::default()
    }
    .dangerously_allow_insecure_local_urls();
    let sender = Sender::open_sqlite(&db, config, clock.clone()).await.unwrap();
    sender
        .upsert_workspace(Workspace {
            id: "ws".into(),
            name: "ws".into(),
        })
        .await
        .unwrap();
    for i in 0..subs {
        sender
            .create_subscription(NewSubscription {
                workspace_id: "ws".into(),
                name: format!("sub {i}"),
                url: url.clone(),
                events: vec![],
                integration_ids: vec![],
                created_by_kind: CreatedByKind::ApiToken,
                signing: Default::default(),
            })
            .await
            .unwrap();
    }
    let dispatcher = sender.start();
    let policy = RetentionPolicy {
        keep: Duration::from_secs(retention_days * 86_400),
        ..RetentionPolicy::default()
    };
    let events_per_day = (deliveries / subs / days).max(1);
    println!(
        "{} deliveries: {events_per_day} events/day x {subs} subscriptions x {days} days; retention {}",
        events_per_day * subs * days,
        match (retention_days, concurrent) {
            (0, _) => "off".to_owned(),
            (d, false) => format!("{d} days, run between days"),
            (d, true) => format!("{d} days, run during each day's dispatch"),
        }
    );
    let mut next = 0u64;
    let (mut deliver_time, mut purge_time, mut purge_max) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let mut purged_total = postwire_sender::Purged::default();
    let started = Instant::now();
    for day in 1..=days {
        // With --concurrent 1: yesterday's retention runs while today's deliveries go out.
        let background = (concurrent && retention_days > 0).then(|| {
            let sender = sender.clone();
            tokio::spawn(async move {
                let t = Instant::now();
                let purged = sender.purge_expired(&policy).await.unwrap();
                (purged, t.elapsed())
            })
        });
        let t = Instant::now();
        let mut left = events_per_day;
        while left > 0 {
            let n = left.min(1000);
            sender
                .publish_many((next..next + n).map(change).collect())
                .await
                .unwrap();
            next += n;
            left -= n;
        }
        sender.wait_idle().await.unwrap();
        deliver_time += t.elapsed();
        if let Some(task) = background {
            let (purged, took) = task.await.unwrap();
            purged_total += purged;
            purge_time += took;
            purge_max = purge_max.max(took);
        } else if retention_days > 0 {
            let t = Instant::now();
            purged_total += sender.purge_expired(&policy).await.unwrap();
            let took = t.elapsed();
            purge_time += took;
            purge_max = purge_max.max(took);
        }
        clock.advance_millis(DAY_MS);
        if day % 10 == 0 || day == days {
            let c = sender.delivery_counts(None).await.unwrap();
            println!(
                "day {day:>3}: {:>8.1} MiB, {:>8} deliveries in the file ({} pending)",
                size_mib(&db),
                c.delivered + c.failed + c.expired + c.pending + c.waiting + c.held,
                c.pending + c.waiting
            );
        }
    }
    println!(
        "delivered {} in {:.1?} ({:.0}/s of dispatch); retention removed {} deliveries, {} attempts, {} events in {:.1?} in all (longest daily run {:.1?})",
        next * subs,
        deliver_time,
        (next * subs) as f64 / deliver_time.as_secs_f64(),
        purged_total.deliveries,
        purged_total.attempts,
        purged_total.events,
        purge_time,
        purge_max
    );
    println!("final size {:.1} MiB after {:.1?}", size_mib(&db), started.elapsed());
    dispatcher.shutdown().await;
}
