//! Metrics: one set of OpenTelemetry instruments per process, read two ways: on demand as
//! Prometheus text (`/metrics` on the admin listener) and, when an OTLP endpoint is
//! configured, pushed over OTLP/HTTP on an interval.
//!
//! Label values are bounded: tools are the registered names (anything else is `unknown`),
//! outcomes are `ok` or one of the catalogue's error codes, and per-tenant gauges name the
//! tenants with the most work and sum the rest under `_other` (no slug starts with `_`).
//!
//! Gauges of state (the pool, caches, each tenant's outbox) are observed at each collection,
//! by either reader, from [`Probe`]s and the latest outbox reading: a series that is no longer
//! observed is gone from the next collection rather than kept at its last value.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

pub use opentelemetry::KeyValue;
use opentelemetry::metrics::{AsyncInstrument, Counter, Gauge, Histogram, Meter, MeterProvider as _, UpDownCounter};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{InstrumentKind, ManualReader, Pipeline, SdkMeterProvider, Temporality};

/// Seconds; a tool call is usually well under 50 ms, a bulk one can take minutes.
const DURATION_BUCKETS: [f64; 14] =
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// How many tenants the per-tenant gauges name; the rest are summed under [`OTHER_TENANTS`].
pub const TENANT_LABELS: usize = 20;

/// The tenant label of the sum of the tenants not named (a slug cannot start with `_`).
pub const OTHER_TENANTS: &str = "_other";

/// What a [`Probe`] reports at each collection.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Sample {
    /// A Postgres pool: (idle, in use, most it opens).
    pub pool: Option<(i64, i64, i64)>,
    /// In-process caches: what each holds and has done.
    pub caches: Vec<otc_cache::Figures>,
}

/// One tenant's outbox work of one kind, as last read.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantWork {
    pub tenant: String,
    /// `index` or `embed`.
    pub kind: &'static str,
    pub queued: i64,
    pub dead: i64,
    /// Seconds since the oldest queued job was made (0 with none).
    pub lag_seconds: f64,
}

/// One tenant's usage today (UTC), as last read: the per-tenant usage gauges.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TenantUsage {
    pub tenant: String,
    /// Calls by (rate-limit class, result): `ok`, `throttled` or `error`.
    pub calls: std::collections::BTreeMap<(String, &'static str), f64>,
    pub uploads: f64,
    pub embedding_texts: f64,
    pub embedding_tokens: f64,
    pub model_tokens: f64,
    pub model_cost_usd: f64,
    /// What it stores now.
    pub storage_bytes: f64,
}

impl TenantUsage {
    /// Adds `other`'s figures to these (for the tenants summed as one).
    pub fn add(&mut self, other: &TenantUsage) {
        for (key, n) in &other.calls {
            *self.calls.entry(key.clone()).or_default() += n;
        }
        self.uploads += other.uploads;
        self.embedding_texts += other.embedding_texts;
        self.embedding_tokens += other.embedding_tokens;
        self.model_tokens += other.model_tokens;
        self.model_cost_usd += other.model_cost_usd;
        self.storage_bytes += other.storage_bytes;
    }
}

type ProbeFn = Arc<dyn Fn(&mut Sample) + Send + Sync>;

/// The state gauges read at collection time.
#[derive(Default)]
struct Observed {
    probes: Mutex<Vec<(u64, ProbeFn)>>,
    next_probe: AtomicU64,
    outbox: Mutex<Vec<TenantWork>>,
    usage: Mutex<Vec<TenantUsage>>,
}

impl Observed {
    fn sample(&self) -> Vec<Sample> {
        let probes: Vec<ProbeFn> =
            self.probes.lock().unwrap_or_else(PoisonError::into_inner).iter().map(|(_, p)| p.clone()).collect();
        probes
            .iter()
            .map(|probe| {
                let mut sample = Sample::default();
                probe(&mut sample);
                sample
            })
            .collect()
    }

