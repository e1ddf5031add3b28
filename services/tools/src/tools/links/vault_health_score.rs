use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::graphing::{self, compute};
use otc_kernel::reading::bounded;
use otc_kernel::{CallContext, Tool};

pub struct VaultHealthScore;

/// Hubs named in the answer.
const HUBS_LISTED: usize = 10;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// A note at least this many notes link to is a hub; 2 to 100000 (default 25).
    #[serde(default)]
    pub hub_threshold: Option<u32>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// 0 to 100: 100 less the penalties.
    pub score: f64,
    /// Notes you can read (Excluded files left out).
    pub notes: usize,
    /// Notes no other note links to.
    pub orphans: usize,
    /// Notes that link to no other note.
    pub dead_ends: usize,
    /// Links that resolve to no note you can read.
    pub unresolved_links: usize,
    /// Groups of notes joined by links either way; an unlinked note is a group of its own.
    pub components: usize,
    /// The biggest group's share of the notes.
    pub largest_component_share: f64,
    /// Notes at least hub_threshold notes link to.
    pub hubs: usize,
    /// The most linked hubs, most first (at most 10).
    pub top_hubs: Vec<Hub>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_links: Option<u64>,
    /// What each penalty took, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<Vec<Penalty>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Hub {
    pub path: String,
    pub incoming: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Penalty {
    pub penalty: &'static str,
    /// Points taken off.
    pub points: f64,
    /// The most it can take.
    pub max: f64,
    /// The ratio it is taken on (0 to 1).
    pub ratio: f64,
}

/// (penalty, most points): orphans and unresolved links weigh most, since each is a note
/// nobody finds or a link that leads nowhere.
const WEIGHTS: [(&str, f64); 5] = [
    ("orphans", 30.0),
    ("unresolved_links", 25.0),
    ("dead_ends", 15.0),
    ("fragmentation", 15.0),
    ("hub_concentration", 15.0),
];

impl Tool for VaultHealthScore {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Graph),
        scopes: &["read:notes"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "vault_health_score",
            "Link health score",
            "Scores the vault's link health from 0 to 100, with penalties for orphans, unresolved links, dead \
             ends, disconnected groups and hub concentration.",
            Domain::Links,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let hub_threshold = bounded(input.hub_threshold, 25, 2..=100_000, "hub_threshold")?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let loaded = graphing::load(ctx, &view).await?;
        let mut out = compute(ctx.tool, move || {
            let g = &loaded.graph;
            let n = g.len();
            let nodes = 0..n as u32;
            let orphans = nodes.clone().filter(|&v| g.incoming(v).is_empty()).count();
            let dead_ends = nodes.clone().filter(|&v| g.outgoing(v).is_empty()).count();
            let mut hubs: Vec<u32> = nodes.filter(|&v| g.incoming(v).len() >= hub_threshold).collect();
            hubs.sort_by(|&a, &b| g.incoming(b).len().cmp(&g.incoming(a).len()).then(a.cmp(&b)));
            let into_hubs: usize = hubs.iter().map(|&h| g.incoming(h).len()).sum();
            let (_, sizes) = otc_graph::components(g);
            let largest = sizes.first().copied().unwrap_or(0);
            let (links, unresolved) = loaded.link_totals();
            let unresolved = unresolved as usize;
            let ratio = |part: usize, whole: usize| if whole == 0 { 0.0 } else { part as f64 / whole as f64 };
            let share = ratio(largest, n);
            let ratios = [
                ratio(orphans, n),
                ratio(unresolved, links as usize),
                ratio(dead_ends, n),
                if n == 0 { 0.0 } else { 1.0 - share },
                ratio(into_hubs, g.edge_count()),
            ];
            let breakdown: Vec<Penalty> = WEIGHTS
                .iter()
                .zip(ratios)
                .map(|(&(penalty, max), ratio)| Penalty {
                    penalty,
                    points: round(max * ratio),
                    max,
                    ratio: round(ratio),
                })
                .collect();
            let score = round((100.0 - breakdown.iter().map(|p| p.points).sum::<f64>()).clamp(0.0, 100.0));
            Output {
                vault: String::new(),
                score,
                notes: n,
                orphans,
                dead_ends,
                unresolved_links: unresolved,
                components: sizes.len(),
                largest_component_share: round(share),
                hubs: hubs.len(),
                top_hubs: hubs
                    .iter()
                    .take(HUBS_LISTED)
                    .map(|&h| Hub { path: g.name(h).to_string(), incoming: g.incoming(h).len() })
                    .collect(),
                total_links: Some(links),
                breakdown: Some(breakdown),
            }
        })
        .await?;
        out.vault = view.vault.name.clone();
        if !detailed {
            out.total_links = None;
            out.breakdown = None;
        }
        Ok(out)
    }
}

fn round(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}
