//! The embedding work: turns the `embed` jobs the indexer leaves in the outbox into chunk
//! vectors, on the workers, never on a request's path.
//!
//! A pass takes one vault's due jobs (`FOR UPDATE SKIP LOCKED`, so workers share a vault's
//! jobs) and, for every model set the vault keeps (the configured model, and an older set
//! still searched while the new one fills), finds the chunks of the jobs' notes that have no
//! vector yet. Each chunk's input (the note's title, the chunk's heading path, its text) is
//! known by its hash: the tenant's cache answers the ones embedded before (renames, copies,
//! unchanged sections, restores), the embedder the rest. Once every model call is done, the
//! vectors are stored together under the vault's index lock (exclusive, briefly), each only if
//! its note is still the content that was read and its chunk still has the span it was made
//! from, so an edit or a rebuild racing the pass never leaves a stale vector (the change's own
//! job embeds it again). A text the provider refuses is skipped, not the pass.
//!
//! A backfill job (`{"model": M, "after": P}`, written when a vault first gets model M) walks
//! the vault's notes in path order, a batch per pass, and marks M's set complete at the end;
//! completing a set retires every other set of the vault. A pass that fails leaves its jobs to
//! back off and, after `max_attempts`, to the dead letters, with the error kept.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use otc_blobs::Blobs;
use otc_embed::{Embeddings, SharedEmbedder, text_hash};
use otc_store::{ChunkToEmbed, ChunkVector, ClaimedJob, EMBED_JOB, Hash, Store, TenantTx};
use serde_json::json;
use uuid::Uuid;

use crate::{IndexError, Result};

/// How the embedding work runs.
#[derive(Debug, Clone)]
pub struct EmbedSettings {
    /// Chunks one pass embeds at most (the rest of its jobs wait for the next pass).
    pub batch_chunks: usize,
    /// Notes a backfill pass takes.
    pub backfill_notes: i64,
    /// Attempts before a job is dead-lettered.
    pub max_attempts: i32,
    /// The longest back-off between attempts.
    pub max_backoff: Duration,
    /// How often an idle worker looks for work.
    pub poll_interval: Duration,
    /// How often each tenant's embedding upkeep ([`Embedding::maintain_tenant`]) runs.
    pub maintain_interval: Duration,
    /// Dead jobs get another round this long after their last attempt.
    pub revive_after: Duration,
    /// Cached vectors unused this long are forgotten.
    pub cache_retention: Duration,
    /// The deployment's egress exclusion (`egress.exclude_paths`): notes never sent to the
    /// provider, with each tenant's own.
    pub egress_exclude_paths: Vec<String>,
}

impl Default for EmbedSettings {
    fn default() -> Self {
        Self {
            batch_chunks: 256,
            backfill_notes: 64,
            max_attempts: 8,
            max_backoff: Duration::from_secs(300),
            poll_interval: Duration::from_millis(500),
            maintain_interval: Duration::from_secs(3600),
            revive_after: Duration::from_secs(15 * 60),
            cache_retention: Duration::from_secs(30 * 24 * 3600),
            egress_exclude_paths: Vec::new(),
        }
    }
}

/// What a pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EmbedReport {
    pub jobs_done: usize,
    /// Chunks given a vector, by the model or from the cache.
    pub chunks: usize,
    pub embedded: usize,
    pub cached: usize,
}

impl EmbedReport {
    fn add(&mut self, other: EmbedReport) {
        self.jobs_done += other.jobs_done;
        self.chunks += other.chunks;
        self.embedded += other.embedded;
        self.cached += other.cached;
    }
}

#[derive(Clone)]
pub struct Embedding {
    store: Store,
    blobs: Blobs,
    embeddings: Arc<Embeddings>,
    settings: EmbedSettings,
    breaker: Arc<ProviderBreaker>,
}

/// The shortest a provider that failed is left alone.
const PROVIDER_BACKOFF: Duration = Duration::from_secs(5);

/// The provider that could not be reached (its model), how many passes in a row met it so,
/// and until when it is left alone (doubling from [`PROVIDER_BACKOFF`] up to `max_backoff`).
/// While it is, passes skip every vault (their jobs wait, no attempt counted) rather than each
/// meeting the same failure; the indexer, which never waits on a provider, goes on. One model
/// at a time: a pass embeds with the configured model, and a vault's older set only while that
/// one fills.
#[derive(Default)]
struct ProviderBreaker(std::sync::Mutex<Option<(String, u32, tokio::time::Instant)>>);

