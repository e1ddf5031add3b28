use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::{CallContext, Tool, writing};

pub struct ReadSnapshot;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// An id from list_snapshots or snapshot_note.
    pub snapshot_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    pub snapshot_id: String,
    /// update, delete or manual.
    pub op: String,
    /// RFC 3339.
    pub created_at: String,
    pub content_hash: String,
    /// The kept text.
    pub content: String,
}

/// A snapshot id argument; an unknown, malformed or unreadable one answers not_found.
pub fn snapshot_not_found(id: &str) -> ToolError {
    ToolError::with_message(ErrorCode::NotFound, "no snapshot with that id in this vault").detail("snapshot_id", id)
}

impl Tool for ReadSnapshot {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        whole_note_reader: true,
        response_format: Format::Fixed { why: "the stored content is the payload; the rest is four short scalars" },
        ..ToolSpec::base(
            "read_snapshot",
            "Read a snapshot",
            "Returns the content of one snapshot of a note.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let id = uuid::Uuid::try_parse(input.snapshot_id.trim()).map_err(|_| snapshot_not_found(&input.snapshot_id))?;
        let mut tx = ctx.begin().await?;
        let snapshot = tx.snapshot(view.vault.id, id).await?;
        tx.commit().await?;
        let snapshot =
            snapshot.filter(|s| view.can_read(&s.path)).ok_or_else(|| snapshot_not_found(&input.snapshot_id))?;
        let bytes = writing::blob(ctx, &snapshot.hash).await?;
        Ok(Output {
            vault: view.vault.name.clone(),
            path: snapshot.path,
            snapshot_id: snapshot.id.to_string(),
            op: snapshot.op,
            created_at: snapshot.created_at.to_rfc3339(),
            content_hash: hex::encode(snapshot.hash),
            content: String::from_utf8_lossy(&bytes).into_owned(),
        })
    }
}
