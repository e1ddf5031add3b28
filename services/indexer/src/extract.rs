//! From a parsed note to the rows the index keeps: no I/O. Links come out unresolved; the
//! indexer resolves them against the vault's files afterwards.

use otc_parser::{Cancelled, Lines, LinkKind, Note, Steps, Subpath, TagSource};
use otc_store::{ChunkRecord, FileEntry, LinkRecord, NoteRecord, TagRecord, TaskRecord};
use serde_json::{Value, json};

/// Chunks are cut at headings, and a section longer than this is cut again at a paragraph
/// break (else a line break, else anywhere on a character boundary).
pub const MAX_CHUNK_BYTES: usize = 2_000;

/// A chunk's heading path keeps this much of each heading's text, and this much in all: every
/// chunk of a section carries its path, so a heading of megabytes would otherwise be copied
/// into each of its thousands of chunks.
pub const MAX_HEADING_PATH_BYTES: usize = 1_000;

/// How much of a note is indexed when nothing else is configured (`index.max_indexed_bytes`).
pub const DEFAULT_MAX_INDEXED_BYTES: usize = 4 * 1024 * 1024;

/// The note's title as Obsidian shows it: the file name without `.md`.
pub fn title_of(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.strip_suffix(".md").unwrap_or(name).to_string()
}

/// The index rows of one note, of its first [`DEFAULT_MAX_INDEXED_BYTES`]. `bytes` is the
/// stored content (read as UTF-8; anything else is read with replacement characters and named
/// in the warnings).
pub fn note_record(entry: &FileEntry, bytes: &[u8]) -> NoteRecord {
    note_record_within(entry, bytes, DEFAULT_MAX_INDEXED_BYTES, &|| false)
        .unwrap_or_else(|Cancelled| unreachable!("never cancelled"))
}

/// The index rows of one note, reading no more than its first `max_bytes` (see
/// [`indexed_prefix`]; a note cut short says so in its warnings) and asking `cancelled` every
/// so often (a fraction of a millisecond of work), giving up when it answers true.
pub fn note_record_within(
    entry: &FileEntry,
    bytes: &[u8],
    max_bytes: usize,
    cancelled: &dyn Fn() -> bool,
) -> Result<NoteRecord, Cancelled> {
    let indexed = indexed_prefix(bytes, max_bytes);
    let (text, lossy) = match std::str::from_utf8(indexed) {
        Ok(text) => (std::borrow::Cow::Borrowed(text), false),
        Err(_) => (String::from_utf8_lossy(indexed), true),
    };
    let note = otc_parser::parse_cancellable(&text, cancelled)?;
    let lines = Lines::new(&text);
    let mut warnings = note.warnings.clone();
    if lossy {
        warnings.push("the note is not valid UTF-8; it was read with replacement characters".into());
    }
    if indexed.len() < bytes.len() {
        warnings.push(format!(
            "indexed the first {} of {} bytes (index.max_indexed_bytes is {max_bytes})",
            indexed.len(),
            bytes.len()
        ));
    }
    let chunks = chunks_of(&text, &note, &lines, &mut Steps::new(cancelled))?;
    let (frontmatter, frontmatter_error) = match &note.frontmatter {
        Some(fm) => (fm.value.clone(), fm.error.clone()),
        None => (None, None),
    };
    let properties = match &frontmatter {
        Some(Value::Object(map)) => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        _ => Vec::new(),
    };
    Ok(NoteRecord {
        path: entry.path.clone(),
        title: title_of(&entry.path),
        aliases: note.aliases.clone(),
        frontmatter,
        frontmatter_error,
        tags: distinct_tags(&note),
        headings: Value::Array(
            note.headings
                .iter()
                .map(|h| {
                    json!({
                        "level": h.level, "text": h.text, "line": h.span.start.line,
                        "start": h.span.start.offset, "end": h.section.end,
                    })
                })
                .collect(),
        ),
        blocks: Value::Array(note.blocks.iter().map(|b| json!({ "id": b.id, "line": b.line })).collect()),
        body_line: lines.line_of(note.body_start) as i32,
        size: entry.size,
        mtime: entry.mtime,
        content_hash: entry.hash,
        indexed_hash: otc_blobs::Blobs::hash_of(bytes),
        warnings,
        links: links(&note),
        tag_occurrences: note
            .tags
            .iter()
            .map(|t| TagRecord {
                tag: t.name.clone(),
                source: match t.source {
                    TagSource::Inline => "inline",
                    TagSource::Frontmatter => "frontmatter",
                }
                .into(),
                start: t.span.map(|s| s.start.offset as i32),
                line: t.span.map(|s| s.start.line as i32),
            })
            .collect(),
        properties,
        tasks: note
            .tasks
            .iter()
            .map(|t| TaskRecord {
                status: t.status.to_string(),
                done: t.done(),
                text: t.text.clone(),
                line: t.span.start.line as i32,
                start: t.span.start.offset as i32,
                end: t.span.end.offset as i32,
            })
            .collect(),
        chunks,
    })
}

