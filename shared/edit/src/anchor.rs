//! Where an anchor sits in a note (a heading's subtree, a block's line, the preamble above the
//! first heading) and the edits the write tools make there: append, prepend, replace, and an
//! exact-text replacement inside the anchor. Every edit splices one range of the text; every
//! byte outside it stays as it was.

use std::ops::Range;

use otc_errors::{ErrorCode, ToolError};
use otc_parser::{Heading, Lines, Note};

/// Where to act.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A heading (text without #s, case-insensitive; "Parent > Child" to pick one under a
    /// parent), the n-th (1-based) when several match.
    Heading { heading: String, occurrence: Option<u32> },
    /// The block ending in `^id`.
    Block { id: String },
    /// The body above the first heading (after the frontmatter).
    Preamble,
}

/// A located anchor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The whole anchor: a heading's line and its subtree, a block's line (without its line
    /// break), or the preamble.
    pub range: Range<usize>,
    /// What a replace swaps: below a heading's line; the same as `range` otherwise.
    pub inner: Range<usize>,
    /// 0-based line of the anchor's first line.
    pub line: usize,
    pub heading_level: Option<u8>,
    /// The heading line's own text (without its line break), for headings.
    pub heading_line: Option<String>,
}

fn anchor_error(message: impl Into<String>, target: &Target) -> ToolError {
    ToolError::with_message(ErrorCode::InvalidInput, message.into())
        .detail("field", "anchor")
        .detail("anchor", format!("{target:?}"))
}

/// The most candidate lines an ambiguous heading's refusal lists (`details.matches` counts them
/// all), so the refusal stays small whatever the note holds.
pub const MAX_LISTED_LINES: usize = 20;

/// The heading `wanted` names ("Parent > Child" with each earlier part an enclosing heading),
/// the `occurrence`-th when several match; refused when missing, or ambiguous without one.
pub fn find_heading<'n>(note: &'n Note, wanted: &str, occurrence: Option<u32>) -> Result<&'n Heading, ToolError> {
    let target = Target::Heading { heading: wanted.to_string(), occurrence };
    let parts: Vec<String> = wanted.split(" > ").map(|p| p.trim().to_lowercase()).collect();
    let last = parts.last().cloned().unwrap_or_default();
    let matches: Vec<&Heading> = note
        .headings
        .iter()
        .enumerate()
        .filter(|(_, h)| h.text.to_lowercase() == last)
        .filter(|(i, h)| {
            // Each earlier part must name an enclosing heading, innermost last.
            let mut level = h.level;
            let mut want = parts.len().saturating_sub(1);
            for prev in note.headings[..*i].iter().rev() {
                if want == 0 {
                    break;
                }
                if prev.level < level {
                    if prev.text.to_lowercase() == parts[want - 1] {
                        want -= 1;
                    }
                    level = prev.level;
                }
            }
            want == 0
        })
        .map(|(_, h)| h)
        .collect();
    if matches.len() > 1 && occurrence.is_none() {
        return Err(anchor_error("the heading is ambiguous; pass occurrence", &target)
            .detail("lines", matches.iter().take(MAX_LISTED_LINES).map(|h| h.span.start.line + 1).collect::<Vec<_>>())
            .detail("matches", matches.len()));
    }
    let index = occurrence.map_or(0, |o| o.saturating_sub(1) as usize);
    matches.get(index).copied().ok_or_else(|| anchor_error("target heading not found", &target))
}

/// Where `target` sits in `text` (parsed as `note`).
pub fn locate(text: &str, note: &Note, target: &Target) -> Result<Located, ToolError> {
    let lines = Lines::new(text);
    match target {
        Target::Heading { heading, occurrence } => {
            let h = find_heading(note, heading, *occurrence)?;
            let line = lines.line_range(h.span.start.line);
            let after_line = next_line_start(text, line.end);
            Ok(Located {
                range: h.section.clone(),
                inner: after_line.min(h.section.end)..h.section.end,
                line: h.span.start.line,
                heading_level: Some(h.level),
                heading_line: Some(text[line].to_string()),
            })
        }
        Target::Block { id } => {
            let id = id.trim_start_matches('^');
            let b = note
                .blocks
                .iter()
                .find(|b| b.id == id)
                .ok_or_else(|| anchor_error("block reference not found", target))?;
            let range = lines.line_range(b.line);
            Ok(Located { range: range.clone(), inner: range, line: b.line, heading_level: None, heading_line: None })
        }
        Target::Preamble => {
            let end = note.headings.first().map_or(text.len(), |h| h.section.start);
            let start = note.body_start.min(end);
            Ok(Located {
                range: start..end,
                inner: start..end,
                line: lines.line_of(start),
                heading_level: None,
                heading_line: None,
            })
        }
    }
}

