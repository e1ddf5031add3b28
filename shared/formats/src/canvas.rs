//! JSON Canvas 1.0 (`.canvas` files): parsed, checked against the spec, edited and written back
//! the way Obsidian writes them.
//!
//! Parsing checks only the shape (a JSON object whose `nodes` and `edges`, when present, are
//! arrays of objects); [`validate`] checks every rule of the spec. Real files carry keys the
//! spec does not name (plugins add their own); they are kept and written back.
//!
//! Writing keeps the file's layout: every object's keys in the order the file had them (at any
//! depth, whether or not serde_json keeps map order), and the file's formatting when it is one
//! of the [`Style`]s (Obsidian's own, `JSON.stringify(data, null, "\t")`, ...), so an unchanged
//! canvas renders byte for byte as it was read. New nodes and edges get Obsidian's key order
//! (`id`, `type`, the content, `x`, `y`, `width`, `height`, ...).

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;

use otc_errors::{ErrorCode, ToolError, echo};
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The node types of the spec.
const NODE_TYPES: [&str; 4] = ["text", "file", "link", "group"];
/// The sides an edge attaches to.
const SIDES: [&str; 4] = ["top", "right", "bottom", "left"];
/// The shapes of an edge's ends.
const ENDS: [&str; 2] = ["none", "arrow"];
/// How a group draws its background image.
const BACKGROUND_STYLES: [&str; 3] = ["cover", "ratio", "repeat"];
/// The order Obsidian writes a node's keys in; keys a node has beyond these follow them.
const NODE_KEY_ORDER: &[&str] = &[
    "id",
    "type",
    "text",
    "file",
    "subpath",
    "url",
    "x",
    "y",
    "width",
    "height",
    "color",
    "label",
    "background",
    "backgroundStyle",
];
/// The order Obsidian writes an edge's keys in.
const EDGE_KEY_ORDER: &[&str] =
    &["id", "fromNode", "fromSide", "fromEnd", "toNode", "toSide", "toEnd", "color", "label"];
/// The most problems a refusal lists.
const MAX_PROBLEMS_LISTED: usize = 20;

/// How a canvas is written out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Style {
    /// Obsidian's own: the top object and its arrays one entry a line, tab-indented, each node and
    /// edge on one compact line (`{"id":"…","type":"text",…}`), no space after colons.
    #[default]
    Obsidian,
    /// `JSON.stringify(data, null, "\t")`: everything expanded, tab-indented, `": "` between keys
    /// and values.
    Pretty,
    /// Everything expanded and tab-indented like [`Style::Pretty`], with no space after colons.
    PrettyTight,
    /// One line with no whitespace (`JSON.stringify(data)`).
    Compact,
}

impl Style {
    /// Every style, in the order [`parse`] tries them on a file.
    const ALL: [Style; 4] = [Style::Obsidian, Style::Pretty, Style::PrettyTight, Style::Compact];

    fn rules(self) -> Fmt {
        match self {
            Style::Obsidian => Fmt { colon: ":", expand_below: 2 },
            Style::Pretty => Fmt { colon: ": ", expand_below: usize::MAX },
            Style::PrettyTight => Fmt { colon: ":", expand_below: usize::MAX },
            Style::Compact => Fmt { colon: ":", expand_below: 0 },
        }
    }
}

/// A parsed canvas: its nodes and edges as JSON objects, with every key they had, and whatever
/// else the top-level object held. Equality compares the content, not the layout.
#[derive(Debug, Clone, Default)]
pub struct Canvas {
    /// The nodes, bottom (first) to top (last).
    pub nodes: Vec<Map<String, Value>>,
    /// The edges, in file order.
    pub edges: Vec<Map<String, Value>>,
    /// Top-level keys other than `nodes` and `edges`, in file order.
    pub extra: Vec<(String, Value)>,
    layout: Layout,
}

impl PartialEq for Canvas {
    fn eq(&self, other: &Self) -> bool {
        self.nodes == other.nodes && self.edges == other.edges && self.extra == other.extra
    }
}

impl Canvas {
    /// The style [`render`] writes this canvas in: the file's own when [`parse`] recognised it.
    pub fn style(&self) -> Style {
        self.layout.style
    }

    /// Writes this canvas in `style` from now on.
    pub fn set_style(&mut self, style: Style) {
        self.layout.style = style;
    }
}

/// What [`render`] needs to write a canvas back as it was read.
#[derive(Debug, Clone)]
struct Layout {
    style: Style,
    /// Whether the file started with a byte order mark.
    bom: bool,
    /// The whitespace after the closing brace (a final line break, usually none).
    trailing: String,
    /// The top-level keys in file order, `nodes` and `edges` included.
    top_keys: Vec<String>,
    /// Each node's key order as read, under its [`id_key`].
    node_shapes: Vec<(String, Shape)>,
    /// Each edge's key order as read, under its [`id_key`].
    edge_shapes: Vec<(String, Shape)>,
    /// Each extra top-level value's key order.
    extra_shapes: Vec<(String, Shape)>,
}

impl Default for Layout {
    fn default() -> Self {
        Layout {
            style: Style::Obsidian,
            bom: false,
            trailing: String::new(),
            top_keys: vec!["nodes".to_string(), "edges".to_string()],
            node_shapes: Vec::new(),
            edge_shapes: Vec::new(),
            extra_shapes: Vec::new(),
        }
    }
}

/// The structure of a JSON value with its objects' keys in file order.
#[derive(Debug, Clone, Default)]
enum Shape {
    #[default]
    Leaf,
    Object(Vec<(String, Shape)>),
    Array(Vec<Shape>),
}

impl Shape {
    fn item(&self, index: usize) -> Option<&Shape> {
        match self {
            Shape::Array(items) => items.get(index),
            _ => None,
        }
    }

    /// The shape under `key` (the last one, as serde_json keeps the last of repeated keys).
    fn field(&self, key: &str) -> Option<&Shape> {
        match self {
            Shape::Object(entries) => entries.iter().rev().find(|(k, _)| k == key).map(|(_, s)| s),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ShapeVisitor)
    }
}

struct ShapeVisitor;

impl<'de> Visitor<'de> for ShapeVisitor {
    type Value = Shape;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Shape, E> {
        Ok(Shape::Leaf)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Shape, E> {
        Ok(Shape::Leaf)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Shape, E> {
        Ok(Shape::Leaf)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Shape, E> {
        Ok(Shape::Leaf)
    }

    fn visit_str<E>(self, _: &str) -> Result<Shape, E> {
        Ok(Shape::Leaf)
    }

    fn visit_unit<E>(self) -> Result<Shape, E> {
        Ok(Shape::Leaf)
    }

    fn visit_none<E>(self) -> Result<Shape, E> {
        Ok(Shape::Leaf)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Shape, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Shape>()? {
            items.push(item);
        }
        Ok(Shape::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value::<Shape>()?;
            entries.push((key, value));
        }
        Ok(Shape::Object(entries))
    }
}

/// A rule of the spec that a canvas breaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Where: `nodes[3].width`, `edges[0].toNode`, `nodes[2]`.
    pub at: String,
    /// What is wrong, in a sentence.
    pub message: String,
}

/// Changes to a canvas, applied by [`apply`] in this order: edge removals, node removals (with
/// the edges touching the removed nodes), node updates, edge updates, added nodes, added edges.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Update {
    /// Nodes to add on top; one without an `id` (or with `null` or `""`) gets a fresh one.
    pub add_nodes: Vec<Map<String, Value>>,
    /// Edges to add; one without an `id` gets a fresh one.
    pub add_edges: Vec<Map<String, Value>>,
    /// Ids of nodes to remove; the edges that start or end at them go too.
    pub remove_node_ids: Vec<String>,
    /// Ids of edges to remove.
    pub remove_edge_ids: Vec<String>,
    /// Each names a node by `id` (never changed) and holds the fields to set; `null` removes a
    /// field.
    pub update_nodes: Vec<Map<String, Value>>,
    /// Each names an edge by `id` (never changed) and holds the fields to set; `null` removes a
    /// field.
    pub update_edges: Vec<Map<String, Value>>,
}

/// The result of [`apply`]: the new canvas and what changed.
#[derive(Debug, Clone)]
pub struct Applied {
    /// The canvas after the update.
    pub canvas: Canvas,
    /// Nodes added.
    pub nodes_added: usize,
    /// Edges added.
    pub edges_added: usize,
    /// Nodes removed.
    pub nodes_removed: usize,
    /// Edges removed because `remove_edge_ids` named them.
    pub edges_removed: usize,
    /// Entries of `update_nodes` applied.
    pub nodes_updated: usize,
    /// Entries of `update_edges` applied.
    pub edges_updated: usize,
    /// Edges removed because a node they touched was removed.
    pub edges_removed_with_nodes: usize,
}

/// What a canvas links to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Links {
    /// The files that file nodes show, without any `#subpath`, each once, in node order.
    pub files: Vec<String>,
    /// The wikilinks and markdown links inside text nodes, in node order; their spans are
    /// relative to their node's text.
    pub text_links: Vec<otc_parser::Link>,
}

