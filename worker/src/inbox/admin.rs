//! The admin API under `/_postwire/` (inbox mode): who may call it, and what each path
//! means. Answers are built by the `InboxObject`; here is only what can be decided without
//! storage, so that it is tested natively.
//!
//! Every path is `404` unless `ADMIN_TOKEN` is configured and the request carries
//! `authorization: Bearer <that token>`, compared in constant time (a token of another
//! length is refused without comparing bytes: the length is all that can leak).
//!
//! | method and path | route |
//! | --- | --- |
//! | `GET /_postwire/counts` | [`AdminRoute::Counts`] |
//! | `GET /_postwire/deliveries?state=<state>[&cursor=<c>][&limit=<1..=500>]` | [`AdminRoute::List`] |
//! | `GET /_postwire/deliveries/<webhook-id>` | [`AdminRoute::Show`] |
//! | `POST /_postwire/deliveries/<webhook-id>/replay` | [`AdminRoute::Replay`] |
//! | `POST /_postwire/replay-dead?since=<unix seconds>` | [`AdminRoute::ReplayDead`] |
//! | `POST /_postwire/pause`, `POST /_postwire/resume` | [`AdminRoute::Pause`], [`AdminRoute::Resume`] |
//! | `POST /_postwire/deliveries/<webhook-id>/erase` | [`AdminRoute::Erase`] by id |
//! | `POST /_postwire/erase?post=<post id>` or `?account=<account id>` | [`AdminRoute::Erase`] by subject |
//! | `GET /_postwire/poll-cost[?repeat=<0..=1000>]` | [`AdminRoute::PollCost`] |

use postwire_edge_wire::admin::path;

use crate::verify::not_found;

use crate::reply::{Reply, ReplyCode};

pub use postwire_edge_wire::admin::{ADMIN_PREFIX, DEFAULT_PAGE, DeliveryState, MAX_PAGE};

/// One admin request, understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminRoute {
    /// Counts per state, and whether delivery is paused.
    Counts,
    /// A page of the deliveries in `state`, in acceptance order, after `cursor`.
    List {
        /// Which state.
        state: DeliveryState,
        /// The acceptance sequence number the previous page ended at.
        after: Option<i64>,
        /// Page size.
        limit: u32,
    },
    /// One delivery with its attempts.
    Show {
        /// Its `webhook-id`.
        id: String,
    },
    /// Deliver one finished (delivered or dead) delivery again.
    Replay {
        /// Its `webhook-id`.
        id: String,
    },
    /// Deliver again every dead delivery that died at or after `since_ms`.
    ReplayDead {
        /// Milliseconds since the epoch.
        since_ms: i64,
    },
    /// Stop starting requests to the origin (accepting goes on).
    Pause,
    /// Start again.
    Resume,
    /// Erase the bodies of the matching deliveries (a data-protection request that reached
    /// the sender): each becomes [`DeliveryState::Erased`]; an open one is cancelled.
    Erase {
        /// Which deliveries.
        what: EraseTarget,
    },
    /// Runs the pump's two polls (the due heads, the next due time) `repeat` times and
    /// answers their SQLite query plans and rows read: what one poll costs at the current
    /// backlog.
    PollCost {
        /// How many times each poll runs (0 to [`MAX_POLL_REPEAT`]), so that a caller can
        /// time them from outside (the runtime's clock stands still while code runs).
        repeat: u32,
    },
}

/// Most runs of each poll in one [`AdminRoute::PollCost`].
pub const MAX_POLL_REPEAT: u32 = 1_000;

/// The deliveries an [`AdminRoute::Erase`] erases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EraseTarget {
    /// The delivery with this `webhook-id`.
    Id(String),
    /// Every delivery of a postwire event about this post (its ordering key `post:<id>`).
    Post(String),
    /// Every delivery of a postwire event about this connected account: its own events
    /// (ordering key `account:<id>`) and its posts' events, as the sender's account erasure.
    Account(String),
}

fn bad(message: impl Into<String>) -> Reply {
    Reply::new(ReplyCode::InvalidRequest, message)
}

