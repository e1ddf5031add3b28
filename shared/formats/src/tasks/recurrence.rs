//! Clicking a checkbox, and the recurrence rules (`every week on Monday`, `every month on the
//! last Friday`, ... `when done`) that give a completed task its next occurrence.

use chrono::{Datelike, Days, Months, NaiveDate, Weekday};
use otc_errors::echo;
use serde::Serialize;

use super::{DateField, StatusType, Task};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::render_line;
    use crate::tasks::testing::*;

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
}
