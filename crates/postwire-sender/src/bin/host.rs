//! A minimal sender process, for the kill-and-restart test and for trying the engine by
//! hand. It opens a SQLite file, starts the dispatcher, optionally publishes events, and
//! runs until killed or until `--exit-when-idle` sees nothing left to do.
//!
//! ```text
//! postwire-sender-host --db FILE --workspace ID [--publish N] [--post-prefix P]
//!                      [--same-post] [--insecure-local] [--timeout-ms MS] [--exit-when-idle]
//! ```
//! `--same-post` makes every event about one post (so they are delivered one at a time,
//! in order). Each accepted event is printed as `accepted <event id>` once `publish` has returned,
//! that is, once it is on disk. Nothing secret is ever printed.

use std::sync::Arc;
use std::time::Duration;

use postwire_core::{Integration, PostState, SystemClock, Timestamp};
use postwire_sender::{PostChange, PostChangeKind, PostRecord, Sender, SenderConfig};

struct Args {
    db: String,
    workspace: String,
    publish: usize,
    post_prefix: String,
    insecure_local: bool,
    timeout_ms: u64,
    exit_when_idle: bool,
    same_post: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        db: String::new(),
        workspace: String::new(),
        publish: 0,
        post_prefix: "post".into(),
        insecure_local: false,
        timeout_ms: 10_000,
        exit_when_idle: false,
        same_post: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--db" => a.db = value()?,
            "--workspace" => a.workspace = value()?,
            "--publish" => a.publish = value()?.parse().map_err(|_| "--publish takes a number")?,
            "--post-prefix" => a.post_prefix = value()?,
            "--timeout-ms" => a.timeout_ms = value()?.parse().map_err(|_| "--timeout-ms takes a number")?,
            "--insecure-local" => a.insecure_local = true,
            "--exit-when-idle" => a.exit_when_idle = true,
            "--same-post" => a.same_post = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.db.is_empty() || a.workspace.is_empty() {
        return Err("--db and --workspace are required".into());
    }
    Ok(a)
}

#[tokio::main]
async fn main() {
    // Best effort: see the function's doc. A kernel without the setting keeps huge pages.
    let _ = postwire_sender::tuning::disable_transparent_huge_pages();
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("postwire-sender-host: {e}");
            std::process::exit(2);
        }
    };
    let mut config = SenderConfig {
        attempt_timeout: Duration::from_millis(args.timeout_ms),
        ..SenderConfig::default()
    };
    if args.insecure_local {
        config = config.dangerously_allow_insecure_local_urls();
    }
    let sender = match Sender::open_sqlite(&args.db, config, Arc::new(SystemClock)).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("postwire-sender-host: {e}");
            std::process::exit(1);
        }
    };
    let dispatcher = sender.start();
    for i in 0..args.publish {
        let post = PostRecord {
            id: if args.same_post {
                args.post_prefix.clone()
            } else {
                format!("{}-{i}", args.post_prefix)
            },
            external_id: format!("ext-{i}"),
            group: "g".into(),
            state: PostState::Queue,
            is_draft: false,
            publish_date: Timestamp::from_unix_millis(1_800_000_000_000),
            integration: Integration {
                id: "acc-1".into(),
                name: "Account".into(),
                provider_identifier: "x".into(),
                picture: None,
            },
            release_url: None,
            release_id: None,
            error: None,
            content: String::new(),
        };
        let change = PostChange {
            workspace_id: args.workspace.clone(),
            post,
            kind: PostChangeKind::Scheduled,
        };
        match sender.publish(change).await {
            Ok(p) => {
                if let Some(id) = p.event_id() {
                    println!("accepted {id}");
                }
            }
            Err(e) => {
                eprintln!("postwire-sender-host: publish failed: {e}");
                std::process::exit(1);
            }
        }
    }
    println!("published");
    loop {
        if args.exit_when_idle
            && let Ok(c) = sender.delivery_counts(None).await
            && c.pending == 0
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    dispatcher.shutdown().await;
}