/// One node that [`query`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeMatch {
    /// The node's id (empty when it has none).
    pub id: String,
    /// The node's type: `text`, `file`, `link`, `group` (empty when it has none).
    pub kind: String,
    /// A text node's markdown.
    pub text: Option<String>,
    /// A file node's file, as written.
    pub file: Option<String>,
    /// A link node's URL.
    pub url: Option<String>,
    /// A group's label.
    pub label: Option<String>,
}

/// What [`query`] looks for; every filter given must match.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Filter {
    /// The node type: `text`, `file`, `link` or `group`.
    #[serde(alias = "type")]
    pub kind: Option<String>,
    /// A case-insensitive substring of the node's text, label, file path or URL.
    pub text: Option<String>,
    /// The node's color: a preset `"1"`..`"6"` or a hex color (compared case-insensitively).
    pub color: Option<String>,
    /// The file a file node shows, exactly (with or without its `#subpath`).
    pub file: Option<String>,
    /// A group node's id: only nodes whose box lies inside that group's box.
    pub in_group: Option<String>,
}

/// Reads a canvas. The text must be a JSON object; `nodes` and `edges`, when present, must be
/// arrays of objects (missing ones are empty). Empty or blank text is an empty canvas, as
/// Obsidian treats a new canvas file. Nothing else is checked: see [`validate`].
pub fn parse(text: &str) -> Result<Canvas, ToolError> {
    let (bom, text) = match text.strip_prefix('\u{feff}') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let body = text.trim_end();
    let trailing = text[body.len()..].to_string();
    if body.trim_start().is_empty() {
        return Ok(Canvas::default());
    }
    let value: Value =
        serde_json::from_str(body).map_err(|e| shape_error(format!("the canvas is not valid JSON: {e}")))?;
    let Value::Object(mut top) = value else {
        return Err(shape_error(format!("the canvas is {}, not a JSON object", describe(&value))));
    };
    // Parsing succeeded once, so this does too; a failure only loses the key order.
    let shape: Shape = serde_json::from_str(body).unwrap_or_default();

    let nodes = take_objects(&mut top, "nodes")?;
    let edges = take_objects(&mut top, "edges")?;

    let mut top_keys: Vec<String> = Vec::new();
    match &shape {
        Shape::Object(entries) => {
            for (key, _) in entries {
                if !top_keys.contains(key) {
                    top_keys.push(key.clone());
                }
            }
        }
        _ => top_keys.extend(["nodes".to_string(), "edges".to_string()]),
    }
    for key in top.keys() {
        if !top_keys.contains(key) {
            top_keys.push(key.clone());
        }
    }
    let mut extra = Vec::new();
    let mut extra_shapes = Vec::new();
    for key in &top_keys {
        if let Some(value) = top.remove(key) {
            extra.push((key.clone(), value));
            if let Some(s) = shape.field(key) {
                extra_shapes.push((key.clone(), s.clone()));
            }
        }
    }
    let shapes_of = |items: &[Map<String, Value>], key: &str| -> Vec<(String, Shape)> {
        let Some(array) = shape.field(key) else { return Vec::new() };
        items.iter().enumerate().filter_map(|(i, item)| array.item(i).map(|s| (id_key(item), s.clone()))).collect()
    };
    let node_shapes = shapes_of(&nodes, "nodes");
    let edge_shapes = shapes_of(&edges, "edges");

    let mut canvas = Canvas {
        nodes,
        edges,
        extra,
        layout: Layout { style: Style::Obsidian, bom, trailing, top_keys, node_shapes, edge_shapes, extra_shapes },
    };
    canvas.layout.style =
        Style::ALL.into_iter().find(|&style| render_body(&canvas, style) == body).unwrap_or(if !body.contains('\n') {
            Style::Compact
        } else if body.contains("\": ") {
            Style::Pretty
        } else {
            Style::Obsidian
        });
    Ok(canvas)
}

fn shape_error(message: String) -> ToolError {
    ToolError::with_message(ErrorCode::InvalidInput, message).detail("field", "path")
}

/// Takes `key` out of the top object as an array of objects (empty when missing).
fn take_objects(top: &mut Map<String, Value>, key: &str) -> Result<Vec<Map<String, Value>>, ToolError> {
    match top.remove(key) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::Object(map) => Ok(map),
                other => Err(shape_error(format!("{key}[{i}] is {}, not an object", describe(&other)))),
            })
            .collect(),
        Some(other) => Err(shape_error(format!("{key} is {}, not an array", describe(&other)))),
    }
}

/// Checks a canvas against every rule of JSON Canvas 1.0: ids (non-empty strings, unique across
/// nodes and edges), node types, integer positions and sizes, each type's fields, colors, and
/// edges that name existing nodes with valid sides and ends. Empty when it follows them all.
pub fn validate(canvas: &Canvas) -> Vec<Problem> {
    check(canvas).into_iter().map(|found| found.problem).collect()
}

/// A problem with a key that says which rule which node or edge breaks, independent of where
/// the node sits in the array, so the problems of two versions of a canvas can be compared.
struct Found {
    key: String,
    problem: Problem,
}

struct Checker<'a> {
    found: Vec<Found>,
    /// Every id seen so far, with where it was first used.
    seen: HashMap<&'a str, String>,
    node_ids: HashSet<&'a str>,
}

/// Who a problem is about: the node or edge by its id, or by its whole content when it has no
/// usable id.
fn subject(noun: &str, obj: &Map<String, Value>) -> String {
    match obj.get("id") {
        Some(Value::String(id)) if !id.is_empty() => format!("{noun}:{id}"),
        _ => format!("{noun}~{}", Value::Object(obj.clone())),
    }
}

impl<'a> Checker<'a> {
    fn push(&mut self, subject: &str, place: &str, field: &str, rule: &str, message: String) {
        let at = if field.is_empty() { place.to_string() } else { format!("{place}.{field}") };
        self.found.push(Found { key: format!("{subject}\u{1f}{field}\u{1f}{rule}"), problem: Problem { at, message } });
    }

    fn id(&mut self, subject: &str, place: &str, obj: &'a Map<String, Value>, noun: &str) {
        match obj.get("id") {
            None => self.push(subject, place, "id", "missing", format!("{noun} needs an id")),
            Some(Value::String(id)) if id.is_empty() => {
                self.push(subject, place, "id", "empty", "the id is empty".into())
            }
            Some(Value::String(id)) => match self.seen.get(id.as_str()) {
                Some(first) => {
                    let message = format!(
                        "the id \"{}\" is already used by {first}; ids must be unique across nodes and edges",
                        echo(id)
                    );
                    self.push(subject, place, "id", "duplicate", message);
                }
                None => {
                    self.seen.insert(id, place.to_string());
                }
            },
            Some(other) => {
                self.push(subject, place, "id", "type", format!("the id must be a string, not {}", describe(other)))
            }
        }
    }

