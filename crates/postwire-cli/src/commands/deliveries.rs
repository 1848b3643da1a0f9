//! `postwire deliveries` (list, show, resend) and `postwire recover`: a subscription's
//! deliveries through the HTTP API of a running `postwire serve`.
//!
//! The API lists one subscription's deliveries, newest first, a page at a time
//! (`listDeliveries`: `limit`, `cursor`). `--status`, `--event-type` and `--since` are applied
//! here to what it returns, and paging stops at the first delivery older than `--since`. The
//! API has no call for one delivery: `show` walks the subscription's pages until it finds it.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use postwire_client::api::types;

use super::api_client::{
    self, Api, ApiArgs, CliError, ExitKind, Table, arg, fields, maybe_time, parse_time, print_one, time, to_json,
};

/// The API's largest page.
const MAX_PAGE: u32 = 100;

/// Arguments of `postwire deliveries`.
#[derive(Debug, Args)]
#[command(after_help = api_client::EXIT_CODES_HELP)]
pub struct DeliveriesArgs {
    #[command(flatten)]
    api: ApiArgs,
    #[command(subcommand)]
    command: DeliveriesCommand,
}

/// Subcommands of `postwire deliveries`.
#[derive(Debug, Subcommand)]
pub enum DeliveriesCommand {
    /// A subscription's deliveries, newest first, with their last attempt.
    List(ListArgs),
    /// One delivery with every attempt.
    Show {
        /// The delivery's id.
        id: String,
        /// The subscription it belongs to.
        #[arg(long)]
        webhook: String,
    },
    /// Send a finished delivery again (a new delivery of the same event, same webhook-id).
    Resend {
        /// The delivery's id.
        id: String,
        /// The subscription it belongs to.
        #[arg(long)]
        webhook: String,
    },
}

/// Arguments of `postwire deliveries list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// The subscription.
    #[arg(long)]
    webhook: String,
    /// Only deliveries in this state: pending, held, delivered, failed, expired, cancelled
    /// (repeat, or comma-separated) [default: every state].
    #[arg(long = "status", value_delimiter = ',')]
    statuses: Vec<String>,
    /// Only deliveries of this event type, e.g. `post.published` [default: every type].
    #[arg(long)]
    event_type: Option<String>,
    /// Only deliveries created since: Unix seconds, an RFC 3339 time, or an age (90m, 24h, 7d)
    /// [default: no limit].
    #[arg(long, value_parser = parse_time)]
    since: Option<chrono::DateTime<chrono::Utc>>,
    /// Most deliveries to print [default: 20].
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    limit: u32,
    /// Start after this cursor (the `next` one a previous list printed) [default: the newest].
    #[arg(long)]
    cursor: Option<String>,
}

/// Arguments of `postwire recover`.
#[derive(Debug, Args)]
#[command(after_help = api_client::EXIT_CODES_HELP)]
pub struct RecoverArgs {
    #[command(flatten)]
    api: ApiArgs,
    /// The subscription.
    #[arg(long)]
    webhook: String,
    /// Resend the deliveries that failed for good since: Unix seconds, an RFC 3339 time, or an
    /// age (90m, 24h, 7d).
    #[arg(long, value_parser = parse_time)]
    since: chrono::DateTime<chrono::Utc>,
}

/// Runs `postwire deliveries …`.
pub fn run(args: DeliveriesArgs) -> ExitCode {
    api_client::block_on(async move {
        let api = Api::connect(&args.api)?;
        let ws = api.workspace().await?;
        match args.command {
            DeliveriesCommand::List(list) => list_deliveries(&api, &ws, &list).await,
            DeliveriesCommand::Show { id, webhook } => {
                let d = find(&api, &ws, &webhook, &id).await?;
                print_one(api.json, &d, details);
                Ok(())
            }
            DeliveriesCommand::Resend { id, webhook } => {
                let r = api
                    .client
                    .resend_delivery(&ws, &webhook, &id)
                    .await
                    .map_err(|e| api.error(&format!("resend delivery {id}"), e))?
                    .into_inner();
                print_one(api.json, &r, |r| {
                    format!("resent {} as delivery {}\n", r.resent_from, r.delivery_id)
                });
                Ok(())
            }
        }
    })
}

/// Runs `postwire recover`.
pub fn run_recover(args: RecoverArgs) -> ExitCode {
    api_client::block_on(async move {
        let api = Api::connect(&args.api)?;
        let ws = api.workspace().await?;
        let r = api
            .client
            .recover_failed_deliveries(&ws, &args.webhook, &types::RecoverRequest { since: args.since })
            .await
            .map_err(|e| api.error(&format!("recover the failed deliveries of webhook {}", args.webhook), e))?
            .into_inner();
        print_one(api.json, &r, |r| {
            format!(
                "queued {} failed deliveries of webhook {} again (failed since {})\n",
                r.queued,
                args.webhook,
                time(&args.since)
            )
        });
        Ok(())
    })
}

