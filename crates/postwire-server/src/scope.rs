//! The scopes of API tokens (`webhooks:read`, `webhooks:write`) and how one grants
//! another. Its own module because both the token table ([`crate::tokens`]) and the
//! error bodies ([`crate::errors`]: `insufficient_scope` names the scope) speak of
//! scopes, and neither should depend on the other for it.

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// Read subscriptions, deliveries and post events (`webhooks:read`).
    WebhooksRead,
    /// Create, change, pause, test and delete subscriptions and rotate their secrets
    /// (`webhooks:write`). Implies `webhooks:read`.
    WebhooksWrite,
}

impl Scope {
    /// Every scope.
    pub const ALL: [Scope; 2] = [Scope::WebhooksRead, Scope::WebhooksWrite];

    /// The wire form, e.g. `webhooks:write`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Scope::WebhooksRead => "webhooks:read",
            Scope::WebhooksWrite => "webhooks:write",
        }
    }

    /// Whether holding `self` grants `needed`.
    pub fn grants(self, needed: Scope) -> bool {
        self == needed || (self == Scope::WebhooksWrite && needed == Scope::WebhooksRead)
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Scope {
    type Err = UnknownScope;
    fn from_str(s: &str) -> Result<Self, UnknownScope> {
        Scope::ALL
            .into_iter()
            .find(|sc| sc.as_str() == s)
            .ok_or_else(|| UnknownScope(s.chars().take(40).collect()))
    }
}

/// A scope name that is not one of [`Scope::ALL`] (the first 40 characters of it).
/// An API caller gets it as `invalid_request` (`From<UnknownScope> for ApiError`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scope `{0}`; expected webhooks:read or webhooks:write")]
pub struct UnknownScope(String);

impl UnknownScope {
    /// The stable error code an API caller sees: `invalid_request`.
    pub fn code(&self) -> &'static str {
        "invalid_request"
    }
}
