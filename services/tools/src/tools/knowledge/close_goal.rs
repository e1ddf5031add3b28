//! close_goal: a goal done, or abandoned.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::StoreError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::list_goals::GoalOut;
use crate::tools::knowledge::memory;
use otc_kernel::{CallContext, Tool, internal};

pub struct CloseGoal;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Done,
    Abandoned,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub id: String,
    pub status: Status,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    #[serde(flatten)]
    pub goal: GoalOut,
}

impl Tool for CloseGoal {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:workspace"],
        scope_class: otc_catalog::ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: the goal's new state" },
        ..ToolSpec::base(
            "close_goal",
            "Close a goal",
            "Closes an open goal as done or abandoned (conflict if already closed).",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let id = memory::entity_id(&input.id, "id")?;
        let status = match input.status {
            Status::Done => "done",
            Status::Abandoned => "abandoned",
        };
        let store_err = |e: StoreError| internal(ctx.tool, &e);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        let closed = tx.close_goal(view.vault.id, id, status).await.map_err(store_err)?;
        tx.commit().await.map_err(store_err)?;
        match closed {
            None => {
                Err(ToolError::with_message(ErrorCode::NotFound, "no such goal in this vault")
                    .detail("id", id.to_string()))
            }
            Some((false, goal)) => {
                Err(ToolError::with_message(ErrorCode::Conflict, format!("the goal is {} already", goal.status))
                    .detail("status", goal.status))
            }
            Some((true, goal)) => Ok(Output { vault: view.vault.name.clone(), goal: GoalOut::of(&goal) }),
        }
    }
}
