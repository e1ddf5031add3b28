//! work_episodes: the raw episode log of your work sessions.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::EpisodeFilter;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::work::{self, EpisodeOut};
use otc_kernel::format::{ResponseFormat, Verbosity};
use otc_kernel::reading::{decode_cursor, encode_cursor};
use otc_kernel::{CallContext, Tool};

pub struct WorkEpisodes;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Error,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Error => "error",
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub tool: Option<String>,
    #[serde(default)]
    pub status: Option<Status>,
    /// YYYY-MM-DD or RFC 3339.
    #[serde(default)]
    pub since: Option<String>,
    #[serde(default)]
    pub until: Option<String>,
    /// Include blocked ones (summary withheld).
    #[serde(default)]
    pub include_blocked: bool,
    /// Needs admin:workspace.
    #[serde(default)]
    pub any_caller: bool,
    /// Only episodes work_result has not judged.
    #[serde(default)]
    pub unstamped_debt: bool,
    /// Default 50.
    #[serde(default)]
    #[schemars(range(min = 1, max = 500))]
    pub k: Option<u32>,
    #[serde(default)]
    pub cursor: Option<String>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    /// Newest first.
    pub episodes: Vec<EpisodeOut>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl Tool for WorkEpisodes {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:workspace"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "work_episodes",
            "List work episodes",
            "Lists your work-session episodes (one per call), newest first, with outcome, trust and eligibility.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let principal = work::whose(ctx, input.any_caller)?;
        let detailed = work::detailed(ctx, input.response_format, input.verbosity);
        let limit = otc_kernel::reading::bounded(input.k, 50, 1..=500, "k")?;
        let session = match &input.session_id {
            Some(id) if !input.any_caller => Some(work::own_session(ctx, id).await?),
            Some(id) => Some(crate::tools::knowledge::memory::entity_id(id, "session_id")?),
            None => None,
        };
        let since = crate::tools::knowledge::memory::time_arg(input.since.as_deref(), "since")?;
        let until = crate::tools::knowledge::memory::time_arg(input.until.as_deref(), "until")?;
        if let (Some(since), Some(until)) = (since, until)
            && until < since
        {
            return Err(
                ToolError::with_message(ErrorCode::InvalidInput, "until is before since").detail("field", "until")
            );
        }
        let before: Option<uuid::Uuid> = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?;
        work::settle(ctx).await;
        let filter = EpisodeFilter {
            principal,
            session,
            tool: input.tool,
            status: input.status.map(|s| s.as_str().to_string()),
            since,
            until,
            include_blocked: input.include_blocked,
            unstamped: input.unstamped_debt,
            before,
            limit: limit as i64 + 1,
            ..EpisodeFilter::default()
        };
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(work::store_err(ctx.tool))?;
        let mut episodes = tx.episodes(&filter).await.map_err(work::store_err(ctx.tool))?;
        tx.commit().await.map_err(work::store_err(ctx.tool))?;
        let more = episodes.len() > limit;
        episodes.truncate(limit);
        let next_cursor = more.then(|| episodes.last().map(|e| encode_cursor(ctx.tool, &e.id))).flatten();
        Ok(Output { episodes: work::shape(ctx, episodes, detailed).await, next_cursor })
    }
}
