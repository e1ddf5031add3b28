//! The note body: headings and their sections, block ids, wikilinks, embeds, markdown links,
//! inline tags and tasks. What counts where follows Obsidian's own metadata cache, construct by
//! construct, as recorded with its evidence in `docs/link-parity.md`:
//!
//! - Code blocks, inline code, HTML comments (inline or block, on one line or many) and raw HTML
//!   blocks hold nothing.
//! - A `%%comment%%` within one line hides nothing (Obsidian indexes its tags and links).
//! - A `%%comment%%` spanning lines hides links, tasks, block ids and headings, but not tags:
//!   Obsidian's cache lists a tag inside one and no list item.

use std::ops::Range;

use pulldown_cmark::{Event, HeadingLevel, LinkType, Options, Parser, Tag, TagEnd};

use crate::{BlockId, Cancelled, Heading, Lines, Link, LinkKind, Note, Steps, TagSource, Task, split_wikilink};

/// Links and images nested deeper than this inside one another are not looked at (their text
/// still counts for the ones around them). Each one's `raw` holds all those inside it, so a deep
/// nest would grow the links with the square of its depth; real notes nest two (a badge image
/// inside a link).
const MAX_LINK_NESTING: usize = 8;

/// A reference link's destination is written once, in its definition, but is the target of
/// every use; one longer than this (four times the longest vault path, so it can name no note)
/// is not followed, since copying it for every use would grow with uses times length.
const MAX_REFERENCE_DESTINATION: usize = 4 * 1024;

/// Byte ranges (of the whole note) that hide what they hold.
struct Zones {
    /// Code, HTML comments and HTML blocks: nothing inside counts.
    all: Union,
    /// Those and the `%%comments%%` spanning lines (tags inside those still count, nothing
    /// else does).
    hidden: Union,
}

impl Zones {
    /// Whether a link, heading, task or block id starting here is hidden.
    fn contains(&self, offset: usize) -> bool {
        self.hidden.contains(offset)
    }

    /// Whether a tag covering `range` is hidden.
    fn hides_tag(&self, range: &Range<usize>) -> bool {
        self.all.overlaps(range)
    }
}

/// The union of some byte ranges, as disjoint sorted ranges: whether an offset lies in any of
/// them is a binary search rather than a look at each.
struct Union {
    starts: Vec<usize>,
    ends: Vec<usize>,
}

impl Union {
    fn new(mut ranges: Vec<Range<usize>>) -> Self {
        // An empty range holds no offset (and no zone is empty: each holds its delimiters).
        ranges.retain(|r| r.start < r.end);
        ranges.sort_unstable_by_key(|r| r.start);
        let (mut starts, mut ends): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
        for r in ranges {
            match ends.last_mut() {
                Some(end) if r.start <= *end => *end = (*end).max(r.end),
                _ => {
                    starts.push(r.start);
                    ends.push(r.end);
                }
            }
        }
        Self { starts, ends }
    }

    /// Whether some range holds `offset`.
    fn contains(&self, offset: usize) -> bool {
        let i = self.starts.partition_point(|s| *s <= offset);
        i > 0 && offset < self.ends[i - 1]
    }

    /// Whether some range shares a byte with `range`.
    fn overlaps(&self, range: &Range<usize>) -> bool {
        let i = self.ends.partition_point(|e| *e <= range.start);
        i < self.starts.len() && self.starts[i] < range.end
    }
}

/// The first occurrence of `needle` at or after a position, for positions that never go back:
/// the text after a position is searched once, however often it is asked about, where a search
/// from every opener to the end of the text would make a note of openers quadratic.
struct Next<'t> {
    text: &'t str,
    needle: &'static str,
    /// The last answer, and whether the text holds no more.
    found: Option<usize>,
    exhausted: bool,
}

impl<'t> Next<'t> {
    fn new(text: &'t str, needle: &'static str) -> Self {
        Self { text, needle, found: None, exhausted: false }
    }

    fn at(&mut self, at: usize) -> Option<usize> {
        match self.found {
            Some(found) if found >= at => return Some(found),
            _ if self.exhausted => return None,
            _ => {}
        }
        self.found = self.text[at..].find(self.needle).map(|i| at + i);
        self.exhausted = self.found.is_none();
        self.found
    }
}

