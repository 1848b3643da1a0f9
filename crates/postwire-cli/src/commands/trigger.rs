//! `postwire trigger <event type>`: sends a realistic sample change (a post published, an
//! account disconnected, …) through the internal ingest API of a running `postwire serve`,
//! so every subscription of the workspace that wants that type gets a real, signed
//! delivery; the way `stripe trigger` exercises a receiver.
//!
//! The change is the platform's, as the ingest document describes it
//! (`docs/ingest-openapi.json`); it is written here as JSON and read into the client's
//! generated `EventsRequest` before it is sent, so a sample the document no longer accepts
//! fails (the unit tests below read every one). The ingest API has its own token:
//! `POSTWIRE_INGEST_TOKEN` (the variable `postwire serve` reads too) or `--ingest-token-file`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use postwire_client::ingest;
use serde_json::{Value, json};

use super::api_client::{
    self, CliError, DEFAULT_TIMEOUT_SECS, DEFAULT_URL, base_url, http_client, read_token, to_json,
};

/// The environment variable holding the ingest token.
pub const INGEST_TOKEN_ENV: &str = "POSTWIRE_INGEST_TOKEN";

/// Arguments of `postwire trigger`.
#[derive(Debug, Args)]
#[command(after_help = "\
The token is the server's ingest token: POSTWIRE_INGEST_TOKEN, or the first line of --ingest-token-file
(`postwire serve` prints where its generated one is kept). Exit codes: 0 sent; 2 bad usage or a change the
API calls invalid; 3 not found (the workspace is not registered); 4 refused (unauthorized, quota); 5 server
unreachable; 6 unexpected answer.")]
pub struct TriggerArgs {
    /// Which event: the sample change behind it is sent.
    #[arg(value_enum)]
    event_type: TriggerType,
    /// The server's base URL (scheme, host, port), where `postwire serve` listens.
    #[arg(long = "server", value_name = "URL", env = "POSTWIRE_URL", default_value = DEFAULT_URL)]
    url: String,
    /// A file whose first line is the ingest token [default: the POSTWIRE_INGEST_TOKEN variable].
    #[arg(long, env = "POSTWIRE_INGEST_TOKEN_FILE")]
    ingest_token_file: Option<PathBuf>,
    /// The workspace the change is about (registered on the server).
    #[arg(long, env = "POSTWIRE_WORKSPACE")]
    workspace: String,
    /// The connected account the change is about.
    #[arg(long, default_value = "acc_sample")]
    account: String,
    /// The post the change is about [default: post_sample_ and the Unix time in ms, new per run].
    #[arg(long)]
    post: Option<String>,
    /// Print the API's JSON answer instead of a summary.
    #[arg(long)]
    json: bool,
    /// Seconds to wait for the server's whole answer.
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_SECS)]
    timeout_secs: u64,
}

/// The event types a platform change emits (`webhook.test` has its own command,
/// `postwire webhooks test`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TriggerType {
    /// A post scheduled for an hour from now.
    #[value(name = "post.scheduled")]
    PostScheduled,
    /// A scheduled post taken off the schedule.
    #[value(name = "post.unscheduled")]
    PostUnscheduled,
    /// A post being sent to the provider.
    #[value(name = "post.publishing")]
    PostPublishing,
    /// A post published, with its release id and URL.
    #[value(name = "post.published")]
    PostPublished,
    /// A post that failed: the provider answered 503 (retryable).
    #[value(name = "post.failed")]
    PostFailed,
    /// A post deleted from the dashboard.
    #[value(name = "post.deleted")]
    PostDeleted,
    /// An account that must be reconnected.
    #[value(name = "integration.disconnected")]
    IntegrationDisconnected,
    /// An account that works again.
    #[value(name = "integration.reconnected")]
    IntegrationReconnected,
}

