//! Loading a `.base` file: the YAML document as an ordered tree that remembers how each scalar
//! (and key) was written, with the byte ranges of the top-level sections, within the limits on
//! depth, size, anchors and documents.

use std::collections::HashMap;
use std::ops::Range;

use serde_json::{Number, Value};
use yaml_rust2::Yaml;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use super::{MAX_YAML_DEPTH, MAX_YAML_NODES};

/// How a scalar was written.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Style {
    /// Not read from a file: the writer chooses.
    New,
    /// Plain, with its text.
    Plain(String),
    Single,
    Double,
    Literal,
    Folded,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Scalar {
    /// Null, a boolean, a number or a string.
    pub(super) value: Value,
    pub(super) style: Style,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Key {
    pub(super) name: String,
    pub(super) style: Style,
}

impl Key {
    pub(super) fn new(name: &str) -> Self {
        Key { name: name.to_string(), style: Style::New }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Node {
    Scalar(Scalar),
    Seq(Vec<Node>),
    Map(Vec<(Key, Node)>),
}

impl Node {
    pub(super) fn new_scalar(value: Value) -> Self {
        Node::Scalar(Scalar { value, style: Style::New })
    }

    pub(super) fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Map(entries) => entries.iter().find(|(k, _)| k.name == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub(super) fn depth(&self) -> usize {
        match self {
            Node::Scalar(_) => 1,
            Node::Seq(items) => 1 + items.iter().map(Node::depth).max().unwrap_or(0),
            Node::Map(entries) => 1 + entries.iter().map(|(_, v)| v.depth()).max().unwrap_or(0),
        }
    }

    fn count(&self) -> usize {
        match self {
            Node::Scalar(_) => 1,
            Node::Seq(items) => 1 + items.iter().map(Node::count).sum::<usize>(),
            Node::Map(entries) => 1 + entries.iter().map(|(_, v)| 1 + v.count()).sum::<usize>(),
        }
    }

    pub(super) fn to_json(&self) -> Value {
        match self {
            Node::Scalar(s) => s.value.clone(),
            Node::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Node::Map(entries) => Value::Object(entries.iter().map(|(k, v)| (k.name.clone(), v.to_json())).collect()),
        }
    }

    /// The text of a scalar (a number or boolean as written); `None` for null and collections.
    pub(super) fn text(&self) -> Option<String> {
        match self {
            Node::Scalar(Scalar { value: Value::String(s), .. }) => Some(s.clone()),
            Node::Scalar(Scalar { value: Value::Null, .. }) => None,
            Node::Scalar(Scalar { style: Style::Plain(src), .. }) => Some(src.clone()),
            Node::Scalar(Scalar { value, .. }) => Some(value.to_string()),
            _ => None,
        }
    }

    pub(super) fn is_null(&self) -> bool {
        matches!(self, Node::Scalar(Scalar { value: Value::Null, .. }))
    }
}

/// Same content and order, however the scalars are quoted.
pub(super) fn same(a: &Node, b: &Node) -> bool {
    match (a, b) {
        (Node::Scalar(x), Node::Scalar(y)) => x.value == y.value,
        (Node::Seq(x), Node::Seq(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b)),
        (Node::Map(x), Node::Map(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((ka, va), (kb, vb))| ka.name == kb.name && same(va, vb))
        }
        _ => false,
    }
}

/// A file as read: its text, its tree and where each top-level key's lines are.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Source {
    pub(super) text: String,
    pub(super) root: Node,
    /// The bytes before the first top-level key, and each top-level key's byte range (its lines
    /// up to the next key's); `None` when the top level is not a plain block mapping.
    pub(super) regions: Option<(usize, Vec<Range<usize>>)>,
}

enum Frame {
    Seq { items: Vec<Node>, anchor: usize },
    Map { entries: Vec<(Key, Node)>, key: Option<Key>, anchor: usize },
}

#[derive(Default)]
struct Loader {
    stack: Vec<Frame>,
    root: Option<Node>,
    anchors: HashMap<usize, Node>,
    documents: usize,
    nodes: usize,
    error: Option<String>,
    /// Line (1-based) and column (0-based) of each top-level key.
    root_keys: Vec<(usize, usize)>,
}

impl Loader {
    fn fail(&mut self, message: impl Into<String>, mark: Marker) {
        if self.error.is_none() {
            self.error = Some(format!("{} (line {}, column {})", message.into(), mark.line(), mark.col() + 1));
        }
    }

    fn open(&mut self, frame: Frame, mark: Marker) {
        if self.stack.len() >= MAX_YAML_DEPTH {
            self.fail(format!("the YAML is nested deeper than {MAX_YAML_DEPTH} levels"), mark);
        } else {
            self.stack.push(frame);
        }
    }

    fn add(&mut self, node: Node, anchor: usize, mark: Marker) {
        self.nodes += 1;
        if self.nodes > MAX_YAML_NODES {
            return self.fail(format!("the YAML has more than {MAX_YAML_NODES} values"), mark);
        }
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        let depth = self.stack.len();
        match self.stack.last_mut() {
            None => {
                if self.root.is_none() {
                    self.root = Some(node);
                }
            }
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map { entries, key, .. }) => match key.take() {
                Some(k) => entries.push((k, node)),
                None => {
                    let Node::Scalar(scalar) = node else {
                        return self.fail("a mapping key must be a single value, not a list or mapping", mark);
                    };
                    let name = match (&scalar.value, &scalar.style) {
                        (Value::String(s), _) => s.clone(),
                        (_, Style::Plain(src)) => src.clone(),
                        (value, _) => value.to_string(),
                    };
                    if entries.iter().any(|(k, _)| k.name == name) {
                        return self.fail(format!("the key {name:?} appears twice in one mapping"), mark);
                    }
                    if depth == 1 {
                        self.root_keys.push((mark.line(), mark.col()));
                    }
                    *key = Some(Key { name, style: scalar.style });
                }
            },
        }
    }
}

impl MarkedEventReceiver for Loader {
    fn on_event(&mut self, event: Event, mark: Marker) {
        if self.error.is_some() {
            return;
        }
        match event {
            Event::DocumentStart => {
                self.documents += 1;
                if self.documents > 1 {
                    self.fail("a .base file holds one YAML document, this one has more", mark);
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                let is_str = tag.as_ref().is_some_and(|t| t.suffix == "str" || t.suffix.ends_with(":str"));
                let node = Node::Scalar(match style {
                    TScalarStyle::SingleQuoted => Scalar { value: Value::String(text), style: Style::Single },
                    TScalarStyle::DoubleQuoted => Scalar { value: Value::String(text), style: Style::Double },
                    TScalarStyle::Literal => Scalar { value: Value::String(text), style: Style::Literal },
                    TScalarStyle::Folded => Scalar { value: Value::String(text), style: Style::Folded },
                    _ => Scalar {
                        value: if is_str { Value::String(text.clone()) } else { resolve_plain(&text) },
                        style: Style::Plain(text),
                    },
                });
                self.add(node, anchor, mark);
            }
            Event::SequenceStart(anchor, _) => self.open(Frame::Seq { items: Vec::new(), anchor }, mark),
            Event::MappingStart(anchor, _) => self.open(Frame::Map { entries: Vec::new(), key: None, anchor }, mark),
            Event::SequenceEnd | Event::MappingEnd => match self.stack.pop() {
                Some(Frame::Seq { items, anchor }) => self.add(Node::Seq(items), anchor, mark),
                Some(Frame::Map { entries, anchor, .. }) => self.add(Node::Map(entries), anchor, mark),
                None => {}
            },
            Event::Alias(id) => match self.anchors.get(&id) {
                Some(node) if self.stack.len() + node.depth() > MAX_YAML_DEPTH => {
                    self.fail(format!("the YAML is nested deeper than {MAX_YAML_DEPTH} levels"), mark)
                }
                Some(node) => {
                    let node = node.clone();
                    self.nodes += node.count().saturating_sub(1);
                    self.add(node, 0, mark);
                }
                None => self.fail("an alias refers to no anchor", mark),
            },
            _ => {}
        }
    }
}

/// A plain scalar as YAML's core schema reads it.
fn resolve_plain(text: &str) -> Value {
    match Yaml::from_str(text) {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Integer(i) => Value::Number(i.into()),
        Yaml::Real(r) => {
            r.parse::<f64>().ok().and_then(Number::from_f64).map(Value::Number).unwrap_or(Value::String(r))
        }
        _ => Value::String(text.to_string()),
    }
}

pub(super) fn load(text: &str) -> Result<Source, String> {
    let mut loader = Loader::default();
    let mut parser = Parser::new_from_str(text);
    if let Err(e) = parser.load(&mut loader, true) {
        return Err(format!(
            "the .base file is not valid YAML: {} (line {}, column {})",
            e.info(),
            e.marker().line(),
            e.marker().col() + 1
        ));
    }
    if let Some(error) = loader.error {
        return Err(format!("the .base file cannot be read: {error}"));
    }
    let root = match loader.root {
        None | Some(Node::Scalar(Scalar { value: Value::Null, .. })) => Node::Map(Vec::new()),
        Some(root @ Node::Map(_)) => root,
        Some(_) => {
            return Err(
                "the top level of a .base file must be a mapping (filters, formulas, properties, views)".to_string()
            );
        }
    };
    let regions = regions(text, &loader.root_keys);
    Ok(Source { text: text.to_string(), root, regions })
}

/// Where each top-level key's lines are, when every key starts a line at column 0.
fn regions(text: &str, keys: &[(usize, usize)]) -> Option<(usize, Vec<Range<usize>>)> {
    if text.lines().any(|l| l.trim_end() == "...") {
        return None;
    }
    let mut starts = vec![0];
    starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
    let mut offsets = Vec::with_capacity(keys.len());
    for (line, col) in keys {
        let start = *starts.get(line.checked_sub(1)?)?;
        if *col != 0 || offsets.last().is_some_and(|last| *last >= start) {
            return None;
        }
        offsets.push(start);
    }
    let first = offsets.first().copied().unwrap_or(text.len());
    let ranges =
        offsets.iter().enumerate().map(|(i, s)| *s..offsets.get(i + 1).copied().unwrap_or(text.len())).collect();
    Some((first, ranges))
}
