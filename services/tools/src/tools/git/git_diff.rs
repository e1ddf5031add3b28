use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::Hash;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::{CallContext, Tool, writing};

pub struct GitDiff;

/// The largest version (either side) a diff is computed for.
const MAX_DIFF_BYTES: usize = 2 * 1024 * 1024;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// Nothing is ever staged: true gives an empty diff.
    #[serde(default)]
    pub staged: Option<bool>,
    /// A git_log seq (default: before the note's last change).
    #[serde(default)]
    pub from: Option<i64>,
    /// A git_log seq (default: now).
    #[serde(default)]
    pub to: Option<i64>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    /// A unified diff (3 lines of context); empty when nothing changed.
    pub diff: String,
    pub lines_added: usize,
    pub lines_removed: usize,
    /// The content hash on each side; absent where the note did not exist.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_hash: Option<String>,
}

impl Tool for GitDiff {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:git"],
        response_format: Format::Fixed { why: "a fixed diff" },
        core: false,
        ..ToolSpec::base(
            "git_diff",
            "What changed in a note",
            "Unified diff of one note between two points of the vault's history (default: its last change).",
            Domain::Git,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        view.readable_path(&input.path)?;
        let out = |diff: String, added, removed, from: Option<Hash>, to: Option<Hash>| Output {
            vault: view.vault.name.clone(),
            path: input.path.clone(),
            diff,
            lines_added: added,
            lines_removed: removed,
            from_hash: from.map(hex::encode),
            to_hash: to.map(hex::encode),
        };
        if input.staged == Some(true) {
            return Ok(out(String::new(), 0, 0, None, None));
        }
        let path = input.path.as_str();
        let view = &view;
        let at = |seq: i64, field: &'static str| async move {
            if seq < 0 {
                return Err(
                    ToolError::with_message(ErrorCode::InvalidInput, "a sequence is 0 or more").detail("field", field)
                );
            }
            let mut tx = ctx.begin().await?;
            let files = tx.files_at_seq(view.vault.id, seq, path, i64::MAX).await?;
            tx.commit().await?;
            Ok::<_, ToolError>(files.into_iter().find(|f| f.path == path).map(|f| f.hash))
        };
        let to = match input.to {
            Some(seq) => at(seq, "to").await?,
            None => writing::current(ctx, view.vault.id, &input.path).await?.map(|e| e.hash),
        };
        let from = match input.from {
            Some(seq) => at(seq, "from").await?,
            None => {
                let mut tx = ctx.begin().await?;
                let last = tx.path_history(view.vault.id, &input.path, None, 1).await?;
                tx.commit().await?;
                last.into_iter().next().and_then(|r| r.old_hash)
            }
        };
        if from.is_none() && to.is_none() {
            return Err(otc_kernel::reading::not_found(&input.path));
        }
        let text = |hash: Option<Hash>| async move {
            match hash {
                None => Ok::<_, ToolError>(String::new()),
                Some(h) => {
                    let bytes = writing::blob(ctx, &h).await?;
                    if bytes.len() > MAX_DIFF_BYTES {
                        return Err(ToolError::with_message(
                            ErrorCode::Overflow,
                            "a version is too large to diff (2 MiB)",
                        )
                        .detail("size", bytes.len()));
                    }
                    Ok(String::from_utf8_lossy(&bytes).into_owned())
                }
            }
        };
        let (old, new) = (text(from).await?, text(to).await?);
        let diff = similar::TextDiff::from_lines(&old, &new);
        let (mut added, mut removed) = (0, 0);
        for change in diff.iter_all_changes() {
            match change.tag() {
                similar::ChangeTag::Insert => added += 1,
                similar::ChangeTag::Delete => removed += 1,
                similar::ChangeTag::Equal => {}
            }
        }
        let unified = if added + removed == 0 {
            String::new()
        } else {
            diff.unified_diff()
                .context_radius(3)
                .header(&format!("a/{}", input.path), &format!("b/{}", input.path))
                .to_string()
        };
        Ok(out(unified, added, removed, from, to))
    }
}
