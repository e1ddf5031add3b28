//! Reading a ```` ```tasks ```` block: instructions line by line, filters (boolean
//! combinations included), `sort by`, `group by`, `limit` and the layout instructions ignored.

use chrono::{Days, Months, NaiveDate, Weekday};
use otc_errors::{ErrorCode, ToolError, echo};
use regex::{Regex, RegexBuilder};

use super::line::parse_date;
use super::query::{
    DateOp, DateSpec, Filter, GroupBy, GroupField, Period, PriorityCmp, Query, Relative, Sort, SortKey, TextField,
    TextMatch,
};
use super::{DateField, Priority, StatusType};

/// The refusal of one query instruction.
fn query_error(message: String, line: usize, instruction: &str) -> ToolError {
    ToolError::with_message(ErrorCode::InvalidInput, message)
        .detail("field", "filter")
        .detail("line", line)
        .echo("instruction", instruction)
        .bounded()
}

/// The instructions of a block with the (1-based) line each starts on: a line ending in `\` goes
/// on with the next one (the `\` and the whitespace around it become one space); a line ending
/// in `\\` ends in one `\`.
fn instructions(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.split('\n').enumerate() {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let (start, mut acc) = pending.take().unwrap_or((i + 1, String::new()));
        let continues = raw.ends_with('\\') && !raw.ends_with("\\\\");
        let part = if continues || raw.ends_with("\\\\") { &raw[..raw.len() - 1] } else { raw };
        if acc.is_empty() {
            acc.push_str(part);
        } else {
            let keep = acc.trim_end().len();
            acc.truncate(keep);
            acc.push(' ');
            acc.push_str(part.trim_start());
        }
        if continues {
            pending = Some((start, acc));
        } else {
            out.push((start, acc));
        }
    }
    out.extend(pending);
    out
}

/// `text` with each run of whitespace made one space, lowercased.
fn normalized(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// Whether `text` starts with `words` (ASCII case-insensitive, any whitespace between them); the
/// rest, trimmed, if it does.
fn after_words<'a>(text: &'a str, words: &[&str]) -> Option<&'a str> {
    let mut rest = text.trim_start();
    for word in words {
        let head = rest.get(..word.len())?;
        if !head.eq_ignore_ascii_case(word) {
            return None;
        }
        let tail = &rest[word.len()..];
        if !(tail.is_empty() || tail.starts_with(char::is_whitespace)) {
            return None;
        }
        rest = tail.trim_start();
    }
    Some(rest.trim_end())
}

