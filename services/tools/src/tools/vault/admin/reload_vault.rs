//! reload_vault: the hosted form of re-reading a vault's configuration from disk: every gateway
//! drops what it cached of the vault (manifest rows, link graphs) and this one its lookups and
//! holds, so the next call reads the vault's settings, ACL holds and files afresh.

use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::{CallContext, Tool, caller_vault};

pub struct ReloadVault;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub id: String,
    pub reloaded_at: String,
    /// What was dropped, to be read again on the next call.
    pub dropped: Vec<&'static str>,
}

impl Tool for ReloadVault {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["admin:vault"],
        scope_class: ScopeClass::Admin,
        core: false,
        response_format: Format::Fixed { why: "an acknowledgement: the vault, the time and what was dropped" },
        ..ToolSpec::base(
            "reload_vault",
            "Reload a vault",
            "Makes every server drop its cached state of a vault and read it afresh. Nothing in the vault changes.",
            Domain::Vault,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let vault = caller_vault(ctx, &input.vault).await?;
        let dropped = super::drop_cached(ctx, &vault).await?;
        Ok(Output {
            vault: vault.name,
            id: vault.id.to_string(),
            reloaded_at: chrono::Utc::now().to_rfc3339(),
            dropped,
        })
    }
}
