//! Link rewrites, proven by parsing the result again (see the crate docs).
//!
//! Two entry points, both pure:
//!
//! - [`plan_note`]: the backlink update of a move. Every link of the note that resolved before
//!   the moves must resolve afterwards to the same file, wherever the moves put it. A link that
//!   already does is left byte for byte; one that does not (it named a moved file, or a move would
//!   capture it, or the note itself moved away from a relative target) gets a new target text.
//! - [`retarget_note`]: the literal retarget of `rewrite_link`: every link written with one
//!   target is given another.
//!
//! Only the target text of a link is replaced: the `!`, the alias (`|alias` or the table-escaped
//! `\|alias`), the `#Heading` / `#^block` subpath, a markdown link's text and title and the
//! quotes around a property link stay as they were.
//!
//! Every rewrite is proven before it is returned: the new text is parsed again and must hold
//! exactly the links the old one did, each unchanged one where it was (shifted) and as it was,
//! each changed one as exactly one link at exactly the span written, of the same kind, with the
//! same alias and subpath and the intended target; and the bytes outside the replaced target
//! texts must be the old ones. Anything else is a [`Refusal`].

mod canvas;

pub use canvas::plan_canvas;

use std::collections::HashMap;
use std::ops::Range;

use otc_errors::{ErrorCode, ToolError};
use otc_parser::{Link, LinkKind, Note, Subpath, parse, split_wikilink};
use otc_vault::links::Resolver;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// One file move: vault paths before and after (`"A/Old.md"` to `"B/New.md"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moved<'a> {
    pub from: &'a str,
    pub to: &'a str,
}

/// A note's new text and the links that changed in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    pub text: String,
    pub links: Vec<ChangedLink>,
}

/// One rewritten link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedLink {
    /// 0-based line of the link in the old text.
    pub line: usize,
    /// The whole link as it was written.
    pub before: String,
    /// The whole link as it is written now.
    pub after: String,
    pub kind: LinkKind,
}

/// Why a note's links cannot be rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The target text the link would have carried.
    pub target: String,
    /// 0-based line of the link in the note.
    pub line: usize,
    pub reason: String,
}

impl Refusal {
    /// `invalid_input`, the message naming the reason; details: `note` (when given), `target`
    /// and `line` (0-based, as the parser counts).
    pub fn into_error(self, note_path: Option<&str>) -> ToolError {
        let mut error = ToolError::with_message(
            ErrorCode::InvalidInput,
            format!("a link cannot be rewritten safely: {}", self.reason),
        );
        if let Some(note) = note_path {
            error = error.detail("note", note);
        }
        error.detail("target", self.target).detail("line", self.line)
    }
}

/// Rewrites the links of one note for a set of moves, so that every link that resolved before
/// (with `before`, from `source_before`) resolves after (with `after`, from `source_after`) to
/// the same file, moved or not. `Ok(None)` when no link needs to change.
///
/// A changed wikilink (or property link) takes the first of these that resolves to the intended
/// file: a relative path when it was written relative; the bare file name when it was written
/// bare; the vault path; the bare name (so a path through a folder whose name holds `#` or `^`
/// falls back to the name when that is unique). Notes are written without `.md` unless the old
/// target had it (with it, as a last resort). A markdown link is written relative when it was,
/// else as the vault path (the bare name only as the fallback), percent-encoded.
pub fn plan_note(
    text: &str,
    source_before: &str,
    source_after: &str,
    before: &Resolver,
    after: &Resolver,
    moves: &[Moved],
) -> Result<Option<Rewrite>, Refusal> {
    let old = parse(text);
    let moved: HashMap<&str, &str> = moves.iter().map(|m| (m.from, m.to)).collect();
    let mut yaml = YamlStyles::default();
    let mut edits = Vec::new();
    for (index, link) in old.links.iter().enumerate() {
        if link.target.is_empty() {
            continue;
        }
        let Some(was) = before.resolve(&link.target, source_before) else { continue };
        let desired = moved.get(was).copied().unwrap_or(was);
        if after.resolve(&link.target, source_after) == Some(desired) {
            continue;
        }
        let candidates = candidates(&link.target, link.wiki, desired, source_after);
        let mut first_failure: Option<String> = None;
        let mut chosen = None;
        for candidate in &candidates {
            match place(text, &old, link, candidate, None, &mut yaml) {
                Ok(edit) => {
                    if after.resolve(&edit.target, source_after) == Some(desired) {
                        chosen = Some(edit);
                        break;
                    }
                    first_failure.get_or_insert_with(|| "the new target does not resolve to the moved file".into());
                }
                Err(reason) => {
                    first_failure.get_or_insert(reason);
                }
            }
        }
        let Some(mut edit) = chosen else {
            return Err(Refusal {
                target: candidates.first().cloned().unwrap_or_else(|| desired.to_string()),
                line: link.span.start.line,
                reason: first_failure.unwrap_or_else(|| "no link text reaches the moved file".into()),
            });
        };
        edit.link = index;
        edit.resolves_to = Some(desired.to_string());
        edits.push(edit);
    }
    prove(text, &old, edits, Some((after, source_after)))
}

