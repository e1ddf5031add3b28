//! Long-running tool calls (the spec's "Long-running tools"). The work runs on the pod that got
//! the call; its state lives in Redis, so get_task_status and cancel_task work from any pod.
//!
//! A call waits up to the configured budget (`tools.task_budget_ms`, 40 s by default). Work
//! that finishes in time answers as if it had run inline; otherwise the call answers with a
//! handle and the work goes on. The runner keeps a heartbeat in the record; a task whose
//! heartbeat stops (its pod died) reads as failed. Only the principal that started a task can
//! see or cancel it: any other id answers not_found.

use std::future::Future;
use std::time::Duration;

use chrono::{DateTime, Utc};
use otc_errors::{ErrorCode, ToolError};
use otc_kv::Kv;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use uuid::Uuid;

use crate::{CallContext, Caller};

/// How long a task's record lives after it is created.
pub const RECORD_TTL: Duration = Duration::from_secs(24 * 3600);
/// How often a running task's heartbeat is written.
const HEARTBEAT: Duration = Duration::from_secs(5);
/// A working task whose heartbeat is older than this has lost its runner.
const STALE_AFTER_SECS: i64 = 60;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatus {
    Working,
    Completed,
    Failed,
    Cancelled,
}

/// A task's record in Redis.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskRecord {
    pub task_id: String,
    pub tool: String,
    pub principal_id: Uuid,
    pub status: TaskStatus,
    pub done: u64,
    pub total: Option<u64>,
    pub result: Option<Value>,
    pub error: Option<Value>,
    pub cancel_requested: bool,
    pub created_at: DateTime<Utc>,
    pub heartbeat_at: DateTime<Utc>,
}

fn key(tenant: Uuid, task_id: &str) -> String {
    format!("task:{tenant}:{task_id}")
}

fn kv_err(e: otc_kv::KvError) -> ToolError {
    tracing::warn!(error = ?e, "task state unavailable");
    ToolError::with_message(ErrorCode::InternalError, "task state is unavailable right now; retry shortly")
}

/// Reads a task the caller owns; anything else is not_found.
pub async fn read(kv: &Kv, caller: &Caller, task_id: &str) -> Result<TaskRecord, ToolError> {
    let missing = || ToolError::with_message(ErrorCode::NotFound, "no such task").detail("task_id", task_id);
    if Uuid::try_parse(task_id).is_err() {
        return Err(missing());
    }
    let text = kv.get_record(&key(caller.tenant_id, task_id)).await.map_err(kv_err)?.ok_or_else(missing)?;
    let mut record: TaskRecord = serde_json::from_str(&text).map_err(|_| missing())?;
    if record.principal_id != caller.principal_id {
        return Err(missing());
    }
    if record.status == TaskStatus::Working && (Utc::now() - record.heartbeat_at).num_seconds() > STALE_AFTER_SECS {
        record.status = TaskStatus::Failed;
        record.error = Some(
            ToolError::with_message(
                ErrorCode::InternalError,
                "the server running this task stopped before it finished; start it again",
            )
            .to_payload(),
        );
    }
    Ok(record)
}

/// Changes a task's record with compare-and-set, so the runner and a cancel never lose each
/// other's writes. Returns the record as written.
pub async fn update(
    kv: &Kv,
    tenant: Uuid,
    task_id: &str,
    change: impl Fn(&mut TaskRecord),
) -> Result<Option<TaskRecord>, otc_kv::KvError> {
    let name = key(tenant, task_id);
    for _ in 0..20 {
        let Some(text) = kv.get_record(&name).await? else { return Ok(None) };
        let Ok(mut record) = serde_json::from_str::<TaskRecord>(&text) else { return Ok(None) };
        change(&mut record);
        let next = serde_json::to_string(&record).expect("a task record serialises");
        if kv.swap_record(&name, &text, &next).await? {
            return Ok(Some(record));
        }
    }
    Ok(None)
}

/// Asks the caller's task to stop (cooperatively: the runner sees the flag) and returns its
/// record; a task that already ended is returned unchanged.
pub async fn cancel(kv: &Kv, caller: &Caller, task_id: &str) -> Result<TaskRecord, ToolError> {
    let record = read(kv, caller, task_id).await?;
    if record.status != TaskStatus::Working {
        return Ok(record);
    }
    let updated = update(kv, caller.tenant_id, task_id, |r| {
        if r.status == TaskStatus::Working {
            r.cancel_requested = true;
        }
    })
    .await
    .map_err(kv_err)?;
    updated.ok_or_else(|| ToolError::with_message(ErrorCode::NotFound, "no such task").detail("task_id", task_id))
}

