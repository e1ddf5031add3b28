use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::{CallContext, Tool};

pub struct ListTags;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    #[serde(default)]
    pub folder: Option<String>,
    /// Notes scanned, in path order (default 5000, max 100000).
    #[serde(default)]
    pub max_notes: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub notes_scanned: i64,
    /// Most used first; a tag counts once per note, case-insensitively.
    pub tags: Vec<Row>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Row {
    /// Without #, as first spelled.
    pub name: String,
    /// Notes carrying it.
    pub count: i64,
}

/// A max_notes argument: 1 to 100,000, default 5,000.
pub fn max_notes(value: Option<u32>) -> Result<i64, ToolError> {
    Ok(otc_kernel::reading::bounded(value, 5_000, 1..=100_000, "max_notes")? as i64)
}

impl Tool for ListTags {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Fixed { why: "one { name, count } row per entry: already minimal" },
        ..ToolSpec::base(
            "list_tags",
            "List tags",
            "Lists the vault's tags (inline and frontmatter) with how many notes carry each.",
            Domain::Metadata,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let v = ctx.view(&input.vault).await?;
        let folder = v.folder_prefix(input.folder.as_deref())?;
        let max = max_notes(input.max_notes)?;
        let mut tx = ctx.begin().await?;
        let scanned = tx.notes_in_scope(v.vault.id, &folder, v.readable(), max).await?;
        let rows = tx.tag_counts(v.vault.id, &folder, v.readable(), max).await?;
        tx.commit().await?;
        Ok(Output {
            vault: v.vault.name.clone(),
            notes_scanned: scanned,
            tags: rows.into_iter().map(|(name, count)| Row { name, count }).collect(),
        })
    }
}