    /// A field that must be a string; `empty_ok` says whether `""` is fine.
    fn required_string(
        &mut self,
        subject: &str,
        place: &str,
        obj: &Map<String, Value>,
        field: &str,
        owner: &str,
        empty_ok: bool,
    ) -> Option<String> {
        match obj.get(field) {
            None => {
                self.push(subject, place, field, "missing", format!("{owner} needs {field}"));
                None
            }
            Some(Value::String(s)) if s.is_empty() && !empty_ok => {
                self.push(subject, place, field, "empty", format!("{field} is empty"));
                None
            }
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                self.push(subject, place, field, "type", format!("{field} must be a string, not {}", describe(other)));
                None
            }
        }
    }

    fn optional_string(&mut self, subject: &str, place: &str, obj: &Map<String, Value>, field: &str) {
        if let Some(other) = obj.get(field).filter(|v| !v.is_string()) {
            self.push(subject, place, field, "type", format!("{field} must be a string, not {}", describe(other)));
        }
    }

    fn optional_choice(&mut self, subject: &str, place: &str, obj: &Map<String, Value>, field: &str, allowed: &[&str]) {
        match obj.get(field) {
            None => {}
            Some(Value::String(s)) if allowed.contains(&s.as_str()) => {}
            Some(Value::String(s)) => {
                let message = format!("\"{}\" is not a valid {field}: it is one of {}", echo(s), allowed.join(", "));
                self.push(subject, place, field, "value", message);
            }
            Some(other) => {
                self.push(subject, place, field, "type", format!("{field} must be a string, not {}", describe(other)))
            }
        }
    }

    fn color(&mut self, subject: &str, place: &str, obj: &Map<String, Value>) {
        match obj.get("color") {
            None => {}
            Some(Value::String(c)) if is_color(c) => {}
            Some(Value::String(c)) => {
                let message = format!(
                    "\"{}\" is not a canvas color: a preset \"1\" to \"6\" or a hex color like \"#FF0000\"",
                    echo(c)
                );
                self.push(subject, place, "color", "value", message);
            }
            Some(other) => {
                self.push(subject, place, "color", "type", format!("color must be a string, not {}", describe(other)))
            }
        }
    }

    fn node(&mut self, index: usize, node: &'a Map<String, Value>) {
        let place = format!("nodes[{index}]");
        let subject = subject("node", node);
        let subject = subject.as_str();
        self.id(subject, &place, node, "a node");
        let kind = match node.get("type") {
            None => {
                self.push(subject, &place, "type", "missing", "a node needs a type: text, file, link or group".into());
                None
            }
            Some(Value::String(t)) if NODE_TYPES.contains(&t.as_str()) => Some(t.as_str()),
            Some(Value::String(t)) => {
                let message = format!("unknown node type \"{}\": the type is text, file, link or group", echo(t));
                self.push(subject, &place, "type", "value", message);
                None
            }
            Some(other) => {
                let message = format!("the type must be a string, not {}", describe(other));
                self.push(subject, &place, "type", "type", message);
                None
            }
        };
        for field in ["x", "y", "width", "height"] {
            match node.get(field) {
                None => self.push(subject, &place, field, "missing", format!("a node needs {field}")),
                Some(v) if is_integer(v) => {}
                Some(v) => {
                    let message = format!("{field} must be an integer, not {}", describe(v));
                    self.push(subject, &place, field, "type", message);
                }
            }
        }
        self.color(subject, &place, node);
        match kind {
            Some("text") => {
                self.required_string(subject, &place, node, "text", "a text node", true);
            }
            Some("file") => {
                self.required_string(subject, &place, node, "file", "a file node", false);
                match node.get("subpath") {
                    None => {}
                    Some(Value::String(s)) if s.starts_with('#') => {}
                    Some(Value::String(s)) => {
                        let message = format!("the subpath \"{}\" does not start with #", echo(s));
                        self.push(subject, &place, "subpath", "value", message);
                    }
                    Some(other) => {
                        let message = format!("subpath must be a string, not {}", describe(other));
                        self.push(subject, &place, "subpath", "type", message);
                    }
                }
            }
            Some("link") => {
                self.required_string(subject, &place, node, "url", "a link node", false);
            }
            Some("group") => {
                self.optional_string(subject, &place, node, "label");
                self.optional_string(subject, &place, node, "background");
                self.optional_choice(subject, &place, node, "backgroundStyle", &BACKGROUND_STYLES);
            }
            _ => {}
        }
    }

    fn edge(&mut self, index: usize, edge: &'a Map<String, Value>) {
        let place = format!("edges[{index}]");
        let subject = subject("edge", edge);
        let subject = subject.as_str();
        self.id(subject, &place, edge, "an edge");
        for field in ["fromNode", "toNode"] {
            match edge.get(field) {
                None => self.push(subject, &place, field, "missing", format!("an edge needs {field}")),
                Some(Value::String(id)) if self.node_ids.contains(id.as_str()) => {}
                Some(Value::String(id)) => {
                    let message = format!("{field} \"{}\" names no node of this canvas", echo(id));
                    self.push(subject, &place, field, "dangling", message);
                }
                Some(other) => {
                    let message = format!("{field} must be a string, not {}", describe(other));
                    self.push(subject, &place, field, "type", message);
                }
            }
        }
        self.optional_choice(subject, &place, edge, "fromSide", &SIDES);
        self.optional_choice(subject, &place, edge, "toSide", &SIDES);
        self.optional_choice(subject, &place, edge, "fromEnd", &ENDS);
        self.optional_choice(subject, &place, edge, "toEnd", &ENDS);
        self.optional_string(subject, &place, edge, "label");
        self.color(subject, &place, edge);
    }
}

fn check(canvas: &Canvas) -> Vec<Found> {
    let node_ids = canvas.nodes.iter().filter_map(|n| n.get("id").and_then(Value::as_str)).collect();
    let mut checker = Checker { found: Vec::new(), seen: HashMap::new(), node_ids };
    for (i, node) in canvas.nodes.iter().enumerate() {
        checker.node(i, node);
    }
    for (i, edge) in canvas.edges.iter().enumerate() {
        checker.edge(i, edge);
    }
    checker.found
}

/// A preset `"1"`..`"6"`, or `#RGB` / `#RRGGBB` in hex digits of either case.
fn is_color(color: &str) -> bool {
    if matches!(color, "1" | "2" | "3" | "4" | "5" | "6") {
        return true;
    }
    color
        .strip_prefix('#')
        .is_some_and(|hex| (hex.len() == 3 || hex.len() == 6) && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A JSON number with no fractional part.
fn is_integer(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.is_finite() && f.fract() == 0.0),
        _ => false,
    }
}

/// What kind of JSON value this is, for messages.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Number(n) if is_integer(value) => format!("the integer {n}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// Writes a canvas in its [`Style`], keys in the order they were read (new keys after them).
/// A canvas parsed and rendered unchanged comes back byte for byte when the file was in one of
/// the styles; numbers are written as serde_json writes them (a fraction-free float as `1.0`).
pub fn render(canvas: &Canvas) -> String {
    let body = render_body(canvas, canvas.layout.style);
    let mut out = String::with_capacity(body.len() + 4);
    if canvas.layout.bom {
        out.push('\u{feff}');
    }
    out.push_str(&body);
    out.push_str(&canvas.layout.trailing);
    out
}

/// How a style lays out JSON: `expand_below` is the depth down to which arrays and objects put
/// one entry a line (0: none, `usize::MAX`: all).
#[derive(Clone, Copy)]
struct Fmt {
    colon: &'static str,
    expand_below: usize,
}

enum Top<'a> {
    Nodes,
    Edges,
    Extra(&'a Value, Option<&'a Shape>),
}

fn render_body(canvas: &Canvas, style: Style) -> String {
    let fmt = style.rules();
    let layout = &canvas.layout;
    let mut keys: Vec<&str> = Vec::new();
    for key in &layout.top_keys {
        let kept = key == "nodes" || key == "edges" || canvas.extra.iter().any(|(k, _)| k == key);
        if kept && !keys.contains(&key.as_str()) {
            keys.push(key);
        }
    }
    if !keys.contains(&"nodes") && !canvas.nodes.is_empty() {
        keys.insert(0, "nodes");
    }
    if !keys.contains(&"edges") && !canvas.edges.is_empty() {
        let at = keys.iter().position(|k| *k == "nodes").map_or(0, |i| i + 1);
        keys.insert(at, "edges");
    }
    for (key, _) in &canvas.extra {
        if key != "nodes" && key != "edges" && !keys.contains(&key.as_str()) {
            keys.push(key);
        }
    }
    let entries: Vec<(&str, Top<'_>)> = keys
        .into_iter()
        .filter_map(|key| match key {
            "nodes" => Some((key, Top::Nodes)),
            "edges" => Some((key, Top::Edges)),
            _ => {
                let value = canvas.extra.iter().find(|(k, _)| k == key).map(|(_, v)| v)?;
                let shape = layout.extra_shapes.iter().find(|(k, _)| k == key).map(|(_, s)| s);
                Some((key, Top::Extra(value, shape)))
            }
        })
        .collect();
    let node_shapes = match_shapes(&canvas.nodes, &layout.node_shapes);
    let edge_shapes = match_shapes(&canvas.edges, &layout.edge_shapes);

    let mut out = String::new();
    write_seq(&mut out, '{', '}', entries.len(), fmt, 0, |out, i| {
        let Some((key, item)) = entries.get(i) else { return };
        write_str(out, key);
        out.push_str(fmt.colon);
        match item {
            Top::Nodes => write_items(out, &canvas.nodes, &node_shapes, NODE_KEY_ORDER, fmt),
            Top::Edges => write_items(out, &canvas.edges, &edge_shapes, EDGE_KEY_ORDER, fmt),
            Top::Extra(value, shape) => write_value(out, value, *shape, fmt, 1),
        }
    });
    out
}

/// The nodes or edges array, each item keyed in its read order or else `order`.
fn write_items(out: &mut String, items: &[Map<String, Value>], shapes: &[Option<&Shape>], order: &[&str], fmt: Fmt) {
    write_seq(out, '[', ']', items.len(), fmt, 1, |out, i| {
        if let Some(item) = items.get(i) {
            write_map(out, item, shapes.get(i).copied().flatten(), order, fmt, 2);
        }
    });
}

/// Each item's shape as read: the n-th item with an id gets the n-th shape read with that id.
fn match_shapes<'a>(items: &[Map<String, Value>], shapes: &'a [(String, Shape)]) -> Vec<Option<&'a Shape>> {
    let mut by_id: HashMap<&str, VecDeque<&Shape>> = HashMap::new();
    for (key, shape) in shapes {
        by_id.entry(key.as_str()).or_default().push_back(shape);
    }
    items.iter().map(|item| by_id.get_mut(id_key(item).as_str()).and_then(VecDeque::pop_front)).collect()
}

