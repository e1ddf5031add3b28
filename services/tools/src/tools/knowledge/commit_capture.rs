//! commit_capture: a queued capture written as a new note (once), or refused when quarantined.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::StoreError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tools::knowledge::memory;
use otc_kernel::writing::{self, Planned};
use otc_kernel::{CallContext, Tool, internal};

pub struct CommitCapture;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub capture_id: String,
    /// Must not exist yet.
    pub target_path: String,
    /// Overrides title, tags, source or captured.
    #[serde(default)]
    pub frontmatter_overrides: Option<Map<String, Value>>,
    #[serde(default)]
    pub delete_from_queue: Option<bool>,
    /// The capture's listed content_hash.
    #[serde(default)]
    pub prev_hash: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub capture_id: String,
    pub path: String,
    /// The new note's hash (the prev_hash of your next write).
    pub content_hash: String,
    /// Whether the capture left the queue.
    pub removed_from_queue: bool,
}

impl Tool for CommitCapture {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:capture"],
        scope_class: otc_catalog::ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: the note's path and hash" },
        ..ToolSpec::base(
            "commit_capture",
            "Commit a capture as a note",
            "Writes a queued capture as a new note at target_path, once; a quarantined capture is refused.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let id = memory::entity_id(&input.capture_id, "capture_id")?;
        let path = input.target_path.trim().to_string();
        writing::check_write(&view, &path, "target_path")?;
        let store_err = |e: StoreError| internal(ctx.tool, &e);
        let missing = || {
            ToolError::with_message(ErrorCode::NotFound, "no such capture in this vault")
                .detail("capture_id", id.to_string())
        };
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        let capture = tx.capture(view.vault.id, id).await.map_err(store_err)?.ok_or_else(missing)?;
        tx.commit().await.map_err(store_err)?;
        if capture.poison_assessment == "poisoned" {
            return Err(ToolError::with_message(
                ErrorCode::ContentRejected,
                "this capture is quarantined: its text tries to instruct an AI reader, so it is never written to a note",
            )
            .detail("poison_signals", capture.poison_signals.clone()));
        }
        if capture.status != "queued" {
            return Err(ToolError::with_message(
                ErrorCode::Conflict,
                format!("the capture is {} already", capture.status),
            )
            .detail("status", capture.status.clone())
            .detail(
                "committed_path",
                capture.committed_path.clone().filter(|p| view.can_read(p)).unwrap_or_default(),
            ));
        }
        if input.prev_hash.as_deref().is_some_and(|h| h != capture.content_hash) {
            return Err(ToolError::with_message(
                ErrorCode::ConcurrentModification,
                "the capture changed since it was listed",
            )
            .detail("content_hash", capture.content_hash.clone()));
        }
        writing::check_new_name(ctx, &view, &path, "target_path").await?;
        let text = note_text(&capture, input.frontmatter_overrides.as_ref())?;
        // One committer wins the capture; a failed write gives it back.
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        let won = tx.claim_capture(view.vault.id, id, &capture.content_hash).await.map_err(store_err)?;
        tx.commit().await.map_err(store_err)?;
        if !won {
            return Err(ToolError::with_message(
                ErrorCode::ConcurrentModification,
                "another call is committing this capture",
            )
            .detail("capture_id", id.to_string()));
        }
        let written = writing::edit_note(ctx, &view, &path, None, None, |existing, _| match existing {
            Some(_) => Err(ToolError::with_message(ErrorCode::NoteExists, "a note already exists at target_path")
                .detail("field", "target_path")),
            None => Ok(Planned { text: text.clone(), extra: (), trash_old: false }),
        })
        .await;
        let remove = input.delete_from_queue.unwrap_or(false);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        tx.finish_capture(view.vault.id, id, written.is_ok().then_some(path.as_str()), remove)
            .await
            .map_err(store_err)?;
        tx.commit().await.map_err(store_err)?;
        let written = written?;
        Ok(Output {
            vault: view.vault.name.clone(),
            capture_id: id.to_string(),
            path,
            content_hash: hex::encode(written.content_hash),
            removed_from_queue: remove,
        })
    }
}

/// The note a capture becomes: its properties (title, tags, source, when captured, then the
/// overrides) and its text.
fn note_text(capture: &otc_store::Capture, overrides: Option<&Map<String, Value>>) -> Result<String, ToolError> {
    let mut properties = Map::new();
    if let Some(title) = &capture.title {
        properties.insert("title".into(), Value::String(title.clone()));
    }
    if !capture.tags.is_empty() {
        properties.insert("tags".into(), Value::from(capture.tags.clone()));
    }
    if let Some(source) = &capture.source {
        properties.insert("source".into(), Value::String(source.clone()));
    }
    properties.insert("captured".into(), Value::String(capture.created_at.format("%Y-%m-%d").to_string()));
    for (key, value) in overrides.into_iter().flatten() {
        properties.insert(key.clone(), value.clone());
    }
    let body = capture.content.trim_end();
    let edited = otc_edit::frontmatter::edit_frontmatter(
        &format!("{body}\n"),
        otc_edit::frontmatter::FrontmatterOp::Merge { properties: &properties },
    )?;
    Ok(edited.text)
}
