//! The indexer: keeps each vault's index (notes, links, tags, properties, tasks, chunks) in step
//! with its manifest.
//!
//! Work arrives as `index` jobs that every commit writes to the outbox in its own transaction,
//! naming the paths it changed. An indexer takes a vault's index lock (one indexer per vault
//! at a time: link resolution needs the vault's names to hold still), claims that vault's due
//! jobs with `FOR UPDATE SKIP LOCKED`, and in one transaction
//!
//! 1. brings the index's file table in line with the manifest for those paths;
//! 2. reads and parses every changed note and writes its rows, resolving its links against the
//!    vault's files as they are now (Obsidian's rule, `otc_vault::links`);
//! 3. re-resolves every other link whose target names a file that appeared or disappeared (a
//!    new note can resolve a dangling link elsewhere; a deleted one can unresolve it);
//! 4. when `.obsidian/app.json` changed, recomputes which files are in Excluded files;
//! 5. deletes the jobs and moves the vault's indexed sequence on.
//!
//! A batch that fails is rolled back and its jobs retried with exponential back-off, each
//! failed job alone on its next attempt, until it is dead-lettered with its error kept.
//!
//! Read-your-writes: the gateway calls [`Indexer::catch_up`] after each commit, before it
//! answers (for at most `inline_deadline`), so anything read after a write's response sees the
//! write in the index too. The jobs stay in the outbox until indexed, so a gateway that dies in
//! between, or stops waiting, leaves them to the workers.
//!
//! Each note is parsed up to `max_indexed_bytes`, on the blocking pool, and its parsing stops
//! when the future that started it is dropped or at [`Indexer::shutdown`].

pub mod commit;
pub mod embedding;
pub mod extract;
pub mod fulltext;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use otc_blobs::Blobs;
use otc_store::{FileEntry, FileKind, Hash, INDEX_JOB, IndexFile, NoteRecord, Store, StoredLink, TenantTx};
use otc_vault::acl::has_dot_name;
use otc_vault::excluded::{APP_CONFIG, Excluded};
use otc_vault::links::{Resolver, affected_link_keys, lookup_keys, name_key};
use uuid::Uuid;

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("index store")]
    Store(#[from] otc_store::StoreError),
    #[error("reading {path} from the object store")]
    Blob {
        path: String,
        #[source]
        source: otc_blobs::BlobError,
    },
    #[error("parsing notes")]
    Join(#[from] tokio::task::JoinError),
    #[error("cancelled")]
    Cancelled,
    #[error("merging full-text segments")]
    Segment(#[source] otc_fts::Corrupt),
}

impl IndexError {
    /// The error with its causes, for logs and the dead-letter record.
    pub fn chain(&self) -> String {
        otc_errors::error_chain(self)
    }
}

pub type Result<T, E = IndexError> = std::result::Result<T, E>;

#[derive(Debug, Clone)]
pub struct IndexerSettings {
    /// Jobs claimed per batch.
    pub batch_jobs: i64,
    /// Notes per transaction in a full rebuild.
    pub rebuild_batch: usize,
    /// Rebuild transactions in flight at once.
    pub rebuild_concurrency: usize,
    /// Object-store reads in flight per batch.
    pub fetch_concurrency: usize,
    /// Attempts before a job is dead-lettered.
    pub max_attempts: i32,
    /// The longest back-off between attempts.
    pub max_backoff: Duration,
    /// How often an idle indexer looks for work.
    pub poll_interval: Duration,
    /// How much of each note is parsed and indexed (the note is stored in full; one cut short
    /// says so in its warnings).
    pub max_indexed_bytes: usize,
    /// How long a commit's answer waits for its inline indexing; past it the jobs are left in
    /// the outbox for the workers.
    pub inline_deadline: Duration,
    /// Leave an `embed` job naming each batch's notes for the embedding workers (an
    /// embedding provider is configured).
    pub embed: bool,
    /// The most bytes of vaults' Excluded-files filters kept in memory.
    pub excluded_cache_bytes: u64,
    /// The most live notes a merge on a commit's path may rewrite; a larger one is asked of
    /// the workers (the tenant's `fts_merge` upkeep item).
    pub inline_merge_notes: i64,
}

impl Default for IndexerSettings {
    fn default() -> Self {
        Self {
            batch_jobs: 64,
            rebuild_batch: 500,
            rebuild_concurrency: 3,
            fetch_concurrency: 16,
            max_attempts: 6,
            max_backoff: Duration::from_secs(300),
            poll_interval: Duration::from_millis(500),
            max_indexed_bytes: extract::DEFAULT_MAX_INDEXED_BYTES,
            inline_deadline: Duration::from_millis(2_000),
            embed: false,
            excluded_cache_bytes: 8 << 20,
            inline_merge_notes: 2_000,
        }
    }
}

/// The most vaults one pass of the workers takes a batch from (those waiting longest).
pub const DUE_VAULTS_PER_PASS: i64 = 200;

/// What [`Indexer::merge_segments`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// Nothing needed merging.
    None,
    Merged,
    /// A merge is due that is larger than the limit allowed: the workers' to do.
    TooLarge,
}

/// What one batch did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BatchReport {
    pub jobs: usize,
    /// The vault's indexed sequence after the batch: every commit up to it is in the index.
    pub indexed_seq: i64,
    pub notes_parsed: usize,
    pub files_removed: usize,
    pub links_reresolved: usize,
}