pub fn parse(
    text: &str,
    body_start: usize,
    lines: &Lines<'_>,
    note: &mut Note,
    steps: &mut Steps<'_>,
) -> Result<(), Cancelled> {
    let body = &text[body_start..];
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_FOOTNOTES;
    let mut zones = Vec::new();
    let mut md_links: Vec<(Range<usize>, String, bool, String)> = Vec::new(); // range, dest, image, text
    let mut headings: Vec<(u8, Range<usize>, String)> = Vec::new();
    // Open links, innermost last: `[![badge](img.png)](Note.md)` is an image inside a link. The
    // destination is None for an autolink (or a reference not followed), which is kept open only
    // so its end pops it.
    let mut open_links: Vec<(usize, Option<String>, bool, String)> = Vec::new();
    // Links and images opened past MAX_LINK_NESTING, and not yet closed.
    let mut too_deep = 0usize;
    let mut open_heading: Option<(u8, usize, String)> = None;
    for (event, range) in Parser::new_ext(body, options).into_offset_iter() {
        steps.tick()?;
        let range = range.start + body_start..range.end + body_start;
        match event {
            Event::Start(Tag::CodeBlock(_)) => zones.push(range),
            Event::Code(_) => zones.push(range),
            // A raw HTML block (a `<div>`, a `<!-- -->` comment on lines of its own, ...) is one
            // `html` section in Obsidian's cache, and nothing inside one is indexed.
            Event::Start(Tag::HtmlBlock) => zones.push(range),
            Event::Start(Tag::Link { .. } | Tag::Image { .. }) if open_links.len() >= MAX_LINK_NESTING => too_deep += 1,
            // An autolink (`<https://x.org>`, `<mailto:a@b.c>`, `<name@example.com>`) is a URL
            // or an address in Obsidian, never a link to a note.
            Event::Start(Tag::Link { link_type, dest_url, .. }) => {
                let dest = (!matches!(link_type, LinkType::Autolink | LinkType::Email)
                    && followed(link_type, &dest_url))
                .then(|| dest_url.to_string());
                open_links.push((range.start, dest, false, String::new()))
            }
            Event::Start(Tag::Image { link_type, dest_url, .. }) => {
                let dest = followed(link_type, &dest_url).then(|| dest_url.to_string());
                open_links.push((range.start, dest, true, String::new()))
            }
            Event::End(TagEnd::Link) | Event::End(TagEnd::Image) if too_deep > 0 => too_deep -= 1,
            Event::End(TagEnd::Link) | Event::End(TagEnd::Image) => {
                if let Some((start, dest, image, text)) = open_links.pop() {
                    if let Some((_, _, _, outer)) = open_links.last_mut() {
                        outer.push_str(&text);
                    }
                    if let Some(dest) = dest {
                        md_links.push((start..range.end, dest, image, text));
                    }
                }
            }
            Event::Start(Tag::Heading { level, .. }) => {
                open_heading = Some((level_of(level), range.start, String::new()))
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, start, text)) = open_heading.take() {
                    headings.push((level, start..range.end, text.trim().to_string()));
                }
            }
            Event::Text(t) => {
                if let Some((_, _, _, text)) = open_links.last_mut() {
                    text.push_str(&t);
                }
                if let Some((_, _, text)) = open_heading.as_mut() {
                    text.push_str(&t);
                }
            }
            _ => {}
        }
    }
    // HTML comments and %%comments%%, outside code and HTML blocks, in file order (whichever
    // opens first hides the other's opener). A %%comment%% hides only when it spans lines.
    let code = Union::new(zones.clone());
    let mut percent = Vec::new();
    let mut next_html = Next::new(text, "<!--");
    let mut next_percent = Next::new(text, "%%");
    let mut at = body_start;
    loop {
        steps.tick()?;
        let html = next_html.at(at);
        let pct = next_percent.at(at);
        let (open, is_html) = match (html, pct) {
            (Some(h), Some(p)) if h < p => (h, true),
            (Some(h), None) => (h, true),
            (_, Some(p)) => (p, false),
            (None, None) => break,
        };
        let (opener, closer) = if is_html { ("<!--", "-->") } else { ("%%", "%%") };
        if code.contains(open) {
            at = open + opener.len();
            continue;
        }
        let close = text[open + opener.len()..]
            .find(closer)
            .map(|c| open + opener.len() + c + closer.len())
            .unwrap_or(text.len());
        if is_html {
            zones.push(open..close);
        } else if text[open..close].contains('\n') {
            percent.push(open..close);
        }
        at = close;
    }
    let mut hidden = zones.clone();
    hidden.extend(percent);
    let zones = Zones { all: Union::new(zones), hidden: Union::new(hidden) };

    // Links a multi-line %%comment%% hides: no tag is looked for inside them either.
    let mut shadowed = Vec::new();
    wikilinks(text, body_start, lines, &zones, &mut shadowed, note, steps)?;
    for (range, dest, image, label) in md_links {
        steps.tick()?;
        // A link starting in a zone is hidden; one whose text holds inline code is not.
        if zones.contains(range.start) {
            shadowed.push(range);
            continue;
        }
        if is_external(&dest) || dest.is_empty() {
            continue;
        }
        let decoded = percent_decode(&dest);
        let (target, subpath, _) = split_wikilink(&decoded.replace('|', "%7C"));
        note.links.push(Link {
            kind: if image { LinkKind::Embed } else { LinkKind::Body },
            wiki: false,
            raw: text[range.clone()].to_string(),
            target: target.replace("%7C", "|"),
            subpath,
            alias: (!label.is_empty()).then_some(label),
            span: lines.span(range),
            property: None,
        });
    }
    let end = text.len();
    for (i, (level, range, heading_text)) in headings.iter().enumerate() {
        steps.tick()?;
        if zones.contains(range.start) {
            continue;
        }
        let section_end = headings[i + 1..].iter().find(|(l, _, _)| l <= level).map(|(_, r, _)| r.start).unwrap_or(end);
        note.headings.push(Heading {
            level: *level,
            text: heading_text.clone(),
            span: lines.span(range.clone()),
            section: range.start..section_end,
        });
    }
    lines_pass(text, body_start, lines, &zones, &shadowed, note, steps)
}

