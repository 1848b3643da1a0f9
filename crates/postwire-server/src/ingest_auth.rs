//! The ingest token: the one shared secret that lets the platform call the internal
//! ingest API (`/internal/v1`, see [`crate::ingest`]). Kept only as its SHA-256 hash and
//! compared in constant time. A module of its own so the application state can hold it
//! without depending on the ingest handlers.

use std::sync::Arc;

use subtle::ConstantTimeEq;

use crate::errors::ApiError;
use crate::tokens::token_hash;

/// The ingest token, kept only as its hash.
pub struct IngestAuth {
    hash: [u8; 32],
}

impl std::fmt::Debug for IngestAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IngestAuth(…)")
    }
}

impl IngestAuth {
    /// Accepts `token` as the ingest token. Refuses tokens shorter than 16 characters.
    pub fn new(token: &str) -> Result<IngestAuth, ApiError> {
        if token.len() < 16 {
            return Err(ApiError::invalid(
                "the ingest token must be at least 16 characters long",
            ));
        }
        Ok(IngestAuth {
            hash: token_hash(token),
        })
    }

    /// Whether `candidate` is the ingest token (constant time).
    pub fn accepts(&self, candidate: &str) -> bool {
        bool::from(token_hash(candidate).ct_eq(&self.hash))
    }
}

/// Builds [`IngestAuth`] for a shared token; `None` when there is none.
pub fn auth_from(token: Option<&str>) -> Result<Option<Arc<IngestAuth>>, ApiError> {
    token.map(|t| IngestAuth::new(t).map(Arc::new)).transpose()
}
