//! `postwire webhooks`: the workspace's subscriptions through the HTTP API of a running
//! `postwire serve` (list, show, create, update, delete, rotate-secret, pause, resume, test).
//!
//! Each verb is one call of the client generated from `docs/openapi.json`
//! (`postwire-client`); connection, token, workspace, errors and output are
//! `api_client.rs`'s.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use postwire_client::api::types;

use super::api_client::{self, Api, ApiArgs, CliError, Table, arg, fields, maybe_time, print_one, time, to_json};

/// Arguments of `postwire webhooks`.
#[derive(Debug, Args)]
#[command(after_help = api_client::EXIT_CODES_HELP)]
pub struct WebhooksArgs {
    #[command(flatten)]
    api: ApiArgs,
    #[command(subcommand)]
    command: WebhooksCommand,
}

/// Subcommands of `postwire webhooks`.
#[derive(Debug, Subcommand)]
pub enum WebhooksCommand {
    /// The workspace's subscriptions, oldest first.
    List,
    /// One subscription.
    Show {
        /// Its id.
        id: String,
    },
    /// Subscribe an endpoint; prints its signing secret (shown once).
    Create(CreateArgs),
    /// Change a subscription's URL, name, events, accounts or signing (the rest is kept).
    Update(UpdateArgs),
    /// Delete a subscription; its queued deliveries are cancelled.
    Delete {
        /// Its id.
        id: String,
    },
    /// A new signing secret (printed once); the previous one keeps signing for 24 h.
    RotateSecret {
        /// Its id.
        id: String,
    },
    /// Stop deliveries to a subscription (they wait, held, until it is resumed).
    Pause {
        /// Its id.
        id: String,
    },
    /// Deliver to a subscription again, held deliveries first.
    Resume {
        /// Its id.
        id: String,
    },
    /// Send a `webhook.test` event to a subscription.
    Test {
        /// Its id.
        id: String,
        /// A message carried in the event's data [default: the server's].
        #[arg(long)]
        message: Option<String>,
    },
}

/// Arguments of `postwire webhooks create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The endpoint: a public https URL.
    #[arg(long)]
    url: String,
    /// A label for people.
    #[arg(long)]
    name: String,
    /// An event type to receive, e.g. `post.published` (repeat, or comma-separated) [default: all].
    #[arg(long = "event", value_delimiter = ',')]
    events: Vec<String>,
    /// A connected account whose events to receive (repeat, or comma-separated) [default: all].
    #[arg(long = "account", value_delimiter = ',')]
    accounts: Vec<String>,
    /// Which signatures deliveries carry: symmetric (v1), asymmetric (v1a) or both [default: symmetric].
    #[arg(long)]
    signing: Option<String>,
    /// An Idempotency-Key: the same key and body within 24 h creates the subscription once [default: none].
    #[arg(long)]
    idempotency_key: Option<String>,
}

/// Arguments of `postwire webhooks update`.
#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// Its id.
    id: String,
    /// A new endpoint URL [default: kept].
    #[arg(long)]
    url: Option<String>,
    /// A new label [default: kept].
    #[arg(long)]
    name: Option<String>,
    /// New event types (repeat, or comma-separated) [default: kept].
    #[arg(long = "event", value_delimiter = ',')]
    events: Vec<String>,
    /// New account restriction (repeat, or comma-separated) [default: kept].
    #[arg(long = "account", value_delimiter = ',')]
    accounts: Vec<String>,
    /// New signing choice: symmetric, asymmetric or both [default: kept].
    #[arg(long)]
    signing: Option<String>,
}

