//! The worker role: background work off the request path.
//!
//! Each tenant's periodic work is a set of upkeep items in Postgres that any worker claims when
//! they come due ([`upkeep_loop`]): the sweep (dead tokens and secrets, the audit trail past its
//! retention, old snapshots, forgotten uploads, unreferenced blobs), the embedding upkeep, the
//! scheduled wiki upkeep `[maintenance]` turns on (lint, generated pages, the contradiction
//! detector), and, asked for by the indexer rather than on a period, the full merge of a vault's
//! full-text segments. One indexed query finds the due items across tenants, the claim is
//! renewed while the item runs and the run stops if it cannot be, and an idle tenant costs
//! nothing between its due times. Every worker also runs the indexer (`otc_indexer`) and the
//! embedding passes, which find the vaults with due outbox jobs across tenants in one query and
//! claim their jobs with `FOR UPDATE SKIP LOCKED`, and, given the tools, writes the wikis'
//! generated pages from their `wiki_pages` jobs the same way.
//!
//! What is not per tenant runs on one worker at a time, the holder of a Redis lease (leader
//! election), the others standing by: the purge of unused OAuth clients and reconcile mode.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use otc_blobs::Blobs;
use otc_kv::Kv;
use otc_store::Store;

pub mod erasure;
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
    /// The tenants' scheduled wiki upkeep (with [`Worker::with_wiki`]).
    pub maintenance: otc_config::MaintenanceConfig,
    /// After shutdown is asked for, how long running work gets to stop before it is dropped.
    pub shutdown_grace: Duration,
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
/// How long a stopping worker waits for Redis to take the lease back.
const LEASE_RELEASE_WAIT: Duration = Duration::from_secs(2);
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
) -> Result<bool, BoxError> {
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

/// The kinds of upkeep a worker runs, with what runs each: every worker sweeps and erases what
/// tenants deleted once its grace is over; one with an
/// indexer merges full-text segments when a batch asked for it; one with an embedding provider
/// keeps the tenants' embedding sets; one with the tools runs the scheduled wiki upkeep that
/// `[maintenance]` turns on.
struct Upkeep {
    store: Store,
    blobs: Blobs,
    kv: Arc<Kv>,
    settings: WorkerSettings,
    indexer: Option<otc_indexer::Indexer>,
    /// Only when a provider is configured.
    embedding: Option<otc_indexer::embedding::Embedding>,
    tools: Option<Arc<otc_kernel::Dispatcher>>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A kind of upkeep this worker was not given what it needs to run.
fn not_run_here(kind: &str) -> BoxError {
    format!("this worker does not run {kind} upkeep").into()
}

impl Upkeep {
    /// The kinds this worker claims.
    fn kinds(&self) -> Vec<&'static str> {
        use otc_store::upkeep::{CONTRADICTIONS, EMBEDDING, FTS_MERGE, SWEEP, WIKI_LINT, WIKI_PAGES};
        let mut kinds = vec![SWEEP, otc_store::erasure::ERASE];
        kinds.extend(self.indexer.as_ref().map(|_| FTS_MERGE));
        kinds.extend(self.embedding.as_ref().map(|_| EMBEDDING));
        let m = &self.settings.maintenance;
        if self.tools.is_some() && m.enabled {
            kinds.extend(m.wiki_lint.enabled.then_some(WIKI_LINT));
            kinds.extend(m.wiki_pages.enabled.then_some(WIKI_PAGES));
            kinds.extend(m.contradictions.enabled.then_some(CONTRADICTIONS));
        }
        kinds
    }

    /// How long after a finished run the item is due again; None: when next asked for.
    fn period(&self, kind: &str) -> Option<Duration> {
        let m = &self.settings.maintenance;
        match kind {
            otc_store::upkeep::SWEEP => Some(self.settings.sweep_interval),
            otc_store::upkeep::EMBEDDING => self.embedding.as_ref().map(|e| e.maintain_interval()),
            otc_store::upkeep::WIKI_LINT => Some(hours(m.wiki_lint.interval_hours)),
            otc_store::upkeep::WIKI_PAGES => Some(hours(m.wiki_pages.interval_hours)),
            otc_store::upkeep::CONTRADICTIONS => Some(hours(m.contradictions.interval_hours)),
            _ => None,
        }
    }

    /// Runs `tenant`'s `kind` item, stopping at `deadline` where the kind allows; true when it
    /// finished.
    async fn run(&self, tenant: uuid::Uuid, kind: &str, deadline: tokio::time::Instant) -> Result<bool, BoxError> {
        match (kind, &self.indexer, &self.embedding) {
            (otc_store::upkeep::SWEEP, _, _) => {
                let mut report = SweepReport { tenants: 1, ..Default::default() };
                let finished =
                    sweep_tenant(&self.store, &self.blobs, &self.settings, tenant, &mut report, Some(deadline)).await?;
                tracing::debug!(%tenant, ?report, finished, "tenant swept");
                Ok(finished)
            }
            (otc_store::erasure::ERASE, _, _) => {
                let report = erasure::erase_due(&self.store, &self.blobs, &self.kv, tenant, Some(deadline)).await?;
                tracing::debug!(%tenant, ?report, "erase pass");
                Ok(report.finished)
            }
            (otc_store::upkeep::FTS_MERGE, Some(indexer), _) => {
                let merged = indexer.merge_tenant(tenant).await.map_err(|e| e.chain())?;
                tracing::debug!(%tenant, merged, "full-text segments merged");
                Ok(true)
            }
            (otc_store::upkeep::EMBEDDING, _, Some(embedding)) => {
                let report = embedding.maintain_tenant(tenant).await?;
                tracing::debug!(%tenant, ?report, "embedding upkeep");
                Ok(true)
            }
            _ => self.run_maintenance(tenant, kind).await,
        }
    }

    /// The scheduled wiki upkeep of one tenant (`[maintenance]`).
    async fn run_maintenance(&self, tenant: uuid::Uuid, kind: &str) -> Result<bool, BoxError> {
        let (Some(tools), m) = (&self.tools, &self.settings.maintenance) else { return Err(not_run_here(kind)) };
        match kind {
            otc_store::upkeep::WIKI_LINT => {
                let l = &m.wiki_lint;
                let run = otc_tools::tools::knowledge::maintenance::lint_tenant(
                    tools,
                    tenant,
                    l.max_notes,
                    l.judge,
                    l.judge_max_calls,
                )
                .await?;
                tracing::info!(%tenant, vaults = run.vaults, failed = run.failed, "scheduled wiki lint done");
            }
            otc_store::upkeep::WIKI_PAGES => {
                let queued = otc_tools::tools::knowledge::wiki::pages::queue_tenant(tools, tenant).await?;
                tracing::info!(%tenant, vaults = queued, "wiki pages regeneration queued");
            }
            otc_store::upkeep::CONTRADICTIONS => {
                let max_pairs = m.contradictions.max_pairs;
                let run =
                    otc_tools::tools::knowledge::maintenance::detect_contradictions(tools, tenant, max_pairs).await?;
                tracing::info!(%tenant, ?run, "contradiction detector pass done");
            }
            _ => return Err(not_run_here(kind)),
        }
        Ok(true)
    }
}

/// Every worker's share of the tenants' upkeep: claims the most overdue item of the kinds it
/// runs (one indexed query across tenants), runs it while renewing the claim, hands it back due
/// a period later (or when next asked for); looks again at once after an item, else after
/// [`UPKEEP_POLL`]. Stops at `shutdown`, giving back an item it holds unrun.
async fn upkeep_loop(upkeep: Upkeep, shutdown: impl Future<Output = ()>) {
    tokio::pin!(shutdown);
    let store = upkeep.store.clone();
    let hold = upkeep.settings.lease_ttl.max(Duration::from_secs(3));
    let poll = UPKEEP_POLL.min(upkeep.settings.sweep_interval);
    let kinds = upkeep.kinds();
    loop {
        let claim = uuid::Uuid::new_v4();
        let claimed_at = tokio::time::Instant::now();
        let claimed = tokio::select! {
            () = &mut shutdown => return,
            claimed = store.claim_upkeep(&kinds, claim, 1, hold) => claimed,
        };
        let item = match claimed {
            Ok(items) => items.into_iter().next(),
            Err(e) => {
                tracing::warn!(error = %otc_errors::error_chain(&e), "could not claim upkeep; will retry");
                None
            }
        };
        let Some((tenant, kind)) = item else {
            tokio::select! {
                () = &mut shutdown => return,
                () = tokio::time::sleep(poll) => continue,
            }
        };
        let item = Item { tenant, kind: &kind, claim };
        let end = tokio::select! {
            () = &mut shutdown => ItemEnd::Stopped,
            () = keep_claim(&store, &item, hold, claimed_at + hold) => ItemEnd::Lost,
            done = upkeep.run(tenant, &kind, claimed_at + SWEEP_BUDGET) => match done {
                Ok(finished) => ItemEnd::Ran { finished },
                Err(e) => ItemEnd::Failed(otc_errors::error_chain(&*e)),
            },
        };
        let next = |after: Option<Duration>| {
            after.map(|d| Utc::now() + chrono::Duration::from_std(d).unwrap_or(chrono::Duration::hours(1)))
        };
        let period = upkeep.period(&kind);
        let how = match end {
            ItemEnd::Ran { finished: true } => HandBack::Finish { next: next(period), error: None },
            ItemEnd::Ran { finished: false } => HandBack::Finish { next: Some(Utc::now()), error: None },
            ItemEnd::Failed(error) => {
                tracing::error!(%tenant, kind, error = %error, "upkeep failed for tenant; it is due again in a period");
                // An item asked for by an event is tried again after the sweep's period.
                HandBack::Finish { next: next(period.or(Some(upkeep.settings.sweep_interval))), error: Some(error) }
            }
            ItemEnd::Lost => {
                tracing::warn!(%tenant, kind, "an upkeep item's claim could not be renewed in time; stopped it (another worker may take it)");
                continue;
            }
            ItemEnd::Stopped => HandBack::Release,
        };
        let stopping = matches!(how, HandBack::Release);
        hand_back(&store, &item, how).await;
        if stopping {
            return;
        }
    }
}

/// A claimed upkeep item.
struct Item<'a> {
    tenant: uuid::Uuid,
    kind: &'a str,
    claim: uuid::Uuid,
}