/// Gives every link written with `from_target` (compared case-insensitively, a trailing `.md`
/// ignored on either side) the target `to_target`. A `#subpath` on `from_target` narrows the
/// match to links with that subpath; one on `to_target` replaces the link's subpath, else the
/// link keeps its own. Aliases are kept; embeds change only with `include_embeds`. `Ok(None)`
/// when no link matches.
pub fn retarget_note(
    text: &str,
    source: &str,
    from_target: &str,
    to_target: &str,
    include_embeds: bool,
) -> Result<Option<Rewrite>, Refusal> {
    // Same-note links never match, so the note's own path plays no part in a literal retarget.
    let _ = source;
    let old = parse(text);
    let (from_path, from_sub) = split_target(from_target.trim());
    let from_key = match_key(from_path.trim());
    let from_sub = from_sub.map(subpath_of);
    let to = to_target.trim();
    let (to_path, to_sub) = split_target(to);
    let to_path = to_path.trim();
    let mut yaml = YamlStyles::default();
    let mut edits = Vec::new();
    for (index, link) in old.links.iter().enumerate() {
        if link.target.is_empty()
            || (link.kind == LinkKind::Embed && !include_embeds)
            || match_key(&link.target) != from_key
            || from_sub.as_ref().is_some_and(|sub| link.subpath.as_ref() != Some(sub))
        {
            continue;
        }
        let refuse = |reason: String| Refusal { target: to.to_string(), line: link.span.start.line, reason };
        if to_path.is_empty() {
            return Err(refuse("the new target names no note".into()));
        }
        if let Some(bad) = ['|', '\n', '\r'].into_iter().find(|c| to.contains(*c)) {
            return Err(refuse(format!("the new target contains {bad:?}, which a link cannot carry")));
        }
        // A markdown link written with `.md` keeps it (unless the new name has its own extension).
        let path = if !link.wiki && ends_with_md(&link.target) && !file_name(to_path).contains('.') {
            format!("{to_path}.md")
        } else {
            to_path.to_string()
        };
        let edit = place(text, &old, link, &path, to_sub, &mut yaml).map_err(refuse)?;
        if text[edit.range.clone()] == edit.text {
            continue;
        }
        edits.push(Edit { link: index, shown: to.to_string(), ..edit });
    }
    prove(text, &old, edits, None)
}

/// One replaced target text.
#[derive(Debug)]
struct Edit {
    /// Index of the link in the old parse.
    link: usize,
    /// The bytes replaced (part of the link).
    range: Range<usize>,
    text: String,
    /// What the link's target must read as after the parse.
    target: String,
    subpath: Option<Subpath>,
    /// For a move: the file the target must resolve to.
    resolves_to: Option<String>,
    /// The target text to name in a refusal.
    shown: String,
}

