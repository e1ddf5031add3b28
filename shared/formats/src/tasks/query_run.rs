//! Running a query: which rows each filter matches, the sort keys, the group headings, and the
//! limits.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use chrono::{Datelike, Days, Months, NaiveDate};
use regex::Regex;

use super::query::{
    DEFAULT_SORT, DateOp, DateSpec, Filter, Group, GroupField, Period, PriorityCmp, Query, QueryResult, Relative,
    SortKey, TaskRow, TextField, TextMatch, urgency,
};
use super::{DateField, Task, regex, status_name};

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
    use crate::tasks::parse_query;
    use crate::tasks::testing::*;

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
}