/// The key a node's or edge's shape is kept under: its id.
fn id_key(obj: &Map<String, Value>) -> String {
    match obj.get("id") {
        None => String::new(),
        Some(Value::String(id)) => format!("s:{id}"),
        Some(other) => format!("v:{other}"),
    }
}

/// Writes `n` entries between `open` and `close`, one a line when `depth` is expanded.
fn write_seq(
    out: &mut String,
    open: char,
    close: char,
    n: usize,
    fmt: Fmt,
    depth: usize,
    mut entry: impl FnMut(&mut String, usize),
) {
    out.push(open);
    if n == 0 {
        out.push(close);
        return;
    }
    let expand = depth < fmt.expand_below;
    for i in 0..n {
        if i > 0 {
            out.push(',');
        }
        if expand {
            out.push('\n');
            indent(out, depth + 1);
        }
        entry(out, i);
    }
    if expand {
        out.push('\n');
        indent(out, depth);
    }
    out.push(close);
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push('\t');
    }
}

fn write_str(out: &mut String, text: &str) {
    // Serializing a string cannot fail.
    out.push_str(&serde_json::to_string(text).unwrap_or_default());
}

fn write_value(out: &mut String, value: &Value, shape: Option<&Shape>, fmt: Fmt, depth: usize) {
    match value {
        Value::Object(map) => write_map(out, map, shape, &[], fmt, depth),
        Value::Array(items) => write_seq(out, '[', ']', items.len(), fmt, depth, |out, i| {
            if let Some(item) = items.get(i) {
                write_value(out, item, shape.and_then(|s| s.item(i)), fmt, depth + 1);
            }
        }),
        Value::String(text) => write_str(out, text),
        other => out.push_str(&other.to_string()),
    }
}

/// An object, keys in `shape`'s order, then those of `order`, then the rest in map order.
fn write_map(
    out: &mut String,
    map: &Map<String, Value>,
    shape: Option<&Shape>,
    order: &[&str],
    fmt: Fmt,
    depth: usize,
) {
    let mut keys: Vec<(&String, &Value, Option<&Shape>)> = Vec::with_capacity(map.len());
    let mut seen: HashSet<&str> = HashSet::new();
    if let Some(Shape::Object(entries)) = shape {
        for (key, sub) in entries {
            if let Some((k, v)) = map.get_key_value(key.as_str())
                && seen.insert(k.as_str())
            {
                // A repeated key: serde_json kept the last value, so take the last shape too.
                let sub = shape.and_then(|s| s.field(key)).unwrap_or(sub);
                keys.push((k, v, Some(sub)));
            }
        }
    }
    for key in order {
        if let Some((k, v)) = map.get_key_value(*key)
            && seen.insert(k.as_str())
        {
            keys.push((k, v, None));
        }
    }
    for (k, v) in map {
        if seen.insert(k.as_str()) {
            keys.push((k, v, None));
        }
    }
    write_seq(out, '{', '}', keys.len(), fmt, depth, |out, i| {
        if let Some((k, v, s)) = keys.get(i) {
            write_str(out, k);
            out.push_str(fmt.colon);
            write_value(out, v, *s, fmt, depth + 1);
        }
    });
}

/// Applies `update` (see [`Update`] for the order). Refuses, changing nothing, when an id to
/// remove or update names no node or edge (`field` names the list, `id` the id), and when the
/// result breaks a rule of the spec that the canvas did not already break (`field` is
/// `canvas`, `problems` lists up to 20 new problems); problems the canvas already had are
/// tolerated.
pub fn apply(canvas: Canvas, update: &Update) -> Result<Applied, ToolError> {
    let before = check(&canvas);
    let mut allowed: HashMap<String, usize> = HashMap::new();
    for found in before {
        *allowed.entry(found.key).or_default() += 1;
    }
    let mut canvas = canvas;

    let remove_edges = id_set(&canvas.edges, &update.remove_edge_ids, "remove_edge_ids", "edge")?;
    let edges_before = canvas.edges.len();
    canvas.edges.retain(|e| !has_id_in(e, &remove_edges));
    let edges_removed = edges_before - canvas.edges.len();

    let remove_nodes = id_set(&canvas.nodes, &update.remove_node_ids, "remove_node_ids", "node")?;
    let nodes_before = canvas.nodes.len();
    canvas.nodes.retain(|n| !has_id_in(n, &remove_nodes));
    let nodes_removed = nodes_before - canvas.nodes.len();
    let edges_before = canvas.edges.len();
    canvas.edges.retain(|e| {
        let touches = |field: &str| e.get(field).and_then(Value::as_str).is_some_and(|id| remove_nodes.contains(id));
        !touches("fromNode") && !touches("toNode")
    });
    let edges_removed_with_nodes = edges_before - canvas.edges.len();

    let nodes_updated = update_items(&mut canvas.nodes, &update.update_nodes, "update_nodes", "node")?;
    let edges_updated = update_items(&mut canvas.edges, &update.update_edges, "update_edges", "edge")?;

    let mut ids = IdMaker::new(&canvas, update.add_nodes.iter().chain(&update.add_edges));
    for node in &update.add_nodes {
        canvas.nodes.push(ids.fill(node));
    }
    for edge in &update.add_edges {
        canvas.edges.push(ids.fill(edge));
    }

    let new: Vec<Problem> = check(&canvas)
        .into_iter()
        .filter_map(|found| match allowed.get_mut(&found.key) {
            Some(count) if *count > 0 => {
                *count -= 1;
                None
            }
            _ => Some(found.problem),
        })
        .collect();
    if !new.is_empty() {
        return Err(refusal("canvas", "the update would break the canvas", &new));
    }
    Ok(Applied {
        canvas,
        nodes_added: update.add_nodes.len(),
        edges_added: update.add_edges.len(),
        nodes_removed,
        edges_removed,
        nodes_updated,
        edges_updated,
        edges_removed_with_nodes,
    })
}

/// The ids to remove, each checked to name at least one item.
fn id_set<'a>(
    items: &[Map<String, Value>],
    ids: &'a [String],
    field: &str,
    noun: &str,
) -> Result<HashSet<&'a str>, ToolError> {
    let present: HashSet<&str> = items.iter().filter_map(|i| i.get("id").and_then(Value::as_str)).collect();
    for id in ids {
        if !present.contains(id.as_str()) {
            return Err(missing_id(field, noun, id));
        }
    }
    Ok(ids.iter().map(String::as_str).collect())
}

fn has_id_in(item: &Map<String, Value>, ids: &HashSet<&str>) -> bool {
    item.get("id").and_then(Value::as_str).is_some_and(|id| ids.contains(id))
}

fn missing_id(field: &str, noun: &str, id: &str) -> ToolError {
    ToolError::with_message(ErrorCode::InvalidInput, format!("no {noun} of the canvas has the id \"{}\"", echo(id)))
        .detail("field", field)
        .echo("id", id)
}

/// Sets the fields of each update on every item with its id (`null` removes a field; `id`
/// itself is never changed). Returns how many updates it applied.
fn update_items(
    items: &mut [Map<String, Value>],
    updates: &[Map<String, Value>],
    field: &str,
    noun: &str,
) -> Result<usize, ToolError> {
    for (i, update) in updates.iter().enumerate() {
        let Some(id) = update.get("id").and_then(Value::as_str) else {
            return Err(ToolError::with_message(
                ErrorCode::InvalidInput,
                format!("{field}[{i}] has no string id naming the {noun} to change"),
            )
            .detail("field", field));
        };
        let mut hit = false;
        for item in items.iter_mut().filter(|item| item.get("id").and_then(Value::as_str) == Some(id)) {
            hit = true;
            for (key, value) in update {
                if key == "id" {
                    continue;
                }
                if value.is_null() {
                    item.remove(key);
                } else {
                    item.insert(key.clone(), value.clone());
                }
            }
        }
        if !hit {
            return Err(missing_id(field, noun, id));
        }
    }
    Ok(updates.len())
}

