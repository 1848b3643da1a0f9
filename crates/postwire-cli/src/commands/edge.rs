//! `postwire edge`: the on-call engineer's handle on the edge inbox (the Worker in
//! `DELIVERY_MODE = "inbox"`), so nobody needs curl during an incident.
//!
//! Each subcommand is one request to the Worker's admin API under `/_postwire/`
//! (`worker/README.md`, "Admin API"), authenticated with the Worker's `ADMIN_TOKEN`:
//! `status` (counts per state, paused or not), `list`, `show`, `replay` (one delivery, or
//! every dead one since a time), `pause`, `resume`, and `erase` (a delivery's body, by id or
//! every delivery about a post or an account, when the sender erased them). Answers are
//! printed for people, or as the Worker's JSON with `--json`.
//!
//! The token is read from `POSTWIRE_EDGE_TOKEN` or from a file (`--token-file`), never from
//! the command line (where `ps` and shell history would keep it), and is never printed. It is
//! only sent over `https`, or `http` to a loopback address (`wrangler dev`, tests).

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use postwire_core::{Clock, SystemClock, Timestamp};
use postwire_edge_wire::admin::{
    ADMIN_PREFIX, CountsAnswer, DeliveryDetail, DeliveryPage, DeliveryState, DeliverySummary, EraseAnswer, ErrorBody,
    MAX_PAGE, PauseAnswer, ReplayAnswer, path,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use url::Url;

/// The environment variable holding the Worker's `ADMIN_TOKEN`.
pub const TOKEN_ENV: &str = "POSTWIRE_EDGE_TOKEN";
/// Default time to wait for the Worker's whole answer, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;

/// Arguments of `postwire edge`.
#[derive(Debug, Args)]
#[command(
    after_help = "The token is the Worker's ADMIN_TOKEN, read from POSTWIRE_EDGE_TOKEN or --token-file; \
it is sent only over https, or http to a loopback address. Exits 0 on success, 2 with the reason on any error."
)]
pub struct EdgeArgs {
    /// The Worker's URL, e.g. `https://edge.example.com` (only its scheme, host and port are used).
    #[arg(long, env = "POSTWIRE_EDGE_URL")]
    worker: String,
    /// A file whose first line is the Worker's ADMIN_TOKEN (default: the POSTWIRE_EDGE_TOKEN variable).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Print the Worker's JSON answer instead of a summary (before or after the subcommand).
    #[arg(long, global = true)]
    json: bool,
    /// Seconds to wait for the Worker's answer.
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_SECS)]
    timeout_secs: u64,
    #[command(subcommand)]
    command: EdgeCommand,
}

/// Subcommands of `postwire edge`.
#[derive(Debug, Subcommand)]
pub enum EdgeCommand {
    /// Counts per state, and whether delivery to the origin is paused.
    Status,
    /// Deliveries in one state, in the order the edge accepted them.
    List(ListArgs),
    /// One delivery with each attempt and the origin's answers.
    Show {
        /// Its webhook-id.
        id: String,
    },
    /// Deliver again: one delivered or dead delivery by id, or every dead one since a time.
    Replay(ReplayArgs),
    /// Hold deliveries at the edge (they are still accepted); requests already sent finish.
    Pause,
    /// Deliver again, in order, at the paced rate.
    Resume,
    /// Erase bodies held at the edge: one delivery by id, or every delivery about a post or
    /// a connected account (run it when the sender erases them). An erased delivery is never
    /// sent (again); its id stays until the retention ends, so copies are still duplicates.
    Erase(EraseArgs),
}

/// Arguments of `postwire edge erase`.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("which").required(true).args(["id", "post", "account"]))]
pub struct EraseArgs {
    /// The webhook-id of one delivery.
    id: Option<String>,
    /// Every delivery of an event about this post.
    #[arg(long)]
    post: Option<String>,
    /// Every delivery of an event about this connected account (its own events and its posts').
    #[arg(long)]
    account: Option<String>,
}

