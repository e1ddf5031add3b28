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
    /// Engrams answered (default 10, at most 100).
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    pub k: Option<u32>,
    /// The store's scope (a namespace it defines).
    #[serde(default)]
    pub scope: Option<String>,
    /// The lowest similarity answered, 0 to 1.
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
            "Vector similarity search over the external PLUR engram store's embeddings, at least min_score, with the store the server is configured with (plugin_unavailable without one).",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<plur::Recalled, ToolError> {
        plur::recall(ctx, "/similarity", &input.query, input.k, input.scope, input.min_score.map(|v| ("min_score", v)))
            .await
    }
}
