//! Obsidian markdown, parsed with no I/O. Everything found carries its exact byte range and its
//! line and column, so later rewrites can splice the text in place.
//!
//! Positions: `offset` is a byte offset into the whole note; `line` and `col` are 0-based, the
//! column counted in characters (as Obsidian's own cache counts them). Property links are
//! positioned in the file like everything else.

mod body;
mod frontmatter;
mod lines;

use serde::Serialize;

pub use lines::Lines;

/// A place in the note.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Pos {
    pub offset: usize,
    pub line: usize,
    pub col: usize,
}

/// A range of the note: `start` inclusive, `end` exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Span {
    pub start: Pos,
    pub end: Pos,
}

impl Span {
    pub fn range(&self) -> std::ops::Range<usize> {
        self.start.offset..self.end.offset
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkKind {
    /// `[[X]]` or `[text](X)` in the body.
    Body,
    /// `![[X]]` or `![alt](X)`.
    Embed,
    /// A wikilink inside a frontmatter string value.
    Property,
}

/// What follows `#` in a link target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", content = "value", rename_all = "lowercase")]
pub enum Subpath {
    /// `#Heading` (nested headings as `A#B`).
    Heading(String),
    /// `#^block-id`.
    Block(String),
}

/// One link, wikilink or markdown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Link {
    pub kind: LinkKind,
    /// Whether it is written `[[...]]` (else `[...](...)`).
    pub wiki: bool,
    /// The whole link as written, brackets included.
    pub raw: String,
    /// The target path or name as Obsidian reads it (markdown targets percent-decoded); empty
    /// for a link into the same note (`[[#Heading]]`).
    pub target: String,
    pub subpath: Option<Subpath>,
    /// `[[X|alias]]`, or a markdown link's text.
    pub alias: Option<String>,
    pub span: Span,
    /// For property links: the top-level property it sits under.
    pub property: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Heading {
    pub level: u8,
    pub text: String,
    /// The heading line.
    pub span: Span,
    /// The heading's subtree: up to the next heading of the same or a higher level.
    pub section: std::ops::Range<usize>,
}

/// A `^block-id` at the end of a block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockId {
    pub id: String,
    pub span: Span,
    /// The block it names (its line).
    pub line: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TagSource {
    Inline,
    Frontmatter,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tag {
    /// Without the `#`; nested tags keep their `/`.
    pub name: String,
    pub source: TagSource,
    /// Inline tags only.
    pub span: Option<Span>,
}

/// A list item with a checkbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Task {
    /// The character between the brackets: ' ' open, 'x' done, others custom.
    pub status: char,
    pub text: String,
    pub span: Span,
}

impl Task {
    pub fn done(&self) -> bool {
        matches!(self.status, 'x' | 'X')
    }
}

/// The YAML block at the top of a note.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Frontmatter {
    /// The whole block, `---` lines included.
    pub span: Span,
    /// The properties, or `None` when the YAML does not parse.
    pub value: Option<serde_json::Value>,
    pub error: Option<String>,
}

/// Everything found in one note.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Note {
    pub frontmatter: Option<Frontmatter>,
    /// Body and property links, in file order.
    pub links: Vec<Link>,
    pub headings: Vec<Heading>,
    pub blocks: Vec<BlockId>,
    pub tags: Vec<Tag>,
    pub aliases: Vec<String>,
    pub tasks: Vec<Task>,
    /// Where the body starts (after the frontmatter).
    pub body_start: usize,
    pub warnings: Vec<String>,
}

/// Parses one note.
pub fn parse(text: &str) -> Note {
    parse_cancellable(text, &|| false).unwrap_or_else(|Cancelled| unreachable!("never cancelled"))
}

/// Parsing stopped because its caller's cancellation check said so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("parsing was cancelled")
    }
}

impl std::error::Error for Cancelled {}