/// Arguments of `postwire edge list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Which state.
    #[arg(long, value_enum, default_value_t = State::Dead)]
    state: State,
    /// Deliveries per page (1 to 500).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_PAGE)))]
    limit: u32,
    /// Start after this cursor (the `next` one a previous page printed).
    #[arg(long)]
    cursor: Option<String>,
    /// Follow the cursors to the last page.
    #[arg(long, conflicts_with = "cursor")]
    all: bool,
}

/// Arguments of `postwire edge replay`.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("which").required(true).args(["id", "dead_since"]))]
pub struct ReplayArgs {
    /// The webhook-id of a delivered or dead delivery.
    id: Option<String>,
    /// Every delivery that died since: Unix seconds, an RFC 3339 time, or an age (90m, 24h, 7d).
    #[arg(long, value_parser = parse_since)]
    dead_since: Option<i64>,
}

/// A delivery's state in the inbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum State {
    /// Accepted, not tried yet (or waiting behind an earlier one of its key, or paused).
    Pending,
    /// Tried, waiting for its next attempt.
    Retrying,
    /// The origin answered 2xx.
    Delivered,
    /// Not accepted within the retry horizon; kept, replayable.
    Dead,
    /// Its body was erased; never sent (again).
    Erased,
}

impl State {
    /// The state as the admin API names it.
    fn wire(self) -> DeliveryState {
        match self {
            State::Pending => DeliveryState::Pending,
            State::Retrying => DeliveryState::Retrying,
            State::Delivered => DeliveryState::Delivered,
            State::Dead => DeliveryState::Dead,
            State::Erased => DeliveryState::Erased,
        }
    }
}

