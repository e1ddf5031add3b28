//! The worker role: background work off the request path.
//!
//! Each tenant's sweep (dead tokens and secrets, the audit trail past its retention, old
//! snapshots, forgotten uploads, unreferenced blobs) is an upkeep item in Postgres that any
//! worker claims when it is due ([`Worker::run`]'s upkeep loop): one indexed query finds the due
//! items across tenants, the claim is renewed while the item runs and the run stops if it cannot
//! be, and an idle tenant costs nothing between its due times. Every worker also runs the
//! indexer (`otc_indexer`), which claims outbox jobs with `FOR UPDATE SKIP LOCKED`, and, given
//! the tools, writes the wikis' generated pages from their `wiki_pages` jobs the same way.
//!
//! What is not per tenant runs on one worker at a time, the holder of a Redis lease (leader
//! election), the others standing by: the purge of unused OAuth clients, reconcile mode, and
//! the scheduled wiki upkeep (`[maintenance]`).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use otc_blobs::Blobs;
use otc_kv::Kv;
use otc_store::Store;

pub mod outbox_metrics;

/// The lease that elects the one worker doing periodic work.
pub const SWEEP_LEASE: &str = "worker:sweep";

/// What one reconcile pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReconcileReport {
    pub imported: usize,
    pub deleted: usize,
    pub unchanged: usize,
    /// Objects whose names cannot be vault paths.
    pub skipped: usize,
}