/// Plans writing `path` (and `sub`, a new subpath, when given) as the target of `link`.
/// Checks the syntax only (not where the target resolves). Err: why it cannot be written.
fn place(
    text: &str,
    note: &Note,
    link: &Link,
    path: &str,
    sub: Option<&str>,
    yaml: &mut YamlStyles,
) -> Result<Edit, String> {
    if path.chars().any(char::is_control) {
        return Err("the new target holds a line break or control character".into());
    }
    let subpath = match sub {
        Some(sub) => Some(subpath_of(sub)),
        None => link.subpath.clone(),
    };
    let start = link.span.start.offset;
    if link.wiki {
        let parts = wiki_parts(&link.raw).ok_or("the link's target could not be located")?;
        let (range, written) = match sub {
            Some(sub) => (parts.target.start..parts.link_end, format!("{path}#{sub}")),
            None => (parts.target.clone(), path.to_string()),
        };
        for bad in ["[[", "]]", "|", "%%"] {
            if written.contains(bad) {
                return Err(format!("the new target contains {bad:?}, which is link syntax"));
            }
        }
        if path.contains('#') {
            return Err("'#' in the new target would be read as a heading or block reference".into());
        }
        if written.chars().any(char::is_control) {
            return Err("the new target holds a line break or control character".into());
        }
        let mut inner = String::with_capacity(link.raw.len() + written.len());
        inner.push_str(&link.raw[parts.inner.start..range.start]);
        inner.push_str(&written);
        inner.push_str(&link.raw[range.end..parts.inner.end]);
        let (target, new_sub, alias) = split_wikilink(&inner);
        if inner.ends_with(']') || inner.contains("[[") || inner.contains("]]") {
            return Err("the new target would end the link early".into());
        }
        if target != path || new_sub != subpath || alias != link.alias {
            return Err("the new target would not read back as one link with the same alias and heading".into());
        }
        if link.kind == LinkKind::Property {
            yaml.check(text, note, start, &written)?;
        }
        return Ok(Edit {
            link: 0,
            range: start + range.start..start + range.end,
            text: written,
            target: path.to_string(),
            subpath,
            resolves_to: None,
            shown: path.to_string(),
        });
    }
    // A markdown link: [text](destination "title").
    let dest = markdown_destination(&link.raw)
        .ok_or("a reference-style markdown link keeps its target elsewhere in the note; it cannot be rewritten here")?;
    let dest_text = &link.raw[dest.clone()];
    let path_end = dest.start + subpath_start(dest_text);
    if path.contains(')') {
        return Err("a markdown link cannot carry ')' in its target (the link would end there)".into());
    }
    if path.contains('#') {
        return Err("'#' in a markdown link's target would be read as a heading".into());
    }
    let (range, written) = match sub {
        Some(sub) => {
            if sub.contains(')') {
                return Err("a markdown link cannot carry ')' in its target (the link would end there)".into());
            }
            (dest.start..dest.end, format!("{}#{}", encode(path), encode(sub)))
        }
        None => (dest.start..path_end, encode(path)),
    };
    Ok(Edit {
        link: 0,
        range: start + range.start..start + range.end,
        text: written,
        target: path.to_string(),
        subpath,
        resolves_to: None,
        shown: path.to_string(),
    })
}