/// Runs `postwire edge …`.
pub fn run(args: EdgeArgs) -> Result<ExitCode, String> {
    let base = admin_base(&args.worker)?;
    let token = read_token(args.token_file.as_deref(), std::env::var(TOKEN_ENV).ok())?;
    let client = AdminClient::new(base, token, Duration::from_secs(args.timeout_secs.max(1)))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start Tokio: {e}"))?;
    runtime.block_on(async move {
        let json = args.json;
        match args.command {
            EdgeCommand::Status => print(client.get::<CountsAnswer>(path::COUNTS, &[]).await?, json, status_text),
            EdgeCommand::Show { id } => print(client.get_delivery(&id).await?, json, delivery_text),
            EdgeCommand::Pause => print(client.post::<PauseAnswer>(path::PAUSE, &[]).await?, json, paused_text),
            EdgeCommand::Resume => print(client.post::<PauseAnswer>(path::RESUME, &[]).await?, json, paused_text),
            EdgeCommand::Replay(ReplayArgs { id: Some(id), .. }) => {
                print(client.replay(&id).await?, json, replayed_text)
            }
            EdgeCommand::Replay(ReplayArgs { dead_since, .. }) => {
                let since = dead_since.ok_or("give a webhook-id or --dead-since")?.to_string();
                print(
                    client
                        .post::<ReplayAnswer>(path::REPLAY_DEAD, &[("since", &since)])
                        .await?,
                    json,
                    replayed_text,
                )
            }
            EdgeCommand::List(list) => list_pages(&client, &list, json).await,
            EdgeCommand::Erase(EraseArgs { id: Some(id), .. }) => print(client.erase(&id).await?, json, erased_text),
            EdgeCommand::Erase(EraseArgs { post, account, .. }) => {
                let query = match (&post, &account) {
                    (Some(p), _) => ("post", p.as_str()),
                    (None, Some(a)) => ("account", a.as_str()),
                    (None, None) => return Err("give a webhook-id, --post or --account".to_owned()),
                };
                print(
                    client.post::<EraseAnswer>(path::ERASE, &[query]).await?,
                    json,
                    erased_text,
                )
            }
        }
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Prints the Worker's answer: as JSON, or through `text`.
fn print<T: Serialize>(answer: T, json: bool, text: fn(&T) -> String) -> Result<(), String> {
    if json {
        println!("{}", to_json(&answer));
    } else {
        print!("{}", text(&answer));
    }
    Ok(())
}

/// One page, or every page with `--all`: a table, or one JSON answer per page.
async fn list_pages(client: &AdminClient, args: &ListArgs, json: bool) -> Result<(), String> {
    let limit = args.limit.to_string();
    let mut cursor = args.cursor.clone();
    let mut printed_header = false;
    loop {
        let mut query = vec![("state", args.state.wire().as_str()), ("limit", limit.as_str())];
        if let Some(c) = &cursor {
            query.push(("cursor", c));
        }
        let page = client.get::<DeliveryPage>(path::DELIVERIES, &query).await?;
        let next = page.next_cursor.clone();
        if json {
            println!("{}", to_json(&page));
        } else {
            let rows = &page.deliveries;
            if !printed_header {
                println!("{}", list_header());
                printed_header = true;
            }
            for row in rows {
                println!("{}", list_row(row));
            }
        }
        match next {
            Some(next) if args.all => cursor = Some(next),
            Some(next) => {
                if !json {
                    eprintln!("more: --cursor {next} (or --all)");
                }
                return Ok(());
            }
            None => return Ok(()),
        }
    }
}

/// The admin API's base URL: the Worker's origin plus `/_postwire/`, over https, or http
/// to a loopback address.
fn admin_base(worker: &str) -> Result<Url, String> {
    let url = Url::parse(worker.trim()).map_err(|e| format!("--worker `{worker}` is not a URL: {e}"))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => return Err(format!("--worker `{worker}` has no host")),
    };
    match url.scheme() {
        "https" => {}
        "http" if loopback => {}
        "http" => {
            return Err(format!(
                "--worker `{worker}`: the admin token is sent only over https (http only to a loopback address)"
            ));
        }
        other => return Err(format!("--worker `{worker}`: expected an https URL, not {other}")),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("--worker must not carry a user name or password".into());
    }
    url.join(ADMIN_PREFIX).map_err(|e| format!("--worker `{worker}`: {e}"))
}

/// The token: the first line of `file`, else `from_env`. Never echoed in an error.
fn read_token(file: Option<&std::path::Path>, from_env: Option<String>) -> Result<String, String> {
    read_worker_token(file, from_env, TOKEN_ENV, "ADMIN_TOKEN")
}

/// One of the Worker's tokens (`worker_var`, e.g. `ADMIN_TOKEN`), for `edge` and `listen`
/// alike: the first line of `file`, or else `from_env` (the `env_name` variable); never
/// from the command line. Refused when empty or not visible ASCII; errors never hold it.
pub(crate) fn read_worker_token(
    file: Option<&std::path::Path>,
    from_env: Option<String>,
    env_name: &str,
    worker_var: &str,
) -> Result<String, String> {
    let token = match file {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read --token-file {}: {e}", path.display()))?
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned(),
        None => from_env
            .map(|t| t.trim().to_owned())
            .ok_or_else(|| format!("set {env_name} to the Worker's {worker_var}, or pass --token-file"))?,
    };
    if token.is_empty() {
        return Err(format!("the {worker_var} token is empty"));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!("the {worker_var} token must be visible ASCII characters only"));
    }
    Ok(token)
}

/// Parses `--dead-since`: Unix seconds, an RFC 3339 time, or an age such as `90m`, `24h`, `7d`.
pub(crate) fn parse_since(value: &str) -> Result<i64, String> {
    parse_since_at(value, SystemClock.now())
}

fn parse_since_at(value: &str, now: Timestamp) -> Result<i64, String> {
    let v = value.trim();
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        return v.parse().map_err(|_| format!("`{v}` is too large for Unix seconds"));
    }
    if let Ok(t) = v.parse::<Timestamp>() {
        return Ok(t.unix_time().as_secs());
    }
    let unit = match v.chars().last() {
        Some('s') => 1,
        Some('m') => 60,
        Some('h') => 3_600,
        Some('d') => 86_400,
        _ => 0,
    };
    let amount = v.get(..v.len().saturating_sub(1)).and_then(|n| n.parse::<i64>().ok());
    match amount {
        Some(n) if unit > 0 && n >= 0 => {
            Ok(now.unix_time().as_secs() - n.saturating_mul(unit).min(now.unix_time().as_secs()))
        }
        _ => Err(format!(
            "`{v}`: expected Unix seconds, an RFC 3339 time, or an age such as 90m, 24h, 7d"
        )),
    }
}

