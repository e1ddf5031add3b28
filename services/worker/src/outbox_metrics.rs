//! The outbox in the metrics: each tenant's queued and dead jobs by kind and the age of its
//! oldest queued index and embed job, read every interval. Tenants are capped at
//! [`otc_telemetry::metrics::TENANT_LABELS`] (the most work first; the rest as `other`), and a
//! tenant whose work is gone reads 0 once before its series is left alone.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::time::Duration;

use chrono::Utc;
use otc_store::{OutboxStats, Store};
use otc_telemetry::metrics::KeyValue;

/// What one tenant's gauges read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TenantOutbox {
    /// Queued and dead jobs by kind.
    pub queued: HashMap<String, i64>,
    pub dead: HashMap<String, i64>,
    /// Seconds since the oldest queued job of each kind was made.
    pub lag: HashMap<String, f64>,
}

impl TenantOutbox {
    fn weight(&self) -> f64 {
        self.queued.values().sum::<i64>() as f64 + self.dead.values().sum::<i64>() as f64
    }

    fn merge(&mut self, other: &TenantOutbox) {
        for (k, v) in &other.queued {
            *self.queued.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.dead {
            *self.dead.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.lag {
            let lag = self.lag.entry(k.clone()).or_default();
            *lag = lag.max(*v);
        }
    }
}

/// The rows by tenant, cut to the labelled tenants.
pub fn by_tenant(rows: Vec<OutboxStats>, now: chrono::DateTime<Utc>) -> Vec<(String, TenantOutbox)> {
    let mut tenants: HashMap<String, TenantOutbox> = HashMap::new();
    for row in rows {
        let t = tenants.entry(row.tenant).or_default();
        t.queued.insert(row.kind.clone(), row.queued);
        t.dead.insert(row.kind.clone(), row.dead);
        if let Some(oldest) = row.oldest_queued {
            t.lag.insert(row.kind, (now - oldest).num_milliseconds().max(0) as f64 / 1000.0);
        }
    }
    otc_telemetry::metrics::top_tenants(tenants.into_iter().collect(), TenantOutbox::weight, TenantOutbox::merge)
}

const KINDS: [&str; 2] = ["index", "embed"];

/// Records one reading; `shown` is the tenants the last one recorded, which read 0 now if gone.
pub fn record(tenants: &[(String, TenantOutbox)], shown: &mut HashSet<String>) {
    let m = otc_telemetry::metrics();
    let now: HashSet<String> = tenants.iter().map(|(t, _)| t.clone()).collect();
    let gone = shown.difference(&now).cloned().map(|t| (t, TenantOutbox::default()));
    for (tenant, outbox) in tenants.iter().cloned().chain(gone) {
        for kind in KINDS {
            let labels = [KeyValue::new("tenant", tenant.clone()), KeyValue::new("kind", kind)];
            m.outbox_depth.record(outbox.queued.get(kind).copied().unwrap_or(0), &labels);
            m.outbox_dead.record(outbox.dead.get(kind).copied().unwrap_or(0), &labels);
        }
        let lag = |kind: &str| outbox.lag.get(kind).copied().unwrap_or(0.0);
        let tenant_label = [KeyValue::new("tenant", tenant.clone())];
        m.index_lag.record(lag("index"), &tenant_label);
        m.embedding_lag.record(lag("embed"), &tenant_label);
    }
    *shown = now;
}

/// Reads and records every `every` until `shutdown` resolves.
pub async fn run(store: Store, every: Duration, shutdown: impl Future<Output = ()>) {
    tokio::pin!(shutdown);
    let mut shown = HashSet::new();
    loop {
        match store.outbox_stats().await {
            Ok(rows) => record(&by_tenant(rows, Utc::now()), &mut shown),
            Err(e) => tracing::debug!(error = %e, "could not read the outbox for the metrics"),
        }
        tokio::select! {
            () = &mut shutdown => break,
            () = tokio::time::sleep(every) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_is_the_oldest_queued_job_and_other_sums_the_rest() {
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
        }
        let tenants = by_tenant(rows, now);
        assert_eq!(tenants.len(), otc_telemetry::metrics::TENANT_LABELS + 1);
        let (name, acme) = &tenants[0];
        assert_eq!(name, "acme");
        assert_eq!(acme.queued["embed"], 5);
        assert_eq!(acme.dead["embed"], 1);
        assert_eq!(acme.lag["index"], 12.0);
        let (other, rest) = tenants.last().unwrap();
        assert_eq!(other, "other");
        assert_eq!(rest.queued["index"], 3);
    }
}
