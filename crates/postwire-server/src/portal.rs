//! Portal sessions: the magic links that log a browser into one workspace's Settings
//! screen, and the sessions they open. Stored only as hashes, next to the API tokens.
//!
//! A portal session starts as a **link** (`pwl_` + 32 random bytes, base64url), made by
//! `POST /public/v1/workspaces/{id}/portal-sessions` or `postwire portal link`. It is
//! short-lived ([`DEFAULT_LINK_TTL`]) and single-use: opening it only shows a sign-in
//! button ([`PortalStore::link_is_live`] reads, so link previews spend nothing), whose
//! `POST` exchanges it ([`PortalStore::exchange`]): that atomically marks it used and
//! binds a **session token**
//! (`pws_` + 32 random bytes) to the same row, which the browser keeps as a
//! `Secure; HttpOnly; SameSite=Strict` cookie until it expires
//! ([`DEFAULT_SESSION_TTL`]). Both tokens are stored as SHA-256 hashes only (like API
//! tokens in [`crate::tokens`]), so a leaked database opens no session. A session is
//! bound to its workspace and nothing else; revoking it ([`PortalStore::revoke`], by
//! its `ps_…` id, or the page's sign-out) ends the link and the session at once.
//!
//! The CSRF token of a session ([`csrf_token`]) is a SHA-256 of the session token
//! under a fixed domain prefix: unguessable without the cookie, which a cross-site page
//! never sees. Forms carry it in a hidden field; it is compared in constant time.

use base64::Engine as _;
use postwire_core::Timestamp;
use rusqlite::{OptionalExtension, params};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::db::ServerDb;
use crate::errors::ApiError;
use crate::tokens::token_hash;

/// What every magic link token starts with.
pub const LINK_PREFIX: &str = "pwl_";
/// What every session token starts with.
pub const SESSION_PREFIX: &str = "pws_";
/// Default life of an unused magic link: 5 minutes.
pub const DEFAULT_LINK_TTL_SECS: u64 = 5 * 60;
/// Default life of a session: 1 hour.
pub const DEFAULT_SESSION_TTL_SECS: u64 = 60 * 60;
/// [`DEFAULT_LINK_TTL_SECS`] as a duration.
pub const DEFAULT_LINK_TTL: std::time::Duration = std::time::Duration::from_secs(DEFAULT_LINK_TTL_SECS);
/// [`DEFAULT_SESSION_TTL_SECS`] as a duration.
pub const DEFAULT_SESSION_TTL: std::time::Duration = std::time::Duration::from_secs(DEFAULT_SESSION_TTL_SECS);
/// Longest token looked up at all.
const MAX_TOKEN_LEN: usize = 100;

/// A new magic link: the only time its token exists outside the browser.
#[derive(Clone, PartialEq, Eq)]
pub struct NewLink {
    /// The portal session's id, `ps_…` (for revocation; safe to log).
    pub id: String,
    /// The workspace it opens.
    pub workspace_id: String,
    /// The link token, `pwl_…`: goes into the URL, never into a log.
    pub token: String,
    /// When the link stops working if unused.
    pub expires_at: Timestamp,
}

impl std::fmt::Debug for NewLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewLink")
            .field("id", &self.id)
            .field("workspace_id", &self.workspace_id)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// A session opened from a link.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenedSession {
    /// The portal session's id.
    pub id: String,
    /// The workspace it is bound to.
    pub workspace_id: String,
    /// The session token (the cookie's value).
    pub token: String,
    /// When it ends.
    pub expires_at: Timestamp,
}

impl std::fmt::Debug for OpenedSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenedSession")
            .field("id", &self.id)
            .field("workspace_id", &self.workspace_id)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// A live session, as a request presents it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortalSession {
    /// The portal session's id.
    pub id: String,
    /// The only workspace it may see and change.
    pub workspace_id: String,
    /// When it ends.
    pub expires_at: Timestamp,
    /// Its CSRF token ([`csrf_token`]), for the forms of the page.
    pub csrf: String,
}

