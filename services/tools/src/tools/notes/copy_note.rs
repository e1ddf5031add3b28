use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::reading::not_found;
use otc_kernel::writing;
use otc_kernel::{CallContext, Tool};

pub struct CopyNote;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub from: String,
    pub to: String,
    #[serde(default)]
    pub overwrite: Option<bool>,
    #[serde(default)]
    pub elicit_token: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub from: String,
    pub to: String,
    pub copied: bool,
    pub overwritten: bool,
    /// Where the replaced note went, when one was replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trashed_dest_to: Option<String>,
    pub content_hash: String,
}

impl Tool for CopyNote {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:notes"],
        scope_class: otc_catalog::ScopeClass::Write,
        destructive: Sometimes::OnSomeCalls,
        hitl: Sometimes::OnSomeCalls,
        response_format: Format::Fixed { why: "a write acknowledgement: both paths and the new hash" },
        ..ToolSpec::base(
            "copy_note",
            "Copy a note",
            "Copies a note to a new path; links to the original stay. overwrite replaces a note at the destination \
             (it goes to the trash; needs confirmation).",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        view.readable_path(&input.from).map_err(|e| e.detail("field", "from"))?;
        writing::check_write(&view, &input.to, "to")?;
        if input.from == input.to {
            return Err(
                ToolError::with_message(ErrorCode::InvalidInput, "from and to are the same path").detail("field", "to")
            );
        }
        let source = writing::current(ctx, view.vault.id, &input.from).await?.ok_or_else(|| not_found(&input.from))?;
        let dest = writing::current(ctx, view.vault.id, &input.to).await?;
        let overwrite = input.overwrite.unwrap_or(false);
        writing::check_destination(ctx, &view, &input.to, "to", dest.as_ref(), overwrite, None, true).await?;
        let mut changes = Vec::new();
        let mut trashed = None;
        if let Some(old) = &dest {
            let trash = writing::trash_change(ctx, &view, &input.to, old).await?;
            trashed = Some(trash.path.clone());
            changes.push(trash);
        }
        changes.insert(0, writing::put(&input.to, writing::expect_of(dest.as_ref()), source.hash, source.size));
        writing::commit(ctx, &view, &changes, None).await?.map_err(|stale| writing::stale_error(&view, &stale))?;
        Ok(Output {
            vault: view.vault.name.clone(),
            from: input.from,
            to: input.to,
            copied: true,
            overwritten: dest.is_some(),
            trashed_dest_to: trashed,
            content_hash: hex::encode(source.hash),
        })
    }
}
