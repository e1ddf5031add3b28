use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_edit::table::Align as EditAlign;
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::tools::structured::tables::{self, TableWritten, Target};
use otc_kernel::{CallContext, Tool};

pub struct InsertTableColumn;

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Align {
    None,
    Left,
    Center,
    Right,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// 0-based, in file order.
    #[serde(default)]
    pub table_index: Option<usize>,
    pub header: String,
    /// Cells, top to bottom; missing ones stay empty.
    #[serde(default)]
    pub values: Option<Vec<String>>,
    /// 0-based (default: last).
    #[serde(default)]
    pub at: Option<usize>,
    #[serde(default)]
    pub align: Option<Align>,
    /// The content_hash you read; refused if the file changed.
    #[serde(default)]
    pub prev_hash: Option<String>,
}

impl Tool for InsertTableColumn {
    type Input = Input;
    type Output = TableWritten;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:notes"],
        scope_class: ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: counts and the hash" },
        core: false,
        ..ToolSpec::base(
            "insert_table_column",
            "Add a column to a Markdown table",
            "Inserts a column (header, cells, alignment) into a Markdown table of a note.",
            Domain::Structured,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<TableWritten, ToolError> {
        let target = Target {
            vault: &input.vault,
            path: &input.path,
            table_index: input.table_index,
            prev_hash: input.prev_hash.as_deref(),
        };
        let align = match input.align.unwrap_or(Align::None) {
            Align::None => EditAlign::None,
            Align::Left => EditAlign::Left,
            Align::Center => EditAlign::Center,
            Align::Right => EditAlign::Right,
        };
        let values = input.values.unwrap_or_default();
        tables::edit_table(ctx, target, |text, index| {
            otc_edit::table::insert_column(text, index, &input.header, &values, input.at, align)
        })
        .await
    }
}
