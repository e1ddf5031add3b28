use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use otc_formats::dql;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tools::search::dataview;
use otc_kernel::{CallContext, Tool};

pub struct EvalDataviewField;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// A field (status, file.mtime) or expression, e.g. length(file.outlinks).
    pub expression: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub path: String,
    /// The value, as Dataview prints it (dates as ISO text, links as [[path|name]]); absent
    /// when it is null (no such field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "otc_kernel::writing::any_json")]
    pub value: Option<Value>,
}

impl Tool for EvalDataviewField {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Scan),
        scopes: &["read:dataview"],
        response_format: Format::Fixed { why: "one Dataview value" },
        core: false,
        ..ToolSpec::base(
            "eval_dataview_field",
            "Evaluate a Dataview field",
            "Evaluates a Dataview field or expression on one note (frontmatter, inline key:: fields, file.*), as \
             Dataview would.",
            Domain::Automation,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        view.readable_path(&input.path)?;
        // One note: its page, with inline fields and tasks, as a query FROM it would see it.
        let query =
            dql::parse(&format!("TASK FROM \"{}\" WHERE {}", input.path.replace('"', "\\\""), input.expression))
                .or_else(|_| dql::parse(&format!("TASK FROM \"{}\"", input.path.replace('"', "\\\""))))
                .map_err(|e| e.detail("field", "path"))?;
        let pages = dataview::pages(ctx, &view, &query).await?;
        let page = pages
            .into_iter()
            .find(|p| p.path == input.path)
            .ok_or_else(|| otc_kernel::reading::not_found(&input.path))?;
        let now = chrono::Utc::now();
        let value = dql::eval_field(&input.expression, &page, now.date_naive(), now)
            .map_err(|e| e.detail("field", "expression"))?;
        Ok(Output { path: input.path, value: Some(value).filter(|v| !v.is_null()) })
    }
}