/// The route of an authorized request: `path` starts with [`ADMIN_PREFIX`], `query` is the
/// part after `?` (without it). Unknown paths are `404`, a wrong method `405`, malformed
/// parameters `400 invalid_request`.
pub fn route(method: &str, path: &str, query: Option<&str>) -> Result<AdminRoute, Reply> {
    let rest = path.strip_prefix(ADMIN_PREFIX).ok_or_else(not_found)?;
    let segments: Vec<&str> = rest.split('/').collect();
    let get = method.eq_ignore_ascii_case("GET");
    let post = method.eq_ignore_ascii_case("POST");
    let params = parse_query(query.unwrap_or(""))?;
    let want = |ok: bool, allowed: &'static str| {
        if ok {
            Ok(())
        } else {
            Err(
                Reply::new(ReplyCode::MethodNotAllowed, format!("this path takes {allowed}"))
                    .with_header("allow", allowed),
            )
        }
    };
    match segments.as_slice() {
        [path::COUNTS] => want(get, "GET").map(|()| AdminRoute::Counts),
        [path::PAUSE] => want(post, "POST").map(|()| AdminRoute::Pause),
        [path::RESUME] => want(post, "POST").map(|()| AdminRoute::Resume),
        [path::DELIVERIES] => {
            want(get, "GET")?;
            let state = param(&params, "state")
                .ok_or_else(|| bad("`state` is required: pending, retrying, delivered, dead or erased"))?;
            let state = DeliveryState::parse(state)
                .ok_or_else(|| bad("`state` must be pending, retrying, delivered, dead or erased"))?;
            let after = match param(&params, "cursor") {
                None => None,
                Some(c) => Some(
                    parse_cursor(c)
                        .ok_or_else(|| bad("`cursor` is malformed: pass `next_cursor` of the previous page"))?,
                ),
            };
            let limit = match param(&params, "limit") {
                None => DEFAULT_PAGE,
                Some(l) => digits(l, 3)
                    .filter(|n| (1..=i64::from(MAX_PAGE)).contains(n))
                    .map(|n| n as u32)
                    .ok_or_else(|| bad("`limit` must be a whole number from 1 to 500"))?,
            };
            Ok(AdminRoute::List { state, after, limit })
        }
        [path::DELIVERIES, id] => {
            want(get, "GET")?;
            Ok(AdminRoute::Show { id: decode_id(id)? })
        }
        [path::DELIVERIES, id, path::REPLAY] => {
            want(post, "POST")?;
            Ok(AdminRoute::Replay { id: decode_id(id)? })
        }
        [path::DELIVERIES, id, path::ERASE] => {
            want(post, "POST")?;
            Ok(AdminRoute::Erase {
                what: EraseTarget::Id(decode_id(id)?),
            })
        }
        [path::ERASE] => {
            want(post, "POST")?;
            let what = match (param(&params, "post"), param(&params, "account")) {
                (Some(p), None) => EraseTarget::Post(subject_id(p)?),
                (None, Some(a)) => EraseTarget::Account(subject_id(a)?),
                _ => return Err(bad("give exactly one of `post` and `account`")),
            };
            Ok(AdminRoute::Erase { what })
        }
        [path::POLL_COST] => {
            want(get, "GET")?;
            let repeat = match param(&params, "repeat") {
                None => 1,
                Some(r) => digits(r, 4)
                    .filter(|n| (0..=i64::from(MAX_POLL_REPEAT)).contains(n))
                    .map(|n| n as u32)
                    .ok_or_else(|| bad("`repeat` must be a whole number from 0 to 1000"))?,
            };
            Ok(AdminRoute::PollCost { repeat })
        }
        [path::REPLAY_DEAD] => {
            want(post, "POST")?;
            let since = param(&params, "since").ok_or_else(|| bad("`since` (Unix seconds) is required"))?;
            let secs = digits(since, 12).ok_or_else(|| bad("`since` must be Unix seconds"))?;
            Ok(AdminRoute::ReplayDead { since_ms: secs * 1000 })
        }
        _ => Err(not_found()),
    }
}

/// The cursor of the page that ends with the delivery of acceptance number `seq`.
pub fn cursor_after(seq: i64) -> String {
    format!("s{seq}")
}

fn parse_cursor(cursor: &str) -> Option<i64> {
    digits(cursor.strip_prefix('s')?, 15)
}

/// A number of at most `max_len` ASCII digits.
fn digits(text: &str, max_len: usize) -> Option<i64> {
    if text.is_empty() || text.len() > max_len || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

type Params = Vec<(String, String)>;

fn parse_query(query: &str) -> Result<Params, Reply> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |s: &str| {
                percent_encoding::percent_decode_str(&s.replace('+', " "))
                    .decode_utf8()
                    .map(|c| c.into_owned())
                    .map_err(|_| bad("the query string is not valid UTF-8"))
            };
            Ok((decode(k)?, decode(v)?))
        })
        .collect()
}

fn param<'a>(params: &'a Params, name: &str) -> Option<&'a str> {
    params.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// A percent-encoded path segment holding a `webhook-id`: by postwire-core's rules (1 to
/// 256 visible ASCII characters).
fn decode_id(segment: &str) -> Result<String, Reply> {
    let malformed = || bad("the delivery id is malformed: a webhook-id is 1 to 256 visible ASCII characters");
    let id = percent_encoding::percent_decode_str(segment)
        .decode_utf8()
        .map_err(|_| malformed())?
        .into_owned();
    postwire_core::WebhookHeaders::new(&id, "1", "").map_err(|_| malformed())?;
    Ok(id)
}