/// The part of a note that is indexed: all of it when it has at most `max` bytes, else its
/// first `max` bytes cut after the last line break in their second half or, with none there,
/// on a character boundary (for UTF-8; invalid bytes are read lossily anyway).
pub fn indexed_prefix(bytes: &[u8], max: usize) -> &[u8] {
    if bytes.len() <= max {
        return bytes;
    }
    if let Some(at) = bytes[max / 2..max].iter().rposition(|b| *b == b'\n') {
        return &bytes[..max / 2 + at + 1];
    }
    let mut cut = max;
    // Back over continuation bytes (at most three in UTF-8) to the start of a character.
    for _ in 0..3 {
        if cut > 0 && (bytes[cut] as i8) < -0x40 {
            cut -= 1;
        }
    }
    &bytes[..cut]
}

/// Tags without repeats (case-insensitively, as Obsidian counts them), first spelling kept.
fn distinct_tags(note: &Note) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    note.tags.iter().filter(|t| seen.insert(t.name.to_lowercase())).map(|t| t.name.clone()).collect()
}

/// One link of a canvas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanvasLink {
    pub record: LinkRecord,
    /// A file node's file: a vault path, resolved exactly (not as a link's text is).
    pub file_node: bool,
}

/// A canvas's links (JSON Canvas 1.0): each file node's file (its path without any `#subpath`,
/// the node's `subpath` kept), as an embed (the canvas shows it), and the links written inside
/// each text node, in node order. Offsets point into the canvas file where the link is written
/// there verbatim (a file node's path string; a text node's link when its JSON string needs no
/// escape), else at the start of the canvas. A canvas that does not parse links to nothing.
pub fn canvas_links(text: &str) -> Vec<CanvasLink> {
    let Ok(canvas) = otc_formats::canvas::parse(text) else { return Vec::new() };
    let lines = otc_parser::Lines::new(text);
    let mut out = Vec::new();
    // Where the search for the next link resumes: nodes are written in order, and each found
    // link is passed over, so a repeated one is found at its own place.
    let mut cursor = 0;
    let mut place = |written: &str, record: &mut LinkRecord| {
        let (start, end) = match text[cursor..].find(written) {
            Some(i) => {
                let start = cursor + i;
                cursor = start + written.len();
                (start, start + written.len())
            }
            None => (0, 0),
        };
        let line = lines.line_of(start.min(text.len()));
        record.start = start as i32;
        record.end = end as i32;
        record.line = line as i32;
        record.col = (start - lines.line_range(line).start) as i32;
    };
    for node in &canvas.nodes {
        let field = |name: &str| node.get(name).and_then(serde_json::Value::as_str);
        match field("type") {
            Some("file") => {
                let Some(file) = field("file").filter(|f| !f.is_empty()) else { continue };
                let path = file.split_once('#').map_or(file, |(path, _)| path);
                let (subpath_kind, subpath) = match field("subpath").map(|s| s.trim_start_matches('#')) {
                    Some(sub) if sub.starts_with('^') => (Some("block".to_string()), Some(sub[1..].to_string())),
                    Some(sub) if !sub.is_empty() => (Some("heading".to_string()), Some(sub.to_string())),
                    _ => (None, None),
                };
                let mut record = LinkRecord {
                    kind: "embed".into(),
                    wiki: false,
                    raw: file.to_string(),
                    target: path.to_string(),
                    name_key: otc_vault::links::link_key(path),
                    resolved_path: None,
                    subpath_kind,
                    subpath,
                    alias: None,
                    property: None,
                    start: 0,
                    end: 0,
                    line: 0,
                    col: 0,
                };
                // The path as the file writes it, quotes excluded.
                let written = serde_json::to_string(file).unwrap_or_default();
                place(&written[1..written.len().saturating_sub(1).max(1)], &mut record);
                out.push(CanvasLink { record, file_node: true });
            }
            Some("text") => {
                let Some(body) = field("text") else { continue };
                for mut record in links(&otc_parser::parse(body)) {
                    let written = serde_json::to_string(&record.raw).unwrap_or_default();
                    place(&written[1..written.len().saturating_sub(1).max(1)], &mut record);
                    out.push(CanvasLink { record, file_node: false });
                }
            }
            _ => {}
        }
    }
    out
}