/// Splices the edits into the text and proves the result (module docs). `resolve`: the
/// resolver and source the changed targets must resolve with (moves only).
fn prove(
    text: &str,
    old: &Note,
    mut edits: Vec<Edit>,
    resolve: Option<(&Resolver, &str)>,
) -> Result<Option<Rewrite>, Refusal> {
    if edits.is_empty() {
        return Ok(None);
    }
    edits.sort_by_key(|e| e.range.start);
    let refusal = |edit: &Edit, reason: &str| Refusal {
        target: edit.shown.clone(),
        line: old.links[edit.link].span.start.line,
        reason: reason.to_string(),
    };
    for pair in edits.windows(2) {
        if pair[0].range.end > pair[1].range.start {
            return Err(refusal(&pair[1], "two rewrites overlap"));
        }
    }
    // Splice once.
    let growth: isize = edits.iter().map(|e| e.text.len() as isize - e.range.len() as isize).sum();
    let mut new = String::with_capacity((text.len() as isize + growth.max(0)) as usize);
    let mut at = 0;
    for edit in &edits {
        new.push_str(&text[at..edit.range.start]);
        new.push_str(&edit.text);
        at = edit.range.end;
    }
    new.push_str(&text[at..]);
    let shift = Shift::new(&edits);

    // The bytes outside the replaced ranges are the old ones, and each replacement is as planned.
    let mut at = 0;
    for edit in &edits {
        let (a, b) = (shift.map(at), shift.map(edit.range.start));
        let written = b..b + edit.text.len();
        if new.get(a..b) != text.get(at..edit.range.start) || new.get(written) != Some(edit.text.as_str()) {
            return Err(refusal(edit, "the rewrite changed bytes outside the link"));
        }
        at = edit.range.end;
    }
    if new.get(shift.map(at)..) != text.get(at..) {
        return Err(refusal(edits.last().expect("not empty"), "the rewrite changed bytes outside the link"));
    }

    // Parse once more and hold every link to account.
    let reparsed = parse(&new);
    let by_link: HashMap<usize, &Edit> = edits.iter().map(|e| (e.link, e)).collect();
    // Blame a structural failure on the last edit at or before the place it shows.
    let blame = |offset: usize| -> &Edit {
        edits.iter().rev().find(|e| shift.map(e.range.start) <= offset).unwrap_or(&edits[0])
    };
    if old.frontmatter.as_ref().is_some_and(|f| f.error.is_none())
        && reparsed.frontmatter.as_ref().is_none_or(|f| f.error.is_some())
    {
        let edit = edits.iter().find(|e| old.links[e.link].kind == LinkKind::Property).unwrap_or(&edits[0]);
        return Err(refusal(edit, "the new target breaks the note's properties (YAML)"));
    }
    if reparsed.body_start != shift.map(old.body_start) {
        return Err(refusal(&edits[0], "the rewrite moved the end of the properties"));
    }
    let mut changed = Vec::with_capacity(edits.len());
    for (index, was) in old.links.iter().enumerate() {
        let expected = shift.map(was.span.start.offset)..shift.map(was.span.end.offset);
        let Some(now) = reparsed.links.get(index) else {
            return Err(refusal(blame(expected.start), "the rewrite removed a link"));
        };
        if now.span.range() != expected || now.kind != was.kind || now.wiki != was.wiki || now.property != was.property
        {
            return Err(refusal(
                blame(expected.start.min(now.span.start.offset)),
                "the rewrite changed the links around it",
            ));
        }
        match by_link.get(&index) {
            None => {
                let first = edits.partition_point(|e| e.range.start < was.span.start.offset);
                let untouched = edits.get(first).is_none_or(|e| e.range.end > was.span.end.offset);
                let same = if untouched {
                    now.raw == was.raw
                } else {
                    // A link with a rewritten one inside it (`[![alt](Moved.png)](Note.md)`).
                    now.target == was.target && now.subpath == was.subpath && now.alias == was.alias
                };
                if !same {
                    return Err(refusal(blame(expected.start), "the rewrite changed another link"));
                }
            }
            Some(edit) => {
                if now.target != edit.target {
                    return Err(refusal(edit, "the rewritten link does not read back with the target written"));
                }
                if now.subpath != edit.subpath || now.alias != was.alias {
                    return Err(refusal(edit, "the rewritten link does not keep its heading or alias"));
                }
                if let (Some(desired), Some((resolver, source))) = (&edit.resolves_to, resolve)
                    && resolver.resolve(&now.target, source) != Some(desired.as_str())
                {
                    return Err(refusal(edit, "the rewritten link does not resolve to the moved file"));
                }
                changed.push(ChangedLink {
                    line: was.span.start.line,
                    before: was.raw.clone(),
                    after: now.raw.clone(),
                    kind: was.kind,
                });
            }
        }
    }
    if reparsed.links.len() != old.links.len() {
        let extra = reparsed.links[old.links.len()].span.start.offset;
        return Err(refusal(blame(extra), "the rewrite added a link"));
    }
    Ok(Some(Rewrite { text: new, links: changed }))
}

