use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, Sometimes, ToolSpec};
use otc_errors::ToolError;
use otc_formats::canvas;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tools::structured::canvas::check_canvas_path;
use otc_kernel::writing;
use otc_kernel::{CallContext, Tool};

pub struct CreateCanvas;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// {type: text|file|link|group, x, y, width, height, text|file|url|label, color?}; id optional.
    #[serde(default)]
    pub nodes: Option<Vec<Map<String, Value>>>,
    /// {fromNode, toNode, fromSide?, toSide?, label?}; id optional.
    #[serde(default)]
    pub edges: Option<Vec<Map<String, Value>>>,
    #[serde(default)]
    pub overwrite: Option<bool>,
    #[serde(default)]
    pub elicit_token: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    pub nodes: usize,
    pub edges: usize,
    /// Ids this call made for nodes and edges sent without one.
    pub ids_generated: usize,
    /// False when an existing canvas was replaced.
    pub created: bool,
    pub content_hash: String,
}

impl Tool for CreateCanvas {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:canvas"],
        scope_class: ScopeClass::Write,
        destructive: Sometimes::OnSomeCalls,
        hitl: Sometimes::OnSomeCalls,
        response_format: Format::Fixed { why: "a write acknowledgement: counts and the hash" },
        core: false,
        ..ToolSpec::base(
            "create_canvas",
            "Create a canvas",
            "Creates a .canvas file (JSON Canvas 1.0).",
            Domain::Structured,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        check_canvas_path(&input.path, "path")?;
        writing::check_write(&view, &input.path, "path")?;
        let (made, nodes_made, edges_made) =
            canvas::new_canvas(input.nodes.unwrap_or_default(), input.edges.unwrap_or_default())?;
        let text = canvas::render(&made);
        let overwrite = input.overwrite.unwrap_or(false);
        let edited = writing::write_whole(ctx, &view, &input.path, "path", &text, overwrite).await?;
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            nodes: made.nodes.len(),
            edges: made.edges.len(),
            ids_generated: nodes_made + edges_made,
            created: edited.extra,
            content_hash: hex::encode(edited.content_hash),
        })
    }
}
