//! plur_recall_hybrid: keyword plus embedding recall over the external PLUR store.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::Deserialize;

use otc_kernel::{CallContext, Tool};

use crate::tools::knowledge::plur;

pub struct PlurRecallHybrid;

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
    /// Keyword share (default: the store's).
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub bm25_weight: Option<f64>,
}

impl Tool for PlurRecallHybrid {
    type Input = Input;
    type Output = plur::Recalled;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Model),
        scopes: &["read:plur"],
        response_format: Format::Fixed { why: "a proxy of an external payload this server does not own" },
        ..ToolSpec::base(
            "plur_recall_hybrid",
            "Recall PLUR engrams, hybrid",
            "Keyword plus embedding recall over the configured PLUR engram store (plugin_unavailable if none).",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<plur::Recalled, ToolError> {
        plur::recall(
            ctx,
            "/recall/hybrid",
            &input.query,
            input.k,
            input.scope,
            input.bm25_weight.map(|v| ("bm25_weight", v)),
        )
        .await
    }
}