/// Makes fresh ids: 16 lowercase hex digits, like Obsidian's, from a counter and a hash of the
/// item's content, never one the canvas (or the batch being added) already uses.
struct IdMaker {
    used: HashSet<String>,
    counter: u64,
    made: usize,
}

impl IdMaker {
    fn new<'a>(canvas: &Canvas, adding: impl Iterator<Item = &'a Map<String, Value>>) -> Self {
        let mut used: HashSet<String> = HashSet::new();
        let existing = canvas.nodes.iter().chain(&canvas.edges);
        for id in existing.filter_map(|i| i.get("id")).chain(adding.filter_map(|i| i.get("id"))) {
            if let Some(id) = id.as_str() {
                used.insert(id.to_string());
            }
        }
        IdMaker { used, counter: (canvas.nodes.len() + canvas.edges.len()) as u64, made: 0 }
    }

    /// `item`, with a fresh id when it has none (missing, `null` or `""`).
    fn fill(&mut self, item: &Map<String, Value>) -> Map<String, Value> {
        let mut item = item.clone();
        let needs = match item.get("id") {
            None | Some(Value::Null) => true,
            Some(Value::String(id)) => id.is_empty(),
            Some(_) => false,
        };
        if needs {
            let content = Value::Object(item.clone()).to_string();
            let id = loop {
                let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
                for byte in self.counter.to_le_bytes().iter().chain(content.as_bytes()) {
                    hash ^= u64::from(*byte);
                    hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
                }
                self.counter = self.counter.wrapping_add(1);
                let id = format!("{:016x}", mix(hash));
                if self.used.insert(id.clone()) {
                    break id;
                }
            };
            item.insert("id".to_string(), Value::String(id));
            self.made += 1;
        }
        item
    }
}

/// splitmix64's finaliser: spreads the hash over all 64 bits.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// An InvalidInput naming `field`, the first problem in the message and up to 20 in details.
fn refusal(field: &str, lead: &str, problems: &[Problem]) -> ToolError {
    let first = problems.first().map(|p| format!(": {}: {}", p.at, p.message)).unwrap_or_default();
    let more = if problems.len() > 1 { format!(" (and {} more)", problems.len() - 1) } else { String::new() };
    let listed: Vec<Value> = problems
        .iter()
        .take(MAX_PROBLEMS_LISTED)
        .map(|p| serde_json::json!({ "at": p.at, "message": p.message }))
        .collect();
    ToolError::with_message(ErrorCode::InvalidInput, format!("{lead}{first}{more}"))
        .detail("field", field)
        .detail("problems", Value::Array(listed))
        .detail("problem_count", problems.len())
}

/// Builds a new canvas from `nodes` and `edges`, giving fresh ids to those without one, and
/// checks it strictly: any problem refuses (`field` is `nodes` when a node has one, else
/// `edges`; `problems` lists up to 20). Returns the canvas (in Obsidian's style) and how many
/// node ids and edge ids it made up.
pub fn new_canvas(
    nodes: Vec<Map<String, Value>>,
    edges: Vec<Map<String, Value>>,
) -> Result<(Canvas, usize, usize), ToolError> {
    let mut canvas = Canvas::default();
    let mut ids = IdMaker::new(&canvas, nodes.iter().chain(&edges));
    canvas.nodes = nodes.iter().map(|n| ids.fill(n)).collect();
    let node_ids = ids.made;
    canvas.edges = edges.iter().map(|e| ids.fill(e)).collect();
    let edge_ids = ids.made - node_ids;
    let problems = validate(&canvas);
    if !problems.is_empty() {
        let field = if problems.iter().any(|p| p.at.starts_with("nodes")) { "nodes" } else { "edges" };
        return Err(refusal(field, "the canvas breaks the JSON Canvas spec", &problems));
    }
    Ok((canvas, node_ids, edge_ids))
}

/// The file a file node shows, without its `#subpath` when it carries one in the path.
fn file_target(file: &str) -> &str {
    file.split_once('#').map_or(file, |(path, _)| path)
}

fn str_field<'a>(obj: &'a Map<String, Value>, field: &str) -> Option<&'a str> {
    obj.get(field).and_then(Value::as_str)
}

/// The files file nodes show and the links written inside text nodes.
pub fn links(canvas: &Canvas) -> Links {
    let mut files: Vec<String> = Vec::new();
    let mut text_links = Vec::new();
    for node in &canvas.nodes {
        match str_field(node, "type") {
            Some("file") => {
                if let Some(file) = str_field(node, "file").map(file_target)
                    && !file.is_empty()
                    && !files.iter().any(|f| f == file)
                {
                    files.push(file.to_string());
                }
            }
            Some("text") => {
                if let Some(text) = str_field(node, "text") {
                    text_links.extend(otc_parser::parse(text).links);
                }
            }
            _ => {}
        }
    }
    Links { files, text_links }
}

/// A node's box, when all four of its numbers are there.
fn node_box(node: &Map<String, Value>) -> Option<(f64, f64, f64, f64)> {
    let num = |field: &str| node.get(field).and_then(Value::as_f64);
    Some((num("x")?, num("y")?, num("width")?, num("height")?))
}

