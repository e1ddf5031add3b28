//! What the four table tools share: one read-modify-write of a note's table through the commit
//! engine (compare-and-swap on `prev_hash`, the edit redone when another writer got in first),
//! and the acknowledgement they answer with. The edits themselves are `otc_edit::table`'s: every
//! byte outside the table stays as it was.

pub mod format_table;
pub mod insert_table_column;
pub mod insert_table_row;
pub mod sort_table_by_column;

use otc_edit::table::TableEdit;
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::Serialize;

use otc_kernel::CallContext;
use otc_kernel::reading::{View, not_found};
use otc_kernel::writing::{self, Planned};

/// A table tool's acknowledgement.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TableWritten {
    pub vault: String,
    pub path: String,
    pub table_index: usize,
    /// Data rows and columns of the table afterwards.
    pub rows: usize,
    pub columns: usize,
    /// False when the table already read that way (nothing was written).
    pub changed: bool,
    /// The note's hash afterwards: the prev_hash of the next write.
    pub content_hash: String,
}

/// The table arguments every table tool takes.
pub struct Target<'a> {
    pub vault: &'a str,
    pub path: &'a str,
    pub table_index: Option<usize>,
    pub prev_hash: Option<&'a str>,
}

/// Applies `edit` (given the note's text and the table's index) to the note at `target.path`.
pub async fn edit_table<F>(ctx: &CallContext<'_>, target: Target<'_>, edit: F) -> Result<TableWritten, ToolError>
where
    F: Fn(&str, usize) -> Result<TableEdit, ToolError>,
{
    let view = View::open(ctx, target.vault).await?;
    view.readable_path(target.path)?;
    writing::check_write(&view, target.path, "path")?;
    let prev = writing::parse_prev_hash(target.prev_hash)?;
    let index = target.table_index.unwrap_or(0);
    let edited = writing::edit_note(ctx, &view, target.path, prev, None, |now, _| {
        let text = now.ok_or_else(|| not_found(target.path))?;
        let table = edit(text, index)?;
        Ok(Planned { text: table.text, extra: (table.rows, table.columns), trash_old: false })
    })
    .await?;
    let (rows, columns) = edited.extra;
    Ok(TableWritten {
        vault: view.vault.name.clone(),
        path: target.path.to_string(),
        table_index: index,
        rows,
        columns,
        changed: edited.changed,
        content_hash: hex::encode(edited.content_hash),
    })
}