/// What a runner sees of its task: progress reports and the cancel flag.
#[derive(Clone)]
pub struct TaskHandle {
    kv: Arc<Kv>,
    tenant: Uuid,
    task_id: String,
}

impl TaskHandle {
    pub async fn progress(&self, done: u64, total: Option<u64>) {
        let result = update(&self.kv, self.tenant, &self.task_id, |r| {
            // Reports may land out of order; progress never goes back.
            r.done = r.done.max(done);
            r.total = total;
            r.heartbeat_at = Utc::now();
        })
        .await;
        if let Err(e) = result {
            tracing::warn!(task = %self.task_id, error = ?e, "could not record task progress");
        }
    }

    pub async fn cancel_requested(&self) -> bool {
        match self.kv.get_record(&key(self.tenant, &self.task_id)).await {
            Ok(Some(text)) => serde_json::from_str::<TaskRecord>(&text).is_ok_and(|r| r.cancel_requested),
            _ => false,
        }
    }
}

/// What a long-running call answers: the tool's own result, or a handle to poll.
pub enum Outcome {
    Done(Value),
    Working(Value),
}

/// Runs `work` as a task of `tool` for the caller, waiting up to the budget.
pub async fn run<F, Fut>(ctx: &CallContext<'_>, what: &str, work: F) -> Result<Outcome, ToolError>
where
    F: FnOnce(TaskHandle) -> Fut,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    let tool = ctx.tool;
    let services = ctx.services();
    let kv = services.kv.clone();
    let tenant = ctx.caller.tenant_id;
    let task_id = Uuid::new_v4().to_string();
    let now = Utc::now();
    let record = TaskRecord {
        task_id: task_id.clone(),
        tool: tool.to_string(),
        principal_id: ctx.caller.principal_id,
        status: TaskStatus::Working,
        done: 0,
        total: None,
        result: None,
        error: None,
        cancel_requested: false,
        created_at: now,
        heartbeat_at: now,
    };
    let text = serde_json::to_string(&record).expect("a task record serialises");
    kv.put_record(&key(tenant, &task_id), &text, RECORD_TTL).await.map_err(kv_err)?;

    let handle = TaskHandle { kv: kv.clone(), tenant, task_id: task_id.clone() };
    let fut = work(handle.clone());
    let runner = tokio::spawn(async move {
        let beat = handle.clone();
        let heartbeat = tokio::spawn(async move {
            loop {
                tokio::time::sleep(HEARTBEAT).await;
                let _ = update(&beat.kv, beat.tenant, &beat.task_id, |r| r.heartbeat_at = Utc::now()).await;
            }
        });
        // Stops the heartbeat however the work ends, a panic included, so a dead task reads
        // as failed once its heartbeat is stale.
        struct AbortOnDrop(tokio::task::JoinHandle<()>);
        impl Drop for AbortOnDrop {
            fn drop(&mut self) {
                self.0.abort();
            }
        }
        let guard = AbortOnDrop(heartbeat);
        let outcome = fut.await;
        drop(guard);
        let finished = update(&handle.kv, handle.tenant, &handle.task_id, |r| {
            r.heartbeat_at = Utc::now();
            match &outcome {
                Ok(value) => {
                    r.status = TaskStatus::Completed;
                    r.result = Some(value.clone());
                }
                Err(e) if e.code == ErrorCode::Aborted && r.cancel_requested => r.status = TaskStatus::Cancelled,
                Err(e) => {
                    r.status = TaskStatus::Failed;
                    r.error = Some(e.to_payload());
                }
            }
        })
        .await;
        if let Err(e) = finished {
            tracing::warn!(task = %handle.task_id, error = ?e, "could not record the task's end");
        }
        outcome
    });
    let budget = Duration::from_millis(services.config.tools.task_budget_ms);
    match tokio::time::timeout(budget, runner).await {
        Ok(Ok(Ok(value))) => Ok(Outcome::Done(value)),
        Ok(Ok(Err(e))) => Err(e),
        Ok(Err(join)) => Err(crate::internal(tool, &join)),
        Err(_) => {
            if let Some(sink) = ctx.task {
                sink(&task_id);
            }
            Ok(Outcome::Working(serde_json::json!({
                "status": "working",
                "task_id": task_id,
                "poll_tool": "get_task_status",
                "tool": tool,
                "message": format!(
                    "{what} is still running on the server. Call get_task_status with task_id {task_id} to follow it; \
                     cancel_task stops it."
                ),
            })))
        }
    }
}
