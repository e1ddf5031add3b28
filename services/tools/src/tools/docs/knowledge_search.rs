//! knowledge_search: graph-expanded hybrid search over the vault's docs corpus.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::retrieval::vault_graph_search::HitOut;
use crate::tools::knowledge::retrieval::{self, Request};
use crate::tools::knowledge::work;
use otc_kernel::format::{ResponseFormat, Verbosity};
use otc_kernel::{CallContext, Tool};

pub struct KnowledgeSearch;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub query: String,
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub final_top_k: Option<u32>,
    /// Documents last changed by then (YYYY-MM-DD or RFC 3339).
    #[serde(default)]
    pub as_of: Option<String>,
    /// Same format.
    #[serde(default)]
    pub since: Option<String>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// The docs folder searched.
    pub corpus: String,
    /// Best first: chunk_id, path, content, rerank_score, vault and age (detailed: the arm,
    /// the hop, the edge and seed of a graph neighbour).
    pub hits: Vec<HitOut>,
    /// Detailed only: hybrid or keyword.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode_used: Option<String>,
}

impl Tool for KnowledgeSearch {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:docs", "read:notes"],
        response_format: Format::Takes,
        essentials: true,
        ..ToolSpec::base(
            "knowledge_search",
            "Search the docs corpus",
            "Hybrid search over the vault's docs folder, expanded one hop along links; best chunks first.",
            Domain::Docs,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let detailed = work::detailed(ctx, input.response_format, input.verbosity);
        let k = otc_kernel::reading::bounded(input.final_top_k, 10, 1..=50, "final_top_k")?;
        let queries = retrieval::variants(&input.query, None)?;
        let view = ctx.view(&input.vault).await?;
        let corpus = super::docs_folder(ctx, &view)?;
        let request = Request {
            queries: queries.clone(),
            k,
            depth: (2 * k).min(20),
            since: crate::tools::knowledge::memory::time_arg(input.since.as_deref(), "since")?,
            as_of: crate::tools::knowledge::memory::time_arg(input.as_of.as_deref(), "as_of")?,
            expand: true,
            root: Some(corpus.clone()),
            ..Request::default()
        };
        let found = retrieval::retrieve(ctx, &view, &request).await?;
        retrieval::note_gap(ctx, &view, &queries[0], &found).await?;
        retrieval::record(&view.vault.name, &found.hits, true);
        let best = found.hits.first().map(|h| h.score).unwrap_or(1.0);
        Ok(Output {
            vault: view.vault.name.clone(),
            corpus,
            hits: found.hits.iter().map(|h| HitOut::of(&view.vault.name, h, best, detailed)).collect(),
            mode_used: detailed.then(|| found.mode_used.to_string()),
        })
    }
}