    fn outbox(&self) -> Vec<TenantWork> {
        self.outbox.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn usage(&self) -> Vec<TenantUsage> {
        self.usage.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// A registered source of state gauges; dropping it unregisters it.
pub struct Probe {
    id: u64,
    observed: Arc<Observed>,
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.observed.probes.lock().unwrap_or_else(PoisonError::into_inner).retain(|(id, _)| *id != self.id);
    }
}

/// The process's instruments.
pub struct Metrics {
    provider: SdkMeterProvider,
    reader: SharedReader,
    /// `otc_tool_calls_total{tool, facade, outcome}`
    pub tool_calls: Counter<u64>,
    /// `otc_tool_call_duration_seconds{tool, facade}`
    pub tool_duration: Histogram<f64>,
    /// `otc_tool_calls_in_flight`: the gateways' custom autoscaling metric.
    pub tool_in_flight: UpDownCounter<i64>,
    /// `otc_auth_decisions_total{method, outcome}`
    pub auth_decisions: Counter<u64>,
    /// `otc_rate_limit_decisions_total{scope, outcome}`
    pub rate_limit_decisions: Counter<u64>,
    /// `otc_http_requests_total{status}` by status class (`2xx` …).
    pub http_requests: Counter<u64>,
    // Observed at collection: `otc_db_pool_connections{state}` (`idle`, `in_use`),
    // `otc_db_pool_max_connections`, `otc_cache_entries{cache}`, `otc_outbox_depth{tenant,kind}`,
    // `otc_outbox_dead_letters{tenant,kind}`, `otc_index_lag_seconds{tenant}`,
    // `otc_embedding_lag_seconds{tenant}`, `otc_tenant_calls_today{tenant,class,result}` and the
    // other `otc_tenant_*` usage gauges.
    observed: Arc<Observed>,
    /// `otc_worker_leader`: 1 on the worker holding the sweep lease.
    pub worker_leader: Gauge<i64>,
    /// `otc_build_info{version, role}`: always 1.
    pub build_info: Gauge<i64>,
}

static METRICS: OnceLock<Metrics> = OnceLock::new();

/// The process's instruments (made on first use, without an OTLP exporter unless
/// [`crate::init`] configured one first).
pub fn metrics() -> &'static Metrics {
    METRICS.get_or_init(|| Metrics::new(None, "obsidian-tc"))
}

/// Makes the instruments with an OTLP push exporter beside the Prometheus reader. Returns false
/// when the instruments already existed (the exporter is then dropped).
pub(crate) fn install(otlp: Option<(opentelemetry_otlp::MetricExporter, Duration)>, service: &str) -> bool {
    let mut installed = false;
    METRICS.get_or_init(|| {
        installed = true;
        Metrics::new(otlp, service)
    });
    installed
}

/// The manual reader, shared between the provider (which owns a reader) and the scrape.
#[derive(Clone, Debug)]
struct SharedReader(Arc<ManualReader>);

impl MetricReader for SharedReader {
    fn register_pipeline(&self, pipeline: std::sync::Weak<Pipeline>) {
        self.0.register_pipeline(pipeline)
    }
    fn collect(&self, rm: &mut ResourceMetrics) -> opentelemetry_sdk::error::OTelSdkResult {
        self.0.collect(rm)
    }
    fn force_flush(&self) -> opentelemetry_sdk::error::OTelSdkResult {
        self.0.force_flush()
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> opentelemetry_sdk::error::OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }
    fn temporality(&self, kind: InstrumentKind) -> Temporality {
        self.0.temporality(kind)
    }
}

impl Metrics {
    fn new(otlp: Option<(opentelemetry_otlp::MetricExporter, Duration)>, service: &str) -> Self {
        let reader = SharedReader(Arc::new(ManualReader::builder().build()));
        let mut builder = SdkMeterProvider::builder()
            .with_resource(Resource::builder().with_service_name(service.to_string()).build())
            .with_reader(reader.clone());
        if let Some((exporter, interval)) = otlp {
            let periodic =
                opentelemetry_sdk::metrics::PeriodicReader::builder(exporter).with_interval(interval).build();
            builder = builder.with_reader(periodic);
        }
        let provider = builder.build();
        let meter: Meter = provider.meter("obsidian-tc");
        let observed = Arc::new(Observed::default());
        register_observed(&meter, &observed);
        Self {
            observed,
            tool_calls: meter.u64_counter("otc_tool_calls_total").with_description("Tool calls by outcome").build(),
            tool_duration: meter
                .f64_histogram("otc_tool_call_duration_seconds")
                .with_description("Tool call duration in seconds")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            tool_in_flight: meter
                .i64_up_down_counter("otc_tool_calls_in_flight")
                .with_description("Tool calls running now")
                .build(),
            auth_decisions: meter
                .u64_counter("otc_auth_decisions_total")
                .with_description("Authentication decisions by method and outcome")
                .build(),
            rate_limit_decisions: meter
                .u64_counter("otc_rate_limit_decisions_total")
                .with_description("Rate-limit decisions by scope and outcome")
                .build(),
            http_requests: meter
                .u64_counter("otc_http_requests_total")
                .with_description("HTTP responses by status class")
                .build(),
            worker_leader: meter
                .i64_gauge("otc_worker_leader")
                .with_description("1 on the worker holding the sweep lease")
                .build(),
            build_info: meter.i64_gauge("otc_build_info").with_description("The running build").build(),
            provider,
            reader,
        }
    }

