//! Boards of the Kanban community plugin (obsidian-kanban), read and edited as plain Markdown:
//! lanes are `## ` headings, cards are `- [ ] ` list items under them, a `***` line opens the
//! archive and a `%% kanban:settings` block at the end holds the board's JSON settings.
//!
//! Every edit splices only what it changes (the card it adds, or the card it moves and the line
//! break that went with it); every other byte of the file stays as it was, line endings included.

use std::ops::Range;

use otc_errors::{ErrorCode, ToolError};
use serde_json::Value;

use crate::anchor::line_break;

/// The most warnings a parse reports; one more line says that others were left out.
const MAX_WARNINGS: usize = 50;
/// The most lane titles an error lists.
const MAX_LISTED: usize = 100;

/// One card: a list item at column 0 and the indented lines that follow it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card {
    /// The text without the `- [ ] ` marker; continuation lines joined with `\n`, their common
    /// indentation (one tab, as the plugin writes it) removed.
    pub text: String,
    /// Whether its checkbox holds anything but a space (`[x]`, `[X]`, a custom status).
    pub checked: bool,
    /// 0-based line of the card's first line.
    pub line: usize,
    /// Its bytes, continuation lines included, without the final line break.
    pub range: Range<usize>,
}

/// One lane (column): a `## ` heading and the cards under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lane {
    /// The heading's text as written (trimmed), a WIP limit like `(3)` included.
    pub title: String,
    /// The WIP limit, from a title ending in `(n)`.
    pub max_items: Option<u32>,
    /// Whether a `**Complete**` line sits right under the heading: cards moved here get checked.
    pub complete: bool,
    /// Its cards, in file order.
    pub cards: Vec<Card>,
    /// 0-based line of the heading.
    pub line: usize,
    /// From the heading to the end of the lane's last non-blank line (no final line break).
    pub range: Range<usize>,
    /// The line new cards go under when the lane is empty: the heading or `**Complete**`.
    anchor: usize,
}

/// A parsed board.
#[derive(Debug, Clone, PartialEq)]
pub struct Board {
    /// The lanes above the archive divider, in file order.
    pub lanes: Vec<Lane>,
    /// The cards below the `***` divider (under `## Archive`).
    pub archive: Vec<Card>,
    /// The `%% kanban:settings` JSON, when it is there and parses.
    pub settings: Option<Value>,
    /// The settings block's bytes, from `%% kanban:settings` to its closing `%%`.
    pub settings_range: Option<Range<usize>>,
    /// What the parse skipped or could not read (cards before the first lane, stray text).
    pub warnings: Vec<String>,
}

/// The result of an edit: the new text, and where the card now sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KanbanEdit {
    /// The whole note after the edit.
    pub text: String,
    /// The destination lane's title as written.
    pub lane: String,
    /// The card's index among the destination lane's cards.
    pub position: usize,
}

/// Whether `text` is a Kanban board: its frontmatter has `kanban-plugin: board` (or `basic`,
/// as old versions wrote).
pub fn is_board(text: &str) -> bool {
    board_body(text).is_some()
}

/// Where a board's body starts; `None` when `text` is not a board.
fn board_body(text: &str) -> Option<usize> {
    let head = otc_parser::parse_head(text);
    let kind = head.frontmatter.and_then(|f| f.value)?.get("kanban-plugin")?.as_str()?.trim().to_string();
    matches!(kind.as_str(), "board" | "basic").then_some(head.body_start.min(text.len()))
}

/// Parses a board; refused (`invalid_input`, field `path`) when the note is not one.
pub fn parse_board(text: &str) -> Result<Board, ToolError> {
    let body_start = board_body(text).ok_or_else(|| {
        ToolError::with_message(
            ErrorCode::InvalidInput,
            "the note is not a Kanban board (its frontmatter has no `kanban-plugin: board`)",
        )
        .detail("field", "path")
    })?;
    Ok(parse_body(text, body_start))
}

/// Adds a card at the end of `lane`'s cards (matched case-insensitively, trimmed). A lane with a
/// `**Complete**` line gets it checked whatever `checked` says. Continuation lines of a
/// multi-line `card` are indented with a tab.
pub fn add_card(text: &str, lane: &str, card: &str, checked: bool) -> Result<KanbanEdit, ToolError> {
    let board = parse_board(text)?;
    let index = find_lane(&board, lane, "column")?;
    let dest = &board.lanes[index];
    let nl = line_break(text);
    let source = card_source(card, checked || dest.complete, nl).ok_or_else(|| {
        ToolError::with_message(ErrorCode::InvalidInput, "the card text is empty").detail("field", "text")
    })?;
    let lines = split_lines(text);
    let (at, insert) = insertion(text, &lines, &board, index, &source, nl);
    let out = apply(text, vec![(at..at, insert)])?;
    let position = dest.cards.len();
    verify(&out, index, position, &source, None)?;
    Ok(KanbanEdit { text: out, lane: dest.title.clone(), position })
}

