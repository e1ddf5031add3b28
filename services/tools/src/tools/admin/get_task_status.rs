use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use otc_kernel::long_calls::{self, TaskRecord, TaskStatus};
use otc_kernel::{CallContext, Tool};

pub struct GetTaskStatus;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub task_id: String,
}

/// One task's state. Shared by get_task_status and cancel_task.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub task_id: String,
    /// The tool the task runs.
    pub tool: String,
    pub status: TaskStatus,
    pub progress: TaskProgress,
    /// While working: when to ask again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u64>,
    /// Once completed: the tool's own result.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    pub result: Option<Value>,
    /// Once failed: the error, as the tool would have returned it (code, message, retryable,
    /// hint, details).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    pub error: Option<Value>,
    /// A cancel was asked for and the task has not stopped yet.
    pub cancel_requested: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskProgress {
    pub done: u64,
    /// When known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
}

impl From<TaskRecord> for Output {
    fn from(r: TaskRecord) -> Self {
        Output {
            retry_after_seconds: (r.status == TaskStatus::Working).then_some(2),
            task_id: r.task_id,
            tool: r.tool,
            status: r.status,
            progress: TaskProgress { done: r.done, total: r.total },
            result: r.result,
            error: r.error,
            cancel_requested: r.cancel_requested && r.status == TaskStatus::Working,
        }
    }
}

impl Tool for GetTaskStatus {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        essentials: true,
        response_format: Format::Fixed {
            why: "the state, progress and retry hint of one task, with the finished tool's own result",
        },
        ..ToolSpec::base(
            "get_task_status",
            "Task status",
            "Polls a long-running call's task_id: progress, then the tool's result or error. Only the caller \
             that started it can read it.",
            Domain::Admin,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        Ok(long_calls::read(&ctx.services().kv, ctx.caller, &input.task_id).await?.into())
    }
}
