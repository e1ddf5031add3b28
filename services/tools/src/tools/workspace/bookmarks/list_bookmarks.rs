use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tools::workspace::bookmarks;
use crate::tools::workspace::settings::{self, BOOKMARKS};
use otc_kernel::{CallContext, Tool};

pub struct ListBookmarks;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// Bookmarks as Obsidian keeps them: {type: file|folder|heading|block|search|url|group,
    /// path, subpath, query, url, title, items (a group's)}; those of notes you cannot read
    /// are left out.
    pub items: Vec<Map<String, Value>>,
    /// The bookmarks file's hash: prev_hash for add_bookmark and remove_bookmark ("" when the
    /// vault has none yet).
    pub content_hash: String,
}

impl Tool for ListBookmarks {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:bookmarks"],
        response_format: Format::Fixed { why: "the item tree and the compare-and-swap hash are the payload" },
        core: false,
        ..ToolSpec::base(
            "list_bookmarks",
            "List bookmarks",
            "Lists the vault's bookmarks (Obsidian's Bookmarks plugin) in their groups.",
            Domain::Workspace,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let (object, content_hash) = settings::read(ctx, &view, BOOKMARKS).await?;
        let items = object.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
        Ok(Output { vault: view.vault.name.clone(), items: bookmarks::filtered(&view, &items), content_hash })
    }
}
