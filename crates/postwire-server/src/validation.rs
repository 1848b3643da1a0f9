//! Turning request bodies, query strings and path segments into typed input, or into a
//! 400 `invalid_request` that names every problem.
//!
//! Validation happens in two passes. This module checks *shape*: the body is JSON within
//! the size limit, an object, without unknown fields (so a typo such as `event` for
//! `events` cannot silently subscribe to everything), each field of the right JSON type,
//! each event type known. Every shape problem of a request is reported at once. The
//! sender then checks *meaning* — a non-empty name, a public `https` URL, accounts that
//! belong to the workspace — and also reports all of its findings at once. `message` is
//! a string for one problem and an array for several, as the spec says.
//!
//! Bodies are read here, inside the handler and after authorization, rather than by an
//! extractor, so a caller without access learns nothing from body errors.

use std::collections::HashMap;

use axum::body::{Body, Bytes};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use postwire_core::{EventType, SigningMode};
use postwire_sender::SubscriptionUpdate;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::errors::{ApiError, ApiResult};

/// Reads the whole body, refusing more than `limit` bytes.
pub async fn read_body(body: Body, limit: usize) -> ApiResult<Bytes> {
    axum::body::to_bytes(body, limit).await.map_err(|e| {
        let too_large = std::error::Error::source(&e)
            .map(|s| s.is::<http_body_util::LengthLimitError>())
            .unwrap_or(false)
            || e.to_string().contains("length limit");
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
        while let Some(cause) = source {
            if let Some(timeout) = cause.downcast_ref::<crate::listener::BodyTimeout>() {
                return ApiError::RequestTimeout(timeout.0.as_secs().max(1));
            }
            source = cause.source();
        }
        if too_large {
            ApiError::invalid(format!("the body is larger than the limit of {limit} bytes"))
        } else {
            ApiError::invalid("the body could not be read")
        }
    })
}

/// Parses a JSON body; `None` for an empty body. An object with the same key twice is
/// refused (see [`reject_duplicate_keys`]).
pub fn parse_json(bytes: &[u8]) -> ApiResult<Option<Value>> {
    // JSON's whitespace only (RFC 8259): `u8::is_ascii_whitespace` also takes a form
    // feed, and a body of one was then read as no body and accepted.
    if bytes.iter().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
        return Ok(None);
    }
    let value =
        serde_json::from_slice(bytes).map_err(|e| ApiError::invalid(format!("the body is not valid JSON: {e}")))?;
    reject_duplicate_keys(bytes)?;
    Ok(Some(value))
}

/// `400 invalid_request` when any object in the JSON text `bytes` has a key twice.
/// `serde_json` keeps the last value of a repeated key, so `{"name":"x","name":"y"}`
/// would mean something other than what a reviewer or a proxy reading the first one
/// sees; every JSON body the API takes goes through this check.
pub fn reject_duplicate_keys(bytes: &[u8]) -> ApiResult<()> {
    use serde::Deserializer as _;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match de.deserialize_any(NoDuplicates) {
        Ok(()) => Ok(()),
        Err(e) => Err(ApiError::invalid(format!("the body is not valid JSON: {e}"))),
    }
}

/// Walks any JSON value, failing on the first object with a repeated key.
struct NoDuplicates;

impl<'de> serde::de::DeserializeSeed<'de> for NoDuplicates {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(NoDuplicates)
    }
}

impl<'de> serde::de::Visitor<'de> for NoDuplicates {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(NoDuplicates)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                let shown: String = key.chars().take(40).collect();
                return Err(serde::de::Error::custom(format!("duplicate key `{shown}`")));
            }
            map.next_value_seed(NoDuplicates)?;
        }
        Ok(())
    }
}

/// A JSON object with only `allowed` keys; every stray key is a problem.
fn object<'v>(
    value: Option<&'v Value>,
    allowed: &[&str],
    problems: &mut Vec<String>,
) -> Option<&'v Map<String, Value>> {
    match value {
        None => {
            problems.push(format!("the body must be a JSON object with {}", allowed.join(", ")));
            None
        }
        Some(Value::Object(map)) => {
            for key in map.keys() {
                if !allowed.contains(&key.as_str()) {
                    let shown: String = key.chars().take(40).collect();
                    problems.push(format!("unknown field `{shown}`; expected {}", allowed.join(", ")));
                }
            }
            Some(map)
        }
        Some(other) => {
            problems.push(format!("the body must be a JSON object, not {}", json_kind(other)));
            None
        }
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// How a field may be absent.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Presence {
    /// Must be present and not null.
    Required,
    /// May be absent; null counts as absent.
    Optional,
    /// May be absent; the caller reports null as a problem (updates, where null would be
    /// ambiguous).
    OptionalNotNull,
}