/// The edit to make at an anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op<'a> {
    Append(&'a str),
    Prepend(&'a str),
    /// Swaps the anchor's content (below a heading's line; a block's line keeps its `^id`).
    /// Content that starts with the heading's own line replaces the heading line too.
    Replace(&'a str),
    /// Replaces `old`, which must occur exactly once inside the anchor, with `new`.
    ReplaceText {
        old: &'a str,
        new: &'a str,
    },
}

/// A patched note and what the patch took out of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patched {
    pub text: String,
    pub lines_removed: usize,
    pub bytes_removed: usize,
}

fn next_line_start(text: &str, from: usize) -> usize {
    text[from..].find('\n').map_or(text.len(), |i| from + i + 1)
}

/// The line break the note uses.
pub fn line_break(text: &str) -> &'static str {
    if text.contains("\r\n") { "\r\n" } else { "\n" }
}

/// `content` as whole lines: ending in a line break (the note's own kind).
fn as_lines(content: &str, nl: &str) -> String {
    let mut out = content.to_string();
    if !out.ends_with('\n') {
        out.push_str(nl);
    }
    out
}

/// Counted lines of a removed piece of text.
fn line_count(removed: &str) -> usize {
    if removed.is_empty() { 0 } else { removed.trim_end_matches(['\r', '\n']).split('\n').count() }
}

fn splice(text: &str, range: Range<usize>, with: &str) -> String {
    let mut out = String::with_capacity(text.len() + with.len());
    out.push_str(&text[..range.start]);
    out.push_str(with);
    out.push_str(&text[range.end..]);
    out
}

/// The end of `range`'s last non-blank line (after its line break), so an append lands before
/// the blank lines that separate the anchor from what follows.
fn content_end(text: &str, range: &Range<usize>) -> usize {
    let piece = &text[range.clone()];
    let trimmed = piece.trim_end_matches(['\r', '\n', ' ', '\t']);
    if trimmed.is_empty() {
        return range.start;
    }
    let end = range.start + trimmed.len();
    next_line_start(text, end).min(range.end.max(end))
}

/// Applies `op` at `target` in `text`.
pub fn patch(text: &str, note: &Note, target: &Target, op: Op<'_>) -> Result<Patched, ToolError> {
    let at = locate(text, note, target)?;
    let nl = line_break(text);
    let unchanged = |text: String| Patched { text, lines_removed: 0, bytes_removed: 0 };
    match (target, op) {
        (_, Op::ReplaceText { old, new }) => {
            if old.is_empty() {
                return Err(ToolError::with_message(ErrorCode::InvalidInput, "old_string must not be empty")
                    .detail("field", "old_string"));
            }
            let scope = &text[at.range.clone()];
            let found: Vec<usize> = scope.match_indices(old).map(|(i, _)| i).collect();
            if found.len() != 1 {
                return Err(ToolError::with_message(
                    ErrorCode::InvalidInput,
                    format!(
                        "replace_text: old_string must occur exactly once in the anchor's section; it occurs {} times",
                        found.len()
                    ),
                )
                .detail("field", "old_string")
                .detail("occurrences", found.len()));
            }
            let start = at.range.start + found[0];
            Ok(Patched {
                text: splice(text, start..start + old.len(), new),
                lines_removed: line_count(old),
                bytes_removed: old.len(),
            })
        }
        (Target::Block { id }, op) => {
            let line = &text[at.range.clone()];
            let after = next_line_start(text, at.range.end);
            match op {
                Op::Append(content) => {
                    let insert = if after == text.len() && !text.ends_with('\n') {
                        format!("{nl}{}", content.trim_end_matches(['\r', '\n']))
                    } else {
                        as_lines(content, nl)
                    };
                    Ok(unchanged(splice(text, after..after, &insert)))
                }
                Op::Prepend(content) => {
                    Ok(unchanged(splice(text, at.range.start..at.range.start, &as_lines(content, nl))))
                }
                Op::Replace(content) => {
                    let id = id.trim_start_matches('^');
                    let mut new_line = content.trim_end_matches(['\r', '\n']).to_string();
                    if !new_line.contains(&format!("^{id}")) {
                        new_line.push_str(&format!(" ^{id}"));
                    }
                    Ok(Patched {
                        text: splice(text, at.range.clone(), &new_line),
                        lines_removed: 1,
                        bytes_removed: line.len(),
                    })
                }
                Op::ReplaceText { .. } => unreachable!("handled above"),
            }
        }
        (_, Op::Append(content)) => {
            let at_end = content_end(text, &at.inner);
            let insert_at = if at.heading_level.is_some() { at_end.max(at.inner.start) } else { at_end };
            let needs_break = insert_at > 0 && !text[..insert_at].ends_with('\n');
            let mut insert = String::new();
            if needs_break {
                insert.push_str(nl);
            }
            insert.push_str(&as_lines(content, nl));
            Ok(unchanged(splice(text, insert_at..insert_at, &insert)))
        }
        (_, Op::Prepend(content)) => {
            let mut insert = String::new();
            if at.inner.start > 0 && !text[..at.inner.start].ends_with('\n') {
                insert.push_str(nl);
            }
            insert.push_str(&as_lines(content, nl));
            Ok(unchanged(splice(text, at.inner.start..at.inner.start, &insert)))
        }
        (_, Op::Replace(content)) => {
            // Content that repeats the heading's own line replaces the heading line as well, so
            // a section read with read_note and written back is not doubled.
            let whole = at.heading_line.as_deref().is_some_and(|h| {
                content.trim_start().lines().next().is_some_and(|first| first.trim_end() == h.trim_end())
            });
            let range = if whole { at.range.clone() } else { at.inner.clone() };
            let old = &text[range.clone()];
            let mut new = as_lines(content.trim_start_matches(['\r', '\n']), nl);
            if content.trim().is_empty() {
                new.clear();
            }
            // Keep the blank line that separated the anchor from what follows.
            let separated = old.ends_with(&format!("{nl}{nl}")) || old.ends_with("\n\n");
            if separated && range.end < text.len() && !new.is_empty() && !new.ends_with(&format!("{nl}{nl}")) {
                new.push_str(nl);
            }
            if range.start > 0 && !text[..range.start].ends_with('\n') {
                new.insert_str(0, nl);
            }
            Ok(Patched {
                text: splice(text, range.clone(), &new),
                lines_removed: line_count(old),
                bytes_removed: old.len(),
            })
        }
    }
}

