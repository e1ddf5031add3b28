//! The worker role: background work off the request path.
//!
//! Periodic work runs on one worker at a time, the holder of a Redis lease (leader election);
//! the others stand by and take over when the lease lapses. Today the periodic work is the
//! token sweep; later work adds the job queue (indexing, embedding, GC) here.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use otc_kv::Kv;
use otc_store::Store;

/// The lease that elects the one worker doing periodic work.
pub const SWEEP_LEASE: &str = "worker:sweep";

#[derive(Debug, Clone)]
pub struct WorkerSettings {
    pub sweep_interval: Duration,
    pub lease_ttl: Duration,
    pub token_retention: chrono::Duration,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SweepReport {
    pub tenants: usize,
    pub tokens_purged: u64,
    pub tenants_failed: usize,
}

/// One pass over every tenant: deletes tokens revoked or expired longer ago than `retention`.
/// A tenant that fails is logged and counted, and the others still run.
pub async fn sweep_once(store: &Store, retention: chrono::Duration) -> Result<SweepReport, otc_store::StoreError> {
    let before = Utc::now() - retention;
    let mut report = SweepReport::default();
    for tenant in store.tenant_ids().await? {
        report.tenants += 1;
        let purge = async {
            let mut tx = store.begin(tenant).await?;
            let purged = tx.purge_dead_tokens(before).await?;
            tx.commit().await?;
            Ok::<_, otc_store::StoreError>(purged)
        };
        match purge.await {
            Ok(purged) => report.tokens_purged += purged,
            Err(e) => {
                report.tenants_failed += 1;
                tracing::error!(%tenant, error = ?e, "token sweep failed for tenant");
            }
        }
    }
    Ok(report)
}

/// A worker process's main loop.
pub struct Worker {
    store: Store,
    kv: Arc<Kv>,
    settings: WorkerSettings,
    /// This worker's identity in the lease.
    holder: String,
}

impl Worker {
    pub fn new(store: Store, kv: Arc<Kv>, settings: WorkerSettings) -> Self {
        let holder = format!("{}:{}", std::process::id(), uuid::Uuid::new_v4().simple());
        Self { store, kv, settings, holder }
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
                match sweep_once(&self.store, self.settings.token_retention).await {
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
