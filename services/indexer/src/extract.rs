//! From a parsed note to the rows the index keeps: no I/O. Links come out unresolved; the
//! indexer resolves them against the vault's files afterwards.

use otc_parser::{LinkKind, Note, Subpath, TagSource};
use otc_store::{ChunkRecord, FileEntry, LinkRecord, NoteRecord, TagRecord, TaskRecord};
use serde_json::{Value, json};

/// Chunks are cut at headings, and a section longer than this is cut again at a paragraph
/// break (else a line break, else anywhere on a character boundary).
pub const MAX_CHUNK_BYTES: usize = 2_000;

/// The note's title as Obsidian shows it: the file name without `.md`.
pub fn title_of(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.strip_suffix(".md").unwrap_or(name).to_string()
}

/// The index rows of one note. `bytes` is the stored content (read as UTF-8; anything else is
/// read with replacement characters and named in the warnings).
pub fn note_record(entry: &FileEntry, bytes: &[u8]) -> NoteRecord {
    let (text, lossy) = match std::str::from_utf8(bytes) {
        Ok(text) => (std::borrow::Cow::Borrowed(text), false),
        Err(_) => (String::from_utf8_lossy(bytes), true),
    };
    let note = otc_parser::parse(&text);
    let mut warnings = note.warnings.clone();
    if lossy {
        warnings.push("the note is not valid UTF-8; it was read with replacement characters".into());
    }
    let (frontmatter, frontmatter_error) = match &note.frontmatter {
        Some(fm) => (fm.value.clone(), fm.error.clone()),
        None => (None, None),
    };
    let properties = match &frontmatter {
        Some(Value::Object(map)) => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        _ => Vec::new(),
    };
    NoteRecord {
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
        body_line: otc_parser::Lines::new(&text).pos(note.body_start).line as i32,
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
        chunks: chunks(&text, &note),
    }
}

/// Tags without repeats (case-insensitively, as Obsidian counts them), first spelling kept.
fn distinct_tags(note: &Note) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    note.tags.iter().filter(|t| seen.insert(t.name.to_lowercase())).map(|t| t.name.clone()).collect()
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
    let mut bounds: Vec<(usize, String)> = vec![(note.body_start, String::new())];
    let mut stack: Vec<(u8, &str)> = Vec::new();
    for h in &note.headings {
        while stack.last().is_some_and(|(level, _)| *level >= h.level) {
            stack.pop();
        }
        stack.push((h.level, &h.text));
        let path = stack.iter().map(|(_, t)| *t).collect::<Vec<_>>().join(" > ");
        bounds.push((h.span.start.offset, path));
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
    let lines = otc_parser::Lines::new(text);
    let mut out = Vec::new();
    for (start, end, path) in merged {
        let mut at = start;
        while at < end {
            let cut = cut_point(text, at, end);
            let piece = &text[at..cut];
            if !piece.trim().is_empty() {
                out.push(ChunkRecord {
                    heading_path: path.clone(),
                    start: at as i32,
                    end: cut as i32,
                    line: lines.pos(at).line as i32,
                    text: piece.to_string(),
                });
            }
            at = cut;
        }
    }
    out
}

/// Where the chunk starting at `start` ends: `end` when the rest fits, else the last
/// paragraph break (or line break) within the limit, else the limit on a char boundary.
fn cut_point(text: &str, start: usize, end: usize) -> usize {
    if end - start <= MAX_CHUNK_BYTES {
        return end;
    }
    let mut limit = start + MAX_CHUNK_BYTES;
    while !text.is_char_boundary(limit) {
        limit -= 1;
    }
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
    fn invalid_utf8_is_read_lossily_and_warned() {
        let r = note_record(&entry("x.md"), b"ok [[A]] \xff\xfe");
        assert_eq!(r.links.len(), 1);
        assert!(r.warnings.iter().any(|w| w.contains("UTF-8")));
    }
}
