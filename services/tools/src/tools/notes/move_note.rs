use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::notes::moving::{self, MoveSpec};
use otc_kernel::reading::{View, not_found};
use otc_kernel::writing;
use otc_kernel::{CallContext, Tool};

pub struct MoveNote;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub from: String,
    pub to: String,
    /// Trashes a note already at `to`; needs confirmation.
    #[serde(default)]
    pub overwrite: Option<bool>,
    /// Default true.
    #[serde(default)]
    pub update_backlinks: Option<bool>,
    #[serde(default)]
    pub prev_hash: Option<String>,
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
    /// Where the replaced note went, when one was replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trashed_dest_to: Option<String>,
    /// The moved note's hash (its own relative links may have been rewritten).
    pub content_hash: String,
    pub backlinks_updated: Updated,
    #[serde(flatten)]
    pub immutable: Option<crate::tools::notes::moving::ImmutableSkipped>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Updated {
    /// Notes whose links were rewritten.
    pub notes: usize,
    pub links: usize,
}

/// The checks a move of one file shares with its bulk and attachment siblings: `from` readable,
/// deletable and present, `to` writable, a new name link-safe, an existing one only with
/// overwrite (and, when `confirm`, a person's confirmation).
#[allow(clippy::too_many_arguments)]
pub async fn check_move(
    ctx: &CallContext<'_>,
    view: &View,
    from: &str,
    to: &str,
    overwrite: bool,
    prev: Option<otc_store::Hash>,
    confirm: bool,
) -> Result<MoveSpec, ToolError> {
    view.readable_path(from).map_err(|e| e.detail("field", "from"))?;
    writing::check_delete(view, from, "from")?;
    writing::check_write(view, to, "to")?;
    if from == to {
        return Err(
            ToolError::with_message(ErrorCode::InvalidInput, "from and to are the same path").detail("field", "to")
        );
    }
    let source = writing::current(ctx, view.vault.id, from).await?.ok_or_else(|| not_found(from))?;
    writing::check_prev(from, prev, Some(&source))?;
    let dest = writing::current(ctx, view.vault.id, to).await?;
    writing::check_destination(ctx, view, to, "to", dest.as_ref(), overwrite, Some(from), confirm).await?;
    Ok(MoveSpec { from: from.to_string(), to: to.to_string(), source, dest })
}

impl Tool for MoveNote {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Bulk),
        scopes: &["write:notes", "delete:notes"],
        scope_class: otc_catalog::ScopeClass::Delete,
        destructive: Sometimes::OnSomeCalls,
        hitl: Sometimes::OnSomeCalls,
        essentials: true,
        response_format: Format::Fixed {
            why: "a write acknowledgement: both paths, the hash and a blast-radius count",
        },
        ..ToolSpec::base(
            "move_note",
            "Move or rename a note",
            "Moves or renames a note and rewrites every link to it (body, embeds, properties), all or nothing: a \
             link it cannot rewrite safely refuses the move.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let prev = writing::parse_prev_hash(input.prev_hash.as_deref())?;
        let spec = check_move(ctx, &view, &input.from, &input.to, input.overwrite.unwrap_or(false), prev, true).await?;
        let plan = moving::run(ctx, &view, std::slice::from_ref(&spec), input.update_backlinks.unwrap_or(true)).await?;
        let notes = plan.rewritten.keys().filter(|p| **p != spec.to).count();
        let links = plan.rewritten.iter().filter(|(p, _)| **p != spec.to).map(|(_, n)| n).sum();
        Ok(Output {
            vault: view.vault.name.clone(),
            from: input.from,
            to: input.to.clone(),
            moved: true,
            overwritten: spec.dest.is_some(),
            trashed_dest_to: plan.trashed.get(&input.to).cloned(),
            content_hash: hex::encode(plan.dest_hash[&input.to]),
            backlinks_updated: Updated { notes, links },
            immutable: plan.immutable_skipped(),
        })
    }
}
