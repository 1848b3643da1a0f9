//! Inbox mode (`DELIVERY_MODE = "inbox"`): the `InboxObject` Durable Object, and how the
//! Worker hands it a verified delivery or an admin request.
//!
//! One object (named `inbox`) holds every accepted delivery in its SQLite storage and is
//! the only one that calls the origin, so `ORIGIN_MAX_IN_FLIGHT` and
//! `ORIGIN_MAX_PER_SECOND` hold across all of the Worker's isolates and locations.
//!
//! - **Accept.** The delivery is inserted (`webhook-id` is the primary key: a second copy
//!   inserts nothing and is answered `200 duplicate`), the object's alarm is set, and only
//!   then is it answered `202 accepted`; the runtime's output gate holds the answer until
//!   the write is durable. A storage failure is `503 inbox_unavailable` + `retry-after`.
//!   A copy of a *dead* delivery (the sender's operator resent it) revives it: it goes back
//!   in line as a new acceptance (`202`), with the copy's timestamp and signature.
//! - **Deliver.** The alarm runs the pump: it starts requests for the *due heads* (per
//!   ordering key the open delivery accepted first, when its next attempt is due; every open
//!   delivery without a key), oldest due first, within the caps, records each outcome, and
//!   finally sets the alarm to the next due head or the next expiry. Alarms are durable, so
//!   delivery resumes after a restart or an idle spell by itself. A run lasts at most
//!   [`RUN_BUDGET_MS`], then the next one starts at once. The per-second window is the
//!   object's, kept across runs ([`super::pacing`]).
//! - **What a poll reads.** A delivery waiting behind an earlier open one of its key has
//!   the next attempt time [`WAITING`], and is given a real one (now) when the key's head
//!   finishes; so the index `open_by_due`, whose leading column is that time, holds the
//!   due heads first, and a poll reads the heads it may start (and those in flight), not
//!   the backlog of retrying or waiting deliveries. `GET /_postwire/poll-cost` shows the
//!   plans and rows read.
//! - **Erase.** The body (and signature) of a delivery leaves its row, which becomes
//!   `erased`: an open one is cancelled and its key's next delivery goes; the row keeps
//!   its id for the retention, so copies are still duplicates.
//! - **Outcomes.** `2xx` → `delivered`; anything else → `retrying` with backoff
//!   ([`super::retry`]) or, past the horizon, `dead`. Delivered and dead deliveries
//!   free their key and are kept for `INBOX_RETENTION_SECS` (and de-duplicate until then).
//!   An object reset mid-request leaves the delivery open: it is sent again after the
//!   restart (at most that request twice, with the same `webhook-id`).
//! - **Admin.** `/_postwire/…` requests, already authorized by the Worker
//!   ([`super::admin`]).

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use futures_util::future::{Either, LocalBoxFuture, select};
use futures_util::stream::{FuturesUnordered, StreamExt};
use postwire_core::UnixTime;
use postwire_edge_wire::admin::{
    Attempt, CountsAnswer, DeliveryDetail, DeliveryPage, DeliverySummary, EraseAnswer, PauseAnswer, PollCost,
    PollCostAnswer, ReplayAnswer, StateCounts,
};
use serde_json::Value;
use worker::{
    Delay, DurableObject, Env, Method, Request, Response, ScheduledTime, SqlStorage, SqlStorageValue, State, Stub,
    durable_object,
};

use super::admin::{self, AdminRoute, DeliveryState, EraseTarget};
use super::inbox_origin::{self, OriginAnswer};
use super::ordering::{Subjects, subjects};
use super::pacing::RateWindow;
use super::retry::{Next, after_failure};
use crate::config::{Config, INBOX_BINDING};
use crate::edge::object_request;
use crate::edge::{Answer, log_warnings, misconfigured, now_ms, to_response};
use crate::handoff::{OriginOutcome, build_request};
use crate::reply::{Reply, ReplyCode};
use crate::verify::inspect::{DeliveryHeaders, VerifiedDelivery, read_headers};