/// The portal sessions table. Cheap to clone.
#[derive(Debug, Clone)]
pub struct PortalStore {
    db: ServerDb,
    link_ttl_ms: i64,
    session_ttl_ms: i64,
    public_url: Option<String>,
}

fn random_token(prefix: &str) -> Result<String, ApiError> {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).map_err(|_| ApiError::Internal("no secure random source is available".into()))?;
    Ok(format!(
        "{prefix}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
    ))
}

fn random_id() -> Result<String, ApiError> {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).map_err(|_| ApiError::Internal("no secure random source is available".into()))?;
    Ok(format!(
        "ps_{}",
        b.iter().map(|x| format!("{x:02x}")).collect::<String>()
    ))
}

/// Whether `id` has the form of a portal session id: `ps_` and 16 lowercase hex digits.
pub fn is_session_id(id: &str) -> bool {
    id.strip_prefix("ps_")
        .is_some_and(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}

/// The CSRF token of the session whose token is `session_token`.
pub fn csrf_token(session_token: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"postwire portal csrf v1\0");
    h.update(session_token.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(h.finalize())
}

/// Whether `given` is the CSRF token of `session`, compared in constant time.
pub fn csrf_matches(session: &PortalSession, given: &str) -> bool {
    session.csrf.as_bytes().ct_eq(given.as_bytes()).into()
}

fn ttl_ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 4).max(1)
}

impl PortalStore {
    /// The portal sessions of `db`, with link and session lifetimes.
    pub fn new(db: ServerDb, link_ttl: std::time::Duration, session_ttl: std::time::Duration) -> PortalStore {
        PortalStore {
            db,
            link_ttl_ms: ttl_ms(link_ttl),
            session_ttl_ms: ttl_ms(session_ttl),
            public_url: None,
        }
    }

    /// Builds links on `url` (e.g. `https://webhooks.example.com`) instead of the
    /// request's `Host`.
    pub fn with_public_url(mut self, url: Option<String>) -> PortalStore {
        self.public_url = url;
        self
    }

    /// The configured public URL of the server, if any.
    pub fn public_url(&self) -> Option<&str> {
        self.public_url.as_deref()
    }

    /// How long a session lasts, in seconds (the cookie's `Max-Age`).
    pub fn session_ttl_secs(&self) -> i64 {
        self.session_ttl_ms / 1000
    }

    /// Makes a magic link to `workspace_id`'s screen (the caller checks the workspace).
    pub async fn create_link(&self, workspace_id: &str, now: Timestamp) -> Result<NewLink, ApiError> {
        crate::validation::check_id_param("workspaceId", workspace_id)?;
        let link = NewLink {
            id: random_id()?,
            workspace_id: workspace_id.to_owned(),
            token: random_token(LINK_PREFIX)?,
            expires_at: now.add_millis(self.link_ttl_ms),
        };
        let (id, ws, hash, created, expires) = (
            link.id.clone(),
            link.workspace_id.clone(),
            token_hash(&link.token),
            now.unix_millis(),
            link.expires_at.unix_millis(),
        );
        if self.db.is_postgres() {
            let row = (id, ws, hash.to_vec(), expires, created);
            self.db
                .pg_run(move |c| {
                    let row = row.clone();
                    Box::pin(async move {
                        c.execute(
                            "DELETE FROM server_portal_sessions
                             WHERE GREATEST(link_expires_at, COALESCE(session_expires_at, 0)) < $1",
                            &[&(row.4 - 86_400_000)],
                        )
                        .await?;
                        c.execute(
                            "INSERT INTO server_portal_sessions (id, workspace_id, link_hash, link_expires_at, created_at)
                             VALUES ($1, $2, $3, $4, $5)",
                            &[&row.0, &row.1, &row.2, &row.3, &row.4],
                        )
                        .await
                    })
                })
                .await?;
            return Ok(link);
        }
        self.db
            .run(move |c| {
                // Links and sessions that ended a day ago are of no use to anyone.
                c.execute(
                    "DELETE FROM server_portal_sessions WHERE MAX(link_expires_at, COALESCE(session_expires_at, 0)) < ?1",
                    params![created - 86_400_000],
                )?;
                c.execute(
                    "INSERT INTO server_portal_sessions (id, workspace_id, link_hash, link_expires_at, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![id, ws, &hash[..], expires, created],
                )
            })
            .await?;
        Ok(link)
    }

