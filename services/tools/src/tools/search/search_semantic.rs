use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::format::{ResponseFormat, Verbosity};
use crate::tools::search::search_vault::semantic_unavailable;
use crate::{CallContext, Tool};

/// Vector search. Until an embedding provider is configured it answers
/// embedding_provider_error saying what to set; the input is the one the embedding work serves.
pub struct SearchSemantic;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct Input {
    pub vault: String,
    /// What to find, in your own words.
    pub query: String,
    /// Results, 1 to 100 (default 10).
    #[serde(default)]
    pub k: Option<u32>,
    /// Only notes under this folder.
    #[serde(default)]
    pub root: Option<String>,
    /// Leave out results scoring below this (0 to 1).
    #[serde(default)]
    pub min_score: Option<f32>,
    /// Include each chunk's text.
    #[serde(default)]
    pub return_content: bool,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub hits: Vec<Hit>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Hit {
    pub path: String,
    pub score: f32,
}

impl Tool for SearchSemantic {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Takes,
        essentials: true,
        ..ToolSpec::base(
            "search_semantic",
            "Search by meaning",
            "Vector similarity search over note chunks. Needs an embedding provider (embeddings.provider); without \
             one it answers embedding_provider_error and search_vault is the way to search.",
            Domain::Search,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        // The vault first: a vault the caller cannot reach answers vault_not_found, as for
        // every other tool, whatever the embedding configuration.
        crate::reading::View::open(ctx, Self::SPEC.name, &input.vault).await?;
        Err(semantic_unavailable("mode"))
    }
}