/// What a worker does with an item it holds once done with it.
enum HandBack {
    /// Due again at `next` (None: when next asked for), with the run's error if it failed.
    Finish { next: Option<chrono::DateTime<Utc>>, error: Option<String> },
    /// Unrun, due as it was (the worker is stopping).
    Release,
}

/// Hands `item` back (logged when the claim no longer held it, or when Postgres could not be
/// reached: the claim then lapses by itself).
async fn hand_back(store: &Store, item: &Item<'_>, how: HandBack) {
    let (tenant, kind, claim) = (item.tenant, item.kind, item.claim);
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
        Ok(false) => tracing::warn!(%tenant, kind, "the upkeep item was no longer this worker's to hand back"),
        Err(e) => {
            tracing::warn!(%tenant, kind, error = %otc_errors::error_chain(&e), "could not hand an upkeep item back; its claim lapses by itself")
        }
    }
}

/// Renews `item`'s claim every third of `hold` until it can no longer vouch for it.
async fn keep_claim(store: &Store, item: &Item<'_>, hold: Duration, held_until: tokio::time::Instant) {
    renew_until_lost(hold, held_until, || async {
        let mut tx = store.begin(item.tenant).await?;
        let held = tx.renew_upkeep(item.kind, item.claim, hold).await?;
        tx.commit().await?;
        Ok::<_, otc_store::StoreError>(held)
    })
    .await;
    tracing::debug!(tenant = %item.tenant, kind = item.kind, "the upkeep claim is no longer held");
}

