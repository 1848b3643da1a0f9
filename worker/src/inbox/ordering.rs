//! Which deliveries the inbox keeps in order: those with the same ordering key, the one the
//! sender orders by (`postwire_core::OrderingKey`: the post for post events, the account for
//! account events), written `post:<id>` or `account:<id>`; and which post and account a
//! delivery is about ([`subjects`]), the subjects an erasure names.

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

/// The post and the connected account a delivery's event is about, by the sender's rule
/// (`postwire_core::EventData::account_id`: a post event is about its post and the post's
/// account). Both `None` for a body that is not a postwire event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subjects {
    /// The post's id.
    pub post: Option<String>,
    /// The connected account's id.
    pub account: Option<String>,
}

/// The [`Subjects`] of a body, whatever `ORDERING` is.
pub fn subjects(body: &[u8]) -> Subjects {
    let Ok(event) = postwire_core::Event::from_json(body) else {
        return Subjects::default();
    };
    Subjects {
        post: event.data().post().map(|p| p.id().to_owned()),
        account: event.data().account_id().map(str::to_owned),
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

    #[test]
    fn a_post_event_is_about_its_post_and_account_an_account_event_about_its_account() {
        let post = event("post.scheduled", POST);
        assert_eq!(
            subjects(post.as_bytes()),
            Subjects {
                post: Some("p1".into()),
                account: Some("acc1".into())
            }
        );
        let account = event(
            "integration.disconnected",
            r#"{"integration":{"id":"acc2","name":"A","providerIdentifier":"x"},"reason":"reconnect_required"}"#,
        );
        assert_eq!(
            subjects(account.as_bytes()),
            Subjects {
                post: None,
                account: Some("acc2".into())
            }
        );
        assert_eq!(subjects(b"{}"), Subjects::default());
    }
}