fn string_field(map: &Map<String, Value>, key: &str, presence: Presence, problems: &mut Vec<String>) -> Option<String> {
    match map.get(key) {
        None if presence == Presence::Required => {
            problems.push(format!("`{key}` is required"));
            None
        }
        None => None,
        Some(Value::Null) if presence != Presence::Required => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            problems.push(format!("`{key}` must be a string, not {}", json_kind(other)));
            None
        }
    }
}

fn string_array(
    map: &Map<String, Value>,
    key: &str,
    presence: Presence,
    problems: &mut Vec<String>,
) -> Option<Vec<String>> {
    match map.get(key) {
        None => None,
        Some(Value::Null) if presence != Presence::Required => None,
        Some(Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) => out.push(s.clone()),
                    other => problems.push(format!("`{key}[{i}]` must be a string, not {}", json_kind(other))),
                }
            }
            Some(out)
        }
        Some(other) => {
            problems.push(format!("`{key}` must be an array of strings, not {}", json_kind(other)));
            None
        }
    }
}

fn event_types(names: Vec<String>, problems: &mut Vec<String>) -> Vec<EventType> {
    let mut out = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        match EventType::ALL.iter().find(|t| t.as_str() == name) {
            Some(t) => out.push(*t),
            None => {
                let shown: String = name.chars().take(40).collect();
                let known: Vec<&str> = EventType::ALL.iter().map(|t| t.as_str()).collect();
                problems.push(format!(
                    "`events[{i}]`: unknown event type `{shown}`; expected one of: {}",
                    known.join(", ")
                ));
            }
        }
    }
    out
}

/// The `signing` choice (an extension: `symmetric`, `asymmetric` or `both`).
fn signing_mode(value: Option<String>, problems: &mut Vec<String>) -> Option<SigningMode> {
    let value = value?;
    match value.parse::<SigningMode>() {
        Ok(mode) => Some(mode),
        Err(_) => {
            let shown: String = value.chars().take(40).collect();
            let known: Vec<&str> = SigningMode::ALL.iter().map(|m| m.as_str()).collect();
            problems.push(format!(
                "`signing`: unknown signing choice `{shown}`; expected one of: {}",
                known.join(", ")
            ));
            None
        }
    }
}

fn done<T>(value: T, problems: Vec<String>) -> ApiResult<T> {
    if problems.is_empty() {
        Ok(value)
    } else {
        Err(ApiError::Invalid(problems))
    }
}

/// The body of `POST …/operator-webhooks`, shape-checked: `(name, url)`. Their meaning
/// (a non-empty name, a public `https` URL) is the sender's check, as for subscriptions.
pub fn parse_operator_create(body: Option<&Value>) -> ApiResult<(String, String)> {
    let mut problems = Vec::new();
    let Some(map) = object(body, &["name", "url"], &mut problems) else {
        return Err(ApiError::Invalid(problems));
    };
    let name = string_field(map, "name", Presence::Required, &mut problems);
    let url = string_field(map, "url", Presence::Required, &mut problems);
    done((name.unwrap_or_default(), url.unwrap_or_default()), problems)
}

/// The body of `POST …/webhooks`, shape-checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateWebhook {
    /// Label.
    pub name: String,
    /// Endpoint.
    pub url: String,
    /// Event types; empty means all.
    pub events: Vec<EventType>,
    /// Account restriction; empty means all.
    pub integration_ids: Vec<String>,
    /// Which signatures deliveries carry (`symmetric` when absent or null).
    pub signing: SigningMode,
}