/// A client of one Worker's admin API.
struct AdminClient {
    base: Url,
    token: String,
    http: reqwest::Client,
}

impl AdminClient {
    fn new(base: Url, token: String, timeout: Duration) -> Result<Self, String> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            // The token goes to the Worker only: never follow a redirect with it.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("postwire-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(AdminClient { base, token, http })
    }

    /// The URL of `segments` under the admin prefix, each segment percent-encoded.
    fn url(&self, segments: &[&str], query: &[(&str, &str)]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        url
    }

    async fn get<T: DeserializeOwned>(&self, path: &str, query: &[(&str, &str)]) -> Result<T, String> {
        self.send(reqwest::Method::GET, self.url(&[path], query)).await
    }

    async fn post<T: DeserializeOwned>(&self, path: &str, query: &[(&str, &str)]) -> Result<T, String> {
        self.send(reqwest::Method::POST, self.url(&[path], query)).await
    }

    async fn get_delivery(&self, id: &str) -> Result<DeliveryDetail, String> {
        self.send(reqwest::Method::GET, self.url(&[path::DELIVERIES, id], &[]))
            .await
    }

    async fn erase(&self, id: &str) -> Result<EraseAnswer, String> {
        self.send(
            reqwest::Method::POST,
            self.url(&[path::DELIVERIES, id, path::ERASE], &[]),
        )
        .await
    }

    async fn replay(&self, id: &str) -> Result<ReplayAnswer, String> {
        self.send(
            reqwest::Method::POST,
            self.url(&[path::DELIVERIES, id, path::REPLAY], &[]),
        )
        .await
    }

    /// One request, its answer read as `T`; a non-2xx answer becomes an error naming the
    /// Worker's code and message.
    async fn send<T: DeserializeOwned>(&self, method: reqwest::Method, url: Url) -> Result<T, String> {
        let shown = format!("{method} {}", url.path());
        let response = self
            .http
            .request(method, url)
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|e| format!("{shown}: cannot reach the Worker: {}", error_chain(&e)))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| format!("{shown}: the answer broke off: {}", error_chain(&e)))?;
        if status.is_success() {
            return serde_json::from_slice(&body).map_err(|e| {
                format!("{shown}: the Worker answered {status} with an answer this postwire cannot read: {e}")
            });
        }
        let refusal: Option<ErrorBody> = serde_json::from_slice(&body).ok();
        let code = refusal.as_ref().map_or("", |e| e.code.as_str());
        let message = refusal.as_ref().map_or("", |e| e.message.as_str());
        let mut error = format!("{shown}: the Worker answered {} {code}", status.as_u16());
        if !message.is_empty() {
            error.push_str(": ");
            error.push_str(message);
        }
        if status == reqwest::StatusCode::NOT_FOUND && message == "no such path" {
            error.push_str(
                " (every admin path is 404 unless the Worker runs DELIVERY_MODE = \"inbox\" with ADMIN_TOKEN set \
                 and the token matches it)",
            );
        }
        Err(error)
    }
}

/// An error with its causes, which say what actually failed (DNS, TLS, refused, timeout).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The answer as JSON, as the Worker wrote it.
fn to_json<T: Serialize>(answer: &T) -> String {
    serde_json::to_string(answer).unwrap_or_default()
}

