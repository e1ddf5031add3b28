use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::graphing::{self, compute};
use otc_kernel::reading::{PAGE_BUDGET_BYTES, bounded, fit};
use otc_kernel::{CallContext, Tool};

pub struct GraphCommunities;

/// Modularity from which a partition is more than the grouping a random graph of the same
/// degrees would show (the usual reading of Newman's measure).
const MEANINGFUL: f64 = 0.3;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Default 0; the same seed gives the same communities.
    #[serde(default)]
    pub seed: Option<u64>,
    /// 1 to 1000 (default 2).
    #[serde(default)]
    pub min_size: Option<u32>,
    /// 1 to 50 (default 10).
    #[serde(default)]
    pub limit: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub communities: Vec<Community>,
    /// Communities of at least min_size notes, listed or not.
    pub total: usize,
    /// Notes in communities smaller than min_size (unlinked notes among them).
    pub notes_in_smaller: usize,
    /// Newman's modularity of the whole partition (-0.5 to 1), links taken either way.
    pub modularity: f64,
    /// Whether the modularity reaches 0.3, where groups stop looking like chance.
    pub meaningful: bool,
    /// Why the grouping may be chance, when it may.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Community {
    /// 0 is the largest.
    pub id: u32,
    pub size: usize,
    /// Its notes, most linked first (cut to keep the answer small: see more).
    pub notes: Vec<String>,
    /// Notes of the community not listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub more: Option<usize>,
}

impl Tool for GraphCommunities {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Graph),
        scopes: &["read:notes"],
        core: false,
        response_format: Format::Fixed {
            why: "the communities are the payload; modularity, meaningful and the warning are safety signals",
        },
        ..ToolSpec::base(
            "graph_communities",
            "Note communities",
            "Groups notes into communities (clusters) of densely linked notes (Louvain), largest first.",
            Domain::Links,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let min_size = bounded(input.min_size, 2, 1..=1000, "min_size")?;
        let limit = bounded(input.limit, 10, 1..=50, "limit")?;
        let seed = input.seed.unwrap_or(0);
        let loaded = graphing::load(ctx, &view).await?;
        let mut out = compute(ctx.tool, move || {
            let g = &loaded.graph;
            let c = otc_graph::louvain(g, seed);
            let mut members: Vec<Vec<u32>> = vec![Vec::new(); c.sizes.len()];
            for (node, &id) in c.of.iter().enumerate() {
                members[id as usize].push(node as u32);
            }
            let degree = |v: u32| g.incoming(v).len() + g.outgoing(v).len();
            let kept: Vec<usize> = (0..c.sizes.len()).filter(|&id| c.sizes[id] >= min_size).collect();
            let notes_in_smaller = c.sizes.iter().filter(|&&s| s < min_size).sum();
            let shown = kept.len().min(limit);
            let share = PAGE_BUDGET_BYTES / shown.max(1);
            let communities = kept
                .iter()
                .take(limit)
                .map(|&id| {
                    let mut nodes = members[id].clone();
                    nodes.sort_by(|&a, &b| degree(b).cmp(&degree(a)).then(a.cmp(&b)));
                    let paths: Vec<String> = nodes.iter().map(|&v| g.name(v).to_string()).collect();
                    let (notes, _) = fit(paths, share);
                    let more = (notes.len() < c.sizes[id]).then(|| c.sizes[id] - notes.len());
                    Community { id: id as u32, size: c.sizes[id], notes, more }
                })
                .collect();
            let meaningful = c.modularity >= MEANINGFUL;
            let warning = (!meaningful).then(|| {
                format!(
                    "modularity {:.3} is below {MEANINGFUL}: a random graph with the same links per note groups about \
                     as well, so read these communities as chance",
                    c.modularity
                )
            });
            Output {
                vault: String::new(),
                communities,
                total: kept.len(),
                notes_in_smaller,
                modularity: c.modularity,
                meaningful,
                warning,
            }
        })
        .await?;
        out.vault = view.vault.name.clone();
        Ok(out)
    }
}