fn links(note: &Note) -> Vec<LinkRecord> {
    note.links
        .iter()
        .map(|l| {
            let (subpath_kind, subpath) = match &l.subpath {
                Some(Subpath::Heading(h)) => (Some("heading".to_string()), Some(h.clone())),
                Some(Subpath::Block(b)) => (Some("block".to_string()), Some(b.clone())),
                None => (None, None),
            };
            LinkRecord {
                kind: match l.kind {
                    LinkKind::Body => "body",
                    LinkKind::Embed => "embed",
                    LinkKind::Property => "property",
                }
                .into(),
                wiki: l.wiki,
                raw: l.raw.clone(),
                target: l.target.clone(),
                name_key: otc_vault::links::link_key(&l.target),
                resolved_path: None,
                subpath_kind,
                subpath,
                alias: l.alias.clone(),
                property: l.property.clone(),
                start: l.span.start.offset as i32,
                end: l.span.end.offset as i32,
                line: l.span.start.line as i32,
                col: l.span.start.col as i32,
            }
        })
        .collect()
}

/// Heading-aware chunks of the body. A chunk starts at a heading (or at the body's start) and
/// holds one or more whole consecutive sections, as many as fit in [`MAX_CHUNK_BYTES`]; a
/// section longer than that is cut again. Blank pieces are dropped. Each chunk carries the
/// heading path of its first section ("Top > Sub"); the headings themselves are in its text.
///
/// Merging small sections keeps a note's chunk count (and the full-text and trigram index
/// entries, which cost per row) down without ever cutting a section in two when it fits.
pub fn chunks(text: &str, note: &Note) -> Vec<ChunkRecord> {
    chunks_of(text, note, &Lines::new(text), &mut Steps::new(&|| false))
        .unwrap_or_else(|Cancelled| unreachable!("never cancelled"))
}

