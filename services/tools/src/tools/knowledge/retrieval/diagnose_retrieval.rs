//! diagnose_retrieval: why a note was or was not retrieved for a query.

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::knowledge::retrieval::{self, Request, Trace};
use crate::tools::knowledge::work;
use otc_kernel::format::{ResponseFormat, Verbosity};
use otc_kernel::reading::View;
use otc_kernel::{CallContext, Tool};

pub struct DiagnoseRetrieval;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub query: String,
    /// The note expected in the results.
    pub path: String,
    /// As vault_graph_search's (default 10).
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub final_top_k: Option<u32>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// Whether vault_graph_search would return the note for the query.
    pub returned: bool,
    /// Where it fell out: excluded (Excluded files), not_indexed (no chunks yet), no_match (no
    /// arm found it and no link led to it), time_window, or final_top_k (found, ranked below
    /// the cut).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped_at: Option<String>,
    pub summary: String,
    /// Detailed only: its rank in each stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<Stages>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Stages {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyword_rank: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic_rank: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fused_rank: Option<usize>,
    /// Reached by a link from a seed.
    pub graph: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_rank: Option<usize>,
    pub final_top_k: usize,
    pub mode_used: String,
    pub candidates: usize,
}

impl Tool for DiagnoseRetrieval {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Model),
        scopes: &["read:notes"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "diagnose_retrieval",
            "Diagnose a retrieval",
            "Explains why a note was or was not retrieved by vault_graph_search for a query: its rank at each \
             stage and where it fell out.",
            Domain::Knowledge,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let detailed = work::detailed(ctx, input.response_format, input.verbosity);
        let k = otc_kernel::reading::bounded(input.final_top_k, 10, 1..=50, "final_top_k")?;
        let queries = retrieval::variants(&input.query, None)?;
        let view = ctx.view(&input.vault).await?;
        view.readable_path(&input.path)?;
        let path = input.path.clone();
        if otc_kernel::reading::file_entry(ctx, view.vault.id, &path).await?.is_none() {
            return Err(otc_kernel::reading::not_found(&path).detail("field", "path"));
        }
        let request = Request { queries, k, depth: (2 * k).min(20), expand: true, ..Request::default() };
        let found = retrieval::retrieve(ctx, &view, &request).await?;
        // A diagnosis retrieves nothing for the caller to cite.
        retrieval::record(&view.vault.name, &[], true);
        let trace = found.traces.get(&path).cloned().unwrap_or_default();
        let (dropped_at, summary) = match verdict(ctx, &view, &path, &trace, k).await? {
            None => (None, format!("returned at rank {} of {k}", trace.final_rank.unwrap_or(0))),
            Some((stage, why)) => (Some(stage.to_string()), why),
        };
        Ok(Output {
            vault: view.vault.name.clone(),
            returned: trace.final_rank.is_some(),
            dropped_at,
            summary,
            stages: detailed.then(|| Stages {
                keyword_rank: trace.keyword_rank,
                semantic_rank: trace.semantic_rank,
                fused_rank: trace.fused_rank,
                graph: trace.graph,
                final_rank: trace.final_rank,
                final_top_k: k,
                mode_used: found.mode_used.into(),
                candidates: found.candidates,
            }),
        })
    }
}

/// The stage a note fell out at, and why in words (None: it was returned).
async fn verdict(
    ctx: &CallContext<'_>,
    view: &View,
    path: &str,
    trace: &Trace,
    k: usize,
) -> Result<Option<(&'static str, String)>, ToolError> {
    if trace.final_rank.is_some() {
        return Ok(None);
    }
    if trace.time_filtered {
        return Ok(Some(("time_window", "found, but changed outside the time window".into())));
    }
    if trace.fused_rank.is_some() || trace.graph {
        let how = match (trace.keyword_rank, trace.semantic_rank) {
            (Some(kw), Some(s)) => format!("keyword rank {kw}, meaning rank {s}"),
            (Some(kw), None) => format!("keyword rank {kw}"),
            (None, Some(s)) => format!("meaning rank {s}"),
            (None, None) => "a link from a seed".into(),
        };
        return Ok(Some(("final_top_k", format!("found ({how}) but ranked below the top {k}"))));
    }
    let graph = otc_kernel::graphing::load(ctx, view).await?;
    if graph.excluded.contains(path) {
        return Ok(Some(("excluded", "the note is in the vault's Excluded files, which search leaves out".into())));
    }
    let mut tx = ctx.begin().await?;
    let chunks = tx.chunk_spans(view.vault.id, &[(path.to_string(), 0)]).await?;
    tx.commit().await?;
    if chunks.is_empty() {
        return Ok(Some(("not_indexed", "the note has no indexed chunks yet (empty, or not indexed)".into())));
    }
    Ok(Some((
        "no_match",
        "neither the keywords nor the meaning matched it, and no link from a result led to it".into(),
    )))
}
