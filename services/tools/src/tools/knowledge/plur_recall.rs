//! plur_recall: keyword recall over the external PLUR store.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::{CallContext, Tool, plur};

pub struct PlurRecall;

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
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    /// The store's answer as it came.
    pub results: Map<String, Value>,
}

impl Tool for PlurRecall {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:plur"],
        response_format: Format::Fixed { why: "a proxy of an external payload this server does not own" },
        essentials: true,
        ..ToolSpec::base(
            "plur_recall",
            "Recall PLUR engrams",
            "Keyword (BM25) recall over the external PLUR engram store the server is configured with (plugin_unavailable without one).",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let query = plur::query(&input.query)?;
        let k = crate::reading::bounded(input.k, 10, 1..=100, "k")?;
        let body = json!({"query": query, "k": k, "scope": input.scope});
        let results = plur::forward(ctx, Self::SPEC.name, "/recall", Some(body)).await?;
        Ok(Output { results })
    }
}