    /// Exchanges a link token for a session, once: `None` when the link is unknown,
    /// used, expired or revoked.
    pub async fn exchange(&self, link_token: &str, now: Timestamp) -> Result<Option<OpenedSession>, ApiError> {
        if !link_token.starts_with(LINK_PREFIX) || link_token.len() > MAX_TOKEN_LEN {
            return Ok(None);
        }
        let token = random_token(SESSION_PREFIX)?;
        let (link_hash, session_hash) = (token_hash(link_token), token_hash(&token));
        let now_ms = now.unix_millis();
        let expires = now_ms.saturating_add(self.session_ttl_ms);
        let row: Option<(String, String)> = if self.db.is_postgres() {
            let (link_hash, session_hash) = (link_hash.to_vec(), session_hash.to_vec());
            self.db
                .pg_run(move |c| {
                    let (link_hash, session_hash) = (link_hash.clone(), session_hash.clone());
                    Box::pin(async move {
                        let row = c
                            .query_opt(
                                "UPDATE server_portal_sessions SET session_hash = $2, session_expires_at = $3
                                 WHERE link_hash = $1 AND session_hash IS NULL AND revoked_at IS NULL
                                   AND link_expires_at > $4
                                 RETURNING id, workspace_id",
                                &[&link_hash, &session_hash, &expires, &now_ms],
                            )
                            .await?;
                        row.map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).transpose()
                    })
                })
                .await?
        } else {
            self.db
                .run(move |c| {
                    c.query_row(
                        "UPDATE server_portal_sessions SET session_hash = ?2, session_expires_at = ?3
                     WHERE link_hash = ?1 AND session_hash IS NULL AND revoked_at IS NULL AND link_expires_at > ?4
                     RETURNING id, workspace_id",
                        params![&link_hash[..], &session_hash[..], expires, now_ms],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .optional()
                })
                .await?
        };
        Ok(row.map(|(id, workspace_id)| OpenedSession {
            id,
            workspace_id,
            token,
            expires_at: Timestamp::from_unix_millis(expires),
        }))
    }