/// A time in Unix milliseconds, as the rest of postwire writes times; `-` when absent.
fn time(ms: Option<i64>) -> String {
    ms.map_or_else(|| "-".to_owned(), |ms| Timestamp::from_unix_millis(ms).to_string())
}

/// A field as text; `-` when absent.
fn field<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

fn status_text(answer: &CountsAnswer) -> String {
    let mut out = String::new();
    if answer.paused {
        out.push_str("delivery to the origin: PAUSED (deliveries are accepted and held; `postwire edge resume`)\n");
    } else {
        out.push_str("delivery to the origin: running\n");
    }
    for state in DeliveryState::ALL {
        out.push_str(&format!("{:<10} {}\n", state.as_str(), answer.counts.get(state)));
    }
    out
}

fn paused_text(answer: &PauseAnswer) -> String {
    if answer.paused {
        "paused: deliveries are accepted and held at the edge\n".to_owned()
    } else {
        "resumed: held deliveries go out in order at the paced rate\n".to_owned()
    }
}

fn replayed_text(answer: &ReplayAnswer) -> String {
    let n = answer.replayed;
    format!("replayed {n} {}\n", if n == 1 { "delivery" } else { "deliveries" })
}

fn erased_text(answer: &EraseAnswer) -> String {
    let n = answer.erased;
    format!(
        "erased {n} {} ({} of them not delivered yet, now never sent)\n",
        if n == 1 { "delivery" } else { "deliveries" },
        answer.cancelled
    )
}

fn list_header() -> String {
    format!(
        "{:<40} {:<9} {:<24} {:<24} {:>8} {:<6} {}",
        "ID", "STATE", "KEY", "ACCEPTED", "ATTEMPTS", "LAST", "NEXT OR FINISHED"
    )
}

fn list_row(d: &DeliverySummary) -> String {
    let last = match d.last_status {
        Some(status) => status.to_string(),
        None => field(d.last_error.as_deref()),
    };
    format!(
        "{:<40} {:<9} {:<24} {:<24} {:>8} {:<6} {}",
        d.id,
        d.state.as_str(),
        field(d.ordering_key.as_deref()),
        time(Some(d.accepted_at_ms)),
        d.attempts,
        last,
        time(d.next_attempt_at_ms.or(d.finished_at_ms))
    )
}

