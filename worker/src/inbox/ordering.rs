//! Which deliveries the inbox keeps in order: those with the same ordering key, the one the
//! sender orders by (`postwire_core::OrderingKey`: the post for post events, the account for
//! account events), written `post:<id>` or `account:<id>`.

use crate::config::Ordering;

/// The ordering key of a verified body, or `None` (delivered independently of the others)
/// with `ORDERING = "none"` or for an event that has no key.
///
/// ```
/// use postwire_worker::config::Ordering;
/// use postwire_worker::inbox::ordering::ordering_key;
/// assert_eq!(ordering_key(Ordering::None, b"{}"), None);
/// ```
pub fn ordering_key(ordering: Ordering, body: &[u8]) -> Option<String> {
    match ordering {
        Ordering::None => None,
        Ordering::Key => {
            let event = postwire_core::Event::from_json(body).ok()?;
            postwire_core::OrderingKey::of(&event).map(|k| k.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(t: &str, data: &str) -> String {
        format!(
            r#"{{"id":"msg_1","type":"{t}","createdAt":"2026-11-22T09:00:00.000Z","workspaceId":"ws1","data":{data}}}"#
        )
    }

    const POST: &str = r#"{"post":{"id":"p1","externalId":"e","group":"g","state":"QUEUE","publishDate":"2026-11-22T10:00:00.000Z","integration":{"id":"acc1","providerIdentifier":"x","name":"A"}}}"#;

    #[test]
    fn the_key_is_the_post_or_the_account() {
        let post = event("post.scheduled", POST);
        assert_eq!(ordering_key(Ordering::Key, post.as_bytes()).as_deref(), Some("post:p1"));
        let account = event(
            "integration.disconnected",
            r#"{"integration":{"id":"acc1","name":"A","providerIdentifier":"x"},"reason":"reconnect_required"}"#,
        );
        assert_eq!(
            ordering_key(Ordering::Key, account.as_bytes()).as_deref(),
            Some("account:acc1")
        );
        let test = event("webhook.test", r#"{"message":"hi"}"#);
        assert_eq!(ordering_key(Ordering::Key, test.as_bytes()), None);
        assert_eq!(ordering_key(Ordering::None, post.as_bytes()), None);
        assert_eq!(ordering_key(Ordering::Key, b"not json"), None);
    }
}