/// The name of the one inbox object.
const INBOX_NAME: &str = "inbox";
/// Internal header: the delivery's ordering key, when it has one.
const ORDERING_KEY_HEADER: &str = "x-postwire-ordering-key";
/// Internal headers: the post and account the delivery is about, percent-encoded.
const POST_HEADER: &str = "x-postwire-post";
const ACCOUNT_HEADER: &str = "x-postwire-account";
/// The next attempt time of a delivery waiting behind an earlier open one of its key: past
/// every real time (the largest integer JavaScript holds exactly), so never due.
pub(crate) const WAITING: i64 = 9_007_199_254_740_991;
/// The URL of the internal requests (the object reads only the path).
const INBOX_URL: &str = "https://inbox.internal";
/// The longest one alarm run starts requests; then it lets the next run take over.
pub(crate) const RUN_BUDGET_MS: f64 = 60_000.0;
/// How often a run looks for newly due deliveries while requests are in flight.
const POLL_MS: u64 = 20;
/// When a run failed (storage), the next one starts this much later.
const RETRY_RUN_MS: f64 = 10_000.0;
/// A run first sets the alarm this far ahead, so that an object reset mid-run (its requests
/// lost with it) runs again by itself: a past alarm fires as soon as the object is back.
const SAFETY_ALARM_MS: f64 = 10_000.0;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS deliveries (
  id TEXT PRIMARY KEY,
  seq INTEGER NOT NULL UNIQUE,
  ordering_key TEXT,
  state TEXT NOT NULL,
  open INTEGER NOT NULL,
  accepted_ms INTEGER NOT NULL,
  next_attempt_ms INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_status INTEGER,
  last_error TEXT,
  finished_ms INTEGER,
  timestamp_raw TEXT NOT NULL,
  signature TEXT NOT NULL,
  content_type TEXT,
  body BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS open_by_due ON deliveries(next_attempt_ms, seq) WHERE open = 1;
DROP INDEX IF EXISTS open_by_seq;
CREATE INDEX IF NOT EXISTS open_by_key ON deliveries(ordering_key, seq) WHERE open = 1;
CREATE INDEX IF NOT EXISTS by_state ON deliveries(state, seq);
CREATE INDEX IF NOT EXISTS finished ON deliveries(finished_ms) WHERE open = 0;
CREATE TABLE IF NOT EXISTS attempts (
  delivery_id TEXT NOT NULL,
  n INTEGER NOT NULL,
  started_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  status INTEGER,
  answer TEXT NOT NULL,
  PRIMARY KEY (delivery_id, n)
);
CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
";

/// The columns a delivery gets after `ALTER TABLE` (version 2 of the schema): the post and
/// account its event is about, which erasure by subject matches.
const SUBJECT_COLUMNS: [&str; 2] = [
    "ALTER TABLE deliveries ADD COLUMN post_id TEXT",
    "ALTER TABLE deliveries ADD COLUMN account_id TEXT",
];
/// The column of version 3: a provider route's headers for the origin (`PROVIDER_ROUTES`),
/// a JSON array of `[name, value]`; `NULL` for a Standard Webhooks delivery.
const FORWARDED_COLUMN: &str = "ALTER TABLE deliveries ADD COLUMN forwarded TEXT";
/// The schema version the `settings` row `schema` holds once [`SUBJECT_COLUMNS`] and
/// [`FORWARDED_COLUMN`] exist and the subjects are filled.
const SCHEMA_VERSION: &str = "3";

/// Open deliveries that are first of their key (or have none), due at `?1`, oldest due
/// first: their ids only (the rows in flight come back too). Read through `open_by_due`
/// from its start, so a poll stops after the rows it may start.
const DUE_HEADS: &str = "SELECT id, attempts, accepted_ms
FROM deliveries AS d INDEXED BY open_by_due
WHERE open = 1 AND next_attempt_ms <= ?1
  AND (ordering_key IS NULL
       OR seq = (SELECT MIN(seq) FROM deliveries WHERE open = 1 AND ordering_key = d.ordering_key))
ORDER BY next_attempt_ms, seq LIMIT ";

/// The earliest next attempt of a head (`?1` is [`WAITING`]): the first head of
/// `open_by_due`.
const NEXT_HEAD_DUE: &str = "SELECT next_attempt_ms FROM deliveries AS d INDEXED BY open_by_due
WHERE open = 1 AND next_attempt_ms < ?1
  AND (ordering_key IS NULL
       OR seq = (SELECT MIN(seq) FROM deliveries WHERE open = 1 AND ordering_key = d.ordering_key))
ORDER BY next_attempt_ms, seq LIMIT 1";

/// Gives key ?1's head a real next attempt time (?2) if it was waiting: after the delivery
/// before it finished or was erased.
const PROMOTE_HEAD: &str = "UPDATE deliveries SET next_attempt_ms = ?2
WHERE id = (SELECT id FROM deliveries WHERE open = 1 AND ordering_key = ?1 ORDER BY seq LIMIT 1)
  AND next_attempt_ms > ?2";

/// The page size of the one-time filling of [`SUBJECT_COLUMNS`].
const BACKFILL_PAGE: i64 = 200;

const SUMMARY_COLUMNS: &str = "id, seq, state, ordering_key, accepted_ms, attempts, next_attempt_ms, last_status, \
                               last_error, finished_ms, length(body)";

/// Sends a verified delivery to the inbox: its answer (`202`, `200 duplicate`), or `503`.
pub(crate) async fn accept_through_inbox(
    env: &Env,
    delivery: &VerifiedDelivery,
    ordering_key: Option<&str>,
    received_ms: f64,
) -> Answer {
    let sent = async {
        let stub = env
            .durable_object(INBOX_BINDING)?
            .id_from_name(INBOX_NAME)?
            .get_stub()?;
        let mut req = object_request(delivery, received_ms)?;
        if let Some(key) = ordering_key {
            req.headers_mut()?.set(ORDERING_KEY_HEADER, key)?;
        }
        // Read here, in whichever isolate took the request, not in the one object.
        let about = subjects(&delivery.body);
        for (name, value) in [(POST_HEADER, &about.post), (ACCOUNT_HEADER, &about.account)] {
            if let Some(v) = value {
                let encoded = percent_encoding::utf8_percent_encode(v, percent_encoding::NON_ALPHANUMERIC);
                req.headers_mut()?.set(name, &encoded.to_string())?;
            }
        }
        stub.fetch_with_request(req).await
    };
    match sent.await {
        Ok(response) => Answer::Response(response),
        Err(e) => unavailable(format!(
            "webhook-id {}: the inbox could not be reached: {e}",
            delivery.headers.id
        ))
        .into(),
    }
}

/// Passes an authorized admin request (`method`, `path` and query) to the inbox.
pub(crate) async fn admin_through_inbox(env: &Env, method: Method, path_and_query: &str) -> Answer {
    let sent = async {
        let stub = env
            .durable_object(INBOX_BINDING)?
            .id_from_name(INBOX_NAME)?
            .get_stub()?;
        let mut init = worker::RequestInit::new();
        init.with_method(method);
        stub.fetch_with_request(Request::new_with_init(&format!("{INBOX_URL}{path_and_query}"), &init)?)
            .await
    };
    match sent.await {
        Ok(response) => Answer::Response(response),
        Err(e) => unavailable(format!("admin: the inbox could not be reached: {e}")).into(),
    }
}

fn unavailable(detail: String) -> Reply {
    Reply::new(
        ReplyCode::InboxUnavailable,
        "the inbox could not store or read deliveries; nothing was accepted, retry later",
    )
    .with_header("retry-after", "60")
    .with_warning(detail)
}

/// The one inbox: stores, paces, orders and delivers; answers the admin API.
#[durable_object(alarm)]
pub struct InboxObject {
    state: State,
    env: Env,
    /// The schema was created in this instance.
    ready: Cell<bool>,
    /// An alarm run is starting requests now (and will look for new ones).
    pumping: Cell<bool>,
    /// The alarm time this instance last set, if known to be pending.
    alarm_at: Cell<Option<f64>>,
    /// Whether delivery is paused, once read.
    paused: Cell<Option<bool>>,
    /// When this instance was created (ms): what came before is unknown to it.
    created_ms: f64,
    /// The starts of the last `ORIGIN_MAX_PER_SECOND` window, across runs; `None` until
    /// the first run of this instance.
    window: RefCell<Option<RateWindow>>,
}

impl DurableObject for InboxObject {
    fn new(state: State, env: Env) -> Self {
        InboxObject {
            state,
            env,
            ready: Cell::new(false),
            pumping: Cell::new(false),
            alarm_at: Cell::new(None),
            paused: Cell::new(None),
            created_ms: now_ms(),
            window: RefCell::new(None),
        }
    }

    async fn fetch(&self, req: Request) -> worker::Result<Response> {
        let url = req.url()?;
        if url.path().starts_with(admin::ADMIN_PREFIX) {
            let method = req.inner().method();
            return match admin::route(&method, url.path(), url.query()) {
                Ok(route) => self.admin(route).await,
                Err(reply) => to_response(&reply),
            };
        }
        let reply = self.accept(req).await;
        log_warnings(&reply);
        to_response(&reply)
    }

    async fn alarm(&self) -> worker::Result<Response> {
        self.alarm_at.set(None);
        let config = match self.config() {
            Ok(c) => c,
            Err(reply) => {
                log_warnings(&reply);
                self.set_alarm_at(now_ms() + RETRY_RUN_MS).await?;
                return Response::empty();
            }
        };
        self.set_alarm_at(now_ms() + SAFETY_ALARM_MS).await?;
        self.pumping.set(true);
        // Taken for the run and put back whatever its outcome, so the next run counts the
        // starts of this one.
        let mut window = self
            .window
            .take()
            .unwrap_or_else(|| RateWindow::after_unknown(config.inbox.max_per_second, self.created_ms));
        window.set_cap(config.inbox.max_per_second);
        let run = self.pump(&config, &mut window).await;
        self.window.replace(Some(window));
        self.pumping.set(false);
        let next = match run {
            Ok(true) => Ok(Some(now_ms())),
            Ok(false) => self.next_wake(&config),
            Err(e) => Err(e),
        };
        match next {
            Ok(Some(at)) => self.set_alarm_at(at).await?,
            Ok(None) => {
                // Nothing left: drop the safety alarm.
                self.alarm_at.set(None);
                self.state.storage().delete_alarm().await?;
            }
            Err(e) => {
                worker::console_warn!("postwire-worker: inbox run failed: {e}");
                self.set_alarm_at(now_ms() + RETRY_RUN_MS).await?;
            }
        }
        Response::empty()
    }
}

/// A due delivery, as the pump reads it.
struct Due {
    id: String,
    attempt: i64,
    accepted_ms: f64,
    delivery: VerifiedDelivery,
}

/// One finished request.
struct Finished {
    id: String,
    attempt: i64,
    accepted_ms: f64,
    started_ms: f64,
    answer: OriginAnswer,
}

impl InboxObject {
    fn config(&self) -> Result<Config, Reply> {
        crate::edge::read_config(&self.env).map_err(|e| misconfigured(e.to_string()))
    }

    /// The SQL storage, with the schema in place.
    fn sql(&self) -> worker::Result<SqlStorage> {
        let sql = self.state.storage().sql();
        if !self.ready.get() {
            sql.exec(SCHEMA, None)?;
            migrate(&sql)?;
            self.ready.set(true);
        }
        Ok(sql)
    }

    fn is_paused(&self, sql: &SqlStorage) -> worker::Result<bool> {
        if let Some(p) = self.paused.get() {
            return Ok(p);
        }
        let rows = rows(sql.exec("SELECT value FROM settings WHERE name = 'paused'", None)?)?;
        let paused = rows.first().and_then(|r| text(r, 0)).as_deref() == Some("true");
        self.paused.set(Some(paused));
        Ok(paused)
    }

    async fn set_alarm_at(&self, at_ms: f64) -> worker::Result<()> {
        self.alarm_at.set(Some(at_ms));
        let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(at_ms));
        self.state.storage().set_alarm(ScheduledTime::new(date)).await
    }

    /// Makes sure a run comes now: unless one is running (it picks new deliveries up) or an
    /// alarm that is already due is set.
    async fn wake(&self) -> worker::Result<()> {
        let now = now_ms();
        if self.pumping.get() || self.alarm_at.get().is_some_and(|at| at <= now) {
            return Ok(());
        }
        self.set_alarm_at(now).await
    }

    async fn accept(&self, mut req: Request) -> Reply {
        let headers: Vec<(String, String)> = req.headers().entries().collect();
        let mut delivery_headers = match read_headers(&headers) {
            Ok(h) => h,
            Err(reply) => return reply,
        };
        // A provider route's delivery: its headers for the origin, stored with it.
        delivery_headers.forwarded = crate::providers::forwarded_from(&headers).unwrap_or_default();
        let header = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let key = header(ORDERING_KEY_HEADER);
        let decoded = |name: &str| {
            header(name).and_then(|v| {
                percent_encoding::percent_decode_str(&v)
                    .decode_utf8()
                    .ok()
                    .map(|d| d.into_owned())
            })
        };
        let about = Subjects {
            post: decoded(POST_HEADER),
            account: decoded(ACCOUNT_HEADER),
        };
        let body = match req.bytes().await {
            Ok(b) => b,
            Err(_) => {
                return Reply::new(
                    ReplyCode::InvalidRequest,
                    "the request body could not be read to its end",
                );
            }
        };
        let id = delivery_headers.id.clone();
        let stored = match self.insert(&delivery_headers, key, &about, body) {
            Err(e) => return unavailable(format!("webhook-id {id}: storing it failed: {e}")),
            Ok(Stored::Duplicate) => {
                return Reply::new(
                    ReplyCode::Duplicate,
                    "this webhook-id was accepted before and is pending, retrying, delivered or erased; not stored again",
                )
                .with_header(crate::reply::DUPLICATE_HEADER, "true");
            }
            Ok(stored) => stored,
        };
        if let Err(e) = self.wake().await {
            // Without its alarm the delivery could wait for the next one: take it back, so
            // the sender retries (a revived one is dead again, as before this copy).
            let undone = self.sql().and_then(|sql| match stored {
                Stored::Revived => sql.exec(
                    "UPDATE deliveries SET state = 'dead', open = 0, finished_ms = ? WHERE id = ?",
                    vec![(now_ms().round() as i64).into(), id.as_str().into()],
                ),
                _ => sql.exec("DELETE FROM deliveries WHERE id = ?", vec![id.as_str().into()]),
            });
            return unavailable(format!(
                "webhook-id {id}: setting the alarm failed: {e}; taken back: {}",
                undone.is_ok()
            ));
        }
        match stored {
            Stored::Revived => Reply::new(
                ReplyCode::Accepted,
                "this webhook-id was dead at the edge; this copy puts it back in line, it will be delivered to the origin",
            ),
            _ => Reply::new(
                ReplyCode::Accepted,
                "verified and stored at the edge; it will be delivered to the origin",
            ),
        }
    }

    /// Inserts a delivery, or revives it when its id is there as `dead`: behind everything
    /// accepted so far, waiting behind an open delivery of its key if there is one.
    fn insert(
        &self,
        h: &DeliveryHeaders,
        key: Option<String>,
        about: &Subjects,
        body: Vec<u8>,
    ) -> worker::Result<Stored> {
        let now = now_ms().round() as i64;
        let cursor = self.sql()?.exec(
            "INSERT INTO deliveries (id, seq, ordering_key, state, open, accepted_ms, next_attempt_ms, \
             timestamp_raw, signature, content_type, body, post_id, account_id, forwarded)
             VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM deliveries), ?2, 'pending', 1, ?3,
                     CASE WHEN ?2 IS NOT NULL AND EXISTS
                            (SELECT 1 FROM deliveries WHERE open = 1 AND ordering_key = ?2)
                          THEN ?10 ELSE ?3 END,
                     ?4, ?5, ?6, ?7, ?8, ?9, ?11)
             ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, state = 'pending', open = 1,
               accepted_ms = excluded.accepted_ms, next_attempt_ms = excluded.next_attempt_ms,
               finished_ms = NULL, timestamp_raw = excluded.timestamp_raw, signature = excluded.signature,
               content_type = excluded.content_type, body = excluded.body, forwarded = excluded.forwarded
             WHERE deliveries.state = 'dead'
             RETURNING attempts",
            vec![
                h.id.as_str().into(),
                key.into(),
                now.into(),
                h.timestamp_raw.as_str().into(),
                h.signature.as_str().into(),
                h.content_type.clone().into(),
                SqlStorageValue::Blob(body),
                about.post.clone().into(),
                about.account.clone().into(),
                WAITING.into(),
                forwarded_json(&h.forwarded).into(),
            ],
        )?;
        Ok(match rows(cursor)?.first().and_then(|r| int(r, 0)) {
            None => Stored::Duplicate,
            Some(0) => Stored::New,
            Some(_) => Stored::Revived,
        })
    }

    /// One alarm run: starts requests within the caps until nothing is due (or paused, or
    /// the budget is spent) and every request has finished. `true` when it stopped for the
    /// budget and the next run should start at once.
    async fn pump(&self, config: &Config, window: &mut RateWindow) -> worker::Result<bool> {
        let sql = self.sql()?;
        let started = now_ms();
        self.forget_expired(&sql, config, started)?;
        let max = config.inbox.max_in_flight as usize;
        let mut flying: FuturesUnordered<LocalBoxFuture<'static, Finished>> = FuturesUnordered::new();
        let mut flying_ids: HashSet<String> = HashSet::new();
        // Listen mode: the listener stands in for the origin (the Worker refuses deliveries
        // while LISTEN_TOKEN is set without its binding, so none is accepted then).
        let listen = crate::listen::listen_stub(&self.env, config)
            .ok()
            .flatten()
            .map(Rc::new);
        loop {
            let now = now_ms();
            let out_of_budget = now - started > RUN_BUDGET_MS;
            let stop = out_of_budget || self.is_paused(&sql)?;
            if !stop {
                let room = max.saturating_sub(flying.len()).min(window.room(now));
                if room > 0 {
                    let mut due = self.due_heads(&sql, now, room + flying.len())?;
                    due.retain(|d| !flying_ids.contains(&d.0));
                    let now = if due.is_empty() {
                        now
                    } else {
                        // The output gate holds a request until every earlier write is
                        // durable: wait for that first, so the request leaves when counted
                        // (the per-second cap is measured where the origin sees it).
                        self.state.storage().sync().await?;
                        now_ms()
                    };
                    let room = room.min(window.room(now));
                    for (id, attempt, accepted_ms) in due.into_iter().take(room) {
                        let Some(delivery) = self.load(&sql, &id)? else {
                            continue;
                        };
                        window.record(now);
                        flying_ids.insert(id.clone());
                        let due = Due {
                            id,
                            attempt,
                            accepted_ms,
                            delivery,
                        };
                        flying.push(attempt_request(config.clone(), due, now, listen.clone()));
                    }
                }
            }
            let rate_wait = window.next_room_at(now);
            if flying.is_empty() {
                if stop {
                    return Ok(out_of_budget);
                }
                match rate_wait {
                    // Held back by the rate only: wait for room, then look again.
                    Some(at) => Delay::from(Duration::from_millis((at - now).max(1.0) as u64)).await,
                    None => return Ok(false),
                }
                continue;
            }
            let done = if stop || flying.len() >= max {
                flying.next().await
            } else {
                let tick = rate_wait.map_or(POLL_MS, |at| (at - now).max(1.0) as u64);
                let next = flying.next();
                let delay = Delay::from(Duration::from_millis(tick));
                match select(next, delay).await {
                    Either::Left((done, _)) => done,
                    Either::Right(((), _)) => None,
                }
            };
            if let Some(finished) = done {
                flying_ids.remove(&finished.id);
                self.record(&sql, config, finished)?;
            }
        }
    }

    /// `(id, next attempt number, accepted at)` of the due heads, in acceptance order.
    fn due_heads(&self, sql: &SqlStorage, now: f64, limit: usize) -> worker::Result<Vec<(String, i64, f64)>> {
        let query = format!("{DUE_HEADS}{limit}");
        Ok(rows(sql.exec(&query, vec![(now.round() as i64).into()])?)?
            .iter()
            .filter_map(|r| Some((text(r, 0)?, int(r, 1)? + 1, int(r, 2)? as f64)))
            .collect())
    }

    /// The stored request of delivery `id`.
    fn load(&self, sql: &SqlStorage, id: &str) -> worker::Result<Option<VerifiedDelivery>> {
        let found = rows(sql.exec(
            "SELECT timestamp_raw, signature, content_type, body, forwarded FROM deliveries WHERE id = ?",
            vec![id.into()],
        )?)?;
        let Some(r) = found.first() else {
            return Ok(None);
        };
        let (Some(timestamp_raw), Some(signature), Some(body)) = (text(r, 0), text(r, 1), blob(r, 3)) else {
            return Ok(None);
        };
        let timestamp = timestamp_raw
            .parse::<i64>()
            .map(UnixTime::from_secs)
            .unwrap_or(UnixTime::from_secs(0));
        Ok(Some(VerifiedDelivery {
            headers: DeliveryHeaders {
                id: id.to_owned(),
                timestamp_raw,
                timestamp,
                signature,
                content_type: text(r, 2),
                forwarded: text(r, 4).map(|json| forwarded_from_json(&json)).unwrap_or_default(),
            },
            body,
        }))
    }

    /// Writes an attempt's outcome: delivered, retrying at its next time, or dead; a
    /// delivery that finished lets the next of its key go. A delivery erased while its
    /// request was out stays erased (only the attempt is recorded).
    fn record(&self, sql: &SqlStorage, config: &Config, f: Finished) -> worker::Result<()> {
        let now = now_ms();
        let (outcome, status, error) = describe(&f.answer.outcome, config.forward_timeout_ms);
        let (state, next_ms) = match f.answer.outcome {
            OriginOutcome::Accepted { .. } => (DeliveryState::Delivered, None),
            _ => match after_failure(
                u32::try_from(f.attempt).unwrap_or(u32::MAX),
                now,
                f.accepted_ms,
                config.inbox.retry_horizon_secs,
                f.answer.retry_after_secs,
                js_sys::Math::random(),
            ) {
                Next::RetryAt(at) => (DeliveryState::Retrying, Some(at)),
                Next::Dead => (DeliveryState::Dead, None),
            },
        };
        let now_i = now.round() as i64;
        sql.exec(
            "INSERT OR REPLACE INTO attempts (delivery_id, n, started_ms, finished_ms, outcome, status, answer) \
             VALUES (?, ?, ?, ?, ?, ?, ?)",
            vec![
                f.id.as_str().into(),
                f.attempt.into(),
                (f.started_ms.round() as i64).into(),
                now_i.into(),
                outcome.into(),
                status.map(i64::from).into(),
                f.answer.excerpt.into(),
            ],
        )?;
        let open = state.is_open();
        let updated = rows(sql.exec(
            "UPDATE deliveries SET state = ?, open = ?, attempts = ?, last_status = ?, last_error = ?, \
             next_attempt_ms = ?, finished_ms = ? WHERE id = ? AND open = 1 RETURNING ordering_key",
            vec![
                state.as_str().into(),
                i64::from(open).into(),
                f.attempt.into(),
                status.map(i64::from).into(),
                error.into(),
                (next_ms.unwrap_or(now).round() as i64).into(),
                (if open { None } else { Some(now_i) }).into(),
                f.id.as_str().into(),
            ],
        )?)?;
        if !open && let Some(key) = updated.first().and_then(|r| text(r, 0)) {
            sql.exec(PROMOTE_HEAD, vec![key.into(), now_i.into()])?;
        }
        Ok(())
    }

    /// Deletes deliveries finished longer than the retention ago, with their attempts.
    fn forget_expired(&self, sql: &SqlStorage, config: &Config, now: f64) -> worker::Result<()> {
        let cutoff = (now - config.inbox.retention_secs as f64 * 1000.0).round() as i64;
        sql.exec(
            "DELETE FROM attempts WHERE delivery_id IN \
             (SELECT id FROM deliveries WHERE open = 0 AND finished_ms < ?)",
            vec![cutoff.into()],
        )?;
        sql.exec(
            "DELETE FROM deliveries WHERE open = 0 AND finished_ms < ?",
            vec![cutoff.into()],
        )?;
        Ok(())
    }

    /// When the next run is needed: the next due head (unless paused) or the next expiry.
    fn next_wake(&self, config: &Config) -> worker::Result<Option<f64>> {
        let sql = self.sql()?;
        let head = if self.is_paused(&sql)? {
            None
        } else {
            rows(sql.exec(NEXT_HEAD_DUE, vec![WAITING.into()])?)?
                .first()
                .and_then(|r| int(r, 0))
                .map(|t| t as f64)
        };
        let expiry = first_int(&sql, "SELECT MIN(finished_ms) FROM deliveries WHERE open = 0")?
            .map(|t| t as f64 + config.inbox.retention_secs as f64 * 1000.0 + 1.0);
        Ok(match (head, expiry) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
    }

    async fn admin(&self, route: AdminRoute) -> worker::Result<Response> {
        match self.admin_answer(route).await {
            Ok(Ok((status, body))) => {
                let mut response = Response::from_json(&body)?.with_status(status);
                response.headers_mut().set("cache-control", "no-store")?;
                Ok(response)
            }
            Ok(Err(reply)) => to_response(&reply),
            Err(e) => {
                let reply = unavailable(format!("admin: {e}"));
                log_warnings(&reply);
                to_response(&reply)
            }
        }
    }

    async fn admin_answer(&self, route: AdminRoute) -> worker::Result<Result<(u16, Value), Reply>> {
        let sql = self.sql()?;
        let now = now_ms().round() as i64;
        Ok(Ok(match route {
            AdminRoute::Counts => {
                let mut counts = StateCounts::default();
                for r in rows(sql.exec("SELECT state, COUNT(*) FROM deliveries GROUP BY state", None)?)? {
                    if let (Some(state), Some(n)) = (text(&r, 0).as_deref().and_then(DeliveryState::parse), int(&r, 1))
                    {
                        counts.set(state, u64::try_from(n).unwrap_or(0));
                    }
                }
                let paused = self.is_paused(&sql)?;
                (200, answer(&CountsAnswer { counts, paused }))
            }
            AdminRoute::List { state, after, limit } => {
                let query = format!(
                    "SELECT {SUMMARY_COLUMNS} FROM deliveries WHERE state = ? AND seq > ? ORDER BY seq LIMIT {limit}"
                );
                let found = rows(sql.exec(&query, vec![state.as_str().into(), after.unwrap_or(0).into()])?)?;
                let next_cursor = if found.len() == limit as usize {
                    found.last().and_then(|r| int(r, 1)).map(admin::cursor_after)
                } else {
                    None
                };
                let deliveries = found.iter().filter_map(|r| summary(r)).collect();
                (
                    200,
                    answer(&DeliveryPage {
                        deliveries,
                        next_cursor,
                    }),
                )
            }
            AdminRoute::Show { id } => {
                let query = format!("SELECT {SUMMARY_COLUMNS} FROM deliveries WHERE id = ?");
                let found = rows(sql.exec(&query, vec![id.as_str().into()])?)?;
                let Some(summary) = found.first().and_then(|r| summary(r)) else {
                    return Ok(Err(no_delivery()));
                };
                let attempt_log = rows(sql.exec(
                    "SELECT n, started_ms, finished_ms, outcome, status, answer FROM attempts \
                     WHERE delivery_id = ? ORDER BY n",
                    vec![id.as_str().into()],
                )?)?
                .iter()
                .map(|a| Attempt {
                    n: int(a, 0).and_then(|n| u32::try_from(n).ok()).unwrap_or(0),
                    started_at_ms: int(a, 1).unwrap_or(0),
                    finished_at_ms: int(a, 2),
                    outcome: text(a, 3).unwrap_or_default(),
                    status: int(a, 4).and_then(|n| u16::try_from(n).ok()),
                    answer: text(a, 5),
                })
                .collect();
                (200, answer(&DeliveryDetail { summary, attempt_log }))
            }
            AdminRoute::Replay { id } => {
                let found = rows(sql.exec(
                    "SELECT open, state = 'erased' FROM deliveries WHERE id = ?",
                    vec![id.as_str().into()],
                )?)?;
                if found.first().and_then(|r| int(r, 1)) == Some(1) {
                    return Ok(Err(Reply::new(
                        ReplyCode::NotFound,
                        "this delivery's body was erased; there is nothing to replay",
                    )));
                }
                match found.first().and_then(|r| int(r, 0)) {
                    None => return Ok(Err(no_delivery())),
                    Some(1) => {
                        return Ok(Err(Reply::new(
                            ReplyCode::DeliveryInProgress,
                            "this delivery is still pending or retrying; only delivered or dead ones are replayed",
                        )));
                    }
                    Some(_) => {}
                }
                let max = first_int(&sql, "SELECT MAX(seq) FROM deliveries")?.unwrap_or(0);
                let replayed = reopen(&sql, "id = ?", vec![id.as_str().into()], max, now)?;
                self.wake().await?;
                (
                    200,
                    answer(&ReplayAnswer {
                        replayed: replayed as u64,
                    }),
                )
            }
            AdminRoute::ReplayDead { since_ms } => {
                let max = first_int(&sql, "SELECT MAX(seq) FROM deliveries")?.unwrap_or(0);
                let replayed = reopen(
                    &sql,
                    "state = 'dead' AND finished_ms >= ?",
                    vec![since_ms.into()],
                    max,
                    now,
                )?;
                if replayed > 0 {
                    self.wake().await?;
                }
                (
                    200,
                    answer(&ReplayAnswer {
                        replayed: replayed as u64,
                    }),
                )
            }
            AdminRoute::Pause => {
                sql.exec(
                    "INSERT OR REPLACE INTO settings (name, value) VALUES ('paused', 'true')",
                    None,
                )?;
                self.paused.set(Some(true));
                (200, answer(&PauseAnswer { paused: true }))
            }
            AdminRoute::Resume => {
                sql.exec("DELETE FROM settings WHERE name = 'paused'", None)?;
                self.paused.set(Some(false));
                // Unconditionally: a run that is ending may have scheduled nothing while paused.
                self.set_alarm_at(now_ms()).await?;
                (200, answer(&PauseAnswer { paused: false }))
            }
            AdminRoute::Erase { what } => {
                let (column, value) = match &what {
                    EraseTarget::Id(id) => ("id", id),
                    EraseTarget::Post(post) => ("post_id", post),
                    EraseTarget::Account(account) => ("account_id", account),
                };
                if let EraseTarget::Id(id) = &what {
                    let found = rows(sql.exec("SELECT 1 FROM deliveries WHERE id = ?", vec![id.as_str().into()])?)?;
                    if found.is_empty() {
                        return Ok(Err(no_delivery()));
                    }
                }
                let erasure = erase(&sql, column, value, now)?;
                if erasure.cancelled > 0 {
                    // The next delivery of a cancelled one's key may be due now.
                    self.wake().await?;
                }
                let erased = EraseAnswer {
                    erased: erasure.erased as u64,
                    cancelled: erasure.cancelled as u64,
                };
                (200, answer(&erased))
            }
            AdminRoute::PollCost { repeat } => {
                let page = self.config().map_or(10, |c| c.inbox.max_in_flight);
                let due = format!("{DUE_HEADS}{page}");
                let polls: [(&str, &str, Vec<SqlStorageValue>); 2] = [
                    ("due_heads", due.as_str(), vec![now.into()]),
                    ("next_head_due", NEXT_HEAD_DUE, vec![WAITING.into()]),
                ];
                let mut out = Vec::new();
                for (name, query, bindings) in polls {
                    let plan: Vec<String> = rows(sql.exec(&format!("EXPLAIN QUERY PLAN {query}"), bindings.clone())?)?
                        .iter()
                        .filter_map(|r| text(r, 3))
                        .collect();
                    let mut rows_read = 0;
                    let mut returned = 0;
                    for _ in 0..repeat {
                        let cursor = sql.exec(query, bindings.clone())?;
                        returned = cursor.raw().collect::<worker::Result<Vec<_>>>()?.len();
                        rows_read = cursor.rows_read();
                    }
                    out.push(PollCost {
                        name: name.to_owned(),
                        plan,
                        rows_read: rows_read as u64,
                        rows_returned: returned as u64,
                    });
                }
                (200, answer(&PollCostAnswer { repeat, polls: out }))
            }
        }))
    }
}

