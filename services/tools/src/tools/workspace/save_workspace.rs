use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, Sometimes, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tools::workspace::settings::{self, WORKSPACES};
use otc_kernel::reading::View;
use otc_kernel::{CallContext, Tool};

pub struct SaveWorkspace;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub name: String,
    /// As Obsidian stores it: {main, left, right, active, ...}.
    pub layout: Map<String, Value>,
    #[serde(default)]
    pub set_active: Option<bool>,
    #[serde(default)]
    pub overwrite: Option<bool>,
    /// list_workspaces' content_hash.
    #[serde(default)]
    pub prev_hash: Option<String>,
    #[serde(default)]
    pub elicit_token: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub name: String,
    /// False when an existing workspace was replaced.
    pub created: bool,
    pub workspaces: usize,
    pub content_hash: String,
}

impl Tool for SaveWorkspace {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:workspaces"],
        scope_class: ScopeClass::Write,
        destructive: Sometimes::OnSomeCalls,
        response_format: Format::Fixed { why: "a write acknowledgement: counts and the hash" },
        core: false,
        ..ToolSpec::base(
            "save_workspace",
            "Save a workspace",
            "Saves a named workspace layout (Obsidian's Workspaces plugin).",
            Domain::Workspace,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = View::open(ctx, &input.vault).await?;
        let name = input.name.trim();
        if name.is_empty() || name.chars().any(char::is_control) {
            return Err(
                ToolError::with_message(ErrorCode::InvalidInput, "a workspace needs a name").detail("field", "name")
            );
        }
        let overwrite = input.overwrite.unwrap_or(false);
        let edited = settings::change(ctx, &view, WORKSPACES, input.prev_hash.as_deref(), |mut object| {
            let mut workspaces = object.get("workspaces").and_then(Value::as_object).cloned().unwrap_or_default();
            let existed = workspaces.contains_key(name);
            if existed && !overwrite {
                return Err(ToolError::with_message(
                    ErrorCode::Conflict,
                    "a workspace of that name is saved; send overwrite: true",
                )
                .detail("field", "name"));
            }
            workspaces.insert(name.to_string(), Value::Object(input.layout.clone()));
            let count = workspaces.len();
            object.insert("workspaces".into(), Value::Object(workspaces));
            if input.set_active == Some(true) || !object.contains_key("active") {
                object.insert("active".into(), Value::String(name.to_string()));
            }
            Ok((object, (!existed, count)))
        })
        .await?;
        let (created, workspaces) = edited.extra;
        Ok(Output {
            vault: view.vault.name.clone(),
            name: name.to_string(),
            created,
            workspaces,
            content_hash: hex::encode(edited.content_hash),
        })
    }
}