/// Checks the shape of a creation body.
pub fn parse_create(body: Option<&Value>) -> ApiResult<CreateWebhook> {
    let mut problems = Vec::new();
    let Some(map) = object(
        body,
        &["name", "url", "events", "integrationIds", "signing"],
        &mut problems,
    ) else {
        return Err(ApiError::Invalid(problems));
    };
    let name = string_field(map, "name", Presence::Required, &mut problems);
    let url = string_field(map, "url", Presence::Required, &mut problems);
    let events = string_array(map, "events", Presence::Optional, &mut problems).unwrap_or_default();
    let events = event_types(events, &mut problems);
    let integration_ids = string_array(map, "integrationIds", Presence::Optional, &mut problems).unwrap_or_default();
    let signing = string_field(map, "signing", Presence::Optional, &mut problems);
    let signing = signing_mode(signing, &mut problems).unwrap_or_default();
    let value = CreateWebhook {
        name: name.unwrap_or_default(),
        url: url.unwrap_or_default(),
        events,
        integration_ids,
        signing,
    };
    done(value, problems)
}

/// Checks the shape of an update body (`PATCH …/webhooks/{id}`). Absent fields stay as
/// they are; `null` is refused (use `[]` for "all").
pub fn parse_update(body: Option<&Value>) -> ApiResult<SubscriptionUpdate> {
    let mut problems = Vec::new();
    let Some(map) = object(
        body,
        &["name", "url", "events", "integrationIds", "signing"],
        &mut problems,
    ) else {
        return Err(ApiError::Invalid(problems));
    };
    for (key, value) in map {
        if value.is_null() {
            problems.push(format!(
                "`{key}` must not be null; omit it to keep the current value ([] means all)"
            ));
        }
    }
    let name = string_field(map, "name", Presence::OptionalNotNull, &mut problems);
    let url = string_field(map, "url", Presence::OptionalNotNull, &mut problems);
    let events =
        string_array(map, "events", Presence::OptionalNotNull, &mut problems).map(|e| event_types(e, &mut problems));
    let integration_ids = string_array(map, "integrationIds", Presence::OptionalNotNull, &mut problems);
    let signing = string_field(map, "signing", Presence::OptionalNotNull, &mut problems);
    let signing = signing_mode(signing, &mut problems);
    problems.dedup();
    done(
        SubscriptionUpdate {
            name,
            url,
            events,
            integration_ids,
            signing,
        },
        problems,
    )
}

/// Checks `{"enabled": true|false}`.
pub fn parse_enabled(body: Option<&Value>) -> ApiResult<bool> {
    let mut problems = Vec::new();
    let Some(map) = object(body, &["enabled"], &mut problems) else {
        return Err(ApiError::Invalid(problems));
    };
    match map.get("enabled") {
        Some(Value::Bool(b)) => done(*b, problems),
        None => {
            problems.push("`enabled` is required".to_owned());
            Err(ApiError::Invalid(problems))
        }
        Some(other) => {
            problems.push(format!("`enabled` must be a boolean, not {}", json_kind(other)));
            Err(ApiError::Invalid(problems))
        }
    }
}

/// Checks the optional body of `POST …/test`: `{"message": "…"}`, or nothing (an empty
/// body or `null`).
pub fn parse_test_message(body: Option<&Value>) -> ApiResult<Option<String>> {
    if body.is_none_or(Value::is_null) {
        return Ok(None);
    }
    let mut problems = Vec::new();
    let Some(map) = object(body, &["message"], &mut problems) else {
        return Err(ApiError::Invalid(problems));
    };
    let message = string_field(map, "message", Presence::Optional, &mut problems);
    done(message, problems)
}

/// Checks the body of `POST …/recover`: `{"since": "<RFC 3339 date-time>"}`.
pub fn parse_recover(body: Option<&Value>) -> ApiResult<postwire_core::Timestamp> {
    let mut problems = Vec::new();
    let Some(map) = object(body, &["since"], &mut problems) else {
        return Err(ApiError::Invalid(problems));
    };
    let since = string_field(map, "since", Presence::Required, &mut problems);
    let parsed = since.and_then(|s| match s.parse::<postwire_core::Timestamp>() {
        Ok(t) => Some(t),
        Err(_) => {
            problems.push("`since` must be an RFC 3339 date-time, e.g. 2026-11-22T00:00:00Z".to_owned());
            None
        }
    });
    match parsed {
        Some(t) if problems.is_empty() => Ok(t),
        _ => Err(ApiError::Invalid(problems)),
    }
}

