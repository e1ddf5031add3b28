//! What the canvas tools share: a `.canvas` path argument, and the concise view of a node or
//! an edge (what it says and what it joins, without the layout).

pub mod create_canvas;
pub mod query_canvas;
pub mod read_canvas;
pub mod update_canvas;

use otc_errors::ToolError;
use serde_json::{Map, Value};

/// A `.canvas` path argument named `field`.
pub fn check_canvas_path(path: &str, field: &str) -> Result<(), ToolError> {
    otc_kernel::reading::check_extension(path, ".canvas", "a canvas is a .canvas file", field)
}

/// The keys a concise node keeps: what it says, not where it sits.
const NODE_KEYS: [&str; 8] = ["id", "type", "text", "file", "subpath", "url", "label", "color"];
/// The keys a concise edge keeps: what it joins.
const EDGE_KEYS: [&str; 5] = ["id", "fromNode", "toNode", "label", "color"];

fn keep(item: &Map<String, Value>, keys: &[&str]) -> Map<String, Value> {
    item.iter().filter(|(k, _)| keys.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// A node without its geometry and background.
pub fn concise_node(node: &Map<String, Value>) -> Map<String, Value> {
    keep(node, &NODE_KEYS)
}

/// An edge without its sides and ends.
pub fn concise_edge(edge: &Map<String, Value>) -> Map<String, Value> {
    keep(edge, &EDGE_KEYS)
}