/// Reads a ```` ```tasks ```` block: one instruction per line (a `\` at the end of a line
/// continues it), blank lines and `#` comments skipped.
///
/// Filters: `done`, `not done`; `due|scheduled|starts|happens|done|created|cancelled`
/// `[on|in|before|after|on or before|on or after|in or before|in or after] <date>` where the date
/// is `YYYY-MM-DD`, two of them (a range), `today`, `tomorrow`, `yesterday`,
/// `last|this|next week|month|quarter|year`, `YYYY-Www`, `YYYY-MM`, `YYYY-Qq` or `YYYY`;
/// `has|no due|scheduled|start|done|created|cancelled|happens date`; `<date> date is invalid`;
/// `is [not] recurring`; `priority is [above|below|not] lowest|low|none|medium|high|highest`;
/// `description|path|folder|root|filename|heading|status.name|recurrence|id`
/// `includes|does not include <text>` (case-insensitive) or `regex matches|regex does not
/// match /re/flags`; `tags include|do not include <tag>` (also `tag includes`, and the regex
/// forms); `has|no tags`, `has|no id`, `has|no depends on`, `is [not] blocked`,
/// `is [not] blocking`, `status.type is [not] TODO|IN_PROGRESS|ON_HOLD|DONE|CANCELLED|NON_TASK`;
/// and any of those combined with `AND`, `OR`, `NOT`, `AND NOT`, `OR NOT`, `XOR`, each wrapped
/// in one kind of delimiter: `(...)`, `[...]`, `{...}` or `"..."`.
///
/// Also `sort by <key> [reverse]` (status, status.type, status.name, urgency, due, scheduled,
/// start, done, created, cancelled, happens, priority, description, path, filename, heading,
/// recurring, `tag [N]`, id, random), `group by <field> [reverse]` (status, status.type,
/// status.name, due, scheduled, start, done, created, cancelled, happens, priority, urgency,
/// recurring, recurrence, tags, path, root, folder, filename, heading, id),
/// `limit [to] N [tasks]`, `limit groups [to] N [tasks]` and `exclude sub-items`. Layout instructions
/// (`hide ...`, `show ...`, `short mode`, `full mode`, `view ...`, `explain`,
/// `ignore global query`) are accepted and ignored.
///
/// Anything else (scripting with `... by function` included) is refused: `InvalidInput` with
/// details `field: "filter"`, `line` (1-based) and the `instruction`, the message naming it.
pub fn parse_query(text: &str) -> Result<Query, ToolError> {
    let mut query = Query::default();
    for (line, raw) in instructions(text) {
        let instruction = raw.trim();
        if instruction.is_empty() || instruction.starts_with('#') {
            continue;
        }
        let words = normalized(instruction);
        let unknown = || query_error(format!("unknown instruction \"{}\"", echo(instruction)), line, instruction);
        if is_layout(&words) {
            query.ignored.push(instruction.to_string());
        } else if words == "exclude sub-items" {
            query.exclude_sub_items = true;
        } else if let Some(rest) = words.strip_prefix("limit groups ") {
            query.group_limit = Some(parse_limit(rest).ok_or_else(unknown)?);
        } else if let Some(rest) = words.strip_prefix("limit ") {
            query.limit = Some(parse_limit(rest).ok_or_else(unknown)?);
        } else if words.starts_with("sort by function") || words.starts_with("group by function") {
            return Err(scripting_refused(instruction, line));
        } else if let Some(rest) = words.strip_prefix("sort by ") {
            query.sorts.push(parse_sort(rest).ok_or_else(unknown)?);
        } else if let Some(rest) = words.strip_prefix("group by ") {
            query.groups.push(parse_group(rest).ok_or_else(unknown)?);
        } else {
            query.filters.push(parse_filter(instruction, line)?);
        }
    }
    Ok(query)
}

fn scripting_refused(instruction: &str, line: usize) -> ToolError {
    query_error(format!("scripting instructions are not supported: \"{}\"", echo(instruction)), line, instruction)
}

fn is_layout(words: &str) -> bool {
    const EXACT: [&str; 6] = ["short mode", "full mode", "short", "full", "explain", "ignore global query"];
    EXACT.contains(&words) || ["hide ", "show ", "view "].iter().any(|p| words.starts_with(p))
}

/// `N`, `to N`, `N tasks`, `to N tasks`.
fn parse_limit(rest: &str) -> Option<usize> {
    let rest = rest.strip_prefix("to ").unwrap_or(rest);
    let rest = rest.strip_suffix(" tasks").unwrap_or(rest);
    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest.parse().ok()
}

fn date_field_named(word: &str) -> Option<DateField> {
    Some(match word {
        "due" => DateField::Due,
        "scheduled" => DateField::Scheduled,
        "start" => DateField::Start,
        "done" => DateField::Done,
        "created" => DateField::Created,
        "cancelled" => DateField::Cancelled,
        _ => return None,
    })
}

/// The words of a `sort by`/`group by` line and whether the last is `reverse`.
fn split_reverse(rest: &str) -> (Vec<&str>, bool) {
    let mut words: Vec<&str> = rest.split(' ').collect();
    let reverse = words.last() == Some(&"reverse");
    if reverse {
        words.pop();
    }
    (words, reverse)
}

