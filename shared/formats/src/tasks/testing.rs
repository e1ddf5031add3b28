//! Fixtures the tests of the Tasks modules share: dates and tasks from text, and a sample of
//! task rows with helpers that run a query over them.

use chrono::NaiveDate;

use super::line::parse_date;
use super::{Task, TaskRow, parse_line, parse_query, run_query};

pub(super) fn d(text: &str) -> NaiveDate {
    parse_date(text).unwrap()
}

pub(super) fn task(line: &str) -> Task {
    parse_line(line).unwrap_or_else(|| panic!("not a task: {line}"))
}

pub(super) fn row(line: &str, path: &str, heading: Option<&str>) -> TaskRow {
    TaskRow { task: task(line), path: path.to_string(), heading: heading.map(String::from), line: 0 }
}

pub(super) const TODAY: &str = "2024-01-15"; // a Monday

pub(super) fn sample() -> Vec<TaskRow> {
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

pub(super) fn letters(rows: &[TaskRow]) -> String {
    rows.iter().map(|r| r.task.description.chars().next().unwrap_or('?')).collect()
}

/// The letters of the tasks a query finds, in result order.
pub(super) fn run(query: &str) -> String {
    let q = parse_query(query).unwrap_or_else(|e| panic!("{query}: {e}"));
    let result = run_query(&q, sample(), d(TODAY));
    result.groups.iter().map(|g| letters(&g.rows)).collect()
}

/// The same, as a sorted set.
pub(super) fn found(query: &str) -> String {
    let mut chars: Vec<char> = run(query).chars().collect();
    chars.sort_unstable();
    chars.into_iter().collect()
}

pub(super) fn groups(query: &str) -> Vec<(String, String)> {
    let q = parse_query(query).unwrap();
    let result = run_query(&q, sample(), d(TODAY));
    result.groups.iter().map(|g| (g.name.clone(), letters(&g.rows))).collect()
}