/// Runs `postwire webhooks …`.
pub fn run(args: WebhooksArgs) -> ExitCode {
    api_client::block_on(async move {
        let api = Api::connect(&args.api)?;
        let ws = api.workspace().await?;
        let c = &api.client;
        match args.command {
            WebhooksCommand::List => {
                let list = c
                    .list_webhooks(&ws)
                    .await
                    .map_err(|e| api.error("list webhooks", e))?
                    .into_inner();
                if api.json {
                    list.data.iter().for_each(|w| println!("{}", to_json(w)));
                } else {
                    print!("{}", table(&list.data));
                }
            }
            WebhooksCommand::Show { id } => {
                let w = c
                    .get_webhook(&ws, &id)
                    .await
                    .map_err(|e| api.error(&format!("show webhook {id}"), e))?
                    .into_inner();
                print_one(api.json, &w, details);
            }
            WebhooksCommand::Create(create) => {
                let body = types::CreateWebhookRequest {
                    url: create.url,
                    name: create.name,
                    events: (!create.events.is_empty())
                        .then(|| event_types(&create.events))
                        .transpose()?,
                    integration_ids: (!create.accounts.is_empty()).then_some(create.accounts),
                    signing: create.signing.as_deref().map(|s| arg("--signing", s)).transpose()?,
                };
                let w = c
                    .create_webhook(&ws, create.idempotency_key.as_deref(), &body)
                    .await
                    .map_err(|e| api.error("create the webhook", e))?
                    .into_inner();
                print_one(api.json, &w, |w| {
                    fields(&[
                        ("id", w.id.clone()),
                        ("name", w.name.clone()),
                        ("url", w.url.clone()),
                        ("events", events_text(&w.events)),
                        ("signing", w.signing.to_string()),
                        ("secret", w.secret.clone()),
                    ]) + "The secret is shown once: give it to the receiver now.\n"
                });
            }
            WebhooksCommand::Update(update) => {
                let body = types::UpdateWebhookRequest {
                    url: update.url,
                    name: update.name,
                    events: event_types(&update.events)?,
                    integration_ids: update.accounts,
                    signing: update.signing.as_deref().map(|s| arg("--signing", s)).transpose()?,
                };
                let id = update.id;
                let w = c
                    .update_webhook(&ws, &id, &body)
                    .await
                    .map_err(|e| api.error(&format!("update webhook {id}"), e))?
                    .into_inner();
                print_one(api.json, &w, details);
            }
            WebhooksCommand::Delete { id } => {
                c.delete_webhook(&ws, &id)
                    .await
                    .map_err(|e| api.error(&format!("delete webhook {id}"), e))?;
                print_one(api.json, &serde_json::json!({ "deleted": id }), |_| {
                    format!("deleted webhook {id}\n")
                });
            }
            WebhooksCommand::RotateSecret { id } => {
                let r = c
                    .rotate_webhook_secret(&ws, &id)
                    .await
                    .map_err(|e| api.error(&format!("rotate the secret of webhook {id}"), e))?
                    .into_inner();
                print_one(api.json, &r, |r| {
                    fields(&[
                        ("secret", r.secret.clone()),
                        ("previous secret expires", time(&r.previous_secret_expires_at)),
                    ])
                });
            }
            WebhooksCommand::Pause { id } => set_enabled(&api, &ws, &id, false).await?,
            WebhooksCommand::Resume { id } => set_enabled(&api, &ws, &id, true).await?,
            WebhooksCommand::Test { id, message } => {
                let body = types::SendTestRequest { message };
                let q = c
                    .send_test_event(&ws, &id, Some(&body))
                    .await
                    .map_err(|e| api.error(&format!("send a test event to webhook {id}"), e))?
                    .into_inner();
                print_one(api.json, &q, |q| {
                    format!("queued {} {} to webhook {id}\n", q.type_, q.event_id)
                });
            }
        }
        Ok(())
    })
}

/// `pause` and `resume`.
async fn set_enabled(api: &Api, ws: &str, id: &str, enabled: bool) -> Result<(), CliError> {
    let verb = if enabled { "resume" } else { "pause" };
    let w = api
        .client
        .set_webhook_enabled(ws, id, &types::SetEnabledRequest { enabled })
        .await
        .map_err(|e| api.error(&format!("{verb} webhook {id}"), e))?
        .into_inner();
    print_one(api.json, &w, details);
    Ok(())
}

/// Event type names checked against the document's list.
fn event_types(names: &[String]) -> Result<Vec<types::EventTypeName>, CliError> {
    names.iter().map(|n| arg("--event", n)).collect()
}

/// Event types for people: `all` when none is named.
fn events_text(events: &[types::EventTypeName]) -> String {
    if events.is_empty() {
        "all".to_owned()
    } else {
        events.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
    }
}

/// `enabled`, or `paused` with the reason.
fn state_text(w: &types::WebhookSubscription) -> String {
    if w.disabled {
        match &w.disabled_reason {
            Some(r) => format!("paused ({r})"),
            None => "paused".to_owned(),
        }
    } else {
        "enabled".to_owned()
    }
}

/// The list as a table.
fn table(list: &[types::WebhookSubscription]) -> String {
    let mut t = Table::new(&["ID", "NAME", "STATE", "FAILURES", "EVENTS", "URL"]);
    for w in list {
        t.row(vec![
            w.id.clone(),
            w.name.clone(),
            state_text(w),
            w.consecutive_failures.to_string(),
            events_text(&w.events),
            w.url.clone(),
        ]);
    }
    t.render()
}

/// One subscription for people.
fn details(w: &types::WebhookSubscription) -> String {
    let accounts = if w.integrations.is_empty() {
        "all".to_owned()
    } else {
        w.integrations
            .iter()
            .map(|i| i.id.clone())
            .collect::<Vec<_>>()
            .join(",")
    };
    fields(&[
        ("id", w.id.clone()),
        ("name", w.name.clone()),
        ("url", w.url.clone()),
        ("state", state_text(w)),
        ("events", events_text(&w.events)),
        ("accounts", accounts),
        ("signing", w.signing.to_string()),
        ("failures in a row", w.consecutive_failures.to_string()),
        ("last success", maybe_time(w.last_success_at.as_ref())),
        ("created", time(&w.created_at)),
    ])
}
