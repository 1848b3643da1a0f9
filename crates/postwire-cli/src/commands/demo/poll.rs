//! Polling: the API's view of each delivery of the demo's subscription
//! (`GET …/deliveries`), keyed by event id, with its attempts oldest first.

use std::collections::BTreeMap;

use postwire_core::Timestamp;

use super::WORKSPACE;
use super::client::Demo;

/// The API's view of one delivery (from `GET …/deliveries`).
#[derive(Debug, Clone, Default)]
pub(crate) struct DeliveryView {
    pub(crate) state: String,
    pub(crate) next_attempt_at: Option<Timestamp>,
    /// Oldest first: the status code or error of each attempt.
    pub(crate) attempts: Vec<String>,
}

/// Every delivery of subscription `sub_id`, keyed by event id.
pub(crate) async fn fetch_deliveries(demo: &Demo, sub_id: &str) -> Result<BTreeMap<String, DeliveryView>, String> {
    let page = demo
        .api(
            reqwest::Method::GET,
            &format!("/public/v1/workspaces/{WORKSPACE}/webhooks/{sub_id}/deliveries?limit=100"),
            None,
            200,
        )
        .await?;
    let mut out = BTreeMap::new();
    for d in page["data"].as_array().cloned().unwrap_or_default() {
        let mut attempts: Vec<String> = d["attempts"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|a| match a["responseStatus"].as_u64() {
                Some(s) => s.to_string(),
                None => a["error"].as_str().unwrap_or("error").to_owned(),
            })
            .collect();
        attempts.reverse();
        out.insert(
            d["eventId"].as_str().unwrap_or_default().to_owned(),
            DeliveryView {
                state: d["state"].as_str().unwrap_or_default().to_owned(),
                next_attempt_at: d["nextAttemptAt"].as_str().and_then(|t| t.parse().ok()),
                attempts,
            },
        );
    }
    Ok(out)
}
