//! GitHub-flavoured Markdown pipe tables in a note, as Obsidian renders them: where they are, and
//! the edits the table tools make (format, insert a row or a column, sort by a column). Every edit
//! re-renders one table and splices it over that table's own byte range; every byte outside it
//! stays as it was.
//!
//! # What counts as a table
//!
//! A header line with at least one unescaped `|`, right below it a delimiter line whose cells
//! each read `:?-+:?` (as many cells as the header has), then the data rows: the lines that
//! follow until a blank line or the start of another block (a heading, a fence, a blockquote, a
//! thematic break, a list item, a line indented 4+ spaces, or a `%%` comment / `$$` math block).
//! Outer pipes are optional; only `\|` protects a pipe (inside code spans too, as in GFM). The
//! frontmatter, fenced code, `%%` comment blocks and `$$` math blocks are skipped, as are tables
//! indented 4+ spaces (code) and tables inside blockquotes. A delimiter line of bare dashes
//! (`---`) under a one-cell header is a setext heading underline, not a table.
//!
//! # How an edited table is written
//!
//! [`format_table`] pads every cell to its column's width (counted in chars), following the
//! column's alignment (right-aligned cells are padded on the left, centred ones on both sides),
//! with delimiter cells as wide as their column and at least 3 wide. The other edits write the
//! plain form `| a | b |`: one space around each cell, delimiter cells `---`, `:---`, `:---:` or
//! `---:`. Either way every row gets empty cells up to the header's column count (cells past it,
//! which GFM does not show, are kept), cells keep their text as written (escaped pipes
//! included), the table's line breaks are those of its header line (`\n` or `\r\n`), and what
//! follows the last row (its line break, or none at the end of the note) is not touched. Every line
//! keeps the header line's indentation (under 4 columns; a table nested in a list item stays
//! there).

use std::cmp::Ordering;
use std::ops::Range;

use otc_errors::{ErrorCode, ToolError};

/// A column's alignment, from the colons of its delimiter cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Align {
    /// `---`
    #[default]
    None,
    /// `:---`
    Left,
    /// `:---:`
    Center,
    /// `---:`
    Right,
}

impl Align {
    /// `none`, `left`, `center` (or `centre`) or `right`, in any case.
    pub fn from_name(name: &str) -> Option<Align> {
        match name.trim().to_ascii_lowercase().as_str() {
            "none" | "" => Some(Align::None),
            "left" => Some(Align::Left),
            "center" | "centre" => Some(Align::Center),
            "right" => Some(Align::Right),
            _ => None,
        }
    }

    /// The alignment a delimiter cell (`:?-+:?`, trimmed) stands for; `None` when it is not one.
    fn of_delimiter(cell: &str) -> Option<Align> {
        let (left, rest) = match cell.strip_prefix(':') {
            Some(rest) => (true, rest),
            None => (false, cell),
        };
        let (right, dashes) = match rest.strip_suffix(':') {
            Some(dashes) => (true, dashes),
            None => (false, rest),
        };
        if dashes.is_empty() || !dashes.bytes().all(|b| b == b'-') {
            return None;
        }
        Some(match (left, right) {
            (false, false) => Align::None,
            (true, false) => Align::Left,
            (true, true) => Align::Center,
            (false, true) => Align::Right,
        })
    }

    fn colons(self) -> usize {
        match self {
            Align::None => 0,
            Align::Left | Align::Right => 1,
            Align::Center => 2,
        }
    }

    /// A delimiter cell `width` chars wide (at least 3), colons included.
    fn delimiter(self, width: usize) -> String {
        let dashes = "-".repeat(width.max(3) - self.colons());
        match self {
            Align::None => dashes,
            Align::Left => format!(":{dashes}"),
            Align::Center => format!(":{dashes}:"),
            Align::Right => format!("{dashes}:"),
        }
    }
}

/// One pipe table of a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The whole table: from the header line's start to the end of its last row line, that
    /// line's break not included.
    pub range: Range<usize>,
    /// The header cells, trimmed, escaped pipes kept as written (`\|`).
    pub header: Vec<String>,
    /// One per header cell.
    pub align: Vec<Align>,
    /// The data rows' cells, trimmed, escaped pipes kept as written; a row holds the cells its
    /// line has, which may be fewer or more than the header's.
    pub rows: Vec<Vec<String>>,
    /// 0-based line of the header.
    pub line: usize,
}

/// An edited note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableEdit {
    /// The whole new note text.
    pub text: String,
    /// The table's data rows afterwards.
    pub rows: usize,
    /// The table's columns afterwards.
    pub columns: usize,
}

/// A sort order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// Smallest first.
    #[default]
    Asc,
    /// Largest first.
    Desc,
}

