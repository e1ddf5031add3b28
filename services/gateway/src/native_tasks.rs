//! The Tasks extension of MCP 2026-07-28 (`io.modelcontextprotocol/tasks`) over the task
//! records the tools already keep in Redis (`otc_kernel::long_calls`): a long-running call past its
//! budget answers a task to a client that declared the extension, and `tasks/get`,
//! `tasks/update` and `tasks/cancel` read and change the record from any gateway. Only the
//! principal that started a task sees it; any other id is invalid params, as an unknown one is.

use otc_errors::ToolError;
use otc_kernel::long_calls::{self, TaskRecord, TaskStatus};
use otc_kernel::{Caller, Services};
use rmcp::ErrorData;
use rmcp::model::{CreateTaskResult, DetailedTask, GetTaskResult, JsonObject, Task, TaskPayload, TaskStatus as Wire};
use serde_json::Value;

/// How often a client is asked to poll.
const POLL_INTERVAL_MS: u64 = 1000;

fn task(record: &TaskRecord, status: Wire) -> Task {
    let mut task = Task::new(
        record.task_id.clone(),
        status,
        record.created_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        record.heartbeat_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    )
    .with_ttl_ms(long_calls::RECORD_TTL.as_millis() as u64)
    .with_poll_interval_ms(POLL_INTERVAL_MS);
    if record.status == TaskStatus::Working {
        let progress = match record.total {
            Some(total) => format!("{} of {total} done", record.done),
            None => format!("{} done", record.done),
        };
        task = task.with_status_message(format!("{}: {progress}", record.tool));
    }
    task
}

fn object(result: rmcp::model::CallToolResult) -> JsonObject {
    match serde_json::to_value(result) {
        Ok(Value::Object(map)) => map,
        _ => JsonObject::new(),
    }
}

fn refused(err: &ToolError, task_id: &str) -> ErrorData {
    match err.code {
        otc_errors::ErrorCode::NotFound => {
            ErrorData::invalid_params("no such task", Some(serde_json::json!({"taskId": task_id})))
        }
        _ => ErrorData::internal_error(err.message.clone(), None),
    }
}

/// The task a call started, as its answer.
pub async fn created(services: &Services, caller: &Caller, task_id: &str) -> Result<CreateTaskResult, ErrorData> {
    let record = long_calls::read(&services.kv, caller, task_id).await.map_err(|e| refused(&e, task_id))?;
    Ok(CreateTaskResult::new(task(&record, Wire::Working)))
}

/// `tasks/get`.
pub async fn get(services: &Services, caller: &Caller, task_id: &str) -> Result<GetTaskResult, ErrorData> {
    let record = long_calls::read(&services.kv, caller, task_id).await.map_err(|e| refused(&e, task_id))?;
    // A tool's failure is the call's result (isError), as it is when the call answers inline;
    // so is a runner that stopped, which the record reads as failed.
    let (status, payload) = match record.status {
        TaskStatus::Working => (Wire::Working, TaskPayload::Working),
        TaskStatus::Cancelled => (Wire::Cancelled, TaskPayload::Cancelled),
        TaskStatus::Completed => {
            let result = crate::tool_results::success(record.result.clone().unwrap_or(Value::Null));
            (Wire::Completed, TaskPayload::Completed { result: object(result) })
        }
        TaskStatus::Failed => {
            let error = record.error.clone().unwrap_or(Value::Null);
            (Wire::Completed, TaskPayload::Completed { result: object(crate::tool_results::failure_payload(error)) })
        }
    };
    Ok(GetTaskResult::new(DetailedTask::new(task(&record, status), payload)))
}

/// `tasks/cancel`: asks the task to stop; ending tasks and ended ones are acknowledged alike.
pub async fn cancel(services: &Services, caller: &Caller, task_id: &str) -> Result<(), ErrorData> {
    long_calls::cancel(&services.kv, caller, task_id).await.map(|_| ()).map_err(|e| refused(&e, task_id))
}

/// `tasks/update`: no task of ours waits for input, so answers are acknowledged and ignored,
/// for a task the caller owns.
pub async fn update(services: &Services, caller: &Caller, task_id: &str) -> Result<(), ErrorData> {
    long_calls::read(&services.kv, caller, task_id).await.map(|_| ()).map_err(|e| refused(&e, task_id))
}
