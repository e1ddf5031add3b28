//! What the Dataview tools share: the pages a DQL query runs over, built from the index (the
//! notes the caller may read, their frontmatter, tags, links, aliases and dates; their task
//! lines when the query needs them) and, when the query reads fields a frontmatter may not
//! hold, the inline `key:: value` fields of the notes its FROM leaves.

use std::collections::BTreeMap;

use otc_errors::{ErrorCode, ToolError};
use otc_formats::dql::{self, Page, Query, TaskItem};
use otc_store::ScanFilter;
use serde_json::{Map, Value};

use otc_kernel::reading::View;
use otc_kernel::{CallContext, graphing, writing};

/// The most notes whose text one query reads for inline fields.
pub const MAX_TEXT_READS: usize = 5_000;

/// What a task row answers by itself in a TASK query (Dataview's task fields, and the Tasks
/// plugin's dates as Dataview maps them).
const TASK_FIELDS: [&str; 18] = [
    "completed",
    "fullyCompleted",
    "checked",
    "status",
    "text",
    "line",
    "lineCount",
    "tags",
    "task",
    "link",
    "section",
    "path",
    "children",
    "due",
    "scheduled",
    "start",
    "completion",
    "created",
];
/// What GROUP BY and FLATTEN bring: the group's key and rows, the row itself, `this`.
const GROUP_FIELDS: [&str; 4] = ["key", "rows", "row", "this"];

/// Every note the caller may read (Excluded files left out), as the index holds it: frontmatter,
/// tags, aliases, links both ways, size, modification time and, when `with_created`, when each
/// came into being (a look-up per note in the change log). Bases read the same.
pub async fn index_pages(ctx: &CallContext<'_>, view: &View, with_created: bool) -> Result<Vec<Page>, ToolError> {
    let graph = graphing::load(ctx, view).await?;
    let filter = ScanFilter { with_meta: true, with_created, ..Default::default() };
    let mut tx = ctx.begin().await?;
    let candidates = tx.scan_candidates(view.vault.id, view.readable(), &filter).await?;
    tx.commit().await?;
    let names = |nodes: &[otc_graph::Node]| nodes.iter().map(|n| graph.graph.name(*n).to_string()).collect::<Vec<_>>();
    let pages: Vec<Page> = candidates
        .into_iter()
        .filter(|c| !graph.excluded.contains(&c.path))
        .map(|c| {
            let fields = c.frontmatter.and_then(|f| f.as_object().cloned()).unwrap_or_default();
            let aliases = match fields.get("aliases") {
                Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_string).collect(),
                Some(Value::String(one)) => vec![one.clone()],
                _ => Vec::new(),
            };
            let node = graph.graph.node(&c.path);
            Page {
                outlinks: node.map(|n| names(graph.graph.outgoing(n))).unwrap_or_default(),
                inlinks: node.map(|n| names(graph.graph.incoming(n))).unwrap_or_default(),
                path: c.path,
                fields,
                tags: c.tags,
                aliases,
                size: c.size,
                ctime: c.created,
                mtime: c.mtime,
                tasks: Vec::new(),
            }
        })
        .collect();
    Ok(pages)
}

/// The pages `query` runs over: [`index_pages`] its FROM keeps, with their task lines when
/// it needs them and their inline fields when it reads fields.
pub async fn pages(ctx: &CallContext<'_>, view: &View, query: &Query) -> Result<Vec<Page>, ToolError> {
    let fields = query.fields_used();
    let created = fields.iter().any(|f| matches!(f.as_str(), "file.ctime" | "file.cday"));
    let mut pages = index_pages(ctx, view, created).await?;
    if let Some(source) = query.source() {
        pages.retain(|p| dql::source_matches(source, p));
    }
    if query.needs_tasks() && !pages.is_empty() {
        // Named paths narrow the read when FROM left few notes; else every task line is read
        // once and matched here (a list of 100k paths costs Postgres more than the lines).
        let paths: Option<Vec<String>> =
            (query.source().is_some() && pages.len() <= 1_000).then(|| pages.iter().map(|p| p.path.clone()).collect());
        let (rows, _) = crate::tools::automation::tasks::read(ctx, view, "", paths.as_deref()).await?;
        let mut by_path: BTreeMap<String, Vec<TaskItem>> = BTreeMap::new();
        for row in rows {
            let t = &row.task;
            let mut fields = Map::new();
            for (key, day) in [
                ("due", t.due),
                ("scheduled", t.scheduled),
                ("start", t.start),
                ("completion", t.done),
                ("created", t.created),
            ] {
                if let Some(day) = day {
                    fields.insert(key.into(), Value::String(day.to_string()));
                }
            }
            by_path.entry(row.path.clone()).or_default().push(TaskItem {
                text: t.description.clone(),
                status: t.status,
                completed: t.is_done(),
                line: row.line,
                fields,
                tags: t.tags.clone(),
            });
        }
        for page in &mut pages {
            page.tasks = by_path.remove(&page.path).unwrap_or_default();
        }
    }
    // Inline fields only when the query reads a field that neither a file.* property nor a
    // task's own fields (TASK queries) answer.
    let implicit = |f: &str| {
        f == "file"
            || f.starts_with("file.")
            || (query.needs_tasks() && TASK_FIELDS.contains(&f.split('.').next().unwrap_or(f)))
            || GROUP_FIELDS.contains(&f.split('.').next().unwrap_or(f))
    };
    let wants_fields = fields.iter().any(|f| !implicit(f));
    if wants_fields {
        if pages.len() > MAX_TEXT_READS {
            return Err(ToolError::with_message(
                ErrorCode::ComputeBudgetExceeded,
                format!(
                    "the query reads fields of {} notes; at most {MAX_TEXT_READS} are read for inline fields: narrow FROM to a folder or tag",
                    pages.len()
                ),
            )
            .detail("notes", pages.len()));
        }
        for page in &mut pages {
            if let Some((_, text)) = writing::current_text(ctx, view.vault.id, &page.path).await? {
                for (key, raw) in dql::inline_fields(&text) {
                    page.fields.entry(key).or_insert_with(|| dql::field_value(&raw));
                }
            }
        }
    }
    Ok(pages)
}

/// The schema of a list of any JSON values (the cells of a result row).
pub fn any_value_list(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let item = otc_kernel::writing::any_json(generator);
    schemars::json_schema!({ "type": "array", "items": item })
}

/// A DQL syntax error as data (line, column, message), for validate_dql.
pub fn problem(err: &ToolError) -> (String, Option<u64>, Option<u64>) {
    let number = |key: &str| err.details.get(key).and_then(Value::as_u64);
    (err.message.clone(), number("line"), number("column"))
}