impl Order {
    /// `asc`/`ascending` or `desc`/`descending`, in any case.
    pub fn from_name(name: &str) -> Option<Order> {
        match name.trim().to_ascii_lowercase().as_str() {
            "asc" | "ascending" => Some(Order::Asc),
            "desc" | "descending" => Some(Order::Desc),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Finding tables

/// One line: its content's bytes, without the line break.
#[derive(Debug, Clone, Copy)]
struct Line {
    start: usize,
    end: usize,
}

fn split_lines(text: &str) -> Vec<Line> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let (end, next) = match text[start..].find('\n') {
            Some(i) => {
                let nl = start + i;
                let end = if nl > start && bytes[nl - 1] == b'\r' { nl - 1 } else { nl };
                (end, nl + 1)
            }
            None => (text.len(), text.len()),
        };
        out.push(Line { start, end });
        start = next;
    }
    out
}

/// The indentation in columns (a tab goes to the next multiple of 4) and the rest of the line.
fn indent(s: &str) -> (usize, &str) {
    let mut cols = 0;
    for (i, c) in s.char_indices() {
        match c {
            ' ' => cols += 1,
            '\t' => cols += 4 - cols % 4,
            _ => return (cols, &s[i..]),
        }
    }
    (cols, "")
}

/// The fence a line opens: its char and length.
fn fence_open(s: &str) -> Option<(u8, usize)> {
    let (cols, rest) = indent(s);
    let ch = *rest.as_bytes().first()?;
    if cols >= 4 || (ch != b'`' && ch != b'~') {
        return None;
    }
    let n = rest.bytes().take_while(|&b| b == ch).count();
    if n < 3 || (ch == b'`' && rest[n..].contains('`')) {
        return None;
    }
    Some((ch, n))
}

fn fence_closes(s: &str, ch: u8, len: usize) -> bool {
    let (cols, rest) = indent(s);
    let n = rest.bytes().take_while(|&b| b == ch).count();
    cols < 4 && n >= len && rest[n..].trim().is_empty()
}

fn is_heading(rest: &str) -> bool {
    let n = rest.bytes().take_while(|&b| b == b'#').count();
    (1..=6).contains(&n) && matches!(rest.as_bytes().get(n), None | Some(b' ' | b'\t'))
}

fn is_list_item(rest: &str) -> bool {
    let bytes = rest.as_bytes();
    let after_marker = match bytes.first() {
        Some(b'-' | b'*' | b'+') => 1,
        Some(b'0'..=b'9') => {
            let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
            if digits > 9 || !matches!(bytes.get(digits), Some(b'.' | b')')) {
                return false;
            }
            digits + 1
        }
        _ => return false,
    };
    matches!(bytes.get(after_marker), None | Some(b' ' | b'\t'))
}

fn is_thematic_break(rest: &str) -> bool {
    let mut marks = rest.bytes().filter(|&b| b != b' ' && b != b'\t');
    let Some(first) = marks.next() else { return false };
    let mut count = 1;
    for b in marks {
        if b != first {
            return false;
        }
        count += 1;
    }
    matches!(first, b'-' | b'*' | b'_') && count >= 3
}

/// A multi-line block the scan steps over.
#[derive(Debug, Clone, Copy)]
enum Block {
    Fence(u8, usize),
    Comment,
    Math,
}

/// The `%%` comment or `$$` math block a line opens (an odd number of markers).
fn delimited_open(s: &str) -> Option<Block> {
    if s.matches("%%").count() % 2 == 1 {
        Some(Block::Comment)
    } else if s.matches("$$").count() % 2 == 1 {
        Some(Block::Math)
    } else {
        None
    }
}

/// Whether a line ends a table instead of being one of its rows.
fn ends_table(s: &str) -> bool {
    let (cols, rest) = indent(s);
    rest.trim().is_empty()
        || cols >= 4
        || rest.starts_with('>')
        || is_heading(rest)
        || is_thematic_break(rest)
        || is_list_item(rest)
        || fence_open(s).is_some()
        || delimited_open(s).is_some()
}

/// A row's cells, trimmed, and whether the line has an unescaped pipe.
fn split_cells(line: &str) -> (Vec<String>, bool) {
    let t = line.trim();
    let bytes = t.as_bytes();
    let mut pieces = Vec::new();
    let mut piece_start = 0;
    let mut k = 0;
    while k < bytes.len() {
        match bytes[k] {
            // A backslash escapes the next char: `\|` is part of the cell, `\\|` is not.
            b'\\' => k += 2,
            b'|' => {
                pieces.push(&t[piece_start..k]);
                piece_start = k + 1;
                k += 1;
            }
            _ => k += 1,
        }
    }
    let had_pipe = !pieces.is_empty();
    pieces.push(&t[piece_start.min(t.len())..]);
    if had_pipe && t.starts_with('|') {
        pieces.remove(0);
    }
    if had_pipe && pieces.last().is_some_and(|p| p.is_empty()) {
        pieces.pop();
    }
    (pieces.into_iter().map(|p| p.trim().to_string()).collect(), had_pipe)
}

/// The table whose header is line `i`, if one starts there.
fn table_at(text: &str, lines: &[Line], i: usize) -> Option<Table> {
    let head = &text[lines[i].start..lines[i].end];
    let (cols, rest) = indent(head);
    if cols >= 4 || rest.starts_with('>') || is_heading(rest) || is_list_item(rest) || is_thematic_break(rest) {
        return None;
    }
    let (header, had_pipe) = split_cells(head);
    if !had_pipe || header.is_empty() {
        return None;
    }
    let delim_line = lines.get(i + 1)?;
    let delim = &text[delim_line.start..delim_line.end];
    let (cols, rest) = indent(delim);
    let rest = rest.trim_end();
    // Bare dashes under a line are a setext heading's underline.
    if cols >= 4 || rest.bytes().all(|b| b == b'-') {
        return None;
    }
    let (cells, _) = split_cells(delim);
    if cells.len() != header.len() {
        return None;
    }
    let align = cells.iter().map(|c| Align::of_delimiter(c)).collect::<Option<Vec<_>>>()?;
    let mut rows = Vec::new();
    let mut last = i + 1;
    for (j, line) in lines.iter().enumerate().skip(i + 2) {
        let s = &text[line.start..line.end];
        if ends_table(s) {
            break;
        }
        rows.push(split_cells(s).0);
        last = j;
    }
    Some(Table { range: lines[i].start..lines[last].end, header, align, rows, line: i })
}

/// Every table of the note, in file order.
pub fn find_tables(text: &str) -> Vec<Table> {
    let lines = split_lines(text);
    let body_start = otc_parser::parse_head(text).body_start;
    let mut tables = Vec::new();
    let mut block: Option<Block> = None;
    let mut i = lines.iter().position(|l| l.start >= body_start).unwrap_or(lines.len());
    while i < lines.len() {
        let s = &text[lines[i].start..lines[i].end];
        match block {
            Some(Block::Fence(ch, len)) => {
                if fence_closes(s, ch, len) {
                    block = None;
                }
            }
            Some(Block::Comment) => {
                if s.matches("%%").count() % 2 == 1 {
                    block = None;
                }
            }
            Some(Block::Math) => {
                if s.matches("$$").count() % 2 == 1 {
                    block = None;
                }
            }
            None => {
                if let Some((ch, len)) = fence_open(s) {
                    block = Some(Block::Fence(ch, len));
                } else if let Some(opened) = delimited_open(s) {
                    block = Some(opened);
                } else if let Some(table) = table_at(text, &lines, i) {
                    i = table.line + 2 + table.rows.len();
                    tables.push(table);
                    continue;
                }
            }
        }
        i += 1;
    }
    tables
}

// ---------------------------------------------------------------------------------------------
// Writing tables

/// `cell` padded to `width` chars as `align` wants.
fn push_padded(out: &mut String, cell: &str, width: usize, align: Align) {
    let gap = width.saturating_sub(cell.chars().count());
    let left = match align {
        Align::None | Align::Left => 0,
        Align::Center => gap / 2,
        Align::Right => gap,
    };
    out.extend(std::iter::repeat_n(' ', left));
    out.push_str(cell);
    out.extend(std::iter::repeat_n(' ', gap - left));
}

fn render_row<S: AsRef<str>>(cells: &[S], widths: Option<&[usize]>, align: &[Align]) -> String {
    let mut out = String::from("|");
    for (c, cell) in cells.iter().enumerate() {
        out.push(' ');
        match widths {
            Some(widths) => push_padded(&mut out, cell.as_ref(), widths[c], align.get(c).copied().unwrap_or_default()),
            None => out.push_str(cell.as_ref()),
        }
        out.push_str(" |");
    }
    out
}

/// The table's lines, each after `indent`, joined by `nl`, with no break after the last; padded
/// when `pad`.
fn render(table: &Table, indent: &str, nl: &str, pad: bool) -> String {
    let columns = table.header.len();
    let rows: Vec<Vec<&str>> = table
        .rows
        .iter()
        .map(|row| {
            let mut cells: Vec<&str> = row.iter().map(String::as_str).collect();
            cells.resize(cells.len().max(columns), "");
            cells
        })
        .collect();
    let widths = pad.then(|| {
        let mut widths: Vec<usize> = table.header.iter().map(|h| h.chars().count().max(3)).collect();
        for row in &rows {
            for (c, cell) in row.iter().enumerate() {
                let w = cell.chars().count();
                match widths.get_mut(c) {
                    Some(width) => *width = (*width).max(w),
                    None => widths.push(w),
                }
            }
        }
        widths
    });
    let delimiter: Vec<String> = table
        .align
        .iter()
        .enumerate()
        .map(|(c, a)| a.delimiter(widths.as_ref().map_or(3 + a.colons(), |w| w[c])))
        .collect();
    let mut lines = Vec::with_capacity(rows.len() + 2);
    lines.push(render_row(&table.header, widths.as_deref(), &table.align));
    lines.push(render_row(&delimiter, None, &table.align));
    lines.extend(rows.iter().map(|row| render_row(row, widths.as_deref(), &table.align)));
    format!("{indent}{}", lines.join(&format!("{nl}{indent}")))
}

/// The line break the table's header line ends in.
fn table_line_break(text: &str, table: &Table) -> &'static str {
    match text[table.range.start..].find('\n') {
        Some(i) if i > 0 && text.as_bytes()[table.range.start + i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

fn invalid(field: &str, message: impl Into<String>) -> ToolError {
    ToolError::with_message(ErrorCode::InvalidInput, message.into()).detail("field", field)
}

/// Finds table `index`, lets `change` edit it, and splices it back rendered.
fn edit(
    text: &str,
    index: usize,
    pad: bool,
    change: impl FnOnce(&mut Table) -> Result<(), ToolError>,
) -> Result<TableEdit, ToolError> {
    let mut tables = find_tables(text);
    let count = tables.len();
    if index >= count {
        let message = match count {
            0 => format!("table_index {index} does not exist: the note has no table"),
            1 => format!("table_index {index} does not exist: the note has 1 table (index 0)"),
            n => format!("table_index {index} does not exist: the note has {n} tables (0 to {})", n - 1),
        };
        return Err(invalid("table_index", message).detail("tables", count));
    }
    let mut table = tables.swap_remove(index);
    change(&mut table)?;
    let header_line = &text[table.range.start..];
    let indent = &header_line[..header_line.len() - header_line.trim_start_matches([' ', '\t']).len()];
    let rendered = render(&table, indent, table_line_break(text, &table), pad);
    let mut out = String::with_capacity(text.len() + rendered.len());
    out.push_str(&text[..table.range.start]);
    out.push_str(&rendered);
    out.push_str(&text[table.range.end..]);
    Ok(TableEdit { text: out, rows: table.rows.len(), columns: table.header.len() })
}

/// A new cell's text: trimmed, with every bare `|` escaped; refused when it holds a line break.
fn new_cell(value: &str, field: &str, position: Option<usize>) -> Result<String, ToolError> {
    if value.contains(['\n', '\r']) {
        let mut error = invalid(field, format!("a table cell cannot hold a line break ({field})"));
        if let Some(position) = position {
            error = error.detail("position", position);
        }
        return Err(error);
    }
    let mut out = String::with_capacity(value.len());
    let mut chars = value.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                out.push(c);
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            }
            '|' => out.push_str("\\|"),
            _ => out.push(c),
        }
    }
    Ok(out)
}

