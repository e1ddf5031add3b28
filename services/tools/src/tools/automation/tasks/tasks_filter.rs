use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use otc_formats::tasks;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::automation::tasks::{self as task_items, TaskOut};
use otc_kernel::reading::{PAGE_BUDGET_BYTES, decode_cursor, encode_cursor, fit, page_limit};
use otc_kernel::{CallContext, Tool};

pub struct TasksFilter;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Tasks plugin query lines, as in a ```tasks block.
    pub filter: String,
    /// Appended as a "group by" line.
    #[serde(default)]
    pub group_by: Option<String>,
    /// Appended as a "sort by" line.
    #[serde(default)]
    pub sort_by: Option<String>,
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// The tasks in display order, each with its group.
    pub tasks: Vec<Grouped>,
    /// Tasks that matched the filters, before the query's limit.
    pub total: usize,
    /// Instructions accepted and not acted on (layout: hide, show, short mode, explain).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// The vault holds more task lines than one call reads (200,000).
    pub truncated: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Grouped {
    /// The group's headings joined with " > " (absent without group by).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(flatten)]
    pub task: TaskOut,
}

impl Tool for TasksFilter {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Scan),
        scopes: &["read:tasks"],
        response_format: Format::Fixed { why: "the matching tasks and their recomputed total are the payload" },
        core: false,
        ..ToolSpec::base(
            "tasks_filter",
            "Query tasks",
            "Runs a Tasks plugin query over the vault's tasks, as a ```tasks block would.",
            Domain::Automation,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let limit = page_limit(input.limit)?;
        let skip: usize = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?.unwrap_or(0);
        let mut text = input.filter.clone();
        for (keyword, value) in [("sort by", &input.sort_by), ("group by", &input.group_by)] {
            if let Some(value) = value {
                text.push_str(&format!("\n{keyword} {}", value.trim()));
            }
        }
        let query = tasks::parse_query(&text)?;
        let (rows, truncated) = task_items::read(ctx, &view, "", None).await?;
        let result = tasks::run_query(&query, rows, chrono::Utc::now().date_naive());
        let grouped = !query.groups.is_empty();
        let all: Vec<Grouped> = result
            .groups
            .iter()
            .flat_map(|g| {
                g.rows.iter().map(move |r| Grouped { group: grouped.then(|| g.name.clone()), task: TaskOut::of(r) })
            })
            .collect();
        let rest: Vec<Grouped> = all.into_iter().skip(skip).collect();
        let more = rest.len() > limit;
        let (tasks, cut) = fit(rest.into_iter().take(limit).collect(), PAGE_BUDGET_BYTES);
        let next_cursor = (more || cut).then(|| encode_cursor(ctx.tool, &(skip + tasks.len())));
        Ok(Output {
            vault: view.vault.name.clone(),
            tasks,
            total: result.total,
            ignored: query.ignored,
            next_cursor,
            truncated,
        })
    }
}
