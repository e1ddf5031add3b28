//! What the task tools share: the Tasks plugin's task lines read from the index (each line
//! parsed again with `otc_formats::tasks`, so dates, priority and recurrence come from the
//! plugin's own format), and how one is answered.

pub mod list_tasks;
pub mod tasks_filter;
pub mod update_task;

use otc_errors::ToolError;
use otc_formats::tasks::{self, Priority, StatusType, Task, TaskRow};
use schemars::JsonSchema;
use serde::Serialize;

use otc_kernel::CallContext;
use otc_kernel::reading::View;

/// The most task lines one call reads.
pub const MAX_TASKS: i64 = 200_000;

/// A task as the task tools answer it; empty fields are left out.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TaskOut {
    pub path: String,
    /// 0-based line in the note: update_task's line.
    pub line: usize,
    /// The character between the brackets.
    pub status: String,
    /// TODO, IN_PROGRESS, DONE, CANCELLED, ...
    pub status_type: String,
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub due: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduled: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub done: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recurrence: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The heading the task sits under.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heading: Option<String>,
}

fn name_of<T: Serialize>(value: T) -> String {
    otc_kernel::format::variant_name(value)
}

impl TaskOut {
    pub fn of(row: &TaskRow) -> Self {
        let t = &row.task;
        let day = |d: Option<chrono::NaiveDate>| d.map(|d| d.to_string());
        TaskOut {
            path: row.path.clone(),
            line: row.line,
            status: t.status.to_string(),
            status_type: name_of(t.status_type),
            description: t.description.clone(),
            priority: (t.priority != Priority::None).then(|| name_of(t.priority)),
            due: day(t.due),
            scheduled: day(t.scheduled),
            start: day(t.start),
            done: day(t.done),
            recurrence: t.recurrence.clone(),
            tags: t.tags.clone(),
            heading: row.heading.clone(),
        }
    }
}

/// The Tasks-plugin tasks of the readable notes under `folder` (or in `paths`), from the
/// index, in path and line order; and whether there were more than [`MAX_TASKS`].
pub async fn read(
    ctx: &CallContext<'_>,
    view: &View,
    folder: &str,
    paths: Option<&[String]>,
) -> Result<(Vec<TaskRow>, bool), ToolError> {
    let mut tx = ctx.begin().await?;
    let lines = tx.task_lines(view.vault.id, folder, paths, view.readable(), MAX_TASKS + 1).await?;
    tx.commit().await?;
    let truncated = lines.len() as i64 > MAX_TASKS;
    let rows = lines
        .into_iter()
        .take(MAX_TASKS as usize)
        .filter_map(|l| {
            let task = tasks::parse_line(&format!("- [{}] {}", l.status, l.text))?;
            let heading = l.heading_path.rsplit(" > ").next().filter(|h| !h.is_empty()).map(str::to_string);
            Some(TaskRow { task, path: l.path, heading, line: usize::try_from(l.line).unwrap_or(0) })
        })
        .collect();
    Ok((rows, truncated))
}

/// A priority argument named `field`: highest, high, medium, none, low or lowest.
pub fn priority_arg(name: Option<&str>, field: &str) -> Result<Option<Priority>, ToolError> {
    name.map(|p| {
        Priority::from_name(p).ok_or_else(|| {
            ToolError::with_message(
                otc_errors::ErrorCode::InvalidInput,
                "priority is highest, high, medium, none, low or lowest",
            )
            .detail("field", field.to_string())
        })
    })
    .transpose()
}

/// Whether `task` is of the status named (todo, in_progress, done, cancelled; open = todo or
/// in progress).
pub fn status_is(task: &Task, wanted: &str) -> bool {
    match wanted {
        "open" => matches!(task.status_type, StatusType::Todo | StatusType::InProgress),
        other => name_of(task.status_type).eq_ignore_ascii_case(other),
    }
}
