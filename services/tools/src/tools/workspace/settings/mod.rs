//! The vault's own settings files the workspace tools change: `.obsidian/bookmarks.json` and
//! `.obsidian/workspaces.json`. They live under `.obsidian/`, which no tool shows, so they are
//! read and written only here: read by anyone who may use the tool (what they return is filtered
//! by the caller's read ACL), changed only by a caller whose ACL lets it write anywhere, through
//! the one commit path with a compare-and-swap on the file's hash.

use otc_errors::{ErrorCode, ToolError};
use serde_json::{Map, Value};

use otc_kernel::CallContext;
use otc_kernel::reading::View;
use otc_kernel::writing::{self, Edited, Planned};

pub const BOOKMARKS: &str = ".obsidian/bookmarks.json";
pub const WORKSPACES: &str = ".obsidian/workspaces.json";

/// A settings file's JSON object (empty when the file is missing or is not a JSON object) and
/// its hash ("" when missing): the prev_hash of the next change.
pub async fn read(ctx: &CallContext<'_>, view: &View, path: &str) -> Result<(Map<String, Value>, String), ToolError> {
    match writing::current_text(ctx, view.vault.id, path).await? {
        Some((entry, text)) => Ok((parse(&text), hex::encode(entry.hash))),
        None => Ok((Map::new(), String::new())),
    }
}

fn parse(text: &str) -> Map<String, Value> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// Changes a settings file: `edit` gets its object and returns the new one (and what the tool
/// reports); written as Obsidian writes it (two-space JSON). Refused for a caller whose ACL
/// does not let it write everywhere.
pub async fn change<T, F>(
    ctx: &CallContext<'_>,
    view: &View,
    path: &str,
    prev_hash: Option<&str>,
    edit: F,
) -> Result<Edited<T>, ToolError>
where
    F: Fn(Map<String, Value>) -> Result<(Map<String, Value>, T), ToolError>,
{
    if !view.acl().writes_everywhere() {
        return Err(ToolError::with_message(
            ErrorCode::AclDenied,
            "the vault's settings reach every folder: only a caller who may write anywhere in the vault changes them",
        )
        .detail("operation", "write"));
    }
    let prev = writing::parse_prev_hash(prev_hash.filter(|h| !h.is_empty()))?;
    writing::edit_note(ctx, view, path, prev, None, |now, _| {
        let (object, extra) = edit(now.map(parse).unwrap_or_default())?;
        let text = serde_json::to_string_pretty(&Value::Object(object)).expect("JSON values serialize");
        Ok(Planned { text, extra, trash_old: false })
    })
    .await
}
