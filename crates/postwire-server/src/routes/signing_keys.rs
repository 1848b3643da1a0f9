//! A workspace's `v1a` signing keys (an extension of the spec, Standard Webhooks'
//! asymmetric scheme): list the public keys receivers verify with (and the URL of the
//! same keys as a published key set, [`super::key_sets`]), and rotate the key pair.
//!
//! Paths: the keys are a sub-resource of the workspace (`/signing-keys`), and rotation is
//! an action below their owner, as `…/webhooks/{webhookId}/rotate-secret` is for a
//! subscription's secret: `POST …/workspaces/{workspaceId}/rotate-signing-key`, no body,
//! 200 with the new public key and the end of the 24 h window in which the old key still
//! signs. Neither response ever carries a secret key.

use axum::Json;
use axum::extract::State;
use postwire_sender::SigningKeyInfo;

use crate::auth::Caller;
use crate::errors::{ApiError, ApiResult, CommonErrors, ErrorBody};
use crate::schemas::{RotatedSigningKey, SigningKeyList, SigningPublicKey};
use crate::state::AppState;
use crate::tokens::Scope;
use crate::validation::ApiPath;

fn shown(key: SigningKeyInfo) -> SigningPublicKey {
    SigningPublicKey {
        public_key: key.public_key.to_string(),
        created_at: key.created_at.to_string(),
        expires_at: key.expires_at.map(|t| t.to_string()),
    }
}

/// Lists the public keys that verify the workspace's `v1a` signatures (subscriptions
/// with `signing` `asymmetric` or `both`): the current key, then, during the 24 h after
/// a rotation, the previous one with its `expiresAt`. The key pair is made on first use,
/// so the list always has a current key. `keySetUrl` links to the same keys as a JSON
/// Web Key Set that needs no token (`getKeySet`), for receivers that fetch them.
#[utoipa::path(
    get,
    path = "/public/v1/workspaces/{workspaceId}/signing-keys",
    tag = "Signing keys",
    operation_id = "listSigningKeys",
    params(("workspaceId" = String, Path, description = "Workspace id.")),
    responses(
        (status = 200, description = "The public keys, current first.", body = SigningKeyList),
        (status = 401, description = "`unauthorized`.", body = ErrorBody),
        (status = 403, description = "`insufficient_scope` (needs `webhooks:read`) or `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such workspace (`not_found`).", body = ErrorBody),
        CommonErrors,
    ),
    security(("bearer" = ["webhooks:read"]))
)]
pub async fn list_signing_keys(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(workspace_id): ApiPath<String>,
) -> ApiResult<Json<SigningKeyList>> {
    caller.authorize(&state, Scope::WebhooksRead, &workspace_id).await?;
    let keys = state.sender.signing_keys(&workspace_id).await?;
    let key_set_id = state.sender.key_set_id(&workspace_id).await?;
    let path = super::key_sets::key_set_path(&key_set_id);
    let key_set_url = match state.portal.public_url() {
        Some(base) => format!("{}{path}", base.trim_end_matches('/')),
        None => path,
    };
    Ok(Json(SigningKeyList {
        data: keys.into_iter().map(shown).collect(),
        key_set_id,
        key_set_url,
    }))
}

/// Replaces the workspace's signing key pair. For the next 24 hours every `v1a` delivery
/// carries two `v1a` signatures, one by each key, and both public keys are listed, so
/// receivers can switch to the new key without losing a delivery. Rotating again within
/// the window drops the oldest key.
#[utoipa::path(
    post,
    path = "/public/v1/workspaces/{workspaceId}/rotate-signing-key",
    tag = "Signing keys",
    operation_id = "rotateSigningKey",
    params(("workspaceId" = String, Path, description = "Workspace id.")),
    responses(
        (status = 200, description = "The new public key, and when the old one stops signing.", body = RotatedSigningKey),
        (status = 401, description = "`unauthorized`.", body = ErrorBody),
        (status = 403, description = "`insufficient_scope` (needs `webhooks:write`) or `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such workspace (`not_found`).", body = ErrorBody),
        CommonErrors,
    ),
    security(("bearer" = ["webhooks:write"]))
)]
pub async fn rotate_signing_key(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(workspace_id): ApiPath<String>,
) -> ApiResult<Json<RotatedSigningKey>> {
    caller.authorize(&state, Scope::WebhooksWrite, &workspace_id).await?;
    let rotated = state.sender.rotate_signing_key(&workspace_id).await?;
    let mut keys = rotated.keys.into_iter();
    let (Some(new), Some(old)) = (keys.next(), keys.next()) else {
        return Err(ApiError::Internal("a rotation left fewer than two keys".into()));
    };
    tracing::info!(workspace_id = %workspace_id, token_id = %caller.0.id, "signing key rotated");
    Ok(Json(RotatedSigningKey {
        public_key: new.public_key.to_string(),
        previous_public_key: old.public_key.to_string(),
        previous_key_expires_at: rotated.previous_valid_until.to_string(),
    }))
}
