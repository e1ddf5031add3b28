use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{PAGE_BUDGET_BYTES, decode_cursor, page, page_limit};
use otc_kernel::{CallContext, Tool};

pub struct FindNotesByProperty;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub key: String,
    /// Equal to this, or a list holding it; left out: any value.
    #[serde(default)]
    pub value: Option<Scalar>,
    #[serde(default)]
    pub folder: Option<String>,
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub cursor: Option<String>,
    /// Read key as a dotted path (meta.author).
    #[serde(default)]
    pub nested: Option<bool>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Scalar {
    Text(String),
    Number(f64),
    Flag(bool),
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
    /// Detailed only: the value, as JSON text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

impl Tool for FindNotesByProperty {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        essentials: true,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "find_notes_by_property",
            "Find notes by property",
            "Finds notes that have a frontmatter property, or a given value of it.",
            Domain::Metadata,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let v = ctx.view(&input.vault).await?;
        let folder = v.folder_prefix(input.folder.as_deref())?;
        let limit = page_limit(input.limit)?;
        if input.key.trim().is_empty() {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "key is empty").detail("field", "key"));
        }
        let key_path: Vec<String> = if input.nested.unwrap_or(false) {
            input.key.split('.').map(str::to_string).collect()
        } else {
            vec![input.key.clone()]
        };
        let value = input.value.map(|s| match s {
            Scalar::Text(t) => Value::String(t),
            Scalar::Number(n) => serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number),
            Scalar::Flag(b) => Value::Bool(b),
        });
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let after: Option<String> = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?;
        let mut tx = ctx.begin().await?;
        let rows = tx
            .notes_with_property(
                v.vault.id,
                &key_path,
                value.as_ref(),
                &folder,
                v.readable(),
                after.as_deref(),
                limit as i64 + 1,
            )
            .await?;
        tx.commit().await?;
        let more = rows.len() > limit;
        let items: Vec<Match> = rows
            .into_iter()
            .take(limit)
            .map(|(path, value)| Match { path, value: detailed.then(|| value.to_string()) })
            .collect();
        let (matches, next_cursor) = page(ctx.tool, items, more, PAGE_BUDGET_BYTES, |m| m.path.clone());
        let truncated = next_cursor.is_some();
        Ok(Output { vault: v.vault.name.clone(), matches, truncated, next_cursor })
    }
}
