//! Logging and tracing: `tracing` to stderr as text or JSON, and OpenTelemetry traces over
//! OTLP/HTTP when an endpoint is configured (off otherwise).

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
    #[error("a global tracing subscriber is already set")]
    AlreadySet,
}

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
        if let Some(provider) = self.provider.take()
            && let Err(e) = provider.shutdown()
        {
            eprintln!("obsidian-tc: flushing traces failed: {e}");
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
    let base = endpoint.trim_end_matches('/');
    if base.ends_with("/v1/traces") { base.to_string() } else { format!("{base}/v1/traces") }
}

/// Installs the global subscriber. `RUST_LOG`, when set, overrides `config.log_filter`.
pub fn init(config: &TelemetryConfig) -> Result<Telemetry, TelemetryError> {
    let filter_text = std::env::var("RUST_LOG").unwrap_or_else(|_| config.log_filter.clone());
    let filter = EnvFilter::try_new(&filter_text)
        .map_err(|e| TelemetryError::Filter { filter: filter_text.clone(), message: e.to_string() })?;

    let fmt = match config.log_format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_ansi(std::io::stderr().is_terminal())
            .with_writer(std::io::stderr)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer().json().with_writer(std::io::stderr).boxed(),
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
