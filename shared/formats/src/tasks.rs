//! The Tasks community plugin (obsidian-tasks): its task lines, a subset of its query language
//! and its recurrence rules, all with no I/O.
//!
//! - [`parse_line`] reads one list item with a checkbox (`- [ ] ...`) the way the plugin does:
//!   fields are read from the *end* of the line, in any order, until none is left; tags mixed
//!   in among them go back to the end of the description. Both the emoji format (`📅 2024-01-01`)
//!   and the dataview format (`[due:: 2024-01-01]`) are read.
//! - [`render_line`] writes a task back in the plugin's field order (see [`render_line`]), in the
//!   format it was read in, so `parse_line(&render_line(&t)) == Some(t)` for every parsed `t`.
//! - [`toggle`] and [`next_occurrence`] do what clicking a checkbox does, recurrence included.
//! - [`parse_query`] and [`run_query`] read and run the instructions of a ```` ```tasks ```` block:
//!   filters (with `AND`/`OR`/`NOT`/`XOR`), `sort by`, `group by` and `limit`.
//!
//! Statuses are the plugin's defaults (`[ ]` todo, `[x]` done, `[/]` in progress, `[-]`
//! cancelled); any other symbol is an unknown status of type TODO, as the plugin treats one it
//! has no setting for (`[X]` is read as done, as Obsidian itself checks it).

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use chrono::{Datelike, Days, Months, NaiveDate, Weekday};
use otc_errors::{ErrorCode, ToolError, echo};
use regex::{Regex, RegexBuilder};
use serde::Serialize;

// ---------------------------------------------------------------------------------------------
// The task model
// ---------------------------------------------------------------------------------------------

/// What a status symbol means to the plugin; it decides `done`/`not done`, toggling and
/// recurrence. Serialized as the plugin's names (`TODO`, `IN_PROGRESS`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StatusType {
    /// Not started (`[ ]`, and any symbol the default statuses do not know).
    Todo,
    /// Started (`[/]`).
    InProgress,
    /// Waiting on something else; no default status has it, queries accept it.
    OnHold,
    /// Done (`[x]`, `[X]`).
    Done,
    /// Cancelled (`[-]`).
    Cancelled,
    /// A checkbox that is not a task; no default status has it, queries accept it.
    NonTask,
}

impl StatusType {
    /// The type the plugin's default statuses give `symbol` (unknown symbols are TODO).
    pub fn of(symbol: char) -> Self {
        match symbol {
            'x' | 'X' => StatusType::Done,
            '/' => StatusType::InProgress,
            '-' => StatusType::Cancelled,
            _ => StatusType::Todo,
        }
    }

    /// The plugin's name for the type: `TODO`, `IN_PROGRESS`, `ON_HOLD`, `DONE`, `CANCELLED`,
    /// `NON_TASK`.
    pub fn as_str(self) -> &'static str {
        match self {
            StatusType::Todo => "TODO",
            StatusType::InProgress => "IN_PROGRESS",
            StatusType::OnHold => "ON_HOLD",
            StatusType::Done => "DONE",
            StatusType::Cancelled => "CANCELLED",
            StatusType::NonTask => "NON_TASK",
        }
    }

    /// Whether the `done` filter matches it (DONE, CANCELLED and NON_TASK); `not done` matches
    /// the others.
    pub fn is_done(self) -> bool {
        matches!(self, StatusType::Done | StatusType::Cancelled | StatusType::NonTask)
    }

    /// Position in `sort by status.type` / `group by status.type`.
    fn rank(self) -> i64 {
        match self {
            StatusType::InProgress => 0,
            StatusType::Todo => 1,
            StatusType::OnHold => 2,
            StatusType::Done => 3,
            StatusType::Cancelled => 4,
            StatusType::NonTask => 5,
        }
    }

    fn parse(text: &str) -> Option<Self> {
        Some(match text.to_ascii_uppercase().as_str() {
            "TODO" => StatusType::Todo,
            "IN_PROGRESS" => StatusType::InProgress,
            "ON_HOLD" => StatusType::OnHold,
            "DONE" => StatusType::Done,
            "CANCELLED" => StatusType::Cancelled,
            "NON_TASK" => StatusType::NonTask,
            _ => return None,
        })
    }
}

/// The name the plugin's default statuses give `symbol` (`status.name` in queries): `Todo`,
/// `Done`, `In Progress`, `Cancelled`, or `Unknown` for a symbol they do not list.
pub fn status_name(symbol: char) -> &'static str {
    match symbol {
        ' ' => "Todo",
        'x' | 'X' => "Done",
        '/' => "In Progress",
        '-' => "Cancelled",
        _ => "Unknown",
    }
}

/// A task's priority, highest first. `None` (no signifier) ranks between medium and low.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    /// 🔺
    Highest,
    /// ⏫
    High,
    /// 🔼
    Medium,
    /// No signifier.
    #[default]
    None,
    /// 🔽
    Low,
    /// ⏬
    Lowest,
}

impl Priority {
    /// The signifier the emoji format writes; `None` for no priority.
    pub fn emoji(self) -> Option<&'static str> {
        match self {
            Priority::Highest => Some("🔺"),
            Priority::High => Some("⏫"),
            Priority::Medium => Some("🔼"),
            Priority::None => None,
            Priority::Low => Some("🔽"),
            Priority::Lowest => Some("⏬"),
        }
    }

    /// The name queries and the dataview format use: `highest` ... `lowest`, `none`.
    pub fn name(self) -> &'static str {
        match self {
            Priority::Highest => "highest",
            Priority::High => "high",
            Priority::Medium => "medium",
            Priority::None => "none",
            Priority::Low => "low",
            Priority::Lowest => "lowest",
        }
    }

    /// 0 for highest to 5 for lowest (none is 3).
    fn rank(self) -> i64 {
        match self {
            Priority::Highest => 0,
            Priority::High => 1,
            Priority::Medium => 2,
            Priority::None => 3,
            Priority::Low => 4,
            Priority::Lowest => 5,
        }
    }

    /// The priority a name gives (`highest` ... `lowest`, `none`; any case).
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name.to_ascii_lowercase().as_str() {
            "highest" => Priority::Highest,
            "high" => Priority::High,
            "medium" => Priority::Medium,
            "none" => Priority::None,
            "low" => Priority::Low,
            "lowest" => Priority::Lowest,
            _ => return None,
        })
    }

    fn from_emoji(symbol: &str) -> Option<Self> {
        Some(match symbol {
            "🔺" => Priority::Highest,
            "⏫" => Priority::High,
            "🔼" => Priority::Medium,
            "🔽" => Priority::Low,
            "⏬" => Priority::Lowest,
            _ => return None,
        })
    }

    /// The priority's share of the urgency score (docs: Advanced/Urgency).
    fn urgency(self) -> f64 {
        match self {
            Priority::Highest => 9.0,
            Priority::High => 6.0,
            Priority::Medium => 3.9,
            Priority::None => 1.95,
            Priority::Low => 0.0,
            Priority::Lowest => -1.8,
        }
    }

    fn group_name(self) -> &'static str {
        match self {
            Priority::Highest => "Highest priority",
            Priority::High => "High priority",
            Priority::Medium => "Medium priority",
            Priority::None => "Normal priority",
            Priority::Low => "Low priority",
            Priority::Lowest => "Lowest priority",
        }
    }
}

/// The format a task's fields are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskFormat {
    /// The plugin's own signifiers: `📅 2024-01-01`, `⏫`, `🔁 every day`.
    #[default]
    Emoji,
    /// Dataview inline fields: `[due:: 2024-01-01]`, `[priority:: high]`, `[repeat:: every day]`,
    /// written two spaces apart.
    Dataview,
}

/// One of a task's six dates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DateField {
    /// ➕ `created`
    Created,
    /// 🛫 `start`
    Start,
    /// ⏳ `scheduled`
    Scheduled,
    /// 📅 `due`
    Due,
    /// ❌ `cancelled`
    Cancelled,
    /// ✅ `completion` (the done date)
    Done,
}

impl DateField {
    /// The signifier the emoji format writes.
    pub fn emoji(self) -> &'static str {
        match self {
            DateField::Created => "➕",
            DateField::Start => "🛫",
            DateField::Scheduled => "⏳",
            DateField::Due => "📅",
            DateField::Cancelled => "❌",
            DateField::Done => "✅",
        }
    }

    /// The key the dataview format writes.
    pub fn dataview_key(self) -> &'static str {
        match self {
            DateField::Created => "created",
            DateField::Start => "start",
            DateField::Scheduled => "scheduled",
            DateField::Due => "due",
            DateField::Cancelled => "cancelled",
            DateField::Done => "completion",
        }
    }

    /// The word queries use for it (`due`, `done`, `start`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DateField::Created => "created",
            DateField::Start => "start",
            DateField::Scheduled => "scheduled",
            DateField::Due => "due",
            DateField::Cancelled => "cancelled",
            DateField::Done => "done",
        }
    }
}

/// A date field whose value is not a real calendar date (`📅 2024-02-30`): the plugin reads it
/// as an invalid date; it is kept as written so that rendering the task loses nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InvalidDate {
    /// Which date it was written for.
    pub field: DateField,
    /// The text as written (`2024-02-30`).
    pub text: String,
}

/// One task line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Task {
    /// The character between `[` and `]`.
    pub status: char,
    /// What `status` means under the default statuses ([`StatusType::of`]).
    pub status_type: StatusType,
    /// The text without the fields, trimmed; tags that were mixed among the fields are appended
    /// at its end, as the plugin does. A field that could not be read (a second due date, say)
    /// stays in it.
    pub description: String,
    /// The priority signifier, if any.
    pub priority: Priority,
    /// 📅
    pub due: Option<NaiveDate>,
    /// ⏳
    pub scheduled: Option<NaiveDate>,
    /// 🛫
    pub start: Option<NaiveDate>,
    /// ➕
    pub created: Option<NaiveDate>,
    /// ✅
    pub done: Option<NaiveDate>,
    /// ❌
    pub cancelled: Option<NaiveDate>,
    /// The 🔁 rule as written, e.g. `every week on Monday` or `every day when done`.
    pub recurrence: Option<String>,
    /// The 🏁 action (`keep` or `delete`), as written.
    pub on_completion: Option<String>,
    /// 🆔
    pub id: Option<String>,
    /// ⛔, the ids it waits for.
    pub depends_on: Vec<String>,
    /// The `#tags` in the description, without the `#`, in order.
    pub tags: Vec<String>,
    /// The text before the list marker: whitespace, and `>` for a task in a quote or callout.
    pub indent: String,
    /// The list marker: `-`, `*`, `+`, `1.` or `1)`.
    pub marker: String,
    /// A trailing block id (`^abc123`), without the `^`; the plugin keeps it at the line's end.
    pub block_link: Option<String>,
    /// Date fields whose value is not a real date, kept as written.
    pub invalid_dates: Vec<InvalidDate>,
    /// The format the fields are written in: dataview when only dataview fields were found.
    pub format: TaskFormat,
}

