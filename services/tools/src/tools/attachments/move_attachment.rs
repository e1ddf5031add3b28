use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::notes::move_note::{Updated, check_move};
use crate::tools::notes::moving;
use otc_kernel::{CallContext, Tool};

pub struct MoveAttachment;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub from: String,
    pub to: String,
    /// Replace a file at `to` (trashed; needs confirmation).
    #[serde(default)]
    pub overwrite: Option<bool>,
    /// Rewrite embeds and links to it. Default true.
    #[serde(default)]
    pub update_references: Option<bool>,
    #[serde(default)]
    pub elicit_token: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub from: String,
    pub to: String,
    pub moved: bool,
    pub overwritten: bool,
    /// Where the file went in the trash (absent when nothing went there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trashed_dest_to: Option<String>,
    pub content_hash: String,
    pub references_updated: Updated,
    #[serde(flatten)]
    pub immutable: Option<crate::tools::notes::moving::ImmutableSkipped>,
}

impl Tool for MoveAttachment {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:attachments", "delete:attachments"],
        scope_class: otc_catalog::ScopeClass::Delete,
        destructive: Sometimes::OnSomeCalls,
        hitl: Sometimes::OnSomeCalls,
        core: false,
        response_format: Format::Fixed { why: "a write acknowledgement: both paths and a blast-radius count" },
        ..ToolSpec::base(
            "move_attachment",
            "Move an attachment",
            "Moves or renames an attachment and rewrites every embed and link to it, all in one atomic write.",
            Domain::Attachments,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let spec = check_move(ctx, &view, &input.from, &input.to, input.overwrite.unwrap_or(false), None, true).await?;
        let plan =
            moving::run(ctx, &view, std::slice::from_ref(&spec), input.update_references.unwrap_or(true)).await?;
        Ok(Output {
            vault: view.vault.name.clone(),
            from: input.from,
            to: input.to.clone(),
            moved: true,
            overwritten: spec.dest.is_some(),
            trashed_dest_to: plan.trashed.get(&input.to).cloned(),
            content_hash: hex::encode(plan.dest_hash[&input.to]),
            references_updated: Updated { notes: plan.rewritten.len(), links: plan.links() },
            immutable: plan.immutable_skipped(),
        })
    }
}
