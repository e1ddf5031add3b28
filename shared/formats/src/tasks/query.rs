//! The model of a ```` ```tasks ```` query: filters, sorts, groups and limits, the rows it runs
//! over and what it finds; and the plugin's urgency score.

use chrono::NaiveDate;
use regex::Regex;
use serde::Serialize;

use super::{DateField, Priority, StatusType, Task};

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
    /// The status name ([`status_name`](super::status_name)).
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
    /// the plugin but outside [`next_occurrence`](super::next_occurrence)'s subset is still found).
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
pub(super) const DEFAULT_SORT: [Sort; 5] = [
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::testing::*;

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
}
