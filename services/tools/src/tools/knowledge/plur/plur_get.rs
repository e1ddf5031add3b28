//! plur_get: one engram from the external PLUR store.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use otc_kernel::{CallContext, Tool};

use crate::tools::knowledge::plur;

pub struct PlurGet;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    #[schemars(length(min = 1, max = 200))]
    pub engram_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    /// The engram as the store answered it.
    pub engram: Map<String, Value>,
}

impl Tool for PlurGet {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:plur"],
        response_format: Format::Fixed { why: "a proxy of an external payload this server does not own" },
        ..ToolSpec::base(
            "plur_get",
            "Get a PLUR engram",
            "Fetches one engram by id from the configured PLUR store (plugin_unavailable if none).",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let id = input.engram_id.trim();
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b)) {
            return Err(ToolError::with_message(
                ErrorCode::InvalidInput,
                "engram_id holds letters, digits and - _ . : only",
            )
            .detail("field", "engram_id"));
        }
        let engram = plur::forward(ctx, &format!("/engrams/{id}"), None).await?;
        Ok(Output { engram })
    }
}
