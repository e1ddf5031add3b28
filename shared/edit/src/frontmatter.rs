//! Frontmatter and tag edits that leave every byte they do not need to change as it was: the
//! other keys with their comments, quoting and order, the line endings (CRLF included) and the
//! body. Every edit is proven before it is returned: the result is parsed again and must read as
//! the intended properties (or tags) with the body byte-identical; when it does not, the edit
//! fails with `internal_error` rather than return something else.
//!
//! A note whose frontmatter exists but is not valid YAML, or whose top level is not a mapping,
//! is refused (`invalid_input`, details `{"reason": "frontmatter_unparseable"}`), never rewritten.
//!
//! # Where a key sits
//!
//! The block is read with yaml-rust2's event parser, which gives every key's line. A key's
//! region is its `key:` line through the last line of its value: the lines up to the next key
//! of the same mapping, less the blank lines and the comments (no deeper than the key) that
//! trail it. Those trailing lines, like any comment or blank line between keys, belong to no key:
//! they stay where they are when a key is replaced or removed. An indented comment inside a
//! value, and a comment on the key's own line (`key: v # note`), belong to the key.
//!
//! - Set on an existing key replaces its region with the emitted `key: value`; on a missing
//!   top-level key it appends the entry at the end of the block (before the closing `---`); a
//!   missing key inside a nested block mapping is added after that mapping's last entry. A
//!   dotted path (`nested`) walks block mappings in place; a nested mapping written in flow style
//!   (`meta: {a: 1}`) is re-emitted as a whole, in block style. An intermediate key that holds
//!   null is replaced by a mapping; one that holds anything else (a string, a list) is refused.
//! - Remove deletes the region; removing a key that is not there changes nothing (`changed` is
//!   false). Removing the last key of a nested mapping leaves `parent: {}`.
//! - Merge sets each given top-level key, in the map's order; keys whose value is already equal
//!   are not touched.
//! - Replace removes the keys not given and sets the others as Merge does, so the keys that keep
//!   their value keep their bytes too; new keys are appended in the map's order.
//! - When no property is left, the block is removed entirely (comments in it too); the body is
//!   then the whole note. Should the body itself start with a `---` block, an empty `---`/`---`
//!   block is kept so that it does not become the frontmatter.
//! - A note with no frontmatter gets a new block at the very top for Set, Merge and Replace; the
//!   line ending is the note's own (that of its first line).
//! - A block whose top level is a flow mapping (`{a: 1}`) or whose keys the event parser cannot
//!   place on their own lines (complex `? ` keys, anchors before keys) is re-emitted as a whole.
//! - A value equal to the one already there is not rewritten: the edit is a no-op.
//! - Should the in-place edit not prove (an alias whose anchor went with a removed key, say),
//!   the block is re-emitted whole from the intended properties and that is proven instead;
//!   only when that fails too does the edit fail (`internal_error`).
//!
//! # How values are written
//!
//! Block style with 2-space indentation; strings plain when YAML (yaml-rust2, and YAML 1.1
//! readers) would read them back as the same string, else double-quoted with escapes; numbers,
//! booleans and null as YAML; lists as `- item` lines under the key (`[]` when empty), objects
//! as nested mappings (`{}` when empty). Keys are plain when they can be, else double-quoted.
//! Integers above `i64::MAX` cannot be read back as the same number and are refused.
//!
//! # Tags
//!
//! Frontmatter tags live under the first key (in the block's order) matching `/^tags?$/i`. Adding
//! appends an item in the style of the list that is there (block list: a line with the last
//! item's indentation and dash; flow list: `, tag` before the `]`); a string value is rewritten as
//! a block list of its tags plus the new one; a missing, null or empty value becomes a block list.
//! Removing deletes the matching items (the `- x` line, or the element and one separator of a
//! flow list) from every tags key; a string value is rewritten as a block list of what is left;
//! a key left with no tag is removed entirely (and the block with it when it was the last key).
//! Tags compare case-insensitively, with or without a leading `#` in the YAML.
//!
//! Body tags: adding appends `#tag` on a new line at the end of the note; removing deletes every
//! inline occurrence the parser reports of exactly that tag (not `#tag/child`, not `#tagger`;
//! never inside code, comments or links), with one adjacent space, and a line left blank by the
//! removal is removed too.

use std::ops::Range;

use otc_errors::{ErrorCode, ToolError};
use otc_parser::{Note, TagSource, parse, parse_head};
use serde_json::{Map, Value};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;
use yaml_rust2::{Yaml, YamlLoader};

#[cfg(test)]
mod tests;

/// One edit of a note's properties.
#[derive(Debug, Clone, Copy)]
pub enum FrontmatterOp<'a> {
    /// Sets one property; with `nested`, `key` is a dotted path (`meta.author.name`) and the
    /// mappings on the way are created as needed.
    Set { key: &'a str, value: &'a Value, nested: bool },
    /// Removes one property (a dotted path with `nested`); a missing one is a no-op.
    Remove { key: &'a str, nested: bool },
    /// Sets each top-level key, in the map's order.
    Merge { properties: &'a Map<String, Value> },
    /// The properties become exactly these.
    Replace { properties: &'a Map<String, Value> },
}

/// The result of a frontmatter edit.
#[derive(Debug, Clone, PartialEq)]
pub struct Edited {
    pub text: String,
    pub changed: bool,
    /// The properties as the new text parses back; `None` when the note has no frontmatter.
    pub frontmatter: Option<Map<String, Value>>,
}

/// Edits a note's frontmatter (see the module docs for the rules).
pub fn edit_frontmatter(text: &str, op: FrontmatterOp<'_>) -> Result<Edited, ToolError> {
    let doc = Doc::read(text)?;
    let steps = steps(&doc.map, op)?;
    let mut intended = doc.map.clone();
    for step in &steps {
        apply_json(&mut intended, &step.path, step.value)?;
    }
    if intended == doc.map {
        return Ok(Edited {
            text: text.to_string(),
            changed: false,
            frontmatter: doc.block.is_some().then(|| doc.map.clone()),
        });
    }
    let in_place = || -> Result<Edited, ToolError> {
        let mut current = text.to_string();
        for step in &steps {
            current = apply_step(&current, &step.path, step.value)?;
        }
        if intended.is_empty() {
            current = drop_block(&current)?;
        }
        prove(text, doc.body_start, current, &intended)
    };
    in_place().or_else(|_| {
        // What the in-place edit could not keep right (an alias whose anchor went with a removed
        // key, say), the block re-emitted whole does: proven the same way.
        let mut whole = splice(text, vec![doc.rewrite(&intended)]);
        if intended.is_empty() {
            whole = drop_block(&whole)?;
        }
        prove(text, doc.body_start, whole, &intended)
    })
}

/// One set (`Some`) or remove (`None`) of one property path.
struct Step<'a> {
    path: Vec<String>,
    value: Option<&'a Value>,
}

fn steps<'a>(map: &Map<String, Value>, op: FrontmatterOp<'a>) -> Result<Vec<Step<'a>>, ToolError> {
    let sets = |properties: &'a Map<String, Value>| -> Result<Vec<Step<'a>>, ToolError> {
        properties
            .iter()
            .map(|(key, value)| {
                check_value(value)?;
                Ok(Step { path: path_of(key, false)?, value: Some(value) })
            })
            .collect()
    };
    match op {
        FrontmatterOp::Set { key, value, nested } => {
            check_value(value)?;
            Ok(vec![Step { path: path_of(key, nested)?, value: Some(value) }])
        }
        FrontmatterOp::Remove { key, nested } => Ok(vec![Step { path: path_of(key, nested)?, value: None }]),
        FrontmatterOp::Merge { properties } => sets(properties),
        FrontmatterOp::Replace { properties } => {
            let mut out: Vec<Step<'a>> = map
                .keys()
                .filter(|key| !properties.contains_key(*key))
                .map(|key| Step { path: vec![key.clone()], value: None })
                .collect();
            out.extend(sets(properties)?);
            Ok(out)
        }
    }
}

