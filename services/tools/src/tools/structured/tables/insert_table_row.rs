use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::tools::structured::tables::{self, TableWritten, Target};
use otc_kernel::{CallContext, Tool};

pub struct InsertTableRow;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// 0-based, in file order.
    #[serde(default)]
    pub table_index: Option<usize>,
    /// Cells, left to right; missing ones stay empty, a | is escaped.
    pub values: Vec<String>,
    /// 0-based data row (default: last).
    #[serde(default)]
    pub at: Option<usize>,
    /// The content_hash you read; refused if the file changed.
    #[serde(default)]
    pub prev_hash: Option<String>,
}

impl Tool for InsertTableRow {
    type Input = Input;
    type Output = TableWritten;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:notes"],
        scope_class: ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: counts and the hash" },
        core: false,
        ..ToolSpec::base(
            "insert_table_row",
            "Add a row to a Markdown table",
            "Inserts a row into a Markdown table of a note.",
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
        tables::edit_table(ctx, target, |text, index| otc_edit::table::insert_row(text, index, &input.values, input.at))
            .await
    }
}
