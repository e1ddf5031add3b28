use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{PAGE_BUDGET_BYTES, decode_cursor, page, page_limit};
use otc_kernel::{CallContext, Tool};

pub struct FindNotesByTag;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// With or without #; "project" also finds "project/sub".
    pub tag: String,
    #[serde(default)]
    pub folder: Option<String>,
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
    pub matches: Vec<Match>,
    /// Whether more matches follow (then next_cursor is set).
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Match {
    pub path: String,
    /// Detailed only: the note's tags that matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
}

impl Tool for FindNotesByTag {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "find_notes_by_tag",
            "Find notes by tag",
            "Finds notes carrying a tag, inline or in frontmatter.",
            Domain::Metadata,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let v = ctx.view(&input.vault).await?;
        let folder = v.folder_prefix(input.folder.as_deref())?;
        let limit = page_limit(input.limit)?;
        let tag = input.tag.trim().trim_start_matches('#');
        if tag.is_empty() || tag.contains(char::is_whitespace) {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "tag is one word like project/sub")
                .detail("field", "tag"));
        }
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let after: Option<String> = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?;
        let mut tx = ctx.begin().await?;
        let rows =
            tx.notes_with_tag(v.vault.id, tag, &folder, v.readable(), after.as_deref(), limit as i64 + 1).await?;
        tx.commit().await?;
        let more = rows.len() > limit;
        let items: Vec<Match> =
            rows.into_iter().take(limit).map(|(path, tags)| Match { path, tags: detailed.then_some(tags) }).collect();
        let (matches, next_cursor) = page(ctx.tool, items, more, PAGE_BUDGET_BYTES, |m| m.path.clone());
        let truncated = next_cursor.is_some();
        Ok(Output { vault: v.vault.name.clone(), matches, truncated, next_cursor })
    }
}