fn chunks_of(text: &str, note: &Note, lines: &Lines<'_>, steps: &mut Steps<'_>) -> Result<Vec<ChunkRecord>, Cancelled> {
    let mut bounds: Vec<(usize, String)> = vec![(note.body_start, String::new())];
    let mut stack: Vec<(u8, &str)> = Vec::new();
    for h in &note.headings {
        steps.tick()?;
        while stack.last().is_some_and(|(level, _)| *level >= h.level) {
            stack.pop();
        }
        stack.push((h.level, clip(&h.text, MAX_HEADING_PATH_BYTES)));
        let path = stack.iter().map(|(_, t)| *t).collect::<Vec<_>>().join(" > ");
        bounds.push((h.span.start.offset, clip(&path, MAX_HEADING_PATH_BYTES).to_string()));
    }
    // Sections as (start, end, heading path), then merged while they fit.
    let sections: Vec<(usize, usize, &String)> = bounds
        .iter()
        .enumerate()
        .map(|(i, (start, path))| (*start, bounds.get(i + 1).map_or(text.len(), |(next, _)| *next), path))
        .filter(|(start, end, _)| start < end)
        .collect();
    let mut merged: Vec<(usize, usize, &String)> = Vec::new();
    for (start, end, path) in sections {
        match merged.last_mut() {
            Some(last) if end - last.0 <= MAX_CHUNK_BYTES => last.1 = end,
            _ => merged.push((start, end, path)),
        }
    }
    let mut out = Vec::new();
    for (start, end, path) in merged {
        let mut at = start;
        while at < end {
            steps.tick()?;
            let cut = cut_point(text, at, end);
            let piece = &text[at..cut];
            if !piece.trim().is_empty() {
                out.push(ChunkRecord {
                    heading_path: path.clone(),
                    start: at as i32,
                    end: cut as i32,
                    line: lines.line_of(at) as i32,
                    text: piece.to_string(),
                });
            }
            at = cut;
        }
    }
    Ok(out)
}

/// `text`'s first `max` bytes at most, cut on a character boundary.
fn clip(text: &str, max: usize) -> &str {
    &text[..text.floor_char_boundary(max)]
}

