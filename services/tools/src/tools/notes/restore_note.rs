use otc_catalog::{Domain, ResponseFormat as Format, Sometimes, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::{Action, Change, Expect};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::notes::read_snapshot::snapshot_not_found;
use otc_kernel::{CallContext, Tool, writing};

pub struct RestoreNote;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// One of this note's, from list_snapshots.
    pub snapshot_id: String,
    /// The content_hash you read: refused if the note changed since.
    #[serde(default)]
    pub prev_hash: Option<String>,
    #[serde(default)]
    pub elicit_token: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    pub restored_from: String,
    pub content_hash: String,
    /// True when the note did not exist (a deleted note brought back).
    pub created: bool,
    /// The hash the restore replaced (absent when it created the note); itself kept as a snapshot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prev_hash: Option<String>,
}

impl Tool for RestoreNote {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:notes"],
        scope_class: otc_catalog::ScopeClass::Write,
        destructive: Sometimes::OnSomeCalls,
        hitl: Sometimes::OnSomeCalls,
        response_format: Format::Fixed { why: "a write acknowledgement: the snapshot, the hashes" },
        ..ToolSpec::base(
            "restore_note",
            "Restore a note",
            "Restores a note, deleted or not, to a snapshot; what it replaces is kept as a snapshot too. Replacing \
             current content needs confirmation.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        writing::check_write(&view, &input.path, "path")?;
        let prev = writing::parse_prev_hash(input.prev_hash.as_deref())?;
        let id = uuid::Uuid::try_parse(input.snapshot_id.trim()).map_err(|_| snapshot_not_found(&input.snapshot_id))?;
        let mut tx = ctx.begin().await?;
        let snapshot = tx.snapshot(view.vault.id, id).await?;
        tx.commit().await?;
        let snapshot =
            snapshot.filter(|s| view.can_read(&s.path)).ok_or_else(|| snapshot_not_found(&input.snapshot_id))?;
        if snapshot.path != input.path {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "that snapshot belongs to another note")
                .detail("field", "snapshot_id")
                .detail("snapshot_path", snapshot.path));
        }
        let now = writing::current(ctx, view.vault.id, &input.path).await?;
        writing::check_prev(&input.path, prev, now.as_ref())?;
        if now.is_none() {
            // A deleted note comes back under its old name only if nothing took a name that
            // clashes with it meanwhile (the commit checks again under the vault's lock).
            writing::check_new_name(ctx, &view, &input.path, "path").await?;
        }
        let replaces = now.as_ref().is_some_and(|e| e.size > 0 && e.hash != snapshot.hash);
        writing::confirm(ctx, replaces, "it replaces the note's current content").await?;
        let mut changes =
            vec![writing::put(&input.path, writing::expect_of(now.as_ref()), snapshot.hash, snapshot.size)];
        // A deleted note's copy in the trash goes once the note is back.
        let trashed = format!(".trash/{}", input.path);
        if now.is_none()
            && let Some(copy) = writing::current(ctx, view.vault.id, &trashed).await?
            && copy.hash == snapshot.hash
        {
            changes.push(Change { path: trashed, expect: Expect::Hash(copy.hash), action: Action::Delete });
        }
        writing::commit(ctx, &view, &changes, None).await?.map_err(|stale| writing::stale_error(&view, &stale))?;
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            restored_from: snapshot.id.to_string(),
            content_hash: hex::encode(snapshot.hash),
            created: now.is_none(),
            prev_hash: now.map(|e| hex::encode(e.hash)),
        })
    }
}