/// Moves the card of lane `from` whose text is `card_text` (trimmed; else the one card whose
/// text starts with it) to the end of lane `to`, keeping its bytes; a lane with `**Complete**`
/// checks it. The same lane for both leaves the text as it is.
pub fn move_card(text: &str, from: &str, to: &str, card_text: &str) -> Result<KanbanEdit, ToolError> {
    let board = parse_board(text)?;
    let source_lane = find_lane(&board, from, "from")?;
    let dest_lane = find_lane(&board, to, "to")?;
    let card_index = find_card(&board.lanes[source_lane], card_text)?;
    let dest = &board.lanes[dest_lane];
    if source_lane == dest_lane {
        return Ok(KanbanEdit { text: text.to_string(), lane: dest.title.clone(), position: card_index });
    }
    let card = &board.lanes[source_lane].cards[card_index];
    let original = &text[card.range.clone()];
    let moved = if dest.complete { checked_source(original) } else { original.to_string() };
    let nl = line_break(text);
    let lines = split_lines(text);
    let (at, insert) = insertion(text, &lines, &board, dest_lane, &moved, nl);
    let out = apply(text, vec![(removal(text, &card.range), String::new()), (at..at, insert)])?;
    let position = dest.cards.len();
    verify(&out, dest_lane, position, &moved, Some((source_lane, board.lanes[source_lane].cards.len() - 1)))?;
    Ok(KanbanEdit { text: out, lane: dest.title.clone(), position })
}

/// One line: where it starts, where its content ends (before `\r\n` or `\n`) and where the
/// next one starts.
#[derive(Debug, Clone, Copy)]
struct Line {
    start: usize,
    end: usize,
    next: usize,
}

/// The lines of `text`; a final line break opens no empty line.
fn split_lines(text: &str) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let (end, next) = match text[start..].find('\n') {
            Some(i) => (start + i, start + i + 1),
            None => (text.len(), text.len()),
        };
        let end = if end > start && text.as_bytes()[end - 1] == b'\r' { end - 1 } else { end };
        lines.push(Line { start, end, next });
        start = next;
    }
    lines
}

/// Whether `line` ends in a line break (the last line may not, or may end in a lone `\r`).
fn ends_in_break(text: &str, line: Line) -> bool {
    line.next > line.start && text.as_bytes()[line.next - 1] == b'\n'
}

fn is_blank(content: &str) -> bool {
    content.trim().is_empty()
}

/// A lane heading's title: `## Title` (level 2 exactly).
fn heading_title(content: &str) -> Option<&str> {
    let rest = content.strip_prefix("##")?;
    if rest.is_empty() {
        return Some("");
    }
    if rest.starts_with([' ', '\t']) { Some(rest.trim()) } else { None }
}

/// A thematic break (`***`, `---`, `___`, spaces allowed between): the archive divider.
fn is_divider(content: &str) -> bool {
    let trimmed = content.trim_end();
    let body = trimmed.trim_start_matches(' ');
    if trimmed.len() - body.len() > 3 {
        return false;
    }
    let Some(mark) = body.chars().next() else { return false };
    if !matches!(mark, '*' | '-' | '_') {
        return false;
    }
    body.chars().all(|c| c == mark || c == ' ' || c == '\t') && body.chars().filter(|c| *c == mark).count() >= 3
}

/// A fence's character and length when `content` opens one (up to three spaces of indent).
fn fence_open(content: &str) -> Option<(char, usize)> {
    let body = content.trim_start_matches(' ');
    if content.len() - body.len() > 3 {
        return None;
    }
    let mark = body.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = body.chars().take_while(|c| *c == mark).count();
    (run >= 3).then_some((mark, run))
}

fn fence_closes(content: &str, (mark, len): (char, usize)) -> bool {
    let body = content.trim_start_matches(' ');
    if content.len() - body.len() > 3 {
        return false;
    }
    let run = body.chars().take_while(|c| *c == mark).count();
    run >= len && is_blank(&body[run * mark.len_utf8()..])
}

/// A card's marker: its length in bytes and, with a checkbox, the offset and character of its
/// status.
struct Marker {
    len: usize,
    check: Option<(usize, char)>,
}

fn card_marker(content: &str) -> Option<Marker> {
    let rest = content.strip_prefix("- ")?;
    let boxed = rest.strip_prefix('[').and_then(|inner| {
        let status = inner.chars().next()?;
        let after = inner[status.len_utf8()..].strip_prefix(']')?;
        let len = 2 + status.len_utf8();
        if after.is_empty() {
            Some(Marker { len: 2 + len, check: Some((3, status)) })
        } else if after.starts_with(' ') {
            Some(Marker { len: 2 + len + 1, check: Some((3, status)) })
        } else {
            None
        }
    });
    Some(boxed.unwrap_or(Marker { len: 2, check: None }))
}