/// The parameters of a query string, refusing unknown and repeated ones.
#[derive(Debug, Default)]
pub struct QueryParams(HashMap<String, String>);

impl QueryParams {
    /// Parses `query` (without `?`), accepting only `allowed` names.
    pub fn parse(query: Option<&str>, allowed: &[&str]) -> ApiResult<QueryParams> {
        let mut map = HashMap::new();
        let mut problems = Vec::new();
        for (k, v) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            let shown: String = k.chars().take(40).collect();
            if !allowed.contains(&k.as_ref()) {
                problems.push(format!(
                    "unknown query parameter `{shown}`; expected {}",
                    allowed.join(", ")
                ));
            } else if map.insert(k.clone().into_owned(), v.into_owned()).is_some() {
                problems.push(format!("query parameter `{shown}` is given more than once"));
            }
        }
        done(QueryParams(map), problems)
    }

    /// A string parameter.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// An integer parameter in `min..=max`, `default` when absent.
    pub fn int(&self, key: &str, default: usize, min: usize, max: usize) -> ApiResult<usize> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => match v.parse::<usize>() {
                Ok(n) if (min..=max).contains(&n) => Ok(n),
                _ => Err(ApiError::invalid(format!(
                    "`{key}` must be an integer between {min} and {max}"
                ))),
            },
        }
    }
}

/// Longest id accepted in a path or query parameter (`webhookId`, `postId`), in
/// characters: the document's `maxLength` (JSON Schema counts characters, and so does
/// the sender).
pub const MAX_ID_CHARS: usize = postwire_sender::events::MAX_ID_LEN;

/// Most changes in one ingest call (`POST /internal/v1/events`).
pub const MAX_INGEST_BATCH: usize = 1000;

/// The documented pattern of ids in paths and queries: no control character (Unicode
/// category `Cc`, what [`char::is_control`] tests), the sender's own rule.
pub const ID_PATTERN: &str = "^[^\\x00-\\x1f\\x7f-\\x9f]+$";

/// Checks an id given as the path or query parameter `name` against the documented
/// rule: 1 to [`MAX_ID_CHARS`] characters, none of them a control character. Anything
/// else is a 400 that names the parameter, so the document and the server agree.
pub fn check_id_param(name: &str, value: &str) -> ApiResult<()> {
    let count = value.chars().count();
    if count == 0 {
        Err(ApiError::invalid(format!("`{name}` must not be empty")))
    } else if count > MAX_ID_CHARS {
        Err(ApiError::invalid(format!(
            "`{name}` must be at most {MAX_ID_CHARS} characters"
        )))
    } else if value.chars().any(char::is_control) {
        Err(ApiError::invalid(format!(
            "`{name}` must not contain control characters"
        )))
    } else {
        Ok(())
    }
}

