use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::reading::not_found;
use otc_kernel::{CallContext, Tool, writing};

pub struct DeleteAttachment;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// Skip .trash/ (a snapshot is still kept).
    #[serde(default)]
    pub permanent: Option<bool>,
    #[serde(default)]
    pub elicit_token: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    pub deleted: bool,
    pub permanent: bool,
    /// Where the file went in the trash (absent when nothing went there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trashed_to: Option<String>,
    /// Notes you can read that still link to or embed it (their links are now unresolved).
    pub still_referenced_by: Vec<String>,
}

impl Tool for DeleteAttachment {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["delete:attachments"],
        scope_class: otc_catalog::ScopeClass::Delete,
        destructive: Sometimes::Always,
        hitl: Sometimes::Always,
        core: false,
        response_format: Format::Fixed { why: "a write acknowledgement and the notes still referencing the file" },
        ..ToolSpec::base(
            "delete_attachment",
            "Delete an attachment",
            "Deletes an attachment to .trash/ and lists the notes still embedding or linking it. Needs confirmation.",
            Domain::Attachments,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        writing::check_delete(&view, &input.path, "path")?;
        let entry = writing::current(ctx, view.vault.id, &input.path).await?.ok_or_else(|| not_found(&input.path))?;
        writing::confirm(ctx, true, "it deletes the file").await?;
        // Who links to it, asked before the delete unresolves those links.
        let mut tx = ctx.begin().await?;
        let still = tx.referencing_notes(view.vault.id, &input.path, view.readable(), 100).await?;
        tx.commit().await?;
        let permanent = input.permanent.unwrap_or(false);
        let (changes, trashed_to) = writing::delete_changes(ctx, &view, &input.path, &entry, permanent).await?;
        writing::commit(ctx, &view, &changes, None).await?.map_err(|stale| writing::stale_error(&view, &stale))?;
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            deleted: true,
            permanent,
            trashed_to,
            still_referenced_by: still,
        })
    }
}
