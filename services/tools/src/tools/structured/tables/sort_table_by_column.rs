use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_edit::table::Order as EditOrder;
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::tools::structured::tables::{self, TableWritten, Target};
use otc_kernel::{CallContext, Tool};

pub struct SortTableByColumn;

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    Asc,
    Desc,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// 0-based, in file order.
    #[serde(default)]
    pub table_index: Option<usize>,
    /// Header (case-insensitive) or 0-based position.
    pub column: String,
    /// Default asc.
    #[serde(default)]
    pub order: Option<Order>,
    /// Compare as numbers; non-numbers go last.
    #[serde(default)]
    pub numeric: Option<bool>,
    #[serde(default)]
    pub prev_hash: Option<String>,
}

impl Tool for SortTableByColumn {
    type Input = Input;
    type Output = TableWritten;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:notes"],
        scope_class: ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: counts and the hash" },
        core: false,
        ..ToolSpec::base(
            "sort_table_by_column",
            "Sort a Markdown table",
            "Sorts a Markdown table's rows by one column, as text or as numbers.",
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
        let order = match input.order.unwrap_or(Order::Asc) {
            Order::Asc => EditOrder::Asc,
            Order::Desc => EditOrder::Desc,
        };
        let numeric = input.numeric.unwrap_or(false);
        tables::edit_table(ctx, target, |text, index| {
            otc_edit::table::sort_by_column(text, index, &input.column, order, numeric)
        })
        .await
    }
}