    /// Records one finished client call: `tool` the registered tool that ran, `facade` the
    /// facade or domain meta-tool the client called it through (`none` when called by name),
    /// `outcome` ok or a code.
    pub fn tool_call(&self, tool: &'static str, facade: &'static str, outcome: &'static str, seconds: f64) {
        let (tool, facade) = (KeyValue::new("tool", tool), KeyValue::new("facade", facade));
        self.tool_calls.add(1, &[tool.clone(), facade.clone(), KeyValue::new("outcome", outcome)]);
        self.tool_duration.record(seconds, &[tool, facade]);
    }

    /// Registers a source of state gauges (a pool, caches), read at each collection until the
    /// returned [`Probe`] is dropped.
    pub fn probe(&self, probe: impl Fn(&mut Sample) + Send + Sync + 'static) -> Probe {
        let id = self.observed.next_probe.fetch_add(1, Ordering::Relaxed);
        self.observed.probes.lock().unwrap_or_else(PoisonError::into_inner).push((id, Arc::new(probe)));
        Probe { id, observed: self.observed.clone() }
    }

    /// The outbox as last read (at most [`TENANT_LABELS`] tenants and [`OTHER_TENANTS`]): what
    /// the per-tenant gauges report from now on. An empty reading reports none.
    pub fn set_outbox(&self, work: Vec<TenantWork>) {
        *self.observed.outbox.lock().unwrap_or_else(PoisonError::into_inner) = work;
    }

    /// Today's usage as last read (at most [`TENANT_LABELS`] tenants and [`OTHER_TENANTS`]):
    /// what the per-tenant usage gauges report from now on. An empty reading reports none.
    pub fn set_usage(&self, usage: Vec<TenantUsage>) {
        *self.observed.usage.lock().unwrap_or_else(PoisonError::into_inner) = usage;
    }

    /// Records an authentication decision (`method`: token, oauth, none; `outcome`: ok or why not).
    pub fn auth(&self, method: &'static str, outcome: &'static str) {
        self.auth_decisions.add(1, &[KeyValue::new("method", method), KeyValue::new("outcome", outcome)]);
    }

    /// Records a rate-limit decision (`outcome`: allowed or limited).
    pub fn rate_limit(&self, scope: &'static str, limited: bool) {
        let outcome = if limited { "limited" } else { "allowed" };
        self.rate_limit_decisions.add(1, &[KeyValue::new("scope", scope), KeyValue::new("outcome", outcome)]);
    }

    /// Records one HTTP response by its status class.
    pub fn http_response(&self, status: u16) {
        const CLASSES: [&str; 6] = ["other", "1xx", "2xx", "3xx", "4xx", "5xx"];
        let class = CLASSES.get((status / 100) as usize).copied().unwrap_or("other");
        self.http_requests.add(1, &[KeyValue::new("status", class)]);
    }