/// Renews a hold of `hold` every third of it with `renew` (Ok(true): renewed; Ok(false):
/// another holds it now); returns once it can no longer vouch for the hold: taken, or not
/// renewed in time to be sure it has not lapsed (as this worker's clock counts, from before each
/// request went out; a renewal gets a quarter of `hold`). `held_until` is when the hold lapses
/// unless renewed.
async fn renew_until_lost<F, Fut, E>(hold: Duration, mut held_until: tokio::time::Instant, mut renew: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool, E>>,
    E: std::fmt::Debug,
{
    loop {
        tokio::time::sleep(hold / 3).await;
        let asked = tokio::time::Instant::now();
        match tokio::time::timeout(hold / 4, renew()).await {
            Ok(Ok(true)) => held_until = asked + hold,
            Ok(Ok(false)) => return,
            Ok(Err(e)) => tracing::warn!(error = ?e, "could not renew a hold"),
            Err(_) => tracing::warn!("renewing a hold timed out"),
        }
        // The next renewal would come too late: stop while the hold is still ours.
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

/// Runs `work` while `holder` holds the lease `name`, renewing it every third of `ttl`: the
/// work's output, or None when the lease could not be renewed (taken by another, or Redis not
/// answering before it could lapse), in which case the work is dropped at its next await, so
/// work that must run once at a time never runs on two workers at once.
pub async fn while_leading<T>(
    kv: &Kv,
    name: &str,
    holder: &str,
    ttl: Duration,
    work: impl Future<Output = T>,
) -> Option<T> {
    let keep = renew_until_lost(ttl, tokio::time::Instant::now() + ttl, || kv.renew_lease(name, holder, ttl));
    tokio::select! {
        () = keep => None,
        out = work => Some(out),
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

    /// Also writes the wikis' generated pages (their `wiki_pages` jobs) until shutdown, and
    /// claims the tenants' scheduled upkeep items `settings.maintenance` turns on.
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
                    let pass = tokio::select! {
                        _ = stopped.wait_for(|s| *s) => return,
                        pass = otc_tools::tools::knowledge::wiki::pages::run_jobs(&tools, WIKI_PAGES_ATTEMPTS) => pass,
                    };
                    let busy = match pass {
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
            let upkeep = Upkeep {
                store: self.store.clone(),
                blobs: self.blobs.clone(),
                kv: self.kv.clone(),
                settings: self.settings.clone(),
                indexer: self.indexer.clone(),
                embedding: self.embedding.clone().filter(|e| e.active()),
                tools: self.wiki.clone(),
            };
            tokio::spawn(upkeep_loop(upkeep, async move {
                let _ = stopped.wait_for(|s| *s).await;
            }))
        };
        self.sweep_loop(shutdown).await;
        let _ = stop.send(true);
        // Each task stops at its next await once told; whatever has not within the grace
        // (a call that never returns) is dropped: its transaction rolls back, and its jobs and
        // upkeep items stay due for another worker.
        let deadline = tokio::time::Instant::now() + self.settings.shutdown_grace;
        let upkeep = Some(upkeep);
        for (name, task) in
            [("indexer", indexing), ("embedding", embedding), ("wiki pages", wiki_pages), ("upkeep", upkeep)]
        {
            let Some(mut task) = task else { continue };
            match tokio::time::timeout_at(deadline, &mut task).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, task = name, "worker task ended abnormally"),
                Err(_) => {
                    tracing::warn!(task = name, grace = ?self.settings.shutdown_grace, "worker task still running at the end of the grace; dropped");
                    task.abort();
                }
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
        tracing::info!(holder = %self.holder, "worker started");
        loop {
            let led = tokio::select! {
                () = &mut shutdown => break,
                led = self.lead(leader, &mut next_sweep, &mut next_reconcile) => led,
            };
            leader = led;
            let tick = if leader { renew_every } else { standby_every };
            tokio::select! {
                () = &mut shutdown => break,
                () = tokio::time::sleep(tick) => {}
            }
        }
        // Given up whether or not this worker knew it held it (a stop can come between taking
        // the lease and hearing so); Redis deletes it only for its holder.
        match tokio::time::timeout(LEASE_RELEASE_WAIT, self.kv.release_lease(SWEEP_LEASE, &self.holder)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = ?e, leader, "could not release the sweep lease; it lapses by itself"),
            Err(_) => tracing::warn!(leader, "releasing the sweep lease timed out; it lapses by itself"),
        }
        otc_telemetry::metrics().worker_leader.record(0, &[]);
    }

    /// One round of the leader's work: keeps (or asks for) the lease, and as the leader purges
    /// unused OAuth clients and reconciles the reconcile-mode vaults when each is due. Returns
    /// whether this worker leads.
    async fn lead(
        &self,
        leader: bool,
        next_sweep: &mut tokio::time::Instant,
        next_reconcile: &mut tokio::time::Instant,
    ) -> bool {
        let leader = match self.keep_lease(leader).await {
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
        if !leader {
            return false;
        }
        let work = async {
            if tokio::time::Instant::now() >= *next_sweep {
                // Registration is open to anyone: clients no token request named for as long
                // as a refresh token lives are gone (they register again).
                let unused_since = Utc::now() - self.settings.oauth_client_retention;
                match self.store.purge_unused_oauth_clients(unused_since).await {
                    Ok(purged) => tracing::info!(purged, "unused OAuth clients purged"),
                    Err(e) => tracing::warn!(error = ?e, "purging unused OAuth clients failed; will retry"),
                }
                *next_sweep = tokio::time::Instant::now() + self.settings.sweep_interval;
            }
            if tokio::time::Instant::now() >= *next_reconcile {
                for target in &self.settings.reconcile {
                    match reconcile_once(&self.store, &self.kv, &self.blobs, target).await {
                        Ok(report) => tracing::info!(vault = %target.vault, ?report, "reconciled"),
                        Err(e) => tracing::warn!(vault = %target.vault, error = %e, "reconcile failed; will retry"),
                    }
                }
                *next_reconcile = tokio::time::Instant::now() + self.settings.sweep_interval.min(RECONCILE_EVERY);
            }
        };
        let held = while_leading(&self.kv, SWEEP_LEASE, &self.holder, self.settings.lease_ttl, work).await.is_some();
        if !held {
            tracing::warn!("the sweep lease was lost during the leader's work; stopped it (another worker leads now)");
        }
        held
    }

    async fn keep_lease(&self, leader: bool) -> Result<bool, otc_kv::KvError> {
        let ttl = self.settings.lease_ttl;
        if leader && self.kv.renew_lease(SWEEP_LEASE, &self.holder, ttl).await? {
            return Ok(true);
        }
        self.kv.try_acquire_lease(SWEEP_LEASE, &self.holder, ttl).await
    }
}