fn parse_sort(rest: &str) -> Option<Sort> {
    let (words, reverse) = split_reverse(rest);
    let key = match words.as_slice() {
        ["status"] => SortKey::Status,
        ["status.type"] => SortKey::StatusType,
        ["status.name"] => SortKey::StatusName,
        ["urgency"] => SortKey::Urgency,
        ["happens"] => SortKey::Happens,
        ["priority"] => SortKey::Priority,
        ["description"] => SortKey::Description,
        ["path"] => SortKey::Path,
        ["filename"] => SortKey::Filename,
        ["heading"] => SortKey::Heading,
        ["recurring"] => SortKey::Recurring,
        ["id"] => SortKey::Id,
        ["random"] => SortKey::Random,
        ["tag" | "tags"] => SortKey::Tag(1),
        ["tag" | "tags", n] => SortKey::Tag(n.parse().ok().filter(|n| *n >= 1)?),
        [word] => SortKey::Date(date_field_named(word)?),
        _ => return None,
    };
    Some(Sort { key, reverse })
}

fn parse_group(rest: &str) -> Option<GroupBy> {
    let (words, reverse) = split_reverse(rest);
    let field = match words.as_slice() {
        ["status"] => GroupField::Status,
        ["status.type"] => GroupField::StatusType,
        ["status.name"] => GroupField::StatusName,
        ["happens"] => GroupField::Happens,
        ["priority"] => GroupField::Priority,
        ["urgency"] => GroupField::Urgency,
        ["recurring"] => GroupField::Recurring,
        ["recurrence"] => GroupField::Recurrence,
        ["tags" | "tag"] => GroupField::Tags,
        ["path"] => GroupField::Path,
        ["root"] => GroupField::Root,
        ["folder"] => GroupField::Folder,
        ["filename"] => GroupField::Filename,
        ["heading"] => GroupField::Heading,
        ["id"] => GroupField::Id,
        [word] => GroupField::Date(date_field_named(word)?),
        _ => return None,
    };
    Some(GroupBy { field, reverse })
}

/// The delimiter pairs of boolean instructions.
const DELIMITERS: [(char, char); 4] = [('(', ')'), ('[', ']'), ('{', '}'), ('"', '"')];

/// Whether an instruction is a boolean combination: it opens with a delimiter or with `NOT`.
fn is_boolean(text: &str) -> bool {
    let t = text.trim_start();
    if t.starts_with(['(', '[', '{', '"']) {
        return true;
    }
    t.strip_prefix("NOT").is_some_and(|rest| rest.starts_with(|c: char| c.is_whitespace() || "([{\"".contains(c)))
}

fn parse_filter(text: &str, line: usize) -> Result<Filter, ToolError> {
    if is_boolean(text) { BoolParser::parse(text, line) } else { parse_simple(text, line) }
}

/// Reads one boolean instruction (docs: Queries/Combining Filters). Operators bind `NOT`, then
/// `XOR`, then `AND`, then `OR`; a sub-expression ends at the first closing delimiter followed by
/// the end, another closing delimiter or an operator, as the plugin reads it.
struct BoolParser<'a> {
    text: &'a str,
    chars: Vec<char>,
    pos: usize,
    open: char,
    close: char,
    line: usize,
}

impl<'a> BoolParser<'a> {
    fn parse(text: &'a str, line: usize) -> Result<Filter, ToolError> {
        let chars: Vec<char> = text.chars().collect();
        let mut parser = BoolParser { text, chars, pos: 0, open: '(', close: ')', line };
        // The delimiter is the first one the line opens with (after any NOTs).
        loop {
            parser.skip_ws();
            if parser.keyword("NOT") {
                parser.pos += 3;
            } else {
                break;
            }
        }
        let first = parser.chars.get(parser.pos).copied();
        let Some(&(open, close)) = DELIMITERS.iter().find(|(o, _)| Some(*o) == first) else {
            return Err(parser.malformed("each filter must be inside (...), [...], {...} or \"...\""));
        };
        parser.open = open;
        parser.close = close;
        parser.pos = 0;
        let filter = parser.or()?;
        parser.skip_ws();
        if parser.pos < parser.chars.len() {
            return Err(parser.malformed("unexpected text after the last filter (are the delimiters balanced?)"));
        }
        Ok(filter)
    }