impl ProviderBreaker {
    fn open(&self, model: &str) -> bool {
        let held = self.0.lock().expect("provider breaker");
        held.as_ref().is_some_and(|(m, _, until)| m == model && tokio::time::Instant::now() < *until)
    }

    fn trip(&self, model: &str, max: Duration) -> Duration {
        let mut held = self.0.lock().expect("provider breaker");
        let failures = match held.as_ref() {
            Some((m, failures, _)) if m == model => failures + 1,
            _ => 1,
        };
        let wait = PROVIDER_BACKOFF.saturating_mul(1 << (failures - 1).min(16)).min(max.max(PROVIDER_BACKOFF));
        *held = Some((model.to_string(), failures, tokio::time::Instant::now() + wait));
        wait
    }

    fn reset(&self, model: &str) {
        let mut held = self.0.lock().expect("provider breaker");
        if held.as_ref().is_some_and(|(m, _, _)| m == model) {
            *held = None;
        }
    }
}

/// What went wrong in a pass (logged, and kept on the jobs).
#[derive(Debug, thiserror::Error)]
pub enum EmbedFailure {
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error("embedding with {model}")]
    Embed {
        model: String,
        #[source]
        source: otc_embed::EmbedError,
    },
}

impl From<otc_store::StoreError> for EmbedFailure {
    fn from(e: otc_store::StoreError) -> Self {
        EmbedFailure::Index(e.into())
    }
}

/// What [`Embedding::maintain`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MaintainReport {
    /// Vaults that got a set for the configured model (each with its backfill job).
    pub sets_started: u64,
    pub jobs_revived: u64,
    pub cache_purged: u64,
}

/// Vectors made for one model in a pass, waiting to be stored.
struct Filled {
    model: String,
    dims: i32,
    vectors: Vec<ChunkVector>,
    blobs: Vec<(String, Hash)>,
    /// What the cache gets (new vectors) or marks used (its hits).
    cache: Vec<(Vec<u8>, Vec<f32>)>,
    usage: otc_embed::Usage,
    embedded: usize,
    cached: usize,
}

/// Vectors for `texts` (each input's text): all in one call, or, when the provider refuses
/// the call (one text too long for it, say), one text at a time, a refused text left without
/// a vector (and logged) so that it does not hold up the rest of the vault.
async fn embed_each_or_skip(
    embedder: &dyn otc_embed::Embedder,
    tenant: Uuid,
    texts: &[String],
    inputs: &[&Input],
) -> Result<(Vec<Option<Vec<f32>>>, otc_embed::Usage), otc_embed::EmbedError> {
    if texts.is_empty() {
        return Ok((Vec::new(), otc_embed::Usage::default()));
    }
    match embedder.embed(tenant, texts).await {
        Ok(e) => Ok((e.vectors.into_iter().map(Some).collect(), e.usage)),
        Err(otc_embed::EmbedError::Refused { .. }) if texts.len() > 1 => {
            let mut out = Vec::with_capacity(texts.len());
            let mut usage = otc_embed::Usage::default();
            for (text, input) in texts.iter().zip(inputs) {
                match embedder.embed(tenant, std::slice::from_ref(text)).await {
                    Ok(mut e) => {
                        usage.requests += e.usage.requests;
                        usage.tokens += e.usage.tokens;
                        out.push(e.vectors.pop());
                    }
                    Err(e @ otc_embed::EmbedError::Refused { .. }) => {
                        tracing::warn!(%tenant, path = %input.chunk.path, ord = input.chunk.ord, error = %e,
                            "the embedding provider refused a chunk; it stays without a vector");
                        out.push(None);
                    }
                    Err(e) => return Err(e),
                }
            }
            Ok((out, usage))
        }
        Err(e) => Err(e),
    }
}

/// One chunk's work: where it is, and its input.
struct Input {
    chunk: ChunkToEmbed,
    text: String,
    hash: Vec<u8>,
}

impl Embedding {
    pub fn new(store: Store, blobs: Blobs, embeddings: Arc<Embeddings>, settings: EmbedSettings) -> Self {
        Self { store, blobs, embeddings, settings, breaker: Arc::default() }
    }

