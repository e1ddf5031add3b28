use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::graphing::{self, compute};
use otc_kernel::{CallContext, Tool};

pub struct GraphPathBetween;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Path; .md optional.
    pub from: String,
    pub to: String,
    /// Default true; false follows links either way.
    #[serde(default)]
    pub directed: Option<bool>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub from: String,
    pub to: String,
    pub directed: bool,
    pub found: bool,
    /// Links on the path (absent when none joins them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hops: Option<usize>,
    /// The notes along the shortest path, both ends included; among equally short paths, the
    /// one through the notes first in path order.
    pub path: Vec<String>,
}

impl Tool for GraphPathBetween {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Graph),
        scopes: &["read:notes"],
        response_format: Format::Fixed { why: "the hop chain is the payload" },
        ..ToolSpec::base(
            "graph_path_between",
            "Link path between notes",
            "Finds the shortest chain of links from one note to another.",
            Domain::Links,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let loaded = graphing::load(ctx, &view).await?;
        let from = loaded.node(&view, &input.from, "from")?;
        let to = loaded.node(&view, &input.to, "to")?;
        let directed = input.directed.unwrap_or(true);
        let (path, from_path, to_path) = compute(ctx.tool, move || {
            let g = &loaded.graph;
            let path = otc_graph::shortest_path(g, from, to, directed)
                .map(|p| p.into_iter().map(|n| g.name(n).to_string()).collect::<Vec<_>>());
            (path, g.name(from).to_string(), g.name(to).to_string())
        })
        .await?;
        Ok(Output {
            vault: view.vault.name.clone(),
            from: from_path,
            to: to_path,
            directed,
            found: path.is_some(),
            hops: path.as_ref().map(|p| p.len() - 1),
            path: path.unwrap_or_default(),
        })
    }
}