    fn malformed(&self, why: &str) -> ToolError {
        query_error(format!("malformed boolean instruction \"{}\": {why}", echo(self.text)), self.line, self.text)
    }

    fn skip_ws(&mut self) {
        while self.chars.get(self.pos).is_some_and(|c| c.is_whitespace()) {
            self.pos += 1;
        }
    }

    /// Whether the operator `word` (case-sensitive) starts at `at`, followed by whitespace or an
    /// opening delimiter.
    fn keyword_at(&self, at: usize, word: &str) -> bool {
        let n = word.chars().count();
        if at + n > self.chars.len() || !self.chars[at..at + n].iter().copied().eq(word.chars()) {
            return false;
        }
        self.chars.get(at + n).is_some_and(|c| c.is_whitespace() || *c == self.open || "([{\"".contains(*c))
    }

    fn keyword(&self, word: &str) -> bool {
        self.keyword_at(self.pos, word)
    }

    fn binary(
        &mut self,
        word: &str,
        next: fn(&mut Self) -> Result<Filter, ToolError>,
        make: fn(Box<Filter>, Box<Filter>) -> Filter,
    ) -> Result<Filter, ToolError> {
        let mut left = next(self)?;
        loop {
            self.skip_ws();
            if !self.keyword(word) {
                return Ok(left);
            }
            self.pos += word.len();
            let right = next(self)?;
            left = make(Box::new(left), Box::new(right));
        }
    }

    fn or(&mut self) -> Result<Filter, ToolError> {
        self.binary("OR", Self::and, Filter::Or)
    }

    fn and(&mut self) -> Result<Filter, ToolError> {
        self.binary("AND", Self::xor, Filter::And)
    }

    fn xor(&mut self) -> Result<Filter, ToolError> {
        self.binary("XOR", Self::not, Filter::Xor)
    }

    fn not(&mut self) -> Result<Filter, ToolError> {
        self.skip_ws();
        if self.keyword("NOT") {
            self.pos += 3;
            return Ok(Filter::Not(Box::new(self.not()?)));
        }
        self.primary()
    }

    fn ends_sub_expression(&self, at: usize) -> bool {
        let mut k = at;
        while self.chars.get(k).is_some_and(|c| c.is_whitespace()) {
            k += 1;
        }
        k >= self.chars.len()
            || self.chars[k] == self.close
            || ["AND", "OR", "XOR"].iter().any(|w| self.keyword_at(k, w))
    }

    fn primary(&mut self) -> Result<Filter, ToolError> {
        self.skip_ws();
        if self.chars.get(self.pos) != Some(&self.open) {
            return Err(self.malformed(&format!("expected '{}' to open a filter", self.open)));
        }
        self.pos += 1;
        self.skip_ws();
        let nested = (self.open != '"' && self.chars.get(self.pos) == Some(&self.open)) || self.keyword("NOT");
        if nested {
            let inner = self.or()?;
            self.skip_ws();
            if self.chars.get(self.pos) != Some(&self.close) {
                return Err(self.malformed(&format!("expected '{}' to close a group", self.close)));
            }
            self.pos += 1;
            return Ok(inner);
        }
        let start = self.pos;
        for end in start..self.chars.len() {
            if self.chars[end] == self.close && self.ends_sub_expression(end + 1) {
                let leaf: String = self.chars[start..end].iter().collect();
                self.pos = end + 1;
                let leaf = leaf.trim();
                if leaf.is_empty() {
                    return Err(self.malformed("empty filter"));
                }
                return parse_simple(leaf, self.line);
            }
        }
        Err(self.malformed(&format!("a filter is not closed with '{}'", self.close)))
    }
}

