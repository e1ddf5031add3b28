//! The outbox and the day's usage in the metrics: each tenant's queued and dead jobs by kind and
//! the age of its oldest queued job, and what each tenant active today used (calls by class and
//! result, uploads, embedding and model tokens, model cost, storage), read every interval, one
//! query each. The gauges name at most
//! [`otc_telemetry::metrics::TENANT_LABELS`] tenants (the most work first) and sum the rest
//! under [`otc_telemetry::metrics::OTHER_TENANTS`]; each collection reports the latest reading
//! only, so a tenant that drops out of it is gone from the metrics.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use chrono::Utc;
use otc_store::{OutboxStats, Store, UsageToday};
use otc_telemetry::metrics::{TenantUsage, TenantWork};

const KINDS: [&str; 3] = ["index", "embed", "wiki_pages"];

/// One tenant's work of each kind: (queued, dead, lag in seconds).
type Kinds = [(i64, i64, f64); KINDS.len()];

/// The rows as gauge lines, cut to the labelled tenants.
pub fn tenant_work(rows: Vec<OutboxStats>, now: chrono::DateTime<Utc>) -> Vec<TenantWork> {
    let mut tenants: HashMap<String, Kinds> = HashMap::new();
    for row in rows {
        let Some(k) = KINDS.iter().position(|kind| *kind == row.kind) else { continue };
        let lag = row.oldest_queued.map_or(0.0, |oldest| (now - oldest).num_milliseconds().max(0) as f64 / 1000.0);
        tenants.entry(row.tenant).or_default()[k] = (row.queued, row.dead, lag);
    }
    let weight = |kinds: &Kinds| kinds.iter().map(|(q, d, _)| q + d).sum::<i64>() as f64;
    let merge = |into: &mut Kinds, from: &Kinds| {
        for (a, b) in into.iter_mut().zip(from) {
            *a = (a.0 + b.0, a.1 + b.1, a.2.max(b.2));
        }
    };
    let kept = otc_telemetry::metrics::top_tenants(tenants.into_iter().collect(), weight, merge);
    let mut work = Vec::with_capacity(kept.len() * KINDS.len());
    for (tenant, kinds) in kept {
        for (kind, (queued, dead, lag_seconds)) in KINDS.into_iter().zip(kinds) {
            work.push(TenantWork { tenant: tenant.clone(), kind, queued, dead, lag_seconds });
        }
    }
    work
}

/// Today's usage rows as gauge lines, cut to the labelled tenants (the most calls first).
pub fn tenant_usage(rows: Vec<UsageToday>) -> Vec<TenantUsage> {
    let mut tenants: HashMap<String, TenantUsage> = HashMap::new();
    for row in rows {
        let usage = tenants
            .entry(row.tenant.clone())
            .or_insert_with(|| TenantUsage { tenant: row.tenant, ..Default::default() });
        match row.metric.as_str() {
            "calls" => {
                let (class, outcome) = row.key.split_once(':').unwrap_or((row.key.as_str(), ""));
                // Classes are the rate-limit classes; a label value never comes from a caller.
                let class = if otc_config::RateTiers::CLASSES.contains(&class) { class } else { "none" };
                let result = match outcome {
                    "ok" => "ok",
                    "throttled" => "throttled",
                    _ => "error",
                };
                *usage.calls.entry((class.to_string(), result)).or_default() += row.value;
            }
            "uploads" => usage.uploads += row.value,
            "embedding_texts" => usage.embedding_texts += row.value,
            "embedding_tokens" => usage.embedding_tokens += row.value,
            "model_tokens" => usage.model_tokens += row.value,
            "model_cost_usd" => usage.model_cost_usd += row.value,
            "storage_bytes" => usage.storage_bytes += row.value,
            _ => {}
        }
    }
    let weight = |u: &TenantUsage| u.calls.values().sum::<f64>();
    otc_telemetry::metrics::top_tenants(tenants.into_iter().collect(), weight, TenantUsage::add)
        .into_iter()
        .map(|(tenant, usage)| TenantUsage { tenant, ..usage })
        .collect()
}