/// The nodes that match every filter given, in array order (bottom to top).
pub fn query(canvas: &Canvas, filter: &Filter) -> Vec<NodeMatch> {
    let group = match &filter.in_group {
        None => None,
        Some(group_id) => {
            let group = canvas
                .nodes
                .iter()
                .find(|n| str_field(n, "id") == Some(group_id.as_str()) && str_field(n, "type") == Some("group"))
                .and_then(node_box);
            match group {
                Some(b) => Some((group_id.as_str(), b)),
                None => return Vec::new(),
            }
        }
    };
    let needle = filter.text.as_ref().map(|t| t.to_lowercase());
    canvas
        .nodes
        .iter()
        .filter(|node| {
            let kind = str_field(node, "type");
            if filter.kind.as_deref().is_some_and(|k| kind != Some(k)) {
                return false;
            }
            if let Some(color) = &filter.color
                && !str_field(node, "color").is_some_and(|c| c.eq_ignore_ascii_case(color))
            {
                return false;
            }
            if let Some(wanted) = &filter.file {
                let file = if kind == Some("file") { str_field(node, "file") } else { None };
                if !file.is_some_and(|f| f == wanted || file_target(f) == wanted) {
                    return false;
                }
            }
            if let Some(needle) = &needle {
                let hit = ["text", "label", "file", "url"]
                    .iter()
                    .filter_map(|field| str_field(node, field))
                    .any(|value| value.to_lowercase().contains(needle.as_str()));
                if !hit {
                    return false;
                }
            }
            if let Some((group_id, (gx, gy, gw, gh))) = group {
                if str_field(node, "id") == Some(group_id) {
                    return false;
                }
                let Some((x, y, w, h)) = node_box(node) else { return false };
                if !(x >= gx && y >= gy && x + w <= gx + gw && y + h <= gy + gh) {
                    return false;
                }
            }
            true
        })
        .map(|node| {
            let text_of = |field: &str| str_field(node, field).map(str::to_string);
            let id = match node.get("id") {
                None => String::new(),
                Some(Value::String(id)) => id.clone(),
                Some(other) => other.to_string(),
            };
            NodeMatch {
                id,
                kind: str_field(node, "type").unwrap_or_default().to_string(),
                text: text_of("text"),
                file: text_of("file"),
                url: text_of("url"),
                label: text_of("label"),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const SAMPLE: &str = include_str!("../../../corpus/jsoncanvas/sample.canvas");

    fn obj(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    fn canvas(nodes: Value, edges: Value) -> Canvas {
        parse(&json!({ "nodes": nodes, "edges": edges }).to_string()).unwrap()
    }

    fn text_node(id: &str, x: i64, y: i64) -> Value {
        json!({"id": id, "type": "text", "text": id, "x": x, "y": y, "width": 100, "height": 50})
    }

    fn edge(id: &str, from: &str, to: &str) -> Value {
        json!({"id": id, "fromNode": from, "toNode": to})
    }

    fn field(err: &ToolError) -> &str {
        err.details.get("field").and_then(Value::as_str).unwrap_or_default()
    }

    #[test]
    fn sample_parses_validates_and_round_trips() {
        let canvas = parse(SAMPLE).unwrap();
        assert_eq!(canvas.nodes.len(), 5);
        assert_eq!(canvas.edges.len(), 1);
        assert!(canvas.extra.is_empty());
        assert_eq!(validate(&canvas), Vec::<Problem>::new());
        assert_eq!(canvas.style(), Style::Obsidian);
        assert_eq!(render(&canvas), SAMPLE);
    }

    #[test]
    fn round_trips_every_style_byte_for_byte() {
        // Keys out of alphabetical order at every depth, an extra top-level key, a float, a
        // non-ASCII string and escapes.
        let obsidian = "{\n\t\"nodes\":[\n\t\t{\"id\":\"b\",\"type\":\"text\",\"text\":\"é \\\"q\\\"\\n\\t\",\"x\":-1,\"y\":2.5,\"width\":10,\"height\":20,\"zz\":{\"b\":1,\"a\":[{\"y\":1,\"x\":2}]}}\n\t],\n\t\"edges\":[],\n\t\"metadata\":{\n\t\t\"version\":\"1.0-1.0\",\n\t\t\"frontmatter\":{}\n\t}\n}";
        let pretty = "{\n\t\"nodes\": [\n\t\t{\n\t\t\t\"type\": \"text\",\n\t\t\t\"id\": \"b\",\n\t\t\t\"text\": \"t\",\n\t\t\t\"x\": 0,\n\t\t\t\"y\": 0,\n\t\t\t\"width\": 10,\n\t\t\t\"height\": 20,\n\t\t\t\"tags\": [\n\t\t\t\t\"b\",\n\t\t\t\t\"a\"\n\t\t\t]\n\t\t}\n\t],\n\t\"edges\": []\n}\n";
        let tight = pretty.replace("\": ", "\":");
        let compact = "{\"edges\":[],\"nodes\":[{\"y\":0,\"x\":0,\"id\":\"b\",\"type\":\"group\",\"width\":1,\"height\":1}],\"z\":null}";
        for (text, style) in [
            (obsidian, Style::Obsidian),
            (pretty, Style::Pretty),
            (tight.as_str(), Style::PrettyTight),
            (compact, Style::Compact),
        ] {
            let canvas = parse(text).unwrap();
            assert_eq!(canvas.style(), style, "{text}");
            assert_eq!(render(&canvas), text);
        }
        // A byte order mark and a final line break come back too.
        let with_bom = format!("\u{feff}{SAMPLE}\n");
        assert_eq!(render(&parse(&with_bom).unwrap()), with_bom);
        // Missing arrays stay missing until something is put in them.
        assert_eq!(render(&parse("{}").unwrap()), "{}");
        let mut empty = parse("{\n\t\"x\":1\n}").unwrap();
        empty.nodes.push(obj(text_node("a", 0, 0)));
        assert_eq!(
            render(&empty),
            "{\n\t\"nodes\":[\n\t\t{\"id\":\"a\",\"type\":\"text\",\"text\":\"a\",\"x\":0,\"y\":0,\"width\":100,\"height\":50}\n\t],\n\t\"x\":1\n}"
        );
    }

    #[test]
    fn other_layouts_are_rewritten_in_a_known_style() {
        let canvas = parse("{ \"nodes\" : [ ] ,\n \"edges\": [] }").unwrap();
        assert_eq!(canvas.style(), Style::Pretty);
        assert_eq!(render(&canvas), "{\n\t\"nodes\": [],\n\t\"edges\": []\n}");
        let mut canvas = parse(SAMPLE).unwrap();
        canvas.set_style(Style::Compact);
        assert!(!render(&canvas).contains('\n'));
        assert_eq!(parse(&render(&canvas)).unwrap(), parse(SAMPLE).unwrap());
    }

    #[test]
    fn parse_refuses_what_is_not_a_canvas() {
        for (text, says) in [
            ("{\"nodes\": [", "not valid JSON"),
            ("not json", "not valid JSON"),
            ("[1, 2]", "an array, not a JSON object"),
            ("\"x\"", "a string, not a JSON object"),
            ("{\"nodes\": {}}", "nodes is an object, not an array"),
            ("{\"nodes\": null}", "nodes is null, not an array"),
            ("{\"edges\": 3}", "edges is the integer 3, not an array"),
            ("{\"nodes\": [{}, 7]}", "nodes[1] is the integer 7, not an object"),
            ("{\"edges\": [\"e\"]}", "edges[0] is a string, not an object"),
        ] {
            let err = parse(text).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidInput);
            assert!(err.message.contains(says), "{text}: {}", err.message);
            assert_eq!(field(&err), "path");
        }
        // Missing arrays are empty, and so is a blank file (a new canvas in Obsidian).
        let canvas = parse("{\"other\": 1}").unwrap();
        assert!(canvas.nodes.is_empty() && canvas.edges.is_empty());
        assert_eq!(canvas.extra, vec![("other".to_string(), json!(1))]);
        assert_eq!(parse("  \n").unwrap(), Canvas::default());
        // Deep nesting is refused, not a stack overflow.
        let deep = format!("{{\"nodes\":[{{\"x\":{}1{}}}]}}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(parse(&deep).is_err());
    }

    /// The problems of a canvas holding `node` (beside a valid node `ok`) and `edge`.
    fn problems_of(node: Value, edges: Value) -> Vec<Problem> {
        validate(&canvas(json!([text_node("ok", 0, 0), node]), edges))
    }

    #[test]
    fn every_node_rule_has_a_failing_example() {
        let base = |extra: Value| {
            let mut node =
                obj(json!({"id": "n", "type": "text", "text": "t", "x": 0, "y": 0, "width": 1, "height": 1}));
            for (k, v) in obj(extra) {
                if v.is_null() {
                    node.remove(&k);
                } else {
                    node.insert(k, v);
                }
            }
            Value::Object(node)
        };
        let cases: Vec<(Value, &str, &str)> = vec![
            (base(json!({"id": null})), "nodes[1].id", "needs an id"),
            (base(json!({"id": ""})), "nodes[1].id", "empty"),
            (base(json!({"id": 5})), "nodes[1].id", "must be a string"),
            (base(json!({"id": "ok"})), "nodes[1].id", "already used by nodes[0]"),
            (base(json!({"type": null})), "nodes[1].type", "needs a type"),
            (base(json!({"type": "image"})), "nodes[1].type", "unknown node type \"image\""),
            (base(json!({"type": 1})), "nodes[1].type", "must be a string"),
            (base(json!({"x": null})), "nodes[1].x", "needs x"),
            (base(json!({"y": "3"})), "nodes[1].y", "must be an integer, not a string"),
            (base(json!({"width": 1.5})), "nodes[1].width", "must be an integer, not the number 1.5"),
            (base(json!({"height": null})), "nodes[1].height", "needs height"),
            (base(json!({"color": "7"})), "nodes[1].color", "not a canvas color"),
            (base(json!({"color": "#12345"})), "nodes[1].color", "not a canvas color"),
            (base(json!({"color": "#GGG"})), "nodes[1].color", "not a canvas color"),
            (base(json!({"color": "red"})), "nodes[1].color", "not a canvas color"),
            (base(json!({"color": 1})), "nodes[1].color", "must be a string"),
            (base(json!({"text": null})), "nodes[1].text", "a text node needs text"),
            (base(json!({"text": ["a"]})), "nodes[1].text", "must be a string, not an array"),
            (base(json!({"type": "file", "text": null})), "nodes[1].file", "a file node needs file"),
            (base(json!({"type": "file", "file": ""})), "nodes[1].file", "empty"),
            (base(json!({"type": "file", "file": 3})), "nodes[1].file", "must be a string"),
            (
                base(json!({"type": "file", "file": "a.md", "subpath": "Heading"})),
                "nodes[1].subpath",
                "does not start with #",
            ),
            (base(json!({"type": "file", "file": "a.md", "subpath": true})), "nodes[1].subpath", "must be a string"),
            (base(json!({"type": "link"})), "nodes[1].url", "a link node needs url"),
            (base(json!({"type": "link", "url": {}})), "nodes[1].url", "must be a string"),
            (base(json!({"type": "group", "label": 1})), "nodes[1].label", "must be a string"),
            (base(json!({"type": "group", "background": false})), "nodes[1].background", "must be a string"),
            (
                base(json!({"type": "group", "backgroundStyle": "tile"})),
                "nodes[1].backgroundStyle",
                "not a valid backgroundStyle",
            ),
        ];
        for (node, at, says) in cases {
            let problems = problems_of(node.clone(), json!([]));
            assert_eq!(problems.len(), 1, "{node}: {problems:?}");
            assert_eq!(problems[0].at, at, "{node}");
            assert!(problems[0].message.contains(says), "{node}: {}", problems[0].message);
        }
        // What passes: presets, short and long hex of either case, integral floats, empty text,
        // every group option, and keys the spec does not name.
        for node in [
            base(json!({"color": "6"})),
            base(json!({"color": "#aBc"})),
            base(json!({"color": "#FF0000"})),
            base(json!({"x": 3.0, "y": -7, "text": ""})),
            base(json!({"type": "file", "file": "a.md", "subpath": "#^block", "text": null})),
            base(json!({"type": "link", "url": "https://example.com", "text": null})),
            base(json!({"type": "group", "label": "L", "background": "bg.png", "backgroundStyle": "ratio"})),
            base(json!({"type": "group", "text": null, "styleAttributes": {}})),
        ] {
            assert_eq!(problems_of(node.clone(), json!([])), Vec::<Problem>::new(), "{node}");
        }
    }

    #[test]
    fn every_edge_rule_has_a_failing_example() {
        let nodes = json!([text_node("a", 0, 0), text_node("b", 200, 0)]);
        let base = |extra: Value| {
            let mut e = obj(json!({"id": "e", "fromNode": "a", "toNode": "b"}));
            for (k, v) in obj(extra) {
                if v.is_null() {
                    e.remove(&k);
                } else {
                    e.insert(k, v);
                }
            }
            Value::Object(e)
        };
        let cases: Vec<(Value, &str, &str)> = vec![
            (base(json!({"id": null})), "edges[0].id", "an edge needs an id"),
            (base(json!({"id": ""})), "edges[0].id", "empty"),
            (base(json!({"id": []})), "edges[0].id", "must be a string"),
            (base(json!({"id": "a"})), "edges[0].id", "already used by nodes[0]"),
            (base(json!({"fromNode": null})), "edges[0].fromNode", "needs fromNode"),
            (base(json!({"fromNode": "ghost"})), "edges[0].fromNode", "names no node"),
            (base(json!({"toNode": null})), "edges[0].toNode", "needs toNode"),
            (base(json!({"toNode": 1})), "edges[0].toNode", "must be a string"),
            (base(json!({"fromSide": "up"})), "edges[0].fromSide", "not a valid fromSide"),
            (base(json!({"toSide": 0})), "edges[0].toSide", "must be a string"),
            (base(json!({"fromEnd": "circle"})), "edges[0].fromEnd", "not a valid fromEnd"),
            (base(json!({"toEnd": "Arrow"})), "edges[0].toEnd", "not a valid toEnd"),
            (base(json!({"label": 2})), "edges[0].label", "must be a string"),
            (base(json!({"color": "0"})), "edges[0].color", "not a canvas color"),
        ];
        for (e, at, says) in cases {
            let problems = validate(&canvas(nodes.clone(), json!([e.clone()])));
            assert_eq!(problems.len(), 1, "{e}: {problems:?}");
            assert_eq!(problems[0].at, at, "{e}");
            assert!(problems[0].message.contains(says), "{e}: {}", problems[0].message);
        }
        let full = base(
            json!({"fromSide": "top", "toSide": "left", "fromEnd": "arrow", "toEnd": "none", "label": "x", "color": "#000"}),
        );
        assert!(validate(&canvas(nodes.clone(), json!([full]))).is_empty());
        // Two edges sharing an id.
        let problems = validate(&canvas(nodes, json!([edge("e", "a", "b"), edge("e", "b", "a")])));
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].at, "edges[1].id");
    }

    fn ids(items: &[Map<String, Value>]) -> Vec<&str> {
        items.iter().filter_map(|i| i.get("id").and_then(Value::as_str)).collect()
    }

    #[test]
    fn apply_adds_removes_and_updates() {
        let start = parse(SAMPLE).unwrap();
        let update = Update {
            add_nodes: vec![
                obj(json!({"type": "text", "text": "new", "x": 0, "y": 600, "width": 200, "height": 60})),
                obj(json!({"type": "text", "text": "new", "x": 0, "y": 600, "width": 200, "height": 60})),
            ],
            add_edges: vec![obj(
                json!({"fromNode": "8132d4d894c80022", "toNode": "0ba565e7f30e0652", "toEnd": "arrow"}),
            )],
            remove_node_ids: vec!["7efdbbe0c4742315".into()],
            remove_edge_ids: vec![],
            update_nodes: vec![obj(json!({"id": "8132d4d894c80022", "color": null, "width": 600}))],
            update_edges: vec![],
        };
        let applied = apply(start.clone(), &update).unwrap();
        assert_eq!(
            (applied.nodes_added, applied.edges_added, applied.nodes_removed, applied.edges_removed),
            (2, 1, 1, 0)
        );
        assert_eq!((applied.nodes_updated, applied.edges_updated, applied.edges_removed_with_nodes), (1, 0, 1));
        let canvas = &applied.canvas;
        assert!(validate(canvas).is_empty());
        assert_eq!(canvas.nodes.len(), 6);
        // The only edge touched the removed node, so it went with it; the added one is there.
        assert_eq!(canvas.edges.len(), 1);
        assert_eq!(canvas.edges[0]["fromNode"], "8132d4d894c80022");
        let updated = canvas.nodes.iter().find(|n| n["id"] == "8132d4d894c80022").unwrap();
        assert_eq!(updated.get("color"), None);
        assert_eq!(updated["width"], 600);
        // Fresh ids: 16 hex digits, distinct (even for identical content), deterministic.
        let all: Vec<&str> = ids(&canvas.nodes).into_iter().chain(ids(&canvas.edges)).collect();
        let unique: HashSet<&str> = all.iter().copied().collect();
        assert_eq!(unique.len(), all.len());
        for id in &all[4..] {
            assert!(id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()), "{id}");
        }
        assert_eq!(apply(start, &update).unwrap().canvas, applied.canvas);
        // Untouched nodes keep their lines; new ones get Obsidian's key order.
        let text = render(canvas);
        assert!(text.contains(SAMPLE.lines().nth(2).unwrap()));
        assert!(text.contains(SAMPLE.lines().nth(5).unwrap()));
        assert!(text.contains("{\"id\":\"8132d4d894c80022\",\"type\":\"file\",\"file\":\"readme.md\",\"x\":-280,\"y\":-200,\"width\":600,\"height\":560},"));
        let new_id = all[4];
        assert!(text.contains(&format!(
            "{{\"id\":\"{new_id}\",\"type\":\"text\",\"text\":\"new\",\"x\":0,\"y\":600,\"width\":200,\"height\":60}}"
        )));
        // An empty update changes nothing.
        let same = apply(parse(SAMPLE).unwrap(), &Update::default()).unwrap();
        assert_eq!(render(&same.canvas), SAMPLE);
    }

    #[test]
    fn apply_counts_explicit_and_cascaded_edge_removals_apart() {
        let start = canvas(
            json!([text_node("a", 0, 0), text_node("b", 200, 0), text_node("c", 400, 0)]),
            json!([edge("ab", "a", "b"), edge("bc", "b", "c"), edge("ca", "c", "a")]),
        );
        let update = Update {
            remove_node_ids: vec!["b".into()],
            remove_edge_ids: vec!["ab".into()],
            update_edges: vec![obj(json!({"id": "ca", "label": "back", "toEnd": "none"}))],
            ..Update::default()
        };
        let applied = apply(start, &update).unwrap();
        assert_eq!((applied.edges_removed, applied.edges_removed_with_nodes, applied.edges_updated), (1, 1, 1));
        assert_eq!(ids(&applied.canvas.nodes), ["a", "c"]);
        assert_eq!(ids(&applied.canvas.edges), ["ca"]);
        assert_eq!(applied.canvas.edges[0]["label"], "back");
    }

    #[test]
    fn apply_refuses_unknown_ids() {
        let start = parse(SAMPLE).unwrap();
        let cases = [
            (Update { remove_node_ids: vec!["nope".into()], ..Update::default() }, "remove_node_ids"),
            (Update { remove_edge_ids: vec!["nope".into()], ..Update::default() }, "remove_edge_ids"),
            (Update { update_nodes: vec![obj(json!({"id": "nope", "x": 1}))], ..Update::default() }, "update_nodes"),
            (Update { update_edges: vec![obj(json!({"id": "nope"}))], ..Update::default() }, "update_edges"),
        ];
        for (update, name) in cases {
            let err = apply(start.clone(), &update).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidInput);
            assert_eq!(field(&err), name);
            assert_eq!(err.details["id"], "nope");
            assert!(err.message.contains("\"nope\""));
        }
        let err = apply(start, &Update { update_nodes: vec![obj(json!({"x": 1}))], ..Update::default() }).unwrap_err();
        assert_eq!(field(&err), "update_nodes");
    }

    #[test]
    fn apply_refuses_new_problems_and_tolerates_old_ones() {
        let start = parse(SAMPLE).unwrap();
        // An edge to a node that does not exist, and a bad color.
        let update = Update {
            add_edges: vec![obj(json!({"fromNode": "8132d4d894c80022", "toNode": "ghost"}))],
            update_nodes: vec![obj(json!({"id": "0ba565e7f30e0652", "color": "purple"}))],
            ..Update::default()
        };
        let err = apply(start.clone(), &update).unwrap_err();
        assert_eq!(field(&err), "canvas");
        assert_eq!(err.details["problem_count"], 2);
        let problems = err.details["problems"].as_array().unwrap();
        assert_eq!(problems[0]["at"], "nodes[4].color");
        assert_eq!(problems[1]["at"], "edges[1].toNode");
        // Adding a node whose id an edge already uses is a new problem too.
        let dup = Update { add_nodes: vec![obj(text_node("6fa11ab87f90b8af", 0, 900))], ..Update::default() };
        assert!(apply(start, &dup).is_err());

        // A file that already breaks rules: a node without an id, a float width, a dangling
        // edge. Unrelated edits (removing a node before them shifts their indices) pass.
        let broken = canvas(
            json!([
                text_node("first", 0, 0),
                {"type": "text", "text": "no id", "x": 0, "y": 0, "width": 1, "height": 1},
                {"id": "wide", "type": "text", "text": "w", "x": 0, "y": 0, "width": 1.5, "height": 1}
            ]),
            json!([edge("dangling", "wide", "gone")]),
        );
        assert_eq!(validate(&broken).len(), 3);
        let edit = Update {
            remove_node_ids: vec!["first".into()],
            update_nodes: vec![obj(json!({"id": "wide", "text": "still wide"}))],
            add_nodes: vec![obj(text_node("fresh", 500, 500))],
            ..Update::default()
        };
        let applied = apply(broken.clone(), &edit).unwrap();
        assert_eq!(validate(&applied.canvas).len(), 3);
        // ... but a second dangling edge is new.
        let more = Update { add_edges: vec![obj(edge("e2", "wide", "gone"))], ..Update::default() };
        let err = apply(broken, &more).unwrap_err();
        assert_eq!(err.details["problems"][0]["at"], "edges[1].toNode");
    }

    #[test]
    fn new_canvas_fills_ids_and_checks_strictly() {
        let (made, node_ids, edge_ids) = new_canvas(
            vec![
                obj(json!({"type": "text", "text": "a", "x": 0, "y": 0, "width": 1, "height": 1})),
                obj(text_node("b", 5, 5)),
            ],
            vec![obj(json!({"fromNode": "b", "toNode": "b"}))],
        )
        .unwrap();
        assert_eq!((node_ids, edge_ids), (1, 1));
        assert!(validate(&made).is_empty());
        assert_eq!(made.style(), Style::Obsidian);
        let text = render(&made);
        assert!(text.starts_with("{\n\t\"nodes\":[\n\t\t{\"id\":\"") && text.ends_with("\n\t]\n}"));
        assert_eq!(parse(&text).unwrap(), made);

        let err = new_canvas(vec![obj(json!({"type": "text", "x": 0, "y": 0, "width": 1, "height": 1}))], vec![])
            .unwrap_err();
        assert_eq!(field(&err), "nodes");
        assert_eq!(err.details["problems"][0]["at"], "nodes[0].text");
        let err = new_canvas(vec![obj(text_node("a", 0, 0))], vec![obj(json!({"fromNode": "a", "toNode": "z"}))])
            .unwrap_err();
        assert_eq!(field(&err), "edges");
        let (empty, 0, 0) = new_canvas(vec![], vec![]).unwrap() else { panic!("ids made for nothing") };
        assert_eq!(render(&empty), "{\n\t\"nodes\":[],\n\t\"edges\":[]\n}");
    }

    #[test]
    fn links_from_file_and_text_nodes() {
        let c = canvas(
            json!([
                {"id": "f1", "type": "file", "file": "Notes/A.md", "subpath": "#Intro", "x": 0, "y": 0, "width": 1, "height": 1},
                {"id": "f2", "type": "file", "file": "Notes/A.md#Other", "x": 0, "y": 0, "width": 1, "height": 1},
                {"id": "f3", "type": "file", "file": "img/b.png", "x": 0, "y": 0, "width": 1, "height": 1},
                {"id": "t", "type": "text", "text": "See [[C#Part|see C]] and [D](docs/D.md).", "x": 0, "y": 0, "width": 1, "height": 1},
                {"id": "l", "type": "link", "url": "https://example.com", "x": 0, "y": 0, "width": 1, "height": 1}
            ]),
            json!([]),
        );
        let found = links(&c);
        assert_eq!(found.files, ["Notes/A.md", "img/b.png"]);
        let targets: Vec<(&str, bool)> = found.text_links.iter().map(|l| (l.target.as_str(), l.wiki)).collect();
        assert_eq!(targets, [("C", true), ("docs/D.md", false)]);
        let sample = links(&parse(SAMPLE).unwrap());
        assert_eq!(sample.files, ["readme.md", "_site/logo.svg", "spec/1.0.md"]);
        // The external URL is no link to a file.
        let targets: Vec<&str> = sample.text_links.iter().map(|l| l.target.as_str()).collect();
        assert_eq!(targets, ["/docs/apps.md", "spec/1.0.md"]);
    }

    #[test]
    fn query_filters() {
        let c = parse(SAMPLE).unwrap();
        let found = |filter: Filter| query(&c, &filter).into_iter().map(|m| m.id).collect::<Vec<_>>();
        assert_eq!(found(Filter::default()).len(), 5);
        assert_eq!(found(Filter { kind: Some("file".into()), ..Filter::default() }).len(), 3);
        assert_eq!(found(Filter { text: Some("GITHUB".into()), ..Filter::default() }), ["59e896bc8da20699"]);
        assert_eq!(found(Filter { text: Some("json canvas".into()), ..Filter::default() }), ["754a8ef995f366bc"]);
        assert_eq!(found(Filter { text: Some("logo".into()), ..Filter::default() }), ["7efdbbe0c4742315"]);
        assert_eq!(found(Filter { color: Some("6".into()), ..Filter::default() }), ["8132d4d894c80022"]);
        assert_eq!(found(Filter { file: Some("spec/1.0.md".into()), ..Filter::default() }), ["0ba565e7f30e0652"]);
        assert!(found(Filter { file: Some("spec".into()), ..Filter::default() }).is_empty());
        // The group spans x -300..310, y -460..-260: the logo and the text node lie inside.
        let inside = found(Filter { in_group: Some("754a8ef995f366bc".into()), ..Filter::default() });
        assert_eq!(inside, ["7efdbbe0c4742315", "59e896bc8da20699"]);
        let both = Filter { in_group: Some("754a8ef995f366bc".into()), kind: Some("text".into()), ..Filter::default() };
        assert_eq!(found(both), ["59e896bc8da20699"]);
        assert!(found(Filter { in_group: Some("8132d4d894c80022".into()), ..Filter::default() }).is_empty());
        assert!(found(Filter { in_group: Some("nope".into()), ..Filter::default() }).is_empty());
        let m = &query(&c, &Filter { kind: Some("group".into()), ..Filter::default() })[0];
        assert_eq!((m.kind.as_str(), m.label.as_deref(), m.text.as_deref()), ("group", Some("JSON Canvas"), None));
        let filter: Filter = serde_json::from_value(json!({"type": "file", "text": "read"})).unwrap();
        assert_eq!(found(filter), ["8132d4d894c80022"]);
    }

    #[test]
    fn odd_input_never_panics() {
        let texts = [
            "{\"nodes\":[{}],\"edges\":[{}]}",
            "{\"nodes\":[{\"id\":{},\"type\":[],\"x\":1e400}],\"edges\":[{\"id\":null,\"fromNode\":{}}]}",
            "{\"nodes\":[{\"id\":\"a\",\"id\":\"b\",\"x\":1,\"x\":2}],\"nodes\":[{\"id\":\"c\"}]}",
            "{\"nodes\":[{\"id\":\"g\",\"type\":\"group\",\"x\":1e308,\"y\":-1e308,\"width\":1e308,\"height\":1e308}]}",
            "{\"nodes\":[{\"id\":\"x\",\"type\":\"text\",\"text\":\"---\\na: [[b\\n---\\n[[\"}]}",
        ];
        for text in texts {
            let Ok(c) = parse(text) else { continue };
            let _ = validate(&c);
            let out = render(&c);
            assert_eq!(parse(&out).unwrap(), c, "{text}");
            let _ = links(&c);
            let _ = query(&c, &Filter { in_group: Some("g".into()), text: Some("X".into()), ..Filter::default() });
            let update = Update { add_nodes: vec![Map::new()], add_edges: vec![Map::new()], ..Update::default() };
            let _ = apply(c, &update);
        }
        // Repeated keys: the last value wins, written once.
        let c = parse("{\"nodes\":[{\"id\":\"a\",\"id\":\"b\"}],\"nodes\":[{\"id\":\"c\",\"x\":1}]}").unwrap();
        assert_eq!(ids(&c.nodes), ["c"]);
        assert_eq!(render(&c), "{\"nodes\":[{\"id\":\"c\",\"x\":1}]}");
    }
}
