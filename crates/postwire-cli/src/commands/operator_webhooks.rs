//! `postwire operator-webhooks`: the workspace's operator endpoints (they receive the
//! operational notices: an endpoint failing, paused, a secret expiring) through the HTTP API
//! of a running `postwire serve`, with the verbs the API has for them: list, create,
//! delete, pause, resume, rotate-secret, test, deliveries, resend.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use postwire_client::api::types;

use super::api_client::{self, Api, ApiArgs, CliError, Table, fields, maybe_time, print_one, time, to_json};

/// Arguments of `postwire operator-webhooks`.
#[derive(Debug, Args)]
#[command(after_help = api_client::EXIT_CODES_HELP)]
pub struct OperatorWebhooksArgs {
    #[command(flatten)]
    api: ApiArgs,
    #[command(subcommand)]
    command: OperatorCommand,
}

/// Subcommands of `postwire operator-webhooks`.
#[derive(Debug, Subcommand)]
pub enum OperatorCommand {
    /// The workspace's operator endpoints.
    List,
    /// Add an operator endpoint; prints its signing secret (shown once).
    Create {
        /// The endpoint: a public https URL.
        #[arg(long)]
        url: String,
        /// A label for people.
        #[arg(long)]
        name: String,
    },
    /// Delete an operator endpoint.
    Delete {
        /// Its id.
        id: String,
    },
    /// Stop sending notices to it (they wait until it is resumed).
    Pause {
        /// Its id.
        id: String,
    },
    /// Send notices to it again.
    Resume {
        /// Its id.
        id: String,
    },
    /// A new signing secret (printed once); the previous one keeps signing for 24 h.
    RotateSecret {
        /// Its id.
        id: String,
    },
    /// Send it a test notice.
    Test {
        /// Its id.
        id: String,
        /// A message carried in the notice [default: the server's].
        #[arg(long)]
        message: Option<String>,
    },
    /// Its deliveries, newest first.
    Deliveries {
        /// Its id.
        id: String,
        /// Deliveries per page, 1 to 100.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100))]
        limit: u32,
        /// Start after this cursor (the `next` one a previous page printed) [default: the newest].
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Send one of its finished deliveries again.
    Resend {
        /// The endpoint's id.
        id: String,
        /// The delivery's id.
        delivery: String,
    },
}

/// Runs `postwire operator-webhooks …`.
pub fn run(args: OperatorWebhooksArgs) -> ExitCode {
    api_client::block_on(async move {
        let api = Api::connect(&args.api)?;
        let ws = api.workspace().await?;
        let c = &api.client;
        match args.command {
            OperatorCommand::List => {
                let list = c
                    .list_operator_webhooks(&ws)
                    .await
                    .map_err(|e| api.error("list operator webhooks", e))?
                    .into_inner();
                if api.json {
                    list.data.iter().for_each(|e| println!("{}", to_json(e)));
                } else {
                    let mut t = Table::new(&["ID", "NAME", "STATE", "FAILURES", "FAILING SINCE", "URL"]);
                    for e in &list.data {
                        t.row(vec![
                            e.id.clone(),
                            e.name.clone(),
                            state_text(e.disabled, e.disabled_reason.as_deref()),
                            e.consecutive_failures.to_string(),
                            maybe_time(e.failing_since.as_ref()),
                            e.url.clone(),
                        ]);
                    }
                    print!("{}", t.render());
                }
            }
            OperatorCommand::Create { url, name } => {
                let body = types::CreateOperatorEndpointRequest { url, name };
                let e = c
                    .create_operator_webhook(&ws, &body)
                    .await
                    .map_err(|e| api.error("create the operator webhook", e))?
                    .into_inner();
                print_one(api.json, &e, |e| {
                    fields(&[
                        ("id", e.id.clone()),
                        ("name", e.name.clone()),
                        ("url", e.url.clone()),
                        ("secret", e.secret.clone()),
                    ]) + "The secret is shown once: give it to the receiver now.\n"
                });
            }
            OperatorCommand::Delete { id } => {
                c.delete_operator_webhook(&ws, &id)
                    .await
                    .map_err(|e| api.error(&format!("delete operator webhook {id}"), e))?;
                print_one(api.json, &serde_json::json!({ "deleted": id }), |_| {
                    format!("deleted operator webhook {id}\n")
                });
            }
            OperatorCommand::Pause { id } => set_enabled(&api, &ws, &id, false).await?,
            OperatorCommand::Resume { id } => set_enabled(&api, &ws, &id, true).await?,
            OperatorCommand::RotateSecret { id } => {
                let r = c
                    .rotate_operator_webhook_secret(&ws, &id)
                    .await
                    .map_err(|e| api.error(&format!("rotate the secret of operator webhook {id}"), e))?
                    .into_inner();
                print_one(api.json, &r, |r| {
                    fields(&[
                        ("secret", r.secret.clone()),
                        ("previous secret expires", time(&r.previous_secret_expires_at)),
                    ])
                });
            }
            OperatorCommand::Test { id, message } => {
                let body = types::SendTestRequest { message };
                let q = c
                    .send_operator_webhook_test(&ws, &id, Some(&body))
                    .await
                    .map_err(|e| api.error(&format!("send a test notice to operator webhook {id}"), e))?
                    .into_inner();
                print_one(api.json, &q, |q| {
                    format!("queued {} {} to operator webhook {id}\n", q.type_, q.event_id)
                });
            }
            OperatorCommand::Deliveries { id, limit, cursor } => {
                let page = c
                    .list_operator_webhook_deliveries(&ws, &id, cursor.as_deref(), std::num::NonZeroU32::new(limit))
                    .await
                    .map_err(|e| api.error(&format!("list the deliveries of operator webhook {id}"), e))?
                    .into_inner();
                if api.json {
                    page.data.iter().for_each(|d| println!("{}", to_json(d)));
                } else {
                    let mut t = Table::new(&["ID", "EVENT", "TYPE", "STATE", "ATTEMPTS", "CREATED"]);
                    for d in &page.data {
                        t.row(vec![
                            d.id.clone(),
                            d.event_id.clone(),
                            d.event_type.to_string(),
                            d.state.to_string(),
                            d.attempts.len().to_string(),
                            time(&d.created_at),
                        ]);
                    }
                    print!("{}", t.render());
                    if let Some(next) = page.next_cursor {
                        eprintln!("more: --cursor {next}");
                    }
                }
            }
            OperatorCommand::Resend { id, delivery } => {
                let r = c
                    .resend_operator_webhook_delivery(&ws, &id, &delivery)
                    .await
                    .map_err(|e| api.error(&format!("resend delivery {delivery}"), e))?
                    .into_inner();
                print_one(api.json, &r, |r| {
                    format!("resent {} as delivery {}\n", r.resent_from, r.delivery_id)
                });
            }
        }
        Ok(())
    })
}

/// `pause` and `resume`.
async fn set_enabled(api: &Api, ws: &str, id: &str, enabled: bool) -> Result<(), CliError> {
    let verb = if enabled { "resume" } else { "pause" };
    let e = api
        .client
        .set_operator_webhook_enabled(ws, id, &types::SetEnabledRequest { enabled })
        .await
        .map_err(|e| api.error(&format!("{verb} operator webhook {id}"), e))?
        .into_inner();
    print_one(api.json, &e, |e| {
        fields(&[
            ("id", e.id.clone()),
            ("name", e.name.clone()),
            ("url", e.url.clone()),
            ("state", state_text(e.disabled, e.disabled_reason.as_deref())),
        ])
    });
    Ok(())
}

/// `enabled`, or `paused` with the reason.
fn state_text(disabled: bool, reason: Option<&str>) -> String {
    match (disabled, reason) {
        (false, _) => "enabled".to_owned(),
        (true, Some(r)) => format!("paused ({r})"),
        (true, None) => "paused".to_owned(),
    }
}
