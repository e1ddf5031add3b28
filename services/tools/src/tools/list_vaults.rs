use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{CallContext, Tool, internal};

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
    /// Notes in the index.
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
        let name = Self::SPEC.name;
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(|e| internal(name, &e))?;
        let mut vaults = Vec::new();
        for vault in tx.list_vaults().await.map_err(|e| internal(name, &e))? {
            if ctx.caller.vault_id.is_some_and(|bound| bound != vault.id) {
                continue;
            }
            let status = tx.index_status(vault.id).await.map_err(|e| internal(name, &e))?;
            vaults.push(Row {
                name: vault.name,
                id: vault.id.to_string(),
                notes: status.notes,
                head_seq: status.head_seq,
            });
        }
        tx.commit().await.map_err(|e| internal(name, &e))?;
        Ok(Output { vaults })
    }
}