fn new_cells(values: &[String]) -> Result<Vec<String>, ToolError> {
    values.iter().enumerate().map(|(i, v)| new_cell(v, "values", Some(i))).collect()
}

/// Pads every cell of table `index` so the pipes line up (see the module doc); rows get empty
/// cells up to the header's column count and alignment colons are kept.
pub fn format_table(text: &str, index: usize) -> Result<TableEdit, ToolError> {
    edit(text, index, true, |_| Ok(()))
}

/// Inserts a data row into table `index` at 0-based row position `at` (`None`: after the last).
/// Fewer `values` than columns get empty cells; more, or a value with a line break, are refused
/// (field `values`); a bare `|` in a value is written `\|`. The table is written in the plain form.
pub fn insert_row(text: &str, index: usize, values: &[String], at: Option<usize>) -> Result<TableEdit, ToolError> {
    edit(text, index, false, |table| {
        let columns = table.header.len();
        if values.len() > columns {
            return Err(invalid(
                "values",
                format!("the row has {} values but the table has {columns} columns", values.len()),
            )
            .detail("columns", columns));
        }
        let mut row = new_cells(values)?;
        row.resize(columns, String::new());
        let at = at.unwrap_or(table.rows.len());
        if at > table.rows.len() {
            return Err(invalid(
                "at",
                format!("row position {at} is past the end: the table has {} data rows", table.rows.len()),
            )
            .detail("rows", table.rows.len()));
        }
        table.rows.insert(at, row);
        Ok(())
    })
}