impl Task {
    /// A todo task with this description and nothing else, marker `-`.
    pub fn new(description: &str) -> Self {
        Task {
            status: ' ',
            status_type: StatusType::Todo,
            description: description.trim().to_string(),
            priority: Priority::None,
            due: None,
            scheduled: None,
            start: None,
            created: None,
            done: None,
            cancelled: None,
            recurrence: None,
            on_completion: None,
            id: None,
            depends_on: Vec::new(),
            tags: find_tags(description),
            indent: String::new(),
            marker: "-".to_string(),
            block_link: None,
            invalid_dates: Vec::new(),
            format: TaskFormat::Emoji,
        }
    }

    /// The value of one of its dates.
    pub fn date(&self, field: DateField) -> Option<NaiveDate> {
        match field {
            DateField::Created => self.created,
            DateField::Start => self.start,
            DateField::Scheduled => self.scheduled,
            DateField::Due => self.due,
            DateField::Cancelled => self.cancelled,
            DateField::Done => self.done,
        }
    }

    fn date_mut(&mut self, field: DateField) -> &mut Option<NaiveDate> {
        match field {
            DateField::Created => &mut self.created,
            DateField::Start => &mut self.start,
            DateField::Scheduled => &mut self.scheduled,
            DateField::Due => &mut self.due,
            DateField::Cancelled => &mut self.cancelled,
            DateField::Done => &mut self.done,
        }
    }

    /// The text of an invalid date written for `field`, if there is one.
    pub fn invalid_date(&self, field: DateField) -> Option<&str> {
        self.invalid_dates.iter().find(|d| d.field == field).map(|d| d.text.as_str())
    }

    /// Whether the field holds a date, valid or not (what `has due date` tests).
    fn has_date(&self, field: DateField) -> bool {
        self.date(field).is_some() || self.invalid_date(field).is_some()
    }

    /// Whether `done` matches it.
    pub fn is_done(&self) -> bool {
        self.status_type.is_done()
    }

    /// The earliest of its start, scheduled and due dates (the `happens` date).
    pub fn happens(&self) -> Option<NaiveDate> {
        [self.start, self.scheduled, self.due].into_iter().flatten().min()
    }
}

// ---------------------------------------------------------------------------------------------
// Reading and writing task lines
// ---------------------------------------------------------------------------------------------

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

/// Compiles one of this module's fixed patterns (constants, all compiled by the tests; no
/// input reaches this).
fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a fixed pattern of the tasks module")
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
fn find_tags(text: &str) -> Vec<String> {
    TAG.captures_iter(text).filter_map(|c| c.get(1)).map(|m| m.as_str().to_string()).collect()
}

/// A `YYYY-MM-DD` date, if it is a real one.
fn parse_date(text: &str) -> Option<NaiveDate> {
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

// ---------------------------------------------------------------------------------------------
// Toggling and recurrence
// ---------------------------------------------------------------------------------------------

/// What clicking a task's checkbox produces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Toggled {
    /// The task with its new status and dates.
    pub updated: Task,
    /// The next occurrence, when a recurring task was completed. The plugin writes it on the
    /// line *above* the completed task by default (a setting puts it below); where it goes is
    /// left to the caller.
    pub next: Option<Task>,
    /// The task was completed and carries `🏁 delete`: the plugin removes the completed line
    /// (keeping `next`, if any); the caller decides.
    pub remove_completed: bool,
    /// Why a completed recurring task has no `next`: its rule is not understood, or its
    /// reference date is not a real date (the plugin then drops the rule silently).
    pub recurrence_error: Option<String>,
}

/// Clicks the checkbox, as the plugin does with its default statuses: a todo or in-progress task
/// (or one with an unknown symbol) becomes `[x]` with `✅ today`; a done, cancelled or non-task
/// one becomes `[ ]` with no done or cancelled date. Completing a recurring task also gives the
/// next occurrence ([`next_occurrence`]).
pub fn toggle(task: &Task, today: NaiveDate) -> Toggled {
    let mut updated = task.clone();
    updated.invalid_dates.retain(|d| !matches!(d.field, DateField::Done | DateField::Cancelled));
    updated.cancelled = None;
    if task.is_done() {
        updated.status = ' ';
        updated.status_type = StatusType::Todo;
        updated.done = None;
        return Toggled { updated, next: None, remove_completed: false, recurrence_error: None };
    }
    updated.status = 'x';
    updated.status_type = StatusType::Done;
    updated.done = Some(today);
    let (mut next, mut recurrence_error) = (None, None);
    if let Some(rule) = &task.recurrence {
        match next_occurrence(rule, task, today) {
            Ok(found) => next = found,
            Err(e) => recurrence_error = Some(e),
        }
    }
    let remove_completed = task.on_completion.as_deref().is_some_and(|a| a.eq_ignore_ascii_case("delete"));
    Toggled { updated, next, remove_completed, recurrence_error }
}

/// How often a rule repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Freq {
    Daily,
    Weekly,
    Monthly,
    Yearly,
}

/// A recurrence rule, the subset of rrule's text form the plugin's docs use.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    freq: Freq,
    interval: u32,
    /// Weekly: the days (empty: the reference date's weekday).
    weekdays: Vec<Weekday>,
    /// Monthly/yearly: days of the month; negative counts from the end (-1 the last).
    monthdays: Vec<i32>,
    /// Monthly/yearly: the nth weekday of the month; negative counts from the end.
    nth_weekdays: Vec<(i32, Weekday)>,
    /// Yearly: the months (empty: the reference date's month).
    months: Vec<u32>,
    when_done: bool,
}

/// The most periods a fixed-day rule looks ahead before giving up (rrule gives up too, on
/// rules such as `every February on the 30th`).
const MAX_PERIODS: i64 = 1000;
/// The largest `every N ...` accepted.
const MAX_INTERVAL: u32 = 10_000;

fn weekday_named(word: &str) -> Option<Weekday> {
    Some(match word {
        "monday" | "mon" => Weekday::Mon,
        "tuesday" | "tue" | "tues" => Weekday::Tue,
        "wednesday" | "wed" => Weekday::Wed,
        "thursday" | "thu" | "thur" | "thurs" => Weekday::Thu,
        "friday" | "fri" => Weekday::Fri,
        "saturday" | "sat" => Weekday::Sat,
        "sunday" | "sun" => Weekday::Sun,
        _ => return None,
    })
}

fn month_named(word: &str) -> Option<u32> {
    const NAMES: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    NAMES
        .iter()
        .position(|n| *n == word || (word.len() == 3 && n.starts_with(word)))
        .and_then(|i| u32::try_from(i + 1).ok())
}

/// `1st`, `2nd`, `23rd`, `4th` ... or `first` ... `fifth`.
fn ordinal(word: &str) -> Option<i32> {
    let words = ["first", "second", "third", "fourth", "fifth"];
    if let Some(i) = words.iter().position(|w| *w == word) {
        return i32::try_from(i + 1).ok();
    }
    let digits =
        word.strip_suffix("st").or(word.strip_suffix("nd")).or(word.strip_suffix("rd")).or(word.strip_suffix("th"))?;
    if digits.is_empty() || digits.len() > 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Tokens of a rule, read left to right.
struct Words<'a> {
    words: Vec<&'a str>,
    at: usize,
}

impl<'a> Words<'a> {
    fn peek(&self) -> Option<&'a str> {
        self.words.get(self.at).copied()
    }

    fn next_word(&mut self) -> Option<&'a str> {
        let word = self.peek()?;
        self.at += 1;
        Some(word)
    }

    fn eat(&mut self, word: &str) -> bool {
        if self.peek() == Some(word) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// Eats a list separator: `,`, `and`, or `, and`.
    fn separator(&mut self) -> bool {
        let comma = self.eat(",");
        self.eat("and") || comma
    }

    fn done(&self) -> bool {
        self.at >= self.words.len()
    }
}

fn weekday_list(words: &mut Words<'_>) -> Option<Vec<Weekday>> {
    let mut days = Vec::new();
    loop {
        let day = weekday_named(words.next_word()?)?;
        if !days.contains(&day) {
            days.push(day);
        }
        if !words.separator() {
            return Some(days);
        }
    }
}

fn month_list(words: &mut Words<'_>) -> Option<Vec<u32>> {
    let mut months = Vec::new();
    loop {
        let month = month_named(words.next_word()?)?;
        if !months.contains(&month) {
            months.push(month);
        }
        if !words.separator() {
            return Some(months);
        }
    }
}

/// `the 1st and 15th`, `the last`, `the 2nd last Friday`, `the 2nd Wednesday`.
fn month_day_items(words: &mut Words<'_>, rule: &mut Rule) -> Option<()> {
    loop {
        words.eat("the");
        let number = words.peek().and_then(ordinal);
        if number.is_some() {
            words.at += 1;
        }
        let last = words.eat("last");
        let n = match (number, last) {
            (Some(n), false) => n,
            (Some(n), true) => -n,
            (None, true) => -1,
            (None, false) => return None,
        };
        match words.peek().and_then(weekday_named) {
            Some(day) => {
                words.at += 1;
                if n == 0 || n.abs() > 5 {
                    return None;
                }
                rule.nth_weekdays.push((n, day));
            }
            None => {
                if n == 0 || n.abs() > 31 {
                    return None;
                }
                rule.monthdays.push(n);
            }
        }
        if !words.separator() {
            return Some(());
        }
    }
}

