use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::page_limit;
use otc_kernel::{CallContext, Tool};

pub struct ListSnapshots;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// A deleted note's path works too.
    pub path: String,
    /// 1 to 1000 (default 100).
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    pub snapshots: Vec<Item>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Item {
    /// Pass to read_snapshot or restore_note.
    pub id: String,
    /// Why it was kept: update (a write replaced it), delete (the note was deleted) or manual
    /// (snapshot_note).
    pub op: String,
    /// RFC 3339.
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
}

impl Tool for ListSnapshots {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "list_snapshots",
            "List a note's snapshots",
            "Lists a note's snapshots, newest first: the versions its writes replaced or a delete removed, and \
             manual ones. restore_note brings one back.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        view.readable_path(&input.path)?;
        let limit = page_limit(input.limit)?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let mut tx = ctx.begin().await?;
        let snapshots = tx.snapshots(view.vault.id, &input.path, limit as i64).await?;
        tx.commit().await?;
        let snapshots = snapshots
            .into_iter()
            .map(|s| Item {
                id: s.id.to_string(),
                op: s.op,
                created_at: s.created_at.to_rfc3339(),
                content_hash: detailed.then(|| hex::encode(s.hash)),
                size: detailed.then_some(s.size),
            })
            .collect();
        Ok(Output { vault: view.vault.name.clone(), path: input.path, snapshots })
    }
}
