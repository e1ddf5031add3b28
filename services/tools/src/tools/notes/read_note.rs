use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{self, Content, read_content};
use otc_kernel::writing::{Anchor, AnchorKind};
use otc_kernel::{CallContext, Tool};

pub struct ReadNote;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Required unless period is given.
    #[serde(default)]
    pub path: Option<String>,
    /// Instead of path: the periodic note for date.
    #[serde(default)]
    pub period: Option<crate::tools::workspace::periodic::PeriodArg>,
    /// YYYY-MM-DD (default today, UTC).
    #[serde(default)]
    pub date: Option<String>,
    #[serde(default)]
    pub anchor: Option<Anchor>,
    /// full adds frontmatter, tags and file stat; section is the anchor's part.
    #[serde(default)]
    pub format: Option<Projection>,
    /// format full: add outgoing links.
    #[serde(default)]
    pub include_links: Option<bool>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
    #[serde(default)]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Projection {
    Content,
    Full,
    DocumentMap,
    Section,
}

/// The note, shaped by format and response_format. Every shape carries content_hash: the
/// expected hash the next write of the note passes.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    /// The hash of the whole note (hex SHA-256).
    pub content_hash: String,
    /// The raw markdown (detailed, content, full).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The note without its frontmatter (detailed and concise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The properties (absent when the note has none or they do not parse).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontmatter: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub has_frontmatter: Option<bool>,
    /// Why the frontmatter does not parse (the note is still returned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontmatter_error: Option<String>,
    /// Size in bytes and modification time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stat: Option<Stat>,
    /// format full: every tag, inline and frontmatter, without #.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// format full with include_links: the outgoing vault-internal links.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<LinkOut>>,
    /// format document-map: headings (1-based lines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headings: Option<Vec<HeadingOut>>,
    /// format document-map: block ids.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocks: Option<Vec<BlockOut>>,
    /// format document-map: the top-level frontmatter properties.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontmatter_fields: Option<Vec<String>>,
    /// The part `anchor` names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section: Option<Section>,
    /// A note longer than a page is read in pages: where this one lies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<PageOut>,
    /// Present while the text goes on past this page: pass it as cursor for the next one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How many headings and blocks a long document map left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub omitted: Option<Omitted>,
    /// What this answer does not cover (a document map read from a partly indexed note).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PageOut {
    /// The page's bytes: start inclusive, end exclusive, of size in all.
    pub start_byte: u64,
    pub end_byte: u64,
    pub size: u64,
    /// 1-based, inclusive.
    pub start_line: u64,
    pub end_line: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Omitted {
    pub headings: usize,
    pub blocks: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Stat {
    pub size: i64,
    /// RFC 3339.
    pub mtime: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct LinkOut {
    pub target: String,
    /// The vault path it resolves to, when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_path: Option<String>,
    /// body or embed; property for a link in a frontmatter value.
    pub kind: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct HeadingOut {
    pub level: u8,
    pub text: String,
    pub line: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BlockOut {
    pub id: String,
    pub line: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Section {
    /// The part's text (a heading's line and its subtree; a block's line; a property's value as
    /// YAML-free JSON text).
    pub text: String,
    /// 1-based, inclusive, counted in the whole file.
    pub start_line: usize,
    pub end_line: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heading_level: Option<u8>,
    /// type frontmatter: the property's value, as JSON text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

fn anchor_error(message: &str, anchor: &Anchor) -> ToolError {
    ToolError::with_message(ErrorCode::InvalidInput, message.to_string())
        .detail("field", "anchor")
        .detail("anchor", format!("{anchor:?}"))
}

/// The part of `text` the anchor names.
pub fn section(text: &str, note: &otc_parser::Note, anchor: &Anchor) -> Result<Section, ToolError> {
    let lines = otc_parser::Lines::new(text);
    let end_line = |end: usize| lines.pos(end.saturating_sub(1)).line + 1;
    match anchor.kind {
        AnchorKind::Heading => {
            let wanted = anchor.heading.as_deref().ok_or_else(|| anchor_error("anchor.heading is required", anchor))?;
            let h = otc_edit::anchor::find_heading(note, wanted, anchor.occurrence)?;
            Ok(Section {
                text: text[h.section.clone()].to_string(),
                start_line: h.span.start.line + 1,
                end_line: end_line(h.section.end),
                heading_level: Some(h.level),
                value: None,
            })
        }
        AnchorKind::Block => {
            let id = anchor.block_id.as_deref().ok_or_else(|| anchor_error("anchor.block_id is required", anchor))?;
            let at = otc_edit::anchor::locate(text, note, &otc_edit::anchor::Target::Block { id: id.to_string() })?;
            Ok(Section {
                text: text[at.range].trim_end_matches(['\r', '\n']).to_string(),
                start_line: at.line + 1,
                end_line: at.line + 1,
                heading_level: None,
                value: None,
            })
        }
        AnchorKind::Frontmatter => {
            let field = anchor.field.as_deref().ok_or_else(|| anchor_error("anchor.field is required", anchor))?;
            let fm = note.frontmatter.as_ref().ok_or_else(|| anchor_error("the note has no frontmatter", anchor))?;
            let value = fm
                .value
                .as_ref()
                .and_then(|v| v.get(field))
                .cloned()
                .ok_or_else(|| anchor_error("frontmatter field not found", anchor))?;
            Ok(Section {
                text: match &value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                },
                start_line: fm.span.start.line + 1,
                end_line: fm.span.end.line,
                heading_level: None,
                value: Some(value.to_string()),
            })
        }
    }
}

impl Tool for ReadNote {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        essentials: true,
        whole_note_reader: true,
        response_format: Format::Takes,
        ..ToolSpec::base(
            "read_note",
            "Read a note",
            "Reads a note, or the part anchor names (a heading's subtree, a block, a frontmatter field); format \
             document-map lists those parts.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let path = match (&input.path, input.period) {
            (Some(path), None) => path.clone(),
            (None, Some(period)) => {
                crate::tools::workspace::periodic::resolve(ctx, &view, period, input.date.as_deref()).await?.path
            }
            _ => {
                return Err(ToolError::with_message(ErrorCode::InvalidInput, "give either path or period")
                    .detail("field", "path"));
            }
        };
        let response = format::resolve(input.response_format, input.verbosity, ctx.default_format());
        let projection = match (input.format, &input.anchor) {
            (Some(Projection::Section), None) => {
                return Err(ToolError::with_message(ErrorCode::InvalidInput, "format section needs an anchor")
                    .detail("field", "anchor"));
            }
            (None, Some(_)) => Some(Projection::Section),
            (p, _) => p,
        };
        view.readable_path(&path)?;
        let entry = reading::file_entry(ctx, view.vault.id, &path).await?.ok_or_else(|| reading::not_found(&path))?;
        let size = u64::try_from(entry.size).unwrap_or(0);
        // A note longer than a page is a large read: it waits its turn like other heavy work.
        let _large = match size > reading::page_bytes(ctx) {
            true => ctx.heavy_turn(otc_catalog::Heavy::LargeRead).await?,
            false => None,
        };
        let mut out = Output::of(&view.vault.name, &path, &entry);
        if let Some(cursor) = &input.cursor {
            if matches!(projection, Some(Projection::DocumentMap | Projection::Full)) {
                return Err(ToolError::with_message(
                    ErrorCode::InvalidInput,
                    "a cursor pages the note's text: leave format out, or give content or section",
                )
                .detail("field", "cursor"));
            }
            let page = reading::read_next_page(ctx, &path, &entry, cursor).await?;
            out.paged(page, size);
            return Ok(out);
        }
        let whole = ctx.services().config.tools.max_parse_bytes;
        match projection {
            // Longer than a page: the first page, read alone.
            Some(Projection::Content) | None if size > reading::page_bytes(ctx) => {
                let page = reading::read_page(ctx, &entry, 0, size, 1).await?;
                let head = otc_parser::parse_head(&page.text);
                if projection.is_none() && response == ResponseFormat::Detailed {
                    out.has_frontmatter = Some(head.frontmatter.is_some());
                    out.frontmatter = frontmatter_map(&head);
                    out.frontmatter_error = head.frontmatter.as_ref().and_then(|f| f.error.clone());
                    out.stat = Some(Stat { size: entry.size, mtime: entry.mtime.to_rfc3339() });
                }
                out.paged(page, size);
                if projection.is_none() && response == ResponseFormat::Concise {
                    out.body = out.content.take().map(|text| text[head.body_start..].to_string());
                }
                return Ok(out);
            }
            // Too large to parse: what the index holds.
            Some(Projection::DocumentMap) if size > whole => {
                let meta = indexed(ctx, &view, &path, &entry).await?;
                out.document_map(
                    ctx,
                    headings_of(&meta.headings).map(|h| HeadingOut { level: h.level, text: h.text, line: h.line + 1 }),
                    blocks_of(&meta.blocks),
                    meta.frontmatter.as_ref().and_then(Value::as_object),
                );
                let covered = ctx.services().config.index.max_indexed_bytes as u64;
                if size > covered {
                    out.warnings = Some(vec![format!(
                        "the note is {size} bytes and the index holds its first {covered} \
                         (index.max_indexed_bytes): headings and blocks after that are not listed"
                    )]);
                }
                return Ok(out);
            }
            Some(Projection::Section) if size > whole => {
                let anchor = input.anchor.as_ref().expect("a section has an anchor");
                let (Some(wanted), AnchorKind::Heading) = (anchor.heading.as_deref(), anchor.kind) else {
                    return Err(reading::too_large_to_parse(ctx, &path, &entry));
                };
                let meta = indexed(ctx, &view, &path, &entry).await?;
                // The headings alone, so the heading is found as a parsed note finds it.
                let outline = otc_parser::Note {
                    headings: headings_of(&meta.headings).map(IndexedHeading::heading).collect(),
                    ..otc_parser::Note::default()
                };
                let found = otc_edit::anchor::find_heading(&outline, wanted, anchor.occurrence)?;
                let (start, end) = (found.span.start.offset as u64, found.section.end as u64);
                let page = reading::read_page(ctx, &entry, start, end, found.span.start.line as u64 + 1).await?;
                out.section = Some(Section {
                    text: page.text.clone(),
                    start_line: page.start_line as usize,
                    end_line: page.end_line as usize,
                    heading_level: Some(found.level),
                    value: None,
                });
                out.page = Some(PageOut::of(&page, size));
                out.next_cursor = page.next;
                return Ok(out);
            }
            _ => {}
        }
        let Content { text, .. } = read_content(ctx, &view, &path).await?;
        // The body is parsed only for the projections that show what is in it; the others read
        // the frontmatter alone.
        let parsed = match projection {
            Some(Projection::Section | Projection::DocumentMap | Projection::Full) => {
                Some(otc_kernel::memory::parse_note(&text)?)
            }
            _ => None,
        };
        let head = match &parsed {
            Some(note) => note.head(),
            None => otc_parser::parse_head(&text),
        };
        let frontmatter = frontmatter_map(&head);
        out.frontmatter_error = head.frontmatter.as_ref().and_then(|f| f.error.clone());
        let body = text[head.body_start..].to_string();
        let stat = Stat { size: entry.size, mtime: entry.mtime.to_rfc3339() };
        match projection {
            Some(Projection::Section) => {
                let anchor = input.anchor.as_ref().expect("checked above");
                let note = parsed.as_ref().expect("parsed above for this projection");
                out.section = Some(section(&text, note, anchor)?);
            }
            Some(Projection::Content) => out.content = Some(text),
            Some(Projection::DocumentMap) => {
                let note = parsed.as_ref().expect("parsed above for this projection");
                out.document_map(
                    ctx,
                    note.headings.iter().map(|h| HeadingOut {
                        level: h.level,
                        text: h.text.clone(),
                        line: h.span.start.line + 1,
                    }),
                    note.blocks.iter().map(|b| BlockOut { id: b.id.clone(), line: b.line + 1 }),
                    frontmatter.as_ref(),
                );
            }
            Some(Projection::Full) => {
                let note = parsed.as_ref().expect("parsed above for this projection");
                out.has_frontmatter = Some(head.frontmatter.is_some());
                out.frontmatter = frontmatter.clone();
                out.body = Some(body);
                out.content = Some(text.clone());
                out.stat = Some(stat);
                let mut seen = std::collections::HashSet::new();
                out.tags = Some(
                    note.tags.iter().filter(|t| seen.insert(t.name.to_lowercase())).map(|t| t.name.clone()).collect(),
                );
                if input.include_links == Some(true) {
                    let mut tx = ctx.begin().await?;
                    let links = tx.outgoing_links(view.vault.id, &path).await?;
                    tx.commit().await?;
                    out.links = Some(
                        links
                            .into_iter()
                            .filter(|l| !l.target.is_empty())
                            .map(|l| LinkOut {
                                target: l.target,
                                target_path: l.resolved_path.filter(|p| view.can_read(p)),
                                kind: l.kind,
                            })
                            .collect(),
                    );
                }
            }
            None => match response {
                ResponseFormat::Concise => out.body = Some(body),
                ResponseFormat::Detailed => {
                    out.has_frontmatter = Some(head.frontmatter.is_some());
                    out.frontmatter = frontmatter;
                    out.body = Some(body);
                    out.content = Some(text);
                    out.stat = Some(stat);
                }
            },
        }
        Ok(out)
    }
}

fn frontmatter_map(head: &otc_parser::Head) -> Option<Map<String, Value>> {
    match head.frontmatter.as_ref().and_then(|f| f.value.clone()) {
        Some(Value::Object(map)) => Some(map),
        _ => None,
    }
}

impl Output {
    fn of(vault: &str, path: &str, entry: &otc_store::FileEntry) -> Self {
        Output {
            vault: vault.to_string(),
            path: path.to_string(),
            content_hash: hex::encode(entry.hash),
            content: None,
            body: None,
            frontmatter: None,
            has_frontmatter: None,
            frontmatter_error: None,
            stat: None,
            tags: None,
            links: None,
            headings: None,
            blocks: None,
            frontmatter_fields: None,
            section: None,
            page: None,
            next_cursor: None,
            omitted: None,
            warnings: None,
        }
    }

    fn paged(&mut self, page: reading::Page, size: u64) {
        self.page = Some(PageOut::of(&page, size));
        self.next_cursor = page.next;
        self.content = Some(page.text);
    }

    /// The document map, its lists cut to what fits a page of the answer (the rest counted).
    fn document_map(
        &mut self,
        ctx: &CallContext<'_>,
        headings: impl Iterator<Item = HeadingOut>,
        blocks: impl Iterator<Item = BlockOut>,
        frontmatter: Option<&Map<String, Value>>,
    ) {
        let budget = reading::page_bytes(ctx) as usize;
        let (headings, more_headings) = reading::fit_counted(headings, budget);
        let (blocks, more_blocks) = reading::fit_counted(blocks, budget / 4);
        self.headings = Some(headings);
        self.blocks = Some(blocks);
        self.frontmatter_fields = Some(frontmatter.iter().flat_map(|m| m.keys().cloned()).collect());
        if more_headings + more_blocks > 0 {
            self.omitted = Some(Omitted { headings: more_headings, blocks: more_blocks });
        }
    }
}

impl PageOut {
    fn of(page: &reading::Page, size: u64) -> Self {
        PageOut {
            start_byte: page.start,
            end_byte: page.end,
            size,
            start_line: page.start_line,
            end_line: page.end_line,
        }
    }
}

/// The index row of a note too large to parse, when the index has caught up with it.
async fn indexed(
    ctx: &CallContext<'_>,
    view: &otc_kernel::reading::View,
    path: &str,
    entry: &otc_store::FileEntry,
) -> Result<otc_store::NoteMeta, ToolError> {
    let mut tx = ctx.begin().await?;
    let meta = tx.note_meta(view.vault.id, path, None).await?;
    tx.commit().await?;
    match meta {
        Some(meta) if meta.content_hash == entry.hash => Ok(meta),
        _ => Err(reading::too_large_to_parse(ctx, path, entry)
            .detail("index", "the index has not caught up with this version of the note yet; try again shortly")),
    }
}

/// A heading as the index keeps it: 0-based line, and the bytes of its section.
#[derive(Deserialize)]
struct IndexedHeading {
    level: u8,
    text: String,
    line: usize,
    start: u64,
    end: u64,
}

impl IndexedHeading {
    fn heading(self) -> otc_parser::Heading {
        let at = otc_parser::Pos { offset: self.start as usize, line: self.line, col: 0 };
        otc_parser::Heading {
            level: self.level,
            text: self.text,
            span: otc_parser::Span { start: at, end: at },
            section: self.start as usize..self.end as usize,
        }
    }
}

fn headings_of(headings: &Value) -> impl Iterator<Item = IndexedHeading> + '_ {
    headings.as_array().into_iter().flatten().filter_map(|h| serde_json::from_value(h.clone()).ok())
}

fn blocks_of(blocks: &Value) -> impl Iterator<Item = BlockOut> + '_ {
    blocks.as_array().into_iter().flatten().filter_map(|b| {
        Some(BlockOut { id: b.get("id")?.as_str()?.to_string(), line: b.get("line")?.as_u64()? as usize + 1 })
    })
}
