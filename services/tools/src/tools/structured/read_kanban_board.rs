use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_edit::kanban;
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::reading::{Content, read_content};
use otc_kernel::{CallContext, Tool};

pub struct ReadKanbanBoard;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    /// The board's lanes (columns), left to right.
    pub lanes: Vec<Lane>,
    /// Archived cards.
    pub archive: Vec<Card>,
    /// The expected hash for your next write (prev_hash).
    pub content_hash: String,
    /// What could not be read as part of the board (text between cards, a broken settings block).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Lane {
    pub title: String,
    /// Cards moved here are checked (the lane has **Complete**).
    pub complete: bool,
    /// The lane's WIP limit, when its title ends in (n).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u32>,
    pub cards: Vec<Card>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Card {
    pub text: String,
    pub checked: bool,
    /// 0-based line in the note.
    pub line: usize,
}

fn card(c: kanban::Card) -> Card {
    Card { text: c.text, checked: c.checked, line: c.line }
}

impl Tool for ReadKanbanBoard {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Fixed {
            why: "the lanes and cards are the payload; content_hash is the next write's token",
        },
        core: false,
        ..ToolSpec::base(
            "read_kanban_board",
            "Read a Kanban board",
            "Reads a Kanban plugin board: its lanes in order with their cards, and the archive.",
            Domain::Structured,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let Content { text, content_hash, .. } = read_content(ctx, &view, &input.path).await?;
        let board = kanban::parse_board(&text)?;
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            lanes: board
                .lanes
                .into_iter()
                .map(|l| Lane {
                    title: l.title,
                    complete: l.complete,
                    max_items: l.max_items,
                    cards: l.cards.into_iter().map(card).collect(),
                })
                .collect(),
            archive: board.archive.into_iter().map(card).collect(),
            content_hash,
            warnings: board.warnings,
        })
    }
}