/// What a full rebuild did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RebuildReport {
    pub files: u64,
    pub notes: u64,
    pub removed: u64,
    pub links: u64,
    pub unresolved: u64,
    pub chunks: u64,
    pub frontmatter_failed: Vec<String>,
}

/// Progress and cancellation for a long rebuild.
pub trait Progress: Send + Sync {
    /// Notes done out of notes seen.
    fn report(&self, done: u64, total: u64);
    /// Whether the caller asked to stop.
    fn cancelled(&self) -> impl std::future::Future<Output = bool> + Send;
}

/// No progress reporting, never cancelled.
pub struct Quiet;

impl Progress for Quiet {
    fn report(&self, _done: u64, _total: u64) {}
    async fn cancelled(&self) -> bool {
        false
    }
}

/// A parsed note and its frontmatter block's text.
type Parsed = (NoteRecord, Option<String>);

/// How often a running rebuild asks whether it was cancelled, besides after each batch.
const CANCEL_POLL: Duration = Duration::from_millis(500);

/// Excluded-files filters per (tenant, vault), with the app.json content hash they came from,
/// bounded in bytes (`caches.excluded_bytes`).
type ExcludedCache = Arc<otc_cache::Bounded<(Uuid, Uuid), (Option<Hash>, Arc<Excluded>)>>;

#[derive(Clone)]
pub struct Indexer {
    store: Store,
    blobs: Blobs,
    settings: IndexerSettings,
    excluded: ExcludedCache,
    /// Set at shutdown: every parse in flight stops, and none starts.
    stopped: Arc<AtomicBool>,
    /// Per vault, this process's inline indexing ([`Indexer::catch_up_to`]).
    inline: Arc<Mutex<HashMap<Uuid, Arc<InlineSlot>>>>,
}

/// One vault's inline indexing in this process. Commits answered at once each wait for their
/// own commit to be indexed: one of them indexes for all (everything queued), the others wait
/// for it and find their commit done, instead of each taking the vault's index lock in turn
/// for a transaction that finds nothing left.
#[derive(Default)]
struct InlineSlot {
    running: tokio::sync::Mutex<()>,
    /// The highest indexed sequence an inline pass here has seen.
    indexed: AtomicI64,
}

/// A vault's inline slot in use; the last one out removes it from the map, so the map holds
/// only the vaults being indexed inline now.
struct HeldSlot<'a> {
    slots: &'a Mutex<HashMap<Uuid, Arc<InlineSlot>>>,
    vault: Uuid,
    slot: Arc<InlineSlot>,
}

impl std::ops::Deref for HeldSlot<'_> {
    type Target = InlineSlot;

    fn deref(&self) -> &InlineSlot {
        &self.slot
    }
}

impl Drop for HeldSlot<'_> {
    fn drop(&mut self) {
        // Clones are made under this lock, so the count cannot grow while it is read.
        let mut slots = self.slots.lock().expect("inline slots");
        if Arc::strong_count(&self.slot) == 2 {
            slots.remove(&self.vault);
        }
    }
}

