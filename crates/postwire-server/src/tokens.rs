//! API tokens: created once, shown once, stored only as a hash.
//!
//! A token is `pw_` followed by 32 random bytes in base64url (43 characters). The
//! database keeps its SHA-256 hash, never the token, so a leaked database file does not
//! leak working tokens; a request's token is hashed and looked up by that hash. Each
//! token carries a set of [`Scope`]s and a selection of workspaces it may use.
//! `postwire token create` is the way to make one; the server only reads them.

use base64::Engine as _;
use postwire_core::Timestamp;
use rusqlite::{OptionalExtension, params};
use sha2::{Digest, Sha256};

use crate::db::{DbError, ServerDb};
use crate::errors::ApiError;
pub use crate::scope::Scope;

/// Why a token operation failed. The API turns it into an [`ApiError`]
/// with the same code (`From<TokenError> for ApiError`); the `postwire token` commands
/// print it.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The new token's fields are wrong (`invalid_request`), every problem listed.
    #[error("invalid request: {}", .0.join("; "))]
    Invalid(Vec<String>),
    /// No such token (`not_found`).
    #[error("{0}")]
    NotFound(String),
    /// The token table could not be read or written (`internal_error`).
    #[error(transparent)]
    Database(#[from] DbError),
    /// No secure random source (`internal_error`).
    #[error("no secure random source is available")]
    NoRandomness,
}

impl From<TokenError> for ApiError {
    fn from(e: TokenError) -> ApiError {
        match e {
            TokenError::Invalid(problems) => ApiError::Invalid(problems),
            TokenError::NotFound(message) => ApiError::NotFound(message),
            TokenError::Database(e) => ApiError::from(e),
            TokenError::NoRandomness => ApiError::Internal("no secure random source is available".into()),
        }
    }
}

impl TokenError {
    /// The stable error code an API caller gets for it.
    pub fn code(&self) -> &'static str {
        match self {
            TokenError::Invalid(_) => "invalid_request",
            TokenError::NotFound(_) => "not_found",
            TokenError::Database(_) | TokenError::NoRandomness => "internal_error",
        }
    }
}

/// What every API token starts with.
pub const TOKEN_PREFIX: &str = "pw_";
/// Longest bearer value looked up at all.
const MAX_TOKEN_LEN: usize = 256;
/// Most workspaces in one token's selection.
pub const MAX_TOKEN_WORKSPACES: usize = 100;

/// A stored token (without the token itself, which is never stored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiToken {
    /// Token identifier, `tok_…`, safe to show and log.
    pub id: String,
    /// A label.
    pub name: String,
    /// What it may do.
    pub scopes: Vec<Scope>,
    /// The workspaces it may use.
    pub workspaces: Vec<String>,
    /// When it was made.
    pub created_at: Timestamp,
    /// When it was revoked, if it was.
    pub revoked_at: Option<Timestamp>,
}

impl ApiToken {
    /// Whether the token holds `scope` (or one that implies it).
    pub fn has_scope(&self, scope: Scope) -> bool {
        self.scopes.iter().any(|s| s.grants(scope))
    }

    /// Whether `workspace_id` is in the token's selection.
    pub fn may_use(&self, workspace_id: &str) -> bool {
        self.workspaces.iter().any(|w| w == workspace_id)
    }
}

/// What to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewToken {
    /// A label (may be empty).
    pub name: String,
    /// At least one scope.
    pub scopes: Vec<Scope>,
    /// At least one workspace id.
    pub workspaces: Vec<String>,
}

/// A freshly created token: the only time the token value exists outside the client.
#[derive(Clone, PartialEq, Eq)]
pub struct CreatedToken {
    /// The stored record.
    pub record: ApiToken,
    /// The bearer value, `pw_…`. Show it once; never log it.
    pub token: String,
}

impl std::fmt::Debug for CreatedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreatedToken")
            .field("record", &self.record)
            .field("token", &"pw_…")
            .finish()
    }
}

/// The token table. Cheap to clone.
#[derive(Debug, Clone)]
pub struct TokenStore {
    db: ServerDb,
}

/// SHA-256 of a bearer value: what is stored and looked up.
pub fn token_hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn random_bytes<const N: usize>() -> Result<[u8; N], TokenError> {
    let mut b = [0u8; N];
    getrandom::fill(&mut b).map_err(|_| TokenError::NoRandomness)?;
    Ok(b)
}

fn ids_to_json(ids: &[String]) -> String {
    serde_json::to_string(ids).unwrap_or_else(|_| "[]".to_owned())
}