/// Old offsets to new ones, for offsets outside the replaced ranges.
struct Shift {
    /// (old end of an edit, total growth up to and including it)
    ends: Vec<(usize, isize)>,
}

impl Shift {
    fn new(edits: &[Edit]) -> Self {
        let mut total = 0isize;
        let ends = edits
            .iter()
            .map(|e| {
                total += e.text.len() as isize - e.range.len() as isize;
                (e.range.end, total)
            })
            .collect();
        Self { ends }
    }

    fn map(&self, offset: usize) -> usize {
        let done = self.ends.partition_point(|(end, _)| *end <= offset);
        let delta = if done == 0 { 0 } else { self.ends[done - 1].1 };
        (offset as isize + delta) as usize
    }
}

/// The target texts to try for a link written `old` that must reach `desired`, best first: a
/// relative path for a relative target, the bare name for a bare wikilink, the vault path, the
/// bare name (for any link: a path the link cannot carry may still leave a unique name).
fn candidates(old: &str, wiki: bool, desired: &str, source_after: &str) -> Vec<String> {
    let keep_md = ends_with_md(old);
    let note = ends_with_md(desired);
    let shown = |p: &str| -> String { if note && !keep_md { p[..p.len() - 3].to_string() } else { p.to_string() } };
    let name = file_name(desired);
    let mut out = Vec::new();
    if old.starts_with("./") || old.starts_with("../") {
        out.push(shown(&relative(parent(source_after), desired)));
    }
    if old.starts_with('/') {
        out.push(format!("/{}", shown(desired)));
    }
    if wiki && !old.contains('/') {
        out.push(shown(name));
    }
    out.push(shown(desired));
    out.push(shown(name));
    if note && !keep_md {
        // `v1.2` would look for a file called `v1.2` first.
        out.push(name.to_string());
        out.push(desired.to_string());
    }
    let mut seen = Vec::with_capacity(out.len());
    for c in out {
        if !seen.contains(&c) {
            seen.push(c);
        }
    }
    seen
}

/// `to` written relative to the folder `from_dir` ("" is the vault root): `./x` or `../x`.
fn relative(from_dir: &str, to: &str) -> String {
    let from: Vec<&str> = if from_dir.is_empty() { Vec::new() } else { from_dir.split('/').collect() };
    let to_parts: Vec<&str> = to.split('/').collect();
    let (to_dirs, _) = to_parts.split_at(to_parts.len() - 1);
    let common = from.iter().zip(to_dirs).take_while(|(a, b)| a == b).count();
    let ups = from.len() - common;
    let rest = to_parts[common..].join("/");
    if ups == 0 { format!("./{rest}") } else { format!("{}{rest}", "../".repeat(ups)) }
}