/// Reads `/pattern/flags` as a regex (JavaScript flags `i`, `m`, `s`; `g`, `u`, `y` ignored).
fn parse_regex(value: &str, line: usize, instruction: &str) -> Result<Regex, ToolError> {
    let bad = |why: String| query_error(format!("{why} in \"{}\"", echo(instruction)), line, instruction);
    let body = value.strip_prefix('/').ok_or_else(|| bad("a regex must be written /like this/".to_string()))?;
    let end = body.rfind('/').ok_or_else(|| bad("a regex must be written /like this/".to_string()))?;
    let (pattern, flags) = (&body[..end], &body[end + 1..]);
    if pattern.is_empty() || !flags.chars().all(|c| "gimsuy".contains(c)) {
        return Err(bad("a regex must be written /like this/ with flags among i, m, s".to_string()));
    }
    RegexBuilder::new(pattern)
        .case_insensitive(flags.contains('i'))
        .multi_line(flags.contains('m'))
        .dot_matches_new_line(flags.contains('s'))
        .size_limit(1 << 20)
        .build()
        .map_err(|e| bad(format!("the regex does not compile ({})", echo(&e.to_string()))))
}

/// Reads one instruction that is not a boolean combination.
fn parse_simple(text: &str, line: usize) -> Result<Filter, ToolError> {
    let words = normalized(text);
    let unknown = || query_error(format!("unknown instruction \"{}\"", echo(text)), line, text);
    let simple = match words.as_str() {
        "done" => Some(Filter::Done(true)),
        "not done" => Some(Filter::Done(false)),
        "is recurring" => Some(Filter::Recurring(true)),
        "is not recurring" => Some(Filter::Recurring(false)),
        "has tags" | "has tag" => Some(Filter::HasTags(true)),
        "no tags" | "no tag" => Some(Filter::HasTags(false)),
        "has id" => Some(Filter::HasId(true)),
        "no id" => Some(Filter::HasId(false)),
        "has depends on" => Some(Filter::HasDependsOn(true)),
        "no depends on" => Some(Filter::HasDependsOn(false)),
        "is blocked" => Some(Filter::Blocked(true)),
        "is not blocked" => Some(Filter::Blocked(false)),
        "is blocking" => Some(Filter::Blocking(true)),
        "is not blocking" => Some(Filter::Blocking(false)),
        _ => None,
    };
    if let Some(filter) = simple {
        return Ok(filter);
    }
    if words.starts_with("filter by function") {
        return Err(scripting_refused(text, line));
    }
    // has/no <field> date
    for (prefix, has) in [("has ", true), ("no ", false)] {
        if let Some(name) = words.strip_prefix(prefix).and_then(|r| r.strip_suffix(" date")) {
            if name == "happens" {
                return Ok(Filter::HasDate(None, has));
            }
            if let Some(field) = date_field_named(name) {
                return Ok(Filter::HasDate(Some(field), has));
            }
        }
    }
    if let Some(field) = words.strip_suffix(" date is invalid").and_then(date_field_named) {
        return Ok(Filter::DateInvalid(field));
    }
    // Date filters.
    let (first, rest) = words.split_once(' ').unwrap_or((words.as_str(), ""));
    let date_field = match first {
        "starts" => Some(Some(DateField::Start)),
        "happens" => Some(None),
        "start" => None,
        other => date_field_named(other).map(Some),
    };
    if let Some(field) = date_field {
        return parse_date_filter(field, rest, text, line);
    }
    // priority is [above|below|not] <level>
    if let Some(rest) = words.strip_prefix("priority is ") {
        let (cmp, level) = match rest.split_once(' ') {
            Some(("above", level)) => (PriorityCmp::Above, level),
            Some(("below", level)) => (PriorityCmp::Below, level),
            Some(("not", level)) => (PriorityCmp::Not, level),
            _ => (PriorityCmp::Is, rest),
        };
        let level = Priority::from_name(level).ok_or_else(|| {
            query_error(
                format!("\"{}\": the priority must be lowest, low, none, medium, high or highest", echo(text)),
                line,
                text,
            )
        })?;
        return Ok(Filter::Priority(cmp, level));
    }
    // status.type is [not] <TYPE>
    if let Some(rest) = words.strip_prefix("status.type is ") {
        let (is, name) = match rest.strip_prefix("not ") {
            Some(name) => (false, name),
            None => (true, rest),
        };
        let ty = StatusType::parse(name).ok_or_else(|| {
            query_error(
                format!(
                    "\"{}\": the status type must be TODO, DONE, IN_PROGRESS, ON_HOLD, CANCELLED or NON_TASK",
                    echo(text)
                ),
                line,
                text,
            )
        })?;
        return Ok(Filter::StatusType(ty, is));
    }
    parse_text_filter(text, line).unwrap_or_else(|| Err(unknown()))
}

