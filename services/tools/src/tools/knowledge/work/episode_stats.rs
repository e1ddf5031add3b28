//! episode_stats: counts over the work-memory episode log, no content.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use otc_store::EpisodeGroup;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::work;
use otc_kernel::{CallContext, Tool};

pub struct EpisodeStats;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    #[default]
    Tool,
    Status,
    ErrorCode,
    Session,
    Day,
    Eligibility,
    Result,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Default: tool.
    #[serde(default)]
    pub group_by: Option<GroupBy>,
    /// YYYY-MM-DD or RFC 3339.
    #[serde(default)]
    pub since: Option<String>,
    #[serde(default)]
    pub until: Option<String>,
    /// Omit buckets with fewer episodes.
    #[serde(default)]
    #[schemars(range(min = 1, max = 1000000))]
    pub min_bucket: Option<u32>,
    /// Default 50.
    #[serde(default)]
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub group_by: GroupByName,
    /// own (your episodes) or tenant (everyone's, with admin:workspace).
    pub scope: String,
    /// Biggest first.
    pub buckets: Vec<Bucket>,
    /// Forgotten episodes in the window (counted, never shown).
    pub forgotten: i64,
}

/// The grouping, echoed.
pub type GroupByName = String;

#[derive(Debug, Serialize, JsonSchema)]
pub struct Bucket {
    pub key: String,
    pub episodes: i64,
    pub errors: i64,
    /// Judgeable calls no verdict has judged yet.
    pub unstamped: i64,
    pub good: i64,
    pub neutral: i64,
    pub bad: i64,
    pub eligible: i64,
    pub held: i64,
    pub blocked: i64,
    pub mean_duration_ms: f64,
}

impl Tool for EpisodeStats {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:workspace"],
        response_format: Format::Fixed { why: "aggregate counts only" },
        ..ToolSpec::base(
            "episode_stats",
            "Count work episodes",
            "Counts your work-memory episodes by group_by (everyone's with admin:workspace): calls, errors, verdicts, \
             quarantine states.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let tenant_wide = ctx.caller.scopes.iter().any(|s| s.grants(work::ANY_CALLER_SCOPE));
        let principal = (!tenant_wide).then_some(ctx.caller.principal_id);
        let group = input.group_by.unwrap_or_default();
        let (store_group, label) = match group {
            GroupBy::Tool => (EpisodeGroup::Tool, "tool"),
            GroupBy::Status => (EpisodeGroup::Status, "status"),
            GroupBy::ErrorCode => (EpisodeGroup::ErrorCode, "error_code"),
            GroupBy::Session => (EpisodeGroup::Session, "session"),
            GroupBy::Day => (EpisodeGroup::Day, "day"),
            GroupBy::Eligibility => (EpisodeGroup::Eligibility, "eligibility"),
            GroupBy::Result => (EpisodeGroup::Result, "result"),
        };
        let min_bucket = input.min_bucket.unwrap_or(1).max(1) as i64;
        let limit = otc_kernel::reading::bounded(input.limit, 50, 1..=500, "limit")?;
        let since = crate::tools::knowledge::memory::time_arg(input.since.as_deref(), "since")?;
        let until = crate::tools::knowledge::memory::time_arg(input.until.as_deref(), "until")?;
        work::settle(ctx).await;
        let store_err = work::store_err(ctx.tool);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(&store_err)?;
        let (buckets, forgotten) = tx
            .episode_stats(principal, store_group, since, until, min_bucket, limit as i64)
            .await
            .map_err(&store_err)?;
        tx.commit().await.map_err(&store_err)?;
        Ok(Output {
            group_by: label.into(),
            scope: if tenant_wide { "tenant" } else { "own" }.into(),
            buckets: buckets
                .into_iter()
                .map(|b| Bucket {
                    key: b.key,
                    episodes: b.episodes,
                    errors: b.errors,
                    unstamped: b.unstamped,
                    good: b.good,
                    neutral: b.neutral,
                    bad: b.bad,
                    eligible: b.eligible,
                    held: b.held,
                    blocked: b.blocked,
                    mean_duration_ms: b.mean_duration_ms,
                })
                .collect(),
            forgotten,
        })
    }
}
