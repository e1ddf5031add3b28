use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::reading::not_found;
use otc_kernel::writing::{self, Planned};
use otc_kernel::{CallContext, Tool};

pub struct AddKanbanCard;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// Lane title, case-insensitive; a WIP limit "(3)" may be left out.
    pub column: String,
    /// Markdown; may span lines.
    pub text: String,
    #[serde(default)]
    pub checked: Option<bool>,
    #[serde(default)]
    pub prev_hash: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    /// The lane's title as written.
    pub column: String,
    /// The new card's 0-based place in its lane.
    pub position: usize,
    pub content_hash: String,
}

impl Tool for AddKanbanCard {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:notes"],
        scope_class: ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: the card's place and the hash" },
        core: false,
        ..ToolSpec::base(
            "add_kanban_card",
            "Add a Kanban card",
            "Adds a card at the end of a lane of a Kanban plugin board.",
            Domain::Structured,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        view.readable_path(&input.path)?;
        writing::check_write(&view, &input.path, "path")?;
        let prev = writing::parse_prev_hash(input.prev_hash.as_deref())?;
        let checked = input.checked.unwrap_or(false);
        let edited = writing::edit_note(ctx, &view, &input.path, prev, None, |now, _| {
            let text = now.ok_or_else(|| not_found(&input.path))?;
            let edit = otc_edit::kanban::add_card(text, &input.column, &input.text, checked)?;
            Ok(Planned { text: edit.text, extra: (edit.lane, edit.position), trash_old: false })
        })
        .await?;
        let (column, position) = edited.extra;
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            column,
            position,
            content_hash: hex::encode(edited.content_hash),
        })
    }
}