fn delivery_text(detail: &DeliveryDetail) -> String {
    let d = &detail.summary;
    let mut out = String::new();
    let mut line = |name: &str, value: String| out.push_str(&format!("{name:<13} {value}\n"));
    line("id", d.id.clone());
    line("state", d.state.as_str().to_owned());
    line("ordering key", field(d.ordering_key.as_deref()));
    line("accepted", time(Some(d.accepted_at_ms)));
    line("attempts", d.attempts.to_string());
    line("next attempt", time(d.next_attempt_at_ms));
    line("finished", time(d.finished_at_ms));
    line("last status", field(d.last_status));
    line("last error", field(d.last_error.as_deref()));
    line("body bytes", d.body_bytes.to_string());
    for attempt in &detail.attempt_log {
        let took = match attempt.finished_at_ms {
            Some(f) => format!("{} ms", f.saturating_sub(attempt.started_at_ms)),
            None => "-".to_owned(),
        };
        out.push_str(&format!(
            "attempt {} at {}: {} {} in {took}: {}\n",
            attempt.n,
            time(Some(attempt.started_at_ms)),
            attempt.outcome,
            field(attempt.status),
            field(attempt.answer.as_deref()).escape_debug()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_goes_over_https_or_to_loopback_only() {
        let base = admin_base("https://edge.example.com/webhooks?x=1").unwrap();
        assert_eq!(base.as_str(), "https://edge.example.com/_postwire/");
        for ok in ["http://127.0.0.1:8787", "http://localhost:8787/", "http://[::1]:1"] {
            assert!(admin_base(ok).is_ok(), "{ok}");
        }
        for refused in [
            "http://edge.example.com",
            "http://10.0.0.1",
            "ftp://edge.example.com",
            "https://user:pw@edge.example.com",
            "edge.example.com",
        ] {
            assert!(admin_base(refused).is_err(), "{refused}");
        }
    }

    #[test]
    fn ids_are_percent_encoded_as_one_segment() {
        let client = AdminClient::new(
            admin_base("https://edge.example.com").unwrap(),
            "t".repeat(20),
            Duration::from_secs(1),
        )
        .unwrap();
        let url = client.url(&["deliveries", "msg/a b?#", "replay"], &[]);
        assert_eq!(url.path(), "/_postwire/deliveries/msg%2Fa%20b%3F%23/replay");
        let url = client.url(&["replay-dead"], &[("since", "1700000000")]);
        assert_eq!(
            url.as_str(),
            "https://edge.example.com/_postwire/replay-dead?since=1700000000"
        );
    }

    #[test]
    fn dead_since_takes_seconds_times_and_ages() {
        let now: Timestamp = "2026-11-27T12:00:00Z".parse().unwrap();
        let secs = now.unix_time().as_secs();
        assert_eq!(parse_since_at("1700000000", now), Ok(1_700_000_000));
        assert_eq!(parse_since_at("2026-11-27T11:00:00Z", now), Ok(secs - 3_600));
        assert_eq!(parse_since_at("90m", now), Ok(secs - 5_400));
        assert_eq!(parse_since_at("24h", now), Ok(secs - 86_400));
        assert_eq!(parse_since_at("7d", now), Ok(secs - 7 * 86_400));
        assert_eq!(parse_since_at("99999999999999d", now), Ok(0));
        for bad in ["", "h", "-1h", "1w", "yesterday", "1.5h", "99999999999999999999"] {
            assert!(parse_since_at(bad, now).is_err(), "{bad}");
        }
    }

    #[test]
    fn tokens_are_checked_and_never_echoed() {
        assert_eq!(read_token(None, Some(" abc \n".into())), Ok("abc".into()));
        let missing = read_token(None, None).unwrap_err();
        assert!(missing.contains(TOKEN_ENV), "{missing}");
        let bad = read_token(None, Some("secret with spaces".into())).unwrap_err();
        assert!(!bad.contains("secret"), "{bad}");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "from-the-file-0123456789\nignored\n").unwrap();
        assert_eq!(
            read_token(Some(&file), Some("env".into())),
            Ok("from-the-file-0123456789".into())
        );
        std::fs::write(&file, "\n").unwrap();
        assert!(read_token(Some(&file), None).is_err());
    }

    #[test]
    fn summaries_show_what_the_worker_said() {
        let counts: CountsAnswer = serde_json::from_value(serde_json::json!({"counts": {"pending": 3, "retrying": 1, "delivered": 940, "dead": 2, "erased": 4}, "paused": true})).unwrap();
        let text = status_text(&counts);
        assert!(text.contains("PAUSED"), "{text}");
        assert!(
            text.contains("delivered  940") && text.contains("dead       2") && text.contains("erased     4"),
            "{text}"
        );
        assert_eq!(
            erased_text(&EraseAnswer {
                erased: 3,
                cancelled: 1
            }),
            "erased 3 deliveries (1 of them not delivered yet, now never sent)\n"
        );
        let row = list_row(
            &serde_json::from_value(serde_json::json!({
                "id": "msg_1", "state": "dead", "ordering_key": "post:p1", "accepted_at_ms": 1_700_000_000_000_i64,
                "attempts": 4, "next_attempt_at_ms": null, "last_status": null, "last_error": "timeout",
                "finished_at_ms": 1_700_000_100_000_i64, "body_bytes": 10
            }))
            .unwrap(),
        );
        assert!(
            row.starts_with("msg_1 ") && row.contains("post:p1") && row.contains("timeout"),
            "{row}"
        );
        assert!(
            row.contains("2023-11-14T22:13:20.000Z") && row.contains("2023-11-14T22:15:00.000Z"),
            "{row}"
        );
    }
}
