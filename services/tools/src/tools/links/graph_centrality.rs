use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::graphing::{self, compute};
use otc_kernel::reading::bounded;
use otc_kernel::{CallContext, Tool};

pub struct GraphCentrality;

/// Edge visits betweenness may spend before it samples its sources (about a second).
const BETWEENNESS_BUDGET: usize = 100_000_000;
/// The sample's seed, so a sampled ranking is the same on every call.
const BETWEENNESS_SEED: u64 = 0x006f_7463;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    #[default]
    Pagerank,
    Betweenness,
    Degree,
    InDegree,
    OutDegree,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Default pagerank.
    #[serde(default)]
    pub metric: Option<Metric>,
    /// Only notes at least this many notes link to.
    #[serde(default)]
    pub min_incoming_links: Option<u32>,
    /// 1 to 200 (default 20).
    #[serde(default)]
    pub limit: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub metric: Metric,
    /// Highest first; ties in path order.
    pub notes: Vec<Ranked>,
    /// Notes and linking pairs in the graph you can see.
    pub graph_notes: usize,
    pub graph_edges: usize,
    /// Betweenness on a large vault walks a fixed sample of sources and scales up: how many.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampled_sources: Option<usize>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Ranked {
    pub path: String,
    pub score: f64,
    /// Notes linking to it, and notes it links to.
    pub incoming: usize,
    pub outgoing: usize,
}

impl Tool for GraphCentrality {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Graph),
        scopes: &["read:notes"],
        core: false,
        response_format: Format::Fixed { why: "the ranked rows are the payload" },
        ..ToolSpec::base(
            "graph_centrality",
            "Central notes",
            "Ranks notes by PageRank, betweenness or degree in the link graph.",
            Domain::Links,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let limit = bounded(input.limit, 20, 1..=200, "limit")?;
        let min_in = input.min_incoming_links.unwrap_or(0) as usize;
        let metric = input.metric.unwrap_or_default();
        let loaded = graphing::load(ctx, &view).await?;
        let (notes, graph_notes, graph_edges, sampled_sources) = compute(ctx.tool, move || {
            let g = &loaded.graph;
            let n = g.len();
            let mut sampled = None;
            let scores: Vec<f64> = match metric {
                Metric::Pagerank => otc_graph::pagerank(g, 0.85, 1e-6, 100).0,
                Metric::Betweenness => {
                    let b = otc_graph::betweenness(g, BETWEENNESS_BUDGET, BETWEENNESS_SEED);
                    sampled = (!b.exact).then_some(b.sources);
                    b.scores
                }
                Metric::Degree => (0..n as u32).map(|v| (g.incoming(v).len() + g.outgoing(v).len()) as f64).collect(),
                Metric::InDegree => (0..n as u32).map(|v| g.incoming(v).len() as f64).collect(),
                Metric::OutDegree => (0..n as u32).map(|v| g.outgoing(v).len() as f64).collect(),
            };
            let mut order: Vec<u32> = (0..n as u32).filter(|&v| g.incoming(v).len() >= min_in).collect();
            order.sort_by(|&a, &b| scores[b as usize].total_cmp(&scores[a as usize]).then(a.cmp(&b)));
            let notes: Vec<Ranked> = order
                .into_iter()
                .take(limit)
                .map(|v| Ranked {
                    path: g.name(v).to_string(),
                    score: scores[v as usize],
                    incoming: g.incoming(v).len(),
                    outgoing: g.outgoing(v).len(),
                })
                .collect();
            (notes, n, g.edge_count(), sampled)
        })
        .await?;
        Ok(Output { vault: view.vault.name.clone(), metric, notes, graph_notes, graph_edges, sampled_sources })
    }
}
