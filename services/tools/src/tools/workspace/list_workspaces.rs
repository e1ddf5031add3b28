use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tools::workspace::settings::{self, WORKSPACES};
use otc_kernel::{CallContext, Tool};

pub struct ListWorkspaces;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// The saved workspaces' names (Obsidian's Workspaces plugin).
    pub workspaces: Vec<String>,
    /// The one marked active.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active: Option<String>,
    /// prev_hash for save_workspace and open_workspace ("" when the vault has none yet).
    pub content_hash: String,
}

impl Tool for ListWorkspaces {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:workspaces"],
        response_format: Format::Fixed { why: "workspace names only" },
        core: false,
        ..ToolSpec::base(
            "list_workspaces",
            "List workspaces",
            "Lists the workspace layouts saved by Obsidian's Workspaces plugin, and the active one.",
            Domain::Workspace,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let (object, content_hash) = settings::read(ctx, &view, WORKSPACES).await?;
        let workspaces = object
            .get("workspaces")
            .and_then(Value::as_object)
            .map(|w| w.keys().cloned().collect())
            .unwrap_or_default();
        let active = object.get("active").and_then(Value::as_str).map(str::to_string);
        Ok(Output { vault: view.vault.name.clone(), workspaces, active, content_hash })
    }
}
