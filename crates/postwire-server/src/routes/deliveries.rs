//! `GET …/webhooks/{webhookId}/deliveries`: a subscription's deliveries and their
//! attempts, newest first, with cursor paging (`limit`, `cursor` → `nextCursor`), the
//! way Stripe and Svix page their lists.

use axum::http::Uri;
use postwire_sender::MAX_PAGE_SIZE;

use crate::errors::ApiResult;
use crate::routes::endpoints::{Subscriptions, endpoint_operation};
use crate::schemas::{Delivery, DeliveryList};
use crate::state::AppState;
use crate::validation::QueryParams;

/// Default page size.
pub const DEFAULT_PAGE_SIZE: usize = 20;

endpoint_operation! {
    /// Lists the deliveries of a subscription, newest first.
    list_deliveries Subscriptions "webhookId" => list_deliveries, "listDeliveries", DeliveryList
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
