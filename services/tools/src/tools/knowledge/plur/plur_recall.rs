//! plur_recall: keyword recall over the external PLUR store.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::Deserialize;

use otc_kernel::{CallContext, Tool};

use crate::tools::knowledge::plur;

pub struct PlurRecall;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    #[schemars(length(min = 1, max = 2000))]
    pub query: String,
    /// Default 10.
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    pub k: Option<u32>,
    /// Store namespace.
    #[serde(default)]
    pub scope: Option<String>,
}

impl Tool for PlurRecall {
    type Input = Input;
    type Output = plur::Recalled;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:plur"],
        response_format: Format::Fixed { why: "a proxy of an external payload this server does not own" },
        essentials: true,
        ..ToolSpec::base(
            "plur_recall",
            "Recall PLUR engrams",
            "Keyword (BM25) recall over the configured PLUR engram store (plugin_unavailable if none).",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<plur::Recalled, ToolError> {
        plur::recall(ctx, "/recall", &input.query, input.k, input.scope, None).await
    }
}