/// A post or account id to erase by: 1 to 256 visible ASCII characters, as the ids in
/// ordering keys.
fn subject_id(value: &str) -> Result<String, Reply> {
    if value.is_empty() || value.len() > 256 || !value.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad("a post or account id is 1 to 256 visible ASCII characters"));
    }
    Ok(value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_and_their_parameters() {
        assert_eq!(route("GET", "/_postwire/counts", None), Ok(AdminRoute::Counts));
        assert_eq!(route("POST", "/_postwire/pause", None), Ok(AdminRoute::Pause));
        assert_eq!(route("POST", "/_postwire/resume", Some("")), Ok(AdminRoute::Resume));
        assert_eq!(
            route("GET", "/_postwire/deliveries", Some("state=dead&cursor=s42&limit=7")),
            Ok(AdminRoute::List {
                state: DeliveryState::Dead,
                after: Some(42),
                limit: 7
            })
        );
        assert_eq!(
            route("GET", "/_postwire/deliveries", Some("state=pending")),
            Ok(AdminRoute::List {
                state: DeliveryState::Pending,
                after: None,
                limit: DEFAULT_PAGE
            })
        );
        assert_eq!(
            route("GET", "/_postwire/deliveries/msg%2F1", None),
            Ok(AdminRoute::Show { id: "msg/1".into() })
        );
        assert_eq!(
            route("POST", "/_postwire/deliveries/msg_1/replay", None),
            Ok(AdminRoute::Replay { id: "msg_1".into() })
        );
        assert_eq!(
            route("POST", "/_postwire/replay-dead", Some("since=1700000000")),
            Ok(AdminRoute::ReplayDead {
                since_ms: 1_700_000_000_000
            })
        );
        assert_eq!(cursor_after(42), "s42");
        assert_eq!(
            route("POST", "/_postwire/deliveries/msg%2F1/erase", None),
            Ok(AdminRoute::Erase {
                what: EraseTarget::Id("msg/1".into())
            })
        );
        assert_eq!(
            route("POST", "/_postwire/erase", Some("post=p%201x")),
            Err(bad("a post or account id is 1 to 256 visible ASCII characters"))
        );
        assert_eq!(
            route("POST", "/_postwire/erase", Some("post=p1")),
            Ok(AdminRoute::Erase {
                what: EraseTarget::Post("p1".into())
            })
        );
        assert_eq!(
            route("POST", "/_postwire/erase", Some("account=acc1")),
            Ok(AdminRoute::Erase {
                what: EraseTarget::Account("acc1".into())
            })
        );
        assert_eq!(
            route("GET", "/_postwire/poll-cost", Some("repeat=100")),
            Ok(AdminRoute::PollCost { repeat: 100 })
        );
        assert_eq!(
            route("GET", "/_postwire/poll-cost", None),
            Ok(AdminRoute::PollCost { repeat: 1 })
        );
        assert_eq!(DeliveryState::parse("erased"), Some(DeliveryState::Erased));
        assert!(!DeliveryState::Erased.is_open());
    }

    #[test]
    fn malformed_parameters_are_400_unknown_paths_404_wrong_methods_405() {
        for (method, path, query) in [
            ("GET", "/_postwire/deliveries", Some("state=lost")),
            ("GET", "/_postwire/deliveries", None),
            ("GET", "/_postwire/deliveries", Some("state=dead&cursor=42")),
            ("GET", "/_postwire/deliveries", Some("state=dead&cursor=s-1")),
            ("GET", "/_postwire/deliveries", Some("state=dead&cursor=%ff")),
            ("GET", "/_postwire/deliveries", Some("state=dead&limit=0")),
            ("GET", "/_postwire/deliveries", Some("state=dead&limit=501")),
            ("GET", "/_postwire/deliveries/msg%201", None),
            ("GET", "/_postwire/deliveries/", None),
            ("GET", "/_postwire/deliveries/%ff", None),
            ("POST", "/_postwire/replay-dead", Some("since=yesterday")),
            ("POST", "/_postwire/replay-dead", None),
            ("POST", "/_postwire/erase", None),
            ("POST", "/_postwire/erase", Some("post=p1&account=a1")),
            ("POST", "/_postwire/erase", Some("post=")),
            ("GET", "/_postwire/poll-cost", Some("repeat=1001")),
            ("GET", "/_postwire/poll-cost", Some("repeat=-1")),
        ] {
            let r = route(method, path, query).unwrap_err();
            assert_eq!(
                (r.status(), r.code),
                (400, ReplyCode::InvalidRequest),
                "{path}?{query:?}"
            );
        }
        let long = format!("/_postwire/deliveries/{}", "a".repeat(257));
        assert_eq!(route("GET", &long, None).unwrap_err().status(), 400);
        for path in [
            "/_postwire/",
            "/_postwire/nope",
            "/_postwire/deliveries/a/b",
            "/elsewhere",
        ] {
            assert_eq!(route("GET", path, None).unwrap_err().status(), 404, "{path}");
        }
        assert_eq!(route("POST", "/_postwire/counts", None).unwrap_err().status(), 405);
        assert_eq!(route("GET", "/_postwire/pause", None).unwrap_err().status(), 405);
        assert_eq!(
            route("GET", "/_postwire/erase", Some("post=p1")).unwrap_err().status(),
            405
        );
        assert_eq!(
            route("GET", "/_postwire/deliveries/m/erase", None)
                .unwrap_err()
                .status(),
            405
        );
    }
}
