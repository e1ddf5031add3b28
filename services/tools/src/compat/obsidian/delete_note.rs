//! obsidian_delete_note: deletes one note (into the vault's trash, restorable).

use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Target, call, read, resolve_target};
use otc_kernel::{CallContext, Tool};

pub struct ObsidianDeleteNote;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The vault (filled in when you can reach only one).
    pub vault: String,
    pub target: Target,
    /// When the server asks a person to confirm and your client cannot show the question: the
    /// token they minted for the details the refusal gave.
    #[serde(default)]
    pub elicit_token: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Output {
    pub path: String,
    pub deleted: bool,
    pub previous_size_in_bytes: i64,
    pub current_size_in_bytes: i64,
}

impl Tool for ObsidianDeleteNote {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["delete:notes"],
        scope_class: otc_catalog::ScopeClass::Delete,
        destructive: Sometimes::Always,
        response_format: Format::Fixed { why: super::FIXED },
        ..ToolSpec::base(
            "obsidian_delete_note",
            "Delete an Obsidian note",
            "Deletes one note: it leaves the vault for the vault's trash, from which it can be restored. A person \
             confirms when the server asks for confirmations.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let path = resolve_target(ctx, &input.vault, &input.target).await?;
        let before = read(ctx, &input.vault, &path).await?;
        let mut args = json!({"vault": input.vault, "path": before.path, "prev_hash": before.hash});
        if let Some(token) = input.elicit_token {
            args["elicit_token"] = json!(token);
        }
        call(ctx, "delete_note", args).await?;
        Ok(Output {
            path: before.path.clone(),
            deleted: true,
            previous_size_in_bytes: before.size() as i64,
            current_size_in_bytes: 0,
        })
    }
}