/// Reconcile mode: brings a vault's manifest in line with the plain objects under its prefix.
/// New and changed objects are read, stored as blobs and committed; objects that disappeared
/// are deleted from the vault (only paths this mode imported). Unchanged objects (same size,
/// time and e-tag as last imported) are not read again.
pub async fn reconcile_once(
    store: &Store,
    kv: &Arc<Kv>,
    blobs: &Blobs,
    target: &otc_config::ReconcileTarget,
) -> Result<ReconcileReport, Box<dyn std::error::Error + Send + Sync>> {
    use otc_store::{Action, Change, Expect, Provenance, ReconcileEntry};
    let tenant = store.resolve_tenant(&target.tenant).await?;
    let mut tx = store.begin(tenant).await?;
    let vault =
        tx.vault_by_name(&target.vault).await?.ok_or_else(|| format!("reconcile: no vault {:?}", target.vault))?;
    let known: std::collections::HashMap<String, ReconcileEntry> =
        tx.reconcile_state(vault.id).await?.into_iter().map(|e| (e.path.clone(), e)).collect();
    tx.commit().await?;

    let ignore = otc_vault::ignore::Ignore::new("");
    let mut report = ReconcileReport::default();
    let mut changes = Vec::new();
    let mut entries = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for object in blobs.list_plain(&target.prefix).await? {
        if otc_vault::check_path(&object.path).is_err() || ignore.is_ignored(&object.path) {
            report.skipped += 1;
            continue;
        }
        seen.insert(object.path.clone());
        if let Some(k) = known.get(&object.path)
            && k.size == object.size
            && k.modified == object.modified
            && k.e_tag == object.e_tag
        {
            report.unchanged += 1;
            continue;
        }
        let bytes = match blobs.get_plain(&target.prefix, &object.path).await {
            Ok(bytes) => bytes,
            // Gone since the listing (or a key no vault path reads back): the next pass decides.
            Err(otc_blobs::BlobError::NotFound) => {
                report.skipped += 1;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let hash = Blobs::hash_of(&bytes);
        let mut tx = store.begin(tenant).await?;
        tx.record_blob(&hash, bytes.len() as i64).await?;
        tx.commit().await?;
        blobs.put_blob(tenant, &hash, bytes).await?;
        changes.push(Change {
            path: object.path.clone(),
            expect: Expect::Any,
            action: Action::Put { hash, size: object.size, mtime: object.modified },
        });
        entries.push(ReconcileEntry {
            path: object.path,
            size: object.size,
            modified: object.modified,
            e_tag: object.e_tag,
            hash,
        });
    }
    let gone: Vec<String> = known.keys().filter(|p| !seen.contains(*p)).cloned().collect();
    let who = Provenance {
        tool: Some("reconcile".into()),
        client_name: Some("obsidian-tc worker".into()),
        ..Provenance::default()
    };
    let mut tx = store.begin(tenant).await?;
    let present = tx.existing_paths(vault.id, &gone).await?;
    for path in &gone {
        if present.contains(path) {
            changes.push(Change { path: path.clone(), expect: Expect::Any, action: Action::Delete });
        }
        tx.clear_reconcile_state(vault.id, path).await?;
    }
    report.deleted = changes.iter().filter(|c| c.action == Action::Delete).count();
    report.imported = changes.len() - report.deleted;
    for batch in changes.chunks(500) {
        let job = otc_indexer::commit::index_job(batch.iter().map(|c| c.path.as_str()));
        tx.commit_changes(vault.id, batch, &who, &[job])
            .await?
            .map_err(|stale| format!("reconcile: stale {:?}", stale.paths))?;
    }
    for entry in &entries {
        tx.set_reconcile_state(vault.id, entry).await?;
    }
    tx.commit().await?;
    if !changes.is_empty() {
        otc_kv::vault_changed(kv, vault.id).await;
    }
    Ok(report)
}

#[derive(Debug, Clone)]
pub struct WorkerSettings {
    pub sweep_interval: Duration,
    pub lease_ttl: Duration,
    pub token_retention: chrono::Duration,
    /// Days audit records are kept, for a tenant that set no retention of its own.
    pub audit_retention_days: i32,
    /// An unreferenced blob is collected once it is this old.
    pub gc_grace: chrono::Duration,
    /// Snapshots kept per path.
    pub snapshots_per_path: i64,
    /// Vaults in reconcile mode.
    pub reconcile: Vec<otc_config::ReconcileTarget>,
    /// How long an OAuth client no token request names is kept (the refresh tokens' lifetime).
    pub oauth_client_retention: chrono::Duration,
    /// The leader's periodic wiki upkeep (with [`Worker::with_wiki`]).
    pub maintenance: otc_config::MaintenanceConfig,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SweepReport {
    pub tenants: usize,
    pub tokens_purged: u64,
    /// Authorization codes and refresh tokens past their expiry, and identity-assertion ids.
    pub oauth_secrets_purged: u64,
    /// OAuth clients no token request named for `oauth_client_retention`.
    pub oauth_clients_purged: u64,
    pub audit_records_purged: u64,
    pub snapshots_pruned: u64,
    pub blobs_collected: u64,
    /// Upload records past the grace period (a commit may no longer name their content on
    /// the strength of the upload alone).
    pub uploads_forgotten: u64,
    pub tenants_failed: usize,
}

/// Blobs collected per transaction.
const GC_BATCH: i64 = 500;
/// The longest one tenant's sweep runs at a time: past it, the item is handed back due at once
/// (the rest waits for the next claim, behind other tenants' due items).
const SWEEP_BUDGET: Duration = Duration::from_secs(60);
/// How often a worker with no due item looks again (at most).
const UPKEEP_POLL: Duration = Duration::from_secs(5);
/// How often the leader reconciles the vaults in reconcile mode (at most).
const RECONCILE_EVERY: Duration = Duration::from_secs(60);

/// One pass over every tenant at once (tests and operators; the workers sweep each tenant as its
/// upkeep item comes due): deletes tokens revoked or expired longer ago than the retention and
/// audit records past the tenant's retention, prunes snapshots beyond the per-path limit,
/// forgets upload records and collects blobs nothing references once their grace period is
/// over. A tenant that fails is logged and counted; the others still run.
pub async fn sweep_once(
    store: &Store,
    blobs: &Blobs,
    settings: &WorkerSettings,
) -> Result<SweepReport, otc_store::StoreError> {
    // Registration is open to anyone: clients no token request named for as long as a refresh
    // token lives are gone (they register again).
    let oauth_clients_purged = store.purge_unused_oauth_clients(Utc::now() - settings.oauth_client_retention).await?;
    let mut report = SweepReport { oauth_clients_purged, ..Default::default() };
    for tenant in store.tenant_ids().await? {
        report.tenants += 1;
        match sweep_tenant(store, blobs, settings, tenant, &mut report, None).await {
            Ok(_) => {}
            Err(e) => {
                report.tenants_failed += 1;
                tracing::error!(%tenant, error = %e, "sweep failed for tenant");
            }
        }
    }
    Ok(report)
}

/// Sweeps one tenant; with a `deadline`, stops collecting blobs past it. True when it finished.
async fn sweep_tenant(
    store: &Store,
    blobs: &Blobs,
    settings: &WorkerSettings,
    tenant: uuid::Uuid,
    report: &mut SweepReport,
    deadline: Option<tokio::time::Instant>,
) -> Result<bool, Box<dyn std::error::Error + Send + Sync>> {
    let mut tx = store.begin(tenant).await?;
    report.tokens_purged += tx.purge_dead_tokens(Utc::now() - settings.token_retention).await?;
    report.oauth_secrets_purged += tx.purge_dead_oauth_secrets(Utc::now() - settings.token_retention).await?;
    report.audit_records_purged += tx.purge_audit(settings.audit_retention_days).await?;
    report.snapshots_pruned += tx.prune_snapshots(settings.snapshots_per_path).await?;
    report.uploads_forgotten += tx.forget_uploads(Utc::now() - settings.gc_grace).await?;
    tx.commit().await?;
    loop {
        // The rows stay locked while their objects are deleted, so an upload of the same
        // content waits and then writes both again.
        let mut tx = store.begin(tenant).await?;
        let doomed = tx.unreferenced_blobs(Utc::now() - settings.gc_grace, GC_BATCH).await?;
        if doomed.is_empty() {
            return Ok(true);
        }
        for hash in &doomed {
            blobs.delete_blob(tenant, hash).await?;
        }
        report.blobs_collected += tx.forget_blobs(&doomed).await?;
        tx.commit().await?;
        if (doomed.len() as i64) < GC_BATCH {
            return Ok(true);
        }
        if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
            return Ok(false);
        }
    }
}

/// Every worker's share of the tenants' upkeep: claims the most overdue sweep item (one
/// indexed query across tenants), runs it while renewing the claim, hands it back due a period
/// later; looks again at once after an item, else after [`UPKEEP_POLL`]. Stops at `shutdown`,
/// giving back an item it holds unrun.
pub async fn upkeep_loop(store: Store, blobs: Blobs, settings: WorkerSettings, shutdown: impl Future<Output = ()>) {
    tokio::pin!(shutdown);
    let hold = settings.lease_ttl.max(Duration::from_secs(3));
    let poll = UPKEEP_POLL.min(settings.sweep_interval);
    loop {
        let claim = uuid::Uuid::new_v4();
        let claimed_at = tokio::time::Instant::now();
        let claimed = tokio::select! {
            () = &mut shutdown => return,
            claimed = store.claim_upkeep(otc_store::upkeep::SWEEP, claim, 1, hold) => claimed,
        };
        let tenant = match claimed {
            Ok(tenants) => tenants.first().copied(),
            Err(e) => {
                tracing::warn!(error = %otc_errors::error_chain(&e), "could not claim upkeep; will retry");
                None
            }
        };
        let Some(tenant) = tenant else {
            tokio::select! {
                () = &mut shutdown => return,
                () = tokio::time::sleep(poll) => continue,
            }
        };
        let mut report = SweepReport { tenants: 1, ..Default::default() };
        let end = tokio::select! {
            () = &mut shutdown => ItemEnd::Stopped,
            () = keep_claim(&store, tenant, claim, hold, claimed_at + hold) => ItemEnd::Lost,
            done = sweep_tenant(&store, &blobs, &settings, tenant, &mut report, Some(claimed_at + SWEEP_BUDGET)) => {
                match done {
                    Ok(finished) => ItemEnd::Ran { finished },
                    Err(e) => ItemEnd::Failed(otc_errors::error_chain(&*e)),
                }
            }
        };
        let period = chrono::Duration::from_std(settings.sweep_interval).unwrap_or(chrono::Duration::hours(1));
        let how = match end {
            ItemEnd::Ran { finished } => {
                tracing::debug!(%tenant, ?report, finished, "tenant swept");
                HandBack::Finish { next: if finished { Utc::now() + period } else { Utc::now() }, error: None }
            }
            ItemEnd::Failed(error) => {
                tracing::error!(%tenant, error = %error, "sweep failed for tenant; it is due again in a period");
                HandBack::Finish { next: Utc::now() + period, error: Some(error) }
            }
            ItemEnd::Lost => {
                tracing::warn!(%tenant, "the sweep's claim could not be renewed in time; stopped it (another worker may take it)");
                continue;
            }
            ItemEnd::Stopped => HandBack::Release,
        };
        let stopping = matches!(how, HandBack::Release);
        hand_back(&store, tenant, claim, how).await;
        if stopping {
            return;
        }
    }
}

/// What a worker does with an item it holds once done with it.
enum HandBack {
    /// Due again at `next`, with the run's error if it failed.
    Finish { next: chrono::DateTime<Utc>, error: Option<String> },
    /// Unrun, due as it was (the worker is stopping).
    Release,
}

/// Hands `tenant`'s sweep item back under `claim` (logged when the claim no longer held it, or
/// when Postgres could not be reached: the claim then lapses by itself).
async fn hand_back(store: &Store, tenant: uuid::Uuid, claim: uuid::Uuid, how: HandBack) {
    let kind = otc_store::upkeep::SWEEP;
    let done = async {
        let mut tx = store.begin(tenant).await?;
        let held = match &how {
            HandBack::Finish { next, error } => tx.finish_upkeep(kind, claim, *next, error.as_deref()).await?,
            HandBack::Release => tx.release_upkeep(kind, claim).await?,
        };
        tx.commit().await?;
        Ok::<_, otc_store::StoreError>(held)
    };
    match done.await {
        Ok(true) => {}
        Ok(false) => tracing::warn!(%tenant, "the sweep item was no longer this worker's to hand back"),
        Err(e) => {
            tracing::warn!(%tenant, error = %otc_errors::error_chain(&e), "could not hand an upkeep item back; its claim lapses by itself")
        }
    }
}

/// Renews `tenant`'s claim every third of `hold`; returns once it can no longer vouch for it:
/// the claim was taken, or could not be renewed before `held_until` (as this worker's clock
/// counts, from before each request went out).
async fn keep_claim(
    store: &Store,
    tenant: uuid::Uuid,
    claim: uuid::Uuid,
    hold: Duration,
    mut held_until: tokio::time::Instant,
) {
    loop {
        tokio::time::sleep(hold / 3).await;
        let asked = tokio::time::Instant::now();
        let renewed = async {
            let mut tx = store.begin(tenant).await?;
            let held = tx.renew_upkeep(otc_store::upkeep::SWEEP, claim, hold).await?;
            tx.commit().await?;
            Ok::<_, otc_store::StoreError>(held)
        };
        match tokio::time::timeout(hold / 4, renewed).await {
            Ok(Ok(true)) => held_until = asked + hold,
            Ok(Ok(false)) => return,
            Ok(Err(e)) => {
                tracing::warn!(%tenant, error = %otc_errors::error_chain(&e), "could not renew an upkeep claim")
            }
            Err(_) => tracing::warn!(%tenant, "renewing an upkeep claim timed out"),
        }
        // The next renewal would come too late: stop while the claim still holds.
        if tokio::time::Instant::now() + hold / 3 + hold / 4 >= held_until {
            return;
        }
    }
}

/// How one claimed item ended.
enum ItemEnd {
    /// Ran: hand it back due after a period (or at once, when it stopped at its budget).
    Ran {
        finished: bool,
    },
    Failed(String),
    /// The claim could not be renewed in time: another worker may hold it now.
    Lost,
    /// The worker is stopping.
    Stopped,
}

/// A worker process's main loop.
pub struct Worker {
    store: Store,
    kv: Arc<Kv>,
    blobs: Blobs,
    settings: WorkerSettings,
    /// This worker's identity in the lease.
    holder: String,
    indexer: Option<otc_indexer::Indexer>,
    embedding: Option<otc_indexer::embedding::Embedding>,
    /// The tools, for the wiki's generated pages and the scheduled lint.
    wiki: Option<Arc<otc_kernel::Dispatcher>>,
}

/// Attempts at a vault's generated pages before its job is dead-lettered.
const WIKI_PAGES_ATTEMPTS: i32 = 8;
/// How often a worker with nothing to do looks for generated-page jobs.
const WIKI_PAGES_POLL: Duration = Duration::from_secs(1);

/// A period of `hours` hours.
fn hours(hours: f64) -> Duration {
    Duration::from_secs_f64((hours * 3600.0).max(1.0))
}

impl Worker {
    pub fn new(store: Store, kv: Arc<Kv>, blobs: Blobs, settings: WorkerSettings) -> Self {
        let holder = format!("{}:{}", std::process::id(), uuid::Uuid::new_v4().simple());
        Self { store, kv, blobs, settings, holder, indexer: None, embedding: None, wiki: None }
    }

    /// Also writes the wikis' generated pages (their `wiki_pages` jobs) until shutdown, and,
    /// as the leader, runs the scheduled upkeep `settings.maintenance` turns on.
    pub fn with_wiki(mut self, tools: Arc<otc_kernel::Dispatcher>) -> Self {
        self.wiki = Some(tools);
        self
    }

    /// Also runs `indexer` until shutdown.
    pub fn with_indexer(mut self, indexer: otc_indexer::Indexer) -> Self {
        self.indexer = Some(indexer);
        self
    }

    /// Also runs the embedding passes until shutdown.
    pub fn with_embedding(mut self, embedding: otc_indexer::embedding::Embedding) -> Self {
        self.embedding = Some(embedding);
        self
    }

    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// Runs until `shutdown` resolves, then gives up the lease so another worker can take over
    /// at once.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let indexing = self.indexer.clone().map(|indexer| {
            let mut stopped = stopped.clone();
            tokio::spawn(async move {
                indexer
                    .run(async move {
                        let _ = stopped.wait_for(|s| *s).await;
                    })
                    .await
            })
        });
        let embedding = self.embedding.clone().map(|embedding| {
            let mut stopped = stopped.clone();
            tokio::spawn(async move {
                embedding
                    .run(async move {
                        let _ = stopped.wait_for(|s| *s).await;
                    })
                    .await
            })
        });
        let wiki_pages = self.wiki.clone().map(|tools| {
            let mut stopped = stopped.clone();
            tokio::spawn(async move {
                loop {
                    let busy =
                        match otc_tools::tools::knowledge::wiki::pages::run_jobs(&tools, WIKI_PAGES_ATTEMPTS).await {
                            Ok(done) => done > 0,
                            Err(e) => {
                                tracing::warn!(error = %otc_errors::error_chain(&e), "wiki pages pass failed");
                                false
                            }
                        };
                    tokio::select! {
                        _ = stopped.wait_for(|s| *s) => return,
                        () = tokio::time::sleep(if busy { Duration::ZERO } else { WIKI_PAGES_POLL }) => {}
                    }
                }
            })
        });
        let upkeep = {
            let mut stopped = stopped.clone();
            let (store, blobs, settings) = (self.store.clone(), self.blobs.clone(), self.settings.clone());
            tokio::spawn(upkeep_loop(store, blobs, settings, async move {
                let _ = stopped.wait_for(|s| *s).await;
            }))
        };
        self.sweep_loop(shutdown).await;
        let _ = stop.send(true);
        let upkeep = Some(upkeep);
        for (name, task) in
            [("indexer", indexing), ("embedding", embedding), ("wiki pages", wiki_pages), ("upkeep", upkeep)]
        {
            if let Some(task) = task
                && let Err(e) = task.await
            {
                tracing::warn!(error = %e, task = name, "worker task ended abnormally");
            }
        }
        tracing::info!("worker stopped");
    }

    async fn sweep_loop(&self, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        // The leader renews well before the lease can lapse; a standby asks more often, so a
        // lease left by a killed leader is taken within a tenth of its period of lapsing. Sweep
        // no more often than configured.
        let renew_every = (self.settings.lease_ttl / 3).min(self.settings.sweep_interval);
        let standby_every = (self.settings.lease_ttl / 10).min(self.settings.sweep_interval);
        let mut leader = false;
        let mut next_sweep = tokio::time::Instant::now();
        let mut next_reconcile = next_sweep;
        let mut scheduled = Scheduled::default();
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
            otc_telemetry::metrics().worker_leader.record(i64::from(leader), &[]);
            if leader && tokio::time::Instant::now() >= next_sweep {
                // Registration is open to anyone: clients no token request named for as long as
                // a refresh token lives are gone (they register again).
                let unused_since = Utc::now() - self.settings.oauth_client_retention;
                match self.store.purge_unused_oauth_clients(unused_since).await {
                    Ok(purged) => tracing::info!(purged, "unused OAuth clients purged"),
                    Err(e) => tracing::warn!(error = ?e, "purging unused OAuth clients failed; will retry"),
                }
                next_sweep = tokio::time::Instant::now() + self.settings.sweep_interval;
            }
            if leader && tokio::time::Instant::now() >= next_reconcile {
                for target in &self.settings.reconcile {
                    match reconcile_once(&self.store, &self.kv, &self.blobs, target).await {
                        Ok(report) => tracing::info!(vault = %target.vault, ?report, "reconciled"),
                        Err(e) => tracing::warn!(vault = %target.vault, error = %e, "reconcile failed; will retry"),
                    }
                }
                next_reconcile = tokio::time::Instant::now() + self.settings.sweep_interval.min(RECONCILE_EVERY);
            }
            if leader {
                self.upkeep(&mut scheduled).await;
            } else {
                scheduled.stop();
            }
            let tick = if leader { renew_every } else { standby_every };
            tokio::select! {
                () = &mut shutdown => break,
                () = tokio::time::sleep(tick) => {}
            }
        }
        scheduled.stop();
        if leader && let Err(e) = self.kv.release_lease(SWEEP_LEASE, &self.holder).await {
            tracing::warn!(error = ?e, "could not release the sweep lease; it lapses by itself");
        }
        otc_telemetry::metrics().worker_leader.record(0, &[]);
    }

    /// The leader's scheduled upkeep, each when its period is up: the wiki lint over every
    /// vault and the contradiction detector's pass (each in a task of its own, one run at a
    /// time), and a regeneration of every wiki's generated pages (queued as jobs). A period is a record in Redis that lives as long as
    /// the interval: whoever leads when it has lapsed starts the next run, so a change of
    /// leader neither repeats nor skips one.
    async fn upkeep(&self, scheduled: &mut Scheduled) {
        let (Some(tools), m) = (&self.wiki, &self.settings.maintenance) else { return };
        if !m.enabled {
            return;
        }
        if m.wiki_lint.enabled
            && !running(&scheduled.lint)
            && self.period_starts("maintenance:wiki_lint", m.wiki_lint.interval_hours).await
        {
            let (tools, lint) = (tools.clone(), m.wiki_lint.clone());
            scheduled.lint = Some(tokio::spawn(async move {
                match otc_tools::tools::knowledge::maintenance::lint_all(
                    &tools,
                    lint.max_notes,
                    lint.judge,
                    lint.judge_max_calls,
                )
                .await
                {
                    Ok(run) => tracing::info!(vaults = run.vaults, failed = run.failed, "scheduled wiki lint done"),
                    Err(e) => tracing::warn!(error = %otc_errors::error_chain(&e), "scheduled wiki lint failed"),
                }
            }));
        }
        if m.contradictions.enabled
            && !running(&scheduled.contradictions)
            && self.period_starts("maintenance:contradictions", m.contradictions.interval_hours).await
        {
            let (tools, max_pairs) = (tools.clone(), m.contradictions.max_pairs);
            scheduled.contradictions = Some(tokio::spawn(async move {
                match otc_tools::tools::knowledge::maintenance::detect_contradictions(&tools, max_pairs).await {
                    Ok(run) => tracing::info!(?run, "contradiction detector pass done"),
                    Err(e) => {
                        tracing::warn!(error = %otc_errors::error_chain(&e), "contradiction detector pass failed")
                    }
                }
            }));
        }
        if m.wiki_pages.enabled && self.period_starts("maintenance:wiki_pages", m.wiki_pages.interval_hours).await {
            match otc_tools::tools::knowledge::wiki::pages::queue_all(tools).await {
                Ok(n) => tracing::info!(vaults = n, "wiki pages regeneration queued"),
                Err(e) => tracing::warn!(error = %otc_errors::error_chain(&e), "queueing wiki pages failed"),
            }
        }
    }

    /// Whether a period of `hours` named `name` starts now (none is running, in Redis).
    async fn period_starts(&self, name: &str, hours: f64) -> bool {
        match self.kv.create_record(name, &self.holder, self::hours(hours)).await {
            Ok(started) => started,
            Err(e) => {
                tracing::warn!(error = ?e, period = name, "cannot reach redis for the upkeep's period; skipped");
                false
            }
        }
    }

    async fn keep_lease(&self, leader: bool) -> Result<bool, otc_kv::KvError> {
        let ttl = self.settings.lease_ttl;
        if leader && self.kv.renew_lease(SWEEP_LEASE, &self.holder, ttl).await? {
            return Ok(true);
        }
        self.kv.try_acquire_lease(SWEEP_LEASE, &self.holder, ttl).await
    }
}

/// The leader's scheduled runs, each in a task of its own while it runs (so the lease is renewed
/// meanwhile), one run at a time each; stopped when the lease is lost or the worker stops.
#[derive(Default)]
struct Scheduled {
    lint: Option<tokio::task::JoinHandle<()>>,
    contradictions: Option<tokio::task::JoinHandle<()>>,
}

impl Scheduled {
    fn stop(&mut self) {
        for task in [self.lint.take(), self.contradictions.take()].into_iter().flatten() {
            task.abort();
        }
    }
}

fn running(task: &Option<tokio::task::JoinHandle<()>>) -> bool {
    task.as_ref().is_some_and(|t| !t.is_finished())
}