/// One request to the origin, owning everything it needs.
fn attempt_request(
    config: Config,
    due: Due,
    started_ms: f64,
    listen: Option<Rc<Stub>>,
) -> LocalBoxFuture<'static, Finished> {
    Box::pin(async move {
        let request = build_request(
            config.origin_url.as_str(),
            config.forward_timeout_ms,
            config.origin_secret.as_ref(),
            &due.delivery,
        );
        let answer = inbox_origin::send(&request, listen.as_deref()).await;
        Finished {
            id: due.id,
            attempt: due.attempt,
            accepted_ms: due.accepted_ms,
            started_ms,
            answer,
        }
    }) as Pin<Box<_>>
}

/// What one erasure did.
struct Erasure {
    /// Deliveries whose body was erased.
    erased: usize,
    /// Of those, the open ones (cancelled: never sent again).
    cancelled: usize,
}

/// Erases the body and signature of every delivery whose `column` is `value` (and is not
/// erased yet): each becomes `erased`, closed, kept from `now` for the retention; the next
/// delivery of a cancelled one's key gets its turn. A request already out for one of them
/// finishes, and its outcome is recorded as an attempt only.
fn erase(sql: &SqlStorage, column: &str, value: &str, now: i64) -> worker::Result<Erasure> {
    let matching = rows(sql.exec(
        &format!("SELECT open, ordering_key FROM deliveries WHERE {column} = ? AND state != 'erased'"),
        vec![value.into()],
    )?)?;
    sql.exec(
        &format!(
            "UPDATE deliveries SET body = X'', signature = '', state = 'erased', open = 0, finished_ms = ?2 \
             WHERE {column} = ?1 AND state != 'erased'"
        ),
        vec![value.into(), now.into()],
    )?;
    let open: Vec<&Vec<SqlStorageValue>> = matching.iter().filter(|r| int(r, 0) == Some(1)).collect();
    let keys: HashSet<String> = open.iter().filter_map(|r| text(r, 1)).collect();
    for key in keys {
        sql.exec(PROMOTE_HEAD, vec![key.into(), now.into()])?;
    }
    Ok(Erasure {
        erased: matching.len(),
        cancelled: open.len(),
    })
}

