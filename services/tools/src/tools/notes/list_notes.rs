use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{PAGE_BUDGET_BYTES, decode_cursor, page, page_limit};
use otc_kernel::{CallContext, Tool};

pub struct ListNotes;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Default: the vault root.
    #[serde(default)]
    pub folder: Option<String>,
    /// Include subfolders (default true).
    #[serde(default)]
    pub recursive: Option<bool>,
    /// With or without the dot (default [".md"]).
    #[serde(default)]
    pub extensions: Option<Vec<String>>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
    /// 1 to 1000 (default 100).
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub notes: Vec<Entry>,
    /// Pass as cursor for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Entry {
    pub path: String,
    /// Detailed only: bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    /// Detailed only: RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtime: Option<String>,
}

impl Tool for ListNotes {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        essentials: true,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "list_notes",
            "List notes",
            "Lists the notes (or other files, by extension) in a vault folder, in path order, a page at a time.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let folder = view.folder_prefix(input.folder.as_deref())?;
        let limit = page_limit(input.limit)?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let extensions: Vec<String> = input
            .extensions
            .unwrap_or_else(|| vec![".md".into()])
            .iter()
            .map(|e| format!(".{}", e.trim_start_matches('.').to_lowercase()))
            .collect();
        if extensions.iter().any(|e| e.len() < 2 || e[1..].contains(['.', '/'])) {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "extensions are like \"md\" or \".png\"")
                .detail("field", "extensions"));
        }
        let after: Option<String> = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?;
        let mut tx = ctx.begin().await?;
        let rows = tx
            .list_files(
                view.vault.id,
                &folder,
                input.recursive.unwrap_or(true),
                Some(&extensions),
                view.readable(),
                after.as_deref(),
                limit as i64 + 1,
            )
            .await?;
        tx.commit().await?;
        let more = rows.len() > limit;
        let entries: Vec<Entry> = rows
            .into_iter()
            .take(limit)
            .map(|r| Entry {
                path: r.path,
                size: detailed.then_some(r.size),
                mtime: detailed.then(|| r.mtime.to_rfc3339()),
            })
            .collect();
        let (notes, next_cursor) = page(ctx.tool, entries, more, PAGE_BUDGET_BYTES, |n| n.path.clone());
        Ok(Output { vault: view.vault.name.clone(), notes, next_cursor })
    }
}
