//! The inbox admin API's wire format (`DELIVERY_MODE = "inbox"`, `ADMIN_TOKEN` set): its
//! paths under [`ADMIN_PREFIX`], the delivery states, and the JSON answers, which the
//! Worker's `InboxObject` builds and `postwire edge` reads.
//!
//! | method and path | answer |
//! | --- | --- |
//! | `GET counts` | [`CountsAnswer`] |
//! | `GET deliveries?state=<state>[&cursor=<c>][&limit=<1..=500>]` | [`DeliveryPage`] |
//! | `GET deliveries/<webhook-id>` | [`DeliveryDetail`] |
//! | `POST deliveries/<webhook-id>/replay`, `POST replay-dead?since=<unix seconds>` | [`ReplayAnswer`] |
//! | `POST deliveries/<webhook-id>/erase`, `POST erase?post=<id>` or `?account=<id>` | [`EraseAnswer`] |
//! | `POST pause`, `POST resume` | [`PauseAnswer`] |
//! | `GET poll-cost[?repeat=<0..=1000>]` | [`PollCostAnswer`] |
//!
//! Every refusal is the spec's error body, [`ErrorBody`] (`404 not_found` on every path
//! without the right token). Paths are relative to [`ADMIN_PREFIX`]; a `webhook-id` is one
//! percent-encoded path segment.

use serde::{Deserialize, Serialize};

/// Where the admin API lives on the Worker's host.
pub const ADMIN_PREFIX: &str = "/_postwire/";
/// Default page size of a list.
pub const DEFAULT_PAGE: u32 = 100;
/// Largest page size of a list.
pub const MAX_PAGE: u32 = 500;

/// The path segments (under [`ADMIN_PREFIX`]) of the admin API.
pub mod path {
    /// `GET`: [`CountsAnswer`](super::CountsAnswer).
    pub const COUNTS: &str = "counts";
    /// `GET` a page, or, followed by a `webhook-id` segment, one delivery.
    pub const DELIVERIES: &str = "deliveries";
    /// After `deliveries/<webhook-id>`: `POST` to deliver it again.
    pub const REPLAY: &str = "replay";
    /// After `deliveries/<webhook-id>`: `POST` to erase its body; alone, `POST` with `post`
    /// or `account` to erase by subject.
    pub const ERASE: &str = "erase";
    /// `POST` with `since`: deliver again every delivery that died since then.
    pub const REPLAY_DEAD: &str = "replay-dead";
    /// `POST`: hold deliveries at the edge.
    pub const PAUSE: &str = "pause";
    /// `POST`: deliver again.
    pub const RESUME: &str = "resume";
    /// `GET`: the pump's polls, their query plans and rows read.
    pub const POLL_COST: &str = "poll-cost";
}

/// A delivery's state in the inbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryState {
    /// Accepted, not tried yet (or waiting behind an earlier delivery of its key, or paused).
    Pending,
    /// Tried, not accepted by the origin yet; waiting for its next attempt.
    Retrying,
    /// The origin answered `2xx`.
    Delivered,
    /// Not accepted within the retry horizon; kept for the retention, replayable.
    Dead,
    /// Its body was erased on request; never sent again.
    Erased,
}

impl DeliveryState {
    /// Every state, in the order of a delivery's life.
    pub const ALL: [DeliveryState; 5] = [
        DeliveryState::Pending,
        DeliveryState::Retrying,
        DeliveryState::Delivered,
        DeliveryState::Dead,
        DeliveryState::Erased,
    ];

    /// The name used in storage and in the API.
    pub const fn as_str(self) -> &'static str {
        match self {
            DeliveryState::Pending => "pending",
            DeliveryState::Retrying => "retrying",
            DeliveryState::Delivered => "delivered",
            DeliveryState::Dead => "dead",
            DeliveryState::Erased => "erased",
        }
    }

    /// The state named `name`.
    pub fn parse(name: &str) -> Option<DeliveryState> {
        DeliveryState::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// Whether a delivery in this state still waits to reach the origin.
    pub const fn is_open(self) -> bool {
        matches!(self, DeliveryState::Pending | DeliveryState::Retrying)
    }
}

/// The spec's error body, `{"statusCode", "code", "message"}`, of every refusal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The HTTP status.
    #[serde(rename = "statusCode")]
    pub status_code: u16,
    /// The stable code, e.g. `not_found`.
    pub code: String,
    /// For people: what is wrong and what to do.
    pub message: String,
}

/// How many deliveries are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateCounts {
    /// [`DeliveryState::Pending`].
    pub pending: u64,
    /// [`DeliveryState::Retrying`].
    pub retrying: u64,
    /// [`DeliveryState::Delivered`].
    pub delivered: u64,
    /// [`DeliveryState::Dead`].
    pub dead: u64,
    /// [`DeliveryState::Erased`].
    pub erased: u64,
}

impl StateCounts {
    /// The count of `state`.
    pub fn get(&self, state: DeliveryState) -> u64 {
        match state {
            DeliveryState::Pending => self.pending,
            DeliveryState::Retrying => self.retrying,
            DeliveryState::Delivered => self.delivered,
            DeliveryState::Dead => self.dead,
            DeliveryState::Erased => self.erased,
        }
    }

    /// Sets the count of `state`.
    pub fn set(&mut self, state: DeliveryState, n: u64) {
        let slot = match state {
            DeliveryState::Pending => &mut self.pending,
            DeliveryState::Retrying => &mut self.retrying,
            DeliveryState::Delivered => &mut self.delivered,
            DeliveryState::Dead => &mut self.dead,
            DeliveryState::Erased => &mut self.erased,
        };
        *slot = n;
    }
}

