//! The worker role: background work off the request path.
//!
//! Periodic work runs on one worker at a time, the holder of a Redis lease (leader election);
//! the others stand by and take over when the lease lapses. The periodic work is the sweep:
//! dead tokens, old snapshots and unreferenced blobs. (Commits also write `index` jobs to the
//! outbox; their consumer, the indexer, arrives with the index work.)

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use otc_blobs::Blobs;
use otc_kv::Kv;
use otc_store::Store;

/// The lease that elects the one worker doing periodic work.
pub const SWEEP_LEASE: &str = "worker:sweep";

#[derive(Debug, Clone)]
pub struct WorkerSettings {
    pub sweep_interval: Duration,
    pub lease_ttl: Duration,
    pub token_retention: chrono::Duration,
    /// An unreferenced blob is collected once it is this old.
    pub gc_grace: chrono::Duration,
    /// Snapshots kept per path.
    pub snapshots_per_path: i64,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SweepReport {
    pub tenants: usize,
    pub tokens_purged: u64,
    pub snapshots_pruned: u64,
    pub blobs_collected: u64,
    pub tenants_failed: usize,
}

/// Blobs collected per transaction.
const GC_BATCH: i64 = 500;

/// One pass over every tenant: deletes tokens revoked or expired longer ago than the
/// retention, prunes snapshots beyond the per-path limit, and collects blobs nothing references
/// once their grace period is over. A tenant that fails is logged and counted; the others
/// still run.
pub async fn sweep_once(store: &Store, blobs: &Blobs, settings: &WorkerSettings) -> Result<SweepReport, otc_store::StoreError> {
    let mut report = SweepReport::default();
    for tenant in store.tenant_ids().await? {
        report.tenants += 1;
        match sweep_tenant(store, blobs, settings, tenant, &mut report).await {
            Ok(()) => {}
            Err(e) => {
                report.tenants_failed += 1;
                tracing::error!(%tenant, error = %e, "sweep failed for tenant");
            }
        }
    }
    Ok(report)
}

async fn sweep_tenant(
    store: &Store,
    blobs: &Blobs,
    settings: &WorkerSettings,
    tenant: uuid::Uuid,
    report: &mut SweepReport,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut tx = store.begin(tenant).await?;
    report.tokens_purged += tx.purge_dead_tokens(Utc::now() - settings.token_retention).await?;
    report.snapshots_pruned += tx.prune_snapshots(settings.snapshots_per_path).await?;
    tx.commit().await?;
    loop {
        // The rows stay locked while their objects are deleted, so an upload of the same
        // content waits and then writes both again.
        let mut tx = store.begin(tenant).await?;
        let doomed = tx.unreferenced_blobs(Utc::now() - settings.gc_grace, GC_BATCH).await?;
        if doomed.is_empty() {
            return Ok(());
        }
        for hash in &doomed {
            blobs.delete_blob(tenant, hash).await?;
        }
        report.blobs_collected += tx.forget_blobs(&doomed).await?;
        tx.commit().await?;
        if (doomed.len() as i64) < GC_BATCH {
            return Ok(());
        }
    }
}

/// A worker process's main loop.
pub struct Worker {
    store: Store,
    kv: Arc<Kv>,
    blobs: Blobs,
    settings: WorkerSettings,
    /// This worker's identity in the lease.
    holder: String,
}

impl Worker {
    pub fn new(store: Store, kv: Arc<Kv>, blobs: Blobs, settings: WorkerSettings) -> Self {
        let holder = format!("{}:{}", std::process::id(), uuid::Uuid::new_v4().simple());
        Self { store, kv, blobs, settings, holder }
    }

    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// Runs until `shutdown` resolves, then gives up the lease so another worker can take over
    /// at once.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        // Renew well before the lease can lapse; sweep no more often than configured.
        let tick = (self.settings.lease_ttl / 3).min(self.settings.sweep_interval);
        let mut leader = false;
        let mut next_sweep = tokio::time::Instant::now();
        tracing::info!(holder = %self.holder, "worker started");
        loop {
            leader = match self.keep_lease(leader).await {
                Ok(now_leader) => {
                    if now_leader != leader {
                        tracing::info!(leader = now_leader, "sweep leadership changed");
                    }
                    now_leader
                }
                Err(e) => {
                    tracing::warn!(error = ?e, "cannot reach redis for the lease; standing by");
                    false
                }
            };
            if leader && tokio::time::Instant::now() >= next_sweep {
                match sweep_once(&self.store, &self.blobs, &self.settings).await {
                    Ok(report) => tracing::info!(?report, "sweep done"),
                    Err(e) => tracing::warn!(error = ?e, "sweep failed; will retry"),
                }
                next_sweep = tokio::time::Instant::now() + self.settings.sweep_interval;
            }
            tokio::select! {
                () = &mut shutdown => break,
                () = tokio::time::sleep(tick) => {}
            }
        }
        if leader && let Err(e) = self.kv.release_lease(SWEEP_LEASE, &self.holder).await {
            tracing::warn!(error = ?e, "could not release the sweep lease; it lapses by itself");
        }
        tracing::info!("worker stopped");
    }

    async fn keep_lease(&self, leader: bool) -> Result<bool, otc_kv::KvError> {
        let ttl = self.settings.lease_ttl;
        if leader && self.kv.renew_lease(SWEEP_LEASE, &self.holder, ttl).await? {
            return Ok(true);
        }
        self.kv.try_acquire_lease(SWEEP_LEASE, &self.holder, ttl).await
    }
}
