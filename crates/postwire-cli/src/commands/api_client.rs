//! What the commands that talk to a running `postwire serve` share (`webhooks`, `deliveries`,
//! `recover`, `operator-webhooks`, `trigger`): where the server is and the token, the
//! workspace, the generated client (`postwire-client`, from `docs/openapi.json`), the errors
//! with their exit codes, and the output (a table for people, JSON for scripts).
//!
//! The token is read from `POSTWIRE_TOKEN` or from a file (`--token-file`,
//! `POSTWIRE_TOKEN_FILE`), never from the command line (where `ps` and shell history would
//! keep it), and never printed: errors name the variable, not the value. A request is never
//! redirected, so the token only goes to the server named.
//!
//! Every failure is one line on standard error, `postwire: <what failed>: <what to do>`, with
//! the API's stable code when the API answered, and one exit code per kind ([`ExitKind`]).

use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use postwire_client::api;
use postwire_client::progenitor_client;
use serde::Serialize;

/// The environment variable holding the API token.
pub const TOKEN_ENV: &str = "POSTWIRE_TOKEN";
/// The server's base URL when neither `--url` nor `POSTWIRE_URL` is set.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8080";
/// Default time to wait for the server's whole answer, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;

/// The exit codes' table, shown after each API command's `--help`.
pub const EXIT_CODES_HELP: &str = "\
Token: POSTWIRE_TOKEN, or the first line of --token-file / POSTWIRE_TOKEN_FILE (never a flag; never printed).
Exit codes: 0 done; 2 bad usage (a flag, a value or a request the API calls invalid: invalid_request);
3 not found (not_found); 4 refused (unauthorized, insufficient_scope, forbidden, conflicts, limits: the
API's code is printed); 5 server unreachable (connection refused, DNS, timeout); 6 unexpected answer
(a server error, or a URL that is not a postwire API).";

/// How a command ended, one exit code each (see [`EXIT_CODES_HELP`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitKind {
    /// A flag, a value, or a request the API refused as invalid (400): exit 2.
    Usage,
    /// The API answered 404: exit 3.
    NotFound,
    /// The API refused the request (401, 403, 409, 422, 429 and other 4xx): exit 4.
    Refused,
    /// No answer: connection refused, DNS, TLS, timeout: exit 5.
    Unreachable,
    /// An answer that is not the API's (5xx, or a body the client cannot read): exit 6.
    Unexpected,
}

impl ExitKind {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            ExitKind::Usage => 2,
            ExitKind::NotFound => 3,
            ExitKind::Refused => 4,
            ExitKind::Unreachable => 5,
            ExitKind::Unexpected => 6,
        }
    }
}

/// A failed command: its kind (the exit code) and the one line printed.
#[derive(Debug)]
pub struct CliError {
    /// Which exit code.
    pub kind: ExitKind,
    /// What failed and what to do; never the token.
    pub message: String,
}

impl CliError {
    /// A usage error (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        CliError {
            kind: ExitKind::Usage,
            message: message.into(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Prints the error's line and returns its exit code.
pub fn finish(result: Result<(), CliError>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("postwire: {}", e.message);
            ExitCode::from(e.kind.code())
        }
    }
}

/// Where the API is and who is asking: the flags every API command shares.
#[derive(Debug, Clone, Args)]
pub struct ApiArgs {
    /// The server's base URL (scheme, host, port), where `postwire serve` listens.
    #[arg(long, value_name = "URL", env = "POSTWIRE_URL", default_value = DEFAULT_URL, global = true)]
    pub server: String,
    /// A file whose first line is the API token [default: the POSTWIRE_TOKEN variable].
    #[arg(long, env = "POSTWIRE_TOKEN_FILE", global = true)]
    pub token_file: Option<PathBuf>,
    /// The workspace [default: the only one the token sees].
    #[arg(long, env = "POSTWIRE_WORKSPACE", global = true)]
    pub workspace: Option<String>,
    /// Print JSON: one object, or one line per item of a list [default: tables for people].
    #[arg(long, global = true)]
    pub json: bool,
    /// Seconds to wait for the server's whole answer.
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_SECS, global = true)]
    pub timeout_secs: u64,
}

