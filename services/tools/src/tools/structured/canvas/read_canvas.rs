use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use otc_formats::canvas;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tools::structured::canvas::{check_canvas_path, concise_edge, concise_node};
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{Content, read_content};
use otc_kernel::{CallContext, Tool};

pub struct ReadCanvas;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    /// JSON Canvas 1.0 nodes: id, type (text, file, link, group) and what it shows.
    pub nodes: Vec<Map<String, Value>>,
    /// Edges: id, fromNode, toNode, label.
    pub edges: Vec<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_count: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edge_count: Option<usize>,
    /// Where the file breaks the JSON Canvas 1.0 rules (it is still read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<Problem>,
    /// The expected hash for your next write (prev_hash).
    pub content_hash: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Problem {
    /// Where, e.g. nodes[3].width.
    pub at: String,
    pub message: String,
}

impl Tool for ReadCanvas {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:canvas"],
        response_format: Format::Takes,
        core: false,
        ..ToolSpec::base(
            "read_canvas",
            "Read a canvas",
            "Reads a JSON Canvas (.canvas) file: its nodes and the edges between them.",
            Domain::Structured,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        check_canvas_path(&input.path, "path")?;
        let Content { text, content_hash, .. } = read_content(ctx, &view, &input.path).await?;
        let canvas = canvas::parse(&text)?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let problems = if detailed {
            canvas::validate(&canvas).into_iter().take(50).map(|p| Problem { at: p.at, message: p.message }).collect()
        } else {
            Vec::new()
        };
        let (nodes, edges) = if detailed {
            (canvas.nodes.clone(), canvas.edges.clone())
        } else {
            (canvas.nodes.iter().map(concise_node).collect(), canvas.edges.iter().map(concise_edge).collect())
        };
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            node_count: detailed.then_some(canvas.nodes.len()),
            edge_count: detailed.then_some(canvas.edges.len()),
            nodes,
            edges,
            problems,
            content_hash,
        })
    }
}
