use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::reading::not_found;
use otc_kernel::writing;
use otc_kernel::{CallContext, Tool};

pub struct DeleteNote;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// Skip .trash/; a snapshot is still kept.
    #[serde(default)]
    pub permanent: Option<bool>,
    #[serde(default)]
    pub prev_hash: Option<String>,
    #[serde(default)]
    pub elicit_token: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    pub deleted: bool,
    pub permanent: bool,
    /// Where the note went (absent when permanent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trashed_to: Option<String>,
    /// The hash of the deleted content; restore_note brings it back from list_snapshots.
    pub prev_hash: String,
}

impl Tool for DeleteNote {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["delete:notes"],
        scope_class: otc_catalog::ScopeClass::Delete,
        destructive: Sometimes::Always,
        hitl: Sometimes::Always,
        essentials: true,
        response_format: Format::Fixed { why: "a write acknowledgement: the path, where it was trashed, the hash" },
        ..ToolSpec::base(
            "delete_note",
            "Delete a note",
            "Moves a note to the vault's .trash/ folder, keeping a snapshot for restore_note.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let path = input.path.clone();
        writing::check_delete(&view, &path, "path")?;
        let prev = writing::parse_prev_hash(input.prev_hash.as_deref())?;
        let permanent = input.permanent.unwrap_or(false);
        let entry = writing::current(ctx, view.vault.id, &path).await?.ok_or_else(|| not_found(&path))?;
        writing::check_prev(&path, prev, Some(&entry))?;
        writing::confirm(ctx, true, "it deletes the note").await?;
        let (changes, trashed_to) = writing::delete_changes(ctx, &view, &path, &entry, permanent).await?;
        writing::commit(ctx, &view, &changes, None).await?.map_err(|stale| writing::stale_error(&view, &stale))?;
        Ok(Output {
            vault: view.vault.name.clone(),
            path,
            deleted: true,
            permanent,
            trashed_to,
            prev_hash: hex::encode(entry.hash),
        })
    }
}
