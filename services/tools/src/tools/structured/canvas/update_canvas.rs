use otc_catalog::{Domain, ResponseFormat as Format, ScopeClass, ToolSpec};
use otc_errors::ToolError;
use otc_formats::canvas;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tools::structured::canvas::check_canvas_path;
use otc_kernel::reading::not_found;
use otc_kernel::writing::{self, Planned};
use otc_kernel::{CallContext, Tool};

pub struct UpdateCanvas;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
    /// Id optional.
    #[serde(default)]
    pub add_nodes: Option<Vec<Map<String, Value>>>,
    #[serde(default)]
    pub add_edges: Option<Vec<Map<String, Value>>>,
    /// Their edges go too.
    #[serde(default)]
    pub remove_node_ids: Option<Vec<String>>,
    #[serde(default)]
    pub remove_edge_ids: Option<Vec<String>>,
    /// Each: id and the fields to set (null removes one).
    #[serde(default)]
    pub update_nodes: Option<Vec<Map<String, Value>>>,
    /// Like update_nodes.
    #[serde(default)]
    pub update_edges: Option<Vec<Map<String, Value>>>,
    #[serde(default)]
    pub prev_hash: Option<String>,
    #[serde(default)]
    pub elicit_token: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    pub nodes_added: usize,
    pub edges_added: usize,
    pub nodes_removed: usize,
    pub edges_removed: usize,
    /// Edges removed because a node they touched was.
    pub edges_removed_with_nodes: usize,
    pub nodes_updated: usize,
    pub edges_updated: usize,
    pub content_hash: String,
}

impl Tool for UpdateCanvas {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["write:canvas"],
        scope_class: ScopeClass::Write,
        response_format: Format::Fixed { why: "a write acknowledgement: counts and the hash" },
        core: false,
        ..ToolSpec::base(
            "update_canvas",
            "Change a canvas",
            "Adds, removes and changes a canvas's nodes and edges in one write (JSON Canvas 1.0).",
            Domain::Structured,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        check_canvas_path(&input.path, "path")?;
        view.readable_path(&input.path)?;
        writing::check_write(&view, &input.path, "path")?;
        let prev = writing::parse_prev_hash(input.prev_hash.as_deref())?;
        let update = canvas::Update {
            add_nodes: input.add_nodes.unwrap_or_default(),
            add_edges: input.add_edges.unwrap_or_default(),
            remove_node_ids: input.remove_node_ids.unwrap_or_default(),
            remove_edge_ids: input.remove_edge_ids.unwrap_or_default(),
            update_nodes: input.update_nodes.unwrap_or_default(),
            update_edges: input.update_edges.unwrap_or_default(),
        };
        let edited = writing::edit_note(ctx, &view, &input.path, prev, None, |now, _| {
            let text = now.ok_or_else(|| not_found(&input.path))?;
            let applied = canvas::apply(canvas::parse(text)?, &update)?;
            let counts = [
                applied.nodes_added,
                applied.edges_added,
                applied.nodes_removed,
                applied.edges_removed,
                applied.edges_removed_with_nodes,
                applied.nodes_updated,
                applied.edges_updated,
            ];
            Ok(Planned { text: canvas::render(&applied.canvas), extra: counts, trash_old: false })
        })
        .await?;
        let [
            nodes_added,
            edges_added,
            nodes_removed,
            edges_removed,
            edges_removed_with_nodes,
            nodes_updated,
            edges_updated,
        ] = edited.extra;
        Ok(Output {
            vault: view.vault.name.clone(),
            path: input.path,
            nodes_added,
            edges_added,
            nodes_removed,
            edges_removed,
            edges_removed_with_nodes,
            nodes_updated,
            edges_updated,
            content_hash: hex::encode(edited.content_hash),
        })
    }
}
