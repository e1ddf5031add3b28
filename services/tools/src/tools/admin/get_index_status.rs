use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::{CallContext, Tool};

pub struct GetIndexStatus;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    /// One entry per vault you can reach.
    pub vaults: Vec<VaultIndex>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct VaultIndex {
    pub vault: String,
    /// ready (caught up), indexing (jobs queued), or degraded (jobs dead-lettered).
    pub state: String,
    /// Files (notes and attachments) and notes in the index.
    pub files: i64,
    pub notes: i64,
    /// Files in Obsidian's Excluded files: link targets, kept out of search.
    pub excluded: i64,
    pub links: i64,
    pub embeds: i64,
    pub property_links: i64,
    pub unresolved_links: i64,
    pub tags: i64,
    pub tasks: i64,
    pub chunks: i64,
    pub notes_frontmatter_failed: i64,
    /// The vault's last change, and the last change the index reflects.
    pub head_seq: i64,
    pub indexed_seq: i64,
    /// head_seq - indexed_seq: changes not yet indexed.
    pub lag: i64,
    /// Index jobs waiting (including ones backing off after a failure).
    pub queued_jobs: i64,
    /// Seconds the oldest queued job has waited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oldest_queued_seconds: Option<i64>,
    /// Jobs that failed every attempt; their error is kept.
    pub dead_jobs: i64,
    /// What the last failure was, in kind only (object_store, database or internal); the full
    /// error is in the server log and the job's record, which name paths.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rebuilt_at: Option<String>,
    /// Full-text search is always on; vectors when an embedding provider is configured.
    pub fts_enabled: bool,
    pub vec_enabled: bool,
    /// With vec_enabled: the vault's vectors and the embedding work's lag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embeddings: Option<Embeddings>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Embeddings {
    /// The model new vectors come from (the server's configuration).
    pub model: String,
    /// ready (every chunk has a vector), embedding (chunks waiting), or degraded (jobs
    /// dead-lettered).
    pub state: String,
    /// The vector sets the vault holds: the configured model's, and an older one searched
    /// until the new set is complete.
    pub sets: Vec<VectorSet>,
    pub chunks: i64,
    /// Embed jobs waiting (including ones backing off after a failure), and the oldest's age.
    pub queued_jobs: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oldest_queued_seconds: Option<i64>,
    pub dead_jobs: i64,
    /// What the last failure was, in kind only (embedding_provider, object_store, database).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct VectorSet {
    pub model: String,
    pub dims: i32,
    /// filling (being made) or complete.
    pub state: String,
    /// Chunks with a vector in this set, and chunks without one.
    pub vectors: i64,
    pub missing: i64,
}

impl Tool for GetIndexStatus {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        essentials: true,
        response_format: Format::Fixed { why: "every field is a health signal" },
        ..ToolSpec::base(
            "get_index_status",
            "Index status",
            "Per vault: the search index's lag, counts (notes, links, tags, chunks), queued and dead-lettered \
             jobs and last error; likewise for embeddings.",
            Domain::Admin,
        )
    };

    async fn call(ctx: &CallContext<'_>, _input: Input) -> Result<Output, ToolError> {
        let mut tx = ctx.begin().await?;
        let mut vaults = Vec::new();
        for vault in tx.list_vaults().await? {
            if ctx.caller.vault_id.is_some_and(|bound| bound != vault.id) {
                continue;
            }
            let s = tx.index_status(vault.id).await?;
            let embeddings = match ctx.services().embeddings.active() {
                Some(active) => {
                    let e = tx.embedding_status(vault.id).await?;
                    let sets: Vec<VectorSet> = e
                        .models
                        .iter()
                        .zip(&e.vectors)
                        .map(|(m, &vectors)| VectorSet {
                            model: m.model.clone(),
                            dims: m.dims,
                            state: if m.complete { "complete" } else { "filling" }.into(),
                            vectors,
                            missing: (e.chunks - vectors).max(0),
                        })
                        .collect();
                    let waiting =
                        e.queued_jobs > 0 || sets.iter().all(|set| set.model != active.model() || set.missing > 0);
                    Some(Embeddings {
                        model: active.model().to_string(),
                        state: if e.dead_jobs > 0 {
                            "degraded"
                        } else if waiting {
                            "embedding"
                        } else {
                            "ready"
                        }
                        .into(),
                        sets,
                        chunks: e.chunks,
                        queued_jobs: e.queued_jobs,
                        oldest_queued_seconds: e
                            .oldest_queued_at
                            .map(|t| (chrono::Utc::now() - t).num_seconds().max(0)),
                        dead_jobs: e.dead_jobs,
                        last_error: e.last_error.as_deref().map(error_kind),
                    })
                }
                None => None,
            };
            let lag = (s.head_seq - s.indexed_seq).max(0);
            vaults.push(VaultIndex {
                vault: vault.name,
                state: if s.dead_jobs > 0 {
                    "degraded"
                } else if lag > 0 || s.queued_jobs > 0 {
                    "indexing"
                } else {
                    "ready"
                }
                .into(),
                files: s.files,
                notes: s.notes,
                excluded: s.excluded,
                links: s.links,
                embeds: s.embeds,
                property_links: s.property_links,
                unresolved_links: s.unresolved,
                tags: s.tags,
                tasks: s.tasks,
                chunks: s.chunks,
                notes_frontmatter_failed: s.frontmatter_errors,
                head_seq: s.head_seq,
                indexed_seq: s.indexed_seq,
                lag,
                queued_jobs: s.queued_jobs,
                oldest_queued_seconds: s.oldest_queued_at.map(|t| (chrono::Utc::now() - t).num_seconds().max(0)),
                dead_jobs: s.dead_jobs,
                last_error: s.last_error.as_deref().map(error_kind),
                rebuilt_at: s.rebuilt_at.map(|t| t.to_rfc3339()),
                fts_enabled: true,
                vec_enabled: embeddings.is_some(),
                embeddings,
            });
        }
        tx.commit().await?;
        Ok(Output { vaults })
    }
}

/// The kind of an indexing failure, without its details (they can name notes the caller may
/// not read).
fn error_kind(chain: &str) -> String {
    if chain.starts_with("embedding with ") {
        "embedding_provider: the provider failed or refused".into()
    } else if chain.starts_with("reading ") {
        "object_store: a file could not be read".into()
    } else if chain.starts_with("index store") {
        "database".into()
    } else {
        "internal".into()
    }
}
