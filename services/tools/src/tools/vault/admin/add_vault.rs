//! add_vault: makes a vault in the caller's tenant (the hosted form of registering one): empty,
//! reachable by name at once, filled by writing notes or syncing a folder into it.

use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::StoreError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::{CallContext, Tool};

pub struct AddVault;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Letters, digits, spaces, dots, dashes and underscores, up to 100.
    pub name: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub id: String,
    pub created_at: String,
}

impl Tool for AddVault {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["admin:vault"],
        scope_class: ScopeClass::Admin,
        core: false,
        response_format: Format::Fixed { why: "an acknowledgement: the vault's name, id and time" },
        ..ToolSpec::base(
            "add_vault",
            "Add a vault",
            "Creates a new, empty vault in your organisation, usable by name at once.",
            Domain::Vault,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        super::tenant_wide(ctx)?;
        let services = ctx.services();
        services.read_only.check_write(&services.store, ctx.caller.tenant_id, None).await?;
        let made = otc_kernel::lifecycle::create_vault(&services.store, ctx.caller.tenant_id, &input.name)
            .await
            .map_err(|e| match e {
                StoreError::Conflict { .. } => ToolError::with_message(
                    ErrorCode::Conflict,
                    "a vault (live, or deleted and not erased yet) has this name: pick another",
                )
                .echo("name", &input.name),
                StoreError::Invalid { .. } => ToolError::with_message(
                    ErrorCode::InvalidInput,
                    "a vault name is 1 to 100 letters, digits, spaces, dots, dashes and underscores, starting with \
                     a letter or digit",
                )
                .detail("field", "name"),
                StoreError::Quota(q) => otc_kernel::quota_exceeded(&q),
                other => other.into(),
            })?;
        Ok(Output { vault: made.name, id: made.id.to_string(), created_at: made.created_at.to_rfc3339() })
    }
}
