//! get_session_traces: the calls a session of yours made (or your calls over a window).

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::end_session::{own_session, traces};
use crate::tools::knowledge::memory;
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{decode_cursor, encode_cursor};
use otc_kernel::{CallContext, Tool};

pub struct GetSessionTraces;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// One of your sessions, or give from/to.
    #[serde(default)]
    pub session_id: Option<String>,
    /// YYYY-MM-DD or RFC 3339 (default: session start, else 24 h ago).
    #[serde(default)]
    pub from: Option<String>,
    #[serde(default)]
    pub to: Option<String>,
    #[serde(default)]
    pub tool_filter: Option<Vec<String>>,
    /// Default 100.
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000))]
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
    pub traces: Vec<Trace>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Trace {
    pub at: String,
    pub tool: String,
    /// ok, or the error code the call answered.
    pub outcome: String,
    pub duration_ms: f64,
    /// The paths the call named (those you may still read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// Detailed only: the client and the MCP surface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surface: Option<String>,
}

impl Tool for GetSessionTraces {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:workspace"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "get_session_traces",
            "Read a session's calls",
            "Lists the calls one of your sessions made in the vault (or yours over from..to), newest first: tool, \
             outcome, duration, paths.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let limit = otc_kernel::reading::bounded(input.limit, 100, 1..=1000, "limit")?;
        let before: Option<uuid::Uuid> = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?;
        let session = match &input.session_id {
            Some(id) => Some(own_session(ctx, &view, id).await?),
            None => None,
        };
        let from = memory::time_arg(input.from.as_deref(), "from")?
            .or(session.as_ref().map(|s| s.started_at))
            .unwrap_or_else(|| chrono::Utc::now() - chrono::Duration::hours(24));
        let to = memory::time_arg(input.to.as_deref(), "to")?.or(session.as_ref().and_then(|s| s.ended_at));
        if to.is_some_and(|to| to < from) {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "to is before from").detail("field", "to"));
        }
        let filter = input.tool_filter.unwrap_or_default();
        let mut records = traces(ctx, &view, from, to, before, (limit as i64 + 1).max(1)).await?;
        records.retain(|r| filter.is_empty() || filter.contains(&r.action));
        let more = records.len() > limit;
        records.truncate(limit);
        let next_cursor = more.then(|| records.last().map(|r| encode_cursor(ctx.tool, &r.id))).flatten();
        Ok(Output {
            vault: view.vault.name.clone(),
            traces: records
                .into_iter()
                .map(|r| Trace {
                    at: r.at.to_rfc3339(),
                    tool: r.action,
                    outcome: r.outcome,
                    duration_ms: r.duration_us as f64 / 1000.0,
                    paths: r.paths.into_iter().filter(|p| view.can_read(p)).collect(),
                    client: if detailed { r.client_name } else { None },
                    surface: detailed.then_some(r.surface),
                })
                .collect(),
            next_cursor,
        })
    }
}