/// Path parameters; a segment that is not valid UTF-8 (after percent-decoding) is a 400.
#[derive(Debug)]
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(v)) => Ok(ApiPath(v)),
            Err(e) => Err(ApiError::invalid(format!("invalid path parameter: {}", e.body_text()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_json_whitespace_is_an_empty_body() {
        for empty in [&b""[..], b" ", b"\t\r\n "] {
            assert!(parse_json(empty).unwrap().is_none(), "{empty:?}");
        }
        // A form feed or vertical tab is ASCII whitespace but not JSON's: not a body.
        for bad in [&b"\x0c"[..], b"\x0b", b" \x0c "] {
            assert_eq!(parse_json(bad).unwrap_err().code(), "invalid_request", "{bad:?}");
        }
    }

    fn messages(e: ApiError) -> Vec<String> {
        match e {
            ApiError::Invalid(m) => m,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn create_reports_every_shape_problem() {
        let body =
            json!({"url": 5, "events": ["post.published", "post.exploded"], "integrationIds": "acc", "evnts": []});
        let m = messages(parse_create(Some(&body)).unwrap_err());
        assert_eq!(m.len(), 5, "{m:?}");
        assert!(m.iter().any(|s| s.contains("unknown field `evnts`")));
        assert!(m.iter().any(|s| s == "`name` is required"));
        assert!(m.iter().any(|s| s.starts_with("`url` must be a string")));
        assert!(
            m.iter()
                .any(|s| s.contains("`events[1]`: unknown event type `post.exploded`"))
        );
        assert!(m.iter().any(|s| s.starts_with("`integrationIds` must be an array")));
    }

    #[test]
    fn signing_is_one_of_three_choices_symmetric_by_default() {
        let base = json!({"name": "n", "url": "https://e.com"});
        assert_eq!(parse_create(Some(&base)).unwrap().signing, SigningMode::Symmetric);
        for (text, mode) in [
            ("symmetric", SigningMode::Symmetric),
            ("asymmetric", SigningMode::Asymmetric),
            ("both", SigningMode::Both),
        ] {
            let mut body = base.clone();
            body["signing"] = text.into();
            assert_eq!(parse_create(Some(&body)).unwrap().signing, mode);
            assert_eq!(
                parse_update(Some(&json!({"signing": text}))).unwrap().signing,
                Some(mode)
            );
        }
        let mut body = base.clone();
        body["signing"] = "ed25519".into();
        let m = messages(parse_create(Some(&body)).unwrap_err());
        assert_eq!(
            m,
            ["`signing`: unknown signing choice `ed25519`; expected one of: symmetric, asymmetric, both"]
        );
        body["signing"] = json!(1);
        assert!(messages(parse_create(Some(&body)).unwrap_err())[0].starts_with("`signing` must be a string"));
        assert_eq!(
            messages(parse_update(Some(&json!({"signing": "BOTH"}))).unwrap_err()).len(),
            1
        );
        assert_eq!(
            messages(parse_update(Some(&json!({"signing": null}))).unwrap_err()).len(),
            1
        );
        assert_eq!(parse_update(Some(&json!({}))).unwrap().signing, None);
    }

    #[test]
    fn create_accepts_null_as_omitted_and_update_refuses_it() {
        let ok = parse_create(Some(&json!({"name": "n", "url": "https://e.com", "events": null}))).unwrap();
        assert!(ok.events.is_empty());
        assert_eq!(
            messages(parse_update(Some(&json!({"events": null}))).unwrap_err()).len(),
            1
        );
        let u = parse_update(Some(&json!({"events": []}))).unwrap();
        assert_eq!(u.events, Some(vec![]));
        assert_eq!(u.name, None);
    }

    fn arbitrary_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            ".{0,12}".prop_map(Value::String),
            prop::sample::select(vec![
                "name",
                "url",
                "events",
                "integrationIds",
                "enabled",
                "message",
                "post.published"
            ])
            .prop_map(|s| Value::String(s.to_owned())),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop::sample::select(vec![
                        "name",
                        "url",
                        "events",
                        "integrationIds",
                        "enabled",
                        "message",
                        "x"
                    ])
                    .prop_map(str::to_owned),
                    inner,
                    0..6
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn any_json_is_accepted_or_refused_with_messages_never_a_panic(v in arbitrary_json()) {
            for result in [parse_create(Some(&v)).map(|_| ()), parse_update(Some(&v)).map(|_| ()), parse_enabled(Some(&v)).map(|_| ()), parse_test_message(Some(&v)).map(|_| ())] {
                if let Err(e) = result {
                    proptest::prop_assert!(matches!(&e, ApiError::Invalid(m) if !m.is_empty()), "{e:?}");
                }
            }
        }

        #[test]
        fn any_bytes_parse_or_fail_cleanly(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            if let Err(e) = parse_json(&bytes) {
                proptest::prop_assert_eq!(e.code(), "invalid_request");
            }
        }
    }

    #[test]
    fn enabled_and_queries() {
        assert!(parse_enabled(Some(&json!({"enabled": true}))).unwrap());
        assert!(parse_enabled(Some(&json!({"enabled": "yes"}))).is_err());
        assert!(parse_enabled(None).is_err());
        let q = QueryParams::parse(Some("limit=5&cursor=c_9"), &["limit", "cursor"]).unwrap();
        assert_eq!(q.int("limit", 20, 1, 100).unwrap(), 5);
        assert!(q.int("cursor", 1, 1, 2).is_err());
        assert!(QueryParams::parse(Some("limit=1&limit=2"), &["limit"]).is_err());
        assert!(QueryParams::parse(Some("x=1"), &["limit"]).is_err());
    }
}