    /// Says which build and role this process is; the in-flight gauge reads 0 from now on
    /// (an autoscaler reads a pod without the series as busy).
    pub fn started(&self, role: &'static str) {
        self.build_info.record(1, &[KeyValue::new("version", env!("CARGO_PKG_VERSION")), KeyValue::new("role", role)]);
        self.tool_in_flight.add(0, &[]);
    }

    /// Every metric as Prometheus text exposition format (version 0.0.4).
    pub fn prometheus_text(&self) -> String {
        let mut rm = ResourceMetrics::default();
        if let Err(e) = self.reader.collect(&mut rm) {
            tracing::warn!(error = %e, "collecting metrics failed");
            return String::new();
        }
        let mut out = String::with_capacity(16 * 1024);
        for scope in rm.scope_metrics() {
            for metric in scope.metrics() {
                write_metric(&mut out, metric.name(), metric.description(), metric.data());
            }
        }
        out
    }

    /// Pushes what is pending to the OTLP exporter (if any) and stops it, waiting at most
    /// `limit`.
    pub(crate) fn shutdown(&self, limit: Duration) {
        if let Err(e) = self.provider.shutdown_with_timeout(limit) {
            // Without an OTLP reader there is nothing to flush; the manual reader's own
            // shutdown never fails.
            tracing::debug!(error = %e, "stopping the metrics provider");
        }
    }
}

/// The observable gauges: each collection asks the probes and reads the latest outbox.
fn register_observed(meter: &Meter, observed: &Arc<Observed>) {
    let o = observed.clone();
    meter
        .i64_observable_gauge("otc_db_pool_connections")
        .with_description("Postgres pool connections")
        .with_callback(move |gauge| {
            for (idle, in_use, _) in o.sample().into_iter().filter_map(|s| s.pool) {
                gauge.observe(idle, &[KeyValue::new("state", "idle")]);
                gauge.observe(in_use, &[KeyValue::new("state", "in_use")]);
            }
        })
        .build();
    let o = observed.clone();
    meter
        .i64_observable_gauge("otc_db_pool_max_connections")
        .with_description("Postgres pool size limit")
        .with_callback(move |gauge| {
            for (_, _, max) in o.sample().into_iter().filter_map(|s| s.pool) {
                gauge.observe(max, &[]);
            }
        })
        .build();
    let cache_gauge = |name: &'static str, help: &'static str, value: fn(&otc_cache::Figures) -> u64| {
        let o = observed.clone();
        meter
            .u64_observable_gauge(name)
            .with_description(help)
            .with_callback(move |gauge| {
                for f in o.sample().into_iter().flat_map(|s| s.caches) {
                    gauge.observe(value(&f), &[KeyValue::new("cache", f.name)]);
                }
            })
            .build()
    };
    cache_gauge("otc_cache_entries", "Entries in in-process caches", |f| f.entries);
    cache_gauge("otc_cache_bytes", "Bytes in in-process caches (their own estimate)", |f| f.bytes);
    cache_gauge("otc_cache_max_bytes", "The configured bound of each in-process cache", |f| f.max_bytes);
    let cache_counter = |name: &'static str, help: &'static str, value: fn(&otc_cache::Figures) -> u64| {
        let o = observed.clone();
        meter
            .u64_observable_counter(name)
            .with_description(help)
            .with_callback(move |counter| {
                for f in o.sample().into_iter().flat_map(|s| s.caches) {
                    counter.observe(value(&f), &[KeyValue::new("cache", f.name)]);
                }
            })
            .build()
    };
    cache_counter("otc_cache_hits_total", "Lookups an in-process cache answered", |f| f.hits);
    cache_counter("otc_cache_misses_total", "Lookups an in-process cache could not answer", |f| f.misses);
    cache_counter("otc_cache_evictions_total", "Entries an in-process cache evicted to stay in its bounds", |f| {
        f.evictions
    });
    let per_kind = |name: &'static str, help: &'static str, value: fn(&TenantWork) -> i64| {
        let o = observed.clone();
        meter
            .i64_observable_gauge(name)
            .with_description(help)
            .with_callback(move |gauge: &dyn AsyncInstrument<i64>| {
                for w in o.outbox() {
                    gauge.observe(
                        value(&w),
                        &[KeyValue::new("tenant", w.tenant.clone()), KeyValue::new("kind", w.kind)],
                    );
                }
            })
            .build();
    };
    per_kind("otc_outbox_depth", "Queued outbox jobs", |w| w.queued);
    per_kind("otc_outbox_dead_letters", "Outbox jobs that ran out of attempts", |w| w.dead);
    let lag = |name: &'static str, help: &'static str, kind: &'static str| {
        let o = observed.clone();
        meter
            .f64_observable_gauge(name)
            .with_description(help)
            .with_callback(move |gauge: &dyn AsyncInstrument<f64>| {
                for w in o.outbox().into_iter().filter(|w| w.kind == kind) {
                    gauge.observe(w.lag_seconds, &[KeyValue::new("tenant", w.tenant)]);
                }
            })
            .build();
    };
    lag("otc_index_lag_seconds", "Age of the oldest queued index job", "index");
    lag("otc_embedding_lag_seconds", "Age of the oldest queued embedding job", "embed");
    let o = observed.clone();
    meter
        .f64_observable_gauge("otc_tenant_calls_today")
        .with_description("Calls a tenant made today (UTC) by rate-limit class and result (ok, throttled, error)")
        .with_callback(move |gauge: &dyn AsyncInstrument<f64>| {
            for u in o.usage() {
                for ((class, result), n) in &u.calls {
                    gauge.observe(
                        *n,
                        &[
                            KeyValue::new("tenant", u.tenant.clone()),
                            KeyValue::new("class", class.clone()),
                            KeyValue::new("result", *result),
                        ],
                    );
                }
            }
        })
        .build();
    let per_tenant = |name: &'static str, help: &'static str, value: fn(&TenantUsage) -> f64| {
        let o = observed.clone();
        meter
            .f64_observable_gauge(name)
            .with_description(help)
            .with_callback(move |gauge: &dyn AsyncInstrument<f64>| {
                for u in o.usage() {
                    gauge.observe(value(&u), &[KeyValue::new("tenant", u.tenant)]);
                }
            })
            .build();
    };
    per_tenant("otc_tenant_uploads_today", "Files a tenant uploaded through the sync API today (UTC)", |u| u.uploads);
    per_tenant("otc_tenant_embedding_texts_today", "Texts embedded for a tenant today (UTC)", |u| u.embedding_texts);
    per_tenant("otc_tenant_embedding_tokens_today", "Embedding provider tokens for a tenant today (UTC)", |u| {
        u.embedding_tokens
    });
    per_tenant("otc_tenant_model_tokens_today", "A tenant's chat model tokens today (UTC)", |u| u.model_tokens);
    per_tenant("otc_tenant_model_cost_usd_today", "A tenant's chat model cost today (UTC), US dollars", |u| {
        u.model_cost_usd
    });
    per_tenant("otc_tenant_storage_bytes", "Bytes a tenant stores (of the tenants active today)", |u| u.storage_bytes);
}