/// Sets its flag when dropped: the parses a dropped indexing future started (a commit's
/// answer that stopped waiting, a cancelled rebuild, a shutdown) stop too, instead of running
/// on in the blocking pool.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl Indexer {
    pub fn new(store: Store, blobs: Blobs, settings: IndexerSettings) -> Self {
        let weigh = |_: &(Uuid, Uuid), (_, filters): &(Option<Hash>, Arc<Excluded>)| filters.weight() + 40;
        let excluded = Arc::new(otc_cache::Bounded::new("excluded", usize::MAX, settings.excluded_cache_bytes, weigh));
        Self { store, blobs, settings, excluded, stopped: Arc::default(), inline: Arc::default() }
    }

    /// What the Excluded-files filter cache holds and has done.
    pub fn excluded_figures(&self) -> otc_cache::Figures {
        self.excluded.figures()
    }

    pub fn settings(&self) -> &IndexerSettings {
        &self.settings
    }

    /// Stops every parse in flight (its batch ends as [`IndexError::Cancelled`], its jobs left
    /// queued, no attempt counted) and refuses new ones: for shutdown. Every clone shares it.
    pub fn shutdown(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }

    /// Runs until `shutdown` resolves: looks for due jobs, works through them, sleeps when
    /// there are none. A pass in flight when `shutdown` resolves is stopped (its parsing
    /// cancelled, its jobs left queued without counting an attempt).
    pub async fn run(&self, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        loop {
            let pass = tokio::select! {
                pass = self.run_once() => pass,
                // Dropping the pass stops its parsing and rolls its batch back.
                () = &mut shutdown => break,
            };
            let worked = match pass {
                Ok(n) => n,
                Err(e) => {
                    tracing::warn!(error = %e.chain(), "indexer pass failed; will retry");
                    0
                }
            };
            if worked > 0 {
                continue;
            }
            tokio::select! {
                () = &mut shutdown => break,
                () = tokio::time::sleep(self.settings.poll_interval) => {}
            }
        }
    }

    /// One pass over the vaults with due jobs, across tenants (one query finds them, each vault
    /// once, the longest waiting first): a batch each, so a vault with thousands of queued jobs
    /// takes one batch a pass like a vault with one. Returns the number of jobs handled, failed
    /// ones included.
    pub async fn run_once(&self) -> Result<usize> {
        let mut handled = 0;
        for (tenant, vault) in self.store.due_job_vaults(INDEX_JOB, DUE_VAULTS_PER_PASS).await? {
            match self.batch(tenant, vault, false).await {
                Ok(Some(report)) => handled += report.jobs,
                Ok(None) => {}
                Err(e) => tracing::warn!(%tenant, %vault, error = %e.chain(), "index batch failed"),
            }
        }
        Ok(handled)
    }

    /// Indexes every due job of the vault now, waiting for another indexer that holds it.
    /// Jobs waiting out a back-off are left to the workers. Returns the vault's indexed
    /// sequence at the end.
    pub async fn catch_up(&self, tenant: Uuid, vault: Uuid) -> Result<i64> {
        loop {
            match self.batch(tenant, vault, true).await? {
                Some(report) if report.jobs > 0 => continue,
                report => return Ok(report.map_or(0, |r| r.indexed_seq)),
            }
        }
    }

    /// Returns once the vault's commits up to `seq` are indexed, indexing what is due if need
    /// be ([`Indexer::catch_up`]). In this process one caller at a time indexes a vault; those
    /// that waited for it return without touching the database when its pass covered them.
    pub async fn catch_up_to(&self, tenant: Uuid, vault: Uuid, seq: i64) -> Result<()> {
        let slot = self.inline.lock().expect("inline slots").entry(vault).or_default().clone();
        let slot = HeldSlot { slots: &self.inline, vault, slot };
        if slot.indexed.load(Ordering::Acquire) >= seq {
            return Ok(());
        }
        let _running = slot.running.lock().await;
        if slot.indexed.load(Ordering::Acquire) >= seq {
            return Ok(());
        }
        let reached = self.catch_up(tenant, vault).await?;
        slot.indexed.fetch_max(reached, Ordering::AcqRel);
        Ok(())
    }

    /// One batch for one vault. `None` when another indexer holds the vault (and `wait` is
    /// false).
    async fn batch(&self, tenant: Uuid, vault: Uuid, wait: bool) -> Result<Option<BatchReport>> {
        let mut tx = self.store.begin(tenant).await?;
        if tx.lock_index(vault, wait).await?.is_none() {
            return Ok(None);
        }
        let mut jobs = tx.claim_jobs(vault, INDEX_JOB, self.settings.batch_jobs).await?;
        // A job that failed before runs alone, so one bad path cannot hold others back.
        if let Some(pos) = jobs.iter().position(|j| j.attempts > 0) {
            jobs = vec![jobs.swap_remove(pos)];
        }
        if jobs.is_empty() {
            let indexed_seq = tx.advance_indexed_seq(vault).await?;
            tx.commit().await?;
            return Ok(Some(BatchReport { indexed_seq, ..BatchReport::default() }));
        }
        let ids: Vec<i64> = jobs.iter().map(|j| j.id).collect();
        let paths: BTreeSet<String> = jobs
            .iter()
            .filter_map(|j| j.payload.get("paths").and_then(|p| p.as_array()))
            .flatten()
            .filter_map(|p| p.as_str().map(str::to_string))
            .collect();
        let paths: Vec<String> = paths.into_iter().collect();
        let started = std::time::Instant::now();
        match self.apply(&mut tx, tenant, vault, &paths).await {
            Ok(mut report) => {
                let applied = started.elapsed();
                // Small merges here keep the segment count down; large ones are the workers'.
                let merged = self.merge_segments(&mut tx, vault, Some(self.settings.inline_merge_notes)).await?;
                if merged == Merge::TooLarge {
                    tx.request_upkeep(otc_store::upkeep::FTS_MERGE).await?;
                }
                let merge_time = started.elapsed() - applied;
                tx.finish_jobs(&ids).await?;
                report.indexed_seq = tx.advance_indexed_seq(vault).await?;
                tx.commit().await?;
                tracing::debug!(
                    jobs = ids.len(),
                    paths = paths.len(),
                    apply_ms = applied.as_millis() as u64,
                    merged = ?merged,
                    merge_ms = merge_time.as_millis() as u64,
                    commit_ms = (started.elapsed() - applied - merge_time).as_millis() as u64,
                    "indexed a batch of jobs"
                );
                report.jobs = ids.len();
                Ok(Some(report))
            }
            // Stopped (shutdown, or the caller stopped waiting): not a failure of these jobs.
            // The transaction rolls back, and they stay queued as they were.
            Err(IndexError::Cancelled) => {
                drop(tx);
                Err(IndexError::Cancelled)
            }
            Err(e) => {
                drop(tx);
                let chain = e.chain();
                tracing::warn!(%tenant, %vault, jobs = ids.len(), error = %chain, "indexing failed; will retry");
                let mut tx = self.store.begin(tenant).await?;
                tx.retry_jobs(&ids, &chain, self.settings.max_attempts, self.settings.max_backoff.as_secs_f64())
                    .await?;
                tx.commit().await?;
                Ok(Some(BatchReport { jobs: ids.len(), ..BatchReport::default() }))
            }
        }
    }

    /// Brings the index in line with the manifest for `paths` (steps 1-4 of the module doc).
    async fn apply(&self, tx: &mut TenantTx, tenant: Uuid, vault: Uuid, paths: &[String]) -> Result<BatchReport> {
        let mut report = BatchReport::default();
        // Obsidian sees no dot-named file or folder: such a file is not in the index at all (no
        // note, link, tag, chunk or vector; no link resolves to it), so one indexed before
        // goes as if deleted. It stays in the manifest, the store and the sync API.
        let now: HashMap<String, FileEntry> = tx
            .files_at(vault, paths)
            .await?
            .into_iter()
            .filter(|f| !has_dot_name(&f.path))
            .map(|f| (f.path.clone(), f))
            .collect();
        let before: HashSet<String> = tx.index_files_at(vault, paths).await?.into_iter().map(|f| f.path).collect();
        let excluded = self.excluded_filters(tx, tenant, vault).await?;

        let removed: Vec<String> = before.iter().filter(|p| !now.contains_key(*p)).cloned().collect();
        let mut affected: HashSet<String> = HashSet::new();
        for path in removed.iter().chain(now.keys().filter(|p| !before.contains(*p))) {
            affected.extend(affected_link_keys(path));
        }
        tx.drop_index_files(vault, &removed).await?;
        report.files_removed = removed.len();
        let present: Vec<&FileEntry> = now.values().collect();
        tx.put_index_files(vault, &present.iter().map(|f| index_file(f, &excluded)).collect::<Vec<_>>()).await?;

        let canvases: Vec<FileEntry> =
            present.iter().filter(|f| f.kind == FileKind::Canvas).map(|f| (*f).clone()).collect();
        let notes: Vec<FileEntry> = present.into_iter().filter(|f| f.kind == FileKind::Note).cloned().collect();
        report.notes_parsed = notes.len();
        let parsed = self.parse_all(tenant, notes).await?;
        let records = self.write_notes(tx, vault, parsed).await?;
        self.write_canvases(tx, tenant, vault, canvases).await?;

        if !affected.is_empty() {
            let fresh: HashSet<&str> = records.iter().map(|r| r.path.as_str()).collect();
            let keys: Vec<String> = affected.into_iter().collect();
            let links: Vec<StoredLink> = tx
                .links_named(vault, &keys)
                .await?
                .into_iter()
                .filter(|l| !fresh.contains(l.source_path.as_str()))
                .collect();
            let changed = reresolve(tx, vault, links).await?;
            report.links_reresolved = changed.len();
            tx.set_link_targets(vault, &changed).await?;
        }
        if paths.iter().any(|p| p == APP_CONFIG) {
            self.refresh_excluded(tx, tenant, vault).await?;
        }
        Ok(report)
    }

    /// Resolves the parsed notes' links, writes their full-text segment and their rows.
    async fn write_notes(&self, tx: &mut TenantTx, vault: Uuid, parsed: Vec<Parsed>) -> Result<Vec<NoteRecord>> {
        let started = std::time::Instant::now();
        let (records, fronts): (Vec<NoteRecord>, Vec<Option<String>>) = parsed.into_iter().unzip();
        let records = resolve_records(tx, vault, records).await?;
        let resolved = started.elapsed();
        let (records, segment) = tokio::task::spawn_blocking(move || {
            let notes: Vec<fulltext::FtsNote<'_>> = records
                .iter()
                .zip(&fronts)
                .map(|(record, front)| fulltext::FtsNote { record, front: front.as_deref() })
                .collect();
            let segment = fulltext::build(&notes);
            (records, segment)
        })
        .await?;
        let built = started.elapsed();
        let id = match segment {
            Some(data) => Some(tx.fts_put_segment(vault, &data, records.len() as i32).await?),
            None => None,
        };
        let put = started.elapsed();
        tx.replace_notes(vault, &records, id).await?;
        // The embedding workers' share: these notes, less those no search can return.
        let embed: Vec<&str> = records
            .iter()
            .map(|r| r.path.as_str())
            .filter(|p| otc_vault::acl::Audience::Tools.hides(p).is_none())
            .collect();
        if self.settings.embed && !embed.is_empty() {
            tx.queue_embed_job(vault, &serde_json::json!({ "paths": embed })).await?;
        }
        tracing::debug!(
            notes = records.len(),
            resolve_ms = resolved.as_millis() as u64,
            segment_ms = (built - resolved).as_millis() as u64,
            put_ms = (put - built).as_millis() as u64,
            rows_ms = (started.elapsed() - put).as_millis() as u64,
            "wrote notes"
        );
        Ok(records)
    }

    /// Indexes canvases' links (file nodes and the links in text nodes): a file node's path
    /// resolved exactly, a text node's links as a note's are, against the vault's files now.
    async fn write_canvases(
        &self,
        tx: &mut TenantTx,
        tenant: Uuid,
        vault: Uuid,
        canvases: Vec<FileEntry>,
    ) -> Result<()> {
        if canvases.is_empty() {
            return Ok(());
        }
        let mut found = Vec::with_capacity(canvases.len());
        for entry in canvases {
            let bytes = self
                .blobs
                .get_blob(tenant, &entry.hash)
                .await
                .map_err(|source| IndexError::Blob { path: entry.path.clone(), source })?;
            found.push((entry.path, extract::canvas_links(&String::from_utf8_lossy(&bytes))));
        }
        let texts = found.iter().flat_map(|(_, l)| l.iter().filter(|l| !l.file_node).map(|l| l.record.target.as_str()));
        let resolver = resolver_for(tx, vault, keys_of(texts)).await?;
        let shown: Vec<String> =
            found.iter().flat_map(|(_, l)| l.iter().filter(|l| l.file_node).map(|l| l.record.target.clone())).collect();
        let present: HashSet<String> = tx.files_at(vault, &shown).await?.into_iter().map(|f| f.path).collect();
        let files: Vec<(String, Vec<otc_store::LinkRecord>)> = found
            .into_iter()
            .map(|(source, links)| {
                let records = links
                    .into_iter()
                    .map(|link| {
                        let mut record = link.record;
                        record.resolved_path = if link.file_node {
                            present.contains(&record.target).then(|| record.target.clone())
                        } else {
                            resolver.resolve(&record.target, &source).map(str::to_string)
                        };
                        record
                    })
                    .collect();
                (source, records)
            })
            .collect();
        tx.replace_file_links(vault, &files).await?;
        Ok(())
    }

    /// Merges the vault's full-text segments when [`fulltext::plan`] says so, at most `limit`
    /// live notes' worth (`None`: every segment, as a rebuild ends), under the vault's index
    /// lock (which `tx` must hold).
    pub async fn merge_segments(&self, tx: &mut TenantTx, vault: Uuid, limit: Option<i64>) -> Result<Merge> {
        let refs = tx.fts_segments(vault).await?;
        let picked = match limit {
            Some(limit) => fulltext::plan(&refs, limit),
            None if refs.len() > 1 || refs.iter().any(|r| r.live < r.notes) => refs.iter().map(|r| r.id).collect(),
            None => Vec::new(),
        };
        if picked.is_empty() {
            let wanted = limit.is_some_and(|l| l < i64::MAX) && !fulltext::plan(&refs, i64::MAX).is_empty();
            return Ok(if wanted { Merge::TooLarge } else { Merge::None });
        }
        let mut dead: HashMap<i64, Vec<String>> = refs.into_iter().map(|r| (r.id, r.dead)).collect();
        let data: Vec<(Vec<u8>, Vec<String>)> = tx
            .fts_segment_data(vault, &picked)
            .await?
            .into_iter()
            .map(|(id, bytes)| (bytes, dead.remove(&id).unwrap_or_default()))
            .collect();
        let merged = tokio::task::spawn_blocking(move || fulltext::merge(data)).await?.map_err(IndexError::Segment)?;
        tx.fts_replace_segments(vault, &picked, merged.as_ref().map(|(b, n)| (b.as_slice(), *n))).await?;
        Ok(Merge::Merged)
    }

    /// Merges the segments of each of the tenant's vaults that need it, in full: the tenant's
    /// `fts_merge` upkeep item, which a batch asks for when it leaves a vault with a merge too
    /// large for a commit's path. Returns the vaults merged.
    pub async fn merge_tenant(&self, tenant: Uuid) -> Result<usize> {
        let mut merged = 0;
        let mut tx = self.store.begin(tenant).await?;
        let vaults = tx.fts_vaults_to_merge(fulltext::TIER_FANOUT as i64 - 1).await?;
        tx.commit().await?;
        for vault in vaults {
            let mut tx = self.store.begin(tenant).await?;
            tx.lock_index(vault, true).await?;
            if self.merge_segments(&mut tx, vault, Some(i64::MAX)).await? == Merge::Merged {
                merged += 1;
            }
            tx.commit().await?;
        }
        Ok(merged)
    }

    /// Reads and parses notes, `fetch_concurrency` reads at a time; parsing runs on the
    /// blocking pool so it uses every core.
    async fn parse_all(&self, tenant: Uuid, notes: Vec<FileEntry>) -> Result<Vec<Parsed>> {
        if self.stopped.load(Ordering::Relaxed) {
            return Err(IndexError::Cancelled);
        }
        let blobs = self.blobs.clone();
        let fetched: Vec<(FileEntry, bytes::Bytes)> = futures::stream::iter(notes)
            .map(move |entry| {
                let blobs = blobs.clone();
                async move {
                    let bytes = blobs
                        .get_blob(tenant, &entry.hash)
                        .await
                        .map_err(|source| IndexError::Blob { path: entry.path.clone(), source })?;
                    Ok::<_, IndexError>((entry, bytes))
                }
            })
            .buffer_unordered(self.settings.fetch_concurrency.max(1))
            .try_collect()
            .await?;
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).max(1);
        let per = fetched.len().div_ceil(workers).max(1);
        // Parsing stops when this future is dropped, or at shutdown.
        let dropped = CancelOnDrop(Arc::default());
        let max_bytes = self.settings.max_indexed_bytes;
        let mut tasks = Vec::new();
        let mut fetched = fetched;
        while !fetched.is_empty() {
            let part: Vec<_> = fetched.drain(..per.min(fetched.len())).collect();
            let (stopped, dropped) = (self.stopped.clone(), dropped.0.clone());
            tasks.push(tokio::task::spawn_blocking(move || {
                let cancelled = || stopped.load(Ordering::Relaxed) || dropped.load(Ordering::Relaxed);
                part.iter()
                    .map(|(entry, bytes)| {
                        let record = extract::note_record_within(entry, bytes, max_bytes, &cancelled)?;
                        let front = fulltext::front_text(&record, bytes);
                        Ok((record, front))
                    })
                    .collect::<Result<Vec<_>, _>>()
            }));
        }
        let mut out = Vec::new();
        for task in tasks {
            out.extend(task.await?.map_err(|otc_parser::Cancelled| IndexError::Cancelled)?);
        }
        Ok(out)
    }

    /// The vault's Excluded-files filters, read again only when app.json changed.
    async fn excluded_filters(&self, tx: &mut TenantTx, tenant: Uuid, vault: Uuid) -> Result<Arc<Excluded>> {
        let entry = tx.files_at(vault, &[APP_CONFIG.to_string()]).await?.into_iter().next();
        let hash = entry.as_ref().map(|e| e.hash);
        if let Some((_, filters)) = self.excluded.get_if(&(tenant, vault), |(cached, _)| *cached == hash) {
            return Ok(filters);
        }
        let filters = match entry {
            Some(e) => {
                let bytes = self
                    .blobs
                    .get_blob(tenant, &e.hash)
                    .await
                    .map_err(|source| IndexError::Blob { path: APP_CONFIG.into(), source })?;
                Arc::new(Excluded::from_app_config(&bytes))
            }
            None => Arc::new(Excluded::default()),
        };
        self.excluded.put((tenant, vault), (hash, filters.clone()));
        Ok(filters)
    }

    /// Recomputes the excluded flag of every file of the vault.
    async fn refresh_excluded(&self, tx: &mut TenantTx, tenant: Uuid, vault: Uuid) -> Result<()> {
        let filters = self.excluded_filters(tx, tenant, vault).await?;
        let mut excluded = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = tx.index_paths(vault, after.as_deref(), 5_000).await?;
            let Some(last) = page.last().cloned() else { break };
            excluded.extend(page.into_iter().filter(|p| filters.contains(p)));
            after = Some(last);
        }
        tx.set_excluded(vault, &excluded).await?;
        Ok(())
    }

    /// Rebuilds the vault's index from the manifest: every file row again, every note parsed
    /// again, leftovers removed. Runs in batches, each its own transaction under the vault's
    /// index lock, so commits keep being indexed in between; `progress` hears after each batch
    /// and can stop the rebuild between batches. With `folder` ("Projects/"), only the notes
    /// under it are parsed again (the file table is still refreshed in full).
    pub async fn rebuild(
        &self,
        tenant: Uuid,
        vault: Uuid,
        folder: Option<&str>,
        progress: &impl Progress,
    ) -> Result<RebuildReport> {
        let mut report = RebuildReport::default();
        let started = std::time::Instant::now();
        // 1. The file table, in full, so every link below resolves against the whole vault.
        let mut tx = self.store.begin(tenant).await?;
        tx.lock_index(vault, true).await?;
        self.excluded.remove(&(tenant, vault));
        let excluded = self.excluded_filters(&mut tx, tenant, vault).await?;
        // What the file table held before, to know which names appear or disappear.
        let mut before: HashSet<String> = HashSet::new();
        let mut after: Option<String> = None;
        loop {
            let page = tx.index_paths(vault, after.as_deref(), 5_000).await?;
            let Some(last) = page.last().cloned() else { break };
            before.extend(page);
            after = Some(last);
        }
        let mut manifest_notes: Vec<String> = Vec::new();
        let mut manifest_canvases: Vec<String> = Vec::new();
        let mut in_manifest: HashSet<String> = HashSet::new();
        let mut affected: HashSet<String> = HashSet::new();
        let mut after: Option<String> = None;
        loop {
            let page = tx.files(vault, after.as_deref(), 5_000).await?;
            let Some(last) = page.last() else { break };
            after = Some(last.path.clone());
            // Dot-named files are not indexed (see `apply`).
            let page: Vec<FileEntry> = page.into_iter().filter(|f| !has_dot_name(&f.path)).collect();
            tx.put_index_files(vault, &page.iter().map(|f| index_file(f, &excluded)).collect::<Vec<_>>()).await?;
            for f in page {
                if folder.is_none_or(|prefix| f.path.starts_with(prefix)) {
                    match f.kind {
                        FileKind::Note => manifest_notes.push(f.path.clone()),
                        FileKind::Canvas => manifest_canvases.push(f.path.clone()),
                        _ => {}
                    }
                }
                if !before.contains(&f.path) {
                    affected.extend(affected_link_keys(&f.path));
                }
                in_manifest.insert(f.path);
            }
        }
        let stale: Vec<String> = before.iter().filter(|p| !in_manifest.contains(*p)).cloned().collect();
        for path in &stale {
            affected.extend(affected_link_keys(path));
        }
        tx.drop_index_files(vault, &stale).await?;
        // Links outside the notes parsed below (a folder rebuild) still see names that
        // appeared or disappeared.
        if !affected.is_empty() {
            let keys: Vec<String> = affected.into_iter().collect();
            let links = tx.links_named(vault, &keys).await?;
            let changed = reresolve(&mut tx, vault, links).await?;
            tx.set_link_targets(vault, &changed).await?;
        }
        tx.commit().await?;
        tracing::debug!(files = in_manifest.len(), ms = started.elapsed().as_millis() as u64, "rebuilt the file table");
        report.files = in_manifest.len() as u64;
        report.removed = stale.len() as u64;
        drop(in_manifest);

        // 2. The notes, a batch per transaction, `rebuild_concurrency` batches at a time. Each
        //    holds the vault's index lock shared: rebuild batches touch disjoint notes and only
        //    read the file table, while a commit's indexing (which takes it exclusively) waits.
        let total = manifest_notes.len() as u64;
        progress.report(0, total);
        let chunks: Vec<Vec<String>> =
            manifest_notes.chunks(self.settings.rebuild_batch.max(1)).map(<[String]>::to_vec).collect();
        let mut batches = futures::stream::iter(chunks)
            .map(|batch| {
                let this = self.clone();
                async move { this.rebuild_batch(tenant, vault, &batch).await }
            })
            .buffer_unordered(self.settings.rebuild_concurrency.max(1));
        let mut cancelled = false;
        // Cancellation is also asked while a batch runs: dropping the batches stops their
        // parsing at once.
        let mut ask = tokio::time::interval(CANCEL_POLL);
        ask.tick().await;
        loop {
            let done = tokio::select! {
                done = batches.next() => done,
                _ = ask.tick() => {
                    if progress.cancelled().await {
                        cancelled = true;
                        break;
                    }
                    continue;
                }
            };
            let Some(done) = done else { break };
            let records = done?;
            for r in &records {
                report.links += r.links.len() as u64;
                report.unresolved += r.links.iter().filter(|l| l.resolved_path.is_none()).count() as u64;
                report.chunks += r.chunks.len() as u64;
                if r.frontmatter_error.is_some() {
                    report.frontmatter_failed.push(r.path.clone());
                }
            }
            report.notes += records.len() as u64;
            progress.report(report.notes, total);
            if progress.cancelled().await {
                cancelled = true;
                break;
            }
        }
        drop(batches);
        if cancelled {
            return Err(IndexError::Cancelled);
        }
        report.frontmatter_failed.sort();
        let mut tx = self.store.begin(tenant).await?;
        tx.lock_index(vault, true).await?;
        // The canvases (few, and small) last, against the files as they are now.
        let canvases = tx.files_at(vault, &manifest_canvases).await?;
        self.write_canvases(&mut tx, tenant, vault, canvases).await?;
        tx.mark_rebuilt(vault).await?;
        tx.advance_indexed_seq(vault).await?;
        let notes_done = started.elapsed();
        // One segment per batch was written: merge them (and what they replaced) into one.
        self.merge_segments(&mut tx, vault, None).await?;
        tx.commit().await?;
        tracing::debug!(
            notes_ms = notes_done.as_millis() as u64,
            merge_ms = (started.elapsed() - notes_done).as_millis() as u64,
            "rebuilt the notes and merged their segments"
        );
        Ok(report)
    }

    /// One batch of a rebuild: parses the notes as the manifest has them now (one deleted
    /// since the rebuild began is skipped; its delete job removes it), resolves their links
    /// and writes them. Returns the records written.
    async fn rebuild_batch(&self, tenant: Uuid, vault: Uuid, batch: &[String]) -> Result<Vec<NoteRecord>> {
        let mut tx = self.store.begin(tenant).await?;
        tx.share_index_lock(vault).await?;
        // The rebuild's last transaction (mark_rebuilt) commits synchronously and so seals
        // every batch before it.
        tx.set_asynchronous_commit().await?;
        // A note created since step 1 has no file row yet: its own job indexes it.
        let known: HashSet<String> = tx.index_files_at(vault, batch).await?.into_iter().map(|f| f.path).collect();
        let entries: Vec<FileEntry> =
            tx.files_at(vault, batch).await?.into_iter().filter(|f| known.contains(&f.path)).collect();
        let started = std::time::Instant::now();
        let parsed = self.parse_all(tenant, entries).await?;
        let read = started.elapsed();
        let records = self.write_notes(&mut tx, vault, parsed).await?;
        let written = started.elapsed();
        tx.commit().await?;
        tracing::debug!(
            notes = records.len(),
            parse_ms = read.as_millis() as u64,
            write_ms = (written - read).as_millis() as u64,
            commit_ms = (started.elapsed() - written).as_millis() as u64,
            "rebuilt a batch"
        );
        Ok(records)
    }
}