/// Reads a rule; `None` when it is not one this module understands.
fn parse_rule(text: &str) -> Option<Rule> {
    let lower = text.trim().to_lowercase().replace(',', " , ");
    let mut list: Vec<&str> = lower.split_whitespace().collect();
    let mut when_done = false;
    if list.len() >= 2 && list[list.len() - 2..] == ["when", "done"] {
        when_done = true;
        list.truncate(list.len() - 2);
    }
    let mut words = Words { words: list, at: 0 };
    if !words.eat("every") {
        return None;
    }
    let mut interval = 1;
    if let Some(n) = words.peek().and_then(|w| w.parse::<u32>().ok()) {
        if n == 0 || n > MAX_INTERVAL {
            return None;
        }
        interval = n;
        words.at += 1;
    }
    let mut rule = Rule {
        freq: Freq::Daily,
        interval,
        weekdays: Vec::new(),
        monthdays: Vec::new(),
        nth_weekdays: Vec::new(),
        months: Vec::new(),
        when_done,
    };
    let unit = words.next_word()?;
    match unit {
        "day" | "days" => {}
        "weekday" | "weekdays" if interval == 1 => {
            rule.freq = Freq::Weekly;
            rule.weekdays = vec![Weekday::Mon, Weekday::Tue, Weekday::Wed, Weekday::Thu, Weekday::Fri];
        }
        "week" | "weeks" => {
            rule.freq = Freq::Weekly;
            if words.eat("on") {
                rule.weekdays = weekday_list(&mut words)?;
            }
        }
        "month" | "months" => {
            rule.freq = Freq::Monthly;
            if words.eat("on") {
                month_day_items(&mut words, &mut rule)?;
            }
        }
        "year" | "years" => rule.freq = Freq::Yearly,
        word if interval == 1 && weekday_named(word).is_some() => {
            rule.freq = Freq::Weekly;
            words.at -= 1;
            rule.weekdays = weekday_list(&mut words)?;
        }
        word if month_named(word).is_some() => {
            rule.freq = Freq::Yearly;
            words.at -= 1;
            rule.months = month_list(&mut words)?;
            if words.eat("on") {
                month_day_items(&mut words, &mut rule)?;
            }
        }
        _ => return None,
    }
    words.done().then_some(rule)
}

fn days_in_month(year: i32, month: u32) -> u32 {
    let first = NaiveDate::from_ymd_opt(year, month, 1);
    let next = first.and_then(|d| d.checked_add_months(Months::new(1)));
    match (first, next) {
        (Some(a), Some(b)) => u32::try_from((b - a).num_days()).unwrap_or(31),
        _ => 31,
    }
}

/// The dates of one month that a monthly or yearly rule picks.
fn month_candidates(year: i32, month: u32, rule: &Rule, default_day: u32) -> Vec<NaiveDate> {
    let dim = days_in_month(year, month);
    let dim_i = i32::try_from(dim).unwrap_or(31);
    let mut days: Vec<i32> = Vec::new();
    for &d in &rule.monthdays {
        days.push(if d > 0 { d } else { dim_i + d + 1 });
    }
    for &(n, weekday) in &rule.nth_weekdays {
        let Some(first) = NaiveDate::from_ymd_opt(year, month, 1) else { continue };
        let Some(last) = NaiveDate::from_ymd_opt(year, month, dim) else { continue };
        let want = i32::try_from(weekday.num_days_from_monday()).unwrap_or(0);
        if n > 0 {
            let have = i32::try_from(first.weekday().num_days_from_monday()).unwrap_or(0);
            days.push(1 + (want - have).rem_euclid(7) + 7 * (n - 1));
        } else {
            let have = i32::try_from(last.weekday().num_days_from_monday()).unwrap_or(0);
            days.push(dim_i - (have - want).rem_euclid(7) - 7 * (-n - 1));
        }
    }
    if rule.monthdays.is_empty() && rule.nth_weekdays.is_empty() {
        days.push(i32::try_from(default_day).unwrap_or(1));
    }
    days.into_iter()
        .filter(|d| (1..=dim_i).contains(d))
        .filter_map(|d| NaiveDate::from_ymd_opt(year, month, u32::try_from(d).ok()?))
        .collect()
}

/// The first date the rule gives after `base` (rrule's `after`, with the plugin's correction
/// for `every N months`/`years`: a day the target month lacks moves back to its last day).
fn next_after(rule: &Rule, base: NaiveDate) -> Option<NaiveDate> {
    match rule.freq {
        Freq::Daily => base.checked_add_days(Days::new(u64::from(rule.interval))),
        Freq::Weekly => {
            let days = if rule.weekdays.is_empty() { vec![base.weekday()] } else { rule.weekdays.clone() };
            let into_week = u64::from(base.weekday().num_days_from_monday());
            let monday = base.checked_sub_days(Days::new(into_week))?;
            for offset in into_week + 1..7 {
                let d = monday.checked_add_days(Days::new(offset))?;
                if days.contains(&d.weekday()) {
                    return Some(d);
                }
            }
            let week = monday.checked_add_days(Days::new(7 * u64::from(rule.interval)))?;
            (0..7).filter_map(|o| week.checked_add_days(Days::new(o))).find(|d| days.contains(&d.weekday()))
        }
        Freq::Monthly if rule.monthdays.is_empty() && rule.nth_weekdays.is_empty() => {
            base.checked_add_months(Months::new(rule.interval))
        }
        Freq::Monthly => {
            let start = i64::from(base.year()) * 12 + i64::from(base.month0());
            for k in 0..MAX_PERIODS {
                let index = start + k * i64::from(rule.interval);
                let year = i32::try_from(index.div_euclid(12)).ok()?;
                let month = u32::try_from(index.rem_euclid(12)).ok()? + 1;
                if year > 9999 {
                    return None;
                }
                if let Some(d) = month_candidates(year, month, rule, base.day()).into_iter().filter(|d| *d > base).min()
                {
                    return Some(d);
                }
            }
            None
        }
        Freq::Yearly if rule.months.is_empty() && rule.monthdays.is_empty() && rule.nth_weekdays.is_empty() => {
            base.checked_add_months(Months::new(rule.interval.checked_mul(12)?))
        }
        Freq::Yearly => {
            let months = if rule.months.is_empty() { vec![base.month()] } else { rule.months.clone() };
            for k in 0..MAX_PERIODS {
                let year = i64::from(base.year()) + k * i64::from(rule.interval);
                let year = i32::try_from(year).ok()?;
                if year > 9999 {
                    return None;
                }
                let found = months
                    .iter()
                    .flat_map(|&m| month_candidates(year, m, rule, base.day()))
                    .filter(|d| *d > base)
                    .min();
                if found.is_some() {
                    return found;
                }
            }
            None
        }
    }
}

/// Whether `rule` is a recurrence rule this module can compute (see [`next_occurrence`]).
pub fn is_supported_rule(rule: &str) -> bool {
    parse_rule(rule).is_some()
}

/// The next occurrence of a recurring task, as the plugin creates it when the task is completed.
///
/// Rules understood (case-insensitive, each may end in `when done`): `every day`, `every N days`,
/// `every weekday`, `every week`, `every N weeks`, `every week on Monday[, Friday ...]`,
/// `every N weeks on Friday`, `every Sunday` (`every Monday and Friday`), `every month`,
/// `every N months`, `every month on the 1st[ and 15th]`, `every month on the last`,
/// `every month on the 2nd last`, `every month on the last Friday`,
/// `every N months on the 2nd Wednesday`, `every year`, `every N years`,
/// `every January on the 15th`, `every February on the last`,
/// `every April and December on the 1st and 24th`. Anything else is refused with an error that
/// names the rule.
///
/// The reference date is the due date, else the scheduled date, else the start date (the docs'
/// "Priority of Dates"). The next reference date is the first date the rule gives after it —
/// after `today` for a `when done` rule, or when the task has none of those dates. `every N
/// months`/`years` keep the day of the month, moving back to the month's last day when the
/// month is shorter (Jan 31 + 1 month = Feb 28); a rule that names the day (`on the 31st`)
/// skips months without it instead, as rrule does. The start, scheduled and due dates keep their
/// distance from the reference date.
///
/// The new task is todo (`[ ]`) with no done or cancelled date, and, as the plugin's docs
/// describe, without its id, depends-on and block link; its created date is `today` when the
/// original had one (the plugin adds one when its created-date setting is on). `Ok(None)` when
/// the rule gives no further date. An error when the rule is not understood or the reference
/// date is not a real date (the plugin then drops the rule and creates nothing).
pub fn next_occurrence(rule: &str, task: &Task, today: NaiveDate) -> Result<Option<Task>, String> {
    let parsed = parse_rule(rule).ok_or_else(|| format!("the recurrence rule \"{}\" is not supported", echo(rule)))?;
    let mut reference = None;
    for field in [DateField::Due, DateField::Scheduled, DateField::Start] {
        if let Some(d) = task.date(field) {
            reference = Some(d);
            break;
        }
        if let Some(text) = task.invalid_date(field) {
            return Err(format!(
                "the task's {} date {} is not a real date, so the rule \"{}\" has no reference date",
                field.name(),
                echo(text),
                echo(rule)
            ));
        }
    }
    let base = match reference {
        Some(d) if !parsed.when_done => d,
        _ => today,
    };
    let in_range = |d: &NaiveDate| (0..=9999).contains(&d.year());
    let Some(next_reference) = next_after(&parsed, base).filter(in_range) else { return Ok(None) };
    let mut next = task.clone();
    next.status = ' ';
    next.status_type = StatusType::Todo;
    next.done = None;
    next.cancelled = None;
    next.created = task.created.map(|_| today);
    next.id = None;
    next.depends_on.clear();
    next.block_link = None;
    next.invalid_dates.clear();
    if let Some(reference) = reference {
        for field in [DateField::Start, DateField::Scheduled, DateField::Due] {
            if let Some(d) = task.date(field) {
                // Dates must stay writable as YYYY-MM-DD.
                let shifted = next_reference.checked_add_signed(d - reference).filter(in_range);
                if shifted.is_none() {
                    return Ok(None);
                }
                *next.date_mut(field) = shifted;
            }
        }
    }
    Ok(Some(next))
}

// ---------------------------------------------------------------------------------------------
// Queries: the model
// ---------------------------------------------------------------------------------------------

/// How a date filter compares (`due before ...`, `done on or after ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateOp {
    /// `on`/`in` (or nothing): within the range (a single date is a one-day range).
    In,
    /// `before`: before the range's start.
    Before,
    /// `after`: after the range's end.
    After,
    /// `on or before`/`in or before`: up to the range's end.
    OnOrBefore,
    /// `on or after`/`in or after`: from the range's start.
    OnOrAfter,
}

/// `last`, `this` or `next`, in a relative date range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relative {
    /// The previous period.
    Last,
    /// The period containing today.
    This,
    /// The following period.
    Next,
}

/// A calendar period of a relative date range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    /// Monday to Sunday (ISO weeks, as the plugin uses).
    Week,
    /// A calendar month.
    Month,
    /// A calendar quarter.
    Quarter,
    /// A calendar year.
    Year,
}

