use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::tools::structured::tables::{self, TableWritten, Target};
use otc_kernel::{CallContext, Tool};

pub struct FormatTable;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// 0-based, in file order.
    #[serde(default)]
    pub table_index: Option<usize>,
    /// The content_hash you read; refused if the file changed.
    #[serde(default)]
    pub prev_hash: Option<String>,
}

impl Tool for FormatTable {
    type Input = Input;
    type Output = TableWritten;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:notes"],
        scope_class: ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: counts and the hash" },
        core: false,
        ..ToolSpec::base(
            "format_table",
            "Align a Markdown table",
            "Pads a Markdown table's cells so its pipes line up, keeping each column's alignment.",
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
        tables::edit_table(ctx, target, otc_edit::table::format_table).await
    }
}
