//! The YAML frontmatter: its properties as JSON, the tags and aliases it declares, and the
//! wikilinks in its string values (property links, Obsidian 1.4+: a quoted `"[[X]]"` is a string
//! and counts; an unquoted `[[X]]` is a nested YAML list and does not).

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;
use yaml_rust2::{Yaml, YamlLoader};

use crate::{Frontmatter, Lines, Link, LinkKind, split_wikilink};

pub struct Found {
    pub frontmatter: Frontmatter,
    pub body_start: usize,
    pub links: Vec<Link>,
    pub tags: Vec<String>,
    pub aliases: Vec<String>,
}

/// The frontmatter block, if the note starts with one: `---` on the first line, closed by a
/// line holding `---` or `...`.
pub fn parse(text: &str, lines: &Lines<'_>) -> Option<Found> {
    let first = lines.line_range(0);
    if &text[first.clone()] != "---" {
        return None;
    }
    let yaml_start = (first.end + 1).min(text.len());
    let mut close = None;
    for line in 1..lines.count() {
        let range = lines.line_range(line);
        let content = &text[range.clone()];
        if content == "---" || content == "..." {
            close = Some(range);
            break;
        }
    }
    let close = close?;
    let yaml = &text[yaml_start..close.start];
    let body_start = if close.end < text.len() { (close.end + 1).min(text.len()) } else { close.end };
    // Skip the line break after the closing line ("\r\n" included).
    let body_start = if text[close.end..].starts_with("\r\n") { close.end + 2 } else { body_start };
    let span = lines.span(0..close.end);

    let (value, error) = match YamlLoader::load_from_str(yaml) {
        Ok(docs) => (Some(docs.into_iter().next().map(|d| to_json(&d)).unwrap_or(Value::Object(Map::new()))), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let mut found = Found {
        frontmatter: Frontmatter { span, value: value.clone(), error: error.clone() },
        body_start,
        links: Vec::new(),
        tags: Vec::new(),
        aliases: Vec::new(),
    };
    if error.is_some() {
        // Nothing can be read from YAML that does not parse: no property links, no tags.
        return Some(found);
    }
    if let Some(Value::Object(map)) = &value {
        // Obsidian reads these keys case-insensitively (`/^tags?$/i`, `/^alias(es)?$/i`).
        for (key, v) in map {
            let key = key.to_lowercase();
            if key == "tags" || key == "tag" {
                found.tags.extend(
                    strings(v, true)
                        .into_iter()
                        .map(|t| t.trim_start_matches('#').to_string())
                        .filter(|t| !t.is_empty()),
                );
            } else if key == "aliases" || key == "alias" {
                found.aliases.extend(strings(v, false));
            }
        }
    }
    let mut walker = Walker { yaml, base: yaml_start, lines, stack: Vec::new(), links: Vec::new() };
    let mut parser = Parser::new_from_str(yaml);
    if parser.load(&mut walker, false).is_ok() {
        found.links = walker.links;
    }
    Some(found)
}

/// A tags or aliases value as a list: a YAML list, or a string (tags split on commas and
/// spaces, aliases on commas).
fn strings(value: &Value, tags: bool) -> Vec<String> {
    match value {
        Value::Array(items) => {
            items.iter().filter_map(|i| i.as_str().map(|s| s.trim().to_string())).filter(|s| !s.is_empty()).collect()
        }
        Value::String(s) => s
            .split(|c: char| c == ',' || (tags && c.is_whitespace()))
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect(),
        _ => Vec::new(),
    }
}

fn to_json(yaml: &Yaml) -> Value {
    match yaml {
        Yaml::Real(text) => text
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .unwrap_or(Value::String(text.clone())),
        Yaml::Integer(i) => Value::Number((*i).into()),
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Array(items) => Value::Array(items.iter().map(to_json).collect()),
        Yaml::Hash(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Yaml::String(s) => s.clone(),
                        Yaml::Integer(i) => i.to_string(),
                        Yaml::Real(r) => r.clone(),
                        Yaml::Boolean(b) => b.to_string(),
                        other => format!("{other:?}"),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
        Yaml::Alias(_) | Yaml::Null | Yaml::BadValue => Value::Null,
    }
}

enum Frame {
    /// A mapping: whether the next scalar is a key, and the key of the value being read.
    Map {
        expect_key: bool,
        key: Option<String>,
    },
    Seq,
}

/// Walks the YAML events, collecting wikilinks in string values with their file positions.
struct Walker<'a, 'l> {
    yaml: &'a str,
    base: usize,
    lines: &'l Lines<'l>,
    stack: Vec<Frame>,
    links: Vec<Link>,
}

impl Walker<'_, '_> {
    /// The top-level key the current value sits under.
    fn top_key(&self) -> Option<String> {
        match self.stack.first() {
            Some(Frame::Map { key, .. }) => key.clone(),
            _ => None,
        }
    }

    /// After a value (scalar or finished container), the enclosing mapping expects a key.
    fn value_done(&mut self) {
        if let Some(Frame::Map { expect_key, .. }) = self.stack.last_mut() {
            *expect_key = true;
        }
    }

    fn scalar(&mut self, value: &str, mark: Marker) {
        let depth = self.stack.len();
        if let Some(Frame::Map { expect_key, key }) = self.stack.last_mut()
            && *expect_key
        {
            *expect_key = false;
            if depth == 1 {
                *key = Some(value.to_string());
            }
            return;
        }
        // Any string value counts: a quoted or plain scalar, a list item, a nested value.
        if value.contains("[[") {
            self.collect(value, mark);
        }
        self.value_done();
    }

    fn collect(&mut self, value: &str, mark: Marker) {
        let property = self.top_key();
        // The links appear verbatim in the source from the scalar's start.
        let mut from = mark.index().min(self.yaml.len());
        let mut rest = value;
        while let Some(open) = rest.find("[[") {
            let Some(close) = rest[open + 2..].find("]]") else { break };
            let inner = &rest[open + 2..open + 2 + close];
            let raw = format!("[[{inner}]]");
            rest = &rest[open + 2 + close + 2..];
            let Some(at) = self.yaml[from..].find(&raw) else { continue };
            let start = self.base + from + at;
            from += at + raw.len();
            let (target, subpath, alias) = split_wikilink(inner);
            self.links.push(Link {
                kind: LinkKind::Property,
                wiki: true,
                raw,
                target,
                subpath,
                alias,
                span: self.lines.span(start..start + inner.len() + 4),
                property: property.clone(),
            });
        }
    }
}

impl MarkedEventReceiver for Walker<'_, '_> {
    fn on_event(&mut self, event: Event, mark: Marker) {
        match event {
            Event::MappingStart(..) => self.stack.push(Frame::Map { expect_key: true, key: None }),
            Event::SequenceStart(..) => self.stack.push(Frame::Seq),
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
                self.value_done();
            }
            Event::Scalar(value, ..) => self.scalar(&value, mark),
            Event::Alias(_) => self.value_done(),
            _ => {}
        }
    }
}