/// The date (or range) of a date filter, resolved against `today` when the query runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateSpec {
    /// Fixed dates, inclusive: `2024-01-01`, `2024-01-01 2024-01-31`, `2024-W03`, `2024-05`,
    /// `2024-Q2`, `2024`.
    Range(NaiveDate, NaiveDate),
    /// `today` (0), `tomorrow` (1), `yesterday` (-1).
    DaysFromToday(i64),
    /// `last week`, `this month`, `next quarter`, ...
    Relative(Relative, Period),
}

/// A text property that `includes`/`does not include`/`regex matches` filters search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextField {
    /// The description (fields removed).
    Description,
    /// The file's path, `.md` included.
    Path,
    /// The file's folder, ending in `/` (`/` for the vault's root).
    Folder,
    /// The first folder of the path, ending in `/` (`/` for the vault's root).
    Root,
    /// The file's name, `.md` included.
    Filename,
    /// The closest heading above the task.
    Heading,
    /// The status name ([`status_name`]).
    StatusName,
    /// The 🔁 rule as written (the plugin searches its own standardised text of the rule,
    /// `every week on Sunday` for `every Sunday`).
    Recurrence,
    /// The 🆔 id.
    Id,
    /// Each tag, with its `#`.
    Tag,
}

/// How a text filter matches.
#[derive(Debug, Clone)]
pub enum TextMatch {
    /// `includes`: a case-insensitive substring (kept lowercased).
    Includes(String),
    /// `does not include`.
    Excludes(String),
    /// `regex matches /.../flags`.
    Matches(Regex),
    /// `regex does not match /.../flags`.
    NotMatches(Regex),
}

/// The comparison of a `priority is ...` filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PriorityCmp {
    /// `priority is high`.
    Is,
    /// `priority is not high`.
    Not,
    /// `priority is above medium`: strictly higher.
    Above,
    /// `priority is below medium`: strictly lower.
    Below,
}

/// One filter: an instruction line, or a boolean combination of them.
#[derive(Debug, Clone)]
pub enum Filter {
    /// `done` (true) / `not done` (false).
    Done(bool),
    /// `status.type is X` (true) / `status.type is not X` (false).
    StatusType(StatusType, bool),
    /// `due before today`, `happens this week`, ... (`None` field: `happens`).
    Date {
        /// The date searched; `None` for `happens` (start, scheduled or due).
        field: Option<DateField>,
        /// The comparison.
        op: DateOp,
        /// The date or range.
        when: DateSpec,
    },
    /// `has due date` (true) / `no due date` (false); `None` field: `happens`.
    HasDate(Option<DateField>, bool),
    /// `due date is invalid`.
    DateInvalid(DateField),
    /// `is recurring` (true) / `is not recurring` (false): whether the task has a 🔁 rule (the
    /// plugin also requires the rule to be valid; here any rule counts, so that a rule valid for
    /// the plugin but outside [`next_occurrence`]'s subset is still found).
    Recurring(bool),
    /// `priority is [above|below|not] level`.
    Priority(PriorityCmp, Priority),
    /// `description includes ...`, `path regex matches /.../`, `tags include #x`, ...
    Text(TextField, TextMatch),
    /// `has tags` / `no tags`.
    HasTags(bool),
    /// `has id` / `no id`.
    HasId(bool),
    /// `has depends on` / `no depends on`.
    HasDependsOn(bool),
    /// `is blocked` / `is not blocked`.
    Blocked(bool),
    /// `is blocking` / `is not blocking`.
    Blocking(bool),
    /// `NOT (...)`.
    Not(Box<Filter>),
    /// `(...) AND (...)`.
    And(Box<Filter>, Box<Filter>),
    /// `(...) OR (...)`.
    Or(Box<Filter>, Box<Filter>),
    /// `(...) XOR (...)`.
    Xor(Box<Filter>, Box<Filter>),
}

/// A property to sort by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// Not done before done.
    Status,
    /// IN_PROGRESS, TODO, ON_HOLD, DONE, CANCELLED, NON_TASK.
    StatusType,
    /// The status name, alphabetically.
    StatusName,
    /// Highest urgency first ([`urgency`]).
    Urgency,
    /// Invalid dates first, then earliest to latest, then no date.
    Date(DateField),
    /// The earliest of start, scheduled and due.
    Happens,
    /// Highest first.
    Priority,
    /// The description as displayed (link targets, emphasis marks left out), case-insensitive.
    Description,
    /// The file path.
    Path,
    /// The file name.
    Filename,
    /// The heading; tasks with none first.
    Heading,
    /// Recurring before not.
    Recurring,
    /// The nth tag (1-based); tasks without one last.
    Tag(usize),
    /// The id.
    Id,
    /// A shuffle that is stable for a day (hash of the description and the date).
    Random,
}

/// One `sort by` instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sort {
    /// What it sorts by.
    pub key: SortKey,
    /// `reverse` was given.
    pub reverse: bool,
}

/// A property to group by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupField {
    /// `Done` (done, cancelled, non-task) before `Todo`.
    Status,
    /// The status type, in `sort by status.type` order.
    StatusType,
    /// The status name.
    StatusName,
    /// `YYYY-MM-DD Weekday`, `Invalid due date` first, `No due date` last.
    Date(DateField),
    /// The happens date.
    Happens,
    /// `Highest priority` ... `Lowest priority` (`Normal priority` for none).
    Priority,
    /// The urgency score to two decimals, highest first.
    Urgency,
    /// `Recurring` / `Not Recurring`.
    Recurring,
    /// The rule, or `None`.
    Recurrence,
    /// Each `#tag` (a task goes in each of its tags' groups), or `(No tags)`.
    Tags,
    /// The path without `.md`.
    Path,
    /// The first folder (`/` at the root).
    Root,
    /// The folder, ending in `/`.
    Folder,
    /// The file name without `.md`.
    Filename,
    /// The heading, or `(No heading)`.
    Heading,
    /// The id, or `No id`.
    Id,
}

/// One `group by` instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupBy {
    /// What it groups by.
    pub field: GroupField,
    /// `reverse` was given: the group headings in the opposite order.
    pub reverse: bool,
}

/// A parsed ```` ```tasks ```` block.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// The filter lines; a task must match all of them.
    pub filters: Vec<Filter>,
    /// The `sort by` lines, first the most significant; the plugin's default sort follows them.
    pub sorts: Vec<Sort>,
    /// The `group by` lines, first the outermost.
    pub groups: Vec<GroupBy>,
    /// `limit N`: the most tasks shown, after sorting.
    pub limit: Option<usize>,
    /// `limit groups N`: the most tasks shown in each group.
    pub group_limit: Option<usize>,
    /// `exclude sub-items`: only tasks that are not indented.
    pub exclude_sub_items: bool,
    /// Layout and other instructions accepted and not acted on (`hide ...`, `show ...`,
    /// `short mode`, `explain`, `ignore global query`, ...), as written.
    pub ignored: Vec<String>,
}

/// A task as a query sees it: the task and where it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskRow {
    /// The task.
    pub task: Task,
    /// The vault-relative path of its note, `.md` included.
    pub path: String,
    /// The closest heading above it, if any.
    pub heading: Option<String>,
    /// Its line in the note.
    pub line: usize,
}

/// One group of results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Group {
    /// The headings joined with ` > ` (empty when the query has no `group by`).
    pub name: String,
    /// One heading per `group by` line.
    pub headings: Vec<String>,
    /// Its tasks, sorted.
    pub rows: Vec<TaskRow>,
}

/// What a query found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QueryResult {
    /// The groups in display order; one group with an empty name when there is no `group by`.
    pub groups: Vec<Group>,
    /// How many tasks matched the filters, before any limit.
    pub total: usize,
}

/// The sort the plugin appends to every query (docs: Sorting, "Default sort order").
const DEFAULT_SORT: [Sort; 5] = [
    Sort { key: SortKey::StatusType, reverse: false },
    Sort { key: SortKey::Urgency, reverse: false },
    Sort { key: SortKey::Date(DateField::Due), reverse: false },
    Sort { key: SortKey::Priority, reverse: false },
    Sort { key: SortKey::Path, reverse: false },
];

/// The plugin's urgency score (docs: Advanced/Urgency): due date (2.4 to 12, 8.8 for today),
/// priority (-1.8 to 9), scheduled today or earlier (+5), starting after today (-3).
pub fn urgency(task: &Task, today: NaiveDate) -> f64 {
    let mut score = task.priority.urgency();
    if let Some(due) = task.due {
        let overdue = (today - due).num_days();
        let factor = if overdue >= 7 {
            1.0
        } else if overdue >= -14 {
            (overdue + 14) as f64 * 0.8 / 21.0 + 0.2
        } else {
            0.2
        };
        score += factor * 12.0;
    }
    if task.scheduled.is_some_and(|d| d <= today) {
        score += 5.0;
    }
    if task.start.is_some_and(|d| d > today) {
        score -= 3.0;
    }
    score
}

// ---------------------------------------------------------------------------------------------
// Queries: reading
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Queries: running
// ---------------------------------------------------------------------------------------------

/// What filters need beyond the row itself.
struct Context {
    today: NaiveDate,
    /// Ids of tasks that are not done.
    open_ids: HashSet<String>,
    /// Ids that some task that is not done depends on.
    open_dependencies: HashSet<String>,
}

/// The inclusive date range a spec stands for on `today`.
fn resolve(spec: DateSpec, today: NaiveDate) -> Option<(NaiveDate, NaiveDate)> {
    match spec {
        DateSpec::Range(a, b) => Some((a, b)),
        DateSpec::DaysFromToday(n) => {
            let d = today.checked_add_signed(chrono::TimeDelta::try_days(n)?)?;
            Some((d, d))
        }
        DateSpec::Relative(relative, period) => {
            let step: i32 = match relative {
                Relative::Last => -1,
                Relative::This => 0,
                Relative::Next => 1,
            };
            let shift = |d: NaiveDate, months: i32| -> Option<NaiveDate> {
                let m = Months::new(months.unsigned_abs());
                if months < 0 { d.checked_sub_months(m) } else { d.checked_add_months(m) }
            };
            match period {
                Period::Week => {
                    let monday =
                        today.checked_sub_days(Days::new(u64::from(today.weekday().num_days_from_monday())))?;
                    let start = monday.checked_add_signed(chrono::TimeDelta::try_days(7 * i64::from(step))?)?;
                    Some((start, start.checked_add_days(Days::new(6))?))
                }
                Period::Month | Period::Quarter | Period::Year => {
                    let (first, months) = match period {
                        Period::Month => (NaiveDate::from_ymd_opt(today.year(), today.month(), 1)?, 1),
                        Period::Quarter => (NaiveDate::from_ymd_opt(today.year(), today.month0() / 3 * 3 + 1, 1)?, 3),
                        _ => (NaiveDate::from_ymd_opt(today.year(), 1, 1)?, 12),
                    };
                    let start = shift(first, step * months)?;
                    Some((start, shift(start, months)?.pred_opt()?))
                }
            }
        }
    }
}

