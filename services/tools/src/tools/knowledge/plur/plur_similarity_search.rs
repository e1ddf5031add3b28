//! plur_similarity_search: vector similarity search over the external PLUR store.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::Deserialize;

use otc_kernel::{CallContext, Tool};

use crate::tools::knowledge::plur;

pub struct PlurSimilaritySearch;

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
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub min_score: Option<f64>,
}

impl Tool for PlurSimilaritySearch {
    type Input = Input;
    type Output = plur::Recalled;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Model),
        scopes: &["read:plur"],
        response_format: Format::Fixed { why: "a proxy of an external payload this server does not own" },
        ..ToolSpec::base(
            "plur_similarity_search",
            "Search PLUR engrams by similarity",
            "Vector similarity search over the configured PLUR engram store's embeddings (plugin_unavailable if none).",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<plur::Recalled, ToolError> {
        plur::recall(ctx, "/similarity", &input.query, input.k, input.scope, input.min_score.map(|v| ("min_score", v)))
            .await
    }
}
