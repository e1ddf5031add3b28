use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_indexer::{IndexError, Progress, RebuildReport};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::long_calls::{self, Outcome, TaskHandle};
use otc_kernel::{CallContext, ProgressSink, Tool, caller_vault};

pub struct IndexVault;

/// How long a rebuild's lease lasts at most (it is given back when the rebuild ends).
const REBUILD_LEASE: std::time::Duration = std::time::Duration::from_secs(3600);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    #[serde(default)]
    pub folder: Option<String>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

/// The rebuild's result; or, when it outlasts the call's time budget, a task handle
/// (status "working", task_id, poll_tool, tool, message) to poll with get_task_status.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Output {
    /// completed, or working (a task handle).
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vault: Option<String>,
    /// Notes parsed and indexed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<u64>,
    /// Full-text chunks written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunks: Option<u64>,
    /// Links whose target does not resolve.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unresolved_links: Option<u64>,
    /// Notes whose frontmatter is not valid YAML (their body links are still indexed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes_frontmatter_failed: Option<Vec<String>>,
    /// Full-text search is on (always, in Postgres).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fts_enabled: Option<bool>,
    /// Semantic search vectors are made (an embedding provider is configured). The workers
    /// embed the rebuilt chunks after this answers (unchanged text from their cache);
    /// get_index_status reports their progress, failures and lag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vec_enabled: Option<bool>,
    /// With vec_enabled: the model the vectors come from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedding_model: Option<String>,
    /// Detailed: every file of the vault (notes and attachments).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<u64>,
    /// Detailed: index rows removed for files no longer in the vault.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed: Option<u64>,
    /// Detailed: links, embeds and property links written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<u64>,
    /// Detailed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Task handle: the id to pass to get_task_status or cancel_task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Task handle: the tool to poll with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub poll_tool: Option<String>,
    /// Task handle: the tool that is running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Task handle: what to do next, in a sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Progress to the task record (and to the caller's progress notifications, when asked for:
/// notes processed out of notes seen); cancellation from the record.
struct TaskProgress(TaskHandle, Option<ProgressSink>);

impl Progress for TaskProgress {
    fn report(&self, done: u64, total: u64) {
        let handle = self.0.clone();
        tokio::spawn(async move { handle.progress(done, Some(total)).await });
        if let Some(sink) = &self.1 {
            sink(done, Some(total));
        }
    }

    async fn cancelled(&self) -> bool {
        self.0.cancel_requested().await
    }
}

fn output(vault: &str, report: &RebuildReport, millis: u64, format: ResponseFormat, model: Option<String>) -> Output {
    let detailed = format == ResponseFormat::Detailed;
    Output {
        status: "completed".into(),
        vault: Some(vault.to_string()),
        notes: Some(report.notes),
        chunks: Some(report.chunks),
        unresolved_links: Some(report.unresolved),
        notes_frontmatter_failed: Some(report.frontmatter_failed.clone()),
        fts_enabled: Some(true),
        vec_enabled: Some(model.is_some()),
        embedding_model: model,
        files: detailed.then_some(report.files),
        removed: detailed.then_some(report.removed),
        links: detailed.then_some(report.links),
        duration_ms: detailed.then_some(millis),
        task_id: None,
        poll_tool: None,
        tool: None,
        message: None,
    }
}

impl Tool for IndexVault {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Index),
        scopes: &["admin:vault"],
        scope_class: ScopeClass::Admin,
        essentials: true,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "index_vault",
            "Rebuild the vault index",
            "Rebuilds the vault's index (links, tags, full text) from its files, for repair or after changing \
             Excluded files. A large vault returns a task to poll with get_task_status.",
            Domain::Vault,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let format = format::resolve(input.response_format, input.verbosity, ctx.default_format());
        let vault = caller_vault(ctx, &input.vault).await?;
        if let Some(folder) = &input.folder {
            otc_vault::check_path(folder.trim_end_matches('/')).map_err(|e| e.detail("field", "folder"))?;
        }
        let folder = input.folder.map(|f| format!("{}/", f.trim_end_matches('/')));
        let indexer = ctx.services().indexer.clone();
        let tenant = ctx.caller.tenant_id;
        let vault_name = vault.name.clone();
        let sink = ctx.progress.cloned();
        let model = ctx.services().embeddings.active().map(|e| e.model().to_string());
        // One rebuild per vault at a time (two would replace the same rows at once). The lease
        // lapses by itself if the pod running the rebuild dies.
        let kv = ctx.services().kv.clone();
        let lease = format!("rebuild:{tenant}:{}", vault.id);
        let holder = uuid::Uuid::new_v4().to_string();
        let got = kv
            .try_acquire_lease(&lease, &holder, REBUILD_LEASE)
            .await
            .map_err(|e| otc_kernel::internal(ctx.tool, &e))?;
        if !got {
            return Err(ToolError::with_message(ErrorCode::Conflict, "a rebuild of this vault is already running")
                .detail("reason", "rebuild_running")
                .detail("vault", vault.name.clone()));
        }
        let outcome = long_calls::run(ctx, "index_vault", move |handle| async move {
            let started = std::time::Instant::now();
            let progress = TaskProgress(handle, sink);
            let result = indexer.rebuild(tenant, vault.id, folder.as_deref(), &progress).await;
            if let Err(e) = kv.release_lease(&lease, &holder).await {
                tracing::warn!(error = ?e, "could not release the rebuild lease; it lapses by itself");
            }
            match result {
                Ok(report) => {
                    let millis = started.elapsed().as_millis() as u64;
                    let out = output(&vault_name, &report, millis, format, model);
                    serde_json::to_value(out).map_err(|e| otc_kernel::internal(Self::SPEC.name, &e))
                }
                Err(IndexError::Cancelled) => Err(ToolError::new(ErrorCode::Aborted)),
                Err(e) => Err(otc_kernel::internal(Self::SPEC.name, &e)),
            }
        })
        .await?;
        let (Outcome::Done(value) | Outcome::Working(value)) = outcome;
        serde_json::from_value(value).map_err(|e| otc_kernel::internal(ctx.tool, &e))
    }
}