/// Where the chunk starting at `start` ends: `end` when the rest fits, else the last
/// paragraph break (or line break) within the limit, else the limit on a char boundary.
fn cut_point(text: &str, start: usize, end: usize) -> usize {
    if end - start <= MAX_CHUNK_BYTES {
        return end;
    }
    let limit = text.floor_char_boundary(start + MAX_CHUNK_BYTES);
    let window = &text[start..limit];
    let half = MAX_CHUNK_BYTES / 2;
    if let Some(at) = window.rfind("\n\n").filter(|at| *at >= half) {
        return start + at + 2;
    }
    if let Some(at) = window.rfind('\n').filter(|at| *at >= half) {
        return start + at + 1;
    }
    limit
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str) -> FileEntry {
        FileEntry {
            path: path.into(),
            hash: [0; 32],
            size: 0,
            mtime: chrono::Utc::now(),
            kind: otc_store::FileKind::Note,
            seq: 1,
        }
    }

    /// The JSON Canvas sample: its three file nodes as embeds and its text node's links (the
    /// external URL is none), each pointing where the canvas file writes it.
    #[test]
    fn links_of_a_canvas() {
        let text = include_str!("../../../corpus/jsoncanvas/sample.canvas");
        let links: Vec<LinkRecord> = canvas_links(text).into_iter().map(|l| l.record).collect();
        let targets: Vec<(&str, &str)> = links.iter().map(|l| (l.kind.as_str(), l.target.as_str())).collect();
        assert_eq!(
            targets,
            [
                ("embed", "readme.md"),
                ("embed", "_site/logo.svg"),
                ("body", "/docs/apps.md"),
                ("body", "spec/1.0.md"),
                ("embed", "spec/1.0.md"),
            ]
        );
        // The sample shows spec/1.0.md twice (a text link, then a file node): each at its own place.
        let spec: Vec<i32> = links.iter().filter(|l| l.target == "spec/1.0.md").map(|l| l.start).collect();
        assert!(spec[0] < spec[1], "{spec:?}");
        for link in &links {
            assert_eq!(&text[link.start as usize..link.end as usize], link.raw, "{link:?}");
            let line = text.lines().nth(link.line as usize).unwrap();
            assert!(line.contains(&link.raw), "{link:?} on line {line:?}");
        }
        assert!(canvas_links("{not json").is_empty());
    }

    #[test]
    fn rows_of_a_note() {
        let text = "---\ntags: [Alpha, beta]\nup: \"[[Home]]\"\n---\nIntro #alpha [[Other#Part|see]]\n# Top\n- [ ] do it\n## Sub\ntext ![[pic.png]]\n# Next\nend\n";
        let r = note_record(&entry("Folder/My Note.md"), text.as_bytes());
        assert_eq!(r.title, "My Note");
        assert_eq!(r.tags, ["Alpha", "beta"]);
        assert_eq!(r.tag_occurrences.len(), 3);
        assert_eq!(r.properties.len(), 2);
        let kinds: Vec<&str> = r.links.iter().map(|l| l.kind.as_str()).collect();
        assert_eq!(kinds, ["property", "body", "embed"]);
        assert_eq!(r.links[0].property.as_deref(), Some("up"));
        assert_eq!(r.links[1].name_key, "other");
        assert_eq!(r.links[1].subpath.as_deref(), Some("Part"));
        assert_eq!(r.links[2].name_key, "pic.png");
        assert_eq!(r.tasks.len(), 1);
        // Small sections share a chunk.
        let paths: Vec<&str> = r.chunks.iter().map(|c| c.heading_path.as_str()).collect();
        assert_eq!(paths, [""]);
        // Chunks tile the body exactly.
        assert_eq!(r.chunks[0].start as usize, text.find("Intro").unwrap());
        assert_eq!(r.chunks.last().unwrap().end as usize, text.len());
        for pair in r.chunks.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
        }
        for c in &r.chunks {
            assert_eq!(&text[c.start as usize..c.end as usize], c.text);
        }
    }

    #[test]
    fn chunks_start_at_headings_and_carry_their_first_heading_path() {
        let big = "word ".repeat(300); // 1,500 bytes: two of these do not fit one chunk
        let text = format!("# Top\n{big}\n## Sub\n{big}\n## Sub2\nshort\n# Next\n{big}\n");
        let note = otc_parser::parse(&text);
        let cs = chunks(&text, &note);
        let paths: Vec<&str> = cs.iter().map(|c| c.heading_path.as_str()).collect();
        assert_eq!(paths, ["Top", "Top > Sub", "Next"]);
        assert!(cs[1].text.starts_with("## Sub\n") && cs[1].text.contains("## Sub2\nshort"));
        assert_eq!(cs.iter().map(|c| c.text.as_str()).collect::<String>(), text);
    }

    #[test]
    fn long_sections_are_cut_at_paragraphs_and_char_boundaries() {
        let para = "word ".repeat(100);
        let text = format!("# H\n{}", [para.as_str(); 12].join("\n\n"));
        let note = otc_parser::parse(&text);
        let cs = chunks(&text, &note);
        assert!(cs.len() > 2);
        for c in &cs {
            assert!(c.text.len() <= MAX_CHUNK_BYTES);
            assert_eq!(c.heading_path, "H");
        }
        let long = "é".repeat(3_000);
        let note = otc_parser::parse(&long);
        let cs = chunks(&long, &note);
        assert_eq!(cs.iter().map(|c| c.text.as_str()).collect::<String>(), long);
    }

    #[test]
    fn only_the_first_max_bytes_are_indexed_and_the_row_says_so() {
        let line = "- [ ] task [[Link]] #tag\n"; // 25 bytes
        let text = line.repeat(1_000);
        let r = note_record_within(&entry("big.md"), text.as_bytes(), 1_010, &|| false).unwrap();
        // Cut after the last line break within the limit.
        let cut = 1_000;
        assert_eq!(r.tasks.len(), 40);
        assert_eq!(r.links.len(), 40);
        assert_eq!(r.chunks.last().unwrap().end as usize, cut);
        assert!(
            r.warnings.contains(&format!(
                "indexed the first {cut} of {} bytes (index.max_indexed_bytes is 1010)",
                text.len()
            ))
        );
        assert_eq!(r.indexed_hash, otc_blobs::Blobs::hash_of(text.as_bytes()), "the hash is of the whole note");
        // Within the limit: all of it, no warning.
        let r = note_record_within(&entry("big.md"), text.as_bytes(), text.len(), &|| false).unwrap();
        assert_eq!(r.tasks.len(), 1_000);
        assert!(r.warnings.is_empty());

        // No line break in the second half: cut on a character boundary.
        let long = "é".repeat(1_000);
        assert_eq!(indexed_prefix(long.as_bytes(), 1_001).len(), 1_000);
        assert_eq!(indexed_prefix(long.as_bytes(), 1_000).len(), 1_000);
        let r = note_record_within(&entry("x.md"), long.as_bytes(), 1_001, &|| false).unwrap();
        assert!(r.warnings.iter().all(|w| !w.contains("UTF-8")), "{:?}", r.warnings);
        // A line break early on is not where a long line is cut.
        let text = format!("a\n{}", "b".repeat(5_000));
        assert_eq!(indexed_prefix(text.as_bytes(), 1_000).len(), 1_000);
    }

    #[test]
    fn heading_paths_keep_a_bounded_part_of_each_heading() {
        let text = format!("# {}\n## Sub\n{}", "h".repeat(50_000), "word ".repeat(2_000));
        let note = otc_parser::parse(&text);
        let cs = chunks(&text, &note);
        assert!(cs.len() > 25);
        assert!(cs.iter().all(|c| c.heading_path.len() <= MAX_HEADING_PATH_BYTES));
        let sub = cs.iter().find(|c| c.text.contains("## Sub")).unwrap();
        assert_eq!(sub.heading_path, "h".repeat(MAX_HEADING_PATH_BYTES), "the first heading's own chunk");
        assert_eq!(cs.last().unwrap().heading_path, "h".repeat(MAX_HEADING_PATH_BYTES));
        // Cut on a character boundary.
        assert_eq!(clip(&"é".repeat(600), MAX_HEADING_PATH_BYTES).len(), 1_000);
        assert_eq!(clip("short > path", MAX_HEADING_PATH_BYTES), "short > path");
    }

    #[test]
    fn extraction_can_be_cancelled() {
        let text = "# H\nword [[a]] #t\n".repeat(100_000);
        assert_eq!(
            note_record_within(&entry("x.md"), text.as_bytes(), usize::MAX, &|| true).map(|_| ()),
            Err(Cancelled)
        );
    }

    /// Time per byte of extraction (parse, rows, chunks) stays flat from 128 KB to 2 MB for
    /// notes of one huge heading, one huge line and many headings.
    #[test]
    fn extraction_time_grows_linearly() {
        type Make = fn(usize) -> String;
        let shapes: [(&str, Make); 3] = [
            ("one huge heading", |n| format!("# {}", "word ".repeat(n / 5))),
            ("one huge line", |n| "word [[a]] #t `c` ".repeat(n / 18)),
            ("many headings", |n| "# h\n## i\ntext\n".repeat(n / 14)),
        ];
        let per_byte = |text: &str| {
            let mut best = std::time::Duration::MAX;
            for _ in 0..2 {
                let started = std::time::Instant::now();
                std::hint::black_box(
                    note_record_within(&entry("x.md"), text.as_bytes(), usize::MAX, &|| false).unwrap(),
                );
                best = best.min(started.elapsed());
            }
            best.as_nanos() as f64 / text.len() as f64
        };
        for (name, make) in shapes {
            let (small, large) = (make(128 << 10), make(2 << 20));
            // Timed again when slow: a burst of other work on the machine can slow one run.
            let (mut at_small, mut at_large) = (f64::MAX, f64::MAX);
            for _ in 0..3 {
                at_small = at_small.min(per_byte(&small));
                at_large = at_large.min(per_byte(&large));
                if at_large < 4.0 * at_small {
                    break;
                }
            }
            assert!(at_large < 4.0 * at_small, "{name}: {at_large:.1} ns/byte at 2 MB against {at_small:.1} at 128 KB");
        }
    }

    #[test]
    fn invalid_utf8_is_read_lossily_and_warned() {
        let r = note_record(&entry("x.md"), b"ok [[A]] \xff\xfe");
        assert_eq!(r.links.len(), 1);
        assert!(r.warnings.iter().any(|w| w.contains("UTF-8")));
    }
}
