//! The YAML frontmatter: its properties as JSON, the tags and aliases it declares, and the
//! wikilinks in its string values (property links, Obsidian 1.4+: a quoted `"[[X]]"` is a string
//! and counts; an unquoted `[[X]]` is a nested YAML list and does not).

use std::collections::HashMap;
use std::hash::BuildHasher;

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::Marker;
use yaml_rust2::{Yaml, YamlLoader};

use crate::{Cancelled, Frontmatter, Lines, Link, LinkKind, Steps, split_wikilink};

/// Collections nested deeper than this make the frontmatter an error. YAML is read recursively
/// (by the loader, into JSON, and when the values are dropped), so a few kilobytes of `- - - -`
/// would otherwise overflow a thread's stack; and JSON nested deeper than 128 could not be read
/// back (`serde_json`'s limit). Real properties nest two or three.
pub const MAX_DEPTH: usize = 100;

/// What aliases (`*name`) may add to the frontmatter, as a share of its own size: the loader
/// copies the anchored value for every alias, so a few hundred bytes of aliases of aliases
/// would otherwise expand to gigabytes ("billion laughs").
const MAX_ALIAS_EXPANSION: usize = 1;
/// ... and at least this many nodes and bytes whatever the frontmatter's size.
const MIN_ALIAS_ALLOWANCE: usize = 64 * 1024;

pub struct Found {
    pub frontmatter: Frontmatter,
    pub body_start: usize,
    pub links: Vec<Link>,
    pub tags: Vec<String>,
    pub aliases: Vec<String>,
}