/// Reads a token: the first line of `file`, else `from_env` (the `env_name` variable).
/// Errors name the file or the variable, never the value.
pub fn read_token(
    file: Option<&Path>,
    from_env: Option<String>,
    env_name: &str,
    flag: &str,
) -> Result<String, CliError> {
    let token = match file {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| CliError::usage(format!("cannot read {flag} {}: {e}", path.display())))?
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned(),
        None => from_env
            .map(|t| t.trim().to_owned())
            .ok_or_else(|| CliError::usage(format!("no token: set {env_name}, or pass {flag}")))?,
    };
    if token.is_empty() {
        return Err(CliError::usage(format!(
            "the token (from {env_name} or {flag}) is empty"
        )));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(CliError::usage(format!(
            "the token (from {env_name} or {flag}) must be visible ASCII characters only"
        )));
    }
    Ok(token)
}

/// Checks the base URL: http or https with a host. Only its origin is used.
pub fn base_url(url: &str) -> Result<String, CliError> {
    let parsed = url::Url::parse(url.trim()).map_err(|e| {
        CliError::usage(format!(
            "--server / POSTWIRE_URL `{url}` is not a URL ({e}): e.g. {DEFAULT_URL}"
        ))
    })?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(CliError::usage(format!(
            "--server / POSTWIRE_URL `{url}` must be an http or https URL with a host, e.g. {DEFAULT_URL}"
        )));
    }
    Ok(parsed.origin().ascii_serialization())
}

/// An HTTP client sending `token` as a bearer on every request, never following a redirect.
pub fn http_client(token: &str, timeout_secs: u64) -> Result<reqwest::Client, CliError> {
    let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| CliError::usage("the token must be visible ASCII characters only"))?;
    value.set_sensitive(true);
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(reqwest::header::AUTHORIZATION, value);
    let timeout = Duration::from_secs(timeout_secs.max(1));
    reqwest::Client::builder()
        .default_headers(headers)
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("postwire-cli/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| CliError {
            kind: ExitKind::Unexpected,
            message: format!("cannot build the HTTP client: {e}"),
        })
}

/// Runs `work` on a one-thread Tokio runtime and turns its result into the exit code.
pub fn block_on<F: Future<Output = Result<(), CliError>>>(work: F) -> ExitCode {
    match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => finish(runtime.block_on(work)),
        Err(e) => finish(Err(CliError {
            kind: ExitKind::Unexpected,
            message: format!("cannot start Tokio: {e}"),
        })),
    }
}

/// A connected API client: the generated client, the workspace, the output mode.
pub struct Api {
    /// The generated client of `docs/openapi.json`.
    pub client: api::Client,
    /// The server's origin, for messages.
    pub base: String,
    /// Print JSON instead of tables.
    pub json: bool,
    workspace: Option<String>,
}

impl Api {
    /// Builds the client from the shared flags and the environment.
    pub fn connect(args: &ApiArgs) -> Result<Self, CliError> {
        let base = base_url(&args.server)?;
        let token = read_token(
            args.token_file.as_deref(),
            std::env::var(TOKEN_ENV).ok(),
            TOKEN_ENV,
            "--token-file",
        )?;
        let http = http_client(&token, args.timeout_secs)?;
        Ok(Api {
            client: api::Client::new_with_client(&base, http),
            base,
            json: args.json,
            workspace: args.workspace.clone().filter(|w| !w.is_empty()),
        })
    }

    /// The workspace: `--workspace`/`POSTWIRE_WORKSPACE`, or the only one the token sees.
    pub async fn workspace(&self) -> Result<String, CliError> {
        if let Some(w) = &self.workspace {
            return Ok(w.clone());
        }
        let list = self
            .client
            .list_workspaces()
            .await
            .map_err(|e| self.error("list the token's workspaces", e))?
            .into_inner();
        match list.data.as_slice() {
            [only] => Ok(only.id.clone()),
            [] => Err(CliError {
                kind: ExitKind::Refused,
                message: "the token sees no workspace: make one with `postwire token create --workspace ID`".to_owned(),
            }),
            many => Err(CliError::usage(format!(
                "the token sees {} workspaces ({}): pick one with --workspace or POSTWIRE_WORKSPACE",
                many.len(),
                many.iter().map(|w| w.id.as_str()).collect::<Vec<_>>().join(", ")
            ))),
        }
    }

