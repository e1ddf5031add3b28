use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::graphing::{self, compute};
use otc_kernel::{CallContext, Tool};

pub struct GetLinkStrength;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Path; .md optional.
    pub from: String,
    pub to: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub from: String,
    pub to: String,
    /// 0 to 1: a quarter for a link each way, half the Jaccard similarity of their
    /// neighbourhoods; notes joined only through others get 0.1 / distance.
    pub score: f64,
    /// Links from `from` to `to`, and back.
    pub forward_links: u32,
    pub backward_links: u32,
    /// Notes both link to.
    pub shared_targets: usize,
    /// Notes that link to both.
    pub shared_sources: usize,
    /// Jaccard similarity of the notes each links or is linked by (each other left out).
    pub jaccard: f64,
    /// Links on the shortest path either way (absent: not connected).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distance: Option<usize>,
}

impl Tool for GetLinkStrength {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Graph),
        scopes: &["read:notes"],
        response_format: Format::Fixed { why: "one scored row: every field is a component of the score" },
        ..ToolSpec::base(
            "get_link_strength",
            "Link strength",
            "Scores how strongly two notes are linked (0 to 1): direct links each way and shared neighbours.",
            Domain::Links,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let loaded = graphing::load(ctx, &view).await?;
        let a = loaded.node(&view, &input.from, "from")?;
        let b = loaded.node(&view, &input.to, "to")?;
        let (s, from, to) = compute(ctx.tool, move || {
            let g = &loaded.graph;
            (otc_graph::link_strength(g, a, b), g.name(a).to_string(), g.name(b).to_string())
        })
        .await?;
        Ok(Output {
            vault: view.vault.name.clone(),
            from,
            to,
            score: round(s.score),
            forward_links: s.forward,
            backward_links: s.backward,
            shared_targets: s.shared_targets,
            shared_sources: s.shared_sources,
            jaccard: round(s.jaccard),
            distance: s.distance,
        })
    }
}

fn round(v: f64) -> f64 {
    (v * 1e6).round() / 1e6
}