/// The frontmatter block, if the note starts with one: `---` on the first line, closed by a
/// line holding `---` or `...`.
pub fn parse(text: &str, lines: &Lines<'_>, steps: &mut Steps<'_>) -> Result<Option<Found>, Cancelled> {
    let first = lines.line_range(0);
    if &text[first.clone()] != "---" {
        return Ok(None);
    }
    let yaml_start = (first.end + 1).min(text.len());
    let mut close = None;
    for line in 1..lines.count() {
        steps.tick()?;
        let range = lines.line_range(line);
        let content = &text[range.clone()];
        if content == "---" || content == "..." {
            close = Some(range);
            break;
        }
    }
    let Some(close) = close else { return Ok(None) };
    let yaml = &text[yaml_start..close.start];
    let body_start = if close.end < text.len() { (close.end + 1).min(text.len()) } else { close.end };
    // Skip the line break after the closing line ("\r\n" included).
    let body_start = if text[close.end..].starts_with("\r\n") { close.end + 2 } else { body_start };
    let span = lines.span(0..close.end);

    // One pass over the events first, without recursion: it refuses YAML nested too deep or
    // with aliases that expand too far (before the loader, which recurses and copies, sees it)
    // and collects the property links.
    let mut walker = Walker { yaml, base: yaml_start, lines, stack: Vec::new(), links: Vec::new(), candidates: None };
    let checked = walk(yaml, &mut walker, steps)?;
    let (value, error) = match checked {
        Err(Refused(why)) => (None, Some(why)),
        // The loader reads the same events and reports the same scanner error, if any.
        Ok(()) => match YamlLoader::load_from_str(yaml) {
            Ok(docs) => (Some(docs.into_iter().next().map(|d| to_json(&d)).unwrap_or(Value::Object(Map::new()))), None),
            Err(e) => (None, Some(e.to_string())),
        },
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
        return Ok(Some(found));
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
    found.links = walker.links;
    Ok(Some(found))
}

/// Why the YAML was refused before loading.
struct Refused(String);

/// Reads every event of `yaml` (every document, as the loader does) without recursion: the
/// first document's go to `walker`; collections deeper than [`MAX_DEPTH`] or aliases expanding
/// past their allowance refuse the YAML. A scanner error ends the walk as `Ok`: the loader
/// meets the same error at the same place (having nested no deeper than allowed) and reports it.
fn walk(yaml: &str, walker: &mut Walker<'_, '_>, steps: &mut Steps<'_>) -> Result<Result<(), Refused>, Cancelled> {
    let allowance = (yaml.len() * MAX_ALIAS_EXPANSION).max(MIN_ALIAS_ALLOWANCE);
    // Per open collection, its size so far (nodes plus scalar bytes) and its anchor.
    let mut open: Vec<(usize, usize)> = Vec::new();
    // The size of every anchored node, by anchor id.
    let mut anchored: HashMap<usize, usize> = HashMap::new();
    let mut expanded = 0usize;
    let mut documents = 0usize;
    let mut parser = Parser::new_from_str(yaml);
    loop {
        steps.tick()?;
        let Ok((event, mark)) = parser.next_token() else { return Ok(Ok(())) };
        // A finished node: its size and anchor.
        let done = match &event {
            Event::StreamEnd => return Ok(Ok(())),
            Event::DocumentStart => {
                documents += 1;
                None
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                open.push((1, *anchor));
                if open.len() > MAX_DEPTH {
                    return Ok(Err(Refused(format!("collections nest deeper than {MAX_DEPTH} levels"))));
                }
                None
            }
            Event::SequenceEnd | Event::MappingEnd => open.pop(),
            Event::Scalar(value, _, anchor, _) => Some((1 + value.len(), *anchor)),
            Event::Alias(id) => {
                let size = anchored.get(id).copied().unwrap_or(1);
                expanded = expanded.saturating_add(size);
                if expanded > allowance {
                    return Ok(Err(Refused(format!(
                        "aliases expand past {allowance} nodes and bytes (the frontmatter's own size)"
                    ))));
                }
                Some((size, 0))
            }
            _ => None,
        };
        if let Some((size, anchor)) = done {
            if anchor > 0 {
                anchored.insert(anchor, size);
            }
            if let Some((parent, _)) = open.last_mut() {
                *parent = parent.saturating_add(size);
            }
        }
        if documents == 1 {
            walker.on_event(event, mark);
        }
    }
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
    /// Where a link's text can stand in the source, made when the first link is met.
    candidates: Option<Candidates>,
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
        let mut from = self.yaml.floor_char_boundary(mark.index());
        let yaml = self.yaml;
        let candidates = self.candidates.get_or_insert_with(|| Candidates::new(yaml));
        let mut rest = value;
        while let Some(open) = rest.find("[[") {
            let Some(close) = rest[open + 2..].find("]]") else { break };
            let inner = &rest[open + 2..open + 2 + close];
            let raw = format!("[[{inner}]]");
            rest = &rest[open + 2 + close + 2..];
            let Some(at) = candidates.find(yaml, &raw, from) else { continue };
            let start = self.base + at;
            from = at + raw.len();
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

impl Walker<'_, '_> {
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

/// The modulus of the text hashes: a prime, so a hash collision is as unlikely as it looks.
const PRIME: u64 = (1 << 61) - 1;

/// Every place in the YAML source where a wikilink's text `[[inner]]` can start, keyed by a hash
/// of that text: finding where a property link stands in the source is a lookup rather than a
/// search of the rest of the source for each link (which a frontmatter of links whose text is
/// not verbatim in the source, escaped ones, would make quadratic).
///
/// A link's text opens with `[[`, and its inner part holds no `]]` and does not end with `]`
/// (it ends at the first `]]`); so wherever it stands in the source, it runs from a `[[` to the
/// first `]]` after it. Those are the candidates, one per `[[` (overlapping ones included).
struct Candidates {
    base: u64,
    at: HashMap<(u64, usize), Vec<usize>>,
}

fn mul_mod(a: u64, b: u64) -> u64 {
    ((u128::from(a) * u128::from(b)) % u128::from(PRIME)) as u64
}

impl Candidates {
    fn new(yaml: &str) -> Self {
        // A base no input can choose its text against.
        let base = std::collections::hash_map::RandomState::new().hash_one(yaml.len()) % (PRIME - 512) + 256;
        let bytes = yaml.as_bytes();
        let mut at: HashMap<(u64, usize), Vec<usize>> = HashMap::new();
        // The openers sharing one closer, hashed from the closer back: the bytes between one
        // closer's openers and the next closer's overlap by at most three, so each byte is
        // hashed about once.
        let mut group: Vec<usize> = Vec::new();
        let mut group_end = 0;
        let mut flush = |group: &mut Vec<usize>, end: usize| {
            let (mut hash, mut power, mut from) = (0u64, 1u64, end);
            for &open in group.iter().rev() {
                while from > open {
                    from -= 1;
                    hash = (mul_mod(u64::from(bytes[from]), power) + hash) % PRIME;
                    power = mul_mod(power, base);
                }
                at.entry((hash, end - open)).or_default().push(open);
            }
            group.clear();
        };
        let mut closer: Option<usize> = None;
        let mut closers_left = true;
        for open in memchr_pairs(bytes, b'[') {
            // The first `]]` at or after open + 2.
            if closer.is_none_or(|c| c < open + 2) && closers_left {
                closer = yaml[open + 2..].find("]]").map(|c| open + 2 + c);
                closers_left = closer.is_some();
            }
            let Some(close) = closer.filter(|c| *c >= open + 2) else { break };
            let end = close + 2;
            if end != group_end && !group.is_empty() {
                flush(&mut group, group_end);
            }
            group_end = end;
            group.push(open);
        }
        if !group.is_empty() {
            flush(&mut group, group_end);
        }
        for places in at.values_mut() {
            places.sort_unstable();
        }
        Self { base, at }
    }

    /// Where `raw` (a link's text) first stands in `yaml` at or after `from`.
    fn find(&self, yaml: &str, raw: &str, from: usize) -> Option<usize> {
        let hash = raw.bytes().fold(0u64, |hash, b| (mul_mod(hash, self.base) + u64::from(b)) % PRIME);
        let places = self.at.get(&(hash, raw.len()))?;
        let first = places.partition_point(|p| *p < from);
        places[first..].iter().copied().find(|p| yaml.as_bytes()[*p..].starts_with(raw.as_bytes()))
    }
}

/// Offsets where `byte` appears twice in a row (overlapping pairs included), in order.
fn memchr_pairs(bytes: &[u8], byte: u8) -> impl Iterator<Item = usize> + '_ {
    bytes.windows(2).enumerate().filter(move |(_, w)| w[0] == byte && w[1] == byte).map(|(i, _)| i)
}
