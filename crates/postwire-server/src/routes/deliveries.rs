//! `GET …/webhooks/{webhookId}/deliveries`: a subscription's deliveries and their
//! attempts, newest first, with cursor paging (`limit`, `cursor` → `nextCursor`), the
//! way Stripe and Svix page their lists.

use axum::Json;
use axum::extract::State;
use axum::http::Uri;
use postwire_sender::MAX_PAGE_SIZE;

use crate::auth::Caller;
use crate::errors::{ApiResult, CommonErrors, ErrorBody, ValidationErrorBody};
use crate::routes::endpoints::{self, Subscriptions};
use crate::schemas::{Delivery, DeliveryList};
use crate::state::AppState;
use crate::validation::{ApiPath, QueryParams};

/// Default page size.
pub const DEFAULT_PAGE_SIZE: usize = 20;

/// Lists the deliveries of a subscription, newest first.
#[utoipa::path(
    get,
    path = "/public/v1/workspaces/{workspaceId}/webhooks/{webhookId}/deliveries",
    tag = "Webhooks",
    operation_id = "listDeliveries",
    params(
        ("workspaceId" = String, Path, description = "Workspace id."),
        ("webhookId" = String, Path, description = "Subscription id."),
        ("limit" = Option<u32>, Query, description = "Page size, 1 to 100 (default 20).", minimum = 1, maximum = 100),
        ("cursor" = Option<String>, Query, description = "`nextCursor` of the previous page.", pattern = "^c_[1-9][0-9]{0,17}$", example = "c_42"),
    ),
    responses(
        (status = 200, description = "A page of deliveries. Finished deliveries (delivered, failed, expired) are kept for the server's retention period (30 days by default, `--retention-days`), then removed with their attempts; pending and held ones are always listed.", body = DeliveryList),
        (status = 400, description = "`invalid_request`: bad `limit` or `cursor`, an unknown or repeated parameter, or an invalid `webhookId` (empty, over 200 characters, or with a control character).", body = ValidationErrorBody),
        (status = 401, description = "`unauthorized`.", body = ErrorBody),
        (status = 403, description = "`insufficient_scope` (needs `webhooks:read`) or `forbidden`.", body = ErrorBody),
        (status = 404, description = "No such workspace or subscription (`not_found`).", body = ErrorBody),
        CommonErrors,
    ),
    security(("bearer" = ["webhooks:read"]))
)]
pub async fn list_deliveries(
    state: State<AppState>,
    caller: Caller,
    path: ApiPath<(String, String)>,
    uri: Uri,
) -> ApiResult<Json<DeliveryList>> {
    endpoints::list_deliveries::<Subscriptions>(state, caller, path, uri).await
}

/// The page of `id`'s deliveries that the query of `uri` asks for (`limit`, `cursor`;
/// anything else is refused), for either kind of endpoint
/// ([`endpoints::list_deliveries`]), after the caller's ownership check.
pub(crate) async fn page(state: &AppState, id: &str, uri: &Uri) -> ApiResult<DeliveryList> {
    let query = QueryParams::parse(uri.query(), &["limit", "cursor"])?;
    let limit = query.int("limit", DEFAULT_PAGE_SIZE, 1, MAX_PAGE_SIZE)?;
    let cursor = query
        .get("cursor")
        .map(str::parse::<postwire_sender::DeliveryCursor>)
        .transpose()?;
    let page = state.sender.list_deliveries(id, cursor, limit).await?;
    Ok(DeliveryList {
        data: page.items.iter().map(Delivery::from).collect(),
        next_cursor: page.next_cursor.map(|c| c.to_string()),
    })
}