fn path_of(key: &str, nested: bool) -> Result<Vec<String>, ToolError> {
    let path: Vec<String> = if nested { key.split('.').map(str::to_string).collect() } else { vec![key.to_string()] };
    if path.iter().any(String::is_empty) {
        let message = if key.is_empty() {
            "a property name cannot be empty".to_string()
        } else {
            format!("the property path {key:?} has an empty segment")
        };
        return Err(ToolError::with_message(ErrorCode::InvalidInput, message).detail("field", "key"));
    }
    Ok(path)
}

/// Values YAML cannot read back as the same JSON are refused up front.
fn check_value(value: &Value) -> Result<(), ToolError> {
    match value {
        Value::Number(n) if n.is_u64() && n.as_i64().is_none() => Err(ToolError::with_message(
            ErrorCode::InvalidInput,
            format!("{n} is too large for a frontmatter integer (at most {})", i64::MAX),
        )
        .detail("field", "value")
        .detail("reason", "number_out_of_range")),
        Value::Array(items) => items.iter().try_for_each(check_value),
        Value::Object(map) => map.values().try_for_each(check_value),
        _ => Ok(()),
    }
}

fn apply_json(map: &mut Map<String, Value>, path: &[String], value: Option<&Value>) -> Result<(), ToolError> {
    match value {
        Some(value) => set_json(map, path, value.clone()),
        None => {
            remove_json(map, path);
            Ok(())
        }
    }
}