    /// Turns a failed call into the line and exit code: `doing` says what was tried.
    pub fn error<E: ApiErrorBody>(&self, doing: &str, err: progenitor_client::Error<E>) -> CliError {
        classify(doing, &self.base, err)
    }
}

/// A generated error body type: its status, code and message.
pub trait ApiErrorBody {
    /// The API's stable code and its message.
    fn code_and_message(&self) -> (String, String);
}

impl ApiErrorBody for api::types::ErrorBody {
    fn code_and_message(&self) -> (String, String) {
        (self.code.to_string(), self.message.clone())
    }
}

impl ApiErrorBody for api::types::AnyErrorBody {
    fn code_and_message(&self) -> (String, String) {
        match self {
            api::types::AnyErrorBody::ErrorBody(b) => b.code_and_message(),
            api::types::AnyErrorBody::ValidationErrorBody(b) => {
                let message = match &b.message {
                    api::types::ValidationMessage::String(s) => s.clone(),
                    api::types::ValidationMessage::Array(all) => all.join("; "),
                };
                (b.code.to_string(), message)
            }
        }
    }
}

impl ApiErrorBody for postwire_client::ingest::types::ErrorBody {
    fn code_and_message(&self) -> (String, String) {
        (self.code.to_string(), self.message.clone())
    }
}

impl ApiErrorBody for postwire_client::ingest::types::AnyErrorBody {
    fn code_and_message(&self) -> (String, String) {
        use postwire_client::ingest::types::{AnyErrorBody, ValidationErrorBodyMessage as ValidationMessage};
        match self {
            AnyErrorBody::ErrorBody(b) => b.code_and_message(),
            AnyErrorBody::ValidationErrorBody(b) => {
                let message = match &b.message {
                    ValidationMessage::String(s) => s.clone(),
                    ValidationMessage::Array(all) => all.join("; "),
                };
                (b.code.to_string(), message)
            }
        }
    }
}

impl ApiErrorBody for () {
    fn code_and_message(&self) -> (String, String) {
        (String::new(), String::new())
    }
}

/// The exit kind of an API status.
fn kind_of(status: reqwest::StatusCode) -> ExitKind {
    match status.as_u16() {
        400 => ExitKind::Usage,
        404 => ExitKind::NotFound,
        401..=499 => ExitKind::Refused,
        _ => ExitKind::Unexpected,
    }
}

/// What to do after a refusal with `code`.
fn advice(code: &str) -> &'static str {
    match code {
        "unauthorized" => " (check POSTWIRE_TOKEN / --token-file: make a token with `postwire token create`)",
        "insufficient_scope" => " (the token lacks the scope: make one with `--scope webhooks:write`)",
        "forbidden" => " (the token does not cover this workspace: check --workspace)",
        "not_found" => " (check the id: `postwire webhooks list` shows them)",
        "rate_limited" | "quota_exceeded" => " (wait and try again)",
        _ => "",
    }
}

/// The line and exit code of a failed call.
pub fn classify<E: ApiErrorBody>(doing: &str, base: &str, err: progenitor_client::Error<E>) -> CliError {
    use progenitor_client::Error;
    match err {
        Error::InvalidRequest(m) => CliError::usage(format!("cannot {doing}: {m}")),
        Error::ErrorResponse(answer) => {
            let status = answer.status();
            let (code, message) = answer.into_inner().code_and_message();
            CliError {
                kind: kind_of(status),
                message: format!(
                    "cannot {doing}: {code} ({}): {message}{}",
                    status.as_u16(),
                    advice(&code)
                ),
            }
        }
        Error::CommunicationError(e) | Error::InvalidUpgrade(e) | Error::ResponseBodyError(e)
            if e.is_connect() || e.is_timeout() || e.status().is_none() =>
        {
            let why = if e.is_timeout() {
                "timed out"
            } else if e.is_connect() {
                "cannot connect"
            } else {
                "no answer"
            };
            CliError {
                kind: ExitKind::Unreachable,
                message: format!(
                    "cannot {doing}: the server at {base} is unreachable ({why}): is `postwire serve` running there? Check --server / POSTWIRE_URL"
                ),
            }
        }
        Error::CommunicationError(e) | Error::InvalidUpgrade(e) | Error::ResponseBodyError(e) => CliError {
            kind: ExitKind::Unexpected,
            message: format!("cannot {doing}: {e}"),
        },
        Error::InvalidResponsePayload(bytes, _) => unreadable(doing, base, None, &bytes),
        Error::UnexpectedResponse(response) => {
            let status = response.status();
            unreadable(doing, base, Some(status), &[])
        }
        Error::Custom(m) => CliError {
            kind: ExitKind::Unexpected,
            message: format!("cannot {doing}: {m}"),
        },
    }
}

