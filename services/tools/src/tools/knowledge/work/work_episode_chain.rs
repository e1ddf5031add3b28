//! work_episode_chain: an episode and the calls that retried it, or that it retried.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::work::{self, EpisodeOut};
use otc_kernel::format::{ResponseFormat, Verbosity};
use otc_kernel::{CallContext, Tool};

pub struct WorkEpisodeChain;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub id: String,
    /// Default 20.
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    pub k: Option<u32>,
    /// Needs admin:workspace.
    #[serde(default)]
    pub any_caller: bool,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub id: String,
    /// Oldest first: the first attempt, then each call that retried the one before it.
    pub chain: Vec<EpisodeOut>,
    /// The chain goes on past k.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

impl Tool for WorkEpisodeChain {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:workspace"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "work_episode_chain",
            "Follow an episode's amendments",
            "Returns an episode's amendment chain, oldest first: the failed attempts it retried and the later \
             retries of it.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let principal = work::whose(ctx, input.any_caller)?;
        let detailed = work::detailed(ctx, input.response_format, input.verbosity);
        let k = otc_kernel::reading::bounded(input.k, 20, 1..=100, "k")?;
        let id = crate::tools::knowledge::memory::entity_id(&input.id, "id")?;
        work::settle(ctx).await;
        let store_err = work::store_err(ctx.tool);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(&store_err)?;
        let visible = |e: &otc_store::Episode| principal.is_none_or(|p| p == e.principal_id);
        let not_found =
            || ToolError::with_message(ErrorCode::NotFound, "no such episode of yours").detail("id", id.to_string());
        let start = tx.episode(id).await.map_err(&store_err)?.filter(visible).ok_or_else(not_found)?;
        // Back to the first attempt, then forward along the latest retry of each.
        let mut back = Vec::new();
        let mut at = start.amends;
        while let Some(prev) = at
            && back.len() < k
        {
            match tx.episode(prev).await.map_err(&store_err)? {
                Some(e) if visible(&e) => {
                    at = e.amends;
                    back.push(e);
                }
                _ => break,
            }
        }
        back.reverse();
        let mut chain = back;
        let mut next = Some(start.id);
        chain.push(start);
        let mut truncated = false;
        while let Some(id) = next {
            next = None;
            let retries = tx.amendments_of(id).await.map_err(&store_err)?;
            if let Some(&retry) = retries.last() {
                if chain.len() >= k {
                    truncated = true;
                    break;
                }
                if let Some(e) = tx.episode(retry).await.map_err(&store_err)?.filter(visible) {
                    next = Some(e.id);
                    chain.push(e);
                }
            }
        }
        tx.commit().await.map_err(&store_err)?;
        if chain.len() > k {
            chain.drain(..chain.len() - k);
            truncated = true;
        }
        Ok(Output { id: id.to_string(), chain: work::shape(ctx, chain, detailed).await, truncated })
    }
}