fn set_json(map: &mut Map<String, Value>, path: &[String], value: Value) -> Result<(), ToolError> {
    let (first, rest) = path.split_first().expect("paths are not empty");
    if rest.is_empty() {
        map.insert(first.clone(), value);
        return Ok(());
    }
    let slot = map.entry(first.clone()).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    match slot {
        Value::Object(inner) => set_json(inner, rest, value),
        other => Err(ToolError::with_message(
            ErrorCode::InvalidInput,
            format!("the property {first:?} holds {}, not a mapping, so nothing can be set inside it", kind(other)),
        )
        .detail("field", "key")
        .detail("reason", "not_a_mapping")),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

fn remove_json(map: &mut Map<String, Value>, path: &[String]) -> bool {
    let (first, rest) = path.split_first().expect("paths are not empty");
    if rest.is_empty() {
        return map.remove(first).is_some();
    }
    match map.get_mut(first) {
        Some(Value::Object(inner)) => remove_json(inner, rest),
        _ => false,
    }
}

/// `value` under the keys of `path`, as nested mappings.
fn nest(path: &[String], value: &Value) -> Value {
    match path.split_first() {
        None => value.clone(),
        Some((first, rest)) => {
            let mut map = Map::new();
            map.insert(first.clone(), nest(rest, value));
            Value::Object(map)
        }
    }
}

/// One set or remove on the current text, read afresh.
fn apply_step(current: &str, path: &[String], value: Option<&Value>) -> Result<String, ToolError> {
    let doc = Doc::read(current).map_err(reread)?;
    let mut after = doc.map.clone();
    apply_json(&mut after, path, value)?;
    if after == doc.map {
        return Ok(current.to_string());
    }
    let splices = match value {
        Some(value) => doc.set(path, value, &after),
        None => doc.remove(path, &after),
    };
    Ok(splice(current, splices))
}

/// The note without its (now empty) frontmatter block.
fn drop_block(current: &str) -> Result<String, ToolError> {
    let doc = Doc::read(current).map_err(reread)?;
    if doc.block.is_none() {
        return Ok(current.to_string());
    }
    let body = &current[doc.body_start..];
    if parse_head(body).frontmatter.is_some() {
        // The body's own `---` block would become the frontmatter.
        let eol = doc.eol;
        return Ok(format!("---{eol}---{eol}{body}"));
    }
    Ok(body.to_string())
}

/// Parses the new text and checks it holds exactly the intended properties, with the body as it
/// was.
fn prove(old: &str, old_body_start: usize, new: String, intended: &Map<String, Value>) -> Result<Edited, ToolError> {
    let head = parse_head(&new);
    let got = match &head.frontmatter {
        None => None,
        Some(fm) => match (&fm.value, &fm.error) {
            (Some(Value::Object(map)), None) => Some(map.clone()),
            (_, Some(error)) => return Err(internal(format!("the edited frontmatter does not parse ({error})"))),
            _ => return Err(internal("the edited frontmatter is not a mapping")),
        },
    };
    if got.as_ref().unwrap_or(&Map::new()) != intended {
        return Err(internal("the edited frontmatter does not read back as the intended properties"));
    }
    if new[head.body_start..] != old[old_body_start..] {
        return Err(internal("the edit would have changed the note's body"));
    }
    Ok(Edited { changed: new != old, text: new, frontmatter: got })
}

fn unparseable(error: &str) -> ToolError {
    ToolError::with_message(
        ErrorCode::InvalidInput,
        format!("the note's frontmatter does not parse as YAML properties, so it was left as it is: {error}"),
    )
    .detail("reason", "frontmatter_unparseable")
}

fn internal(message: impl Into<String>) -> ToolError {
    ToolError::with_message(ErrorCode::InternalError, message)
}

/// An intermediate text that does not read back is our fault, not the caller's.
fn reread(error: ToolError) -> ToolError {
    internal(format!("an edited frontmatter did not read back: {}", error.message))
}

/// The line ending of the note's first line.
fn first_eol(text: &str) -> &'static str {
    match text.find('\n') {
        Some(at) if at > 0 && text.as_bytes()[at - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

/// A replacement of one byte range of the note.
#[derive(Debug)]
struct Splice {
    range: Range<usize>,
    with: String,
}

/// Applies non-overlapping splices.
fn splice(text: &str, mut splices: Vec<Splice>) -> String {
    splices.sort_by_key(|s| (s.range.start, s.range.end));
    let mut out = String::with_capacity(text.len() + splices.iter().map(|s| s.with.len()).sum::<usize>());
    let mut at = 0;
    for s in splices {
        debug_assert!(s.range.start >= at, "splices overlap");
        out.push_str(&text[at..s.range.start]);
        out.push_str(&s.with);
        at = s.range.end;
    }
    out.push_str(&text[at..]);
    out
}

// ---------------------------------------------------------------------------------------------
// The block as read: the properties, and where each key sits.

struct Doc<'t> {
    text: &'t str,
    map: Map<String, Value>,
    body_start: usize,
    eol: &'static str,
    block: Option<Block>,
}

struct Block {
    /// The YAML between the `---` lines (a byte range of the note; every line ends in a break).
    yaml: Range<usize>,
    /// Where each YAML line starts (byte offsets into the note), then `yaml.end`.
    lines: Vec<usize>,
    /// The byte offset of each char of the YAML, then `yaml.end`: the parser's marks count chars.
    chars: Vec<usize>,
    root: Option<Node>,
    /// Whether the event parser's lines can be trusted (it read the YAML, which has no lone CR).
    structured: bool,
}

#[derive(Debug, Clone, Copy)]
struct At {
    /// 0-based line of the YAML.
    line: usize,
    /// Column in chars.
    col: usize,
    /// Char index into the YAML.
    index: usize,
}

#[derive(Debug)]
enum Node {
    Scalar {
        value: String,
        at: At,
    },
    Seq {
        at: At,
        end: At,
        items: Vec<Node>,
    },
    /// Keys and values alternate in `children`.
    Map {
        at: At,
        end: At,
        children: Vec<Node>,
    },
    Alias {
        at: At,
    },
}

impl Node {
    fn at(&self) -> At {
        match self {
            Node::Scalar { at, .. } | Node::Seq { at, .. } | Node::Map { at, .. } | Node::Alias { at } => *at,
        }
    }
}

#[derive(Default)]
struct Builder {
    stack: Vec<Node>,
    root: Option<Node>,
}

impl Builder {
    fn push(&mut self, node: Node) {
        match self.stack.last_mut() {
            Some(Node::Seq { items, .. }) => items.push(node),
            Some(Node::Map { children, .. }) => children.push(node),
            _ => {
                if self.root.is_none() {
                    self.root = Some(node);
                }
            }
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, event: Event, mark: Marker) {
        let at = At { line: mark.line().saturating_sub(1), col: mark.col(), index: mark.index() };
        match event {
            Event::Scalar(value, ..) => self.push(Node::Scalar { value, at }),
            Event::Alias(_) => self.push(Node::Alias { at }),
            Event::SequenceStart(..) => self.stack.push(Node::Seq { at, end: at, items: Vec::new() }),
            Event::MappingStart(..) => self.stack.push(Node::Map { at, end: at, children: Vec::new() }),
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some(mut node) = self.stack.pop() {
                    if let Node::Seq { end, .. } | Node::Map { end, .. } = &mut node {
                        *end = at;
                    }
                    self.push(node);
                }
            }
            _ => {}
        }
    }
}

/// One key of a block mapping.
struct Entry<'n> {
    key: &'n str,
    /// Its `key:` line.
    line: usize,
    /// The line after its value's last line (trailing blank lines and comments excluded).
    end: usize,
    value: &'n Node,
    /// The key's column.
    indent: usize,
}

impl<'t> Doc<'t> {
    /// Reads the note, refusing frontmatter that does not parse as a mapping.
    fn read(text: &'t str) -> Result<Self, ToolError> {
        let head = parse_head(text);
        let eol = first_eol(text);
        let Some(fm) = head.frontmatter else {
            return Ok(Doc { text, map: Map::new(), body_start: 0, eol, block: None });
        };
        if let Some(error) = &fm.error {
            return Err(unparseable(error));
        }
        let map = match fm.value {
            Some(Value::Object(map)) => map,
            Some(other) => return Err(unparseable(&format!("the top level is {}, not a mapping", kind(&other)))),
            None => return Err(unparseable("no value")),
        };
        // The first line is `---`; the closing line (`---` or `...`) ends the span.
        let start = text.find('\n').map_or(text.len(), |at| at + 1);
        let end = fm.span.end.offset.saturating_sub(3).max(start);
        let yaml = &text[start..end];
        let mut lines = vec![start];
        lines.extend(yaml.match_indices('\n').map(|(at, _)| start + at + 1));
        if *lines.last().expect("one line") != end {
            lines.push(end);
        }
        let mut chars: Vec<usize> = yaml.char_indices().map(|(at, _)| start + at).collect();
        chars.push(end);
        let mut builder = Builder::default();
        let parsed = Parser::new_from_str(yaml).load(&mut builder, false).is_ok();
        let lone_cr = yaml.replace("\r\n", "").contains('\r');
        let structured = parsed && !lone_cr && builder.stack.is_empty() && (yaml.is_empty() || yaml.ends_with('\n'));
        let block = Block { yaml: start..end, lines, chars, root: builder.root, structured };
        Ok(Doc { text, map, body_start: head.body_start, eol, block: Some(block) })
    }

    fn block(&self) -> &Block {
        self.block.as_ref().expect("a frontmatter block")
    }

    /// How many lines the YAML has.
    fn line_count(&self) -> usize {
        self.block().lines.len() - 1
    }

    /// Line `i` of the YAML, without its line break.
    fn line(&self, i: usize) -> &'t str {
        let lines = &self.block().lines;
        let line = &self.text[lines[i]..lines[i + 1]];
        let line = line.strip_suffix('\n').unwrap_or(line);
        line.strip_suffix('\r').unwrap_or(line)
    }

    fn indent(&self, i: usize) -> usize {
        let line = self.line(i);
        line.len() - line.trim_start_matches(' ').len()
    }

    /// Trailing lines a region does not take: blank lines, and comments no deeper than `indent`.
    fn trailing(&self, i: usize, indent: usize) -> bool {
        let trimmed = self.line(i).trim();
        trimmed.is_empty() || (trimmed.starts_with('#') && self.indent(i) <= indent)
    }

    /// `raw_end` less the trailing lines, keeping at least the first line.
    fn trim_region(&self, first: usize, raw_end: usize, indent: usize) -> usize {
        let mut end = raw_end;
        while end > first + 1 && self.trailing(end - 1, indent) {
            end -= 1;
        }
        end
    }

    /// The byte offset (into the note) of a mark.
    fn offset(&self, at: At) -> usize {
        let chars = &self.block().chars;
        chars[at.index.min(chars.len() - 1)]
    }

    fn byte(&self, at: At) -> Option<u8> {
        let offset = self.offset(at);
        (offset < self.block().yaml.end).then(|| self.text.as_bytes()[offset])
    }

    /// Whether a list or mapping is written in flow style (`[...]`, `{...}`).
    fn is_flow(&self, node: &Node) -> bool {
        match node {
            Node::Seq { at, end, .. } => self.byte(*at) == Some(b'[') && self.byte(*end) == Some(b']'),
            Node::Map { at, end, .. } => self.byte(*at) == Some(b'{') && self.byte(*end) == Some(b'}'),
            _ => false,
        }
    }

    /// The entries of a block mapping whose keys each open their own line, or `None` when the
    /// node is something else (then it is re-emitted as a whole).
    fn entries<'n>(&self, node: &'n Node, lines: Range<usize>) -> Option<Vec<Entry<'n>>> {
        let end_line = lines.end;
        let Node::Map { children, .. } = node else { return None };
        if self.is_flow(node) || children.len() % 2 != 0 {
            return None;
        }
        let mut out: Vec<Entry<'n>> = Vec::new();
        for pair in children.chunks(2) {
            let Node::Scalar { value: key, at } = &pair[0] else { return None };
            if !lines.contains(&at.line) || self.indent(at.line) != at.col {
                return None;
            }
            if let Some(prev) = out.last()
                && (prev.line >= at.line || prev.indent != at.col)
            {
                return None;
            }
            out.push(Entry { key, line: at.line, end: end_line, value: &pair[1], indent: at.col });
        }
        for i in 0..out.len() {
            let raw_end = out.get(i + 1).map_or(end_line, |next| next.line);
            out[i].end = self.trim_region(out[i].line, raw_end, out[i].indent);
        }
        Some(out)
    }

    /// The top-level entries, or `None` when the block must be re-emitted as a whole.
    fn root_entries(&self) -> Option<Vec<Entry<'_>>> {
        let block = self.block.as_ref()?;
        if !block.structured {
            return None;
        }
        match &block.root {
            None => self.map.is_empty().then(Vec::new),
            Some(root) => self.entries(root, 0..self.line_count()),
        }
    }

    /// Replaces YAML lines `range` with `lines`.
    fn replace_lines(&self, range: Range<usize>, lines: &[String]) -> Splice {
        let starts = &self.block().lines;
        Splice { range: starts[range.start]..starts[range.end], with: join(lines, self.eol) }
    }

    /// The whole block re-emitted with `after` (or created when there is none).
    fn rewrite(&self, after: &Map<String, Value>) -> Splice {
        let mut lines = Vec::new();
        for (key, value) in after {
            emit_entry(&mut lines, 0, key, value);
        }
        let eol = self.eol;
        match &self.block {
            Some(block) => Splice { range: block.yaml.clone(), with: join(&lines, eol) },
            None => Splice { range: 0..0, with: format!("---{eol}{}---{eol}", join(&lines, eol)) },
        }
    }

    fn set(&self, path: &[String], value: &Value, after: &Map<String, Value>) -> Vec<Splice> {
        if self.block.is_none() {
            return vec![self.rewrite(after)];
        }
        match self.root_entries() {
            Some(entries) => {
                let indent = entries.first().map_or(0, |e| e.indent);
                self.set_in(&entries, self.line_count(), indent, path, value, &self.map)
                    .unwrap_or_else(|| vec![self.rewrite(after)])
            }
            None => vec![self.rewrite(after)],
        }
    }

    /// Sets `path` among `entries` (a block mapping whose properties are `json`); a missing key
    /// goes in at line `insert_at`.
    fn set_in(
        &self,
        entries: &[Entry<'_>],
        insert_at: usize,
        indent: usize,
        path: &[String],
        value: &Value,
        json: &Map<String, Value>,
    ) -> Option<Vec<Splice>> {
        let mut lines = Vec::new();
        let Some(e) = entries.iter().find(|e| e.key == path[0]) else {
            if json.contains_key(&path[0]) {
                // The parser spells this key otherwise than the JSON does.
                return None;
            }
            emit_entry(&mut lines, indent, &path[0], &nest(&path[1..], value));
            return Some(vec![self.replace_lines(insert_at..insert_at, &lines)]);
        };
        let new_value = if path.len() == 1 {
            value.clone()
        } else {
            match json.get(&path[0]) {
                Some(Value::Object(inner)) => {
                    if let Some(sub) = self.entries(e.value, e.line + 1..e.end)
                        && let Some(last) = sub.last()
                    {
                        return self.set_in(&sub, last.end, last.indent, &path[1..], value, inner);
                    }
                    let mut inner = inner.clone();
                    set_json(&mut inner, &path[1..], value.clone()).ok()?;
                    Value::Object(inner)
                }
                _ => nest(&path[1..], value),
            }
        };
        emit_entry(&mut lines, e.indent, e.key, &new_value);
        Some(vec![self.replace_lines(e.line..e.end, &lines)])
    }

    fn remove(&self, path: &[String], after: &Map<String, Value>) -> Vec<Splice> {
        match self.root_entries() {
            Some(entries) => self.remove_in(&entries, path, &self.map).unwrap_or_else(|| vec![self.rewrite(after)]),
            None => vec![self.rewrite(after)],
        }
    }

    fn remove_in(&self, entries: &[Entry<'_>], path: &[String], json: &Map<String, Value>) -> Option<Vec<Splice>> {
        let e = entries.iter().find(|e| e.key == path[0])?;
        if path.len() == 1 {
            return Some(vec![self.replace_lines(e.line..e.end, &[])]);
        }
        let Some(Value::Object(inner)) = json.get(&path[0]) else { return None };
        let mut left = inner.clone();
        remove_json(&mut left, &path[1..]);
        if !left.is_empty()
            && let Some(sub) = self.entries(e.value, e.line + 1..e.end)
            && let Some(splices) = self.remove_in(&sub, &path[1..], inner)
        {
            return Some(splices);
        }
        let mut lines = Vec::new();
        emit_entry(&mut lines, e.indent, e.key, &Value::Object(left));
        Some(vec![self.replace_lines(e.line..e.end, &lines)])
    }
}

fn join(lines: &[String], eol: &str) -> String {
    let mut out = String::new();
    for line in lines {
        out.push_str(line);
        out.push_str(eol);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// JSON as YAML.

/// `key: value` at `indent`, in block style.
fn emit_entry(out: &mut Vec<String>, indent: usize, key: &str, value: &Value) {
    let pad = " ".repeat(indent);
    let key = key_text(key);
    match value {
        Value::Array(items) if !items.is_empty() => {
            out.push(format!("{pad}{key}:"));
            for item in items {
                emit_item(out, indent + 2, item);
            }
        }
        Value::Object(map) if !map.is_empty() => {
            out.push(format!("{pad}{key}:"));
            for (k, v) in map {
                emit_entry(out, indent + 2, k, v);
            }
        }
        scalar => out.push(format!("{pad}{key}: {}", inline(scalar))),
    }
}

/// `- item` at `indent`; a non-empty list or mapping item starts on the dash's line.
fn emit_item(out: &mut Vec<String>, indent: usize, value: &Value) {
    let pad = " ".repeat(indent);
    let from = out.len();
    match value {
        Value::Array(items) if !items.is_empty() => {
            for item in items {
                emit_item(out, indent + 2, item);
            }
        }
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                emit_entry(out, indent + 2, k, v);
            }
        }
        scalar => {
            out.push(format!("{pad}- {}", inline(scalar)));
            return;
        }
    }
    out[from] = format!("{pad}- {}", &out[from][indent + 2..]);
}

/// A scalar or an empty list or mapping, on one line.
fn inline(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string_scalar(s, false),
        Value::Array(_) => "[]".to_string(),
        Value::Object(_) => "{}".to_string(),
    }
}

