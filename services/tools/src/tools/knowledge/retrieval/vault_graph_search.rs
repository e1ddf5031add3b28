//! vault_graph_search: hybrid retrieval expanded through the wikilink graph.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::retrieval::{self, Failed, Request};
use crate::tools::knowledge::work;
use otc_kernel::format::{ResponseFormat, Verbosity};
use otc_kernel::reading::View;
use otc_kernel::{CallContext, Tool};

pub struct VaultGraphSearch;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Words, "phrases", path:, tag:.
    pub query: String,
    /// Other phrasings.
    #[serde(default)]
    pub queries: Option<Vec<String>>,
    #[serde(default)]
    pub hypothetical_answer: Option<String>,
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub final_top_k: Option<u32>,
    /// More vaults to search.
    #[serde(default)]
    pub vaults: Option<Vec<String>>,
    /// Notes last changed by then (YYYY-MM-DD or RFC 3339).
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
    /// Best first.
    pub hits: Vec<HitOut>,
    /// hybrid (keywords and meaning) or keyword (no embedding provider, or it failed).
    pub mode_used: String,
    /// Query variants or arms that failed, with the error code.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_variants: Vec<Failed>,
    /// Vaults of `vaults` that could not be searched (missing or not yours), with the code.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_vaults: Vec<FailedVault>,
    /// Detailed only: the queries run and the arms used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<Route>,
    /// Detailed only: how many candidates each stage saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<Coverage>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct FailedVault {
    pub vault: String,
    pub reason: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Route {
    pub queries: Vec<String>,
    pub hypothetical_answer: bool,
    pub arms: Vec<String>,
    pub graph_expansion: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Coverage {
    pub candidates: usize,
    pub expanded: usize,
    pub vaults_searched: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct HitOut {
    /// `path#n`: record_retrieval_feedback takes it.
    pub chunk_id: String,
    pub path: String,
    pub content: String,
    /// The fused score, normalised: the best hit 1.
    pub rerank_score: f64,
    pub vault: String,
    /// Days since the note last changed.
    pub changed_since_d: f64,
    /// Detailed only: keyword, semantic, both or graph; the hop (1 for a graph neighbour), the
    /// edge followed and the seed it was reached from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arm: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hop: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edge: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<String>,
}

impl HitOut {
    /// `hit` of `vault`, its score a share of the best hit's (`best`).
    pub fn of(vault: &str, hit: &retrieval::Hit, best: f64, detailed: bool) -> Self {
        Self {
            chunk_id: retrieval::chunk_id(hit),
            changed_since_d: retrieval::changed_since_days(hit),
            rerank_score: (hit.score / best.max(f64::EPSILON) * 1000.0).round() / 1000.0,
            arm: detailed.then(|| hit.arm.to_string()),
            hop: detailed.then_some(hit.hop),
            edge: hit.edge.filter(|_| detailed).map(str::to_string),
            seed: hit.seed.clone().filter(|_| detailed),
            path: hit.path.clone(),
            content: hit.content.clone(),
            vault: vault.to_string(),
        }
    }
}

impl Tool for VaultGraphSearch {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Graph),
        scopes: &["read:notes"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "vault_graph_search",
            "Search, expanded through links",
            "Keyword and (with embeddings) semantic search over note chunks, expanded one hop along wikilinks.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let detailed = work::detailed(ctx, input.response_format, input.verbosity);
        let k = otc_kernel::reading::bounded(input.final_top_k, 10, 1..=50, "final_top_k")?;
        let queries = retrieval::variants(&input.query, input.queries.as_deref())?;
        let request = Request {
            queries: queries.clone(),
            hypothetical: input
                .hypothetical_answer
                .as_deref()
                .map(str::trim)
                .filter(|h| !h.is_empty())
                .map(str::to_string),
            k,
            depth: (2 * k).min(20),
            since: crate::tools::knowledge::memory::time_arg(input.since.as_deref(), "since")?,
            as_of: crate::tools::knowledge::memory::time_arg(input.as_of.as_deref(), "as_of")?,
            expand: true,
            ..Request::default()
        };
        let view = ctx.view(&input.vault).await?;
        let mut searched = vec![view];
        let mut failed_vaults = Vec::new();
        for other in input.vaults.unwrap_or_default() {
            if searched.iter().any(|v| v.vault.name == other) {
                continue;
            }
            match View::open(ctx, &other).await {
                Ok(v) => searched.push(v),
                Err(e) => failed_vaults.push(FailedVault { vault: other, reason: e.code.as_str().into() }),
            }
        }
        let mut hits = Vec::new();
        let mut failed_variants = Vec::new();
        let (mut candidates, mut expanded, mut hybrid) = (0, 0, false);
        for view in &searched {
            let found = retrieval::retrieve(ctx, view, &request).await?;
            retrieval::note_gap(ctx, view, &queries[0], &found).await?;
            candidates += found.candidates;
            expanded += found.expanded;
            hybrid |= found.mode_used == "hybrid";
            failed_variants.extend(found.failed);
            hits.extend(found.hits.into_iter().map(|h| (view.vault.name.clone(), h)));
        }
        hits.sort_by(|a, b| b.1.score.total_cmp(&a.1.score).then_with(|| a.1.path.cmp(&b.1.path)));
        hits.truncate(k);
        for (i, view) in searched.iter().enumerate() {
            let own: Vec<retrieval::Hit> =
                hits.iter().filter(|(v, _)| *v == view.vault.name).map(|(_, h)| h.clone()).collect();
            retrieval::record(&view.vault.name, &own, i == 0);
        }
        let best = hits.first().map(|(_, h)| h.score).unwrap_or(1.0);
        let mut arms = vec!["keyword".to_string()];
        if hybrid {
            arms.push("semantic".into());
        }
        Ok(Output {
            vault: searched[0].vault.name.clone(),
            hits: hits.iter().map(|(vault, h)| HitOut::of(vault, h, best, detailed)).collect(),
            mode_used: if hybrid { "hybrid" } else { "keyword" }.into(),
            failed_variants,
            failed_vaults,
            route: detailed.then(|| Route {
                queries,
                hypothetical_answer: request.hypothetical.is_some(),
                arms,
                graph_expansion: true,
            }),
            coverage: detailed.then_some(Coverage { candidates, expanded, vaults_searched: searched.len() }),
        })
    }
}