    /// Whether `link_token` would open a session now (unused, unexpired, not revoked),
    /// without using it up.
    pub async fn link_is_live(&self, link_token: &str, now: Timestamp) -> Result<bool, ApiError> {
        if !link_token.starts_with(LINK_PREFIX) || link_token.len() > MAX_TOKEN_LEN {
            return Ok(false);
        }
        let hash = token_hash(link_token);
        let now_ms = now.unix_millis();
        if self.db.is_postgres() {
            let hash = hash.to_vec();
            return self
                .db
                .pg_run(move |c| {
                    let hash = hash.clone();
                    Box::pin(async move {
                        let row = c
                            .query_one(
                                "SELECT EXISTS (SELECT 1 FROM server_portal_sessions WHERE link_hash = $1
                                     AND session_hash IS NULL AND revoked_at IS NULL AND link_expires_at > $2)",
                                &[&hash, &now_ms],
                            )
                            .await?;
                        row.try_get(0)
                    })
                })
                .await
                .map_err(ApiError::from);
        }
        self.db
            .run(move |c| {
                c.query_row(
                    "SELECT EXISTS (SELECT 1 FROM server_portal_sessions WHERE link_hash = ?1
                         AND session_hash IS NULL AND revoked_at IS NULL AND link_expires_at > ?2)",
                    params![&hash[..], now_ms],
                    |r| r.get(0),
                )
            })
            .await
            .map_err(ApiError::from)
    }

    /// The live session with this token, if any.
    pub async fn session(&self, session_token: &str, now: Timestamp) -> Result<Option<PortalSession>, ApiError> {
        if !session_token.starts_with(SESSION_PREFIX) || session_token.len() > MAX_TOKEN_LEN {
            return Ok(None);
        }
        let hash = token_hash(session_token);
        let now_ms = now.unix_millis();
        let row: Option<(String, String, i64)> = if self.db.is_postgres() {
            let hash = hash.to_vec();
            self.db
                .pg_run(move |c| {
                    let hash = hash.clone();
                    Box::pin(async move {
                        let row = c
                            .query_opt(
                                "SELECT id, workspace_id, session_expires_at FROM server_portal_sessions
                                 WHERE session_hash = $1 AND revoked_at IS NULL AND session_expires_at > $2",
                                &[&hash, &now_ms],
                            )
                            .await?;
                        row.map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
                            .transpose()
                    })
                })
                .await?
        } else {
            self.db
                .run(move |c| {
                    c.query_row(
                        "SELECT id, workspace_id, session_expires_at FROM server_portal_sessions
                         WHERE session_hash = ?1 AND revoked_at IS NULL AND session_expires_at > ?2",
                        params![&hash[..], now_ms],
                        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                    )
                    .optional()
                })
                .await?
        };
        Ok(row.map(|(id, workspace_id, expires)| PortalSession {
            id,
            workspace_id,
            expires_at: Timestamp::from_unix_millis(expires),
            csrf: csrf_token(session_token),
        }))
    }

    /// Revokes portal session `id` of `workspace_id` (its link and its session):
    /// `not_found` when there is none; revoking twice is fine.
    pub async fn revoke(&self, workspace_id: &str, id: &str, now: Timestamp) -> Result<(), ApiError> {
        let (ws, id_owned) = (workspace_id.to_owned(), id.to_owned());
        let n = if self.db.is_postgres() {
            self.db
                .pg_run(move |c| {
                    let (id, ws) = (id_owned.clone(), ws.clone());
                    Box::pin(async move {
                        let n = c
                            .execute(
                                "UPDATE server_portal_sessions SET revoked_at = COALESCE(revoked_at, $3)
                                 WHERE id = $1 AND workspace_id = $2",
                                &[&id, &ws, &now.unix_millis()],
                            )
                            .await?;
                        Ok(n as usize)
                    })
                })
                .await?
        } else {
            self.db
                .run(move |c| {
                    c.execute(
                        "UPDATE server_portal_sessions SET revoked_at = COALESCE(revoked_at, ?3)
                         WHERE id = ?1 AND workspace_id = ?2",
                        params![id_owned, ws, now.unix_millis()],
                    )
                })
                .await?
        };
        if n == 0 {
            let shown: String = id.chars().take(64).collect();
            return Err(ApiError::NotFound(format!("portal session `{shown}` not found")));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_link_opens_one_session_once_before_it_expires_and_revocation_ends_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.db");
        let store = PortalStore::new(ServerDb::open(&path).unwrap(), DEFAULT_LINK_TTL, DEFAULT_SESSION_TTL);
        let t0 = Timestamp::from_unix_millis(1_800_000_000_000);
        let link = store.create_link("ws_a", t0).await.unwrap();
        assert!(is_session_id(&link.id) && !is_session_id("ps_x") && !is_session_id("ps_0123456789ABCDEF"));
        assert!(link.token.starts_with("pwl_") && !format!("{link:?}").contains(&link.token[4..]));
        assert!(
            store.link_is_live(&link.token, t0).await.unwrap(),
            "looking uses nothing up"
        );
        assert!(store.link_is_live(&link.token, t0).await.unwrap());
        let opened = store.exchange(&link.token, t0.add_millis(1000)).await.unwrap().unwrap();
        assert!(!store.link_is_live(&link.token, t0.add_millis(1000)).await.unwrap());
        assert_eq!(opened.workspace_id, "ws_a");
        assert!(!format!("{opened:?}").contains(&opened.token[4..]));
        assert!(
            store
                .exchange(&link.token, t0.add_millis(2000))
                .await
                .unwrap()
                .is_none(),
            "single use"
        );
        let s = store
            .session(&opened.token, t0.add_millis(3000))
            .await
            .unwrap()
            .unwrap();
        assert_eq!((s.id.as_str(), s.workspace_id.as_str()), (link.id.as_str(), "ws_a"));
        assert!(csrf_matches(&s, &csrf_token(&opened.token)) && !csrf_matches(&s, "x"));
        let ended = t0.add_millis(1000 + DEFAULT_SESSION_TTL_SECS as i64 * 1000);
        assert!(store.session(&opened.token, ended).await.unwrap().is_none(), "expired");

        // Only hashes are stored.
        let raw = [
            std::fs::read(&path).unwrap(),
            std::fs::read(path.with_extension("db-wal")).unwrap_or_default(),
        ]
        .concat();
        for t in [&link.token, &opened.token] {
            assert!(!raw.windows(t.len()).any(|w| w == t.as_bytes()));
        }

        // An expired link is refused; a revoked session stops at once.
        let late = store.create_link("ws_a", t0).await.unwrap();
        let after = t0.add_millis(DEFAULT_LINK_TTL_SECS as i64 * 1000);
        assert!(store.exchange(&late.token, after).await.unwrap().is_none());
        let other = store.create_link("ws_a", t0).await.unwrap();
        let o = store.exchange(&other.token, t0).await.unwrap().unwrap();
        assert!(store.session(&o.token, t0).await.unwrap().is_some());
        assert_eq!(
            store.revoke("ws_b", &other.id, t0).await.unwrap_err().code(),
            "not_found",
            "another workspace's session"
        );
        store.revoke("ws_a", &other.id, t0).await.unwrap();
        assert!(store.session(&o.token, t0).await.unwrap().is_none());
        assert!(store.exchange("pwl_nope", t0).await.unwrap().is_none());
        assert!(store.session("pw_x", t0).await.unwrap().is_none());
    }

    /// The same life of a link and its session on PostgreSQL (several API processes
    /// share these rows there).
    #[tokio::test]
    async fn on_postgresql_a_link_opens_one_session_once_and_revocation_ends_it() {
        let pg = postwire_testpg::database();
        let db = ServerDb::connect_postgres(pg.url()).await.unwrap();
        let store = PortalStore::new(db, DEFAULT_LINK_TTL, DEFAULT_SESSION_TTL);
        let t0 = Timestamp::from_unix_millis(1_800_000_000_000);
        let link = store.create_link("ws_a", t0).await.unwrap();
        assert!(store.link_is_live(&link.token, t0).await.unwrap());
        let opened = store.exchange(&link.token, t0.add_millis(1000)).await.unwrap().unwrap();
        assert_eq!(opened.workspace_id, "ws_a");
        assert!(!store.link_is_live(&link.token, t0.add_millis(1000)).await.unwrap());
        assert!(
            store
                .exchange(&link.token, t0.add_millis(2000))
                .await
                .unwrap()
                .is_none(),
            "single use"
        );
        let s = store
            .session(&opened.token, t0.add_millis(3000))
            .await
            .unwrap()
            .unwrap();
        assert_eq!((s.id.as_str(), s.workspace_id.as_str()), (link.id.as_str(), "ws_a"));
        let ended = t0.add_millis(1000 + DEFAULT_SESSION_TTL_SECS as i64 * 1000);
        assert!(store.session(&opened.token, ended).await.unwrap().is_none(), "expired");
        let late = store.create_link("ws_a", t0).await.unwrap();
        let after = t0.add_millis(DEFAULT_LINK_TTL_SECS as i64 * 1000);
        assert!(store.exchange(&late.token, after).await.unwrap().is_none());
        assert_eq!(
            store.revoke("ws_b", &link.id, t0).await.unwrap_err().code(),
            "not_found"
        );
        store.revoke("ws_a", &link.id, t0).await.unwrap();
        assert!(
            store
                .session(&opened.token, t0.add_millis(3000))
                .await
                .unwrap()
                .is_none()
        );
    }
}
