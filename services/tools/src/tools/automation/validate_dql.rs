use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use otc_formats::dql;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::search::dataview;
use otc_kernel::{CallContext, Tool};

pub struct ValidateDql;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub dql: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub valid: bool,
    /// list, table or task, when valid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The fields the query reads, when valid.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
    /// What is wrong, where (1-based line and column), when not valid.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<Problem>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Problem {
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u64>,
}

impl Tool for ValidateDql {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:dataview"],
        response_format: Format::Fixed { why: "validity and errors are the payload" },
        core: false,
        ..ToolSpec::base(
            "validate_dql",
            "Check a Dataview query",
            "Checks a Dataview query without running it: syntax errors with line and column, and constructs search_dql \
             cannot run.",
            Domain::Automation,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        ctx.view(&input.vault).await?;
        Ok(match dql::parse(&input.dql) {
            Ok(query) => Output {
                valid: true,
                kind: Some(otc_kernel::format::variant_name(query.kind)),
                fields: query.fields_used().into_iter().collect(),
                errors: Vec::new(),
            },
            Err(err) => {
                let (message, line, column) = dataview::problem(&err);
                Output { valid: false, kind: None, fields: Vec::new(), errors: vec![Problem { message, line, column }] }
            }
        })
    }
}
