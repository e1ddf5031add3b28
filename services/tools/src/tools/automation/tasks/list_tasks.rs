use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::automation::tasks::{self as task_items, TaskOut};
use crate::tools::workspace::periodic;
use otc_kernel::reading::{PAGE_BUDGET_BYTES, decode_cursor, encode_cursor, fit, page_limit};
use otc_kernel::{CallContext, Tool};

pub struct ListTasks;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Todo or in progress.
    Open,
    Todo,
    InProgress,
    Done,
    Cancelled,
    All,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    #[serde(default)]
    pub root: Option<String>,
    #[serde(default)]
    pub status: Option<Status>,
    /// overdue, today, none, any, or YYYY-MM-DD (due on or before).
    #[serde(default)]
    pub due: Option<String>,
    /// highest, high, medium, none, low or lowest.
    #[serde(default)]
    pub priority: Option<String>,
    /// All must match; # optional.
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    #[serde(default)]
    pub paths: Option<Vec<String>>,
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// In path and line order.
    pub tasks: Vec<TaskOut>,
    /// Tasks that match, on every page.
    pub total: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// The vault holds more task lines than one call reads (200,000): narrow with root or paths.
    pub truncated: bool,
}

/// A tag as a task holds it (no #, lowercase) matches `wanted` or a tag nested under it.
fn has_tag(tags: &[String], wanted: &str) -> bool {
    let wanted = wanted.trim_start_matches('#').to_lowercase();
    tags.iter().any(|t| {
        let t = t.to_lowercase();
        t == wanted || t.starts_with(&format!("{wanted}/"))
    })
}

impl Tool for ListTasks {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:tasks"],
        response_format: Format::Fixed { why: "every field is task data; empty optional fields are already left out" },
        core: false,
        ..ToolSpec::base(
            "list_tasks",
            "List tasks",
            "Lists checkbox tasks (Tasks plugin format), with filters.",
            Domain::Automation,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let folder = view.folder_prefix(input.root.as_deref())?;
        let limit = page_limit(input.limit)?;
        let skip: usize = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?.unwrap_or(0);
        if let Some(paths) = &input.paths {
            for path in paths {
                view.readable_path(path).map_err(|e| e.detail("field", "paths"))?;
            }
        }
        let today = chrono::Utc::now().date_naive();
        enum Due {
            Overdue,
            Today,
            None,
            Any,
            By(chrono::NaiveDate),
        }
        let due = match input.due.as_deref() {
            None => None,
            Some("overdue") => Some(Due::Overdue),
            Some("today") => Some(Due::Today),
            Some("none") => Some(Due::None),
            Some("any") => Some(Due::Any),
            Some(day) => Some(Due::By(periodic::date_arg(Some(day), "due")?)),
        };
        let priority = crate::tools::automation::tasks::priority_arg(input.priority.as_deref(), "priority")?;
        let status = input.status.unwrap_or(Status::All);
        let (rows, truncated) = task_items::read(ctx, &view, &folder, input.paths.as_deref()).await?;
        let tags = input.tags.unwrap_or_default();
        let matching: Vec<TaskOut> = rows
            .iter()
            .filter(|r| {
                let t = &r.task;
                let open = task_items::status_is(t, "open");
                let status_ok = match status {
                    Status::All => true,
                    Status::Open => open,
                    Status::Todo => task_items::status_is(t, "todo"),
                    Status::InProgress => task_items::status_is(t, "in_progress"),
                    Status::Done => task_items::status_is(t, "done"),
                    Status::Cancelled => task_items::status_is(t, "cancelled"),
                };
                let due_ok = match &due {
                    None => true,
                    Some(Due::Overdue) => open && t.due.is_some_and(|d| d < today),
                    Some(Due::Today) => t.due == Some(today),
                    Some(Due::None) => t.due.is_none(),
                    Some(Due::Any) => t.due.is_some(),
                    Some(Due::By(day)) => t.due.is_some_and(|d| d <= *day),
                };
                status_ok
                    && due_ok
                    && priority.is_none_or(|p| t.priority == p)
                    && tags.iter().all(|wanted| has_tag(&t.tags, wanted))
            })
            .map(TaskOut::of)
            .collect();
        let total = matching.len();
        let rest: Vec<TaskOut> = matching.into_iter().skip(skip).collect();
        let more = rest.len() > limit;
        let (tasks, cut) = fit(rest.into_iter().take(limit).collect(), PAGE_BUDGET_BYTES);
        let next_cursor = (more || cut).then(|| encode_cursor(ctx.tool, &(skip + tasks.len())));
        Ok(Output { vault: view.vault.name.clone(), tasks, total, next_cursor, truncated })
    }
}