fn ends_with_md(path: &str) -> bool {
    path.len() >= 3 && path.is_char_boundary(path.len() - 3) && path[path.len() - 3..].eq_ignore_ascii_case(".md")
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn parent(path: &str) -> &str {
    path.rfind('/').map_or("", |at| &path[..at])
}

/// A target as compared by `retarget_note`: lower-cased, a trailing `.md` dropped.
fn match_key(target: &str) -> String {
    let lower = target.to_lowercase();
    match lower.strip_suffix(".md") {
        Some(stem) => stem.to_string(),
        None => lower,
    }
}

/// `path#sub` into its parts, at the first `#`.
fn split_target(target: &str) -> (&str, Option<&str>) {
    match target.split_once('#') {
        Some((path, sub)) => (path, Some(sub)),
        None => (target, None),
    }
}

/// What follows `#`, as the parser reads it.
fn subpath_of(sub: &str) -> Subpath {
    match sub.strip_prefix('^') {
        Some(block) => Subpath::Block(block.trim().to_string()),
        None => Subpath::Heading(sub.trim().to_string()),
    }
}

/// Where the parts of a wikilink sit in its raw text.
struct WikiParts {
    /// Between `[[` and `]]`.
    inner: Range<usize>,
    /// The target as the parser reads it (trimmed).
    target: Range<usize>,
    /// The end of `target#subpath`, trimmed (before the alias pipe).
    link_end: usize,
}

fn wiki_parts(raw: &str) -> Option<WikiParts> {
    let open = raw.find("[[")? + 2;
    let close = raw.len().checked_sub(2).filter(|c| *c >= open && raw[*c..] == *"]]")?;
    let inner = &raw[open..close];
    // As split_wikilink: an escaped `\|` anywhere wins over a plain `|`.
    let link = match inner.find("\\|") {
        Some(at) => &inner[..at],
        None => inner.split_once('|').map_or(inner, |(link, _)| link),
    };
    let path = link.split_once('#').map_or(link, |(path, _)| path);
    let lead = path.len() - path.trim_start().len();
    let target = open + lead..open + path.trim_end().len();
    let link_end = open + link.trim_end().len();
    (target.start < target.end).then_some(WikiParts { inner: open..close, target, link_end })
}

/// The destination of an inline markdown link in its raw text (inside `<...>` when written so),
/// or `None` for a reference-style link.
fn markdown_destination(raw: &str) -> Option<Range<usize>> {
    if !raw.ends_with(')') {
        return None;
    }
    let mut from = 0;
    while let Some(found) = raw[from..].find("](") {
        let at = from + found + 2;
        if let Some(dest) = destination_tail(raw.as_bytes(), at) {
            return Some(dest);
        }
        from = at - 1;
    }
    None
}

/// Reads `destination [title])` from `at` to the very end of `raw`.
fn destination_tail(b: &[u8], mut i: usize) -> Option<Range<usize>> {
    let n = b.len();
    let skip_space = |i: &mut usize| {
        let mut newlines = 0;
        while *i < n && matches!(b[*i], b' ' | b'\t' | b'\n' | b'\r') {
            newlines += usize::from(b[*i] == b'\n');
            *i += 1;
        }
        newlines <= 1
    };
    if !skip_space(&mut i) || i >= n {
        return None;
    }
    let dest = if b[i] == b'<' {
        let start = i + 1;
        i = start;
        while i < n && b[i] != b'>' {
            if matches!(b[i], b'\n' | b'<') {
                return None;
            }
            i += if b[i] == b'\\' && i + 1 < n { 2 } else { 1 };
        }
        if i >= n {
            return None;
        }
        i += 1;
        start..i - 1
    } else {
        let start = i;
        let mut depth = 0usize;
        while i < n {
            match b[i] {
                b'\\' if i + 1 < n && b[i + 1].is_ascii_punctuation() => {
                    i += 2;
                    continue;
                }
                b'(' => depth += 1,
                b')' if depth == 0 => break,
                b')' => depth -= 1,
                c if c.is_ascii_whitespace() || c.is_ascii_control() => break,
                _ => {}
            }
            i += 1;
        }
        start..i
    };
    if !skip_space(&mut i) || i >= n {
        return None;
    }
    if matches!(b[i], b'"' | b'\'' | b'(') {
        let close = if b[i] == b'(' { b')' } else { b[i] };
        i += 1;
        while i < n && b[i] != close {
            i += if b[i] == b'\\' && i + 1 < n { 2 } else { 1 };
        }
        i += 1;
        if !skip_space(&mut i) {
            return None;
        }
    }
    (i + 1 == n && b[i] == b')').then_some(dest)
}

/// Where a raw markdown destination's `#subpath` starts (its length when it has none): a `#`,
/// or `%23` or `\#`, which the parser also reads as one.
fn subpath_start(dest: &str) -> usize {
    let b = dest.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'#' => return i,
            b'\\' if b.get(i + 1) == Some(&b'#') => return i,
            b'%' if b.get(i + 1) == Some(&b'2') && b.get(i + 2) == Some(&b'3') => return i,
            _ => {}
        }
        i += 1;
    }
    b.len()
}