/// Inserts a column into table `index` at 0-based column position `at` (`None`: after the
/// last), with `header`, `align` and one value per data row in order (missing ones empty; more
/// values than rows, or a line break, are refused: field `values`, or `header`). The table is
/// written in the plain form.
pub fn insert_column(
    text: &str,
    index: usize,
    header: &str,
    values: &[String],
    at: Option<usize>,
    align: Align,
) -> Result<TableEdit, ToolError> {
    edit(text, index, false, |table| {
        let header = new_cell(header, "header", None)?;
        if values.len() > table.rows.len() {
            return Err(invalid(
                "values",
                format!("{} values given but the table has {} data rows", values.len(), table.rows.len()),
            )
            .detail("rows", table.rows.len()));
        }
        let values = new_cells(values)?;
        let columns = table.header.len();
        let at = at.unwrap_or(columns);
        if at > columns {
            return Err(invalid(
                "at",
                format!("column position {at} is past the end: the table has {columns} columns"),
            )
            .detail("columns", columns));
        }
        table.header.insert(at, header);
        table.align.insert(at, align);
        let mut values = values.into_iter();
        for row in &mut table.rows {
            if row.len() < at {
                row.resize(at, String::new());
            }
            row.insert(at, values.next().unwrap_or_default());
        }
        Ok(())
    })
}

/// A cell read as a number: trimmed, `,` allowed only as a thousands separator (`1,234.5`);
/// `None` for anything else (text, an empty cell, `NaN`, infinities).
fn parse_number(cell: &str) -> Option<f64> {
    let s = cell.trim();
    if !s.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b',' | b'e' | b'E')) {
        return None;
    }
    let cleaned;
    let s = if s.contains(',') {
        let unsigned = s.trim_start_matches(['+', '-']);
        let int_end = unsigned.find(['.', 'e', 'E']).unwrap_or(unsigned.len());
        let (int, tail) = unsigned.split_at(int_end);
        let mut groups = int.split(',');
        let first_ok = groups.next().is_some_and(|g| (1..=3).contains(&g.len()));
        if !first_ok || !groups.all(|g| g.len() == 3) || tail.contains(',') {
            return None;
        }
        cleaned = s.replace(',', "");
        cleaned.as_str()
    } else {
        s
    };
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The 0-based column `column` names: a header (trimmed, any case), else a 0-based number.
fn resolve_column(table: &Table, column: &str) -> Result<usize, ToolError> {
    let wanted = column.trim().to_lowercase();
    if let Some(c) = table.header.iter().position(|h| h.to_lowercase() == wanted) {
        return Ok(c);
    }
    match wanted.parse::<usize>() {
        Ok(c) if c < table.header.len() => Ok(c),
        _ => Err(invalid(
            "column",
            format!(
                "no column is headed {:?} and it is not a column number below {}",
                column.trim(),
                table.header.len()
            ),
        )
        .detail("columns", table.header.clone())),
    }
}