fn key_text(key: &str) -> String {
    let plain = plain_ok(key, false)
        && matches!(
            YamlLoader::load_from_str(&format!("{key}: v\n")).as_deref(),
            Ok([Yaml::Hash(map)]) if map.len() == 1 && map.contains_key(&Yaml::String(key.to_string()))
        );
    if plain { key.to_string() } else { quote(key) }
}

/// A string as a YAML scalar: plain when it reads back as the same string, else double-quoted.
/// `flow`: for an item of a flow list.
fn string_scalar(s: &str, flow: bool) -> String {
    let source = if flow { format!("k: [{s}]\n") } else { format!("k: {s}\n") };
    let same = |y: &Yaml| matches!(y, Yaml::String(got) if got == s);
    let plain = plain_ok(s, flow)
        && match YamlLoader::load_from_str(&source).as_deref() {
            Ok([Yaml::Hash(map)]) => match map.get(&Yaml::String("k".to_string())) {
                Some(Yaml::Array(items)) if flow => matches!(items.as_slice(), [item] if same(item)),
                Some(value) if !flow => same(value),
                _ => false,
            },
            _ => false,
        };
    if plain { s.to_string() } else { quote(s) }
}

/// Words that some YAML reader takes for a boolean or null.
const RESERVED: &[&str] = &["true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"];

