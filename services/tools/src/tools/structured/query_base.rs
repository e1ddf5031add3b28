use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_formats::bases;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tools::search::dataview;
use crate::tools::structured::read_base::check_base_path;
use otc_kernel::reading::{Content, decode_cursor, encode_cursor, page_limit, read_content};
use otc_kernel::{CallContext, Tool};

pub struct QueryBase;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// Default: the first view.
    #[serde(default)]
    pub view: Option<String>,
    /// Replaces the view's filters: an expression or {and|or|not: [...]}; the base's own filters
    /// still apply.
    #[serde(default)]
    #[schemars(schema_with = "otc_kernel::writing::any_json")]
    pub override_filters: Option<Value>,
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// The view that ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view: Option<String>,
    /// Column ids (note.x, file.x, formula.x), in the view's order.
    pub columns: Vec<String>,
    pub rows: Vec<Row>,
    /// Rows that match, before the view's limit and paging.
    pub total: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Row {
    pub path: String,
    /// Column id -> value (absent where it is empty or failed to evaluate).
    pub values: Map<String, Value>,
    /// The group's value, when the view groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "otc_kernel::writing::any_json")]
    pub group: Option<Value>,
}

/// A filter as a base writes it (YAML read as JSON): a string, or one of and/or/not.
fn filter_of(value: &Value) -> Result<bases::Filter, ToolError> {
    let bad = || {
        ToolError::with_message(ErrorCode::InvalidInput, "a filter is an expression or {and|or|not: [filters]}")
            .detail("field", "override_filters")
    };
    match value {
        Value::String(expr) => Ok(bases::Filter::Expr(expr.clone())),
        Value::Object(map) if map.len() == 1 => {
            let (key, list) = map.iter().next().expect("one entry");
            let items = list.as_array().ok_or_else(bad)?.iter().map(filter_of).collect::<Result<Vec<_>, _>>()?;
            match key.as_str() {
                "and" => Ok(bases::Filter::And(items)),
                "or" => Ok(bases::Filter::Or(items)),
                "not" => Ok(bases::Filter::Not(items)),
                _ => Err(bad()),
            }
        }
        _ => Err(bad()),
    }
}

impl Tool for QueryBase {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Scan),
        scopes: &["read:bases"],
        response_format: Format::Fixed { why: "the resolved rows and columns are the payload" },
        core: false,
        ..ToolSpec::base(
            "query_base",
            "Run a base's view",
            "Runs a view of an Obsidian Bases file (.base) over the notes: its rows, filtered, sorted and grouped.",
            Domain::Structured,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        check_base_path(&input.path)?;
        let limit = page_limit(input.limit)?;
        let skip: usize = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?.unwrap_or(0);
        let Content { text, .. } = read_content(ctx, &view, &input.path).await?;
        let base = bases::parse(&text)?;
        let override_filters = input.override_filters.as_ref().map(filter_of).transpose()?;
        // When each note came into being costs a look-up per note: read only for a base that
        // names it.
        let rows = dataview::index_pages(ctx, &view, text.contains("ctime"))
            .await?
            .into_iter()
            .map(|p| bases::Row {
                path: p.path,
                properties: p.fields,
                tags: p.tags,
                links: p.outlinks,
                size: p.size,
                ctime: p.ctime,
                mtime: p.mtime,
            })
            .collect();
        let now = chrono::Utc::now();
        let query = bases::Query {
            view: input.view.as_deref(),
            override_filters: override_filters.as_ref(),
            today: now.date_naive(),
            now,
            limit: None,
        };
        let result = bases::run(&base, rows, &query)?;
        let shown = result.rows.len();
        let rows: Vec<Row> = result
            .rows
            .into_iter()
            .skip(skip)
            .take(limit)
            .map(|r| Row {
                path: r.path,
                values: r.values.into_iter().filter(|(_, v)| !v.is_null()).collect(),
                group: r.group.filter(|g| !g.is_null()),
            })
            .collect();
        let next_cursor = (skip + rows.len() < shown).then(|| encode_cursor(ctx.tool, &(skip + rows.len())));
        Ok(Output {
            vault: view.vault.name.clone(),
            view: result.view,
            columns: result.columns,
            rows,
            total: result.total,
            next_cursor,
        })
    }
}
