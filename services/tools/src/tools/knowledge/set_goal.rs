//! set_goal: a goal the vault's agents work towards.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::StoreError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::list_goals::GoalOut;
use otc_kernel::{CallContext, Tool, internal};

pub struct SetGoal;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    #[schemars(length(min = 1, max = 2000))]
    pub text: String,
    /// YYYY-MM-DD.
    #[serde(default)]
    pub target_date: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    #[serde(flatten)]
    pub goal: GoalOut,
}

impl Tool for SetGoal {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:workspace"],
        scope_class: otc_catalog::ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: the goal's id and state" },
        ..ToolSpec::base(
            "set_goal",
            "Set a goal",
            "Records a goal for the vault's agents, open until close_goal.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let text = input.text.trim();
        if text.is_empty() {
            return Err(
                ToolError::with_message(ErrorCode::InvalidInput, "text may not be blank").detail("field", "text")
            );
        }
        let target = input
            .target_date
            .as_deref()
            .map(|d| crate::tools::workspace::periodic::date_arg(Some(d), "target_date"))
            .transpose()?;
        let text = otc_kernel::screening::screen(text).text;
        let store_err = |e: StoreError| internal(ctx.tool, &e);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        let goal = tx.set_goal(view.vault.id, &text, target, Some(ctx.caller.principal_id)).await.map_err(store_err)?;
        tx.commit().await.map_err(store_err)?;
        Ok(Output { vault: view.vault.name.clone(), goal: GoalOut::of(&goal) })
    }
}