/// Whether `s` may be written plain: conservative, so that YAML 1.1 readers (Obsidian's
/// included) read the same string too.
fn plain_ok(s: &str, flow: bool) -> bool {
    let Some(first) = s.chars().next() else { return false };
    if s.trim() != s
        || "-?:,[]{}#&*!|>'\"%@`".contains(first)
        || s.chars().any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}'))
        || s.contains(": ")
        || s.contains(" #")
        || s.ends_with(':')
        || s.contains("[[")
        || (flow && s.contains([',', '[', ']', '{', '}']))
        || s == "<<"
    {
        return false;
    }
    let lower = s.to_lowercase();
    if RESERVED.contains(&lower.as_str()) || matches!(lower.trim_start_matches(['+', '-']), ".inf" | ".nan") {
        return false;
    }
    !looks_numeric(s) || is_date(s)
}

/// Anything a YAML reader might take for a number (ints in any base, floats, sexagesimals).
fn looks_numeric(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_digit() || c == '+' || c == '.')
        && s.chars().all(|c| c.is_ascii_hexdigit() || "xXoO_.+-:".contains(c))
}

/// `YYYY-MM-DD`: Obsidian writes dates plain, and yaml-rust2 reads them as strings.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10 && b.iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() })
}

/// A double-quoted YAML scalar (JSON's escapes, which YAML reads the same way).
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}') => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

// ---------------------------------------------------------------------------------------------
// Tags.

/// Where a tag is added or removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagLocation {
    Frontmatter,
    Body,
    Both,
}

/// The result of a tag edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagEdit {
    pub text: String,
    pub changed: bool,
    pub frontmatter_changed: bool,
    /// Inline occurrences removed, or 1 when one was added.
    pub body_changed: usize,
}

/// A tag as the caller wrote it, without its one leading `#` and surrounding whitespace. Refused
/// (`invalid_input`, field `tag`): empty, whitespace inside, all digits, starting or ending with
/// `/`, or characters outside a tag (letters and digits of any script, `_`, `-`, `/`, and any
/// other non-ASCII character that is not whitespace or a control, as the parser reads tags).
pub fn normalize_tag(tag: &str) -> Result<String, ToolError> {
    let trimmed = tag.trim();
    let name = trimmed.strip_prefix('#').unwrap_or(trimmed);
    let refuse = |why: &str| {
        Err(ToolError::with_message(ErrorCode::InvalidInput, format!("{tag:?} is not a valid tag: {why}"))
            .detail("field", "tag"))
    };
    if name.is_empty() {
        return refuse("it is empty");
    }
    if name.chars().any(char::is_whitespace) {
        return refuse("a tag cannot hold whitespace");
    }
    if name.chars().all(|c| c.is_ascii_digit()) {
        return refuse("a tag needs at least one character that is not a digit");
    }
    if name.starts_with('/') || name.ends_with('/') {
        return refuse("a tag cannot start or end with '/'");
    }
    if let Some(bad) = name.chars().find(|c| !tag_char(*c)) {
        return refuse(&format!("{bad:?} cannot appear in a tag (letters, digits, '_', '-' and '/' can)"));
    }
    Ok(name.to_string())
}

