//! Where `serve`'s diagnostics go: log lines on standard error (readable text, or JSON
//! lines for a log pipeline) and, in a build with the `otel` cargo feature, traces
//! exported over OTLP/HTTP to an OpenTelemetry collector.
//!
//! Tracing is optional and off by default: most deployments need only logs and the
//! Prometheus metrics, and the exporter's dependencies (an HTTP client, protobuf) are
//! kept out of the default build. With the feature, `--otlp-endpoint` (or the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT`) turns it on: every API request is a `request` span
//! (with its request id, method, route and status), and every delivery attempt a
//! `delivery_attempt` span, batched and sent to `<endpoint>/v1/traces` by a background
//! thread (the SDK's batch processor: every 5 s or 512 spans; `OTEL_BSP_*` variables
//! tune it). Spans carry no secrets, tokens, bodies or query strings, as the logs.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// How to log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// One readable line per event (colours on a terminal).
    Text,
    /// One JSON object per line, with the current span's fields (the request id).
    Json,
}

/// Keeps the trace exporter running; dropping it sends the spans still buffered.
#[must_use = "dropping the guard stops trace export"]
pub struct TelemetryGuard {
    #[cfg(feature = "otel")]
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        #[cfg(feature = "otel")]
        if let Some(provider) = self.provider.take()
            && let Err(e) = provider.shutdown()
        {
            eprintln!("postwire: sending the last traces failed: {e}");
        }
    }
}

/// Starts logging to standard error at `filter` (an `EnvFilter` directive such as
/// `info` or `postwire_sender=debug`) in `format`, and trace export to `otlp_endpoint`
/// when given. Fails when an endpoint is given to a build without the `otel` feature,
/// or the endpoint is not an `http(s)://` URL.
pub fn init(filter: &str, format: LogFormat, otlp_endpoint: Option<&str>) -> Result<TelemetryGuard, String> {
    let filter = EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let fmt = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_target(false)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(std::io::stderr)
            .with_target(false)
            .boxed(),
    };
    let (otel, guard) = otel_layer(otlp_endpoint)?;
    let layers: Vec<BoxedLayer> = std::iter::once(fmt).chain(otel).collect();
    // `try_init` fails only when a subscriber is already set (tests calling twice).
    let _ = tracing_subscriber::registry()
        .with(layers.with_filter(filter))
        .try_init();
    Ok(guard)
}

use tracing_subscriber::Layer as _;

type BoxedLayer = Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>;

#[cfg(not(feature = "otel"))]
fn otel_layer(endpoint: Option<&str>) -> Result<(Option<BoxedLayer>, TelemetryGuard), String> {
    match endpoint {
        None => Ok((None, TelemetryGuard {})),
        Some(_) => Err(
            "--otlp-endpoint needs a postwire built with the `otel` feature (cargo build -p postwire-cli --features otel)"
                .into(),
        ),
    }
}

#[cfg(feature = "otel")]
fn otel_layer(endpoint: Option<&str>) -> Result<(Option<BoxedLayer>, TelemetryGuard), String> {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::WithExportConfig as _;

    let Some(endpoint) = endpoint.map(str::trim).filter(|e| !e.is_empty()) else {
        return Ok((None, TelemetryGuard { provider: None }));
    };
    if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
        return Err(format!(
            "--otlp-endpoint must be an http:// or https:// URL (OTLP over HTTP), not `{endpoint}`"
        ));
    }
    let traces = traces_url(endpoint);
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(traces)
        .build()
        .map_err(|e| format!("cannot set up trace export: {e}"))?;
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name("postwire")
                .build(),
        )
        .build();
    let tracer = provider.tracer("postwire");
    let layer = tracing_opentelemetry::layer().with_tracer(tracer).boxed();
    Ok((
        Some(layer),
        TelemetryGuard {
            provider: Some(provider),
        },
    ))
}

/// The traces URL of an OTLP/HTTP endpoint: `<endpoint>/v1/traces`, as the OTLP
/// specification builds it from `OTEL_EXPORTER_OTLP_ENDPOINT`.
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
fn traces_url(endpoint: &str) -> String {
    let base = endpoint.trim_end_matches('/');
    if base.ends_with("/v1/traces") {
        base.to_owned()
    } else {
        format!("{base}/v1/traces")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_traces_path_is_appended_once() {
        assert_eq!(traces_url("http://c:4318"), "http://c:4318/v1/traces");
        assert_eq!(traces_url("http://c:4318/"), "http://c:4318/v1/traces");
        assert_eq!(traces_url("http://c:4318/v1/traces"), "http://c:4318/v1/traces");
    }

    #[cfg(not(feature = "otel"))]
    #[test]
    fn an_endpoint_without_the_feature_is_a_clear_error() {
        let e = otel_layer(Some("http://c:4318")).err().unwrap();
        assert!(e.contains("`otel` feature"), "{e}");
    }
}
