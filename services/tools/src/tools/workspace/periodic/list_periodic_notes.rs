use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::workspace::periodic::{self, PeriodArg};
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{PAGE_BUDGET_BYTES, decode_cursor, page, page_limit};
use otc_kernel::{CallContext, Tool};

pub struct ListPeriodicNotes;

/// The most files of a period's folder one call reads (a folder of 25 years of daily notes
/// holds about 9,000).
const MAX_SCANNED: usize = 100_000;
/// Rows read from the store at a time.
const BATCH: i64 = 10_000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub period: PeriodArg,
    /// YYYY-MM-DD: periods starting on or after it.
    #[serde(default)]
    pub from: Option<String>,
    /// YYYY-MM-DD: periods starting on or before it.
    #[serde(default)]
    pub to: Option<String>,
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub cursor: Option<String>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// Newest first.
    pub notes: Vec<Entry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// The period's folder holds more files than one call reads (100,000): the oldest are missing.
    pub truncated: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Entry {
    /// The first day of the note's period.
    pub date: String,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtime: Option<String>,
}

impl Tool for ListPeriodicNotes {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:periodic"],
        response_format: Format::Takes,
        core: false,
        ..ToolSpec::base(
            "list_periodic_notes",
            "List periodic notes",
            "Lists the vault's daily, weekly, monthly, quarterly or yearly notes, newest first.",
            Domain::Workspace,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let period = input.period.period();
        let settings = periodic::settings(ctx, &view, period).await?;
        let from = input.from.as_deref().map(|d| periodic::date_arg(Some(d), "from")).transpose()?;
        let to = input.to.as_deref().map(|d| periodic::date_arg(Some(d), "to")).transpose()?;
        if let (Some(from), Some(to)) = (from, to)
            && from > to
        {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "from is after to").detail("field", "from"));
        }
        let limit = page_limit(input.limit)?;
        let after: Option<(chrono::NaiveDate, String)> =
            input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let folder = match settings.folder() {
            "" => String::new(),
            f => format!("{f}/"),
        };
        let md = [".md".to_string()];
        let mut found = Vec::new();
        let mut last: Option<String> = None;
        let mut scanned = 0;
        let mut tx = ctx.begin().await?;
        loop {
            let rows =
                tx.list_files(view.vault.id, &folder, true, Some(&md), view.readable(), last.as_deref(), BATCH).await?;
            let full = rows.len() as i64 == BATCH;
            scanned += rows.len();
            last = rows.last().map(|r| r.path.clone());
            for row in rows {
                let Some(date) = settings.date_of(&row.path) else { continue };
                if from.is_some_and(|f| date < f) || to.is_some_and(|t| date > t) {
                    continue;
                }
                found.push((date, row));
            }
            if !full || scanned >= MAX_SCANNED {
                break;
            }
        }
        tx.commit().await?;
        let truncated = scanned >= MAX_SCANNED;
        // Newest first; the path breaks ties (two names for one day), so the cursor is a total order.
        found.sort_by(|(a, ra), (b, rb)| b.cmp(a).then_with(|| ra.path.cmp(&rb.path)));
        // Past the cursor: an older period, or the same one under a later path.
        let start = match &after {
            Some((date, path)) => {
                found.partition_point(|(d, r)| d > date || (d == date && r.path.as_str() <= path.as_str()))
            }
            None => 0,
        };
        let rest = &found[start..];
        let more = rest.len() > limit;
        let entries: Vec<Entry> = rest
            .iter()
            .take(limit)
            .map(|(date, row)| Entry {
                date: date.to_string(),
                path: row.path.clone(),
                size: detailed.then_some(row.size),
                mtime: detailed.then(|| row.mtime.to_rfc3339()),
            })
            .collect();
        let (notes, next_cursor) =
            page(ctx.tool, entries, more, PAGE_BUDGET_BYTES, |e| (e.date.clone(), e.path.clone()));
        Ok(Output { vault: view.vault.name.clone(), notes, next_cursor, truncated })
    }
}