    /// Passes until shutdown: the vaults with due jobs, then a pause when there was nothing.
    /// First asks for the embedding upkeep of every tenant with a vault that lacks the
    /// configured model's set (a provider just configured, a model changed).
    pub async fn run(&self, shutdown: impl std::future::Future<Output = ()>) {
        let Some(active) = self.embeddings.active().cloned() else { return shutdown.await };
        tokio::pin!(shutdown);
        tokio::select! {
            () = &mut shutdown => return,
            asked = self.request_missing_sets(active.model()) => match asked {
                Ok(0) => {}
                Ok(n) => tracing::info!(tenants = n, model = active.model(), "embedding upkeep asked for"),
                Err(e) => tracing::warn!(error = %otc_errors::error_chain(&e), "could not look for vaults without the model's set"),
            },
        }
        loop {
            let pass = tokio::select! {
                () = &mut shutdown => return,
                pass = self.run_once() => pass,
            };
            let busy = match pass {
                Ok(report) => report.jobs_done > 0 || report.chunks > 0,
                Err(e) => {
                    tracing::warn!(error = %otc_errors::error_chain(&e), "embedding pass failed");
                    false
                }
            };
            let pause = if busy { Duration::ZERO } else { self.settings.poll_interval };
            tokio::select! {
                () = &mut shutdown => return,
                () = tokio::time::sleep(pause) => {}
            }
        }
    }

    /// Makes due now the embedding upkeep of every tenant with a vault lacking `model`'s set.
    async fn request_missing_sets(&self, model: &str) -> Result<usize, EmbedFailure> {
        let tenants = self.store.tenants_lacking_model(model).await?;
        for &tenant in &tenants {
            let mut tx = self.store.begin(tenant).await?;
            tx.request_upkeep(otc_store::upkeep::EMBEDDING).await?;
            tx.commit().await?;
        }
        Ok(tenants.len())
    }

    /// Every tenant's upkeep at once (tests and operators; the workers run each tenant's as its
    /// upkeep item comes due).
    pub async fn maintain(&self) -> Result<MaintainReport, EmbedFailure> {
        let mut report = MaintainReport::default();
        for tenant in self.store.tenant_ids().await? {
            let one = self.maintain_tenant(tenant).await?;
            report.sets_started += one.sets_started;
            report.jobs_revived += one.jobs_revived;
            report.cache_purged += one.cache_purged;
        }
        Ok(report)
    }