fn row_to_token(r: &rusqlite::Row<'_>) -> rusqlite::Result<ApiToken> {
    let scopes: String = r.get(2)?;
    let workspaces: String = r.get(3)?;
    let scopes: Vec<String> = serde_json::from_str(&scopes).unwrap_or_default();
    Ok(ApiToken {
        id: r.get(0)?,
        name: r.get(1)?,
        // An unknown scope in the table (written by a newer version) grants nothing.
        scopes: scopes.iter().filter_map(|s| s.parse().ok()).collect(),
        workspaces: serde_json::from_str(&workspaces).unwrap_or_default(),
        created_at: Timestamp::from_unix_millis(r.get(4)?),
        revoked_at: r.get::<_, Option<i64>>(5)?.map(Timestamp::from_unix_millis),
    })
}

/// [`row_to_token`] for a PostgreSQL row (same columns).
fn pg_row_to_token(r: &tokio_postgres::Row) -> ApiToken {
    let scopes: Vec<String> = serde_json::from_str(r.get::<_, &str>(2)).unwrap_or_default();
    ApiToken {
        id: r.get(0),
        name: r.get(1),
        scopes: scopes.iter().filter_map(|s| s.parse().ok()).collect(),
        workspaces: serde_json::from_str(r.get::<_, &str>(3)).unwrap_or_default(),
        created_at: Timestamp::from_unix_millis(r.get(4)),
        revoked_at: r.get::<_, Option<i64>>(5).map(Timestamp::from_unix_millis),
    }
}

const COLUMNS: &str = "id, name, scopes, workspaces, created_at, revoked_at";

impl TokenStore {
    /// The tokens of `db`.
    pub fn new(db: ServerDb) -> TokenStore {
        TokenStore { db }
    }

