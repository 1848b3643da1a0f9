//! The demo's HTTP client: calls to the public API with a workspace token and to the
//! internal ingest API with the ingest token, each checked against the status it expects.

use serde_json::Value;

/// A client of the demo's server: its base URL, a workspace token for the public API
/// and the ingest token for the internal one.
pub(crate) struct Demo {
    pub(crate) http: reqwest::Client,
    pub(crate) base: String,
    pub(crate) token: String,
    pub(crate) ingest_token: String,
}

impl Demo {
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        bearer: &str,
        body: Option<Value>,
    ) -> Result<(u16, Value), String> {
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .bearer_auth(bearer);
        if let Some(b) = body {
            req = req.header("content-type", "application/json").body(b.to_string());
        }
        let resp = req.send().await.map_err(|e| format!("{method} {path}: {e}"))?;
        let status = resp.status().as_u16();
        let text = resp.text().await.map_err(|e| format!("{method} {path}: {e}"))?;
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Ok((status, value))
    }

    pub(crate) async fn api(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        expect: u16,
    ) -> Result<Value, String> {
        let (status, value) = self.call(method.clone(), path, &self.token, body).await?;
        if status != expect {
            return Err(format!("{method} {path} answered {status}: {value}"));
        }
        Ok(value)
    }

    pub(crate) async fn ingest(&self, method: reqwest::Method, path: &str, body: Value) -> Result<Value, String> {
        let (status, value) = self.call(method.clone(), path, &self.ingest_token, Some(body)).await?;
        if status != 200 {
            return Err(format!("{method} {path} answered {status}: {value}"));
        }
        Ok(value)
    }
}
