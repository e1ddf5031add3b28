use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::{CallContext, Tool};

pub struct GitStatus;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// Always true: every write is committed when it answers, so nothing is ever staged or
    /// left unsaved.
    pub clean: bool,
    /// The vault's last change-log sequence (git_diff's to).
    pub head: i64,
    /// The last change you can see, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_change: Option<Last>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Last {
    pub seq: i64,
    pub at: String,
    pub op: String,
    pub path: String,
}

impl Tool for GitStatus {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:git"],
        response_format: Format::Fixed { why: "fixed status fields" },
        core: false,
        ..ToolSpec::base(
            "git_status",
            "Vault sync state",
            "The vault's git-style status: always clean (every write is committed), its head seq and last change.",
            Domain::Git,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let mut tx = ctx.begin().await?;
        let head = tx.head_seq(view.vault.id).await?;
        let recent = tx.changes_under(view.vault.id, "", (head - 200).max(0), 200).await?;
        tx.commit().await?;
        let last_change = recent.into_iter().rev().find(|l| view.can_read(&l.path)).map(|l| Last {
            seq: l.seq,
            at: l.committed_at.to_rfc3339(),
            op: l.op,
            path: l.path,
        });
        Ok(Output { vault: view.vault.name.clone(), clean: true, head, last_change })
    }
}