    /// One tenant's upkeep: every vault without a set for the configured model gets one (a
    /// new vault, a provider just configured, a model change; the backfill job fills it), dead
    /// jobs past `revive_after` are given another round, and cached vectors unused past
    /// `cache_retention` are forgotten. Idempotent.
    pub async fn maintain_tenant(&self, tenant: Uuid) -> Result<MaintainReport, EmbedFailure> {
        let mut report = MaintainReport::default();
        let Some(active) = self.embeddings.active().cloned() else { return Ok(report) };
        let now = chrono::Utc::now();
        let ago = |d: Duration| now - chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX);
        let mut tx = self.store.begin(tenant).await?;
        for vault in tx.list_vaults().await? {
            if tx.start_vault_model(vault.id, active.model(), active.dims() as i32).await? {
                report.sets_started += 1;
            }
        }
        report.jobs_revived += tx.revive_embed_jobs(ago(self.settings.revive_after)).await?;
        report.cache_purged += tx.purge_embedding_cache(ago(self.settings.cache_retention)).await?;
        tx.commit().await?;
        Ok(report)
    }

    /// Whether this worker runs embedding work (a provider is configured).
    pub fn active(&self) -> bool {
        self.embeddings.active().is_some()
    }

    /// How often a tenant's upkeep comes due.
    pub fn maintain_interval(&self) -> Duration {
        self.settings.maintain_interval
    }

    /// One pass over the vaults with embed jobs due, across tenants (one query finds them).
    /// A provider that cannot be reached ends the pass and is left alone for a while (see
    /// [`ProviderBreaker`]): the other vaults' jobs wait, no attempt counted.
    pub async fn run_once(&self) -> Result<EmbedReport, EmbedFailure> {
        let mut total = EmbedReport::default();
        let Some(active) = self.embeddings.active().cloned() else { return Ok(total) };
        if self.breaker.open(active.model()) {
            return Ok(total);
        }
        for (tenant, vault) in self.store.due_job_vaults(EMBED_JOB, crate::DUE_VAULTS_PER_PASS).await? {
            match self.vault_pass(tenant, vault).await {
                Ok(r) => {
                    if r.embedded > 0 {
                        self.breaker.reset(active.model());
                    }
                    total.add(r)
                }
                Err(EmbedFailure::Embed { model, source: source @ otc_embed::EmbedError::Unavailable { .. } }) => {
                    let wait = self.breaker.trip(&model, self.settings.max_backoff);
                    tracing::warn!(%tenant, %vault, %model, error = %otc_errors::error_chain(&source), ?wait,
                        "the embedding provider cannot be reached; left alone for a while");
                    break;
                }
                Err(e) => {
                    tracing::warn!(%tenant, %vault, error = %otc_errors::error_chain(&e), "embedding failed; will retry")
                }
            }
        }
        Ok(total)
    }

    /// Embeds until the vault has no due jobs left (tests and the benchmark; the workers
    /// interleave vaults instead).
    pub async fn drain(&self, tenant: Uuid, vault: Uuid) -> Result<EmbedReport, EmbedFailure> {
        let mut total = EmbedReport::default();
        loop {
            let r = self.vault_pass(tenant, vault).await?;
            if r.jobs_done == 0 && r.chunks == 0 {
                return Ok(total);
            }
            total.add(r);
        }
    }

    /// One pass over one vault's due jobs. A failure backs the claimed jobs off.
    pub async fn vault_pass(&self, tenant: Uuid, vault: Uuid) -> Result<EmbedReport, EmbedFailure> {
        let Some(active) = self.embeddings.active().cloned() else { return Ok(EmbedReport::default()) };
        let mut tx = self.store.begin(tenant).await?;
        let mut jobs = tx.claim_jobs(vault, EMBED_JOB, 32).await?;
        if jobs.is_empty() {
            tx.commit().await?;
            return Ok(EmbedReport::default());
        }
        // Many small jobs (one note each, from the write tools) go together; large ones (an
        // import's batches of hundreds) one pass at a time, so a pass reads no more notes than
        // it can embed. The rest stay locked until the pass ends, untouched, for the next one.
        let mut notes = 0;
        let keep = jobs
            .iter()
            .take_while(|j| {
                let first = notes == 0;
                notes += j.payload.get("paths").and_then(|p| p.as_array()).map_or(1, Vec::len);
                first || notes <= self.settings.batch_chunks
            })
            .count();
        jobs.truncate(keep);
        let ids: Vec<i64> = jobs.iter().map(|j| j.id).collect();
        match self.work(&mut tx, tenant, vault, &active, &jobs).await {
            Ok(report) => {
                tx.commit().await?;
                Ok(report)
            }
            Err(e) => {
                drop(tx);
                let chain = otc_errors::error_chain(&e);
                let mut tx = self.store.begin(tenant).await?;
                tx.retry_jobs(&ids, &chain, self.settings.max_attempts, self.settings.max_backoff.as_secs_f64())
                    .await?;
                tx.commit().await?;
                Err(e)
            }
        }
    }

    async fn work(
        &self,
        tx: &mut TenantTx,
        tenant: Uuid,
        vault: Uuid,
        active: &SharedEmbedder,
        jobs: &[ClaimedJob],
    ) -> Result<EmbedReport, EmbedFailure> {
        let mut report = EmbedReport::default();
        tx.start_vault_model(vault, active.model(), active.dims() as i32).await?;
        // The sets this vault keeps, each with the embedder that can fill it.
        let sets: Vec<(String, SharedEmbedder)> = tx
            .vault_models(vault)
            .await?
            .into_iter()
            .filter_map(|m| self.embeddings.for_model(&m.model, m.dims as usize).map(|e| (m.model, e)))
            .collect();
        let changed: Vec<String> = {
            let mut seen = HashSet::new();
            jobs.iter()
                .filter_map(|j| j.payload.get("paths").and_then(|p| p.as_array()))
                .flatten()
                .filter_map(|p| p.as_str())
                .filter(|p| seen.insert(p.to_string()))
                .map(str::to_string)
                .collect()
        };
        // Notes excluded from egress are never sent: their chunks stay without vectors.
        let egress =
            otc_vault::egress::Exclusion::of(&self.settings.egress_exclude_paths, &tx.egress_exclude_paths().await?);
        let mut budget = self.settings.batch_chunks;
        let mut finished = Vec::new();
        let mut all_done = true;
        let mut made = Vec::new();
        for (model, embedder) in &sets {
            let (filled, done) = self.fill(tx, tenant, vault, model, embedder, &changed, &egress, &mut budget).await?;
            made.extend(filled);
            all_done &= done;
        }
        if all_done {
            finished.extend(jobs.iter().filter(|j| j.payload.get("paths").is_some()).map(|j| j.id));
        }
        // Backfills: the next notes of their model, while the pass has room.
        for job in jobs.iter().filter(|j| j.payload.get("model").is_some()) {
            let model = job.payload["model"].as_str().unwrap_or_default().to_string();
            if model != active.model() {
                // The configuration moved on before this set was complete: it goes, so that it
                // never retires the configured model's set.
                tx.drop_vault_model(vault, &model).await?;
                finished.push(job.id);
                continue;
            }
            let Some((_, embedder)) = sets.iter().find(|(m, _)| *m == model) else {
                // The set was retired (another completed) or its model cannot be made: done.
                finished.push(job.id);
                continue;
            };
            if budget == 0 {
                continue;
            }
            let after = job.payload.get("after").and_then(|a| a.as_str()).unwrap_or_default().to_string();
            let paths = tx.note_paths_after(vault, &after, self.settings.backfill_notes).await?;
            let (filled, done) = self.fill(tx, tenant, vault, &model, embedder, &paths, &egress, &mut budget).await?;
            made.extend(filled);
            if !done {
                continue; // the same notes again next pass, the rest of their chunks
            }
            match paths.last() {
                Some(last) if paths.len() as i64 == self.settings.backfill_notes => {
                    tx.set_job_payload(job.id, &json!({ "model": model, "after": last })).await?;
                }
                _ => {
                    tx.complete_vault_model(vault, &model).await?;
                    finished.push(job.id);
                    tracing::info!(%tenant, %vault, model, "embedding set complete");
                }
            }
        }
        // Every model call is done: now, briefly, under the vault's index lock (exclusive, so no
        // indexer or rebuild batch changes a chunk between the check and the write), store.
        if !made.is_empty() {
            tx.lock_index(vault, true).await?;
        }
        for f in made {
            tx.cache_vectors(&f.model, &f.cache).await?;
            report.chunks += tx.put_chunk_vectors(vault, &f.model, f.dims, &f.vectors, &f.blobs).await? as usize;
            tx.record_embedding_usage(
                &f.model,
                f.usage.requests as i64,
                f.usage.tokens as i64,
                f.embedded as i64,
                f.cached as i64,
            )
            .await?;
            report.embedded += f.embedded;
            report.cached += f.cached;
        }
        tx.finish_jobs(&finished).await?;
        report.jobs_done = finished.len();
        Ok(report)
    }

    /// Makes the vectors of `paths`' chunks that have none for `model` (but those `egress`
    /// excludes), at most `budget` of them (from the cache, else the embedder), without storing
    /// them. Returns them, if any, and whether none was left for lack of budget.
    #[allow(clippy::too_many_arguments)]
    async fn fill(
        &self,
        tx: &mut TenantTx,
        tenant: Uuid,
        vault: Uuid,
        model: &str,
        embedder: &SharedEmbedder,
        paths: &[String],
        egress: &otc_vault::egress::Exclusion,
        budget: &mut usize,
    ) -> Result<(Option<Filled>, bool), EmbedFailure> {
        let kept: Vec<String>;
        let paths = if egress.is_empty() {
            paths
        } else {
            kept = paths.iter().filter(|p| !egress.excludes(p)).cloned().collect();
            &kept[..]
        };
        if paths.is_empty() {
            return Ok((None, true));
        }
        // One more than the budget says whether any would be left.
        let mut chunks = tx.chunks_to_embed(vault, model, paths, *budget as i64 + 1).await?;
        let complete = chunks.len() <= *budget;
        chunks.truncate(*budget);
        *budget -= chunks.len();
        if chunks.is_empty() {
            return Ok((None, complete));
        }
        let inputs = self.inputs(tenant, chunks).await?;
        let hashes: Vec<Vec<u8>> = inputs.iter().map(|i| i.hash.clone()).collect::<HashSet<_>>().into_iter().collect();
        let mut known: HashMap<Vec<u8>, Vec<f32>> = tx.cached_vectors(model, &hashes).await?.into_iter().collect();
        let cached = inputs.iter().filter(|i| known.contains_key(&i.hash)).count();
        // Each distinct text the cache lacks, once.
        let mut missing: Vec<&Input> = Vec::new();
        let mut asked = HashSet::new();
        for input in &inputs {
            if !known.contains_key(&input.hash) && asked.insert(input.hash.clone()) {
                missing.push(input);
            }
        }
        let texts: Vec<String> = missing.iter().map(|i| i.text.clone()).collect();
        let (vectors, usage) = embed_each_or_skip(embedder.as_ref(), tenant, &texts, &missing)
            .await
            .map_err(|source| EmbedFailure::Embed { model: model.to_string(), source })?;
        // The cache gets what was embedded now, and marks what it answered as used.
        let mut cache: Vec<(Vec<u8>, Vec<f32>)> = known.iter().map(|(h, v)| (h.clone(), v.clone())).collect();
        for (input, vector) in missing.iter().zip(vectors) {
            if let Some(v) = vector {
                cache.push((input.hash.clone(), v.clone()));
                known.insert(input.hash.clone(), v);
            }
        }
        let vectors: Vec<ChunkVector> = inputs
            .iter()
            .filter_map(|i| {
                known.get(&i.hash).map(|v| ChunkVector {
                    path: i.chunk.path.clone(),
                    ord: i.chunk.ord,
                    start: i.chunk.start,
                    end: i.chunk.end,
                    embedding: v.clone(),
                })
            })
            .collect();
        let blobs: Vec<(String, Hash)> = {
            let mut seen = HashSet::new();
            inputs.iter().filter(|i| seen.insert(&i.chunk.path)).map(|i| (i.chunk.path.clone(), i.chunk.blob)).collect()
        };
        let filled = Filled {
            model: model.to_string(),
            dims: embedder.dims() as i32,
            vectors,
            blobs,
            cache,
            usage,
            embedded: texts.len(),
            cached,
        };
        Ok((Some(filled), complete))
    }

    /// Reads the chunks' notes and makes each chunk's input: the note's title, the chunk's
    /// heading path, then its text.
    async fn inputs(&self, tenant: Uuid, chunks: Vec<ChunkToEmbed>) -> Result<Vec<Input>, EmbedFailure> {
        let wanted: Vec<(String, Hash)> = {
            let mut seen = HashSet::new();
            chunks.iter().filter(|c| seen.insert(c.blob)).map(|c| (c.path.clone(), c.blob)).collect()
        };
        let blobs = self.blobs.clone();
        let texts: HashMap<Hash, bytes::Bytes> = futures::stream::iter(wanted)
            .map(move |(path, hash)| {
                let blobs = blobs.clone();
                async move {
                    let bytes =
                        blobs.get_blob(tenant, &hash).await.map_err(|source| IndexError::Blob { path, source })?;
                    Ok::<_, IndexError>((hash, bytes))
                }
            })
            .buffer_unordered(8)
            .try_collect()
            .await?;
        Ok(chunks
            .into_iter()
            .map(|chunk| {
                let note = texts.get(&chunk.blob).map(|b| String::from_utf8_lossy(b)).unwrap_or_default();
                let body = slice(&note, chunk.start as usize, chunk.end as usize);
                let text = input_text(&chunk.path, &chunk.heading_path, body);
                let hash = text_hash(&text);
                Input { chunk, text, hash }
            })
            .collect())
    }
}