/// `<field> includes|does not include|regex matches|regex does not match <value>`.
fn parse_text_filter(text: &str, line: usize) -> Option<Result<Filter, ToolError>> {
    const FIELDS: [(&str, TextField); 11] = [
        ("description", TextField::Description),
        ("path", TextField::Path),
        ("folder", TextField::Folder),
        ("root", TextField::Root),
        ("filename", TextField::Filename),
        ("heading", TextField::Heading),
        ("status.name", TextField::StatusName),
        ("recurrence", TextField::Recurrence),
        ("id", TextField::Id),
        ("tags", TextField::Tag),
        ("tag", TextField::Tag),
    ];
    const OPS: [(&[&str], u8); 6] = [
        (&["regex", "does", "not", "match"], 3),
        (&["regex", "matches"], 2),
        (&["does", "not", "include"], 1),
        (&["do", "not", "include"], 1),
        (&["includes"], 0),
        (&["include"], 0),
    ];
    let (field, rest) = FIELDS.iter().find_map(|(name, field)| Some((*field, after_words(text, &[name])?)))?;
    let (value, op) = OPS.iter().find_map(|(words, op)| Some((after_words(rest, words)?, *op)))?;
    if value.is_empty() {
        return Some(Err(query_error(format!("\"{}\" has no value to search for", echo(text)), line, text)));
    }
    let matcher = match op {
        0 => TextMatch::Includes(value.to_lowercase()),
        1 => TextMatch::Excludes(value.to_lowercase()),
        2 => match parse_regex(value, line, text) {
            Ok(re) => TextMatch::Matches(re),
            Err(e) => return Some(Err(e)),
        },
        _ => match parse_regex(value, line, text) {
            Ok(re) => TextMatch::NotMatches(re),
            Err(e) => return Some(Err(e)),
        },
    };
    Some(Ok(Filter::Text(field, matcher)))
}

fn parse_date_filter(field: Option<DateField>, rest: &str, text: &str, line: usize) -> Result<Filter, ToolError> {
    const OPS: [(&str, DateOp); 8] = [
        ("on or before", DateOp::OnOrBefore),
        ("on or after", DateOp::OnOrAfter),
        ("in or before", DateOp::OnOrBefore),
        ("in or after", DateOp::OnOrAfter),
        ("before", DateOp::Before),
        ("after", DateOp::After),
        ("on", DateOp::In),
        ("in", DateOp::In),
    ];
    let (op, spec) = OPS
        .iter()
        .find_map(|(word, op)| {
            let after = rest.strip_prefix(word)?;
            (after.is_empty() || after.starts_with(' ')).then(|| (*op, after.trim()))
        })
        .unwrap_or((DateOp::In, rest));
    let when = parse_date_spec(spec).ok_or_else(|| {
        let name = field.map_or("happens", DateField::name);
        query_error(
            format!(
                "\"{}\": the {name} filter does not understand the date \"{}\" (use YYYY-MM-DD, today, tomorrow, \
                 yesterday, two dates, last|this|next week|month|quarter|year, YYYY-Www, YYYY-MM, YYYY-Qq or YYYY)",
                echo(text),
                echo(spec)
            ),
            line,
            text,
        )
    })?;
    Ok(Filter::Date { field, op, when })
}