fn index_file(f: &FileEntry, excluded: &Excluded) -> IndexFile {
    IndexFile {
        path: f.path.clone(),
        name_key: name_key(&f.path),
        kind: f.kind.as_str().to_string(),
        hash: f.hash,
        size: f.size,
        mtime: f.mtime,
        excluded: excluded.contains(&f.path),
    }
}

/// The name keys the given link targets can be looked up by.
fn keys_of<'a>(targets: impl Iterator<Item = &'a str>) -> Vec<String> {
    let keys: BTreeSet<String> = targets.flat_map(lookup_keys).collect();
    keys.into_iter().collect()
}

/// A resolver over the files with these name keys.
async fn resolver_for(tx: &mut TenantTx, vault: Uuid, keys: Vec<String>) -> Result<Resolver> {
    if keys.is_empty() {
        return Ok(Resolver::default());
    }
    Ok(Resolver::new(tx.paths_named(vault, &keys).await?))
}

/// Resolves the links of freshly parsed notes against the vault's files now.
async fn resolve_records(tx: &mut TenantTx, vault: Uuid, mut records: Vec<NoteRecord>) -> Result<Vec<NoteRecord>> {
    let keys = keys_of(records.iter().flat_map(|r| r.links.iter().map(|l| l.target.as_str())));
    let resolver = resolver_for(tx, vault, keys).await?;
    for record in &mut records {
        let source = record.path.clone();
        for link in &mut record.links {
            link.resolved_path = resolver.resolve(&link.target, &source).map(str::to_string);
        }
    }
    Ok(records)
}

/// The stored links whose resolution changed, with their new target.
async fn reresolve(tx: &mut TenantTx, vault: Uuid, links: Vec<StoredLink>) -> Result<Vec<StoredLink>> {
    let keys = keys_of(links.iter().map(|l| l.target.as_str()));
    let resolver = resolver_for(tx, vault, keys).await?;
    Ok(links
        .into_iter()
        .filter_map(|mut l| {
            let now = resolver.resolve(&l.target, &l.source_path).map(str::to_string);
            (now != l.resolved_path).then(|| {
                l.resolved_path = now;
                l
            })
        })
        .collect())
}