/// Sorts the data rows of table `index` by `column` (a header, trimmed and in any case, or else
/// a 0-based column number), stably. `numeric` reads cells as numbers (`,` thousands separators
/// allowed); cells that are not numbers go after all numbers in both orders, in their original
/// order. Otherwise cells compare as lowercase text. The table is written in the plain form.
pub fn sort_by_column(
    text: &str,
    index: usize,
    column: &str,
    order: Order,
    numeric: bool,
) -> Result<TableEdit, ToolError> {
    edit(text, index, false, |table| {
        let c = resolve_column(table, column)?;
        let cell = |row: &Vec<String>| row.get(c).map_or("", String::as_str).to_string();
        let directed = |o: Ordering| if order == Order::Desc { o.reverse() } else { o };
        if numeric {
            let mut keyed: Vec<(Option<f64>, Vec<String>)> =
                table.rows.drain(..).map(|row| (parse_number(&cell(&row)), row)).collect();
            keyed.sort_by(|(a, _), (b, _)| match (a, b) {
                (Some(a), Some(b)) => directed(a.partial_cmp(b).unwrap_or(Ordering::Equal)),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            });
            table.rows = keyed.into_iter().map(|(_, row)| row).collect();
        } else {
            let mut keyed: Vec<(String, Vec<String>)> =
                table.rows.drain(..).map(|row| (cell(&row).to_lowercase(), row)).collect();
            keyed.sort_by(|(a, _), (b, _)| directed(a.cmp(b)));
            table.rows = keyed.into_iter().map(|(_, row)| row).collect();
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| v.to_string()).collect()
    }

    /// Everything outside table `index` of `before` is byte-identical in `after`, and `after`
    /// still has the table at the same start; returns the new table's text.
    fn assert_only_table_changed(before: &str, after: &str, index: usize) -> String {
        let old = &find_tables(before)[index];
        let new = &find_tables(after)[index];
        assert_eq!(new.range.start, old.range.start);
        assert_eq!(&after.as_bytes()[..new.range.start], &before.as_bytes()[..old.range.start]);
        assert_eq!(&after.as_bytes()[new.range.end..], &before.as_bytes()[old.range.end..]);
        after[new.range.clone()].to_string()
    }

    const TWO: &str = "# Notes\n\nIntro.\n\n| Name | Qty |\n|------|----:|\n| pear | 3 |\n| fig | 10 |\n\nBetween.\n\nA | B\n:-- | :-:\nx | y\n\nEnd.\n";

    #[test]
    fn finds_tables_with_and_without_outer_pipes() {
        let tables = find_tables(TWO);
        assert_eq!(tables.len(), 2);
        let first = &tables[0];
        assert_eq!(first.header, strings(&["Name", "Qty"]));
        assert_eq!(first.align, vec![Align::None, Align::Right]);
        assert_eq!(first.rows, vec![strings(&["pear", "3"]), strings(&["fig", "10"])]);
        assert_eq!(first.line, 4);
        assert_eq!(&TWO[first.range.clone()], "| Name | Qty |\n|------|----:|\n| pear | 3 |\n| fig | 10 |");
        let second = &tables[1];
        assert_eq!(second.header, strings(&["A", "B"]));
        assert_eq!(second.align, vec![Align::Left, Align::Center]);
        assert_eq!(second.rows, vec![strings(&["x", "y"])]);
        assert_eq!(&TWO[second.range.clone()], "A | B\n:-- | :-:\nx | y");
        assert_eq!(second.line, 11);
    }

    #[test]
    fn escaped_pipes_stay_in_their_cell() {
        let text = "| Link | Code |\n| --- | --- |\n| [[Note\\|alias]] | `a\\|b` |\n| a \\\\| b |\n";
        let t = &find_tables(text)[0];
        assert_eq!(t.rows[0], strings(&["[[Note\\|alias]]", "`a\\|b`"]));
        // `\\` escapes the backslash, so the pipe after it splits.
        assert_eq!(t.rows[1], strings(&["a \\\\", "b"]));
    }

    #[test]
    fn pipes_in_code_spans_split_as_in_gfm() {
        let t = &find_tables("| a | b |\n|---|---|\n| `x | y` |\n")[0];
        assert_eq!(t.rows[0], strings(&["`x", "y`"]));
    }

    #[test]
    fn crlf_notes_keep_crlf_in_the_rewritten_table() {
        let text = "Top\r\n\r\n| a | b |\r\n| --- | --- |\r\n| 1 | 2 |\r\n\r\nAfter\r\n";
        let t = &find_tables(text)[0];
        assert_eq!(t.rows, vec![strings(&["1", "2"])]);
        assert_eq!(&text[t.range.clone()], "| a | b |\r\n| --- | --- |\r\n| 1 | 2 |");
        let out = insert_row(text, 0, &strings(&["3", "4"]), None).unwrap();
        assert_eq!(out.text, "Top\r\n\r\n| a | b |\r\n| --- | --- |\r\n| 1 | 2 |\r\n| 3 | 4 |\r\n\r\nAfter\r\n");
        assert_only_table_changed(text, &out.text, 0);
        let formatted = format_table(text, 0).unwrap().text;
        assert!(!formatted.replace("\r\n", "").contains('\n'));
    }

    #[test]
    fn tables_in_code_fences_comments_and_math_are_ignored() {
        let text = "```md\n| a | b |\n| - | - |\n```\n\n~~~~\n| c | d |\n|---|---|\n~~~\nstill code\n~~~~\n\n%%\n| e | f |\n|---|---|\n%%\n\n$$\n| g | h |\n|---|---|\n$$\n\n| real | one |\n|---|---|\n";
        let tables = find_tables(text);
        assert_eq!(tables.len(), 1);
        assert_eq!(tables[0].header, strings(&["real", "one"]));
    }

    #[test]
    fn a_backtick_fence_needs_a_matching_close() {
        // The inner ``` does not close a ```` fence.
        let text = "````\n```\n| a | b |\n|---|---|\n````\n";
        assert!(find_tables(text).is_empty());
    }

    #[test]
    fn frontmatter_is_not_a_table() {
        let text = "---\ntitle: x\nrow: \"| a | b |\"\n---\n| a | b |\n| --- | --- |\n";
        // Without the frontmatter skip, the block scalar's lines would read as a table.
        let text_fm = "---\nnote: |\n  a | b\n  --- | ---\n---\nbody\n";
        assert_eq!(find_tables(&text_fm[4..]).len(), 1);
        assert_eq!(find_tables(text).len(), 1);
        assert_eq!(find_tables(text)[0].line, 4);
        assert!(find_tables(text_fm).is_empty());
    }

    #[test]
    fn indented_quoted_and_setext_lookalikes_are_not_tables() {
        assert!(find_tables("    | a | b |\n    | --- | --- |\n").is_empty());
        assert!(find_tables("> | a | b |\n> | --- | --- |\n").is_empty());
        assert!(find_tables("| a |\n---\n").is_empty());
        assert!(find_tables("| a | b |\n| --- |\n").is_empty(), "cell counts differ");
        assert!(find_tables("| a | b |\n| --- | x |\n").is_empty());
        assert_eq!(find_tables("   | a |\n   | :-- |\n")[0].align, vec![Align::Left]);
        assert_eq!(find_tables("| a |\n| --- |\n")[0].header, strings(&["a"]));
    }

    #[test]
    fn rows_end_at_a_blank_line_or_another_block() {
        for end in ["", "# Heading", "```", "> quote", "---", "- item", "    code", "%%"] {
            let text = format!("| a | b |\n| --- | --- |\n| 1 | 2 |\n{end}\nrest\n");
            let t = &find_tables(&text)[0];
            assert_eq!(t.rows.len(), 1, "{end:?}");
        }
        // A line with no pipe is still a row (one cell), as in GFM.
        let t = &find_tables("| a | b |\n| --- | --- |\nbare\n")[0];
        assert_eq!(t.rows, vec![strings(&["bare"])]);
    }

    #[test]
    fn editing_the_second_table_leaves_the_first_byte_identical() {
        let out = insert_row(TWO, 1, &strings(&["p", "q"]), Some(0)).unwrap();
        let first = find_tables(TWO)[0].range.clone();
        assert_eq!(&out.text[first.clone()], &TWO[first]);
        let table = assert_only_table_changed(TWO, &out.text, 1);
        assert_eq!(table, "| A | B |\n| :--- | :---: |\n| p | q |\n| x | y |");
        assert_eq!((out.rows, out.columns), (2, 2));
    }

    #[test]
    fn every_edit_touches_only_the_tables_range() {
        let edits: Vec<TableEdit> = vec![
            format_table(TWO, 0).unwrap(),
            insert_row(TWO, 0, &strings(&["kiwi"]), Some(1)).unwrap(),
            insert_column(TWO, 0, "Note", &strings(&["ripe"]), Some(1), Align::Center).unwrap(),
            sort_by_column(TWO, 0, "qty", Order::Desc, true).unwrap(),
        ];
        for edit in &edits {
            assert_only_table_changed(TWO, &edit.text, 0);
            let (old, new) = (&find_tables(TWO)[1], &find_tables(&edit.text)[1]);
            assert_eq!(&edit.text[new.range.clone()], &TWO[old.range.clone()]);
            assert_eq!((&new.header, &new.rows), (&old.header, &old.rows));
        }
    }

    #[test]
    fn format_pads_by_char_count_and_keeps_alignment() {
        let text = "before\n| Name | Qty | Mid |\n|:--|--:|:-:|\n| é | 5 | 日本 |\n| longer name | 100 |\n\nafter";
        let out = format_table(text, 0).unwrap();
        let table = assert_only_table_changed(text, &out.text, 0);
        assert_eq!(
            table,
            "| Name        | Qty | Mid |\n\
             | :---------- | --: | :-: |\n\
             | é           |   5 | 日本  |\n\
             | longer name | 100 |     |"
        );
        assert_eq!((out.rows, out.columns), (2, 3));
        // Every line has its pipes at the same char columns.
        let pipe_columns =
            |line: &str| line.chars().enumerate().filter(|(_, c)| *c == '|').map(|(i, _)| i).collect::<Vec<_>>();
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines.iter().all(|l| pipe_columns(l) == pipe_columns(lines[0])));
        assert_eq!(format_table(&out.text, 0).unwrap().text, out.text, "formatting is idempotent");
        assert_eq!(find_tables(&out.text)[0].align, vec![Align::Left, Align::Right, Align::Center]);
    }

    #[test]
    fn a_table_in_a_list_item_keeps_its_indentation() {
        let text = "- item\n  | a | b |\n  |---|---|\n  | 1 | 2 |\n- next\n";
        let out = insert_row(text, 0, &strings(&["3", "4"]), None).unwrap();
        assert_eq!(out.text, "- item\n  | a | b |\n  | --- | --- |\n  | 1 | 2 |\n  | 3 | 4 |\n- next\n");
        let out = format_table(text, 0).unwrap();
        assert_eq!(out.text, "- item\n  | a   | b   |\n  | --- | --- |\n  | 1   | 2   |\n- next\n");
    }

    #[test]
    fn format_keeps_cells_past_the_header() {
        let text = "| a | b |\n|---|---|\n| 1 | 2 | extra |\n";
        let out = format_table(text, 0).unwrap();
        assert_eq!(out.text, "| a   | b   |\n| --- | --- |\n| 1   | 2   | extra |\n");
    }

    #[test]
    fn a_table_at_the_very_end_without_a_trailing_newline() {
        let text = "Intro\n\n| a | b |\n| --- | --- |\n| 1 | 2 |";
        let t = &find_tables(text)[0];
        assert_eq!(t.range.end, text.len());
        let out = insert_row(text, 0, &strings(&["3"]), None).unwrap();
        assert_eq!(out.text, "Intro\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n| 3 |  |");
        let out = format_table(text, 0).unwrap();
        assert!(out.text.ends_with("| 1   | 2   |"));
        // A trailing newline stays too.
        let out = format_table(&format!("{text}\n"), 0).unwrap();
        assert!(out.text.ends_with("| 1   | 2   |\n"));
    }

    #[test]
    fn insert_row_positions_pads_and_escapes() {
        let text = "| a | b | c |\n|---|---|---|\n| 1 | 2 | 3 |\n";
        let out = insert_row(text, 0, &strings(&["x|y", " [[N\\|al]] "]), Some(0)).unwrap();
        assert_eq!(out.text, "| a | b | c |\n| --- | --- | --- |\n| x\\|y | [[N\\|al]] |  |\n| 1 | 2 | 3 |\n");
        assert_eq!(find_tables(&out.text)[0].rows[0], strings(&["x\\|y", "[[N\\|al]]", ""]));
        assert_eq!((out.rows, out.columns), (2, 3));
        let out = insert_row(text, 0, &[], None).unwrap();
        assert!(out.text.ends_with("| 1 | 2 | 3 |\n|  |  |  |\n"));
    }

    #[test]
    fn insert_column_at_a_position_with_values() {
        let text = "| a | b |\n| --- | ---: |\n| 1 | 2 |\n| 3 |\n| 5 | 6 |\n";
        let out = insert_column(text, 0, "New", &strings(&["x", "y"]), Some(1), Align::Left).unwrap();
        assert_eq!(out.text, "| a | New | b |\n| --- | :--- | ---: |\n| 1 | x | 2 |\n| 3 | y |  |\n| 5 |  | 6 |\n");
        assert_eq!((out.rows, out.columns), (3, 3));
        let out = insert_column(text, 0, "Last", &[], None, Align::None).unwrap();
        assert_eq!(out.text, "| a | b | Last |\n| --- | ---: | --- |\n| 1 | 2 |  |\n| 3 |  |  |\n| 5 | 6 |  |\n");
        let out = insert_column(text, 0, "First", &strings(&["p|q"]), Some(0), Align::Right).unwrap();
        assert!(out.text.starts_with("| First | a | b |\n| ---: | --- | ---: |\n| p\\|q | 1 | 2 |\n"));
    }

    #[test]
    fn errors_name_the_offending_field() {
        let field = |e: ToolError| {
            assert_eq!(e.code, ErrorCode::InvalidInput);
            e.details["field"].as_str().unwrap().to_string()
        };
        let e = format_table(TWO, 2).unwrap_err();
        assert!(e.message.contains("2 tables"), "{}", e.message);
        assert_eq!(field(e), "table_index");
        assert_eq!(field(format_table("no tables here\n", 0).unwrap_err()), "table_index");
        assert_eq!(field(insert_row(TWO, 0, &strings(&["a", "b", "c"]), None).unwrap_err()), "values");
        assert_eq!(field(insert_row(TWO, 0, &strings(&["a\nb"]), None).unwrap_err()), "values");
        assert_eq!(field(insert_row(TWO, 0, &strings(&["a\r"]), None).unwrap_err()), "values");
        assert_eq!(field(insert_row(TWO, 0, &[], Some(3)).unwrap_err()), "at");
        assert_eq!(
            field(insert_column(TWO, 0, "H", &strings(&["1", "2", "3"]), None, Align::None).unwrap_err()),
            "values"
        );
        assert_eq!(field(insert_column(TWO, 0, "H\nI", &[], None, Align::None).unwrap_err()), "header");
        assert_eq!(field(insert_column(TWO, 0, "H", &strings(&["x\ny"]), None, Align::None).unwrap_err()), "values");
        assert_eq!(field(insert_column(TWO, 0, "H", &[], Some(3), Align::None).unwrap_err()), "at");
        assert_eq!(field(sort_by_column(TWO, 0, "Price", Order::Asc, false).unwrap_err()), "column");
        assert_eq!(field(sort_by_column(TWO, 0, "2", Order::Asc, false).unwrap_err()), "column");
        assert_eq!(field(sort_by_column(TWO, 5, "Name", Order::Asc, false).unwrap_err()), "table_index");
    }

    fn column_after_sort(text: &str, column: &str, order: Order, numeric: bool, read: usize) -> Vec<String> {
        let out = sort_by_column(text, 0, column, order, numeric).unwrap();
        assert_only_table_changed(text, &out.text, 0);
        find_tables(&out.text)[0].rows.iter().map(|r| r[read].clone()).collect()
    }

    const NUMBERS: &str = "x\n\n| Item | Price |\n|---|---:|\n| a | 10 |\n| b | n/a |\n| c | 1,200.5 |\n| d | -3 |\n| e |  |\n| f | 2.5e1 |\n| g | 1,2 |\n\ny\n";

    #[test]
    fn numeric_sort_puts_unparseable_cells_last_in_both_orders() {
        assert_eq!(
            column_after_sort(NUMBERS, "price", Order::Asc, true, 0),
            strings(&["d", "a", "f", "c", "b", "e", "g"])
        );
        assert_eq!(
            column_after_sort(NUMBERS, " PRICE ", Order::Desc, true, 0),
            strings(&["c", "f", "a", "d", "b", "e", "g"])
        );
    }

    #[test]
    fn text_sort_is_case_insensitive_and_desc_reverses() {
        let text = "| k | v |\n|---|---|\n| banana | 1 |\n| Apple | 2 |\n| cherry | 3 |\n";
        assert_eq!(column_after_sort(text, "k", Order::Asc, false, 0), strings(&["Apple", "banana", "cherry"]));
        assert_eq!(column_after_sort(text, "0", Order::Desc, false, 0), strings(&["cherry", "banana", "Apple"]));
        // Non-numeric sort of numbers is by text.
        assert_eq!(column_after_sort(NUMBERS, "1", Order::Asc, false, 1)[..3], strings(&["", "-3", "1,2"]));
    }

    #[test]
    fn sort_is_stable_in_both_orders() {
        let text = "| g | n |\n|---|---|\n| b | 1 |\n| a | 2 |\n| B | 3 |\n| a | 4 |\n| A | 5 |\n";
        assert_eq!(column_after_sort(text, "g", Order::Asc, false, 1), strings(&["2", "4", "5", "1", "3"]));
        assert_eq!(column_after_sort(text, "g", Order::Desc, false, 1), strings(&["1", "3", "2", "4", "5"]));
        let text = "| n | id |\n|---|---|\n| 2 | a |\n| 1 | b |\n| 2 | c |\n| x | d |\n| 1 | e |\n| y | f |\n";
        assert_eq!(column_after_sort(text, "n", Order::Desc, true, 1), strings(&["a", "c", "b", "e", "d", "f"]));
    }

    #[test]
    fn a_header_that_looks_like_a_number_wins_over_the_position() {
        let text = "| 1 | 0 |\n|---|---|\n| b | z |\n| a | y |\n";
        // "0" names the second column's header, not column 0.
        assert_eq!(column_after_sort(text, "0", Order::Asc, false, 0), strings(&["a", "b"]));
    }

    #[test]
    fn numbers_parse_with_thousands_separators_only() {
        assert_eq!(parse_number(" 1,234,567.25 "), Some(1_234_567.25));
        assert_eq!(parse_number("-12"), Some(-12.0));
        assert_eq!(parse_number("1,23"), None);
        assert_eq!(parse_number("1234,567"), None);
        assert_eq!(parse_number("1.5,0"), None);
        assert_eq!(parse_number("NaN"), None);
        assert_eq!(parse_number("inf"), None);
        assert_eq!(parse_number(""), None);
        assert_eq!(parse_number("12 kg"), None);
    }

    #[test]
    fn odd_notes_do_not_panic_and_edits_round_trip() {
        let notes = [
            "| a |\n|-|\n|\\",
            "|\n|-|\n",
            "a|b\r\n-|-\r",
            "| é\\| |\n| :-: |\n| 日本 \\",
            "||\n|-|-|\n| | |",
            "x\n| a | b |\n|:-:|--:|\n|\n|||||\n",
        ];
        for note in notes {
            for (i, table) in find_tables(note).iter().enumerate() {
                let column = strings(&["w"]);
                let column = &column[..table.rows.len().min(1)];
                for out in [
                    format_table(note, i).unwrap(),
                    insert_row(note, i, &strings(&["v\\"]), Some(0)).unwrap(),
                    insert_column(note, i, "h|", column, Some(0), Align::Right).unwrap(),
                    sort_by_column(note, i, "0", Order::Desc, true).unwrap(),
                ] {
                    assert_only_table_changed(note, &out.text, i);
                    let t = &find_tables(&out.text)[i];
                    assert_eq!((t.rows.len(), t.header.len()), (out.rows, out.columns), "{note:?}");
                }
            }
        }
    }

    #[test]
    fn align_and_order_names() {
        assert_eq!(Align::from_name("Centre"), Some(Align::Center));
        assert_eq!(Align::from_name("right"), Some(Align::Right));
        assert_eq!(Align::from_name("up"), None);
        assert_eq!(Order::from_name("DESC"), Some(Order::Desc));
        assert_eq!(Order::from_name("sideways"), None);
    }
}
