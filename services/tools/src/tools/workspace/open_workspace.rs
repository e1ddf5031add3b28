use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tools::workspace::settings::{self, WORKSPACES};
use otc_kernel::reading::View;
use otc_kernel::{CallContext, Tool};

pub struct OpenWorkspace;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub name: String,
    /// list_workspaces' content_hash: refused if the workspaces changed since.
    #[serde(default)]
    pub prev_hash: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub name: String,
    /// The saved layout: what the person's Obsidian opens with this workspace active.
    pub layout: Map<String, Value>,
    pub content_hash: String,
}

impl Tool for OpenWorkspace {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:workspaces"],
        scope_class: ScopeClass::Write,
        response_format: Format::Fixed { why: "the layout itself and the hash" },
        core: false,
        ..ToolSpec::base(
            "open_workspace",
            "Make a workspace active",
            "Marks a saved workspace active (the layout Obsidian opens with) and returns its layout.",
            Domain::Workspace,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = View::open(ctx, &input.vault).await?;
        let name = input.name.trim().to_string();
        let edited = settings::change(ctx, &view, WORKSPACES, input.prev_hash.as_deref(), |mut object| {
            let layout =
                object.get("workspaces").and_then(|w| w.get(&name)).and_then(Value::as_object).cloned().ok_or_else(
                    || {
                        ToolError::with_message(ErrorCode::NotFound, "no workspace of that name is saved")
                            .detail("field", "name")
                    },
                )?;
            object.insert("active".into(), Value::String(name.clone()));
            Ok((object, layout))
        })
        .await?;
        Ok(Output {
            vault: view.vault.name.clone(),
            name,
            layout: edited.extra,
            content_hash: hex::encode(edited.content_hash),
        })
    }
}