/// How an accepted copy was stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stored {
    /// A new delivery.
    New,
    /// A dead delivery, back in line.
    Revived,
    /// Nothing: its id is pending, retrying, delivered or erased.
    Duplicate,
}

/// A provider delivery's headers for the origin as stored: a JSON array of `[name, value]`;
/// `None` (SQL `NULL`) for a Standard Webhooks delivery.
fn forwarded_json(forwarded: &[(&'static str, String)]) -> Option<String> {
    if forwarded.is_empty() {
        return None;
    }
    serde_json::to_string(forwarded).ok()
}

/// The stored headers read back, by [`crate::providers::forwarded_from`]'s rule (only the
/// names it knows; anything else in the column is ignored).
fn forwarded_from_json(json: &str) -> Vec<(&'static str, String)> {
    let pairs: Vec<(String, String)> = serde_json::from_str(json).unwrap_or_default();
    crate::providers::forwarded_from(&pairs).unwrap_or_default()
}

/// Brings a schema of version 1 (without [`SUBJECT_COLUMNS`]) or 2 (without
/// [`FORWARDED_COLUMN`]) to [`SCHEMA_VERSION`]: adds the columns and, from version 1, fills
/// the subjects from the stored bodies, once. Each step can run again after a failure
/// half-way.
fn migrate(sql: &SqlStorage) -> worker::Result<()> {
    let version = rows(sql.exec("SELECT value FROM settings WHERE name = 'schema'", None)?)?
        .first()
        .and_then(|r| text(r, 0));
    if version.as_deref() == Some(SCHEMA_VERSION) {
        return Ok(());
    }
    for statement in SUBJECT_COLUMNS.into_iter().chain([FORWARDED_COLUMN]) {
        if let Err(e) = sql.exec(statement, None)
            && !e.to_string().contains("duplicate column")
        {
            return Err(e);
        }
    }
    // Version 2 had its subjects filled already.
    let mut after = if version.as_deref() == Some("2") { i64::MAX } else { 0 };
    loop {
        let page = rows(sql.exec(
            "SELECT seq, body FROM deliveries WHERE seq > ? AND post_id IS NULL AND account_id IS NULL \
             AND length(body) > 0 ORDER BY seq LIMIT ?",
            vec![after.into(), BACKFILL_PAGE.into()],
        )?)?;
        let Some(last) = page.last().and_then(|r| int(r, 0)) else {
            break;
        };
        for r in &page {
            let about = blob(r, 1).map(|b| subjects(&b)).unwrap_or_default();
            if about.post.is_some() || about.account.is_some() {
                sql.exec(
                    "UPDATE deliveries SET post_id = ?, account_id = ? WHERE seq = ?",
                    vec![about.post.into(), about.account.into(), int(r, 0).into()],
                )?;
            }
        }
        after = last;
    }
    sql.exec(
        "INSERT OR REPLACE INTO settings (name, value) VALUES ('schema', ?)",
        vec![SCHEMA_VERSION.into()],
    )?;
    Ok(())
}

/// Puts finished deliveries matching `condition` back in line, behind everything accepted
/// so far, keeping their relative order; their horizon starts again now.
fn reopen(
    sql: &SqlStorage,
    condition: &str,
    mut bindings: Vec<SqlStorageValue>,
    max_seq: i64,
    now: i64,
) -> worker::Result<usize> {
    let query = format!(
        "UPDATE deliveries SET seq = seq + ?, state = 'pending', open = 1, accepted_ms = ?, next_attempt_ms = ?, \
         finished_ms = NULL WHERE open = 0 AND {condition} RETURNING id"
    );
    let mut all = vec![max_seq.into(), now.into(), now.into()];
    all.append(&mut bindings);
    let reopened = rows(sql.exec(&query, all)?)?.len();
    // Those behind an open delivery of their key wait for it (they are behind every
    // delivery accepted before: their new numbers are above `max_seq`).
    sql.exec(
        "UPDATE deliveries SET next_attempt_ms = ?2 WHERE open = 1 AND seq > ?1 AND ordering_key IS NOT NULL \
         AND seq > (SELECT MIN(seq) FROM deliveries AS h WHERE h.open = 1 AND h.ordering_key = deliveries.ordering_key)",
        vec![max_seq.into(), WAITING.into()],
    )?;
    Ok(reopened)
}

/// The outcome's name, the origin's status, and the text of `last_error`.
fn describe(outcome: &OriginOutcome, timeout_ms: u64) -> (&'static str, Option<u16>, Option<String>) {
    match *outcome {
        OriginOutcome::Accepted { status } => ("accepted", Some(status), None),
        OriginOutcome::Refused { status } => ("refused", Some(status), Some(format!("the origin answered {status}"))),
        OriginOutcome::TimedOut => ("timeout", None, Some(format!("no answer within {timeout_ms} ms"))),
        OriginOutcome::Unreachable => ("unreachable", None, Some("the origin could not be reached".into())),
        OriginOutcome::ListenerAbsent => ("listener_absent", None, Some("no listener was connected".into())),
    }
}

fn no_delivery() -> Reply {
    Reply::new(
        ReplyCode::NotFound,
        "no delivery with this webhook-id in the inbox (never accepted, or past its retention)",
    )
}

/// A delivery as the admin API shows it (never its body or signatures); `None` for a row
/// whose state is not one of the API's.
fn summary(r: &[SqlStorageValue]) -> Option<DeliverySummary> {
    let state = text(r, 2).as_deref().and_then(DeliveryState::parse)?;
    Some(DeliverySummary {
        id: text(r, 0)?,
        state,
        ordering_key: text(r, 3),
        accepted_at_ms: int(r, 4).unwrap_or(0),
        attempts: int(r, 5).and_then(|n| u32::try_from(n).ok()).unwrap_or(0),
        // A delivery waiting behind an earlier one of its key has no time of its own yet.
        next_attempt_at_ms: if state.is_open() {
            int(r, 6).filter(|t| *t < WAITING)
        } else {
            None
        },
        last_status: int(r, 7).and_then(|n| u16::try_from(n).ok()),
        last_error: text(r, 8),
        finished_at_ms: int(r, 9),
        body_bytes: int(r, 10).and_then(|n| u64::try_from(n).ok()).unwrap_or(0),
    })
}

/// An admin answer as the JSON the object sends (`postwire-edge-wire`'s types).
fn answer<T: serde::Serialize>(typed: &T) -> Value {
    serde_json::to_value(typed).unwrap_or(Value::Null)
}

fn rows(cursor: worker::SqlCursor) -> worker::Result<Vec<Vec<SqlStorageValue>>> {
    cursor.raw().collect()
}

fn first_int(sql: &SqlStorage, query: &str) -> worker::Result<Option<i64>> {
    Ok(rows(sql.exec(query, None)?)?.first().and_then(|r| int(r, 0)))
}

fn int(row: &[SqlStorageValue], i: usize) -> Option<i64> {
    match row.get(i)? {
        SqlStorageValue::Integer(n) => Some(*n),
        SqlStorageValue::Float(f) if f.is_finite() => Some(f.round() as i64),
        _ => None,
    }
}

fn text(row: &[SqlStorageValue], i: usize) -> Option<String> {
    match row.get(i)? {
        SqlStorageValue::String(s) => Some(s.clone()),
        _ => None,
    }
}

fn blob(row: &[SqlStorageValue], i: usize) -> Option<Vec<u8>> {
    match row.get(i)? {
        SqlStorageValue::Blob(b) => Some(b.clone()),
        _ => None,
    }
}