/// Reads a date or range of a date filter (already lowercased).
fn parse_date_spec(text: &str) -> Option<DateSpec> {
    let words: Vec<&str> = text.split_whitespace().collect();
    match words.as_slice() {
        ["today"] => Some(DateSpec::DaysFromToday(0)),
        ["tomorrow"] => Some(DateSpec::DaysFromToday(1)),
        ["yesterday"] => Some(DateSpec::DaysFromToday(-1)),
        [relative, period] if ["last", "this", "next"].contains(relative) => {
            let relative = match *relative {
                "last" => Relative::Last,
                "this" => Relative::This,
                _ => Relative::Next,
            };
            let period = match *period {
                "week" => Period::Week,
                "month" => Period::Month,
                "quarter" => Period::Quarter,
                "year" => Period::Year,
                _ => return None,
            };
            Some(DateSpec::Relative(relative, period))
        }
        [a, b] => match (parse_date(a), parse_date(b)) {
            (Some(a), Some(b)) => Some(DateSpec::Range(a.min(b), a.max(b))),
            // One invalid date of a pair is ignored (docs: Filters, absolute date ranges).
            (Some(d), None) | (None, Some(d)) => Some(DateSpec::Range(d, d)),
            (None, None) => None,
        },
        [one] => numbered_range(one).map(|(a, b)| DateSpec::Range(a, b)),
        _ => None,
    }
}

