use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::reading::View;
use otc_kernel::{CallContext, Tool};

pub struct ListVaults;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vaults: Vec<Row>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Row {
    pub name: String,
    pub id: String,
    /// Notes you can read (per the vault's folder ACL).
    pub notes: i64,
    /// The vault's latest change (its sequence number).
    pub head_seq: i64,
}

impl Tool for ListVaults {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:vault"],
        essentials: true,
        response_format: Format::Fixed { why: "one minimal row per entry" },
        ..ToolSpec::base(
            "list_vaults",
            "List vaults",
            "Lists the vaults you can reach, with their size.",
            Domain::Vault,
        )
    };

    async fn call(ctx: &CallContext<'_>, _input: Input) -> Result<Output, ToolError> {
        let mut tx = ctx.begin().await?;
        let all = tx.list_vaults().await?;
        tx.commit().await?;
        let mut vaults = Vec::new();
        for vault in all {
            if ctx.caller.vault_id.is_some_and(|bound| bound != vault.id) {
                continue;
            }
            // Counted through the caller's folder ACL, like every read.
            let view = View::open(ctx, &vault.name).await?;
            let mut tx = ctx.begin().await?;
            let notes = tx.note_count(vault.id, view.readable()).await?;
            let head_seq = tx.head_seq(vault.id).await?;
            tx.commit().await?;
            vaults.push(Row { name: vault.name, id: vault.id.to_string(), notes, head_seq });
        }
        Ok(Output { vaults })
    }
}