fn date_matches(d: NaiveDate, op: DateOp, (start, end): (NaiveDate, NaiveDate)) -> bool {
    match op {
        DateOp::In => start <= d && d <= end,
        DateOp::Before => d < start,
        DateOp::After => d > end,
        DateOp::OnOrBefore => d <= end,
        DateOp::OnOrAfter => d >= start,
    }
}

/// The folder of a vault path, ending in `/` (`/` at the root).
fn folder_of(path: &str) -> &str {
    path.rfind('/').map_or("/", |i| &path[..=i])
}

/// The first folder of a vault path, ending in `/` (`/` at the root).
fn root_of(path: &str) -> &str {
    path.find('/').map_or("/", |i| &path[..=i])
}

fn filename_of(path: &str) -> &str {
    path.rfind('/').map_or(path, |i| &path[i + 1..])
}

fn text_matches(value: &str, matcher: &TextMatch) -> bool {
    match matcher {
        TextMatch::Includes(needle) => value.to_lowercase().contains(needle.as_str()),
        TextMatch::Excludes(needle) => !value.to_lowercase().contains(needle.as_str()),
        TextMatch::Matches(re) => re.is_match(value),
        TextMatch::NotMatches(re) => !re.is_match(value),
    }
}

impl Filter {
    fn matches(&self, row: &TaskRow, ctx: &Context) -> bool {
        let task = &row.task;
        match self {
            Filter::Done(done) => task.is_done() == *done,
            Filter::StatusType(ty, is) => (task.status_type == *ty) == *is,
            Filter::Date { field, op, when } => {
                let Some(range) = resolve(*when, ctx.today) else { return false };
                match field {
                    Some(field) => match task.date(*field) {
                        Some(d) => date_matches(d, *op, range),
                        // `starts ...` also finds tasks with no start date (docs: Filters).
                        None => *field == DateField::Start && !task.has_date(DateField::Start),
                    },
                    None => [task.start, task.scheduled, task.due]
                        .into_iter()
                        .flatten()
                        .any(|d| date_matches(d, *op, range)),
                }
            }
            Filter::HasDate(Some(field), has) => task.has_date(*field) == *has,
            Filter::HasDate(None, has) => {
                [DateField::Start, DateField::Scheduled, DateField::Due].into_iter().any(|f| task.has_date(f)) == *has
            }
            Filter::DateInvalid(field) => task.invalid_date(*field).is_some(),
            Filter::Recurring(recurring) => task.recurrence.is_some() == *recurring,
            Filter::Priority(cmp, level) => match cmp {
                PriorityCmp::Is => task.priority == *level,
                PriorityCmp::Not => task.priority != *level,
                PriorityCmp::Above => task.priority.rank() < level.rank(),
                PriorityCmp::Below => task.priority.rank() > level.rank(),
            },
            Filter::Text(TextField::Tag, matcher) => {
                let any = |test: &dyn Fn(&str) -> bool| task.tags.iter().any(|t| test(&format!("#{t}")));
                match matcher {
                    TextMatch::Includes(n) => any(&|t| t.to_lowercase().contains(n.as_str())),
                    TextMatch::Excludes(n) => !any(&|t| t.to_lowercase().contains(n.as_str())),
                    TextMatch::Matches(re) => any(&|t| re.is_match(t)),
                    TextMatch::NotMatches(re) => !any(&|t| re.is_match(t)),
                }
            }
            Filter::Text(TextField::Heading, matcher) => match &row.heading {
                Some(heading) => text_matches(heading, matcher),
                // A task with no heading matches only the negative forms.
                None => matches!(matcher, TextMatch::Excludes(_) | TextMatch::NotMatches(_)),
            },
            Filter::Text(field, matcher) => {
                let value = match field {
                    TextField::Description => task.description.as_str(),
                    TextField::Path => row.path.as_str(),
                    TextField::Folder => folder_of(&row.path),
                    TextField::Root => root_of(&row.path),
                    TextField::Filename => filename_of(&row.path),
                    TextField::StatusName => status_name(task.status),
                    TextField::Recurrence => task.recurrence.as_deref().unwrap_or(""),
                    TextField::Id => task.id.as_deref().unwrap_or(""),
                    TextField::Heading | TextField::Tag => "",
                };
                text_matches(value, matcher)
            }
            Filter::HasTags(has) => task.tags.is_empty() != *has,
            Filter::HasId(has) => task.id.is_some() == *has,
            Filter::HasDependsOn(has) => task.depends_on.is_empty() != *has,
            Filter::Blocked(blocked) => {
                let is = !task.is_done() && task.depends_on.iter().any(|d| ctx.open_ids.contains(d));
                is == *blocked
            }
            Filter::Blocking(blocking) => {
                let is = !task.is_done() && task.id.as_ref().is_some_and(|id| ctx.open_dependencies.contains(id));
                is == *blocking
            }
            Filter::Not(inner) => !inner.matches(row, ctx),
            Filter::And(a, b) => a.matches(row, ctx) && b.matches(row, ctx),
            Filter::Or(a, b) => a.matches(row, ctx) || b.matches(row, ctx),
            Filter::Xor(a, b) => a.matches(row, ctx) != b.matches(row, ctx),
        }
    }
}

/// Whether a task is a top-level list item (not indented; `>` of a quote or callout aside).
fn is_top_level(indent: &str) -> bool {
    match indent.rfind('>') {
        Some(i) => indent[i + 1..].len() <= 1 && indent[i + 1..].chars().all(|c| c == ' '),
        None => indent.is_empty(),
    }
}

/// Case-insensitive, then exact.
fn compare_text(a: &str, b: &str) -> Ordering {
    a.to_lowercase().cmp(&b.to_lowercase()).then_with(|| a.cmp(b))
}

static WIKILINK: LazyLock<Regex> = LazyLock::new(|| regex(r"\[\[(?:[^\]|]*\|)?([^\]]*)\]\]"));
static MD_LINK: LazyLock<Regex> = LazyLock::new(|| regex(r"\[([^\]]*)\]\([^)]*\)"));

/// The description as it displays: link targets and emphasis marks left out.
fn display_text(description: &str) -> String {
    let text = WIKILINK.replace_all(description, "$1");
    let text = MD_LINK.replace_all(&text, "$1");
    text.chars().filter(|c| !matches!(c, '*' | '=' | '~')).collect::<String>().trim().to_string()
}

/// Invalid dates first, then valid ones in order, then none.
fn date_sort_key(task: &Task, field: DateField) -> (u8, Option<NaiveDate>) {
    match task.date(field) {
        Some(d) => (1, Some(d)),
        None if task.invalid_date(field).is_some() => (0, None),
        None => (2, None),
    }
}

/// FNV-1a over the description and the day, for `sort by random`.
fn daily_hash(description: &str, today: NaiveDate) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in description.bytes().chain(today.to_string().into_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

fn compare_rows(a: &TaskRow, b: &TaskRow, key: SortKey, today: NaiveDate) -> Ordering {
    let (x, y) = (&a.task, &b.task);
    match key {
        SortKey::Status => x.is_done().cmp(&y.is_done()),
        SortKey::StatusType => x.status_type.rank().cmp(&y.status_type.rank()),
        SortKey::StatusName => status_name(x.status).cmp(status_name(y.status)),
        SortKey::Urgency => urgency(y, today).total_cmp(&urgency(x, today)),
        SortKey::Date(field) => date_sort_key(x, field).cmp(&date_sort_key(y, field)),
        SortKey::Happens => {
            let key = |t: &Task| t.happens().map_or((1, None), |d| (0, Some(d)));
            key(x).cmp(&key(y))
        }
        SortKey::Priority => x.priority.rank().cmp(&y.priority.rank()),
        SortKey::Description => compare_text(&display_text(&x.description), &display_text(&y.description)),
        SortKey::Path => compare_text(&a.path, &b.path),
        SortKey::Filename => compare_text(filename_of(&a.path), filename_of(&b.path)),
        SortKey::Heading => match (&a.heading, &b.heading) {
            (Some(p), Some(q)) => compare_text(p, q),
            (p, q) => p.is_some().cmp(&q.is_some()),
        },
        SortKey::Recurring => y.recurrence.is_some().cmp(&x.recurrence.is_some()),
        SortKey::Tag(n) => match (x.tags.get(n.saturating_sub(1)), y.tags.get(n.saturating_sub(1))) {
            (Some(p), Some(q)) => compare_text(p, q),
            (p, q) => q.is_some().cmp(&p.is_some()),
        },
        SortKey::Id => compare_text(x.id.as_deref().unwrap_or(""), y.id.as_deref().unwrap_or("")),
        SortKey::Random => daily_hash(&x.description, today).cmp(&daily_hash(&y.description, today)),
    }
}

/// One heading of a group: its order (rank, then name) and its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct GroupKey {
    rank: i64,
    name: String,
}

impl GroupKey {
    fn new(rank: i64, name: impl Into<String>) -> Self {
        GroupKey { rank, name: name.into() }
    }
}

fn date_group(date: Option<NaiveDate>, invalid: bool, what: &str) -> GroupKey {
    match date {
        Some(d) => GroupKey::new(1, d.format("%Y-%m-%d %A").to_string()),
        None if invalid => GroupKey::new(0, format!("Invalid {what} date")),
        None => GroupKey::new(2, format!("No {what} date")),
    }
}