/// [`parse`], asking `cancelled` every [`Steps::EVERY`] steps of every pass (a step is a
/// markdown event, a line, an opener ...; parsing is linear in the note's size, so that is a
/// fraction of a millisecond of work) and giving up as soon as it answers true.
pub fn parse_cancellable(text: &str, cancelled: &dyn Fn() -> bool) -> Result<Note, Cancelled> {
    let mut steps = Steps::new(cancelled);
    let lines = Lines::new(text);
    let mut note = Note {
        frontmatter: None,
        links: Vec::new(),
        headings: Vec::new(),
        blocks: Vec::new(),
        tags: Vec::new(),
        aliases: Vec::new(),
        tasks: Vec::new(),
        body_start: 0,
        warnings: Vec::new(),
    };
    if let Some(found) = frontmatter::parse(text, &lines, &mut steps)? {
        note.body_start = found.body_start;
        note.links.extend(found.links);
        note.tags.extend(found.tags.into_iter().map(|name| Tag { name, source: TagSource::Frontmatter, span: None }));
        note.aliases = found.aliases;
        if let Some(error) = &found.frontmatter.error {
            note.warnings.push(format!("frontmatter does not parse: {error}"));
        }
        note.frontmatter = Some(found.frontmatter);
    }
    body::parse(text, note.body_start, &lines, &mut note, &mut steps)?;
    steps.check()?;
    note.links.sort_by_key(|l| l.span.start.offset);
    Ok(note)
}

/// Counts the steps of a parse and asks the cancellation check every so often.
pub struct Steps<'a> {
    cancelled: &'a dyn Fn() -> bool,
    left: u32,
}

impl<'a> Steps<'a> {
    /// Steps between two checks.
    pub const EVERY: u32 = 1024;

    pub fn new(cancelled: &'a dyn Fn() -> bool) -> Self {
        Self { cancelled, left: Self::EVERY }
    }

    /// One step; every [`Self::EVERY`]th asks the check.
    #[inline]
    pub fn tick(&mut self) -> Result<(), Cancelled> {
        self.left -= 1;
        if self.left == 0 {
            self.left = Self::EVERY;
            return self.check();
        }
        Ok(())
    }

    /// Asks the check now.
    pub fn check(&self) -> Result<(), Cancelled> {
        if (self.cancelled)() { Err(Cancelled) } else { Ok(()) }
    }
}

/// The frontmatter of a note and where its body starts, without reading the body: for readers
/// that need nothing else (a body is most of a note's parsing time).
#[derive(Debug, Clone, PartialEq)]
pub struct Head {
    pub frontmatter: Option<Frontmatter>,
    pub body_start: usize,
}

impl Note {
    /// The frontmatter and where the body starts, as [`parse_head`] would give them.
    pub fn head(&self) -> Head {
        Head { frontmatter: self.frontmatter.clone(), body_start: self.body_start }
    }
}

/// Reads only the frontmatter block; agrees with [`parse`] on both fields.
pub fn parse_head(text: &str) -> Head {
    let lines = Lines::new(text);
    let never = || false;
    match frontmatter::parse(text, &lines, &mut Steps::new(&never)).unwrap_or_else(|Cancelled| unreachable!()) {
        Some(found) => Head { frontmatter: Some(found.frontmatter), body_start: found.body_start },
        None => Head { frontmatter: None, body_start: 0 },
    }
}

/// Splits a wikilink's inner text (`target#sub|alias`) into its parts.
pub fn split_wikilink(inner: &str) -> (String, Option<Subpath>, Option<String>) {
    // In a table the pipe is escaped: `[[X\|alias]]`.
    let (link, alias) = match inner.find("\\|") {
        Some(at) => (&inner[..at], Some(&inner[at + 2..])),
        None => match inner.split_once('|') {
            Some((link, alias)) => (link, Some(alias)),
            None => (inner, None),
        },
    };
    let (target, subpath) = match link.split_once('#') {
        Some((target, sub)) => {
            let sub = match sub.strip_prefix('^') {
                Some(block) => Subpath::Block(block.trim().to_string()),
                None => Subpath::Heading(sub.trim().to_string()),
            };
            (target, Some(sub))
        }
        None => (link, None),
    };
    (target.trim().to_string(), subpath, alias.map(|a| a.to_string()))
}

#[cfg(test)]
mod scaling_tests;
#[cfg(test)]
mod tests;
