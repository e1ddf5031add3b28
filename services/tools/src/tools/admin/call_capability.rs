use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use otc_kernel::{CallContext, Tool};

pub struct CallCapability;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    #[schemars(length(min = 1, max = 100))]
    pub name: String,
    #[serde(default)]
    pub args: Option<Map<String, Value>>,
}

impl Tool for CallCapability {
    type Input = Input;
    type Output = Value;
    const ADVERTISE_OUTPUT: bool = false;
    const SPEC: ToolSpec = ToolSpec {
        essentials: true,
        response_format: Format::Fixed { why: "facade meta-tool: returns the target tool's own result" },
        ..ToolSpec::base("call_capability", "Call capability", "Runs a tool by name with its args.", Domain::Admin)
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Value, ToolError> {
        if input.name == Self::SPEC.name {
            return Err(ToolError::with_message(
                ErrorCode::InvalidInput,
                "call_capability: name may not be call_capability itself; name the tool to run",
            )
            .detail("field", "name"));
        }
        let had_args = input.args.is_some();
        let result =
            ctx.dispatcher.call(ctx.caller, ctx.surface, ctx.client_name, &input.name, input.args, ctx.hooks()).await;
        result.map_err(|mut err| {
            if err.code == ErrorCode::ValidationError && !had_args {
                err.message.push_str(
                    ". The call carried no \"args\", so the tool received {} (a client may have dropped a key such as \"arguments\")",
                );
            }
            err
        })
    }
}
