//! list_goals: the vault's goals, newest first.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use otc_store::StoreError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::{CallContext, Tool, internal};

pub struct ListGoals;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    #[default]
    Open,
    Done,
    Abandoned,
    All,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    #[serde(default)]
    pub status: Option<Status>,
    /// Default 50.
    #[serde(default)]
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub goals: Vec<GoalOut>,
}

/// A goal as the tools answer it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GoalOut {
    pub goal_id: String,
    pub text: String,
    /// open, done or abandoned.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_date: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<String>,
}

impl GoalOut {
    pub fn of(g: &otc_store::Goal) -> Self {
        Self {
            goal_id: g.id.to_string(),
            text: g.text.clone(),
            status: g.status.clone(),
            target_date: g.target_date.map(|d| d.to_string()),
            created_at: Some(g.created_at.to_rfc3339()),
            closed_at: g.closed_at.map(|t| t.to_rfc3339()),
        }
    }
}

impl Tool for ListGoals {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "list_goals",
            "List goals",
            "Lists the vault's goals, newest first (open ones by default).",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let limit = otc_kernel::reading::bounded(input.limit, 50, 1..=500, "limit")?;
        let status = match input.status.unwrap_or_default() {
            Status::Open => Some("open"),
            Status::Done => Some("done"),
            Status::Abandoned => Some("abandoned"),
            Status::All => None,
        };
        let store_err = |e: StoreError| internal(ctx.tool, &e);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        let goals = tx.goals(view.vault.id, status, limit as i64).await.map_err(store_err)?;
        tx.commit().await.map_err(store_err)?;
        Ok(Output {
            vault: view.vault.name.clone(),
            goals: goals
                .iter()
                .map(|g| {
                    let mut out = GoalOut::of(g);
                    if !detailed {
                        out.created_at = None;
                    }
                    out
                })
                .collect(),
        })
    }
}
