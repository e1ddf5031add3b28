use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::reading::not_found;
use otc_kernel::{CallContext, Tool};

pub struct SnapshotNote;

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
    /// Pass to read_snapshot or restore_note.
    pub snapshot_id: String,
    pub content_hash: String,
    /// RFC 3339.
    pub created_at: String,
}

impl Tool for SnapshotNote {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Fixed { why: "the snapshot id and the hash it holds" },
        ..ToolSpec::base(
            "snapshot_note",
            "Snapshot a note",
            "Saves the note's current content as a snapshot (checkpoint) for restore_note; writes already keep what \
             they replace.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        view.readable_path(&input.path)?;
        let mut tx = ctx.begin().await?;
        let entry = tx.file(view.vault.id, &input.path).await?;
        let entry = entry.ok_or_else(|| not_found(&input.path))?;
        let snapshot = tx.add_snapshot(view.vault.id, &entry.path, &entry.hash, entry.size, entry.seq).await?;
        tx.commit().await?;
        Ok(Output {
            vault: view.vault.name.clone(),
            path: entry.path,
            snapshot_id: snapshot.id.to_string(),
            content_hash: hex::encode(snapshot.hash),
            created_at: snapshot.created_at.to_rfc3339(),
        })
    }
}
