use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use otc_formats::dql;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tools::search::dataview;
use otc_kernel::{CallContext, Tool};

pub struct SearchDql;

/// The most rows one answer carries (total counts them all).
const MAX_ROWS: usize = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Shape {
    #[default]
    Rows,
    Markdown,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// LIST, TABLE or TASK; FROM, WHERE, SORT, GROUP BY, FLATTEN, LIMIT.
    pub dql: String,
    /// markdown adds a rendered copy.
    #[serde(default)]
    pub format: Option<Shape>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// list, table or task.
    pub kind: String,
    pub headers: Vec<String>,
    pub rows: Vec<Row>,
    /// Rows (tasks for TASK) the query gave, before this answer's cap of 500 rows.
    pub total: usize,
    /// The notes the rows come from.
    pub note_paths: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub markdown: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Row {
    /// The note (absent for a group row).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// One value per header; "" where Dataview shows nothing (no such field, or an expression
    /// that failed on this row).
    #[schemars(schema_with = "crate::tools::search::dataview::any_value_list")]
    pub values: Vec<Value>,
    /// The group's key after GROUP BY.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "otc_kernel::writing::any_json")]
    pub group: Option<Value>,
    /// TASK: the tasks of this note or group.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<Task>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Task {
    pub text: String,
    pub status: String,
    pub completed: bool,
    pub line: usize,
}

fn markdown(output: &dql::Output) -> String {
    let cell = |v: &Value| match v {
        Value::String(s) => s.replace('|', "\\|"),
        Value::Null => String::new(),
        other => other.to_string().replace('|', "\\|"),
    };
    let mut out = String::new();
    match output.kind {
        dql::QueryType::Table => {
            out.push_str(&format!("| {} |\n", output.headers.join(" | ")));
            out.push_str(&format!("|{}\n", " --- |".repeat(output.headers.len())));
            for row in &output.rows {
                out.push_str(&format!("| {} |\n", row.values.iter().map(cell).collect::<Vec<_>>().join(" | ")));
            }
        }
        dql::QueryType::List => {
            for row in &output.rows {
                out.push_str(&format!("- {}\n", row.values.iter().map(cell).collect::<Vec<_>>().join(": ")));
            }
        }
        dql::QueryType::Task => {
            for row in &output.rows {
                for task in &row.tasks {
                    out.push_str(&format!("- [{}] {}\n", task.status, task.text));
                }
            }
        }
    }
    out
}

impl Tool for SearchDql {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Scan),
        scopes: &["read:notes", "read:dataview"],
        response_format: Format::Fixed { why: "the rows and the note paths are the payload" },
        core: false,
        ..ToolSpec::base(
            "search_dql",
            "Dataview query",
            "Runs a Dataview (DQL) query, inline fields included, without Obsidian.",
            Domain::Search,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let query = dql::parse(&input.dql).map_err(|e| e.detail("field", "dql"))?;
        let pages = dataview::pages(ctx, &view, &query).await?;
        let now = chrono::Utc::now();
        let output = dql::run(&query, &pages, None, now.date_naive(), now)?;
        let rendered = (input.format == Some(Shape::Markdown)).then(|| markdown(&output));
        // Each note once, in row order (FLATTEN and SORT can spread one note's rows apart).
        let mut seen = std::collections::HashSet::new();
        let note_paths: Vec<String> = output
            .rows
            .iter()
            .filter(|r| !r.path.is_empty() && seen.insert(r.path.as_str()))
            .map(|r| r.path.clone())
            .collect();
        let rows = output
            .rows
            .into_iter()
            .take(MAX_ROWS)
            .map(|r| Row {
                path: (!r.path.is_empty()).then_some(r.path),
                values: r
                    .values
                    .into_iter()
                    .map(|v| if v.is_null() { Value::String(String::new()) } else { v })
                    .collect(),
                group: r.group.filter(|g| !g.is_null()),
                tasks: r
                    .tasks
                    .into_iter()
                    .map(|t| Task { text: t.text, status: t.status.to_string(), completed: t.completed, line: t.line })
                    .collect(),
            })
            .collect();
        Ok(Output {
            vault: view.vault.name.clone(),
            kind: otc_kernel::format::variant_name(output.kind),
            headers: output.headers,
            rows,
            total: output.total,
            note_paths,
            markdown: rendered,
        })
    }
}