/// Reads the outbox and today's usage into the metrics every `every` until `shutdown` resolves. A failed read
/// empties the reading (stale numbers would hide lag) and is logged.
pub async fn run(store: Store, every: Duration, shutdown: impl Future<Output = ()>) {
    tokio::pin!(shutdown);
    let metrics = otc_telemetry::metrics();
    loop {
        match store.outbox_stats().await {
            Ok(rows) => metrics.set_outbox(tenant_work(rows, Utc::now())),
            Err(e) => {
                tracing::warn!(error = %otc_errors::error_chain(&e), "cannot read the outbox for the metrics");
                metrics.set_outbox(Vec::new());
            }
        }
        match store.usage_today().await {
            Ok(rows) => metrics.set_usage(tenant_usage(rows)),
            Err(e) => {
                tracing::warn!(error = %otc_errors::error_chain(&e), "cannot read today's usage for the metrics");
                metrics.set_usage(Vec::new());
            }
        }
        tokio::select! {
            () = &mut shutdown => break,
            () = tokio::time::sleep(every) => {}
        }
    }
    metrics.set_outbox(Vec::new());
    metrics.set_usage(Vec::new());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_summed_by_class_and_result_and_the_quiet_tenants_as_other() {
        let row = |tenant: &str, metric: &str, key: &str, value: f64| UsageToday {
            tenant: tenant.into(),
            metric: metric.into(),
            key: key.into(),
            value,
        };
        let mut rows = vec![
            row("acme", "calls", "read:ok", 40.0),
            row("acme", "calls", "read:not_found", 2.0),
            row("acme", "calls", "read:invalid_input", 1.0),
            row("acme", "calls", "write:throttled", 5.0),
            row("acme", "calls", "made-up:ok", 1.0),
            row("acme", "model_cost_usd", "", 0.25),
            row("acme", "storage_bytes", "", 1000.0),
        ];
        for i in 0..otc_telemetry::metrics::TENANT_LABELS + 2 {
            rows.push(row(&format!("small{i:02}"), "calls", "read:ok", 1.0));
            rows.push(row(&format!("small{i:02}"), "storage_bytes", "", 10.0));
        }
        let usage = tenant_usage(rows);
        assert_eq!(usage.len(), otc_telemetry::metrics::TENANT_LABELS + 1);
        let acme = &usage[0];
        assert_eq!(acme.tenant, "acme");
        assert_eq!(acme.calls[&("read".to_string(), "ok")], 40.0);
        assert_eq!(acme.calls[&("read".to_string(), "error")], 3.0);
        assert_eq!(acme.calls[&("write".to_string(), "throttled")], 5.0);
        assert_eq!(acme.calls[&("none".to_string(), "ok")], 1.0);
        assert_eq!((acme.model_cost_usd, acme.storage_bytes), (0.25, 1000.0));
        let other = usage.last().unwrap();
        assert_eq!(other.tenant, otc_telemetry::metrics::OTHER_TENANTS);
        assert_eq!((other.calls[&("read".to_string(), "ok")], other.storage_bytes), (3.0, 30.0));
    }

    #[test]
    fn lag_is_the_oldest_queued_job_and_the_rest_are_summed() {
        let now = Utc::now();
        let row = |tenant: &str, kind: &str, queued, dead, age: Option<i64>| OutboxStats {
            tenant: tenant.into(),
            kind: kind.into(),
            queued,
            dead,
            oldest_queued: age.map(|s| now - chrono::Duration::seconds(s)),
        };
        let mut rows = vec![row("acme", "index", 3, 0, Some(12)), row("acme", "embed", 5, 1, Some(40))];
        for i in 0..otc_telemetry::metrics::TENANT_LABELS + 2 {
            rows.push(row(&format!("small{i:02}"), "index", 1, 0, Some(i as i64)));
            rows.push(row(&format!("small{i:02}"), "embed", 0, 0, None));
        }
        let work = tenant_work(rows, now);
        assert_eq!(work.len(), (otc_telemetry::metrics::TENANT_LABELS + 1) * KINDS.len());
        let find =
            |tenant: &str, kind: &str| work.iter().find(|w| w.tenant == tenant && w.kind == kind).unwrap().clone();
        let acme = find("acme", "embed");
        assert_eq!((acme.queued, acme.dead, acme.lag_seconds), (5, 1, 40.0));
        assert_eq!(find("acme", "index").lag_seconds, 12.0);
        let other = find(otc_telemetry::metrics::OTHER_TENANTS, "index");
        assert_eq!(other.queued, 3, "three small tenants beyond the named ones");
        assert_eq!(find(otc_telemetry::metrics::OTHER_TENANTS, "embed").lag_seconds, 0.0);
    }
}
