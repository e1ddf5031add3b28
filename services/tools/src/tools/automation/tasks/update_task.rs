use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_formats::tasks::{self, StatusType, TaskRow};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::automation::tasks::TaskOut;
use crate::tools::workspace::periodic;
use otc_kernel::reading::not_found;
use otc_kernel::writing::{self, Planned};
use otc_kernel::{CallContext, Tool};

pub struct UpdateTask;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// 0-based, as list_tasks gives it.
    pub line: usize,
    /// Dates YYYY-MM-DD, "" removes one. toggle completes (a recurring task gets its next
    /// occurrence) or reopens.
    #[serde(default)]
    pub set: Option<Set>,
    #[serde(default)]
    pub prev_hash: Option<String>,
    #[serde(default)]
    pub elicit_token: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Set {
    #[serde(default)]
    pub toggle: Option<bool>,
    /// One character: " ", "x", "/" or "-".
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// highest, high, medium, none, low or lowest.
    #[serde(default)]
    pub priority: Option<String>,
    #[serde(default)]
    pub due: Option<String>,
    #[serde(default)]
    pub scheduled: Option<String>,
    #[serde(default)]
    pub start: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub before: TaskOut,
    pub after: TaskOut,
    /// The next occurrence of a completed recurring task, written on the line above it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<TaskOut>,
    /// Why a completed recurring task got no next occurrence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recurrence_error: Option<String>,
    pub content_hash: String,
}

fn date_field(value: &Option<String>, field: &str) -> Result<Option<Option<chrono::NaiveDate>>, ToolError> {
    match value.as_deref() {
        None => Ok(None),
        Some("") => Ok(Some(None)),
        Some(day) => Ok(Some(Some(periodic::date_arg(Some(day), field)?))),
    }
}

impl Tool for UpdateTask {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:tasks"],
        scope_class: ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: the task before and after, and the hash" },
        core: false,
        ..ToolSpec::base(
            "update_task",
            "Update a task",
            "Toggles or edits one task line (Tasks plugin format).",
            Domain::Automation,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        view.readable_path(&input.path)?;
        writing::check_write(&view, &input.path, "path")?;
        let prev = writing::parse_prev_hash(input.prev_hash.as_deref())?;
        let set = input.set.unwrap_or_default();
        let priority = crate::tools::automation::tasks::priority_arg(set.priority.as_deref(), "set")?;
        let status = match set.status.as_deref() {
            None => None,
            Some(s) if s.chars().count() == 1 => s.chars().next(),
            Some(_) => {
                return Err(ToolError::with_message(
                    ErrorCode::InvalidInput,
                    "status is one character, e.g. \" \" or \"x\"",
                )
                .detail("field", "set"));
            }
        };
        let (due, scheduled, start) =
            (date_field(&set.due, "set")?, date_field(&set.scheduled, "set")?, date_field(&set.start, "set")?);
        let today = chrono::Utc::now().date_naive();
        let line = input.line;
        let edited = writing::edit_note(ctx, &view, &input.path, prev, None, |now, _| {
            let text = now.ok_or_else(|| not_found(&input.path))?;
            let bad_line = || {
                ToolError::with_message(ErrorCode::InvalidInput, "that line of the note is not a task")
                    .detail("field", "line")
                    .detail("line", line)
            };
            // The line's bytes, its line break kept apart.
            let mut start_at = 0;
            for _ in 0..line {
                start_at += text[start_at..].find('\n').ok_or_else(bad_line)? + 1;
            }
            let end = text[start_at..].find('\n').map_or(text.len(), |n| start_at + n);
            let raw = &text[start_at..end];
            let (body, cr) = match raw.strip_suffix('\r') {
                Some(body) => (body, "\r"),
                None => (raw, ""),
            };
            let before = tasks::parse_line(body).ok_or_else(bad_line)?;
            let mut after = before.clone();
            let mut next = None;
            let mut recurrence_error = None;
            if set.toggle == Some(true) {
                let toggled = tasks::toggle(&before, today);
                after = toggled.updated;
                next = toggled.next;
                recurrence_error = toggled.recurrence_error;
            }
            if let Some(symbol) = status {
                let done_now = StatusType::of(symbol) == StatusType::Done && after.status_type != StatusType::Done;
                after.status = symbol;
                after.status_type = StatusType::of(symbol);
                if done_now {
                    after.done = Some(today);
                } else if after.status_type != StatusType::Done {
                    after.done = None;
                }
            }
            if let Some(description) = &set.description {
                after.description = description.trim().to_string();
            }
            if let Some(p) = priority {
                after.priority = p;
            }
            if let Some(d) = due {
                after.due = d;
            }
            if let Some(d) = scheduled {
                after.scheduled = d;
            }
            if let Some(d) = start {
                after.start = d;
            }
            let nl = if cr.is_empty() { "\n" } else { "\r\n" };
            let mut replaced = String::new();
            if let Some(next) = &next {
                replaced.push_str(&tasks::render_line(next));
                replaced.push_str(nl);
            }
            replaced.push_str(&tasks::render_line(&after));
            replaced.push_str(cr);
            let mut out = String::with_capacity(text.len() + replaced.len());
            out.push_str(&text[..start_at]);
            out.push_str(&replaced);
            out.push_str(&text[end..]);
            let row = |task, at| TaskRow { task, path: input.path.clone(), heading: None, line: at };
            let shift = usize::from(next.is_some());
            let reported = (
                TaskOut::of(&row(before, line)),
                TaskOut::of(&row(after, line + shift)),
                next.map(|n| TaskOut::of(&row(n, line))),
                recurrence_error,
            );
            Ok(Planned { text: out, extra: reported, trash_old: false })
        })
        .await?;
        let (before, after, next, recurrence_error) = edited.extra;
        Ok(Output {
            vault: view.vault.name.clone(),
            before,
            after,
            next,
            recurrence_error,
            content_hash: hex::encode(edited.content_hash),
        })
    }
}
