use std::collections::{HashMap, HashSet};

use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::links::rewrite_link::LinkChange;
use crate::tools::notes::move_note::check_move;
use crate::tools::notes::moving;
use otc_kernel::writing;
use otc_kernel::{CallContext, Tool};

pub struct BulkMoveNotes;

/// The most moves one call takes.
const MAX_MOVES: usize = 1000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub moves: Vec<MoveArg>,
    #[serde(default)]
    pub update_backlinks: Option<bool>,
    /// Replaced files go to the trash.
    #[serde(default)]
    pub overwrite: Option<bool>,
    /// Default true (preview); false moves.
    #[serde(default)]
    pub dry_run: Option<bool>,
    #[serde(default)]
    pub elicit_token: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveArg {
    pub from: String,
    pub to: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub dry_run: bool,
    pub moves: Vec<MoveRow>,
    /// Notes whose links are (or would be) rewritten, and how many links.
    pub notes_updated: usize,
    pub links_updated: usize,
    /// Dry run: each note's link changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<Vec<NoteLinks>>,
    #[serde(flatten)]
    pub immutable: Option<crate::tools::notes::moving::ImmutableSkipped>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MoveRow {
    pub from: String,
    pub to: String,
    pub overwritten: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trashed_dest_to: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct NoteLinks {
    pub path: String,
    pub links: Vec<LinkChange>,
}

impl Tool for BulkMoveNotes {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Bulk),
        scopes: &["write:notes", "delete:notes", "bulk:notes"],
        scope_class: otc_catalog::ScopeClass::Bulk,
        destructive: Sometimes::OnSomeCalls,
        hitl: Sometimes::Always,
        response_format: Format::Fixed { why: "per move a blast-radius count; the preview is the payload" },
        ..ToolSpec::base(
            "bulk_move_notes",
            "Move many notes",
            "Moves or renames many notes (max 1000) all or nothing, rewriting links to them; previews unless \
             dry_run is false.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        if input.moves.is_empty() || input.moves.len() > MAX_MOVES {
            return Err(ToolError::with_message(
                ErrorCode::InvalidInput,
                format!("moves holds 1 to {MAX_MOVES} moves"),
            )
            .detail("field", "moves"));
        }
        let mut seen = HashSet::new();
        let mut keys = HashMap::new();
        for (i, m) in input.moves.iter().enumerate() {
            if !seen.insert(m.from.as_str()) || !seen.insert(m.to.as_str()) {
                return Err(ToolError::with_message(
                    ErrorCode::InvalidInput,
                    "a path appears in more than one move (as a source or a destination); split chained moves into calls",
                )
                .detail("field", "moves")
                .detail("index", i));
            }
            if let Some(other) = keys.insert(otc_vault::clash_key(&m.to), m.to.as_str()) {
                return Err(ToolError::with_message(
                    ErrorCode::Conflict,
                    "two destinations differ only by letter case or Unicode normalization; macOS and Windows cannot \
                     keep both",
                )
                .detail("field", "moves")
                .detail("index", i)
                .detail("clash", "file")
                .detail("existing", other.to_string()));
            }
        }
        let view = ctx.view(&input.vault).await?;
        let dry = input.dry_run.unwrap_or(true);
        let overwrite = input.overwrite.unwrap_or(false);
        let mut specs = Vec::with_capacity(input.moves.len());
        for (i, m) in input.moves.iter().enumerate() {
            specs.push(
                check_move(ctx, &view, &m.from, &m.to, overwrite, None, false)
                    .await
                    .map_err(|e| e.detail("index", i))?,
            );
        }
        let update = input.update_backlinks.unwrap_or(true);
        let moved: HashSet<&str> = specs.iter().map(|s| s.to.as_str()).collect();
        let plan = if dry {
            moving::plan(ctx, &view, &specs, update).await?
        } else {
            writing::confirm(ctx, true, "it moves many notes").await?;
            moving::run(ctx, &view, &specs, update).await?
        };
        let notes_updated = plan.rewritten.keys().filter(|p| !moved.contains(p.as_str())).count();
        let links_updated = plan.rewritten.iter().filter(|(p, _)| !moved.contains(p.as_str())).map(|(_, n)| n).sum();
        Ok(Output {
            vault: view.vault.name.clone(),
            dry_run: dry,
            immutable: plan.immutable_skipped(),
            moves: specs
                .iter()
                .map(|s| MoveRow {
                    from: s.from.clone(),
                    to: s.to.clone(),
                    overwritten: s.dest.is_some(),
                    trashed_dest_to: plan.trashed.get(&s.to).cloned(),
                })
                .collect(),
            notes_updated,
            links_updated,
            changes: dry.then(|| {
                plan.details
                    .iter()
                    .map(|(path, links)| NoteLinks {
                        path: path.clone(),
                        links: links
                            .iter()
                            .map(|l| LinkChange { line: l.line + 1, before: l.before.clone(), after: l.after.clone() })
                            .collect(),
                    })
                    .collect()
            }),
        })
    }
}
