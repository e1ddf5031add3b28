//! Logging, tracing and metrics: `tracing` to stderr as text or JSON; OpenTelemetry traces and
//! metrics over OTLP/HTTP when an endpoint is configured (off otherwise); metrics as Prometheus
//! text on demand ([`metrics`]); the request span that carries a caller's W3C trace context.

pub mod metrics;
mod request;

pub use metrics::metrics;
pub use request::{RequestIds, request_span};

use std::io::IsTerminal;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use otc_config::{LogFormat, TelemetryConfig};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("invalid log filter {filter:?}: {message}")]
    Filter { filter: String, message: String },
    #[error("cannot build the OTLP exporter for {endpoint}")]
    Exporter { endpoint: String, source: opentelemetry_otlp::ExporterBuildError },
    #[error("the metrics were made before telemetry was initialised")]
    MetricsStarted,
    #[error("a global tracing subscriber is already set")]
    AlreadySet,
}

/// How long a stopping process waits for each exporter (traces, metrics): within the chart's
/// termination grace margin.
const FLUSH_LIMIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Keeps the exporter alive; dropping it (or calling [`Telemetry::shutdown`]) flushes spans.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Flushes and stops the trace exporter, if one runs.
    pub fn shutdown(mut self) {
        self.flush();
    }

    fn flush(&mut self) {
        if let Some(provider) = self.provider.take() {
            if let Err(e) = provider.shutdown_with_timeout(FLUSH_LIMIT) {
                tracing::warn!(error = %e, "flushing traces failed");
            }
            metrics().shutdown(FLUSH_LIMIT);
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        self.flush();
    }
}

/// The OTLP/HTTP traces URL for a collector endpoint (`http://host:4318` → `…/v1/traces`).
pub fn traces_url(endpoint: &str) -> String {
    signal_url(endpoint, "traces")
}

/// The OTLP/HTTP URL of one signal (`traces`, `metrics`) under a collector endpoint. An
/// endpoint that already names a signal's path is taken as the collector's base.
fn signal_url(endpoint: &str, signal: &str) -> String {
    let mut base = endpoint.trim_end_matches('/');
    for known in ["/v1/traces", "/v1/metrics"] {
        base = base.strip_suffix(known).unwrap_or(base);
    }
    format!("{base}/v1/{signal}")
}

/// The MCP library logs whole messages (note content, arguments) at debug and trace: a filter
/// that turns on debug or trace everywhere keeps it at info unless the filter names it, so no
/// general `debug` or `trace` filter puts notes in a log.
pub fn quiet_message_logs(filter: &str) -> String {
    let everywhere_verbose = filter
        .split(',')
        .map(str::trim)
        .any(|d| !d.contains('=') && (d.eq_ignore_ascii_case("debug") || d.eq_ignore_ascii_case("trace")));
    if everywhere_verbose && !filter.contains("rmcp") { format!("{filter},rmcp=info") } else { filter.to_string() }
}

/// Installs the global subscriber. `RUST_LOG`, when set, overrides `config.log_filter`.
pub fn init(config: &TelemetryConfig) -> Result<Telemetry, TelemetryError> {
    let filter_text = quiet_message_logs(&std::env::var("RUST_LOG").unwrap_or_else(|_| config.log_filter.clone()));
    let filter = EnvFilter::try_new(&filter_text)
        .map_err(|e| TelemetryError::Filter { filter: filter_text.clone(), message: e.to_string() })?;

    let fmt = match config.log_format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_ansi(std::io::stderr().is_terminal())
            .with_writer(std::io::stderr)
            .boxed(),
        // One object a line; the enclosing spans' fields (the request's request_id and
        // trace_id, the tool call's tenant and tool) ride along in `spans`.
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(false)
            .with_span_list(true)
            .with_writer(std::io::stderr)
            .boxed(),
    };

    let mut provider = None;
    let otel = match &config.otlp_endpoint {
        Some(endpoint) => {
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(traces_url(endpoint))
                .build()
                .map_err(|source| TelemetryError::Exporter { endpoint: endpoint.clone(), source })?;
            let built = SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(Resource::builder().with_service_name(config.service_name.clone()).build())
                .build();
            let tracer = built.tracer("obsidian-tc");
            provider = Some(built);
            let metric_exporter = opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(signal_url(endpoint, "metrics"))
                .build()
                .map_err(|source| TelemetryError::Exporter { endpoint: endpoint.clone(), source })?;
            let interval = std::time::Duration::from_millis(config.otlp_metrics_interval_ms.max(100));
            if !metrics::install(Some((metric_exporter, interval)), &config.service_name) {
                return Err(TelemetryError::MetricsStarted);
            }
            Some(tracing_opentelemetry::layer().with_tracer(tracer))
        }
        None => None,
    };

    tracing_subscriber::registry()
        .with(filter)
        .with(fmt)
        .with(otel)
        .try_init()
        .map_err(|_| TelemetryError::AlreadySet)?;
    Ok(Telemetry { provider })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_verbose_filter_keeps_the_mcp_library_at_info_and_others_are_left_alone() {
        use super::quiet_message_logs as q;
        assert_eq!(q("trace"), "trace,rmcp=info");
        assert_eq!(q("info,otc_gateway=debug"), "info,otc_gateway=debug");
        assert_eq!(q("warn"), "warn");
        assert_eq!(q("debug,rmcp=trace"), "debug,rmcp=trace");
    }
}