    /// Creates a token. Fails with `invalid_request` when there is no scope or no
    /// workspace, or a workspace id is empty or too long.
    pub async fn create(&self, new: NewToken, now: Timestamp) -> Result<CreatedToken, TokenError> {
        let mut problems = Vec::new();
        if new.scopes.is_empty() {
            problems.push("a token needs at least one scope (webhooks:read or webhooks:write)".to_owned());
        }
        if new.workspaces.is_empty() {
            problems.push("a token needs at least one workspace".to_owned());
        }
        if new.workspaces.len() > MAX_TOKEN_WORKSPACES {
            problems.push(format!("a token may select at most {MAX_TOKEN_WORKSPACES} workspaces"));
        }
        if new
            .workspaces
            .iter()
            .any(|w| crate::validation::check_id_param("workspace", w).is_err())
        {
            problems.push("workspace ids must be 1 to 200 characters without control characters".to_owned());
        }
        if new.name.chars().count() > 200 || new.name.chars().any(char::is_control) {
            problems.push("the name must be at most 200 characters without control characters".to_owned());
        }
        if !problems.is_empty() {
            return Err(TokenError::Invalid(problems));
        }
        let mut scopes = new.scopes;
        scopes.sort();
        scopes.dedup();
        let mut workspaces: Vec<String> = Vec::with_capacity(new.workspaces.len());
        for w in new.workspaces {
            if !workspaces.contains(&w) {
                workspaces.push(w);
            }
        }
        let token = format!(
            "{TOKEN_PREFIX}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random_bytes::<32>()?)
        );
        let id = format!(
            "tok_{}",
            random_bytes::<8>()?
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        let record = ApiToken {
            id,
            name: new.name,
            scopes,
            workspaces,
            created_at: now,
            revoked_at: None,
        };
        let hash = token_hash(&token);
        let r = record.clone();
        if self.db.is_postgres() {
            let scopes: Vec<String> = r.scopes.iter().map(|s| s.as_str().to_owned()).collect();
            let row = (
                r.id,
                r.name,
                hash.to_vec(),
                ids_to_json(&scopes),
                ids_to_json(&r.workspaces),
                r.created_at.unix_millis(),
            );
            self.db
                .pg_run(move |c| {
                    let row = row.clone();
                    Box::pin(async move {
                        c.execute(
                            "INSERT INTO server_api_tokens (id, name, hash, scopes, workspaces, created_at)
                             VALUES ($1, $2, $3, $4, $5, $6)",
                            &[&row.0, &row.1, &row.2, &row.3, &row.4, &row.5],
                        )
                        .await
                    })
                })
                .await?;
            return Ok(CreatedToken { record, token });
        }
        self.db
            .run(move |c| {
                let scopes: Vec<String> = r.scopes.iter().map(|s| s.as_str().to_owned()).collect();
                c.execute(
                    "INSERT INTO server_api_tokens (id, name, hash, scopes, workspaces, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![r.id, r.name, &hash[..], ids_to_json(&scopes), ids_to_json(&r.workspaces), r.created_at.unix_millis()],
                )
            })
            .await?;
        Ok(CreatedToken { record, token })
    }

    /// The live (not revoked) token with this bearer value, if any.
    pub async fn authenticate(&self, bearer: &str) -> Result<Option<ApiToken>, TokenError> {
        if !bearer.starts_with(TOKEN_PREFIX) || bearer.len() > MAX_TOKEN_LEN {
            return Ok(None);
        }
        let hash = token_hash(bearer);
        if self.db.is_postgres() {
            return self
                .db
                .pg_run(move |c| {
                    Box::pin(async move {
                        let st = c
                            .prepare_cached(&format!(
                                "SELECT {COLUMNS} FROM server_api_tokens WHERE hash = $1 AND revoked_at IS NULL"
                            ))
                            .await?;
                        Ok(c.query_opt(&st, &[&&hash[..]]).await?.map(|r| pg_row_to_token(&r)))
                    })
                })
                .await
                .map_err(TokenError::from);
        }
        self.db
            .run(move |c| {
                c.query_row(
                    &format!("SELECT {COLUMNS} FROM server_api_tokens WHERE hash = ?1 AND revoked_at IS NULL"),
                    params![&hash[..]],
                    row_to_token,
                )
                .optional()
            })
            .await
            .map_err(TokenError::from)
    }

    /// Every token, oldest first (revoked ones included).
    pub async fn list(&self) -> Result<Vec<ApiToken>, TokenError> {
        if self.db.is_postgres() {
            return self
                .db
                .pg_run(|c| {
                    Box::pin(async move {
                        let rows = c
                            .query(
                                &format!("SELECT {COLUMNS} FROM server_api_tokens ORDER BY created_at, id"),
                                &[],
                            )
                            .await?;
                        Ok(rows.iter().map(pg_row_to_token).collect())
                    })
                })
                .await
                .map_err(TokenError::from);
        }
        self.db
            .run(|c| {
                let mut st = c.prepare(&format!(
                    "SELECT {COLUMNS} FROM server_api_tokens ORDER BY created_at, id"
                ))?;
                let rows = st.query_map([], row_to_token)?;
                rows.collect()
            })
            .await
            .map_err(TokenError::from)
    }

    /// Revokes a token by id; `not_found` when there is none, and revoking twice is fine.
    pub async fn revoke(&self, id: &str, now: Timestamp) -> Result<(), TokenError> {
        let id_owned = id.to_owned();
        let n = if self.db.is_postgres() {
            let id_owned = id_owned.clone();
            self.db
                .pg_run(move |c| {
                    let id = id_owned.clone();
                    Box::pin(async move {
                        c.execute(
                            "UPDATE server_api_tokens SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1",
                            &[&id, &now.unix_millis()],
                        )
                        .await
                    })
                })
                .await? as usize
        } else {
            self.run_revoke(id_owned, now).await?
        };
        if n == 0 {
            let shown: String = id.chars().take(64).collect();
            return Err(TokenError::NotFound(format!("token `{shown}` not found")));
        }
        Ok(())
    }

    async fn run_revoke(&self, id_owned: String, now: Timestamp) -> Result<usize, TokenError> {
        self.db
            .run(move |c| {
                c.execute(
                    "UPDATE server_api_tokens SET revoked_at = COALESCE(revoked_at, ?2) WHERE id = ?1",
                    params![id_owned, now.unix_millis()],
                )
            })
            .await
            .map_err(TokenError::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_implies_read_but_not_the_reverse() {
        assert!(Scope::WebhooksWrite.grants(Scope::WebhooksRead));
        assert!(!Scope::WebhooksRead.grants(Scope::WebhooksWrite));
        assert_eq!("webhooks:write".parse::<Scope>().unwrap(), Scope::WebhooksWrite);
        assert_eq!("admin".parse::<Scope>().unwrap_err().code(), "invalid_request");
    }

    #[tokio::test]
    async fn stores_only_the_hash_and_authenticates_until_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let store = TokenStore::new(ServerDb::open(&path).unwrap());
        let now = Timestamp::from_unix_millis(1_800_000_000_000);
        let created = store
            .create(
                NewToken {
                    name: "ci".into(),
                    scopes: vec![Scope::WebhooksRead],
                    workspaces: vec!["ws".into()],
                },
                now,
            )
            .await
            .unwrap();
        assert!(created.token.starts_with("pw_") && created.token.len() == 46);
        assert!(!format!("{created:?}").contains(&created.token[3..]));
        let raw = std::fs::read(&path).unwrap();
        let wal = std::fs::read(path.with_extension("db-wal")).unwrap_or_default();
        for bytes in [&raw, &wal] {
            assert!(
                !bytes
                    .windows(created.token.len())
                    .any(|w| w == created.token.as_bytes())
            );
        }
        let found = store.authenticate(&created.token).await.unwrap().unwrap();
        assert_eq!(found, created.record);
        assert!(store.authenticate("pw_wrong").await.unwrap().is_none());
        store.revoke(&created.record.id, now).await.unwrap();
        assert!(store.authenticate(&created.token).await.unwrap().is_none());
        assert_eq!(store.revoke("tok_nope", now).await.unwrap_err().code(), "not_found");
        let empty = NewToken {
            name: String::new(),
            scopes: vec![],
            workspaces: vec![],
        };
        assert!(matches!(store.create(empty, now).await.unwrap_err(), TokenError::Invalid(m) if m.len() == 2));
    }
}