/// One series line's labels in name order (`le` last), escaped as the exposition format asks.
fn labels<'a>(pairs: impl Iterator<Item = &'a KeyValue>, extra: Option<(&str, &str)>) -> String {
    let mut pairs: Vec<&KeyValue> = pairs.collect();
    pairs.sort_by(|a, b| a.key.as_str().cmp(b.key.as_str()));
    let mut parts: Vec<String> =
        pairs.into_iter().map(|kv| format!("{}=\"{}\"", kv.key.as_str(), escape(&kv.value.as_str()))).collect();
    if let Some((k, v)) = extra {
        parts.push(format!("{k}=\"{}\"", escape(v)));
    }
    if parts.is_empty() { String::new() } else { format!("{{{}}}", parts.join(",")) }
}

fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

trait Number: Copy {
    fn text(self) -> String;
}
impl Number for f64 {
    fn text(self) -> String {
        if self.is_nan() {
            "NaN".into()
        } else if self.is_infinite() {
            if self > 0.0 { "+Inf".into() } else { "-Inf".into() }
        } else {
            format!("{self}")
        }
    }
}
impl Number for u64 {
    fn text(self) -> String {
        self.to_string()
    }
}
impl Number for i64 {
    fn text(self) -> String {
        self.to_string()
    }
}