fn group_keys(row: &TaskRow, field: GroupField, today: NaiveDate) -> Vec<GroupKey> {
    let task = &row.task;
    let key = match field {
        GroupField::Status => {
            if task.is_done() {
                GroupKey::new(0, "Done")
            } else {
                GroupKey::new(1, "Todo")
            }
        }
        GroupField::StatusType => GroupKey::new(task.status_type.rank(), task.status_type.as_str()),
        GroupField::StatusName => GroupKey::new(0, status_name(task.status)),
        GroupField::Date(date) => date_group(task.date(date), task.invalid_date(date).is_some(), date.name()),
        GroupField::Happens => date_group(task.happens(), false, "happens"),
        GroupField::Priority => GroupKey::new(task.priority.rank(), task.priority.group_name()),
        GroupField::Urgency => {
            let score = urgency(task, today);
            GroupKey::new(-(score * 100.0).round() as i64, format!("{score:.2}"))
        }
        GroupField::Recurring => {
            if task.recurrence.is_some() {
                GroupKey::new(0, "Recurring")
            } else {
                GroupKey::new(1, "Not Recurring")
            }
        }
        GroupField::Recurrence => match &task.recurrence {
            Some(rule) => GroupKey::new(0, rule.clone()),
            None => GroupKey::new(1, "None"),
        },
        GroupField::Tags => {
            if task.tags.is_empty() {
                return vec![GroupKey::new(1, "(No tags)")];
            }
            let mut keys: Vec<GroupKey> = Vec::new();
            for tag in &task.tags {
                let key = GroupKey::new(0, format!("#{tag}"));
                if !keys.contains(&key) {
                    keys.push(key);
                }
            }
            return keys;
        }
        GroupField::Path => GroupKey::new(0, row.path.strip_suffix(".md").unwrap_or(&row.path)),
        GroupField::Root => GroupKey::new(0, root_of(&row.path)),
        GroupField::Folder => GroupKey::new(0, folder_of(&row.path)),
        GroupField::Filename => {
            let name = filename_of(&row.path);
            GroupKey::new(0, name.strip_suffix(".md").unwrap_or(name))
        }
        GroupField::Heading => GroupKey::new(0, row.heading.clone().unwrap_or_else(|| "(No heading)".to_string())),
        GroupField::Id => match &task.id {
            Some(id) => GroupKey::new(0, id.clone()),
            None => GroupKey::new(1, "No id"),
        },
    };
    vec![key]
}