/// Whether a link's destination is looked at: not a reference link's overlong one.
fn followed(link_type: LinkType, dest: &str) -> bool {
    matches!(link_type, LinkType::Inline | LinkType::Autolink | LinkType::Email)
        || dest.len() <= MAX_REFERENCE_DESTINATION
}

fn level_of(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// `[[...]]` and `![[...]]`: on one line, outside the zones. Those a zone hides go to `hidden`.
fn wikilinks(
    text: &str,
    body_start: usize,
    lines: &Lines<'_>,
    zones: &Zones,
    hidden: &mut Vec<Range<usize>>,
    note: &mut Note,
    steps: &mut Steps<'_>,
) -> Result<(), Cancelled> {
    // Each asked at openers in file order, so the text is searched once whatever the openers.
    let mut line_ends = Next::new(text, "\n");
    let mut closers = Next::new(text, "]]");
    let mut openers = Next::new(text, "[[");
    let mut at = body_start;
    while let Some(found) = text[at..].find("[[") {
        steps.tick()?;
        let open = at + found;
        at = open + 2;
        if zones.all.contains(open) {
            continue;
        }
        let line_end = line_ends.at(open).unwrap_or(text.len());
        // The first `]]` on the opener's line (one cannot hold a line break).
        let Some(close) = closers.at(open + 2).filter(|c| c + 2 <= line_end).map(|c| c - (open + 2)) else {
            continue;
        };
        let inner = &text[open + 2..open + 2 + close];
        // Blank (looked at from its start, which stops at the first visible character), or
        // holding another opener.
        if inner.chars().all(char::is_whitespace) || openers.at(open + 2).is_some_and(|o| o + 2 <= open + 2 + close) {
            continue;
        }
        if zones.contains(open) {
            hidden.push(open..open + 2 + close + 2);
            at = open + 2 + close + 2;
            continue;
        }
        let embed = open > body_start && text.as_bytes()[open - 1] == b'!';
        let start = if embed { open - 1 } else { open };
        let end = open + 2 + close + 2;
        let (target, subpath, alias) = split_wikilink(inner);
        note.links.push(Link {
            kind: if embed { LinkKind::Embed } else { LinkKind::Body },
            wiki: true,
            raw: text[start..end].to_string(),
            target,
            subpath,
            alias,
            span: lines.span(start..end),
            property: None,
        });
        at = end;
    }
    Ok(())
}

/// Line by line: tasks, block ids, inline tags.
fn lines_pass(
    text: &str,
    body_start: usize,
    lines: &Lines<'_>,
    zones: &Zones,
    shadowed: &[Range<usize>],
    note: &mut Note,
    steps: &mut Steps<'_>,
) -> Result<(), Cancelled> {
    let link_ranges = Union::new(
        note.links
            .iter()
            .filter(|l| l.kind != LinkKind::Property)
            .map(|l| l.span.range())
            .chain(shadowed.iter().cloned())
            .collect(),
    );
    for line in lines.line_of(body_start)..lines.count() {
        steps.tick()?;
        let range = lines.line_range(line);
        if range.start < body_start {
            continue;
        }
        let content = &text[range.clone()];
        if !zones.contains(range.start) {
            if let Some(task) = task(content) {
                note.tasks.push(Task { status: task.0, text: task.1.to_string(), span: lines.span(range.clone()) });
            }
            if let Some(id) = block_id(content) {
                let start = range.end - id.len() - 1;
                if !zones.contains(start) {
                    note.blocks.push(BlockId { id: id.to_string(), span: lines.span(start..range.end), line });
                }
            }
        }
        for (offset, name) in inline_tags(content) {
            let start = range.start + offset;
            let end = start + 1 + name.len();
            if zones.hides_tag(&(start..end)) || link_ranges.contains(start) {
                continue;
            }
            note.tags.push(crate::Tag {
                name: name.to_string(),
                source: TagSource::Inline,
                span: Some(lines.span(start..end)),
            });
        }
    }
    Ok(())
}

/// `- [ ] text`, `* [x] text`, `1. [?] text`: (status, text).
fn task(line: &str) -> Option<(char, &str)> {
    let trimmed = line.trim_start_matches([' ', '\t']).trim_start_matches('>').trim_start();
    let rest = if let Some(r) = trimmed.strip_prefix(['-', '*', '+']) {
        r
    } else {
        let digits = trimmed.find(|c: char| !c.is_ascii_digit()).unwrap_or(0);
        if digits == 0 {
            return None;
        }
        trimmed[digits..].strip_prefix(['.', ')'])?
    };
    let rest = rest.strip_prefix([' ', '\t'])?.trim_start();
    let mut chars = rest.chars();
    if chars.next()? != '[' {
        return None;
    }
    let status = chars.next()?;
    if chars.next()? != ']' || status == '\n' {
        return None;
    }
    let after = &rest[2 + status.len_utf8()..];
    if !(after.is_empty() || after.starts_with([' ', '\t'])) {
        return None;
    }
    Some((status, after.trim()))
}

/// A `^block-id` closing the line, after whitespace.
fn block_id(line: &str) -> Option<&str> {
    let trimmed = line.trim_end();
    let caret = trimmed.rfind('^')?;
    let id = &trimmed[caret + 1..];
    let before = &trimmed[..caret];
    let valid = !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    (valid && (before.is_empty() || before.ends_with([' ', '\t']))).then_some(id)
}

/// `#tag` and `#nested/tag`: at the line start or after whitespace; letters, digits, `_`, `-`,
/// `/` and any non-ASCII; not all digits. Returns (byte offset of `#`, name).
fn inline_tags(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    for (i, _) in line.match_indices('#') {
        if i > 0 && !(bytes[i - 1] as char).is_ascii_whitespace() {
            continue;
        }
        let rest = &line[i + 1..];
        let len = rest
            .char_indices()
            .find(|(_, c)| !(c.is_alphanumeric() || *c == '_' || *c == '-' || *c == '/' || !c.is_ascii()))
            .map(|(at, _)| at)
            .unwrap_or(rest.len());
        let name = rest[..len].trim_end_matches('/');
        if name.is_empty() || name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        out.push((i, name));
    }
    out
}

fn is_external(dest: &str) -> bool {
    match dest.split_once(':') {
        // A scheme is letters (and + - .) before the colon; a Windows-style "C:" is not a link here.
        Some((scheme, _)) => scheme.len() > 1 && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)),
        None => dest.starts_with("//"),
    }
}

/// `%20` and friends, as Obsidian decodes markdown link targets.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = ((bytes[i + 1] as char).to_digit(16), (bytes[i + 2] as char).to_digit(16))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}