/// A title's WIP limit: a trailing `(n)`.
fn wip_limit(title: &str) -> Option<u32> {
    let inner = title.trim_end().strip_suffix(')')?;
    let open = inner.rfind('(')?;
    let digits = &inner[open + 1..];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The title without its WIP limit.
fn bare_title(title: &str) -> &str {
    match (wip_limit(title), title.trim_end().rfind('(')) {
        (Some(_), Some(open)) => title[..open].trim(),
        _ => title.trim(),
    }
}

/// Continuation lines without their common indentation: one tab when all start with one (the
/// plugin's way), else the fewest leading whitespace characters. Blank lines become empty.
fn dedent(lines: &[&str]) -> Vec<String> {
    let filled: Vec<&str> = lines.iter().copied().filter(|l| !is_blank(l)).collect();
    let all_tabs = filled.iter().all(|l| l.starts_with('\t'));
    let common = filled.iter().map(|l| l.len() - l.trim_start_matches([' ', '\t']).len()).min().unwrap_or(0);
    lines
        .iter()
        .map(|l| {
            if is_blank(l) {
                String::new()
            } else if all_tabs {
                l[1..].to_string()
            } else {
                l[common..].to_string()
            }
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    BeforeLanes,
    Lane(usize),
    Archive,
}

/// A card being read: its first line and the lines that continue it so far.
struct OpenCard {
    line: usize,
    start: usize,
    end: usize,
    checked: bool,
    first: String,
    more: Vec<usize>,
    blanks: Vec<usize>,
    section: Section,
}

struct Warnings(Vec<String>);

impl Warnings {
    fn push(&mut self, warning: String) {
        if self.0.len() < MAX_WARNINGS {
            self.0.push(warning);
        } else if self.0.len() == MAX_WARNINGS {
            self.0.push("more warnings were left out".to_string());
        }
    }
}

fn parse_body(text: &str, body_start: usize) -> Board {
    let lines = split_lines(text);
    let mut board =
        Board { lanes: Vec::new(), archive: Vec::new(), settings: None, settings_range: None, warnings: Vec::new() };
    let mut warnings = Warnings(Vec::new());
    let mut section = Section::BeforeLanes;
    // Whether the current lane has had no line but its heading yet (for `**Complete**`).
    let mut fresh = false;
    let mut open: Option<OpenCard> = None;
    let mut fence: Option<(char, usize)> = None;
    let first = lines.partition_point(|l| l.start < body_start);
    for (index, line) in lines.iter().enumerate().skip(first) {
        let content = &text[line.start..line.end];
        if let Some(card) = open.as_mut() {
            if is_blank(content) {
                card.blanks.push(index);
                continue;
            }
            if content.starts_with([' ', '\t']) {
                card.more.append(&mut card.blanks);
                card.more.push(index);
                card.end = line.end;
                continue;
            }
        }
        if let Some(card) = open.take() {
            finish(text, &lines, card, &mut board);
        }
        if let Some(opened) = fence {
            if fence_closes(content, opened) {
                fence = None;
            }
            if !is_blank(content) {
                extend_lane(&mut board, section, line.end);
            }
            continue;
        }
        if is_blank(content) {
            continue;
        }
        if let Some(opened) = fence_open(content) {
            fence = Some(opened);
            if section != Section::BeforeLanes {
                warnings.push(format!("line {}: a code block on the board is ignored", index + 1));
            }
            extend_lane(&mut board, section, line.end);
            fresh = false;
            continue;
        }
        if content.starts_with("%% kanban:settings") {
            let (settings, range, problem) = read_settings(text, &lines, index);
            board.settings = settings;
            board.settings_range = Some(range);
            if let Some(problem) = problem {
                warnings.push(problem);
            }
            break;
        }
        if is_divider(content) {
            section = Section::Archive;
            continue;
        }
        if let Some(title) = heading_title(content) {
            if section != Section::Archive {
                board.lanes.push(Lane {
                    title: title.to_string(),
                    max_items: wip_limit(title),
                    complete: false,
                    cards: Vec::new(),
                    line: index,
                    range: line.start..line.end,
                    anchor: index,
                });
                section = Section::Lane(board.lanes.len() - 1);
                fresh = true;
            }
            continue;
        }
        if let Some(marker) = card_marker(content) {
            if section == Section::BeforeLanes {
                warnings.push(format!("line {}: a card before the first lane is ignored", index + 1));
            }
            open = Some(OpenCard {
                line: index,
                start: line.start,
                end: line.end,
                checked: marker.check.is_some_and(|(_, status)| status != ' '),
                first: content[marker.len..].to_string(),
                more: Vec::new(),
                blanks: Vec::new(),
                section,
            });
            fresh = false;
            continue;
        }
        if let Section::Lane(lane) = section
            && fresh
            && content.trim() == "**Complete**"
            && let Some(lane) = board.lanes.get_mut(lane)
        {
            lane.complete = true;
            lane.anchor = index;
            lane.range.end = line.end;
            fresh = false;
            continue;
        }
        if section != Section::BeforeLanes {
            warnings.push(format!("line {}: not a card, ignored", index + 1));
        }
        extend_lane(&mut board, section, line.end);
        fresh = false;
    }
    if let Some(card) = open.take() {
        finish(text, &lines, card, &mut board);
    }
    board.warnings = warnings.0;
    board
}

/// Stretches the current lane's range to `end`.
fn extend_lane(board: &mut Board, section: Section, end: usize) {
    if let Section::Lane(lane) = section
        && let Some(lane) = board.lanes.get_mut(lane)
    {
        lane.range.end = end;
    }
}

/// Files a card that has been read to the end into its lane or the archive.
fn finish(text: &str, lines: &[Line], card: OpenCard, board: &mut Board) {
    let more: Vec<&str> = card.more.iter().map(|i| &text[lines[*i].start..lines[*i].end]).collect();
    let mut joined = card.first;
    for line in dedent(&more) {
        joined.push('\n');
        joined.push_str(&line);
    }
    let parsed = Card { text: joined, checked: card.checked, line: card.line, range: card.start..card.end };
    match card.section {
        Section::Lane(lane) => {
            if let Some(lane) = board.lanes.get_mut(lane) {
                lane.range.end = card.end;
                lane.cards.push(parsed);
            }
        }
        Section::Archive => board.archive.push(parsed),
        Section::BeforeLanes => {}
    }
}

/// The settings block that starts at line `from`: its JSON (if it parses), its range, and a
/// warning when it does not parse.
fn read_settings(text: &str, lines: &[Line], from: usize) -> (Option<Value>, Range<usize>, Option<String>) {
    let mut json = String::new();
    let mut end = lines[from].end;
    for line in &lines[from + 1..] {
        let content = &text[line.start..line.end];
        if !is_blank(content) {
            end = line.end;
        }
        if content.trim() == "%%" {
            break;
        }
        if content.trim_start().starts_with("```") {
            continue;
        }
        json.push_str(content);
        json.push('\n');
    }
    let range = lines[from].start..end;
    match serde_json::from_str::<Value>(&json) {
        Ok(value) => (Some(value), range, None),
        Err(e) => (None, range, Some(format!("line {}: the kanban settings do not parse as JSON: {e}", from + 1))),
    }
}

/// The lane `name` names: its title, else its title without the WIP limit, compared trimmed and
/// case-insensitively; the first when several do.
fn find_lane(board: &Board, name: &str, field: &str) -> Result<usize, ToolError> {
    let wanted = name.trim().to_lowercase();
    let found = if wanted.is_empty() {
        None
    } else {
        board
            .lanes
            .iter()
            .position(|l| l.title.trim().to_lowercase() == wanted)
            .or_else(|| board.lanes.iter().position(|l| bare_title(&l.title).to_lowercase() == wanted))
    };
    found.ok_or_else(|| {
        let columns: Vec<&str> = board.lanes.iter().take(MAX_LISTED).map(|l| l.title.as_str()).collect();
        ToolError::with_message(ErrorCode::InvalidInput, "the board has no column of that name")
            .detail("field", field)
            .echo("name", name)
            .detail("columns", columns)
            .bounded()
    })
}

/// The card of `lane` whose text is `card_text` (trimmed), else the one whose text starts with it.
fn find_card(lane: &Lane, card_text: &str) -> Result<usize, ToolError> {
    let wanted = card_text.replace("\r\n", "\n");
    let wanted = wanted.trim();
    let refuse = |message: &str| {
        ToolError::with_message(ErrorCode::InvalidInput, message.to_string())
            .detail("field", "card_text")
            .detail("column", lane.title.clone())
    };
    if wanted.is_empty() {
        return Err(refuse("card_text must not be empty"));
    }
    if let Some(index) = lane.cards.iter().position(|c| c.text.trim() == wanted) {
        return Ok(index);
    }
    let starting: Vec<usize> = lane
        .cards
        .iter()
        .enumerate()
        .filter(|(_, c)| c.text.trim_start().starts_with(wanted))
        .map(|(i, _)| i)
        .collect();
    match starting.as_slice() {
        [index] => Ok(*index),
        [] => Err(refuse("no card of that column has this text").echo("card_text", wanted).bounded()),
        several => Err(refuse("several cards of that column start with this text; give more of it")
            .detail("matches", several.len())
            .bounded()),
    }
}

/// A new card's bytes: `- [ ] ` and the text, continuation lines indented with a tab; `None`
/// when the text is blank.
fn card_source(card: &str, checked: bool, nl: &str) -> Option<String> {
    let text = card.replace("\r\n", "\n");
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let mut out = String::from(if checked { "- [x] " } else { "- [ ] " });
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push_str(nl);
            if !is_blank(line) {
                out.push('\t');
            }
        }
        if !is_blank(line) {
            out.push_str(line);
        }
    }
    Some(out)
}

/// `source` (a card's bytes) with its checkbox checked: `[ ]` becomes `[x]`, a card without a
/// checkbox gets `[x] `, any other status stays.
fn checked_source(source: &str) -> String {
    match card_marker(source) {
        Some(Marker { check: Some((at, ' ')), .. }) => format!("{}x{}", &source[..at], &source[at + 1..]),
        Some(Marker { check: None, .. }) => format!("- [x] {}", &source[2..]),
        _ => source.to_string(),
    }
}

/// Whether the file leaves a blank line between a lane's anchor (heading, or `**Complete**`
/// when `complete`) and its first card; the plugin's habit when no lane shows one.
fn blank_after_anchor(board: &Board, complete: bool) -> bool {
    board
        .lanes
        .iter()
        .find(|l| l.complete == complete && !l.cards.is_empty())
        .map_or(!complete, |l| l.cards[0].line > l.anchor + 1)
}

/// Where a card's bytes go in lane `lane` and what to insert there: after the last card, or
/// under the anchor of an empty lane, following the file's blank-line habit.
fn insertion(text: &str, lines: &[Line], board: &Board, lane: usize, card: &str, nl: &str) -> (usize, String) {
    let lane = &board.lanes[lane];
    if let Some(last) = lane.cards.last() {
        return (last.range.end, format!("{nl}{card}"));
    }
    let anchor = lines[lane.anchor];
    if lane.range.end > anchor.end {
        // Stray lines under the anchor: after them, where no line that follows can continue
        // the card.
        return (lane.range.end, format!("{nl}{card}"));
    }
    let blank = blank_after_anchor(board, lane.complete);
    if !ends_in_break(text, anchor) {
        // The anchor is the last line and has no line break.
        let gap = if blank { nl } else { "" };
        return (text.len(), format!("{nl}{gap}{card}"));
    }
    if !blank {
        return (anchor.next, format!("{card}{nl}"));
    }
    let blanks = lines[lane.anchor + 1..].iter().take_while(|l| is_blank(&text[l.start..l.end])).count();
    match blanks {
        0 if lane.anchor + 1 < lines.len() => (anchor.next, format!("{nl}{card}{nl}{nl}")),
        0 => (anchor.next, format!("{nl}{card}{nl}")),
        1 => {
            let gap = lines[lane.anchor + 1];
            if lane.anchor + 2 < lines.len() {
                (gap.next, format!("{card}{nl}{nl}"))
            } else if ends_in_break(text, gap) {
                (text.len(), format!("{card}{nl}"))
            } else {
                (text.len(), format!("{nl}{card}"))
            }
        }
        // Fill the second blank line; the ones after it keep separating the lane.
        _ => (lines[lane.anchor + 2].start, format!("{card}{nl}")),
    }
}

/// What removing the card at `range` takes out: the card and its line break, or, on the last
/// line without one, the line break before it.
fn removal(text: &str, range: &Range<usize>) -> Range<usize> {
    let after = &text[range.end..];
    if after.starts_with("\r\n") {
        range.start..range.end + 2
    } else if after.starts_with('\n') {
        range.start..range.end + 1
    } else {
        let end = text.len();
        let before = &text[..range.start];
        let start = if before.ends_with("\r\n") {
            range.start - 2
        } else if before.ends_with('\n') {
            range.start - 1
        } else {
            range.start
        };
        start..end
    }
}

/// Applies non-overlapping splices to `text`.
fn apply(text: &str, mut edits: Vec<(Range<usize>, String)>) -> Result<String, ToolError> {
    edits.sort_by_key(|(range, _)| (range.start, range.end));
    let mut out = String::with_capacity(text.len() + edits.iter().map(|(_, with)| with.len()).sum::<usize>());
    let mut at = 0;
    for (range, with) in edits {
        if range.start < at
            || range.end < range.start
            || range.end > text.len()
            || !text.is_char_boundary(range.start)
            || !text.is_char_boundary(range.end)
        {
            return Err(ToolError::with_message(ErrorCode::Internal, "the board edit's splices overlap"));
        }
        out.push_str(&text[at..range.start]);
        out.push_str(&with);
        at = range.end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

/// Parses the edited text again and checks the card landed where the edit says, with the bytes
/// it was given (and, for a move, that the source lane has `left` cards): an edit that reads
/// back differently is refused rather than written.
fn verify(
    out: &str,
    lane: usize,
    position: usize,
    source: &str,
    left: Option<(usize, usize)>,
) -> Result<(), ToolError> {
    let board = parse_board(out)?;
    let landed = board
        .lanes
        .get(lane)
        .and_then(|l| l.cards.get(position).filter(|_| l.cards.len() == position + 1))
        .is_some_and(|c| out.get(c.range.clone()) == Some(source));
    let source_ok = left.is_none_or(|(lane, count)| board.lanes.get(lane).is_some_and(|l| l.cards.len() == count));
    if landed && source_ok {
        Ok(())
    } else {
        Err(ToolError::with_message(
            ErrorCode::InvalidInput,
            "the board's layout around that column keeps the card from being placed cleanly; edit the note directly",
        )
        .detail("field", "column"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = "---\n\nkanban-plugin: board\n\n---\n\n## Todo\n\n- [ ] Card one\n- [ ] Card two with **markdown** and [[Link]] @{2024-01-02}\n\tcontinuation lines of a card are indented (tab or spaces)\n\n## Doing\n\n- [ ] Card three\n\n## Done\n\n**Complete**\n- [x] Card four\n\n***\n\n## Archive\n\n- [x] Old card\n\n%% kanban:settings\n```\n{\"kanban-plugin\":\"board\",\"list-collapse\":[false,false,false]}\n```\n%%\n";

    const EMPTY_LANE: &str = "---\nkanban-plugin: board\n---\n\n## Todo\n\n- [ ] a\n\n## Later\n\n\n\n## Done\n\n**Complete**\n\n\n%% kanban:settings\n```\n{\"kanban-plugin\":\"board\"}\n```\n%%\n";

    /// Every card's bytes by lane title (and the archive), for checking that an edit left the
    /// cards it did not touch as they were.
    fn card_bytes(text: &str) -> Vec<(String, String)> {
        let board = parse_board(text).unwrap();
        let mut out = Vec::new();
        for lane in &board.lanes {
            for card in &lane.cards {
                out.push((lane.title.clone(), text[card.range.clone()].to_string()));
            }
        }
        for card in &board.archive {
            out.push(("archive".to_string(), text[card.range.clone()].to_string()));
        }
        out
    }

    fn settings_bytes(text: &str) -> String {
        let board = parse_board(text).unwrap();
        board.settings_range.map(|r| text[r].to_string()).unwrap_or_default()
    }

    /// The window where `before` and `after` differ, past their longest common prefix and
    /// suffix, in each: a pure insertion leaves an empty window in `before`.
    fn changed(before: &str, after: &str) -> (String, String) {
        let (b, a) = (before.as_bytes(), after.as_bytes());
        let prefix = b.iter().zip(a).take_while(|(x, y)| x == y).count();
        let max_suffix = b.len().min(a.len()) - prefix;
        let suffix = b.iter().rev().zip(a.iter().rev()).take(max_suffix).take_while(|(x, y)| x == y).count();
        let window = |t: &[u8]| String::from_utf8_lossy(&t[prefix..t.len() - suffix]).into_owned();
        (window(b), window(a))
    }

    #[test]
    fn parses_the_example_board() {
        assert!(is_board(EXAMPLE));
        let board = parse_board(EXAMPLE).unwrap();
        let titles: Vec<&str> = board.lanes.iter().map(|l| l.title.as_str()).collect();
        assert_eq!(titles, ["Todo", "Doing", "Done"]);
        assert_eq!(board.lanes[0].cards.len(), 2);
        assert_eq!(board.lanes[0].cards[0].text, "Card one");
        assert!(!board.lanes[0].cards[0].checked);
        assert_eq!(
            board.lanes[0].cards[1].text,
            "Card two with **markdown** and [[Link]] @{2024-01-02}\ncontinuation lines of a card are indented (tab or spaces)"
        );
        let two = &board.lanes[0].cards[1];
        assert!(EXAMPLE[two.range.clone()].starts_with("- [ ] Card two"));
        assert!(EXAMPLE[two.range.clone()].ends_with("(tab or spaces)"));
        assert_eq!(two.line, 9);
        assert_eq!(board.lanes[0].line, 6);
        assert_eq!(&EXAMPLE[board.lanes[0].range.clone()], &EXAMPLE[EXAMPLE.find("## Todo").unwrap()..two.range.end]);
        assert_eq!(board.lanes[1].cards[0].text, "Card three");
        assert!(board.lanes[2].complete && !board.lanes[0].complete);
        assert!(board.lanes[2].cards[0].checked);
        assert_eq!(board.archive.len(), 1);
        assert_eq!(board.archive[0].text, "Old card");
        assert_eq!(board.settings.as_ref().unwrap()["list-collapse"], serde_json::json!([false, false, false]));
        assert!(settings_bytes(EXAMPLE).starts_with("%% kanban:settings") && settings_bytes(EXAMPLE).ends_with("%%"));
        assert!(board.warnings.is_empty(), "{:?}", board.warnings);
    }

    #[test]
    fn wip_limits_and_old_boards() {
        let text = "---\nkanban-plugin: basic\n---\n## Doing (3)\n- [ ] x\n- plain\n";
        let board = parse_board(text).unwrap();
        assert_eq!(board.lanes[0].title, "Doing (3)");
        assert_eq!(board.lanes[0].max_items, Some(3));
        assert_eq!(board.lanes[0].cards[1].text, "plain");
        assert!(!board.lanes[0].cards[1].checked);
        // Matched with or without the limit.
        let out = add_card(text, " doing ", "y", false).unwrap();
        assert_eq!(out.text, "---\nkanban-plugin: basic\n---\n## Doing (3)\n- [ ] x\n- plain\n- [ ] y\n");
        assert_eq!((out.lane.as_str(), out.position), ("Doing (3)", 2));
    }

    #[test]
    fn add_to_the_end_of_a_lane() {
        let out = add_card(EXAMPLE, "todo", "New card", false).unwrap();
        assert_eq!(out.position, 2);
        assert_eq!(out.lane, "Todo");
        assert_eq!(changed(EXAMPLE, &out.text).0, "");
        assert_eq!(out.text, EXAMPLE.replacen("(tab or spaces)\n", "(tab or spaces)\n- [ ] New card\n", 1));
        assert_eq!(settings_bytes(&out.text), settings_bytes(EXAMPLE));
    }

    #[test]
    fn add_to_an_empty_lane_keeps_the_blank_line_habit() {
        let out = add_card(EMPTY_LANE, "Later", "first", false).unwrap();
        assert_eq!(out.position, 0);
        assert!(out.text.contains("## Later\n\n- [ ] first\n\n\n## Done"), "{}", out.text);
        assert_eq!(changed(EMPTY_LANE, &out.text).0, "");
        let mut before = card_bytes(EMPTY_LANE);
        before.push(("Later".to_string(), "- [ ] first".to_string()));
        let mut after = card_bytes(&out.text);
        before.sort();
        after.sort();
        assert_eq!(before, after);

        // A Complete lane: right under its **Complete** line, checked.
        let out = add_card(EMPTY_LANE, "done", "finished", false).unwrap();
        assert!(out.text.contains("**Complete**\n- [x] finished\n\n\n%% kanban:settings"), "{}", out.text);
        assert_eq!(settings_bytes(&out.text), settings_bytes(EMPTY_LANE));

        // Only one blank line before the next heading, and a heading at the end of the file.
        let text = "---\nkanban-plugin: board\n---\n\n## A\n\n## B\n";
        let out = add_card(text, "A", "x", false).unwrap();
        assert_eq!(out.text, "---\nkanban-plugin: board\n---\n\n## A\n\n- [ ] x\n\n## B\n");
        let out = add_card(text, "B", "x", false).unwrap();
        assert_eq!(out.text, "---\nkanban-plugin: board\n---\n\n## A\n\n## B\n\n- [ ] x\n");
        let out = add_card("---\nkanban-plugin: board\n---\n## A", "A", "x", false).unwrap();
        assert_eq!(out.text, "---\nkanban-plugin: board\n---\n## A\n\n- [ ] x");

        // A file that puts cards right under the heading.
        let text = "---\nkanban-plugin: board\n---\n## A\n- [ ] a\n## B\n## C\n";
        let out = add_card(text, "B", "b", true).unwrap();
        assert_eq!(out.text, "---\nkanban-plugin: board\n---\n## A\n- [ ] a\n## B\n- [x] b\n## C\n");
    }

    #[test]
    fn add_a_multi_line_card() {
        let out = add_card(EXAMPLE, "Doing", "Title line\nsecond line\n\n  third, indented\n", false).unwrap();
        let card = "- [ ] Title line\n\tsecond line\n\n\t  third, indented";
        assert_eq!(out.text, EXAMPLE.replacen("- [ ] Card three\n", &format!("- [ ] Card three\n{card}\n"), 1));
        let board = parse_board(&out.text).unwrap();
        assert_eq!(board.lanes[1].cards[1].text, "Title line\nsecond line\n\n  third, indented");
        assert_eq!(board.lanes[1].cards.len(), 2);
        assert_eq!(board.lanes[2].cards.len(), 1);
    }

    #[test]
    fn add_refusals() {
        let err = add_card(EXAMPLE, "Nope", "x", false).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput);
        assert_eq!(err.details["field"], "column");
        assert_eq!(err.details["columns"], serde_json::json!(["Todo", "Doing", "Done"]));
        // The archive is no lane.
        assert!(add_card(EXAMPLE, "Archive", "x", false).is_err());
        let err = add_card(EXAMPLE, "Todo", "  \n ", false).unwrap_err();
        assert_eq!(err.details["field"], "text");
    }

    #[test]
    fn move_between_lanes_keeps_every_other_byte() {
        let out = move_card(EXAMPLE, "Todo", "doing", "Card two").unwrap();
        assert_eq!((out.lane.as_str(), out.position), ("Doing", 1));
        let card = "- [ ] Card two with **markdown** and [[Link]] @{2024-01-02}\n\tcontinuation lines of a card are indented (tab or spaces)";
        let expected = EXAMPLE.replacen(&format!("{card}\n"), "", 1).replacen(
            "- [ ] Card three",
            &format!("- [ ] Card three\n{card}"),
            1,
        );
        assert_eq!(out.text, expected);
        let board = parse_board(&out.text).unwrap();
        assert_eq!(board.lanes[0].cards.len(), 1);
        assert_eq!(&out.text[board.lanes[1].cards[1].range.clone()], card);
        assert_eq!(settings_bytes(&out.text), settings_bytes(EXAMPLE));
        let mut before = card_bytes(EXAMPLE);
        let mut after = card_bytes(&out.text);
        before.retain(|(_, c)| c != card);
        after.retain(|(_, c)| c != card);
        assert_eq!(before, after);

        // Backwards, to a lane above.
        let out = move_card(EXAMPLE, "Doing", "Todo", "Card three").unwrap();
        assert!(out.text.contains("(tab or spaces)\n- [ ] Card three\n\n## Doing\n\n\n## Done"), "{}", out.text);
        assert_eq!(out.text.len(), EXAMPLE.len());
    }

    #[test]
    fn move_into_a_complete_lane_checks_the_card_and_out_of_it_leaves_it() {
        let out = move_card(EXAMPLE, "Doing", "Done", "Card three").unwrap();
        assert!(out.text.contains("**Complete**\n- [x] Card four\n- [x] Card three\n"), "{}", out.text);
        let board = parse_board(&out.text).unwrap();
        assert!(board.lanes[2].cards[1].checked);
        assert!(board.lanes[1].cards.is_empty());
        assert_eq!(settings_bytes(&out.text), settings_bytes(EXAMPLE));

        let out = move_card(EXAMPLE, "Done", "Todo", "Card four").unwrap();
        assert!(out.text.contains("(tab or spaces)\n- [x] Card four\n\n## Doing"), "{}", out.text);
        assert!(out.text.contains("**Complete**\n\n***"));

        // A card without a checkbox gets one.
        let text = "---\nkanban-plugin: board\n---\n## A\n- plain\n## B\n**Complete**\n";
        let out = move_card(text, "A", "B", "plain").unwrap();
        assert_eq!(out.text, "---\nkanban-plugin: board\n---\n## A\n## B\n**Complete**\n- [x] plain\n");
    }

    #[test]
    fn move_the_last_card_of_a_file_without_a_final_line_break() {
        let text = "---\nkanban-plugin: board\n---\n## A\n\n- [ ] a\n\n## B\n\n- [ ] b";
        let out = move_card(text, "B", "A", "b").unwrap();
        assert_eq!(out.text, "---\nkanban-plugin: board\n---\n## A\n\n- [ ] a\n- [ ] b\n\n## B\n");
        assert_eq!(out.position, 1);
    }

    #[test]
    fn move_same_lane_is_a_no_op_and_refusals() {
        let out = move_card(EXAMPLE, "Todo", "TODO", "Card one").unwrap();
        assert_eq!((out.text.as_str(), out.position), (EXAMPLE, 0));

        let err = move_card(EXAMPLE, "Todo", "Doing", "Card").unwrap_err();
        assert_eq!(err.details["field"], "card_text");
        assert_eq!(err.details["matches"], 2);
        let err = move_card(EXAMPLE, "Todo", "Doing", "Card three").unwrap_err();
        assert_eq!(err.details["field"], "card_text");
        assert!(!err.details.contains_key("matches"));
        let err = move_card(EXAMPLE, "Todo", "Doing", " ").unwrap_err();
        assert_eq!(err.details["field"], "card_text");
        assert_eq!(move_card(EXAMPLE, "Nope", "Doing", "Card one").unwrap_err().details["field"], "from");
        assert_eq!(move_card(EXAMPLE, "Todo", "Nope", "Card one").unwrap_err().details["field"], "to");

        // An exact match wins over prefixes.
        let text = "---\nkanban-plugin: board\n---\n## A\n- [ ] Card\n- [ ] Card two\n## B\n";
        let out = move_card(text, "A", "B", "Card").unwrap();
        assert_eq!(out.text, "---\nkanban-plugin: board\n---\n## A\n- [ ] Card two\n## B\n- [ ] Card\n");
    }

    #[test]
    fn crlf_files_keep_their_line_breaks() {
        let text = EXAMPLE.replace('\n', "\r\n");
        let board = parse_board(&text).unwrap();
        assert_eq!(board.lanes.len(), 3);
        assert_eq!(board.lanes[0].cards[1].text.lines().count(), 2);
        assert!(!board.lanes[0].cards[1].text.contains('\r'));
        assert!(board.settings.is_some());

        let out = add_card(&text, "Doing", "one\ntwo", false).unwrap();
        assert_eq!(out.text, text.replacen("- [ ] Card three\r\n", "- [ ] Card three\r\n- [ ] one\r\n\ttwo\r\n", 1));
        let out = move_card(&text, "Todo", "Done", "Card two").unwrap();
        assert!(!out.text.replace("\r\n", "").contains('\n'));
        assert_eq!(out.text.len(), text.len() - " ".len() + "x".len());
        assert_eq!(settings_bytes(&out.text), settings_bytes(&text));
        let board = parse_board(&out.text).unwrap();
        assert_eq!(board.lanes[2].cards.len(), 2);
        assert!(board.lanes[2].cards[1].checked);
        let empty = EMPTY_LANE.replace('\n', "\r\n");
        let out = add_card(&empty, "Later", "first", false).unwrap();
        assert!(out.text.contains("## Later\r\n\r\n- [ ] first\r\n\r\n\r\n## Done"));
    }

    #[test]
    fn not_a_board_is_refused() {
        for text in ["", "# Note\n\n## Todo\n- [ ] x\n", "---\ntitle: x\n---\n## A\n", "---\nkanban-plugin: [1]\n---\n"]
        {
            assert!(!is_board(text));
            let err = parse_board(text).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidInput);
            assert_eq!(err.details["field"], "path");
            assert!(add_card(text, "Todo", "x", false).is_err());
            assert!(move_card(text, "Todo", "A", "x").is_err());
        }
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        let board = parse_board("---\nkanban-plugin: board\n---\n").unwrap();
        assert!(board.lanes.is_empty() && board.archive.is_empty() && board.settings.is_none());
        let err = add_card("---\nkanban-plugin: board\n---", "A", "x", false).unwrap_err();
        assert_eq!(err.details["columns"], serde_json::json!([]));

        let board = parse_board("---\nkanban-plugin: board\n---\n## Lonely\n").unwrap();
        assert_eq!(board.lanes.len(), 1);
        assert!(board.lanes[0].cards.is_empty());

        let text = "---\nkanban-plugin: board\n---\n- [ ] stray\n\tmore\n## A\n- [ ] a\n";
        let board = parse_board(text).unwrap();
        assert_eq!(board.lanes[0].cards.len(), 1);
        assert_eq!(board.warnings.len(), 1);
        assert!(board.warnings[0].contains("before the first lane"));

        // Code blocks hold no cards; a broken settings block is a warning.
        let text = "---\nkanban-plugin: board\n---\n## A\n```\n- [ ] not a card\n## Not a lane\n```\n- [ ] a\n%% kanban:settings\n```\n{oops\n```\n%%\n";
        let board = parse_board(text).unwrap();
        assert_eq!(board.lanes.len(), 1);
        assert_eq!(board.lanes[0].cards.len(), 1);
        assert!(board.settings.is_none() && board.settings_range.is_some());
        assert!(board.warnings.iter().any(|w| w.contains("settings")));

        let pieces = [
            "---\n",
            "kanban-plugin: board\n",
            "## A\n",
            "## B (2)\n",
            "- [ ] x\n",
            "- [x] y",
            "\tz\n",
            "\n",
            "\r\n",
            "***\n",
            "**Complete**\n",
            "```\n",
            "%% kanban:settings\n",
            "{}\n",
            "%%",
            "- [é] ü\n",
            "- \n",
            "- [",
            "##",
            "é",
            "\r",
        ];
        let mut seed = 7u64;
        for _ in 0..3000 {
            let mut text = String::from("---\nkanban-plugin: board\n---\n");
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let count = (seed >> 59) as usize;
            for _ in 0..count {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                text.push_str(pieces[(seed >> 33) as usize % pieces.len()]);
            }
            let Ok(board) = parse_board(&text) else { continue };
            for card in board.lanes.iter().flat_map(|l| &l.cards).chain(&board.archive) {
                assert!(text.get(card.range.clone()).is_some());
            }
            for lane in ["A", "B", "b (2)"] {
                if let Ok(out) = add_card(&text, lane, "new\ncard", false) {
                    assert_eq!(changed(&text, &out.text).0, "");
                    assert_eq!(settings_bytes(&out.text), settings_bytes(&text));
                }
                for to in ["A", "B"] {
                    for card in ["x", "y\nz"] {
                        if let Ok(out) = move_card(&text, lane, to, card) {
                            assert_eq!(settings_bytes(&out.text), settings_bytes(&text));
                            assert_eq!(card_bytes(&out.text).len(), card_bytes(&text).len());
                        }
                    }
                }
            }
        }
    }
}