fn write_metric(out: &mut String, name: &str, help: &str, data: &AggregatedMetrics) {
    match data {
        AggregatedMetrics::F64(d) => write_data(out, name, help, d),
        AggregatedMetrics::U64(d) => write_data(out, name, help, d),
        AggregatedMetrics::I64(d) => write_data(out, name, help, d),
    }
}

fn write_data<T: Number>(out: &mut String, name: &str, help: &str, data: &MetricData<T>) {
    let head = |out: &mut String, kind: &str| {
        let _ = writeln!(out, "# HELP {name} {}", help.replace('\\', "\\\\").replace('\n', "\\n"));
        let _ = writeln!(out, "# TYPE {name} {kind}");
    };
    match data {
        MetricData::Gauge(g) => {
            head(out, "gauge");
            for p in g.data_points() {
                let _ = writeln!(out, "{name}{} {}", labels(p.attributes(), None), p.value().text());
            }
        }
        MetricData::Sum(s) => {
            // An up-down counter is a gauge to Prometheus.
            head(out, if s.is_monotonic() { "counter" } else { "gauge" });
            for p in s.data_points() {
                let _ = writeln!(out, "{name}{} {}", labels(p.attributes(), None), p.value().text());
            }
        }
        MetricData::Histogram(h) => {
            head(out, "histogram");
            for p in h.data_points() {
                let mut cumulative = 0u64;
                let bounds: Vec<f64> = p.bounds().collect();
                for (i, count) in p.bucket_counts().enumerate() {
                    cumulative += count;
                    let le = bounds.get(i).map_or_else(|| "+Inf".to_string(), |b| b.text());
                    let _ = writeln!(out, "{name}_bucket{} {cumulative}", labels(p.attributes(), Some(("le", &le))));
                }
                let _ = writeln!(out, "{name}_sum{} {}", labels(p.attributes(), None), p.sum().text());
                let _ = writeln!(out, "{name}_count{} {}", labels(p.attributes(), None), p.count());
            }
        }
        MetricData::ExponentialHistogram(_) => {}
    }
}