/// Appends `content` under the heading `heading` of `text`, creating the heading at the end of
/// the note (level 2, or one below its parent when written "Parent > Child" and the parent
/// exists) when it is missing and `create` is set.
pub fn append_under_heading(
    text: &str,
    note: &Note,
    heading: &str,
    occurrence: Option<u32>,
    content: &str,
    create: bool,
) -> Result<(Patched, bool), ToolError> {
    let target = Target::Heading { heading: heading.to_string(), occurrence };
    match find_heading(note, heading, occurrence) {
        Ok(_) => Ok((patch(text, note, &target, Op::Append(content))?, false)),
        Err(e) if create && e.message == "target heading not found" => {
            let nl = line_break(text);
            let parts: Vec<&str> = heading.split(" > ").map(str::trim).collect();
            let name = parts.last().copied().unwrap_or(heading).to_string();
            let parent = (parts.len() > 1).then(|| parts[..parts.len() - 1].join(" > "));
            let (insert_at, level) = match parent.as_deref().map(|p| find_heading(note, p, None)) {
                Some(Ok(p)) => (content_end(text, &p.section).max(p.section.start), p.level + 1),
                _ => (text.len(), 2),
            };
            let mut insert = String::new();
            if insert_at > 0 && !text[..insert_at].ends_with('\n') {
                insert.push_str(nl);
            }
            if insert_at > 0 {
                insert.push_str(nl);
            }
            insert.push_str(&"#".repeat(level.min(6) as usize));
            insert.push(' ');
            insert.push_str(&name);
            insert.push_str(nl);
            insert.push_str(&as_lines(content, nl));
            Ok((
                Patched { text: splice(text, insert_at..insert_at, &insert), lines_removed: 0, bytes_removed: 0 },
                true,
            ))
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, target: Target, op: Op<'_>) -> Patched {
        patch(text, &otc_parser::parse(text), &target, op).unwrap()
    }

    fn heading(h: &str) -> Target {
        Target::Heading { heading: h.into(), occurrence: None }
    }

    const NOTE: &str =
        "---\ntags: [a]\n---\nIntro line.\n\n# One\nfirst\n\n## Sub\nsub text\n\n# Two\nsecond ^blk\nlast\n";

    #[test]
    fn append_lands_at_the_end_of_the_subtree_before_the_blank_line() {
        let out = run(NOTE, heading("One"), Op::Append("added"));
        assert_eq!(out.text, NOTE.replace("sub text\n\n# Two", "sub text\nadded\n\n# Two"));
        let out = run(NOTE, heading("Two"), Op::Append("tail"));
        assert_eq!(out.text, format!("{NOTE}tail\n"));
    }

    #[test]
    fn prepend_goes_right_under_the_heading_line() {
        let out = run(NOTE, heading("One > Sub"), Op::Prepend("top"));
        assert_eq!(out.text, NOTE.replace("## Sub\n", "## Sub\ntop\n"));
    }

    #[test]
    fn replace_keeps_the_heading_and_the_separation_and_counts_what_it_removed() {
        let out = run(NOTE, heading("Sub"), Op::Replace("new body"));
        assert_eq!(out.text, NOTE.replace("sub text\n", "new body\n"));
        assert_eq!((out.lines_removed, out.bytes_removed), (1, "sub text\n\n".len()));
        // Content that repeats the heading line replaces the whole subtree.
        let out = run(NOTE, heading("Sub"), Op::Replace("## Sub\nrewritten\n"));
        assert_eq!(out.text, NOTE.replace("## Sub\nsub text\n", "## Sub\nrewritten\n"));
    }

    #[test]
    fn blocks_keep_their_id_and_the_preamble_is_the_body_above_the_first_heading() {
        let out = run(NOTE, Target::Block { id: "blk".into() }, Op::Replace("changed"));
        assert_eq!(out.text, NOTE.replace("second ^blk", "changed ^blk"));
        let out = run(NOTE, Target::Block { id: "^blk".into() }, Op::Append("after"));
        assert_eq!(out.text, NOTE.replace("second ^blk\n", "second ^blk\nafter\n"));
        let out = run(NOTE, Target::Preamble, Op::Prepend("first!"));
        assert_eq!(out.text, NOTE.replace("---\nIntro", "---\nfirst!\nIntro"));
        let out = run(NOTE, Target::Preamble, Op::Append("more"));
        assert_eq!(out.text, NOTE.replace("Intro line.\n", "Intro line.\nmore\n"));
    }

    #[test]
    fn replace_text_needs_exactly_one_occurrence_inside_the_anchor() {
        let out = run(NOTE, heading("Two"), Op::ReplaceText { old: "last", new: "final" });
        assert_eq!(out.text, NOTE.replace("last\n", "final\n"));
        let note = otc_parser::parse(NOTE);
        let err = patch(NOTE, &note, &heading("One"), Op::ReplaceText { old: "t", new: "x" }).unwrap_err();
        assert_eq!(err.details["occurrences"], 3);
        let err = patch(NOTE, &note, &heading("Two"), Op::ReplaceText { old: "first", new: "x" }).unwrap_err();
        assert_eq!(err.details["occurrences"], 0, "outside the anchor does not count");
    }

    #[test]
    fn missing_and_ambiguous_headings_are_refused() {
        let text = "# A\n## X\n# B\n## X\n";
        let note = otc_parser::parse(text);
        let err = patch(text, &note, &heading("X"), Op::Append("y")).unwrap_err();
        assert_eq!(err.details["lines"], serde_json::json!([2, 4]));
        let out = patch(text, &note, &heading("B > X"), Op::Append("y")).unwrap();
        assert_eq!(out.text, "# A\n## X\n# B\n## X\ny\n");
        let out = patch(text, &note, &Target::Heading { heading: "X".into(), occurrence: Some(1) }, Op::Append("y"));
        assert_eq!(out.unwrap().text, "# A\n## X\ny\n# B\n## X\n");
        assert!(patch(text, &note, &heading("Nope"), Op::Append("y")).is_err());
        // However many headings match, the refusal lists the first few and counts them all.
        let many = "## X\n".repeat(5_000);
        let note = otc_parser::parse(&many);
        let err = patch(&many, &note, &heading("X"), Op::Append("y")).unwrap_err();
        assert_eq!(err.details["lines"].as_array().unwrap().len(), MAX_LISTED_LINES);
        assert_eq!(err.details["matches"], 5_000);
        assert!(err.to_payload().to_string().len() < 2_000);
    }

    #[test]
    fn crlf_notes_get_crlf_lines_and_a_heading_can_be_created() {
        let text = "# A\r\nbody\r\n";
        let out = run(text, heading("A"), Op::Append("more"));
        assert_eq!(out.text, "# A\r\nbody\r\nmore\r\n");
        let note = otc_parser::parse(text);
        let (out, created) = append_under_heading(text, &note, "Log", None, "entry", true).unwrap();
        assert!(created);
        assert_eq!(out.text, "# A\r\nbody\r\n\r\n## Log\r\nentry\r\n");
        let (out, created) = append_under_heading(text, &note, "A > Log", None, "entry", true).unwrap();
        assert!(created);
        assert_eq!(out.text, "# A\r\nbody\r\n\r\n## Log\r\nentry\r\n");
        assert!(append_under_heading(text, &note, "Log", None, "entry", false).is_err());
    }
}