/// An answer the generated types do not read: the API's `{code, message}` if the body has
/// them (a code newer than this client), else "not a postwire API".
fn unreadable(doing: &str, base: &str, status: Option<reqwest::StatusCode>, body: &[u8]) -> CliError {
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(body)
        && let (Some(code), Some(message)) = (v["code"].as_str(), v["message"].as_str())
    {
        let status = v["statusCode"].as_u64().and_then(|s| u16::try_from(s).ok());
        let kind = status
            .and_then(|s| reqwest::StatusCode::from_u16(s).ok())
            .map_or(ExitKind::Unexpected, kind_of);
        return CliError {
            kind,
            message: format!("cannot {doing}: {code}: {message}{}", advice(code)),
        };
    }
    let status = status.map(|s| format!(" (HTTP {})", s.as_u16())).unwrap_or_default();
    CliError {
        kind: ExitKind::Unexpected,
        message: format!(
            "cannot {doing}: the server at {base} answered something that is not the postwire API{status}: check --server / POSTWIRE_URL"
        ),
    }
}

/// Parses an id or value into a generated parameter type (which checks the document's
/// length and pattern); a bad one is a usage error naming `what`.
pub fn arg<T>(what: &str, value: &str) -> Result<T, CliError>
where
    T: std::str::FromStr,
    T::Err: fmt::Display,
{
    value
        .parse()
        .map_err(|e| CliError::usage(format!("{what} `{value}` is not valid: {e}")))
}

/// Parses a time given as Unix seconds, an RFC 3339 time, or an age (`90m`, `24h`, `7d`).
pub fn parse_time(value: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    let secs = super::edge::parse_since(value)?;
    chrono::DateTime::from_timestamp(secs, 0).ok_or_else(|| format!("`{value}` is out of range"))
}

/// Prints one object: JSON with `--json`, else `text`'s lines.
pub fn print_one<T: Serialize>(json: bool, value: &T, text: impl FnOnce(&T) -> String) {
    if json {
        println!("{}", to_json(value));
    } else {
        print!("{}", text(value));
    }
}

/// One JSON object on one line.
pub fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| format!("{{\"error\":\"cannot write JSON: {e}\"}}"))
}

