use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use otc_kernel::{CallContext, Tool};

pub struct DescribeCapability;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    #[schemars(length(min = 1, max = 100))]
    pub name: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub name: String,
    pub title: String,
    pub description: String,
    pub domain: String,
    /// The advertised input schema (pass arguments matching it to call_capability's args).
    pub input_schema: Map<String, Value>,
    /// The advertised output schema, when the output has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Map<String, Value>>,
    pub required_scopes: Vec<String>,
    /// The rate-limit tier calls are charged to.
    pub scope_class: String,
    pub tags: Vec<String>,
    pub annotations: Hints,
    /// never, on_some_calls or always.
    pub destructive: String,
    /// Whether a human must confirm: never, on_some_calls or always.
    pub hitl: String,
    pub takes_response_format: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Hints {
    pub read_only: bool,
    pub destructive: bool,
    pub open_world: bool,
}

fn sometimes(value: Sometimes) -> String {
    match value {
        Sometimes::Never => "never",
        Sometimes::OnSomeCalls => "on_some_calls",
        Sometimes::Always => "always",
    }
    .into()
}

impl Tool for DescribeCapability {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        essentials: true,
        advertise_output_schema: false,
        response_format: Format::Fixed { why: "facade meta-tool: the schema is the payload" },
        ..ToolSpec::base(
            "describe_capability",
            "Describe capability",
            "A tool's schemas, scopes and safety hints.",
            Domain::Admin,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let tool = ctx.dispatcher.resolve(ctx.caller, &input.name).map_err(|e| {
            // A tool the caller could not call is described as absent, never as forbidden.
            if e.code == ErrorCode::Forbidden && e.details.get("reason").is_none() {
                otc_kernel::unknown_tool(&input.name)
            } else {
                e
            }
        })?;
        Ok(Output {
            name: tool.name().to_string(),
            title: tool.spec.title.to_string(),
            description: tool.spec.description.to_string(),
            domain: tool.spec.domain.to_string(),
            input_schema: tool.advertised_input.clone(),
            output_schema: tool.advertised_output.clone(),
            required_scopes: tool.spec.scopes.iter().map(|s| s.to_string()).collect(),
            scope_class: tool.spec.scope_class.as_str().to_string(),
            tags: tool.tags.iter().cloned().collect(),
            annotations: Hints {
                read_only: tool.annotations.read_only,
                destructive: tool.annotations.destructive,
                open_world: tool.annotations.open_world,
            },
            destructive: sometimes(tool.spec.destructive),
            hitl: sometimes(tool.spec.hitl),
            takes_response_format: matches!(tool.spec.response_format, Format::Takes),
        })
    }
}
