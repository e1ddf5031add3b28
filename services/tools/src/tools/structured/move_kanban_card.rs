use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::reading::not_found;
use otc_kernel::writing::{self, Planned};
use otc_kernel::{CallContext, Tool};

pub struct MoveKanbanCard;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// Lane title, case-insensitive.
    pub from_column: String,
    pub to_column: String,
    /// The card's text, or a start of it naming one card.
    pub card_text: String,
    /// The content_hash you read; refused if the file changed.
    #[serde(default)]
    pub prev_hash: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    /// The destination lane's title as written.
    pub to_column: String,
    /// The card's 0-based place in that lane.
    pub position: usize,
    /// False when from and to are the same lane (nothing was written).
    pub changed: bool,
    pub content_hash: String,
}

impl Tool for MoveKanbanCard {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:notes"],
        scope_class: ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: the card's place and the hash" },
        core: false,
        ..ToolSpec::base(
            "move_kanban_card",
            "Move a Kanban card",
            "Moves a card to the end of another lane of a Kanban plugin board (checked in a **Complete** lane).",
            Domain::Structured,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        view.readable_path(&input.path)?;
        writing::check_write(&view, &input.path, "path")?;
        let prev = writing::parse_prev_hash(input.prev_hash.as_deref())?;
        let edited = writing::edit_note(ctx, &view, &input.path, prev, None, |now, _| {
            let text = now.ok_or_else(|| not_found(&input.path))?;
            let edit = otc_edit::kanban::move_card(text, &input.from_column, &input.to_column, &input.card_text)
                .map_err(argument_names)?;
            Ok(Planned { text: edit.text, extra: (edit.lane, edit.position), trash_old: false })
        })
        .await?;
        let (to_column, position) = edited.extra;
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            to_column,
            position,
            changed: edited.changed,
            content_hash: hex::encode(edited.content_hash),
        })
    }
}

/// The edit names its lanes from and to; the tool's arguments are from_column and to_column.
fn argument_names(mut err: ToolError) -> ToolError {
    let renamed = match err.details.get("field").and_then(|f| f.as_str()) {
        Some("from") => "from_column",
        Some("to") => "to_column",
        _ => return err,
    };
    err.details.insert("field".into(), renamed.into());
    err
}