fn tag_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '/') || (!c.is_ascii() && !c.is_whitespace() && !c.is_control())
}

/// Adds a tag to the frontmatter (`Frontmatter`, and `Both`) or at the end of the body (`Body`).
/// A tag already there (any case) changes nothing.
pub fn add_tag(text: &str, tag: &str, location: TagLocation) -> Result<TagEdit, ToolError> {
    let tag = normalize_tag(tag)?;
    if location == TagLocation::Body {
        let new = add_body(text, &tag)?;
        let changed = new != text;
        return Ok(TagEdit { text: new, changed, frontmatter_changed: false, body_changed: usize::from(changed) });
    }
    let new = add_frontmatter(text, &tag)?;
    let changed = new != text;
    Ok(TagEdit { text: new, changed, frontmatter_changed: changed, body_changed: 0 })
}

/// Removes a tag from the frontmatter, the body or both (`Both`: the frontmatter first).
pub fn remove_tag(text: &str, tag: &str, location: TagLocation) -> Result<TagEdit, ToolError> {
    let tag = normalize_tag(tag)?;
    let mut current = text.to_string();
    let mut frontmatter_changed = false;
    if location != TagLocation::Body {
        let new = remove_frontmatter(&current, &tag)?;
        frontmatter_changed = new != current;
        current = new;
    }
    let mut body_changed = 0;
    if location != TagLocation::Frontmatter {
        let (new, removed) = remove_body(&current, &tag)?;
        body_changed = removed;
        current = new;
    }
    Ok(TagEdit { changed: current != text, text: current, frontmatter_changed, body_changed })
}

fn same_tag(a: &str, b: &str) -> bool {
    a == b || a.to_lowercase() == b.to_lowercase()
}

/// A YAML tag value naming `tag` (`#` or not), as the parser reads it.
fn yaml_tag_is(value: &str, tag: &str) -> bool {
    same_tag(value.trim().trim_start_matches('#'), tag)
}

fn is_tags_key(key: &str) -> bool {
    matches!(key.to_lowercase().as_str(), "tags" | "tag")
}

/// A tags string as the parser splits it: on commas and whitespace, `#` dropped.
fn split_tags(s: &str) -> Vec<String> {
    s.split(|c: char| c == ',' || c.is_whitespace())
        .map(|p| p.trim().trim_start_matches('#'))
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

fn holds_tag(value: &Value, tag: &str) -> bool {
    match value {
        Value::Array(items) => items.iter().any(|i| i.as_str().is_some_and(|s| yaml_tag_is(s, tag))),
        Value::String(s) => split_tags(s).iter().any(|t| same_tag(t, tag)),
        _ => false,
    }
}

fn frontmatter_tags(note: &Note) -> Vec<String> {
    note.tags.iter().filter(|t| t.source == TagSource::Frontmatter).map(|t| t.name.clone()).collect()
}

fn inline_tags(note: &Note) -> Vec<String> {
    note.tags.iter().filter(|t| t.source == TagSource::Inline).map(|t| t.name.clone()).collect()
}

impl Doc<'_> {
    /// The keys Obsidian reads tags from (`/^tags?$/i`), in the block's order.
    fn tag_keys(&self) -> Vec<String> {
        let order: Vec<String> = match self.root_entries() {
            Some(entries) => entries.iter().map(|e| e.key.to_string()).collect(),
            None => self.map.keys().cloned().collect(),
        };
        order.into_iter().filter(|k| is_tags_key(k) && self.map.contains_key(k)).collect()
    }

    /// The text before a block list item's content (`  - `), when it is just a dash.
    fn item_prefix(&self, at: At) -> Option<&str> {
        let line = self.line(at.line);
        let byte = line.char_indices().nth(at.col).map(|(i, _)| i)?;
        let prefix = &line[..byte];
        let rest = prefix.trim_start_matches(' ').strip_prefix('-')?;
        (!rest.is_empty() && rest.chars().all(|c| c == ' ' || c == '\t')).then_some(prefix)
    }

    /// Where a flow list's scalar item starting at byte `start` ends (`limit`: the `]`).
    fn scalar_end(&self, start: usize, limit: usize) -> Option<usize> {
        let s = &self.text[start..limit];
        let b = s.as_bytes();
        let len = match b.first()? {
            b'"' => {
                let mut i = 1;
                loop {
                    match b.get(i)? {
                        b'\\' => i += 2,
                        b'"' => break i + 1,
                        _ => i += 1,
                    }
                }
            }
            b'\'' => {
                let mut i = 1;
                loop {
                    match b.get(i)? {
                        b'\'' if b.get(i + 1) == Some(&b'\'') => i += 2,
                        b'\'' => break i + 1,
                        _ => i += 1,
                    }
                }
            }
            _ => {
                let stop = s.find([',', ']', '\n']).unwrap_or(s.len());
                s[..stop].trim_end().len()
            }
        };
        Some(start + len)
    }

    /// Appends `tag` to the non-empty list under `key` in the list's own style.
    fn append_tag(&self, key: &str, tag: &str) -> Option<Vec<Splice>> {
        let entries = self.root_entries()?;
        let e = entries.iter().find(|e| e.key == key)?;
        let Node::Seq { at: open, end: close, items } = e.value else { return None };
        let last = items.last()?;
        if self.is_flow(e.value) {
            let (open, close) = (self.offset(*open), self.offset(*close));
            if self.text[open..close].contains('#') {
                return None;
            }
            let inner_end = open + 1 + self.text[open + 1..close].trim_end().len();
            let sep = if self.text[..inner_end].ends_with(',') { " " } else { ", " };
            return Some(vec![Splice {
                range: inner_end..inner_end,
                with: format!("{sep}{}", string_scalar(tag, true)),
            }]);
        }
        let Node::Scalar { at, .. } = last else { return None };
        if at.line <= e.line || at.line >= e.end {
            return None;
        }
        let prefix = self.item_prefix(*at)?;
        Some(vec![self.replace_lines(e.end..e.end, &[format!("{prefix}{}", string_scalar(tag, false))])])
    }

    /// Deletes the items naming `tag` from the list under `key`, in place; `None` when that
    /// cannot be done in place, or would leave the list empty.
    fn remove_tag_items(&self, key: &str, tag: &str) -> Option<Vec<Splice>> {
        let entries = self.root_entries()?;
        let e = entries.iter().find(|e| e.key == key)?;
        let Node::Seq { at: open, end: close, items } = e.value else { return None };
        let Some(Value::Array(values)) = self.map.get(key) else { return None };
        if values.len() != items.len() {
            return None;
        }
        let hit: Vec<bool> = values.iter().map(|v| v.as_str().is_some_and(|s| yaml_tag_is(s, tag))).collect();
        let last_kept = hit.iter().rposition(|h| !h)?;
        if !hit.contains(&true) {
            return None;
        }
        let mut out = Vec::new();
        if self.is_flow(e.value) {
            let (open, close) = (self.offset(*open), self.offset(*close));
            if self.text[open..close].contains('#') {
                return None;
            }
            let starts: Vec<usize> = items
                .iter()
                .map(|n| match n {
                    Node::Scalar { at, .. } => Some(self.offset(*at)),
                    _ => None,
                })
                .collect::<Option<_>>()?;
            let ends: Vec<usize> = starts.iter().map(|s| self.scalar_end(*s, close)).collect::<Option<_>>()?;
            for i in 0..last_kept {
                if hit[i] {
                    out.push(Splice { range: starts[i]..starts[i + 1], with: String::new() });
                }
            }
            // The removed items after the last kept one go with the separator before them.
            let last = items.len() - 1;
            if last_kept < last {
                out.push(Splice { range: ends[last_kept]..ends[last], with: String::new() });
            }
            return Some(out);
        }
        for (i, item) in items.iter().enumerate() {
            if !hit[i] {
                continue;
            }
            let Node::Scalar { at, .. } = item else { return None };
            self.item_prefix(*at)?;
            let next = items.get(i + 1).map_or(e.end, |n| n.at().line);
            if at.line <= e.line || next > e.end || next <= at.line {
                return None;
            }
            let end = self.trim_region(at.line, next, usize::MAX);
            out.push(self.replace_lines(at.line..end, &[]));
        }
        Some(out)
    }
}

