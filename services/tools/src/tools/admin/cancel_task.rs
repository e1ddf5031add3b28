use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::tools::admin::get_task_status::Output;
use otc_kernel::long_calls;
use otc_kernel::{CallContext, Tool};

pub struct CancelTask;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub task_id: String,
}

impl Tool for CancelTask {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        essentials: true,
        response_format: Format::Fixed {
            why: "the task's state right after the request, as get_task_status reports it",
        },
        ..ToolSpec::base(
            "cancel_task",
            "Cancel a task",
            "Asks a long-running task to stop; cooperative, so it may still show as working. A finished task is \
             returned unchanged.",
            Domain::Admin,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        Ok(long_calls::cancel(&ctx.services().kv, ctx.caller, &input.task_id).await?.into())
    }
}