/// `text[start..end]`, moved inside the text and onto character boundaries.
fn slice(text: &str, start: usize, end: usize) -> &str {
    let start = start.min(text.len());
    let end = text.ceil_char_boundary(end.clamp(start, text.len()));
    &text[text.floor_char_boundary(start)..end]
}

/// What a chunk is embedded as: the note's title and the chunk's heading path lead (a short
/// chunk says little alone; the model reads the first 128 tokens or so), then the text.
pub fn input_text(path: &str, heading_path: &str, body: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    let title = name.strip_suffix(".md").unwrap_or(name);
    let body = body.trim();
    if heading_path.is_empty() { format!("{title}\n{body}") } else { format!("{title} > {heading_path}\n{body}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_lead_with_title_and_heading_path() {
        assert_eq!(input_text("Projects/Apollo.md", "", " Launch plan. \n"), "Apollo\nLaunch plan.");
        assert_eq!(input_text("a.md", "Goals > Q3", "## Q3\nShip it"), "a > Goals > Q3\n## Q3\nShip it");
    }

    #[test]
    fn slices_stay_on_boundaries() {
        let t = "héllo";
        assert_eq!(slice(t, 2, 3), "é");
        assert_eq!(slice(t, 0, 99), "héllo");
        assert_eq!(slice(t, 9, 3), "");
    }
}
