use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::{CallContext, Tool};

pub struct GitLog;

/// How many change-log records one call reads at most (newest first).
const WINDOW: i64 = 5_000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// 1 to 200 (default 20).
    #[serde(default)]
    pub limit: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// Newest first: each is one write of the vault (a tool call, a sync commit, a restore).
    pub commits: Vec<Commit>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Commit {
    /// The commit's id in the change log.
    pub id: String,
    /// Its last change-log sequence: git_diff's to.
    pub seq: i64,
    pub at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// What it changed: create, update, delete, rename; paths you cannot read are left out.
    pub changes: Vec<Change>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Change {
    pub op: String,
    pub path: String,
}

impl Tool for GitLog {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:git"],
        response_format: Format::Fixed { why: "fixed log fields" },
        core: false,
        ..ToolSpec::base(
            "git_log",
            "Vault history",
            "The vault's history, newest first: each write as a commit with time, author, tool and changed \
             paths.",
            Domain::Git,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let limit = otc_kernel::reading::bounded(input.limit, 20, 1..=200, "limit")?;
        let mut tx = ctx.begin().await?;
        let head = tx.head_seq(view.vault.id).await?;
        let lines = tx.changes_under(view.vault.id, "", (head - WINDOW).max(0), WINDOW).await?;
        tx.commit().await?;
        let mut commits: Vec<Commit> = Vec::new();
        for line in lines.into_iter().filter(|l| view.can_read(&l.path)) {
            let id = line.commit_id.to_string();
            match commits.last_mut() {
                Some(last) if last.id == id => {
                    last.seq = line.seq;
                    last.changes.push(Change { op: line.op, path: line.path });
                }
                _ => commits.push(Commit {
                    id,
                    seq: line.seq,
                    at: line.committed_at.to_rfc3339(),
                    author: line.principal,
                    tool: line.tool,
                    client: line.client_name,
                    changes: vec![Change { op: line.op, path: line.path }],
                }),
            }
        }
        commits.reverse();
        commits.truncate(limit);
        Ok(Output { vault: view.vault.name.clone(), commits })
    }
}
