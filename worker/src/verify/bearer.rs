//! The bearer tokens of the admin paths (`ADMIN_TOKEN` for inbox mode's admin API,
//! `LISTEN_TOKEN` for listen mode's socket): who may call them, compared in constant time
//! (a token of another length is refused without comparing bytes: the length is all that
//! can leak), and the `404` every refused request gets.

use std::fmt;

use subtle::ConstantTimeEq;

use crate::reply::{Reply, ReplyCode};

/// A bearer token (`ADMIN_TOKEN`, `LISTEN_TOKEN`). Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct AdminToken(String);

impl AdminToken {
    /// The token as configured (checked by the settings' parser).
    pub(crate) fn new(token: String) -> Self {
        AdminToken(token)
    }

    /// The token's bytes, for the constant-time comparison.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AdminToken(…)")
    }
}

/// Whether `authorization` (the request's header) carries the configured token. `false`
/// without a configured token.
pub fn authorized(token: Option<&AdminToken>, authorization: Option<&str>) -> bool {
    let (Some(token), Some(header)) = (token, authorization) else {
        return false;
    };
    let Some(given) = header.strip_prefix("Bearer ") else {
        return false;
    };
    let expected = token.as_bytes();
    given.len() == expected.len() && bool::from(given.as_bytes().ct_eq(expected))
}

/// `404 not_found`: what every admin path answers to an unauthorized request.
pub fn not_found() -> Reply {
    Reply::new(ReplyCode::NotFound, "no such path")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(value: &str) -> AdminToken {
        AdminToken::new(value.to_owned())
    }

    #[test]
    fn only_the_exact_bearer_token_passes() {
        let t = token("0123456789abcdef0123");
        assert!(authorized(Some(&t), Some("Bearer 0123456789abcdef0123")));
        for header in [
            None,
            Some(""),
            Some("Bearer "),
            Some("bearer 0123456789abcdef0123"),
            Some("0123456789abcdef0123"),
            Some("Bearer 0123456789abcdef0124"),
            Some("Bearer 0123456789abcdef012"),
            Some("Bearer 0123456789abcdef01234"),
        ] {
            assert!(!authorized(Some(&t), header), "{header:?}");
        }
        assert!(!authorized(None, Some("Bearer 0123456789abcdef0123")));
    }
}