/// Per-tenant values cut to the [`TENANT_LABELS`] largest (by `weight`), the rest summed into
/// one [`OTHER_TENANTS`] entry.
pub fn top_tenants<T: Clone>(
    mut rows: Vec<(String, T)>,
    weight: impl Fn(&T) -> f64,
    merge: impl Fn(&mut T, &T),
) -> Vec<(String, T)> {
    rows.sort_by(|a, b| weight(&b.1).total_cmp(&weight(&a.1)).then_with(|| a.0.cmp(&b.0)));
    if rows.len() <= TENANT_LABELS {
        return rows;
    }
    let rest = rows.split_off(TENANT_LABELS);
    let mut other = rest[0].1.clone();
    for (_, value) in &rest[1..] {
        merge(&mut other, value);
    }
    rows.push((OTHER_TENANTS.to_string(), other));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_gauges_and_cumulative_histograms() {
        let m = Metrics::new(None, "test");
        m.tool_call("read_note", "none", "ok", 0.003);
        m.tool_call("read_note", "none", "ok", 0.2);
        m.tool_call("read_note", "none", "not_found", 0.004);
        m.tool_call("read_note", "call_capability", "ok", 0.004);
        m.tool_in_flight.add(2, &[]);
        m.http_response(503);
        m.rate_limit("write", true);
        let text = m.prometheus_text();
        assert!(text.contains("# TYPE otc_tool_calls_total counter"), "{text}");
        assert!(text.contains(r#"otc_tool_calls_total{facade="none",outcome="ok",tool="read_note"} 2"#), "{text}");
        assert!(
            text.contains(r#"otc_tool_calls_total{facade="none",outcome="not_found",tool="read_note"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"otc_tool_calls_total{facade="call_capability",outcome="ok",tool="read_note"} 1"#),
            "{text}"
        );
        assert!(text.contains("# TYPE otc_tool_call_duration_seconds histogram"), "{text}");
        assert!(
            text.contains(r#"otc_tool_call_duration_seconds_bucket{facade="none",tool="read_note",le="0.0025"} 0"#),
            "{text}"
        );
        assert!(
            text.contains(r#"otc_tool_call_duration_seconds_bucket{facade="none",tool="read_note",le="0.005"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(r#"otc_tool_call_duration_seconds_bucket{facade="none",tool="read_note",le="+Inf"} 3"#),
            "{text}"
        );
        assert!(text.contains(r#"otc_tool_call_duration_seconds_count{facade="none",tool="read_note"} 3"#), "{text}");
        assert!(text.contains("# TYPE otc_tool_calls_in_flight gauge"), "{text}");
        assert!(text.contains("otc_tool_calls_in_flight 2"), "{text}");
        assert!(text.contains(r#"otc_http_requests_total{status="5xx"} 1"#), "{text}");
        assert!(text.contains(r#"otc_rate_limit_decisions_total{outcome="limited",scope="write"} 1"#), "{text}");
    }

    #[test]
    fn state_gauges_follow_their_probes_and_the_latest_outbox_reading() {
        let m = Metrics::new(None, "test");
        let probe = m.probe(|s| {
            s.pool = Some((3, 2, 16));
            s.caches.push(otc_cache::Figures {
                name: "auth",
                entries: 7,
                bytes: 700,
                max_bytes: 1000,
                hits: 5,
                misses: 2,
                evictions: 1,
            });
        });
        m.set_outbox(vec![TenantWork { tenant: "acme".into(), kind: "index", queued: 4, dead: 1, lag_seconds: 2.5 }]);
        let text = m.prometheus_text();
        assert!(text.contains(r#"otc_db_pool_connections{state="in_use"} 2"#), "{text}");
        assert!(text.contains("otc_db_pool_max_connections 16"), "{text}");
        assert!(text.contains(r#"otc_cache_entries{cache="auth"} 7"#), "{text}");
        assert!(text.contains(r#"otc_cache_bytes{cache="auth"} 700"#), "{text}");
        assert!(text.contains(r#"otc_cache_hits_total{cache="auth"} 5"#), "{text}");
        assert!(text.contains(r#"otc_cache_evictions_total{cache="auth"} 1"#), "{text}");
        assert!(text.contains(r#"otc_outbox_depth{kind="index",tenant="acme"} 4"#), "{text}");
        assert!(text.contains(r#"otc_index_lag_seconds{tenant="acme"} 2.5"#), "{text}");
        // Gone from the next collection: the probe dropped, the tenant's work done.
        drop(probe);
        m.set_outbox(Vec::new());
        let text = m.prometheus_text();
        assert!(!text.contains("otc_db_pool_connections{"), "{text}");
        assert!(!text.contains("acme"), "{text}");
    }

    #[test]
    fn label_values_are_escaped() {
        let kv = [KeyValue::new("tenant", "a\"b\\c\nd")];
        assert_eq!(labels(kv.iter(), None), r#"{tenant="a\"b\\c\nd"}"#);
    }

    #[test]
    fn tenants_beyond_the_limit_are_summed_as_other() {
        let rows: Vec<(String, i64)> = (0..25).map(|i| (format!("t{i:02}"), i)).collect();
        let kept = top_tenants(rows, |v| *v as f64, |a, b| *a += *b);
        assert_eq!(kept.len(), TENANT_LABELS + 1);
        assert_eq!(kept[0], ("t24".to_string(), 24));
        assert_eq!(kept.last().unwrap(), &(OTHER_TENANTS.to_string(), 1 + 2 + 3 + 4));
    }
}