/// `GET counts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CountsAnswer {
    /// Deliveries per state.
    pub counts: StateCounts,
    /// Whether delivery to the origin is paused.
    pub paused: bool,
}

/// A delivery as the admin API shows it: never its body or signatures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliverySummary {
    /// The `webhook-id`.
    pub id: String,
    /// Its state.
    pub state: DeliveryState,
    /// Its ordering key (`post:<id>`, `account:<id>`), if any.
    pub ordering_key: Option<String>,
    /// When the edge accepted it, Unix milliseconds.
    pub accepted_at_ms: i64,
    /// Attempts made so far.
    pub attempts: u32,
    /// When it is tried next (open deliveries with a time of their own).
    pub next_attempt_at_ms: Option<i64>,
    /// The origin's status at the last attempt, if it answered.
    pub last_status: Option<u16>,
    /// Why the last attempt failed, if it did.
    pub last_error: Option<String>,
    /// When it was delivered, died or was erased, Unix milliseconds.
    pub finished_at_ms: Option<i64>,
    /// The body's size (0 once erased).
    pub body_bytes: u64,
}

/// `GET deliveries?state=…`: one page, in acceptance order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryPage {
    /// The deliveries of this page.
    pub deliveries: Vec<DeliverySummary>,
    /// The `cursor` of the next page, `null` on the last one.
    pub next_cursor: Option<String>,
}

/// One attempt at the origin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    /// Its number, from 1.
    pub n: u32,
    /// When it started, Unix milliseconds.
    pub started_at_ms: i64,
    /// When it ended, Unix milliseconds.
    pub finished_at_ms: Option<i64>,
    /// `accepted`, `refused`, `timeout`, `unreachable` or `listener_absent`.
    pub outcome: String,
    /// The origin's status, if it answered.
    pub status: Option<u16>,
    /// The start of the origin's answer, or why there was none.
    pub answer: Option<String>,
}

/// `GET deliveries/<webhook-id>`: the summary and every attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryDetail {
    /// The delivery.
    #[serde(flatten)]
    pub summary: DeliverySummary,
    /// Its attempts, oldest first.
    pub attempt_log: Vec<Attempt>,
}

/// `POST …/replay`, `POST replay-dead`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayAnswer {
    /// How many deliveries will be delivered again.
    pub replayed: u64,
}

/// `POST …/erase`, `POST erase?…`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EraseAnswer {
    /// How many deliveries' bodies were erased.
    pub erased: u64,
    /// How many of them had not reached the origin yet (now never sent).
    pub cancelled: u64,
}

/// `POST pause`, `POST resume`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PauseAnswer {
    /// Whether delivery to the origin is paused now.
    pub paused: bool,
}

/// `GET poll-cost`: what one of the pump's polls costs at the current backlog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PollCostAnswer {
    /// How many times each poll ran.
    pub repeat: u32,
    /// Each poll.
    pub polls: Vec<PollCost>,
}

/// One poll of [`PollCostAnswer`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PollCost {
    /// `due_heads` or `next_head_due`.
    pub name: String,
    /// SQLite's `EXPLAIN QUERY PLAN` lines.
    pub plan: Vec<String>,
    /// Rows SQLite read in the last run.
    pub rows_read: u64,
    /// Rows it returned.
    pub rows_returned: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_have_one_name_in_storage_in_the_api_and_in_json() {
        for state in DeliveryState::ALL {
            assert_eq!(DeliveryState::parse(state.as_str()), Some(state));
            assert_eq!(serde_json::to_value(state).unwrap(), state.as_str());
        }
        assert_eq!(DeliveryState::parse("Dead"), None);
        let mut counts = StateCounts::default();
        for (n, state) in DeliveryState::ALL.into_iter().enumerate() {
            counts.set(state, n as u64 + 1);
        }
        let json = serde_json::to_value(CountsAnswer { counts, paused: true }).unwrap();
        for (n, state) in DeliveryState::ALL.into_iter().enumerate() {
            assert_eq!(json["counts"][state.as_str()], n as u64 + 1);
            assert_eq!(counts.get(state), n as u64 + 1);
        }
    }

    #[test]
    fn a_delivery_detail_is_its_summary_and_its_attempts_in_one_object() {
        let detail = DeliveryDetail {
            summary: DeliverySummary {
                id: "msg_1".into(),
                state: DeliveryState::Retrying,
                ordering_key: Some("post:p1".into()),
                accepted_at_ms: 1_700_000_000_000,
                attempts: 1,
                next_attempt_at_ms: Some(1_700_000_001_000),
                last_status: Some(500),
                last_error: Some("the origin answered 500".into()),
                finished_at_ms: None,
                body_bytes: 42,
            },
            attempt_log: vec![Attempt {
                n: 1,
                started_at_ms: 1_700_000_000_100,
                finished_at_ms: Some(1_700_000_000_200),
                outcome: "refused".into(),
                status: Some(500),
                answer: Some("oops".into()),
            }],
        };
        let json = serde_json::to_value(&detail).unwrap();
        assert_eq!(json["id"], "msg_1");
        assert_eq!(json["state"], "retrying");
        assert_eq!(json["attempt_log"][0]["outcome"], "refused");
        assert_eq!(json["finished_at_ms"], serde_json::Value::Null);
        assert_eq!(serde_json::from_value::<DeliveryDetail>(json).unwrap(), detail);
    }

    #[test]
    fn the_error_body_is_the_spec_s() {
        let body: ErrorBody =
            serde_json::from_str(r#"{"statusCode":404,"code":"not_found","message":"no such path"}"#).unwrap();
        assert_eq!(body.status_code, 404);
        assert_eq!(body.code, "not_found");
        assert!(serde_json::to_string(&body).unwrap().contains(r#""statusCode":404"#));
    }
}
