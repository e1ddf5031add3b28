//! work_forget: tombstones one of your episodes.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::work;
use otc_kernel::{CallContext, Tool};

pub struct WorkForget;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub episode_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub episode_id: String,
    /// 1 when this call forgot it, 0 when it was forgotten already.
    pub updated: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forgotten_at: Option<String>,
    /// Retrievals of the episode removed with it.
    pub retrievals_forgotten: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Tool for WorkForget {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:workspace"],
        scope_class: otc_catalog::ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: the episode and what was forgotten" },
        ..ToolSpec::base(
            "work_forget",
            "Forget an episode",
            "Forgets one of your work episodes: its summary, retrievals and trace are gone for every reader; a \
             tombstone records who and when.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let id = crate::tools::knowledge::memory::entity_id(&input.episode_id, "episode_id")?;
        work::settle(ctx).await;
        let store_err = work::store_err(ctx.tool);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(&store_err)?;
        let owner = tx.episode_owner(id).await.map_err(&store_err)?;
        let may = |owner: uuid::Uuid| {
            owner == ctx.caller.principal_id || ctx.caller.scopes.iter().any(|s| s.grants(work::ANY_CALLER_SCOPE))
        };
        let answer = match owner {
            Some((owner, _)) if !may(owner) => None,
            None => None,
            Some((_, true)) => Some(Output {
                episode_id: id.to_string(),
                updated: 0,
                forgotten_at: None,
                retrievals_forgotten: 0,
                reason: Some("already_forgotten".into()),
            }),
            Some((_, false)) => {
                let (at, retrievals) = tx
                    .forget_episode(id, ctx.caller.principal_id)
                    .await
                    .map_err(&store_err)?
                    .unwrap_or((chrono::Utc::now(), 0));
                tracing::info!(tenant = %ctx.caller.tenant_id, principal = %ctx.caller.principal_id, episode = %id,
                    "work episode forgotten");
                Some(Output {
                    episode_id: id.to_string(),
                    updated: 1,
                    forgotten_at: Some(at.to_rfc3339()),
                    retrievals_forgotten: retrievals,
                    reason: None,
                })
            }
        };
        tx.commit().await.map_err(&store_err)?;
        answer.ok_or_else(|| {
            ToolError::with_message(ErrorCode::NotFound, "no such episode of yours")
                .detail("episode_id", id.to_string())
        })
    }
}