/// The sample change of `kind` about `post` and `account` of `workspace`, at `now`.
pub fn sample_change(
    kind: TriggerType,
    workspace: &str,
    account: &str,
    post: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Value {
    let integration = json!({
        "id": account,
        "name": "Acme on X",
        "providerIdentifier": "x",
        "picture": "https://images.example.com/acme.png",
    });
    let when = |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let post_record = |state: &str, publish: chrono::DateTime<chrono::Utc>| {
        json!({
            "id": post,
            "state": state,
            "publishDate": when(publish),
            "externalId": "launch-announcement",
            "group": "",
            "integration": integration,
            "content": "We are live! (not stored: the sender keeps no post content)",
        })
    };
    let later = now + chrono::Duration::hours(1);
    let (change, record, extra) = match kind {
        TriggerType::PostScheduled => ("scheduled", post_record("QUEUE", later), json!({})),
        TriggerType::PostUnscheduled => ("unscheduled", post_record("QUEUE", later), json!({})),
        TriggerType::PostPublishing => ("publishing", post_record("PUBLISHING", now), json!({})),
        TriggerType::PostPublished => {
            let mut record = post_record("PUBLISHED", now);
            record["releaseId"] = json!("1865432109876543210");
            record["releaseURL"] = json!("https://x.com/acme/status/1865432109876543210");
            ("published", record, json!({}))
        }
        TriggerType::PostFailed => (
            "failed",
            post_record("ERROR", now),
            json!({"error": {"code": "provider_error", "message": "The provider answered 503.", "retryable": true}}),
        ),
        TriggerType::PostDeleted => (
            "deleted",
            post_record("QUEUE", later),
            json!({"deletedBy": {"kind": "dashboard", "id": "user_sample"}}),
        ),
        TriggerType::IntegrationDisconnected => {
            return json!({
                "kind": "account",
                "workspaceId": workspace,
                "change": "disconnected",
                "reason": "reconnect_required",
                "integration": integration,
            });
        }
        TriggerType::IntegrationReconnected => {
            return json!({
                "kind": "account",
                "workspaceId": workspace,
                "change": "reconnected",
                "integration": integration,
            });
        }
    };
    let mut c = json!({"kind": "post", "workspaceId": workspace, "change": change, "post": record});
    if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
        c.extend(extra.clone());
    }
    c
}

/// The ingest request carrying `change`, checked against the generated types.
pub fn events_request(change: Value) -> Result<ingest::types::EventsRequest, String> {
    serde_json::from_value(json!({ "changes": [change] }))
        .map_err(|e| format!("the sample change does not match the ingest API's document: {e}"))
}

/// Runs `postwire trigger`.
pub fn run(args: TriggerArgs) -> ExitCode {
    api_client::block_on(async move {
        let base = base_url(&args.url)?;
        let token = read_token(
            args.ingest_token_file.as_deref(),
            std::env::var(INGEST_TOKEN_ENV).ok(),
            INGEST_TOKEN_ENV,
            "--ingest-token-file",
        )?;
        let client = ingest::Client::new_with_client(&base, http_client(&token, args.timeout_secs)?);
        let now = chrono::Utc::now();
        let post = args
            .post
            .clone()
            .unwrap_or_else(|| format!("post_sample_{}", now.timestamp_millis()));
        let change = sample_change(args.event_type, &args.workspace, &args.account, &post, now);
        let body = events_request(change).map_err(|m| CliError {
            kind: api_client::ExitKind::Usage,
            message: m,
        })?;
        let type_name = args
            .event_type
            .to_possible_value()
            .map(|v| v.get_name().to_owned())
            .unwrap_or_default();
        let answer = client
            .post_events(None, &body)
            .await
            .map_err(|e| api_client::classify(&format!("send a sample {type_name}"), &base, e))?
            .into_inner();
        if args.json {
            println!("{}", to_json(&answer));
        } else {
            let v = serde_json::to_value(&answer).unwrap_or_default();
            let first = &v["results"][0];
            println!(
                "sent {type_name} {} to {} subscription(s) of workspace {} (post {post}, account {})",
                first["eventId"].as_str().unwrap_or("-"),
                first["deliveries"].as_u64().unwrap_or(0),
                args.workspace,
                args.account,
            );
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every sample reads into the generated `EventsRequest`, keeps its event's fields, and
    /// sends what its event type needs.
    #[test]
    fn every_sample_matches_the_ingest_document() {
        let now = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        for kind in TriggerType::value_variants() {
            let change = sample_change(*kind, "ws_1", "acc_1", "post_1", now);
            let request = events_request(change.clone()).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
            let sent = serde_json::to_value(&request).unwrap();
            let sent = &sent["changes"][0];
            assert_eq!(sent["workspaceId"], "ws_1", "{kind:?}");
            assert_eq!(sent["change"], change["change"], "{kind:?}");
            match kind {
                TriggerType::PostPublished => {
                    assert_eq!(
                        sent["post"]["releaseURL"],
                        "https://x.com/acme/status/1865432109876543210"
                    );
                }
                TriggerType::PostFailed => assert_eq!(sent["error"]["code"], "provider_error"),
                TriggerType::PostDeleted => assert_eq!(sent["deletedBy"]["kind"], "dashboard"),
                TriggerType::IntegrationDisconnected => assert_eq!(sent["reason"], "reconnect_required"),
                _ => {}
            }
        }
    }

    /// A change the document refuses (a published post without its release) is an error,
    /// not a request.
    #[test]
    fn a_change_the_document_refuses_is_an_error() {
        let now = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let mut change = sample_change(TriggerType::PostPublished, "ws_1", "acc_1", "post_1", now);
        change["post"].as_object_mut().unwrap().remove("releaseURL");
        assert!(events_request(change).is_err());
    }
}