/// `YYYY-MM-DD`, `YYYY-Www`, `YYYY-Qq`, `YYYY-MM` or `YYYY` as an inclusive range.
fn numbered_range(text: &str) -> Option<(NaiveDate, NaiveDate)> {
    if let Some(d) = parse_date(text) {
        return Some((d, d));
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (year, rest) = match text.split_once('-') {
        Some((y, rest)) => (y, Some(rest)),
        None => (text, None),
    };
    if year.len() != 4 || !digits(year) {
        return None;
    }
    let year: i32 = year.parse().ok()?;
    let last_day = |start: NaiveDate, months: u32| start.checked_add_months(Months::new(months))?.pred_opt();
    match rest {
        None => {
            let start = NaiveDate::from_ymd_opt(year, 1, 1)?;
            Some((start, last_day(start, 12)?))
        }
        Some(rest) if rest.len() == 3 && rest.starts_with('w') && digits(&rest[1..]) => {
            let week: u32 = rest[1..].parse().ok()?;
            let start = NaiveDate::from_isoywd_opt(year, week, Weekday::Mon)?;
            Some((start, start.checked_add_days(Days::new(6))?))
        }
        Some(rest) if rest.len() == 2 && rest.starts_with('q') && digits(&rest[1..]) => {
            let quarter: u32 = rest[1..].parse().ok()?;
            if !(1..=4).contains(&quarter) {
                return None;
            }
            let start = NaiveDate::from_ymd_opt(year, 3 * (quarter - 1) + 1, 1)?;
            Some((start, last_day(start, 3)?))
        }
        Some(rest) if rest.len() == 2 && digits(rest) => {
            let start = NaiveDate::from_ymd_opt(year, rest.parse().ok()?, 1)?;
            Some((start, last_day(start, 1)?))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_instruction_parses() {
        let q = parse_query(
            "# a comment\n\nnot done\ndone\ndue before today\ndue on or after 2024-01-01\ndue in or before next week\n\
             scheduled after tomorrow\nstarts before yesterday\nhappens this month\ndone on 2024-01-01\n\
             created in last quarter\ncancelled 2024-01-01 2024-01-31\ndue 2024-W03\ndue 2024-05\ndue 2024-Q2\n\
             due 2024\nhas due date\nno scheduled date\nhas start date\nno done date\nhas created date\n\
             no cancelled date\nhas happens date\ndue date is invalid\nstart date is invalid\nis recurring\n\
             is not recurring\npriority is high\npriority is above none\npriority is below medium\n\
             priority is not lowest\ndescription includes milk\ndescription does not include milk\n\
             description regex matches /^a/i\ndescription regex does not match /b$/\ntags include #x\n\
             tags do not include #x\ntag includes x\ntag does not include x\ntags regex matches /x/\n\
             path includes a\npath does not include b\nheading includes h\nheading does not include h\n\
             folder includes f\nroot includes r\nfilename includes n\nstatus.name includes todo\n\
             recurrence includes week\nid includes x\nhas tags\nno tags\nhas id\nno id\nhas depends on\n\
             no depends on\nis blocked\nis not blocked\nis blocking\nis not blocking\nstatus.type is TODO\n\
             status.type is not in_progress\nstatus.type is ON_HOLD\nstatus.type is NON_TASK\n\
             (due before today) AND (not done)\nexclude sub-items\nsort by due\nsort by priority reverse\n\
             sort by status\nsort by status.type\nsort by urgency\nsort by tag 2\nsort by description\n\
             sort by path\nsort by start\nsort by scheduled\nsort by done\nsort by random\n\
             group by due\ngroup by tags reverse\ngroup by status.type\ngroup by folder\ngroup by filename\n\
             group by heading\ngroup by path\ngroup by priority\ngroup by scheduled\ngroup by status\n\
             limit 10\nlimit to 5 tasks\nlimit groups to 2 tasks\nlimit groups 3\nhide due date\n\
             show urgency\nshort mode\nfull mode\nexplain\nignore global query\nhide backlink\nview list\n\
             DUE  BEFORE   TODAY",
        )
        .unwrap();
        assert_eq!(q.filters.len(), 65);
        assert_eq!(q.sorts.len(), 12);
        assert_eq!(q.sorts[1], Sort { key: SortKey::Priority, reverse: true });
        assert_eq!(q.sorts[5], Sort { key: SortKey::Tag(2), reverse: false });
        assert_eq!(q.groups.len(), 10);
        assert_eq!(q.groups[1], GroupBy { field: GroupField::Tags, reverse: true });
        assert_eq!((q.limit, q.group_limit, q.exclude_sub_items), (Some(5), Some(3), true));
        assert_eq!(q.ignored.len(), 8);
        assert!(matches!(
            q.filters[3],
            Filter::Date { field: Some(DateField::Due), op: DateOp::OnOrAfter, when: DateSpec::Range(_, _) }
        ));
    }

    #[test]
    fn unknown_instructions_are_refused_with_their_line() {
        for (query, line, named) in [
            ("not done\n\nfoo bar", 3, "foo bar"),
            ("due whenever", 1, "due whenever"),
            ("due before 2024-02-30", 1, "2024-02-30"),
            ("priority is urgent", 1, "priority is urgent"),
            ("status.type is WAITING", 1, "status.type is WAITING"),
            ("sort by colour", 1, "sort by colour"),
            ("group by colour", 1, "group by colour"),
            ("limit lots", 1, "limit lots"),
            ("filter by function task.due", 1, "filter by function"),
            ("done\n(done) OR \\\n   (bogus thing)", 2, "bogus thing"),
            ("(done) AND {is recurring}", 1, "(done) AND {is recurring}"),
            ("(description includes (maybe)) OR (done)", 1, "maybe"),
            ("(done", 1, "(done"),
            ("(done) AND", 1, "(done) AND"),
            ("(done) OR ()", 1, "(done) OR ()"),
            ("description regex matches /(/", 1, "regex"),
            ("description regex matches abc", 1, "regex"),
            ("description includes", 1, "description includes"),
            ("start before today", 1, "start before today"),
        ] {
            let err = parse_query(query).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidInput, "{query}");
            assert_eq!(err.details.get("field"), Some(&serde_json::json!("filter")), "{query}");
            assert_eq!(err.details.get("line"), Some(&serde_json::json!(line)), "{query}");
            assert!(err.message.contains(named), "{query}: {}", err.message);
        }
    }
}
