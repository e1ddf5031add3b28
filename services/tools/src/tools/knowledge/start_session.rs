//! start_session: a work session of one caller in a vault.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::StoreError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use otc_kernel::{CallContext, Tool, internal};

pub struct StartSession;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Agent or client name.
    #[schemars(length(min = 1, max = 200))]
    pub caller: String,
    #[serde(default)]
    pub session_metadata: Option<Map<String, Value>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub session_id: String,
    pub started_at: String,
}

impl Tool for StartSession {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:workspace"],
        scope_class: otc_catalog::ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: the session's id" },
        ..ToolSpec::base(
            "start_session",
            "Start a work session",
            "Starts your work session in the vault; it traces your calls until end_session.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let caller = input.caller.trim();
        if caller.is_empty() {
            return Err(
                ToolError::with_message(ErrorCode::InvalidInput, "caller may not be blank").detail("field", "caller")
            );
        }
        let metadata = Value::Object(input.session_metadata.unwrap_or_default());
        if metadata.to_string().len() > 16 * 1024 {
            return Err(ToolError::with_message(ErrorCode::InvalidInput, "session_metadata is larger than 16 KiB")
                .detail("field", "session_metadata"));
        }
        let store_err = |e: StoreError| internal(ctx.tool, &e);
        let mut tx = ctx.services().store.begin(ctx.caller.tenant_id).await.map_err(store_err)?;
        let session =
            tx.start_session(view.vault.id, ctx.caller.principal_id, caller, &metadata).await.map_err(store_err)?;
        tx.commit().await.map_err(store_err)?;
        Ok(Output {
            vault: view.vault.name.clone(),
            session_id: session.id.to_string(),
            started_at: session.started_at.to_rfc3339(),
        })
    }
}
