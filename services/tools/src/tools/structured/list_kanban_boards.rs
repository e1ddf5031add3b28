use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::{CallContext, Tool};

pub struct ListKanbanBoards;

/// The most boards one call lists.
const MAX_BOARDS: usize = 1000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    #[serde(default)]
    pub folder: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// Paths of the notes the Kanban plugin shows as boards (kanban-plugin in their frontmatter).
    pub boards: Vec<String>,
    /// More than 1000 boards matched: narrow with folder.
    pub truncated: bool,
}

impl Tool for ListKanbanBoards {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Fixed { why: "one path per board: already minimal" },
        core: false,
        ..ToolSpec::base(
            "list_kanban_boards",
            "List Kanban boards",
            "Lists the Kanban plugin boards: notes with kanban-plugin in their frontmatter.",
            Domain::Structured,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let folder = view.folder_prefix(input.folder.as_deref())?;
        let key = ["kanban-plugin".to_string()];
        let mut tx = ctx.begin().await?;
        let rows = tx
            .notes_with_property(view.vault.id, &key, None, &folder, view.readable(), None, MAX_BOARDS as i64 + 1)
            .await?;
        tx.commit().await?;
        let truncated = rows.len() > MAX_BOARDS;
        let boards = rows.into_iter().take(MAX_BOARDS).map(|(path, _)| path).collect();
        Ok(Output { vault: view.vault.name.clone(), boards, truncated })
    }
}
