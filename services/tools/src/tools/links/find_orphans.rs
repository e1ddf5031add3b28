use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::reading::{PAGE_BUDGET_BYTES, decode_cursor, page, page_limit};
use otc_kernel::{CallContext, Tool};

pub struct FindOrphans;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    #[serde(default)]
    pub folder: Option<String>,
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub cursor: Option<String>,
    /// Only notes that also link nowhere.
    #[serde(default)]
    pub require_no_outgoing: Option<bool>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// Paths of notes no other note you can read links to (a property link counts).
    pub orphans: Vec<String>,
    /// Pass as cursor for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl Tool for FindOrphans {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Scan),
        scopes: &["read:notes"],
        response_format: Format::Fixed { why: "bare paths already" },
        ..ToolSpec::base(
            "find_orphans",
            "Orphan notes",
            "Lists orphan notes: notes no other note links to (a property link counts).",
            Domain::Links,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let v = ctx.view(&input.vault).await?;
        let folder = v.folder_prefix(input.folder.as_deref())?;
        let limit = page_limit(input.limit)?;
        let after: Option<String> = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?;
        let mut tx = ctx.begin().await?;
        let rows = tx
            .orphans(
                v.vault.id,
                &folder,
                v.readable(),
                input.require_no_outgoing.unwrap_or(false),
                &v.wiki_generated_paths(),
                after.as_deref(),
                limit as i64 + 1,
            )
            .await?;
        tx.commit().await?;
        let more = rows.len() > limit;
        let (orphans, next_cursor) =
            page(ctx.tool, rows.into_iter().take(limit).collect(), more, PAGE_BUDGET_BYTES, |p: &String| p.clone());
        Ok(Output { vault: v.vault.name.clone(), orphans, next_cursor })
    }
}
