//! Task lines: reading one (fields from the end of the line, in the emoji or the dataview
//! format) and writing one back in the plugin's field order.

use std::sync::LazyLock;

use chrono::NaiveDate;
use regex::Regex;

use super::{DateField, InvalidDate, Priority, StatusType, Task, TaskFormat, regex};

/// A list item with a checkbox, as the plugin's task regex reads it.
static LINE: LazyLock<Regex> = LazyLock::new(|| regex(r"^([\s>]*)([-*+]|[0-9]+[.)]) +\[(.)\] *(.*)$"));
static BLOCK_LINK: LazyLock<Regex> = LazyLock::new(|| regex(r" \^([a-zA-Z0-9-]+)$"));
/// A tag at the end of the text (the plugin's `hashTagsFromEnd`).
static TAG_AT_END: LazyLock<Regex> = LazyLock::new(|| regex(r#"(?:^|\s)#[^\s!@#$%^&*(),.?":{}|<>]+$"#));
static TAG: LazyLock<Regex> = LazyLock::new(|| regex(r#"(?:^|\s)#([^\s!@#$%^&*(),.?":{}|<>]+)"#));

/// A field a line can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Priority,
    Date(DateField),
    Recurrence,
    OnCompletion,
    Id,
    DependsOn,
}

/// The pattern of one field at the end of the text, in one format.
struct FieldPattern {
    field: Field,
    dataview: bool,
    re: Regex,
}

static FIELDS: LazyLock<Vec<FieldPattern>> = LazyLock::new(|| {
    const DATE: &str = "([0-9]{4}-[0-9]{2}-[0-9]{2})";
    const ID: &str = "[a-zA-Z0-9_-]+";
    const RULE: &str = "([a-zA-Z0-9, !]+)";
    let ids = format!("({ID}(?: *, *{ID})*)");
    let emoji = |field, pattern: String| FieldPattern { field, dataview: false, re: regex(&format!("{pattern}$")) };
    let dataview = |field, key: &str, value: &str| FieldPattern {
        field,
        dataview: true,
        re: regex(&format!(r"(?:\[ *(?i:{key}):: *{value} *\]|\( *(?i:{key}):: *{value} *\))$")),
    };
    let sel = "\u{FE0F}?";
    let mut all = vec![
        emoji(Field::Priority, format!("([🔺⏫🔼🔽⏬]){sel}")),
        emoji(Field::Date(DateField::Done), format!("✅{sel} *{DATE}")),
        emoji(Field::Date(DateField::Cancelled), format!("❌{sel} *{DATE}")),
        emoji(Field::Date(DateField::Due), format!("(?:📅|📆|🗓){sel} *{DATE}")),
        emoji(Field::Date(DateField::Scheduled), format!("(?:⏳|⌛){sel} *{DATE}")),
        emoji(Field::Date(DateField::Start), format!("🛫{sel} *{DATE}")),
        emoji(Field::Date(DateField::Created), format!("➕{sel} *{DATE}")),
        emoji(Field::Recurrence, format!("🔁{sel} ?{RULE}")),
        emoji(Field::OnCompletion, format!("🏁{sel} *([a-zA-Z]+)")),
        emoji(Field::Id, format!("🆔{sel} *({ID})")),
        emoji(Field::DependsOn, format!("⛔{sel} *{ids}")),
    ];
    all.extend([
        dataview(Field::Priority, "priority", "(highest|high|medium|low|lowest)"),
        dataview(Field::Date(DateField::Done), "completion", DATE),
        dataview(Field::Date(DateField::Cancelled), "cancelled", DATE),
        dataview(Field::Date(DateField::Due), "due", DATE),
        dataview(Field::Date(DateField::Scheduled), "scheduled", DATE),
        dataview(Field::Date(DateField::Start), "start", DATE),
        dataview(Field::Date(DateField::Created), "created", DATE),
        dataview(Field::Recurrence, "repeat", RULE),
        dataview(Field::OnCompletion, "onCompletion", "([a-zA-Z]+)"),
        dataview(Field::Id, "id", &format!("({ID})")),
        dataview(Field::DependsOn, "dependsOn", &ids),
    ]);
    all
});

/// The `#tags` in `text`, without the `#`.
pub(super) fn find_tags(text: &str) -> Vec<String> {
    TAG.captures_iter(text).filter_map(|c| c.get(1)).map(|m| m.as_str().to_string()).collect()
}

/// A `YYYY-MM-DD` date, if it is a real one.
pub(super) fn parse_date(text: &str) -> Option<NaiveDate> {
    let bytes = text.as_bytes();
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<u32> {
        let part = text.get(range)?;
        if !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        part.parse().ok()
    };
    let year = i32::try_from(num(0..4)?).ok()?;
    NaiveDate::from_ymd_opt(year, num(5..7)?, num(8..10)?)
}

/// Sets `field` from `value` unless the task already has it; false when it does (the text is
/// then left in the description, so nothing is lost).
fn apply_field(task: &mut Task, field: Field, value: &str) -> bool {
    match field {
        Field::Priority => {
            if task.priority != Priority::None {
                return false;
            }
            match Priority::from_emoji(value).or_else(|| Priority::from_name(value)) {
                Some(p) => task.priority = p,
                None => return false,
            }
        }
        Field::Date(date) => {
            if task.has_date(date) {
                return false;
            }
            match parse_date(value) {
                Some(d) => *task.date_mut(date) = Some(d),
                None => task.invalid_dates.push(InvalidDate { field: date, text: value.to_string() }),
            }
        }
        Field::Recurrence => {
            if task.recurrence.is_some() || value.is_empty() {
                return false;
            }
            task.recurrence = Some(value.to_string());
        }
        Field::OnCompletion => {
            if task.on_completion.is_some() {
                return false;
            }
            task.on_completion = Some(value.to_string());
        }
        Field::Id => {
            if task.id.is_some() {
                return false;
            }
            task.id = Some(value.to_string());
        }
        Field::DependsOn => {
            if !task.depends_on.is_empty() {
                return false;
            }
            task.depends_on = value.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
        }
    }
    true
}

fn truncate_trimmed(text: &mut String, at: usize) {
    text.truncate(at);
    let keep = text.trim_end().len();
    text.truncate(keep);
}

/// Reads one line as a task: a list item (`-`, `*`, `+`, `1.` or `1)`, after any indentation or
/// `>`) with a one-character checkbox. `None` for anything else. A trailing line break is
/// ignored.
///
/// Fields are read from the end of the line, in any order, as the plugin does: a field in the
/// middle of the description (followed by plain text) stays part of it. Emoji (with an optional
/// variation selector, and the alternative signifiers 📆 🗓 ⌛) and dataview fields (`[key:: v]`
/// or `(key:: v)`) are both read. A date that is not a real date (`2024-02-30`) is kept in
/// [`Task::invalid_dates`]; a field given twice keeps the last one and leaves the other in the
/// description.
pub fn parse_line(line: &str) -> Option<Task> {
    let line = line.strip_suffix('\n').unwrap_or(line);
    let line = line.strip_suffix('\r').unwrap_or(line);
    let caps = LINE.captures(line)?;
    let status = caps.get(3)?.as_str().chars().next()?;
    let mut task = Task::new("");
    task.status = status;
    task.status_type = StatusType::of(status);
    task.indent = caps.get(1).map_or("", |m| m.as_str()).to_string();
    task.marker = caps.get(2).map_or("", |m| m.as_str()).to_string();

    let mut rest = caps.get(4).map_or("", |m| m.as_str()).trim().to_string();
    if let Some(c) = BLOCK_LINK.captures(&rest) {
        let (start, id) = (c.get(0).map_or(0, |m| m.start()), c.get(1).map_or("", |m| m.as_str()).to_string());
        task.block_link = Some(id);
        truncate_trimmed(&mut rest, start);
    }

    let mut trailing_tags: Vec<String> = Vec::new();
    let (mut emoji_seen, mut dataview_seen) = (false, false);
    loop {
        let mut matched = false;
        for pattern in FIELDS.iter() {
            let Some(c) = pattern.re.captures(&rest) else { continue };
            let start = c.get(0).map_or(rest.len(), |m| m.start());
            let value = (1..c.len()).find_map(|i| c.get(i)).map_or("", |m| m.as_str().trim()).to_string();
            if !apply_field(&mut task, pattern.field, &value) {
                continue;
            }
            truncate_trimmed(&mut rest, start);
            matched = true;
            if pattern.dataview {
                dataview_seen = true;
            } else {
                emoji_seen = true;
            }
        }
        if let Some(m) = TAG_AT_END.find(&rest) {
            trailing_tags.insert(0, m.as_str().trim().to_string());
            let start = m.start();
            truncate_trimmed(&mut rest, start);
            matched = true;
        }
        if !matched {
            break;
        }
    }
    if !trailing_tags.is_empty() {
        rest.push(' ');
        rest.push_str(&trailing_tags.join(" "));
    }
    task.description = rest.trim().to_string();
    task.tags = find_tags(&task.description);
    task.format = if dataview_seen && !emoji_seen { TaskFormat::Dataview } else { TaskFormat::Emoji };
    Some(task)
}

/// The value a date field writes: the date, or the invalid text kept for it.
fn date_text(task: &Task, field: DateField) -> Option<String> {
    match task.date(field) {
        Some(d) => Some(d.format("%Y-%m-%d").to_string()),
        None => task.invalid_date(field).map(String::from),
    }
}

/// The fields of a task as the line writes them, in the plugin's order.
fn field_texts(task: &Task) -> Vec<String> {
    let dataview = task.format == TaskFormat::Dataview;
    let field = |emoji: &str, key: &str, value: &str| {
        if dataview { format!("[{key}:: {value}]") } else { format!("{emoji} {value}") }
    };
    let mut out = Vec::new();
    if let Some(id) = &task.id {
        out.push(field("🆔", "id", id));
    }
    if !task.depends_on.is_empty() {
        out.push(field("⛔", "dependsOn", &task.depends_on.join(",")));
    }
    if let Some(emoji) = task.priority.emoji() {
        out.push(if dataview { format!("[priority:: {}]", task.priority.name()) } else { emoji.to_string() });
    }
    if let Some(rule) = &task.recurrence {
        out.push(field("🔁", "repeat", rule));
    }
    if let Some(action) = &task.on_completion {
        out.push(field("🏁", "onCompletion", action));
    }
    for date in [
        DateField::Created,
        DateField::Start,
        DateField::Scheduled,
        DateField::Due,
        DateField::Cancelled,
        DateField::Done,
    ] {
        if let Some(value) = date_text(task, date) {
            out.push(field(date.emoji(), date.dataview_key(), &value));
        }
    }
    out
}

/// Writes a task back as one line (no line break), in the format it was read in
/// ([`Task::format`]) and in the plugin's field order, which the docs' samples and the demo vault
/// show: description, 🆔 id, ⛔ depends on, priority, 🔁 recurrence, 🏁 on completion, ➕ created,
/// 🛫 start, ⏳ scheduled, 📅 due, ❌ cancelled, ✅ done, then the block link. Emoji fields are
/// one space apart, dataview fields two (`[due:: 2024-01-01]`), as the plugin writes them.
///
/// For a task [`parse_line`] returned, `parse_line(&render_line(&t)) == Some(t)`. A line that
/// was already in this form comes back byte for byte.
pub fn render_line(task: &Task) -> String {
    let mut out = format!("{}{} [{}]", task.indent, task.marker, task.status);
    if !task.description.is_empty() {
        out.push(' ');
        out.push_str(&task.description);
    }
    let sep = if task.format == TaskFormat::Dataview { "  " } else { " " };
    for field in field_texts(task) {
        out.push_str(sep);
        out.push_str(&field);
    }
    if let Some(block) = &task.block_link {
        out.push_str(" ^");
        out.push_str(block);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::testing::*;
    use crate::tasks::{next_occurrence, status_name, toggle};
    use std::collections::HashMap;

    fn round_trips(line: &str) {
        let t = task(line);
        assert_eq!(render_line(&t), line);
        assert_eq!(parse_line(&render_line(&t)), Some(t));
    }

    #[test]
    fn every_emoji_field_is_read() {
        let line = "- [x] #task all of them 🆔 abc_1 ⛔ d1,d-2 ⏫ 🔁 every day when done 🏁 delete ➕ 2024-01-01 \
                    🛫 2024-01-02 ⏳ 2024-01-03 📅 2024-01-04 ❌ 2024-01-05 ✅ 2024-01-06 ^blk-1";
        let t = task(line);
        assert_eq!(t.status, 'x');
        assert_eq!(t.status_type, StatusType::Done);
        assert_eq!(t.description, "#task all of them");
        assert_eq!(t.id.as_deref(), Some("abc_1"));
        assert_eq!(t.depends_on, ["d1", "d-2"]);
        assert_eq!(t.priority, Priority::High);
        assert_eq!(t.recurrence.as_deref(), Some("every day when done"));
        assert_eq!(t.on_completion.as_deref(), Some("delete"));
        assert_eq!(t.created, Some(d("2024-01-01")));
        assert_eq!(t.start, Some(d("2024-01-02")));
        assert_eq!(t.scheduled, Some(d("2024-01-03")));
        assert_eq!(t.due, Some(d("2024-01-04")));
        assert_eq!(t.cancelled, Some(d("2024-01-05")));
        assert_eq!(t.done, Some(d("2024-01-06")));
        assert_eq!(t.block_link.as_deref(), Some("blk-1"));
        assert_eq!(t.tags, ["task"]);
        assert_eq!((t.indent.as_str(), t.marker.as_str()), ("", "-"));
        assert_eq!(t.format, TaskFormat::Emoji);
        assert!(t.invalid_dates.is_empty());
        round_trips(line);
    }

    #[test]
    fn the_docs_samples_and_demo_field_order_come_back_byte_for_byte() {
        for line in [
            "- [ ] #task Has a created date ➕ 2023-04-13",
            "- [ ] #task Has a scheduled date ⏳ 2023-04-14",
            "- [ ] #task Has a start date 🛫 2023-04-15",
            "- [ ] #task Has a due date 📅 2023-04-16",
            "- [x] #task Has a done date ✅ 2023-04-17",
            "- [-] #task Has a cancelled date ❌ 2023-04-18",
            "- [ ] #task Lowest priority ⏬",
            "- [ ] #task Low priority 🔽",
            "- [ ] #task Normal priority",
            "- [ ] #task Medium priority 🔼",
            "- [ ] #task High priority ⏫",
            "- [ ] #task Highest priority 🔺",
            "- [ ] #task Is a recurring task 🔁 every day when done",
            "- [ ] #task Keep this task when done too 🏁 keep",
            "- [ ] #task Remove completed instance of this recurring task when done 🔁 every day 🏁 delete",
            "- [ ] #task do this first 🆔 dcf64c",
            "- [ ] #task do this after first and some other task ⛔ dcf64c,0h17ye",
            "- [/] #task Task with every field set 🆔 y3yryw ⛔ c5mw2c,2ypqea 🔺 🔁 every April and December on the 1st \
             and 24th ➕ 2024-04-27 🛫 2024-04-28 ⏳ 2024-04-29 📅 2024-04-30",
            "- [ ] take out the trash 🔁 every Sunday ➕ 2023-03-10 📅 2021-05-02",
            "- [x] take out the trash 🔁 every Sunday 📅 2021-04-25 ✅ 2023-03-10",
        ] {
            round_trips(line);
        }
    }

    #[test]
    fn priorities_statuses_and_markers() {
        for (line, p) in [
            ("- [ ] a 🔺", Priority::Highest),
            ("- [ ] a ⏫", Priority::High),
            ("- [ ] a 🔼", Priority::Medium),
            ("- [ ] a", Priority::None),
            ("- [ ] a 🔽", Priority::Low),
            ("- [ ] a ⏬", Priority::Lowest),
            ("- [ ] a ⏬\u{FE0F}", Priority::Lowest),
            ("- [ ] a ⏫\u{FE0F}", Priority::High),
        ] {
            assert_eq!(task(line).priority, p, "{line}");
        }
        for (symbol, ty, name) in [
            (' ', StatusType::Todo, "Todo"),
            ('x', StatusType::Done, "Done"),
            ('X', StatusType::Done, "Done"),
            ('/', StatusType::InProgress, "In Progress"),
            ('-', StatusType::Cancelled, "Cancelled"),
            ('?', StatusType::Todo, "Unknown"),
            ('>', StatusType::Todo, "Unknown"),
        ] {
            let t = task(&format!("- [{symbol}] a"));
            assert_eq!((t.status, t.status_type, status_name(t.status)), (symbol, ty, name));
        }
        for (line, indent, marker) in [
            ("* [ ] a", "", "*"),
            ("+ [ ] a", "", "+"),
            ("1. [ ] a", "", "1."),
            ("12) [ ] a", "", "12)"),
            ("    - [ ] a", "    ", "-"),
            ("\t- [ ] a", "\t", "-"),
            ("> - [ ] a", "> ", "-"),
            ("> > 3. [x] a", "> > ", "3."),
        ] {
            let t = task(line);
            assert_eq!((t.indent.as_str(), t.marker.as_str(), t.description.as_str()), (indent, marker, "a"));
            round_trips(line);
        }
        for line in ["", "a", "-", "- [", "- []", "- [ab] a", "-[ ] a", "text - [ ] a", "- a [ ] b", "#. [ ] a"] {
            assert_eq!(parse_line(line), None, "{line:?}");
        }
    }

    #[test]
    fn fields_are_read_from_the_end_and_tags_go_back_to_the_description() {
        // A field followed by plain text is part of the description.
        let t = task("- [ ] call 📅 2024-01-01 about the thing");
        assert_eq!((t.due, t.description.as_str()), (None, "call 📅 2024-01-01 about the thing"));
        // Tags mixed among the fields go to the end of the description (docs: Filters, Description).
        let t = task("- [ ] Do stuff  ⏫  #tag1 ✅ 2022-08-12 #tag2/sub-tag ");
        assert_eq!(t.description, "Do stuff #tag1 #tag2/sub-tag");
        assert_eq!((t.priority, t.done), (Priority::High, Some(d("2022-08-12"))));
        assert_eq!(t.tags, ["tag1", "tag2/sub-tag"]);
        assert_eq!(render_line(&t), "- [ ] Do stuff #tag1 #tag2/sub-tag ⏫ ✅ 2022-08-12");
        // Any order is read; rendering puts the fields in the plugin's order.
        let t = task("- [ ] x 📅 2025-06-18 🔺 ⏳ 2025-06-01");
        assert_eq!((t.due, t.scheduled, t.priority), (Some(d("2025-06-18")), Some(d("2025-06-01")), Priority::Highest));
        assert_eq!(render_line(&t), "- [ ] x 🔺 ⏳ 2025-06-01 📅 2025-06-18");
        // Alternative signifiers, no space, variation selectors.
        let t = task("- [ ] x 📆 2024-01-02 ⌛2024-01-01 🗓\u{FE0F} 2024-01-03");
        assert_eq!((t.due, t.scheduled), (Some(d("2024-01-03")), Some(d("2024-01-01"))));
        assert_eq!(t.description, "x 📆 2024-01-02");
        // A field given twice: the last one counts, the other stays in the description.
        round_trips("- [ ] x 📅 2024-01-01 📅 2024-02-02");
        let t = task("- [ ] x 📅 2024-01-01 📅 2024-02-02");
        assert_eq!((t.due, t.description.as_str()), (Some(d("2024-02-02")), "x 📅 2024-01-01"));
        // Tags: the plugin's characters, `#` alone is not a tag.
        assert_eq!(task("- [ ] a #x/y-z_1 #12.34 b#no # #ok!").tags, ["x/y-z_1", "12", "ok"]);
    }

    #[test]
    fn invalid_dates_are_kept_as_written() {
        let line = "- [ ] #task 2.1 starts valid 🛫 2022-02-26 ⏳ 2023-02-31 📅 2024-02-31";
        let t = task(line);
        assert_eq!(t.start, Some(d("2022-02-26")));
        assert_eq!((t.scheduled, t.due), (None, None));
        assert_eq!(t.invalid_date(DateField::Scheduled), Some("2023-02-31"));
        assert_eq!(t.invalid_date(DateField::Due), Some("2024-02-31"));
        assert_eq!(t.description, "#task 2.1 starts valid");
        round_trips(line);
        round_trips("- [ ] x ➕ 0000-00-00 ✅ 2024-13-01");
    }

    #[test]
    fn dataview_fields_are_read_and_written_back_as_dataview() {
        let line = "- [ ] #task Has one of every field except done  [priority:: high]  [repeat:: every day]  \
                    [start:: 2023-04-24]  [scheduled:: 2023-04-26]  [due:: 2023-04-27]";
        let t = task(line);
        assert_eq!(t.format, TaskFormat::Dataview);
        assert_eq!((t.priority, t.recurrence.as_deref()), (Priority::High, Some("every day")));
        assert_eq!(
            (t.start, t.scheduled, t.due),
            (Some(d("2023-04-24")), Some(d("2023-04-26")), Some(d("2023-04-27")))
        );
        round_trips(line);
        for line in [
            "- [x] #task Has a done date  [completion:: 2023-04-17]",
            "- [-] #task Has a cancelled date  [cancelled:: 2023-04-18]",
            "- [ ] #task Has a created date  [created:: 2023-04-13]",
            "- [ ] #task do this after first and some other task  [dependsOn:: dcf64c,0h17ye]",
            "- [ ] #task do this first  [id:: dcf64c]",
            "- [ ] #task Remove this task when done  [onCompletion:: delete]",
            "- [ ] #task Lowest priority  [priority:: lowest]",
        ] {
            round_trips(line);
        }
        // Parentheses and loose spacing are read; the plugin writes square brackets.
        let t = task("- [ ] B 6 x (  due::2021-08-22  )");
        assert_eq!((t.due, t.description.as_str()), (Some(d("2021-08-22")), "B 6 x"));
        assert_eq!(render_line(&t), "- [ ] B 6 x  [due:: 2021-08-22]");
        // Mixed formats are written in the emoji format.
        let t = task("- [ ] x [due:: 2021-08-22] ⏫");
        assert_eq!(t.format, TaskFormat::Emoji);
        assert_eq!(render_line(&t), "- [ ] x ⏫ 📅 2021-08-22");
    }

    #[test]
    fn odd_lines_never_panic_and_always_round_trip() {
        let today = d("2024-02-29");
        let lines = [
            "- [ ]",
            "- [ ] ",
            "- [ ]   ",
            "* [x]",
            "- [ ]x",
            "- [ ] 📅",
            "- [ ] 📅 ",
            "- [ ] 📅 2024",
            "- [ ] x 📅 2024-02-30",
            "- [ ] x 📅 9999-12-31 🔁 every day",
            "- [ ] x 📅 2024-02-29 🔁 every 10000 years",
            "- [ ] x 📅 0001-01-01 🔁 every 2 weeks",
            "- [ ] 🔁",
            "- [ ] 🔁 ",
            "- [ ] 🔁 every",
            "- [ ] x 🔁 every blue moon 📅 2024-01-01",
            "- [ ] ⛔",
            "- [ ] ⛔ ,",
            "- [ ] ⛔ a,,b",
            "- [ ] 🆔",
            "- [ ] 🏁",
            "- [ ] #",
            "- [ ] ##",
            "- [ ] [due:: ]",
            "- [ ] (due:: 2024-01-01]",
            "- [ ] [priority:: urgent]",
            "- [ ] x ^",
            "- [ ] ^abc",
            "- [ ] 🔺🔺⏫",
            "- [é] accents ü",
            "- [\u{200B}] zero width",
            "- [ ] x\r",
            "- [ ] x\n",
            "- [ ] 📅 2024-01-01",
            "- [ ] 📅 2024-01-01 📅 2024-01-02 ⏳ 2024-02-30 ⏳ 2024-02-31",
            "- [ ] x 🔁 every month on the 31st 📅 2024-02-29",
            "- [ ] x 🔁 every February on the 30th 📅 2024-02-29",
            "- [ ] x 🔁 every 12 months on the 31st 📅 2024-02-29",
            "- [-] x ❌ 2024-02-30 ✅ 2024-02-31",
            "- [ ] [[link|alias]] [text](url) **bold** ==hi==",
        ];
        for line in lines {
            let Some(t) = parse_line(line) else { panic!("{line:?} should be a task") };
            assert_eq!(parse_line(&render_line(&t)).as_ref(), Some(&t), "{line:?}");
            let toggled = toggle(&t, today);
            assert_eq!(parse_line(&render_line(&toggled.updated)).as_ref(), Some(&toggled.updated), "{line:?}");
            if let Some(next) = &toggled.next {
                assert_eq!(parse_line(&render_line(next)).as_ref(), Some(next), "{line:?}");
            }
            if let Some(rule) = &t.recurrence {
                let _ = next_occurrence(rule, &t, today);
            }
        }
        assert_eq!(task("- [ ]").description, "");
        assert_eq!(render_line(&task("- [ ] x\r")), "- [ ] x");
        assert_eq!(task("- [ ] x 📅 2024-02-30").invalid_date(DateField::Due), Some("2024-02-30"));
    }

    /// Lines whose rendering differs only by whitespace, field order or the dataview
    /// brackets/spacing the plugin normalises: why a parsed line may not come back byte for byte.
    fn why_different(original: &str, rendered: &str) -> Option<&'static str> {
        let squeeze = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
        if squeeze(original) == squeeze(rendered) {
            return Some("whitespace");
        }
        let mut a: Vec<&str> = original.split_whitespace().collect();
        let mut b: Vec<&str> = rendered.split_whitespace().collect();
        a.sort_unstable();
        b.sort_unstable();
        if a == b {
            return Some("field order");
        }
        let dataview = |s: &str| squeeze(s).replace('(', "[").replace(')', "]");
        if original.contains("::") && dataview(original) == dataview(rendered) {
            return Some("dataview brackets");
        }
        None
    }

    fn md_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                md_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }

    #[test]
    fn every_task_line_of_the_demo_vault_round_trips() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/obsidian-tasks-demo");
        let mut files = Vec::new();
        md_files(&root, &mut files);
        files.sort();
        let (mut parsed, mut identical) = (0, 0);
        let mut reasons: HashMap<&str, usize> = HashMap::new();
        let mut unexplained = Vec::new();
        for file in &files {
            let Ok(text) = std::fs::read_to_string(file) else { continue };
            for line in text.lines() {
                let Some(t) = parse_line(line) else { continue };
                parsed += 1;
                let rendered = render_line(&t);
                assert_eq!(parse_line(&rendered).as_ref(), Some(&t), "{line}");
                if rendered == line {
                    identical += 1;
                } else if let Some(why) = why_different(line, &rendered) {
                    *reasons.entry(why).or_default() += 1;
                } else {
                    unexplained.push(format!("{line}\n  => {rendered}"));
                }
            }
        }
        println!(
            "demo vault: {} files, {parsed} task lines, {identical} byte-identical, other: {reasons:?}",
            files.len()
        );
        assert!(parsed > 50, "only {parsed} task lines found under {}", root.display());
        assert!(unexplained.is_empty(), "lines in canonical order that changed:\n{}", unexplained.join("\n"));
    }
}