/// Whether `d` passes the filters.
fn keep(d: &types::Delivery, statuses: &[types::DeliveryStateName], event_type: Option<&types::EventTypeName>) -> bool {
    (statuses.is_empty() || statuses.contains(&d.state)) && event_type.is_none_or(|t| &d.event_type == t)
}

/// `deliveries list`: pages until `--limit` deliveries pass the filters, the list ends, or
/// a delivery is older than `--since`.
async fn list_deliveries(api: &Api, ws: &str, args: &ListArgs) -> Result<(), CliError> {
    let statuses: Vec<types::DeliveryStateName> = args
        .statuses
        .iter()
        .map(|s| arg("--status", s))
        .collect::<Result<_, _>>()?;
    let event_type: Option<types::EventTypeName> =
        args.event_type.as_deref().map(|t| arg("--event-type", t)).transpose()?;
    let mut cursor: Option<String> = args.cursor.clone();
    let want = args.limit as usize;
    let mut kept: Vec<types::Delivery> = Vec::new();
    let mut next: Option<String> = None;
    'pages: loop {
        let page = api
            .client
            .list_deliveries(
                ws,
                &args.webhook,
                cursor.as_deref(),
                std::num::NonZeroU32::new(MAX_PAGE.min(args.limit)),
            )
            .await
            .map_err(|e| api.error(&format!("list the deliveries of webhook {}", args.webhook), e))?
            .into_inner();
        for d in page.data {
            if args.since.is_some_and(|since| d.created_at < since) {
                next = None;
                break 'pages;
            }
            if keep(&d, &statuses, event_type.as_ref()) {
                kept.push(d);
                if kept.len() == want {
                    next = page.next_cursor.clone();
                    break 'pages;
                }
            }
        }
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    if api.json {
        kept.iter().for_each(|d| println!("{}", to_json(d)));
    } else {
        let mut t = Table::new(&["ID", "EVENT", "TYPE", "STATE", "ATTEMPTS", "LAST STATUS", "CREATED"]);
        for d in &kept {
            t.row(vec![
                d.id.clone(),
                d.event_id.clone(),
                d.event_type.to_string(),
                d.state.to_string(),
                d.attempts.len().to_string(),
                d.attempts.last().map_or_else(|| "-".to_owned(), attempt_outcome),
                time(&d.created_at),
            ]);
        }
        print!("{}", t.render());
        if let Some(next) = next {
            eprintln!("more: --cursor {next}");
        }
    }
    Ok(())
}

/// Walks a subscription's deliveries until `id`.
async fn find(api: &Api, ws: &str, webhook: &str, id: &str) -> Result<types::Delivery, CliError> {
    let mut cursor: Option<String> = None;
    loop {
        let page = api
            .client
            .list_deliveries(ws, webhook, cursor.as_deref(), std::num::NonZeroU32::new(MAX_PAGE))
            .await
            .map_err(|e| api.error(&format!("look for delivery {id}"), e))?
            .into_inner();
        if let Some(d) = page.data.into_iter().find(|d| d.id == id) {
            return Ok(d);
        }
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => {
                return Err(CliError {
                    kind: ExitKind::NotFound,
                    message: format!(
                        "cannot show delivery {id}: not_found: webhook {webhook} has no such delivery (`postwire deliveries list --webhook {webhook}` shows them)"
                    ),
                });
            }
        }
    }
}

/// An attempt's outcome: the status, or why there was none.
fn attempt_outcome(a: &types::Attempt) -> String {
    match (a.response_status, &a.error) {
        (Some(s), _) => s.to_string(),
        (None, Some(e)) => e.clone(),
        (None, None) => "-".to_owned(),
    }
}

/// One delivery for people, with its attempts.
fn details(d: &types::Delivery) -> String {
    let mut out = fields(&[
        ("id", d.id.clone()),
        ("event", d.event_id.clone()),
        ("type", d.event_type.to_string()),
        ("webhook", d.subscription_id.clone()),
        ("state", d.state.to_string()),
        ("created", time(&d.created_at)),
        ("next attempt", maybe_time(d.next_attempt_at.as_ref())),
        ("finished", maybe_time(d.finished_at.as_ref())),
        ("payload erased", d.payload_erased.to_string()),
    ]);
    let mut t = Table::new(&["#", "STARTED", "OUTCOME", "MS", "BODY"]);
    for a in &d.attempts {
        t.row(vec![
            a.number.to_string(),
            time(&a.started_at),
            attempt_outcome(a),
            a.duration_ms.to_string(),
            a.response_body
                .as_deref()
                .map(|b| b.chars().take(60).collect::<String>().replace(['\n', '\r'], " "))
                .unwrap_or_default(),
        ]);
    }
    out.push('\n');
    out.push_str(&t.render());
    out
}