/// A table for people: a header row and rows, columns padded to their widest cell.
pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names.
    pub fn new(header: &[&str]) -> Self {
        Table {
            rows: vec![header.iter().map(|h| (*h).to_owned()).collect()],
        }
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as text, one line per row.
    pub fn render(&self) -> String {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for row in &self.rows {
            let mut line = String::new();
            for (c, cell) in row.iter().enumerate() {
                if c + 1 == row.len() {
                    line.push_str(cell);
                } else {
                    line.push_str(&format!("{cell:<width$}  ", width = widths[c]));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// `key: value` lines, keys aligned.
pub fn fields(pairs: &[(&str, String)]) -> String {
    let width = pairs.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    pairs.iter().map(|(k, v)| format!("{k:<width$}  {v}\n")).collect()
}

/// A time for people (RFC 3339, seconds).
pub fn time(t: &chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// An optional time for people, `-` when absent.
pub fn maybe_time(t: Option<&chrono::DateTime<chrono::Utc>>) -> String {
    t.map_or_else(|| "-".to_owned(), time)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_url_keeps_the_origin_and_refuses_what_is_not_http() {
        assert_eq!(
            base_url("http://127.0.0.1:8080/some/path").unwrap(),
            "http://127.0.0.1:8080"
        );
        assert_eq!(
            base_url(" https://api.example.com ").unwrap(),
            "https://api.example.com"
        );
        for bad in ["127.0.0.1:8080", "ftp://example.com", "not a url", ""] {
            let e = base_url(bad).unwrap_err();
            assert_eq!(e.kind, ExitKind::Usage, "{bad}");
            assert!(e.message.contains("POSTWIRE_URL"), "{}", e.message);
        }
    }

    #[test]
    fn the_token_comes_from_the_files_first_line_or_the_variable_and_is_never_in_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t");
        std::fs::write(&file, "pw_from_file\nsecond line\n").unwrap();
        let from_file = read_token(Some(&file), Some("pw_from_env".into()), TOKEN_ENV, "--token-file").unwrap();
        assert_eq!(from_file, "pw_from_file");
        assert_eq!(
            read_token(None, Some(" pw_from_env\n".into()), TOKEN_ENV, "--token-file").unwrap(),
            "pw_from_env"
        );
        let none = read_token(None, None, TOKEN_ENV, "--token-file").unwrap_err();
        assert!(none.message.contains(TOKEN_ENV) && none.message.contains("--token-file"));
        let spaced = read_token(None, Some("pw_sec ret".into()), TOKEN_ENV, "--token-file").unwrap_err();
        assert!(!spaced.message.contains("pw_sec"), "{}", spaced.message);
        assert!(read_token(None, Some("  ".into()), TOKEN_ENV, "--token-file").is_err());
        let missing = read_token(Some(&dir.path().join("nope")), None, TOKEN_ENV, "--token-file").unwrap_err();
        assert_eq!(missing.kind, ExitKind::Usage);
    }

    #[test]
    fn statuses_map_to_exit_kinds() {
        for (status, kind) in [
            (400, ExitKind::Usage),
            (401, ExitKind::Refused),
            (403, ExitKind::Refused),
            (404, ExitKind::NotFound),
            (409, ExitKind::Refused),
            (410, ExitKind::Refused),
            (422, ExitKind::Refused),
            (429, ExitKind::Refused),
            (500, ExitKind::Unexpected),
            (503, ExitKind::Unexpected),
        ] {
            assert_eq!(
                kind_of(reqwest::StatusCode::from_u16(status).unwrap()),
                kind,
                "{status}"
            );
        }
        let codes: Vec<u8> = [
            ExitKind::Usage,
            ExitKind::NotFound,
            ExitKind::Refused,
            ExitKind::Unreachable,
            ExitKind::Unexpected,
        ]
        .iter()
        .map(|k| k.code())
        .collect();
        assert_eq!(codes, [2, 3, 4, 5, 6], "distinct, and as EXIT_CODES_HELP says");
    }

    #[test]
    fn an_error_body_the_generated_types_do_not_know_still_passes_its_code_through() {
        // A code newer than this client: read from the raw body, exit kind from its status.
        let body = br#"{"statusCode": 409, "code": "brand_new_code", "message": "Something new."}"#;
        let e = unreadable("do it", "http://h", None, body);
        assert_eq!(e.kind, ExitKind::Refused);
        assert_eq!(e.message, "cannot do it: brand_new_code: Something new.");
        // Not the API at all.
        let e = unreadable("do it", "http://h", Some(reqwest::StatusCode::NOT_FOUND), b"<html>");
        assert_eq!(e.kind, ExitKind::Unexpected);
        assert!(e.message.contains("not the postwire API (HTTP 404)"), "{}", e.message);
    }

    #[test]
    fn tables_pad_every_column_but_the_last() {
        let mut t = Table::new(&["ID", "NAME"]);
        t.row(vec!["wh_1".into(), "a long name".into()]);
        t.row(vec!["wh_22222".into(), "b".into()]);
        assert_eq!(t.render(), "ID        NAME\nwh_1      a long name\nwh_22222  b\n");
    }
}
