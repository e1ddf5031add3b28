use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{CallContext, Tool, internal};

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
    /// Full-text search (Postgres) is always on; vectors come with the embedding work.
    pub fts_enabled: bool,
    pub vec_enabled: bool,
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
            "Reports, per vault, how far the search and link index has got (its lag behind the latest change), \
             what it holds (notes, links, unresolved links, tags, tasks, chunks) and any failures (queued and \
             dead-lettered jobs with the last error).",
            Domain::Admin,
        )
    };

    async fn call(ctx: &CallContext<'_>, _input: Input) -> Result<Output, ToolError> {
        let name = Self::SPEC.name;
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(|e| internal(name, &e))?;
        let mut vaults = Vec::new();
        for vault in tx.list_vaults().await.map_err(|e| internal(name, &e))? {
            if ctx.caller.vault_id.is_some_and(|bound| bound != vault.id) {
                continue;
            }
            let s = tx.index_status(vault.id).await.map_err(|e| internal(name, &e))?;
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
                vec_enabled: false,
            });
        }
        tx.commit().await.map_err(|e| internal(name, &e))?;
        Ok(Output { vaults })
    }
}

/// The kind of an indexing failure, without its details (they can name notes the caller may
/// not read).
fn error_kind(chain: &str) -> String {
    if chain.starts_with("reading ") {
        "object_store: a file could not be read".into()
    } else if chain.starts_with("index store") {
        "database".into()
    } else {
        "internal".into()
    }
}