/// Percent-encodes what would end or change a markdown link destination: whitespace and other
/// control characters, `%`, `<`, `>`, `(`, `` ` ``, `\`, and a `&` that could start an entity.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for (i, c) in text.char_indices() {
        let entity = c == '&' && {
            let rest = &text[i + 1..];
            let len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '#')).unwrap_or(rest.len());
            len > 0 && rest[len..].starts_with(';')
        };
        if c.is_ascii_whitespace() || c.is_control() || matches!(c, '%' | '<' | '>' | '(' | '`' | '\\') || entity {
            let mut buf = [0u8; 4];
            for byte in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{byte:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The styles of the frontmatter's scalars, read once per note when a property link changes.
#[derive(Default)]
struct YamlStyles {
    /// (byte offset in the note of the scalar's start, its style), in order.
    scalars: Option<Vec<(usize, TScalarStyle)>>,
}

struct ScalarMarks(Vec<(usize, TScalarStyle)>);

impl MarkedEventReceiver for ScalarMarks {
    fn on_event(&mut self, event: Event, mark: Marker) {
        if let Event::Scalar(_, style, ..) = event {
            self.0.push((mark.index(), style));
        }
    }
}

impl YamlStyles {
    /// Checks that `written` can replace a property link's target at `offset`: no link syntax,
    /// and nothing that would end or change the YAML scalar it sits in.
    fn check(&mut self, text: &str, note: &Note, offset: usize, written: &str) -> Result<(), String> {
        for bad in ["[[", "]]", "|", "%%", "\n", "\r"] {
            if written.contains(bad) {
                return Err(format!("a property link's target may not contain {bad:?}"));
            }
        }
        let style = self.style_at(text, note, offset);
        let quote_breaks = match style {
            Some(TScalarStyle::DoubleQuoted) => written.contains(['"', '\\']),
            Some(TScalarStyle::SingleQuoted) => written.contains('\''),
            Some(TScalarStyle::Literal | TScalarStyle::Folded) => false,
            Some(TScalarStyle::Plain) => plain_breaks(written),
            None => written.contains(['"', '\\', '\'']) || plain_breaks(written),
        };
        if quote_breaks {
            return Err("the new target would break the YAML quoting of the property it sits in".into());
        }
        Ok(())
    }

    fn style_at(&mut self, text: &str, note: &Note, offset: usize) -> Option<TScalarStyle> {
        let frontmatter = note.frontmatter.as_ref()?;
        let (yaml_start, yaml_end) = yaml_bounds(text, frontmatter.span.end.offset);
        let yaml = &text[yaml_start..yaml_end];
        let scalars = self.scalars.get_or_insert_with(|| {
            let mut marks = ScalarMarks(Vec::new());
            if Parser::new_from_str(yaml).load(&mut marks, false).is_err() {
                return Vec::new();
            }
            // The scanner counts characters; turn them into byte offsets of the note.
            let starts: Vec<usize> = yaml.char_indices().map(|(at, _)| at).collect();
            marks
                .0
                .into_iter()
                .filter_map(|(chars, style)| starts.get(chars).map(|at| (yaml_start + at, style)))
                .collect()
        });
        let at = scalars.partition_point(|(start, _)| *start <= offset);
        let (start, style) = *scalars.get(at.checked_sub(1)?)?;
        // Trust a quoted style only when the quote is where the scanner put the scalar.
        let opens = text.as_bytes().get(start).copied();
        match style {
            TScalarStyle::DoubleQuoted if opens != Some(b'"') => None,
            TScalarStyle::SingleQuoted if opens != Some(b'\'') => None,
            style => Some(style),
        }
    }
}

/// Whether `written` could end or change a plain (unquoted) YAML scalar, block or flow.
fn plain_breaks(written: &str) -> bool {
    written.contains(": ")
        || written.ends_with(':')
        || written.contains(" #")
        || written.contains(['\t', ',', '[', ']', '{', '}'])
}

/// The YAML text of a frontmatter block (between its `---` lines), as the parser reads it.
fn yaml_bounds(text: &str, block_end: usize) -> (usize, usize) {
    let first_end = text.find('\n').unwrap_or(text.len());
    let first_end = if text[..first_end].ends_with('\r') { first_end - 1 } else { first_end };
    let start = (first_end + 1).min(text.len());
    let close_start = text[..block_end].rfind('\n').map_or(0, |at| at + 1);
    (start.min(close_start), close_start)
}

#[cfg(test)]
mod tests;