/// Runs a query over the tasks given (all the tasks in scope: `is blocked`/`is blocking` look
/// for the other end of a dependency among them).
///
/// Keeps the rows every filter matches (and, with `exclude sub-items`, only top-level ones),
/// sorts them by the query's `sort by` lines followed by the plugin's default sort (status type,
/// urgency, due date, priority, path — docs: Sorting; equal rows keep the order given), applies
/// `limit`, then groups them: one group with an empty name when there is no `group by`, else one
/// per combination of headings (a task with several tags is in each of their groups), ordered
/// level by level as the docs' group orders say (`reverse` flips a level), each holding at most
/// `limit groups` rows. `total` counts the matching rows before any limit.
pub fn run_query(query: &Query, rows: Vec<TaskRow>, today: NaiveDate) -> QueryResult {
    let mut ctx = Context { today, open_ids: HashSet::new(), open_dependencies: HashSet::new() };
    for row in rows.iter().filter(|r| !r.task.is_done()) {
        ctx.open_ids.extend(row.task.id.iter().cloned());
        ctx.open_dependencies.extend(row.task.depends_on.iter().cloned());
    }
    let mut found: Vec<TaskRow> = rows
        .into_iter()
        .filter(|r| !query.exclude_sub_items || is_top_level(&r.task.indent))
        .filter(|r| query.filters.iter().all(|f| f.matches(r, &ctx)))
        .collect();
    let total = found.len();
    found.sort_by(|a, b| {
        query
            .sorts
            .iter()
            .chain(DEFAULT_SORT.iter())
            .map(|s| {
                let order = compare_rows(a, b, s.key, today);
                if s.reverse { order.reverse() } else { order }
            })
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    });
    if let Some(limit) = query.limit {
        found.truncate(limit);
    }
    if query.groups.is_empty() {
        return QueryResult { groups: vec![Group { name: String::new(), headings: Vec::new(), rows: found }], total };
    }
    let mut buckets: Vec<(Vec<GroupKey>, Vec<TaskRow>)> = Vec::new();
    let mut index: HashMap<Vec<GroupKey>, usize> = HashMap::new();
    for row in found {
        let mut combos: Vec<Vec<GroupKey>> = vec![Vec::new()];
        for group in &query.groups {
            let keys = group_keys(&row, group.field, today);
            let mut next = Vec::with_capacity(combos.len() * keys.len());
            for combo in &combos {
                for key in &keys {
                    let mut longer = combo.clone();
                    longer.push(key.clone());
                    next.push(longer);
                }
            }
            combos = next;
        }
        for combo in combos {
            let at = *index.entry(combo.clone()).or_insert_with(|| {
                buckets.push((combo, Vec::new()));
                buckets.len() - 1
            });
            buckets[at].1.push(row.clone());
        }
    }
    buckets.sort_by(|(a, _), (b, _)| {
        a.iter()
            .zip(b)
            .zip(&query.groups)
            .map(|((p, q), group)| {
                let order = p.rank.cmp(&q.rank).then_with(|| p.name.cmp(&q.name));
                if group.reverse { order.reverse() } else { order }
            })
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    });
    let groups = buckets
        .into_iter()
        .map(|(keys, mut rows)| {
            if let Some(limit) = query.group_limit {
                rows.truncate(limit);
            }
            let headings: Vec<String> = keys.into_iter().map(|k| k.name).collect();
            Group { name: headings.join(" > "), headings, rows }
        })
        .collect();
    QueryResult { groups, total }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> NaiveDate {
        parse_date(text).unwrap()
    }

    fn task(line: &str) -> Task {
        parse_line(line).unwrap_or_else(|| panic!("not a task: {line}"))
    }

    fn round_trips(line: &str) {
        let t = task(line);
        assert_eq!(render_line(&t), line);
        assert_eq!(parse_line(&render_line(&t)), Some(t));
    }

    // ---- parsing and rendering --------------------------------------------------------------

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

    // ---- toggling and recurrence ------------------------------------------------------------

    #[test]
    fn toggling_completes_and_reopens() {
        let today = d("2024-03-01");
        let done = toggle(&task("- [ ] buy milk #shop 📅 2024-03-02"), today);
        assert_eq!(render_line(&done.updated), "- [x] buy milk #shop 📅 2024-03-02 ✅ 2024-03-01");
        assert_eq!((done.next, done.remove_completed, done.recurrence_error), (None, false, None));
        let reopened = toggle(&done.updated, d("2024-04-01"));
        assert_eq!(render_line(&reopened.updated), "- [ ] buy milk #shop 📅 2024-03-02");
        assert_eq!(render_line(&toggle(&task("- [/] started"), today).updated), "- [x] started ✅ 2024-03-01");
        assert_eq!(render_line(&toggle(&task("- [?] odd"), today).updated), "- [x] odd ✅ 2024-03-01");
        assert_eq!(render_line(&toggle(&task("- [-] dropped ❌ 2024-01-01"), today).updated), "- [ ] dropped");
        assert_eq!(render_line(&toggle(&task("- [X] upper ✅ 2024-01-01"), today).updated), "- [ ] upper");
        let deleting = toggle(&task("- [ ] once 🏁 delete"), today);
        assert!(deleting.remove_completed);
        assert!(deleting.next.is_none());
    }

    #[test]
    fn completing_a_recurring_task_gives_the_next_one() {
        // docs: Recurring Tasks, Basic Example.
        let t = toggle(&task("- [ ] take out the trash 🔁 every Sunday 📅 2021-04-25"), d("2021-04-24"));
        assert_eq!(render_line(&t.updated), "- [x] take out the trash 🔁 every Sunday 📅 2021-04-25 ✅ 2021-04-24");
        assert_eq!(render_line(&t.next.unwrap()), "- [ ] take out the trash 🔁 every Sunday 📅 2021-05-02");
        // docs: based on the original date vs on the completion date.
        let t = toggle(&task("- [ ] sweep the floors 🔁 every week ⏳ 2021-02-06"), d("2022-02-13"));
        assert_eq!(render_line(&t.next.unwrap()), "- [ ] sweep the floors 🔁 every week ⏳ 2021-02-13");
        let t = toggle(&task("- [ ] sweep the floors 🔁 every week when done ⏳ 2021-02-06"), d("2022-02-13"));
        assert_eq!(render_line(&t.next.unwrap()), "- [ ] sweep the floors 🔁 every week when done ⏳ 2022-02-20");
        // docs: other dates keep their distance to the reference date.
        let t = toggle(&task("-   [ ] Mow the lawn 🔁 every 2 weeks ⏳ 2021-10-28 📅 2021-10-30"), d("2021-10-30"));
        assert_eq!(render_line(&t.next.unwrap()), "- [ ] Mow the lawn 🔁 every 2 weeks ⏳ 2021-11-11 📅 2021-11-13");
        // docs: On Completion — the completed instance goes, the next one stays.
        let t = toggle(
            &task("- [ ] Delete my completed instance 📅 2021-05-20 🔁 every day when done 🏁 delete"),
            d("2021-05-20"),
        );
        assert!(t.remove_completed);
        assert_eq!(
            render_line(&t.next.unwrap()),
            "- [ ] Delete my completed instance 🔁 every day when done 🏁 delete 📅 2021-05-21"
        );
        // The next occurrence loses id, depends-on and block link; a created date becomes today.
        let t = toggle(&task("- [ ] step 🆔 s1 ⛔ s0 🔁 every day ➕ 2024-01-01 📅 2024-02-12 ^b1"), d("2024-02-13"));
        assert_eq!(render_line(&t.next.unwrap()), "- [ ] step 🔁 every day ➕ 2024-02-13 📅 2024-02-13");
        // An unknown rule: completed, no next, the reason given.
        let t = toggle(&task("- [ ] x 🔁 every blue moon 📅 2024-01-01"), d("2024-01-01"));
        assert_eq!(t.updated.status, 'x');
        assert!(t.next.is_none());
        assert!(t.recurrence_error.unwrap().contains("every blue moon"));
        // Completing a cancelled recurring task never happens: toggling it reopens it.
        assert!(toggle(&task("- [-] x 🔁 every day 📅 2024-01-01"), d("2024-01-01")).next.is_none());
    }

    fn next_due(rule: &str, due: &str) -> String {
        let t = task(&format!("- [ ] x 🔁 {rule} 📅 {due}"));
        let next = next_occurrence(rule, &t, d("2000-01-01")).unwrap().unwrap();
        next.due.unwrap().to_string()
    }

    #[test]
    fn each_supported_rule() {
        for (rule, from, expected) in [
            ("every day", "2024-01-31", "2024-02-01"),
            ("every 3 days", "2024-01-30", "2024-02-02"),
            ("every weekday", "2024-01-05", "2024-01-08"),
            ("every weekday", "2024-01-08", "2024-01-09"),
            ("every week", "2024-01-03", "2024-01-10"),
            ("every 2 weeks", "2021-10-30", "2021-11-13"),
            ("every week on Monday", "2024-01-03", "2024-01-08"),
            ("every week on Monday", "2024-02-19", "2024-02-26"),
            ("every week on Sunday", "2021-04-25", "2021-05-02"),
            ("every week on Tuesday, Friday", "2024-01-02", "2024-01-05"),
            ("every week on Tuesday, Friday", "2024-01-05", "2024-01-09"),
            ("every week on tuesday and friday", "2024-01-05", "2024-01-09"),
            ("every 3 weeks on Friday", "2024-01-03", "2024-01-05"),
            ("every 3 weeks on Friday", "2024-01-05", "2024-01-26"),
            ("every Sunday", "2021-04-25", "2021-05-02"),
            ("every Monday, Friday", "2024-01-01", "2024-01-05"),
            ("every month", "2021-10-31", "2021-11-30"),
            ("every month", "2021-11-30", "2021-12-30"),
            ("every month", "2024-01-31", "2024-02-29"),
            ("every month", "2023-01-31", "2023-02-28"),
            ("every 3 months", "2022-01-31", "2022-04-30"),
            ("every 2 months", "2024-12-15", "2025-02-15"),
            ("every month on the 1st", "2024-01-15", "2024-02-01"),
            ("every month on the 1st and 15th", "2024-01-01", "2024-01-15"),
            ("every month on the 1st and 15th", "2024-01-15", "2024-02-01"),
            ("every month on the last", "2022-01-31", "2022-02-28"),
            ("every month on the last", "2022-02-28", "2022-03-31"),
            ("every month on the 31st", "2022-01-31", "2022-03-31"),
            ("every month on the 25th", "2022-03-25", "2022-04-25"),
            ("every month on the 2nd last", "2024-01-30", "2024-02-28"),
            ("every month on the last Friday", "2024-01-26", "2024-02-23"),
            ("every month on the 2nd last Friday", "2024-01-19", "2024-02-16"),
            ("every month on the first Monday", "2024-01-01", "2024-02-05"),
            ("every 6 months on the 2nd Wednesday", "2024-01-10", "2024-07-10"),
            ("every year", "2023-05-10", "2024-05-10"),
            ("every year", "2024-02-29", "2025-02-28"),
            ("every 2 years", "2023-05-10", "2025-05-10"),
            ("every January on the 15th", "2024-03-01", "2025-01-15"),
            ("every January on the 15th", "2024-01-10", "2024-01-15"),
            ("every February on the last", "2024-02-29", "2025-02-28"),
            ("every April and December on the 1st and 24th", "2024-04-30", "2024-12-01"),
            ("every April and December on the 1st and 24th", "2024-12-01", "2024-12-24"),
            ("every April and December on the 1st and 24th", "2024-12-24", "2025-04-01"),
            ("every June", "2024-06-10", "2025-06-10"),
            ("Every Week On MONDAY", "2024-01-03", "2024-01-08"),
        ] {
            assert_eq!(next_due(rule, from), expected, "{rule} from {from}");
        }
    }

    #[test]
    fn when_done_counts_from_today_and_other_dates_keep_their_distance() {
        let today = d("2024-03-13"); // a Wednesday
        let t = task("- [ ] x 🔁 every 10 days when done 🛫 2024-01-01 ⏳ 2024-01-02 📅 2024-01-05");
        let next = next_occurrence(t.recurrence.as_deref().unwrap(), &t, today).unwrap().unwrap();
        assert_eq!(
            (next.start, next.scheduled, next.due),
            (Some(d("2024-03-19")), Some(d("2024-03-20")), Some(d("2024-03-23")))
        );
        let t = task("- [ ] x 🔁 every week on Monday when done ⏳ 2024-01-01");
        let next = next_occurrence("every week on Monday when done", &t, today).unwrap().unwrap();
        assert_eq!(next.scheduled, Some(d("2024-03-18")));
        let t = task("- [ ] x 🔁 every month when done ⏳ 2024-01-31");
        assert_eq!(
            next_occurrence("every month when done", &t, d("2024-01-31")).unwrap().unwrap().scheduled,
            Some(d("2024-02-29"))
        );
        // Reference date: due, else scheduled, else start.
        let t = task("- [ ] x 🔁 every day 🛫 2024-01-01 ⏳ 2024-01-10");
        let next = next_occurrence("every day", &t, today).unwrap().unwrap();
        assert_eq!((next.start, next.scheduled), (Some(d("2024-01-02")), Some(d("2024-01-11"))));
        let t = task("- [ ] x 🔁 every day 🛫 2024-01-01");
        assert_eq!(next_occurrence("every day", &t, today).unwrap().unwrap().start, Some(d("2024-01-02")));
        // No dates at all: a next task with no dates (docs: Recurring tasks must have at least one date).
        let t = task("- [x] Do stuff 🔁 every day ✅ 2023-02-11");
        let next = next_occurrence("every day", &t, today).unwrap().unwrap();
        assert_eq!(render_line(&next), "- [ ] Do stuff 🔁 every day");
    }

    #[test]
    fn unknown_rules_and_impossible_dates_are_refused() {
        let t = task("- [ ] x 📅 2024-01-01");
        for rule in [
            "every blue moon",
            "each day",
            "every",
            "every 0 days",
            "every 2 weekdays",
            "every day on Monday",
            "every month on Friday",
            "every month on the 32nd",
            "every year on the 1st",
            "every week on Funday",
            "every day until 2025-01-01",
            "every 3 times",
        ] {
            let err = next_occurrence(rule, &t, d("2024-01-01")).unwrap_err();
            assert!(err.contains(rule), "{err}");
            assert!(!is_supported_rule(rule), "{rule}");
        }
        // docs: "Recurrence rule lost if highest priority date is invalid".
        let t = task("- [ ] Do stuff 🔁 every year 🛫 2024-02-27 ⏳ 2024-02-28 📅 2024-02-30");
        let err = next_occurrence("every year", &t, d("2024-01-01")).unwrap_err();
        assert!(err.contains("due date 2024-02-30"), "{err}");
        // A rule with no further date.
        let t = task("- [ ] x 📅 2024-02-29");
        assert_eq!(next_occurrence("every February on the 30th", &t, d("2024-01-01")), Ok(None));
    }

    // ---- queries ----------------------------------------------------------------------------

    fn row(line: &str, path: &str, heading: Option<&str>) -> TaskRow {
        TaskRow { task: task(line), path: path.to_string(), heading: heading.map(String::from), line: 0 }
    }

    const TODAY: &str = "2024-01-15"; // a Monday

    fn sample() -> Vec<TaskRow> {
        vec![
            row("- [ ] a overdue ⏫ 📅 2024-01-10 #work", "Work/Projects/a.md", Some("Plan")),
            row("- [ ] b due today 📅 2024-01-15", "Work/b.md", None),
            row("- [x] c done 📅 2024-01-12 ✅ 2024-01-14", "Home/c.md", Some("Chores")),
            row("- [/] d in progress 🔼 #home/garden", "Home/d.md", Some("Garden")),
            row("- [-] e cancelled ❌ 2024-01-13", "e.md", None),
            row("- [ ] f later 🔽 🛫 2024-01-20 ⏳ 2024-02-01", "Work/f.md", None),
            row("- [ ] g recurring 🔁 every week 📅 2024-01-16", "Work/g.md", None),
            row("    - [ ] h sub item 🆔 h1", "Work/g.md", None),
            row("- [ ] i blocked ⛔ h1 #location/home", "Home/i.md", Some("Blocked")),
        ]
    }

    fn letters(rows: &[TaskRow]) -> String {
        rows.iter().map(|r| r.task.description.chars().next().unwrap_or('?')).collect()
    }

    /// The letters of the tasks a query finds, in result order.
    fn run(query: &str) -> String {
        let q = parse_query(query).unwrap_or_else(|e| panic!("{query}: {e}"));
        let result = run_query(&q, sample(), d(TODAY));
        result.groups.iter().map(|g| letters(&g.rows)).collect()
    }

    /// The same, as a sorted set.
    fn found(query: &str) -> String {
        let mut chars: Vec<char> = run(query).chars().collect();
        chars.sort_unstable();
        chars.into_iter().collect()
    }

    fn groups(query: &str) -> Vec<(String, String)> {
        let q = parse_query(query).unwrap();
        let result = run_query(&q, sample(), d(TODAY));
        result.groups.iter().map(|g| (g.name.clone(), letters(&g.rows))).collect()
    }

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

    #[test]
    fn status_date_and_property_filters() {
        assert_eq!(found("not done"), "abdfghi");
        assert_eq!(found("done"), "ce");
        assert_eq!(found("due before today"), "ac");
        assert_eq!(found("due today"), "b");
        assert_eq!(found("due on today"), "b");
        assert_eq!(found("due on or before 2024-01-12"), "ac");
        assert_eq!(found("due after today"), "g");
        assert_eq!(found("due on or after tomorrow"), "g");
        assert_eq!(found("due this week"), "bg");
        assert_eq!(found("due last week"), "ac");
        assert_eq!(found("due before this week"), "ac");
        assert_eq!(found("due after last week"), "bg");
        assert_eq!(found("due 2024-01-10 2024-01-12"), "ac");
        assert_eq!(found("due in 2024-W02"), "ac");
        assert_eq!(found("due 2024-01"), "abcg");
        assert_eq!(found("due in or after 2024-Q1"), "abcg");
        assert_eq!(found("due before 2024"), "");
        assert_eq!(found("done yesterday"), "c");
        assert_eq!(found("cancelled before 2024-01-14"), "e");
        // `starts` also finds tasks with no start date.
        assert_eq!(found("starts after 2024-01-20"), "abcdeghi");
        assert_eq!(found("starts before 2024-01-21"), "abcdefghi");
        assert_eq!(found("(starts before 2024-01-21) AND (has start date)"), "f");
        assert_eq!(found("happens before 2024-01-11"), "a");
        assert_eq!(found("happens on 2024-01-20"), "f");
        assert_eq!(found("has due date"), "abcg");
        assert_eq!(found("no due date"), "defhi");
        assert_eq!(found("has happens date"), "abcfg");
        assert_eq!(found("no happens date"), "dehi");
        assert_eq!(found("has done date"), "c");
        assert_eq!(found("is recurring"), "g");
        assert_eq!(found("is not recurring"), "abcdefhi");
        assert_eq!(found("priority is high"), "a");
        assert_eq!(found("priority is above none"), "ad");
        assert_eq!(found("priority is below none"), "f");
        assert_eq!(found("priority is not none"), "adf");
        assert_eq!(found("priority is none"), "bceghi");
        assert_eq!(found("status.type is IN_PROGRESS"), "d");
        assert_eq!(found("status.type is not todo"), "cde");
        assert_eq!(found("status.type is cancelled"), "e");
        assert_eq!(found("status.name includes PROGRESS"), "d");
        assert_eq!(found("has id"), "h");
        assert_eq!(found("has depends on"), "i");
        assert_eq!(found("is blocked"), "i");
        assert_eq!(found("is blocking"), "h");
        assert_eq!(found("is not blocked"), "abcdefgh");
        assert_eq!(found("exclude sub-items"), "abcdefgi");
    }

    #[test]
    fn text_filters() {
        assert_eq!(found("description includes LATER"), "f");
        assert_eq!(found("description does not include ue"), "cdefghi");
        assert_eq!(found("description regex matches /^[ab] /"), "ab");
        assert_eq!(found("description regex matches /^A /"), "");
        assert_eq!(found("description regex matches /^A /i"), "a");
        assert_eq!(found("description regex does not match /ue/"), "cdefghi");
        assert_eq!(found("path includes work/"), "abfgh");
        assert_eq!(found("path regex matches /^Work\\/[bf]/"), "bf");
        assert_eq!(found("folder includes projects"), "a");
        assert_eq!(found("root includes home"), "cdi");
        assert_eq!(found("filename includes g.md"), "gh");
        assert_eq!(found("heading includes garden"), "d");
        assert_eq!(found("heading does not include garden"), "abcefghi");
        assert_eq!(found("heading regex does not match /Plan/"), "bcdefghi");
        assert_eq!(found("recurrence includes WEEK"), "g");
        assert_eq!(found("id includes h"), "h");
        // Tags: `#` optional; given, it must be there (docs: Filters, Tags).
        assert_eq!(found("tags include #home"), "d");
        assert_eq!(found("tags include home"), "di");
        assert_eq!(found("tag includes #HOME"), "d");
        assert_eq!(found("tags do not include #work"), "bcdefghi");
        assert_eq!(found("tags regex matches /garden$/"), "d");
        assert_eq!(found("tag regex does not match /home/"), "abcefgh");
        assert_eq!(found("has tags"), "adi");
        assert_eq!(found("no tags"), "bcefgh");
    }

    #[test]
    fn boolean_combinations() {
        assert_eq!(found("(due before today) AND (not done)"), "a");
        assert_eq!(found("(is recurring) OR (priority is high)"), "ag");
        assert_eq!(found("NOT (has due date)"), "defhi");
        assert_eq!(found("(has tags) XOR (not done)"), "bfgh");
        assert_eq!(found("(has tags) AND NOT (tags include #work)"), "di");
        assert_eq!(found("(done) OR NOT (has due date)"), "cdefhi");
        assert_eq!(found("[description includes later] OR [done]"), "cef");
        assert_eq!(found("{description includes later} OR {done}"), "cef");
        assert_eq!(found("\"not done\" AND \"is recurring\""), "g");
        assert_eq!(found("[description includes (x)] OR [description includes later)]"), "");
        assert_eq!(found("(path includes a)AND(description includes overdue)"), "a");
        // NOT binds first, then XOR, then AND, then OR (docs: Execution Priority).
        assert_eq!(found("(done) OR (has tags) AND (priority is high)"), "ace");
        assert_eq!(found("( (done) OR (has tags) ) AND (priority is high)"), "a");
        assert_eq!(found("NOT (done) AND NOT (has tags)"), "bfgh");
        assert_eq!(found("(done) XOR (has due date) AND (has tags)"), "a");
        // Line continuations.
        assert_eq!(found("NOT ( \\\n  (done) OR \\\n  (has tags) \\\n)"), "bfgh");
        // Lines are ANDed.
        assert_eq!(found("not done\n(path includes Home) OR (priority is high)"), "adi");
    }

    #[test]
    fn sorting() {
        // The default: status type, urgency, due, priority, path.
        assert_eq!(run(""), "dabgihfce");
        assert_eq!(run("sort by priority"), "adbgihcef");
        assert_eq!(run("sort by priority reverse"), "fbgihceda");
        assert_eq!(run("sort by description"), "abcdefghi");
        assert_eq!(run("sort by description reverse"), "ihgfedcba");
        assert_eq!(run("sort by due"), "acbgdihfe");
        assert_eq!(run("sort by status"), "dabgihfce");
        assert_eq!(run("sort by path"), "ecdibfgha");
        assert_eq!(run("sort by heading"), "bghfeicda");
        assert_eq!(run("sort by urgency"), "acbgdihef");
        assert_eq!(run("sort by tag"), "diabghfce");
        assert_eq!(run("sort by recurring"), "gdabihfce");
        assert_eq!(run("not done\nsort by start reverse"), "dabgihf");
        assert_eq!(run("sort by random").len(), 9);
    }

    #[test]
    fn limits_and_totals() {
        let q = parse_query("limit 3").unwrap();
        let result = run_query(&q, sample(), d(TODAY));
        assert_eq!((result.total, letters(&result.groups[0].rows)), (9, "dab".to_string()));
        assert_eq!(result.groups.len(), 1);
        assert_eq!(result.groups[0].name, "");
        assert_eq!(run("not done\nlimit to 2 tasks"), "da");
        let q = parse_query("not done\ngroup by status.type\nlimit groups 1").unwrap();
        let result = run_query(&q, sample(), d(TODAY));
        assert_eq!(result.total, 7);
        assert_eq!(
            groups("not done\ngroup by status.type\nlimit groups 1"),
            [("IN_PROGRESS".to_string(), "d".to_string()), ("TODO".to_string(), "a".to_string())]
        );
        // `limit` applies before grouping.
        assert_eq!(groups("limit 2\ngroup by status"), [("Todo".to_string(), "da".to_string())]);
        let empty = run_query(&parse_query("due 1999").unwrap(), sample(), d(TODAY));
        assert_eq!((empty.total, empty.groups.len(), empty.groups[0].rows.len()), (0, 1, 0));
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn grouping() {
        assert_eq!(
            groups("group by priority"),
            pairs(&[
                ("High priority", "a"),
                ("Medium priority", "d"),
                ("Normal priority", "bgihce"),
                ("Low priority", "f")
            ])
        );
        assert_eq!(
            groups("group by priority reverse"),
            pairs(&[
                ("Low priority", "f"),
                ("Normal priority", "bgihce"),
                ("Medium priority", "d"),
                ("High priority", "a")
            ])
        );
        assert_eq!(
            groups("group by tags"),
            pairs(&[("#home/garden", "d"), ("#location/home", "i"), ("#work", "a"), ("(No tags)", "bghfce")])
        );
        assert_eq!(groups("group by status"), pairs(&[("Done", "ce"), ("Todo", "dabgihf")]));
        assert_eq!(
            groups("group by status.type"),
            pairs(&[("IN_PROGRESS", "d"), ("TODO", "abgihf"), ("DONE", "c"), ("CANCELLED", "e")])
        );
        assert_eq!(
            groups("group by folder"),
            pairs(&[("/", "e"), ("Home/", "dic"), ("Work/", "bghf"), ("Work/Projects/", "a")])
        );
        assert_eq!(groups("group by root"), pairs(&[("/", "e"), ("Home/", "dic"), ("Work/", "abghf")]));
        assert_eq!(
            groups("group by filename"),
            pairs(&[("a", "a"), ("b", "b"), ("c", "c"), ("d", "d"), ("e", "e"), ("f", "f"), ("g", "gh"), ("i", "i")])
        );
        assert_eq!(
            groups("group by due"),
            pairs(&[
                ("2024-01-10 Wednesday", "a"),
                ("2024-01-12 Friday", "c"),
                ("2024-01-15 Monday", "b"),
                ("2024-01-16 Tuesday", "g"),
                ("No due date", "dihfe"),
            ])
        );
        assert_eq!(
            groups("group by heading"),
            pairs(&[("(No heading)", "bghfe"), ("Blocked", "i"), ("Chores", "c"), ("Garden", "d"), ("Plan", "a")])
        );
        assert_eq!(groups("is recurring\ngroup by recurrence"), pairs(&[("every week", "g")]));
        assert_eq!(groups("group by recurring"), pairs(&[("Recurring", "g"), ("Not Recurring", "dabihfce")]));
        assert_eq!(groups("has id\ngroup by id"), pairs(&[("h1", "h")]));
        // Nested groups: one heading per level, joined.
        assert_eq!(
            groups("group by root\ngroup by status reverse"),
            pairs(&[("/ > Done", "e"), ("Home/ > Todo", "di"), ("Home/ > Done", "c"), ("Work/ > Todo", "abghf")])
        );
        let q = parse_query("group by root\ngroup by status").unwrap();
        let result = run_query(&q, sample(), d(TODAY));
        assert_eq!(result.groups[0].headings, ["/", "Done"]);
    }

    #[test]
    fn invalid_dates_in_queries() {
        let rows = vec![
            row("- [ ] v valid 📅 2024-01-01", "a.md", None),
            row("- [ ] w invalid 📅 2024-02-30", "a.md", None),
            row("- [ ] x none", "a.md", None),
        ];
        let today = d(TODAY);
        let q = parse_query("due date is invalid").unwrap();
        assert_eq!(letters(&run_query(&q, rows.clone(), today).groups[0].rows), "w");
        let q = parse_query("has due date\nsort by due").unwrap();
        assert_eq!(letters(&run_query(&q, rows.clone(), today).groups[0].rows), "wv");
        let q = parse_query("group by due").unwrap();
        let names: Vec<String> = run_query(&q, rows, today).groups.into_iter().map(|g| g.name).collect();
        assert_eq!(names, ["Invalid due date", "2024-01-01 Monday", "No due date"]);
    }

    #[test]
    fn urgency_follows_the_docs_table() {
        let today = d("2024-01-15");
        let score = |line: &str| (urgency(&task(line), today) * 1000.0).round() / 1000.0;
        assert_eq!(score("- [ ] a 🔼 📅 2024-01-15"), 12.7);
        assert_eq!(score("- [ ] a ⏫ ⏳ 2024-01-14 🛫 2024-01-14"), 11.0);
        assert_eq!(score("- [ ] a ⏫ ⏳ 2024-01-16 🛫 2024-01-16"), 3.0);
        assert_eq!(score("- [ ] a 📅 2024-01-01"), 12.0 + 1.95);
        assert_eq!(score("- [ ] a 🔽 📅 2024-02-15"), 2.4);
        assert_eq!(score("- [ ] a ⏬ 📅 2024-01-16"), 6.543);
    }

    #[test]
    fn serializes_with_the_plugins_names() {
        let value = serde_json::to_value(task("- [/] a [[x]] ⏫")).unwrap();
        assert_eq!(value["status_type"], "IN_PROGRESS");
        assert_eq!(value["priority"], "high");
        assert_eq!(value["format"], "emoji");
    }
}