fn add_frontmatter(text: &str, tag: &str) -> Result<String, ToolError> {
    let doc = Doc::read(text)?;
    let note = parse(text);
    let mut expected = frontmatter_tags(&note);
    if expected.iter().any(|t| same_tag(t, tag)) {
        return Ok(text.to_string());
    }
    let found = doc.tag_keys().into_iter().next();
    let new_value = match found.as_ref().and_then(|k| doc.map.get(k)) {
        None | Some(Value::Null) => Value::Array(vec![Value::String(tag.to_string())]),
        Some(Value::Array(items)) => {
            let mut items = items.clone();
            items.push(Value::String(tag.to_string()));
            Value::Array(items)
        }
        Some(Value::String(s)) => {
            let mut items: Vec<Value> = split_tags(s).into_iter().map(Value::String).collect();
            items.push(Value::String(tag.to_string()));
            Value::Array(items)
        }
        Some(other) => return Err(tags_not_a_list(found.as_deref().unwrap_or("tags"), other)),
    };
    let key = found.unwrap_or_else(|| "tags".to_string());
    let splices = match doc.append_tag(&key, tag) {
        Some(splices) => splices,
        None => {
            let mut after = doc.map.clone();
            after.insert(key.clone(), new_value.clone());
            doc.set(std::slice::from_ref(&key), &new_value, &after)
        }
    };
    let new = splice(text, splices);
    expected.push(tag.to_string());
    if prove_frontmatter_tags(text, &new, &expected).is_ok() {
        return Ok(new);
    }
    // The generic edit, which can re-emit the block whole.
    let new = edit_frontmatter(text, FrontmatterOp::Set { key: &key, value: &new_value, nested: false })?.text;
    prove_frontmatter_tags(text, &new, &expected)?;
    Ok(new)
}

fn tags_not_a_list(key: &str, value: &Value) -> ToolError {
    ToolError::with_message(
        ErrorCode::InvalidInput,
        format!("the frontmatter key {key:?} holds {}, not a list of tags; fix it by hand first", kind(value)),
    )
    .detail("field", "tag")
    .detail("reason", "tags_not_a_list")
}

fn remove_frontmatter(text: &str, tag: &str) -> Result<String, ToolError> {
    let doc = Doc::read(text)?;
    let keys: Vec<String> = doc.tag_keys().into_iter().filter(|k| holds_tag(&doc.map[k], tag)).collect();
    if keys.is_empty() {
        return Ok(text.to_string());
    }
    let expected: Vec<String> = frontmatter_tags(&parse(text)).into_iter().filter(|t| !same_tag(t, tag)).collect();
    let in_place = || -> Result<String, ToolError> {
        let mut current = text.to_string();
        for key in &keys {
            let d = Doc::read(&current).map_err(reread)?;
            let Some(kept) = d.map.get(key).and_then(|v| kept_tags(v, tag)) else { continue };
            let path = std::slice::from_ref(key);
            let mut after = d.map.clone();
            let splices = if kept.is_empty() {
                after.remove(key);
                d.remove(path, &after)
            } else if let Some(splices) = d.remove_tag_items(key, tag) {
                splices
            } else {
                let kept = Value::Array(kept);
                after.insert(key.clone(), kept.clone());
                d.set(path, &kept, &after)
            };
            current = splice(&current, splices);
        }
        if Doc::read(&current).map_err(reread)?.map.is_empty() {
            current = drop_block(&current)?;
        }
        prove_frontmatter_tags(text, &current, &expected)?;
        Ok(current)
    };
    in_place().or_else(|_| {
        // The same properties through the generic edit, which can re-emit the block whole.
        let mut after = doc.map.clone();
        for key in &keys {
            match doc.map.get(key).and_then(|v| kept_tags(v, tag)) {
                Some(kept) if kept.is_empty() => drop(after.remove(key)),
                Some(kept) => drop(after.insert(key.clone(), Value::Array(kept))),
                None => {}
            }
        }
        let new = edit_frontmatter(text, FrontmatterOp::Replace { properties: &after })?.text;
        prove_frontmatter_tags(text, &new, &expected)?;
        Ok(new)
    })
}

/// A tags value without `tag`, as a list; `None` when the value holds no tags at all.
fn kept_tags(value: &Value, tag: &str) -> Option<Vec<Value>> {
    match value {
        Value::Array(items) => {
            Some(items.iter().filter(|i| !i.as_str().is_some_and(|s| yaml_tag_is(s, tag))).cloned().collect())
        }
        Value::String(s) => Some(split_tags(s).into_iter().filter(|t| !same_tag(t, tag)).map(Value::String).collect()),
        _ => None,
    }
}

