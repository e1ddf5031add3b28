use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::metadata::list_tags::max_notes;
use otc_kernel::{CallContext, Tool};

pub struct ListProperties;

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
    /// Most used first.
    pub properties: Vec<Row>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Row {
    pub name: String,
    /// Notes having it.
    pub count: i64,
    /// The JSON types its values take: string, number, boolean, array, object, null.
    pub types: Vec<String>,
}

impl Tool for ListProperties {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Fixed { why: "one { name, count } row per entry: already minimal" },
        ..ToolSpec::base(
            "list_properties",
            "List properties",
            "Lists the vault's frontmatter properties, how many notes have each and their value types.",
            Domain::Metadata,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let v = ctx.view(&input.vault).await?;
        let folder = v.folder_prefix(input.folder.as_deref())?;
        let max = max_notes(input.max_notes)?;
        let mut tx = ctx.begin().await?;
        let scanned = tx.notes_in_scope(v.vault.id, &folder, v.readable(), max).await?;
        let rows = tx.property_counts(v.vault.id, &folder, v.readable(), max).await?;
        tx.commit().await?;
        Ok(Output {
            vault: v.vault.name.clone(),
            notes_scanned: scanned,
            properties: rows.into_iter().map(|(name, count, types)| Row { name, count, types }).collect(),
        })
    }
}
