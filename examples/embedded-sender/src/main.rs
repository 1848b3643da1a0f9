//! A demo of the embedded sender: a post's life and an account problem, delivered to
//! your receiver.
//!
//! ```text
//! cargo run -p postwire-example-embedded-sender -- --db demo.db --url https://hooks.example.com/postwire
//! ```
//! The first run creates a subscription to `--url` and writes its secret to `<db>.secret`
//! (mode 0600; the secret is shown once, like the API's creation response, and never
//! printed). For a receiver on this machine (`http://127.0.0.1:…`), add
//! `--dangerously-allow-insecure-local-urls` (local development only).

use std::sync::Arc;
use std::time::Duration;

use postwire_core::{
    Actor, ActorKind, CreatedByKind, DisconnectReason, EventError, FailureCode, SystemClock, Timestamp,
};
use postwire_example_embedded_sender::{Account, Post, PostStatus, Posts};
use postwire_sender::{NewSubscription, Sender, SenderConfig, Workspace};

const WORKSPACE: &str = "ws_demo";

fn usage() -> ! {
    eprintln!("usage: embedded-sender --db FILE --url URL [--dangerously-allow-insecure-local-urls]");
    std::process::exit(2)
}

#[tokio::main]
async fn main() {
    let (mut db, mut url, mut insecure) = (None, None, false);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--db" => db = args.next(),
            "--url" => url = args.next(),
            "--dangerously-allow-insecure-local-urls" => insecure = true,
            _ => usage(),
        }
    }
    let (Some(db), Some(url)) = (db, url) else { usage() };
    if let Err(e) = run(&db, &url, insecure).await {
        eprintln!("embedded-sender: {e}");
        std::process::exit(1);
    }
}

async fn run(db: &str, url: &str, insecure: bool) -> Result<(), Box<dyn std::error::Error>> {
    let mut config = SenderConfig::default();
    if insecure {
        config = config.dangerously_allow_insecure_local_urls();
    }
    let sender = Sender::open_sqlite(db, config, Arc::new(SystemClock)).await?;
    let dispatcher = sender.start();
    let posts = Posts::new(&sender);

    let account = Account {
        id: "int_linkedin_1".into(),
        name: "Northwind on LinkedIn".into(),
        provider: "linkedin".into(),
    };
    posts
        .register(
            Workspace {
                id: WORKSPACE.into(),
                name: "Northwind".into(),
            },
            std::slice::from_ref(&account),
        )
        .await?;
    if sender.list_subscriptions(WORKSPACE).await?.is_empty() {
        let created = sender
            .create_subscription(NewSubscription {
                workspace_id: WORKSPACE.into(),
                name: "demo receiver".into(),
                url: url.into(),
                events: vec![],
                integration_ids: vec![],
                created_by_kind: CreatedByKind::Dashboard,
                signing: Default::default(),
            })
            .await?;
        let path = format!("{db}.secret");
        write_private(&path, &created.secret.expose())?;
        println!(
            "created subscription {}; its signing secret is in {path}",
            created.subscription.id
        );
    }

    let now = Timestamp::from_unix_millis(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_millis() as i64,
    );
    let mut post = Post {
        id: format!("post_{}", now.unix_millis()),
        workspace_id: WORKSPACE.into(),
        external_id: "cms-article-2231".into(),
        group: "grp_launch".into(),
        account: account.clone(),
        content: "Our new roast is here".into(),
        publish_at: now,
        status: PostStatus::Draft,
    };
    let report = |what: &str, p: postwire_sender::Published| {
        println!(
            "{what:<28} {}",
            p.event_id()
                .map_or("no event (draft)".to_owned(), |id| format!("event {id}"))
        )
    };
    report(
        "draft saved",
        posts.save_draft(&mut post, "Our new roast is here!").await?,
    );
    report("scheduled", posts.schedule(&mut post, now.add_millis(3_600_000)).await?);
    report("publishing", posts.start_publishing(&mut post).await?);
    report(
        "published",
        posts
            .published(&mut post, "https://www.linkedin.com/feed/update/1", "urn:li:share:1")
            .await?,
    );
    let mut second = Post {
        id: format!("{}_b", post.id),
        status: PostStatus::Draft,
        ..post.clone()
    };
    report("second post scheduled", posts.schedule(&mut second, now).await?);
    let error = EventError::new(FailureCode::MediaInvalid, "the image is larger than 5 MB", false)?;
    report("second post failed", posts.failed(&mut second, error).await?);
    report(
        "second post deleted",
        posts
            .delete(
                &second,
                Actor {
                    kind: ActorKind::Dashboard,
                    id: Some("usr_1".into()),
                },
            )
            .await?,
    );
    report(
        "account disconnected",
        posts
            .account_disconnected(WORKSPACE, &account, DisconnectReason::ReconnectRequired)
            .await?,
    );

    // Wait (up to 15 s) until every delivery had its first attempt. A long-running
    // service keeps retrying failures for about a day; this demo stops here and prints
    // where each delivery stands (the same records GET /webhooks/{id}/deliveries lists).
    let subscription = sender.list_subscriptions(WORKSPACE).await?.remove(0).subscription.id;
    for _ in 0..150 {
        let page = sender.list_deliveries(&subscription, None, 100).await?;
        if page.items.iter().all(|d| !d.attempts.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for d in sender
        .list_deliveries(&subscription, None, 20)
        .await?
        .items
        .iter()
        .rev()
    {
        println!(
            "delivery {:<26} {:<8} after {} attempt(s)",
            d.event_type.as_str(),
            d.state.as_str(),
            d.attempts.len()
        );
    }
    dispatcher.shutdown().await;
    Ok(())
}

fn write_private(path: &str, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)?.write_all(format!("{text}\n").as_bytes())
}
