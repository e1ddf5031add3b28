//! The outbox in the metrics: each tenant's queued and dead jobs by kind and the age of its
//! oldest queued job, read every interval. The gauges name at most
//! [`otc_telemetry::metrics::TENANT_LABELS`] tenants (the most work first) and sum the rest
//! under [`otc_telemetry::metrics::OTHER_TENANTS`]; each collection reports the latest reading
//! only, so a tenant that drops out of it is gone from the metrics.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use chrono::Utc;
use otc_store::{OutboxStats, Store};
use otc_telemetry::metrics::TenantWork;

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

/// Reads the outbox into the metrics every `every` until `shutdown` resolves. A failed read
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
        tokio::select! {
            () = &mut shutdown => break,
            () = tokio::time::sleep(every) => {}
        }
    }
    metrics.set_outbox(Vec::new());
}

#[cfg(test)]
mod tests {
    use super::*;

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
