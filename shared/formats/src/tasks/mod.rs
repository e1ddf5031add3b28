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

mod line;
mod query;
mod query_parse;
mod query_run;
mod recurrence;
#[cfg(test)]
mod testing;

use chrono::NaiveDate;
use regex::Regex;
use serde::Serialize;

use self::line::find_tags;
pub use self::line::{parse_line, render_line};
pub use self::query::{
    DateOp, DateSpec, Filter, Group, GroupBy, GroupField, Period, PriorityCmp, Query, QueryResult, Relative, Sort,
    SortKey, TaskRow, TextField, TextMatch, urgency,
};
pub use self::query_parse::parse_query;
pub use self::query_run::run_query;
pub use self::recurrence::{Toggled, is_supported_rule, next_occurrence, toggle};

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

/// Compiles one of this module's fixed patterns (constants, all compiled by the tests; no
/// input reaches this).
fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a fixed pattern of the tasks module")
}

#[cfg(test)]
mod tests {
    use super::testing::*;

    #[test]
    fn serializes_with_the_plugins_names() {
        let value = serde_json::to_value(task("- [/] a [[x]] ⏫")).unwrap();
        assert_eq!(value["status_type"], "IN_PROGRESS");
        assert_eq!(value["priority"], "high");
        assert_eq!(value["format"], "emoji");
    }
}
