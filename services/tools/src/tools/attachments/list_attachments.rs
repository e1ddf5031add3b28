use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::attachments::get_attachment::mime_of;
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{PAGE_BUDGET_BYTES, decode_cursor, page, page_limit};
use otc_kernel::{CallContext, Tool};

pub struct ListAttachments;

/// What list_attachments lists when no extensions are given.
const ATTACHMENTS: [&str; 20] = [
    ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".svg", ".webp", ".avif", ".pdf", ".mp3", ".wav", ".m4a", ".ogg", ".webm",
    ".flac", ".3gp", ".mp4", ".mov", ".mkv", ".ogv",
];

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Default: the whole vault. Subfolders are included.
    #[serde(default)]
    pub folder: Option<String>,
    /// Default: images, PDF, audio and video.
    #[serde(default)]
    pub extensions: Option<Vec<String>>,
    /// Also count the notes linking to each.
    #[serde(default)]
    pub include_reference_count: Option<bool>,
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub cursor: Option<String>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub attachments: Vec<Entry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Entry {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtime: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference_count: Option<i64>,
}

impl Tool for ListAttachments {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:attachments"],
        core: false,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "list_attachments",
            "List attachments",
            "Lists the attachments (images, PDFs, audio, video) under a folder.",
            Domain::Attachments,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let v = ctx.view(&input.vault).await?;
        let folder = v.folder_prefix(input.folder.as_deref())?;
        let limit = page_limit(input.limit)?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let extensions: Vec<String> = match input.extensions {
            Some(list) => list.iter().map(|e| format!(".{}", e.trim_start_matches('.').to_lowercase())).collect(),
            None => ATTACHMENTS.iter().map(|e| e.to_string()).collect(),
        };
        let after: Option<String> = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?;
        let mut tx = ctx.begin().await?;
        let rows = tx
            .list_attachments(v.vault.id, &folder, &extensions, v.readable(), after.as_deref(), limit as i64 + 1)
            .await?;
        let more = rows.len() > limit;
        let rows: Vec<_> = rows.into_iter().take(limit).collect();
        let counts = if input.include_reference_count == Some(true) {
            let paths: Vec<String> = rows.iter().map(|r| r.path.clone()).collect();
            Some(tx.reference_counts(v.vault.id, &paths, v.readable()).await?)
        } else {
            None
        };
        tx.commit().await?;
        let items: Vec<Entry> = rows
            .into_iter()
            .map(|r| Entry {
                reference_count: counts.as_ref().map(|c| c.get(&r.path).copied().unwrap_or(0)),
                size: detailed.then_some(r.size),
                mtime: detailed.then(|| r.mtime.to_rfc3339()),
                mime: detailed.then(|| mime_of(&r.path).to_string()),
                path: r.path,
            })
            .collect();
        let (attachments, next_cursor) = page(ctx.tool, items, more, PAGE_BUDGET_BYTES, |a| a.path.clone());
        Ok(Output { vault: v.vault.name.clone(), attachments, next_cursor })
    }
}