fn add_body(text: &str, tag: &str) -> Result<String, ToolError> {
    let note = parse(text);
    let mut expected = inline_tags(&note);
    if expected.iter().any(|t| same_tag(t, tag)) {
        return Ok(text.to_string());
    }
    let eol = first_eol(text);
    let new = if text.is_empty() {
        format!("#{tag}{eol}")
    } else if text.ends_with('\n') {
        format!("{text}#{tag}{eol}")
    } else {
        format!("{text}{eol}#{tag}")
    };
    let after = parse(&new);
    if inline_tags(&after) == expected {
        return Err(ToolError::with_message(
            ErrorCode::InvalidInput,
            "the note ends inside a code block or comment, where an appended tag would not count",
        )
        .detail("field", "tag")
        .detail("reason", "tag_would_be_hidden"));
    }
    expected.push(tag.to_string());
    prove_body_tags(&note, &after, &expected, false)?;
    Ok(new)
}

fn remove_body(text: &str, tag: &str) -> Result<(String, usize), ToolError> {
    let note = parse(text);
    let hits: Vec<Range<usize>> = note
        .tags
        .iter()
        .filter(|t| t.source == TagSource::Inline && same_tag(&t.name, tag))
        .filter_map(|t| t.span.map(|s| s.range()))
        .collect();
    if hits.is_empty() {
        return Ok((text.to_string(), 0));
    }
    let bytes = text.as_bytes();
    let mut ranges: Vec<Range<usize>> = Vec::new();
    for hit in &hits {
        // `#tag/` reads as `tag`: the slash goes too.
        let mut end = hit.end;
        while bytes.get(end) == Some(&b'/') {
            end += 1;
        }
        let range = if hit.start > 0 && matches!(bytes[hit.start - 1], b' ' | b'\t') {
            hit.start - 1..end
        } else if matches!(bytes.get(end), Some(b' ' | b'\t')) {
            hit.start..end + 1
        } else {
            hit.start..end
        };
        match ranges.last_mut() {
            Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
            _ => ranges.push(range),
        }
    }
    // A line left blank by the removals goes entirely.
    let mut splices: Vec<Splice> = Vec::new();
    let mut i = 0;
    while i < ranges.len() {
        let line_start = text[..ranges[i].start].rfind('\n').map_or(0, |at| at + 1);
        let line_end = text[ranges[i].start..].find('\n').map_or(text.len(), |at| ranges[i].start + at);
        let mut j = i;
        while j < ranges.len() && ranges[j].start < line_end {
            j += 1;
        }
        let mut left = String::new();
        let mut at = line_start;
        for r in &ranges[i..j] {
            left.push_str(&text[at..r.start]);
            at = r.end;
        }
        left.push_str(&text[at.min(line_end)..line_end]);
        if left.trim().is_empty() {
            let end = if line_end < text.len() { line_end + 1 } else { line_end };
            splices.push(Splice { range: line_start..end, with: String::new() });
        } else {
            splices.extend(ranges[i..j].iter().map(|r| Splice { range: r.clone(), with: String::new() }));
        }
        i = j;
    }
    let new = splice(text, splices);
    let after = parse(&new);
    let expected: Vec<String> = inline_tags(&note).into_iter().filter(|t| !same_tag(t, tag)).collect();
    prove_body_tags(&note, &after, &expected, true)?;
    Ok((new, hits.len()))
}

/// A link as a tag edit must leave it: kind, raw text, target, subpath, alias, property.
type LinkShape = (otc_parser::LinkKind, String, String, Option<otc_parser::Subpath>, Option<String>, Option<String>);

/// What a tag edit must leave alone.
#[derive(Debug, PartialEq)]
struct Shape {
    links: Vec<LinkShape>,
    headings: Vec<u8>,
    blocks: Vec<String>,
    tasks: Vec<char>,
    aliases: Vec<String>,
}

fn shape(note: &Note) -> Shape {
    Shape {
        links: note
            .links
            .iter()
            .map(|l| (l.kind, l.raw.clone(), l.target.clone(), l.subpath.clone(), l.alias.clone(), l.property.clone()))
            .collect(),
        headings: note.headings.iter().map(|h| h.level).collect(),
        blocks: note.blocks.iter().map(|b| b.id.clone()).collect(),
        tasks: note.tasks.iter().map(|t| t.status).collect(),
        aliases: note.aliases.clone(),
    }
}

fn sorted_lower(tags: &[String]) -> Vec<String> {
    let mut out: Vec<String> = tags.iter().map(|t| t.to_lowercase()).collect();
    out.sort();
    out
}

/// A frontmatter tag edit: the frontmatter tags are `expected`, the other properties and the
/// body as they were.
fn prove_frontmatter_tags(old: &str, new: &str, expected: &[String]) -> Result<(), ToolError> {
    let (a, b) = (parse(old), parse(new));
    if let Some(fm) = &b.frontmatter
        && let Some(error) = &fm.error
    {
        return Err(internal(format!("the edited frontmatter does not parse ({error})")));
    }
    if sorted_lower(&frontmatter_tags(&b)) != sorted_lower(expected) {
        return Err(internal("the edited frontmatter does not read back with the intended tags"));
    }
    let others = |note: &Note| -> Map<String, Value> {
        match note.frontmatter.as_ref().and_then(|f| f.value.as_ref()) {
            Some(Value::Object(map)) => {
                map.iter().filter(|(k, _)| !is_tags_key(k)).map(|(k, v)| (k.clone(), v.clone())).collect()
            }
            _ => Map::new(),
        }
    };
    if others(&a) != others(&b) || inline_tags(&a) != inline_tags(&b) || shape(&a) != shape(&b) {
        return Err(internal("the tag edit would have changed other properties or links"));
    }
    if new[b.body_start..] != old[a.body_start..] {
        return Err(internal("the tag edit would have changed the note's body"));
    }
    Ok(())
}

/// A body tag edit: the inline tags are `expected`, the frontmatter and everything else the
/// parser finds as they were (heading texts aside when tags were removed from them).
fn prove_body_tags(before: &Note, after: &Note, expected: &[String], removed: bool) -> Result<(), ToolError> {
    if inline_tags(after) != expected {
        return Err(internal("the edited body does not read back with the intended tags"));
    }
    let heading_texts = |n: &Note| -> Vec<String> { n.headings.iter().map(|h| h.text.clone()).collect() };
    if before.frontmatter.as_ref().map(|f| (&f.value, f.span)) != after.frontmatter.as_ref().map(|f| (&f.value, f.span))
        || frontmatter_tags(before) != frontmatter_tags(after)
        || shape(before) != shape(after)
        || (!removed && heading_texts(before) != heading_texts(after))
    {
        return Err(internal("the tag edit would have changed more than the tag"));
    }
    Ok(())
}
