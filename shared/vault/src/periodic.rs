//! Periodic notes: where a vault keeps its daily (weekly, monthly, quarterly, yearly) note for a
//! date, from Obsidian's own settings. The core Daily notes plugin keeps
//! `.obsidian/daily-notes.json` (`folder`, `format`); the community Periodic Notes plugin keeps
//! `.obsidian/plugins/periodic-notes/data.json` with one `{enabled, folder, format}` per period.
//! Formats are moment.js patterns; the tokens vault names use are supported (see [`render`]).

use chrono::{Datelike, NaiveDate, NaiveDateTime, Timelike};

pub const DAILY_NOTES: &str = ".obsidian/daily-notes.json";
pub const PERIODIC_NOTES: &str = ".obsidian/plugins/periodic-notes/data.json";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    Daily,
    Weekly,
    Monthly,
    Quarterly,
    Yearly,
}

impl Period {
    pub fn key(self) -> &'static str {
        match self {
            Period::Daily => "daily",
            Period::Weekly => "weekly",
            Period::Monthly => "monthly",
            Period::Quarterly => "quarterly",
            Period::Yearly => "yearly",
        }
    }

    fn default_format(self) -> &'static str {
        match self {
            Period::Daily => "YYYY-MM-DD",
            Period::Weekly => "gggg-[W]ww",
            Period::Monthly => "YYYY-MM",
            Period::Quarterly => "YYYY-[Q]Q",
            Period::Yearly => "YYYY",
        }
    }
}

/// Where notes of one period live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub folder: String,
    pub format: String,
    /// The template a new note starts from (a vault path, `.md` optional), when one is set.
    pub template: Option<String>,
}

impl Settings {
    /// The vault path of the period's note for `date`.
    pub fn path_for(&self, date: NaiveDate) -> String {
        let name = render(&self.format, date);
        let folder = self.folder.trim_matches('/');
        if folder.is_empty() { format!("{name}.md") } else { format!("{folder}/{name}.md") }
    }

    /// The folder notes of this period live in ("" for the vault's root).
    pub fn folder(&self) -> &str {
        self.folder.trim_matches('/')
    }

    /// The date a note at `path` stands for (the first day of its period), when `path` is one
    /// of this period's notes: its name, read with the format, renders back to the same name.
    pub fn date_of(&self, path: &str) -> Option<NaiveDate> {
        let folder = self.folder();
        let name = if folder.is_empty() { path } else { path.strip_prefix(folder)?.strip_prefix('/')? };
        parse(&self.format, name.strip_suffix(".md")?)
    }
}

impl Period {
    /// The first day of the period holding `date` (weeks start on Monday for ISO formats,
    /// `GGGG`/`WW`, and on Sunday otherwise, as moment.js's default locale has it).
    pub fn start(self, date: NaiveDate, format: &str) -> NaiveDate {
        let ymd = |y, m, d| NaiveDate::from_ymd_opt(y, m, d).expect("a valid day");
        match self {
            Period::Daily => date,
            Period::Weekly => {
                // ISO tokens (GGGG, WW) outside [literal] text make weeks start on Monday.
                let tokens = regex::Regex::new(r"\[[^\]]*\]").expect("a valid pattern").replace_all(format, "");
                let from = if tokens.contains('W') || tokens.contains('G') {
                    date.weekday().num_days_from_monday()
                } else {
                    date.weekday().num_days_from_sunday()
                };
                date - chrono::Days::new(u64::from(from))
            }
            Period::Monthly => ymd(date.year(), date.month(), 1),
            Period::Quarterly => ymd(date.year(), date.month0() / 3 * 3 + 1, 1),
            Period::Yearly => ymd(date.year(), 1, 1),
        }
    }

    pub fn parse(name: &str) -> Option<Period> {
        [Period::Daily, Period::Weekly, Period::Monthly, Period::Quarterly, Period::Yearly]
            .into_iter()
            .find(|p| p.key() == name)
    }
}

/// The settings for `period` from the plugins' files (either may be missing): the Periodic
/// Notes plugin when it enables the period, else, for daily notes, the core plugin.
pub fn settings(period: Period, periodic_json: Option<&[u8]>, daily_json: Option<&[u8]>) -> Option<Settings> {
    let read = |bytes: &[u8]| serde_json::from_slice::<serde_json::Value>(bytes).ok();
    let text = |v: &serde_json::Value, key: &str| v.get(key).and_then(|s| s.as_str()).map(str::to_string);
    if let Some(config) = periodic_json.and_then(read)
        && let Some(entry) = config.get(period.key())
        && entry.get("enabled").and_then(|e| e.as_bool()) == Some(true)
    {
        return Some(Settings {
            folder: text(entry, "folder").unwrap_or_default(),
            format: text(entry, "format").filter(|f| !f.is_empty()).unwrap_or_else(|| period.default_format().into()),
            template: text(entry, "templatePath").filter(|t| !t.trim().is_empty()),
        });
    }
    if period == Period::Daily
        && let Some(config) = daily_json.and_then(read)
    {
        return Some(Settings {
            folder: text(&config, "folder").unwrap_or_default(),
            format: text(&config, "format").filter(|f| !f.is_empty()).unwrap_or_else(|| "YYYY-MM-DD".into()),
            template: text(&config, "template").filter(|t| !t.trim().is_empty()),
        });
    }
    None
}

/// The (week-year, week) of `date` for weeks starting on `dow` (0 Sunday, 1 Monday) where
/// the week holding January `doy`'s day-of-week rule is week 1 (moment.js's week arithmetic:
/// `gggg`/`ww` use Sunday and January 1st, `GGGG`/`WW` are ISO).
fn week_of(date: NaiveDate, dow: i64, doy: i64) -> (i32, i64) {
    fn first_week_offset(year: i32, dow: i64, doy: i64) -> i64 {
        let fwd = 7 + dow - doy;
        let day = NaiveDate::from_ymd_opt(year, 1, fwd as u32).expect("a January day");
        let fwdlw = (7 + i64::from(day.weekday().num_days_from_sunday()) - dow) % 7;
        -fwdlw + fwd - 1
    }
    fn weeks_in_year(year: i32, dow: i64, doy: i64) -> i64 {
        let days = if NaiveDate::from_ymd_opt(year, 2, 29).is_some() { 366 } else { 365 };
        (days - first_week_offset(year, dow, doy) + first_week_offset(year + 1, dow, doy)) / 7
    }
    let year = date.year();
    let week = (i64::from(date.ordinal()) - first_week_offset(year, dow, doy) - 1).div_euclid(7) + 1;
    if week < 1 {
        (year - 1, week + weeks_in_year(year - 1, dow, doy))
    } else if week > weeks_in_year(year, dow, doy) {
        (year + 1, week - weeks_in_year(year, dow, doy))
    } else {
        (year, week)
    }
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

/// The date tokens, longest first where one is a prefix of another, and `[` for literal text.
const DATE_TOKENS: [&str; 23] = [
    "YYYY", "YY", "Q", "MMMM", "MMM", "MM", "M", "DDDD", "DDD", "DD", "Do", "D", "dddd", "ddd", "dd", "d", "gggg",
    "ww", "w", "GGGG", "WW", "W", "[",
];
/// The time tokens [`render_at`] reads besides the date ones.
const TIME_TOKENS: [&str; 10] = ["HH", "H", "hh", "h", "mm", "m", "ss", "s", "A", "a"];

/// A moment.js format for `date`: YYYY YY Q MMMM MMM MM M DDDD DDD DD Do D dddd ddd dd d gggg ww
/// w GGGG WW W, and [literal] text; anything else is copied as it is. Time tokens are not read,
/// so a note name's letters stay letters.
pub fn render(format: &str, date: NaiveDate) -> String {
    render_with(format, date.and_time(chrono::NaiveTime::MIN), false)
}

/// [`render`] with the time tokens too (HH H hh h mm m ss s A a), for templates' `{{time}}` and
/// `{{date:FORMAT}}`.
pub fn render_at(format: &str, at: NaiveDateTime) -> String {
    render_with(format, at, true)
}

fn next_token(rest: &str, time: bool) -> Option<&'static str> {
    DATE_TOKENS.iter().chain(if time { TIME_TOKENS.iter() } else { [].iter() }).find(|t| rest.starts_with(**t)).copied()
}

fn render_with(format: &str, at: NaiveDateTime, time: bool) -> String {
    let date = at.date();
    let mut out = String::new();
    let mut rest = format;
    while !rest.is_empty() {
        let Some(token) = next_token(rest, time) else {
            let c = rest.chars().next().expect("not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        };
        let (local_year, local_week) = week_of(date, 0, 6);
        let (iso_year, iso_week) = week_of(date, 1, 4);
        let hour12 = match at.hour() % 12 {
            0 => 12,
            h => h,
        };
        let text = match token {
            "[" => {
                let end = rest.find(']').unwrap_or(rest.len());
                out.push_str(&rest[1..end]);
                rest = &rest[(end + 1).min(rest.len())..];
                continue;
            }
            "YYYY" => format!("{:04}", date.year()),
            "YY" => format!("{:02}", date.year() % 100),
            "Q" => ((date.month0() / 3) + 1).to_string(),
            "MMMM" => MONTHS[date.month0() as usize].to_string(),
            "MMM" => MONTHS[date.month0() as usize][..3].to_string(),
            "MM" => format!("{:02}", date.month()),
            "M" => date.month().to_string(),
            "DDDD" => format!("{:03}", date.ordinal()),
            "DDD" => date.ordinal().to_string(),
            "DD" => format!("{:02}", date.day()),
            "Do" => {
                let d = date.day();
                let suffix = match (d % 10, d % 100) {
                    (1, n) if n != 11 => "st",
                    (2, n) if n != 12 => "nd",
                    (3, n) if n != 13 => "rd",
                    _ => "th",
                };
                format!("{d}{suffix}")
            }
            "D" => date.day().to_string(),
            "dddd" => DAYS[date.weekday().num_days_from_sunday() as usize].to_string(),
            "ddd" => DAYS[date.weekday().num_days_from_sunday() as usize][..3].to_string(),
            "dd" => DAYS[date.weekday().num_days_from_sunday() as usize][..2].to_string(),
            "d" => date.weekday().num_days_from_sunday().to_string(),
            "gggg" => format!("{local_year:04}"),
            "ww" => format!("{local_week:02}"),
            "w" => local_week.to_string(),
            "GGGG" => format!("{iso_year:04}"),
            "WW" => format!("{iso_week:02}"),
            "W" => iso_week.to_string(),
            "HH" => format!("{:02}", at.hour()),
            "H" => at.hour().to_string(),
            "hh" => format!("{hour12:02}"),
            "h" => hour12.to_string(),
            "mm" => format!("{:02}", at.minute()),
            "m" => at.minute().to_string(),
            "ss" => format!("{:02}", at.second()),
            "s" => at.second().to_string(),
            "A" => if at.hour() < 12 { "AM" } else { "PM" }.to_string(),
            "a" => if at.hour() < 12 { "am" } else { "pm" }.to_string(),
            _ => unreachable!("every token is handled"),
        };
        out.push_str(&text);
        rest = &rest[token.len()..];
    }
    out
}

/// The date a name written with the moment.js `format` stands for: the first day of the
/// period it names (a week's first day, a month's or quarter's first, January 1st), or None
/// when the name is not one the format writes. Names are read leniently (any digits where a
/// number goes) and then rendered again: only a name that renders back to itself counts.
pub fn parse(format: &str, name: &str) -> Option<NaiveDate> {
    let mut pattern = String::from("^");
    let mut tokens = Vec::new();
    let mut rest = format;
    while !rest.is_empty() {
        let Some(token) = next_token(rest, false) else {
            let c = rest.chars().next().expect("not empty");
            pattern.push_str(&regex::escape(&c.to_string()));
            rest = &rest[c.len_utf8()..];
            continue;
        };
        if token == "[" {
            let end = rest.find(']').unwrap_or(rest.len());
            pattern.push_str(&regex::escape(&rest[1..end]));
            rest = &rest[(end + 1).min(rest.len())..];
            continue;
        }
        let group = match token {
            "MMMM" | "MMM" | "dddd" | "ddd" | "dd" => "([A-Za-z]+)",
            "Do" => "([0-9]{1,2})(?:st|nd|rd|th)",
            _ => "([0-9]+)",
        };
        pattern.push_str(group);
        tokens.push(token);
        rest = &rest[token.len()..];
    }
    pattern.push('$');
    let captures = regex::Regex::new(&pattern).ok()?.captures(name)?;
    let (mut year, mut month, mut day, mut ordinal, mut quarter) = (None, None, None, None, None);
    let (mut local, mut iso) = ((None, None), (None, None));
    for (i, token) in tokens.iter().enumerate() {
        let text = captures.get(i + 1)?.as_str();
        let number = || text.parse::<i64>().ok();
        match *token {
            "YYYY" => year = Some(number()? as i32),
            "YY" => {
                year = Some(match number()? as i32 {
                    y @ 0..=68 => 2000 + y,
                    y => 1900 + y,
                })
            }
            "Q" => quarter = Some(number()? as u32),
            "MMMM" | "MMM" => {
                month = Some(MONTHS.iter().position(|m| m.starts_with(text) && text.len() >= 3)? as u32 + 1)
            }
            "MM" | "M" => month = Some(number()? as u32),
            "DDDD" | "DDD" => ordinal = Some(number()? as u32),
            "DD" | "D" | "Do" => day = Some(number()? as u32),
            "gggg" => local.0 = Some(number()? as i32),
            "ww" | "w" => local.1 = Some(number()?),
            "GGGG" => iso.0 = Some(number()? as i32),
            "WW" | "W" => iso.1 = Some(number()?),
            _ => {}
        }
    }
    // The first day of week `week` of `year` under the (dow, doy) rule: every day of that week
    // lies within two weeks of January 1st plus (week - 1) weeks.
    let week_start = |(year, week): (Option<i32>, Option<i64>), dow: i64, doy: i64| -> Option<NaiveDate> {
        let (year, week) = (year?, week?);
        let guess = NaiveDate::from_ymd_opt(year, 1, 1)?.checked_add_signed(chrono::Duration::days((week - 1) * 7))?;
        (-14i64..14)
            .filter_map(|offset| guess.checked_add_signed(chrono::Duration::days(offset)))
            .filter(|d| week_of(*d, dow, doy) == (year, week))
            .min()
    };
    let date = if let Some(date) = week_start(iso, 1, 4) {
        date
    } else if let Some(date) = week_start(local, 0, 6) {
        date
    } else {
        let year = year?;
        match (month, day, ordinal, quarter) {
            (Some(m), Some(d), _, _) => NaiveDate::from_ymd_opt(year, m, d)?,
            (_, _, Some(o), _) => NaiveDate::from_yo_opt(year, o)?,
            (Some(m), None, _, _) => NaiveDate::from_ymd_opt(year, m, 1)?,
            (None, None, None, Some(q)) if (1..=4).contains(&q) => NaiveDate::from_ymd_opt(year, (q - 1) * 3 + 1, 1)?,
            (None, None, None, _) => NaiveDate::from_ymd_opt(year, 1, 1)?,
            _ => return None,
        }
    };
    (render(format, date) == name).then_some(date)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(y: i32, m: u32, day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, day).unwrap()
    }

    #[test]
    fn moment_formats() {
        assert_eq!(render("YYYY-MM-DD", d(2026, 11, 30)), "2026-11-30");
        assert_eq!(render("dddd, MMMM Do YYYY", d(2026, 11, 1)), "Sunday, November 1st 2026");
        assert_eq!(render("YYYY-[Q]Q", d(2026, 11, 30)), "2026-Q4");
        assert_eq!(render("YYYY/MMM/DDDD", d(2026, 2, 3)), "2026/Feb/034");
        assert_eq!(render("DDD dd d", d(2026, 2, 3)), "34 Tu 2");
        // ISO weeks: 2021-01-03 is in 2020-W53; 2026-11-30 is 2026-W49.
        assert_eq!(render("GGGG-[W]WW", d(2021, 1, 3)), "2020-W53");
        assert_eq!(render("GGGG-[W]WW", d(2026, 11, 30)), "2026-W49");
        // Locale (Sunday, Jan 1st) weeks: 2021-01-03 starts week 2 of 2021; 2020-12-31 is in 2021's week 1.
        assert_eq!(render("gggg-[W]ww", d(2021, 1, 3)), "2021-W02");
        assert_eq!(render("gggg-[W]ww", d(2020, 12, 31)), "2021-W01");
    }

    #[test]
    fn names_read_back_to_the_first_day_of_their_period() {
        assert_eq!(parse("YYYY-MM-DD", "2026-11-30"), Some(d(2026, 11, 30)));
        assert_eq!(parse("YYYY/MM/YYYY-MM-DD", "2026/11/2026-11-30"), Some(d(2026, 11, 30)));
        assert_eq!(parse("YYYY/MM/YYYY-MM-DD", "2026/10/2026-11-30"), None, "parts disagree");
        assert_eq!(parse("dddd, MMMM Do YYYY", "Sunday, November 1st 2026"), Some(d(2026, 11, 1)));
        assert_eq!(parse("dddd, MMMM Do YYYY", "Monday, November 1st 2026"), None, "wrong weekday");
        assert_eq!(parse("YYYY-[Q]Q", "2026-Q4"), Some(d(2026, 10, 1)));
        assert_eq!(parse("YYYY-MM", "2026-02"), Some(d(2026, 2, 1)));
        assert_eq!(parse("YYYY", "2026"), Some(d(2026, 1, 1)));
        assert_eq!(parse("GGGG-[W]WW", "2020-W53"), Some(d(2020, 12, 28)));
        assert_eq!(parse("GGGG-[W]WW", "2026-W49"), Some(d(2026, 11, 30)));
        assert_eq!(parse("gggg-[W]ww", "2021-W01"), Some(d(2020, 12, 27)));
        assert_eq!(parse("gggg-[W]ww", "2021-W02"), Some(d(2021, 1, 3)));
        for name in ["2026-13-01", "2026-11-31", "notes", "2026-11-30 copy", "26-11-30", ""] {
            assert_eq!(parse("YYYY-MM-DD", name), None, "{name}");
        }
        // Every day of two years survives the round trip in every default format.
        let mut day = d(2025, 1, 1);
        while day < d(2027, 1, 1) {
            for period in [Period::Daily, Period::Weekly, Period::Monthly, Period::Quarterly, Period::Yearly] {
                let format = period.default_format();
                let start = period.start(day, format);
                assert_eq!(parse(format, &render(format, day)), Some(start), "{format} {day}");
            }
            assert_eq!(parse("GGGG-[W]WW", &render("GGGG-[W]WW", day)), Some(Period::Weekly.start(day, "GGGG-[W]WW")));
            day = day.succ_opt().unwrap();
        }
    }

    #[test]
    fn time_tokens_only_where_asked() {
        let at = d(2026, 12, 3).and_hms_opt(15, 4, 5).unwrap();
        assert_eq!(render_at("YYYY-MM-DD HH:mm:ss h A", at), "2026-12-03 15:04:05 3 PM");
        assert_eq!(render("[Journal]/YYYY hh", at.date()), "Journal/2026 hh");
    }

    #[test]
    fn settings_from_either_plugin() {
        let daily = br#"{"folder": "Journal/", "format": "YYYY/MM/YYYY-MM-DD"}"#;
        let s = settings(Period::Daily, None, Some(daily)).unwrap();
        assert_eq!(s.path_for(d(2026, 11, 30)), "Journal/2026/11/2026-11-30.md");
        let periodic =
            br#"{"weekly": {"enabled": true, "folder": "Weeks", "format": ""}, "daily": {"enabled": false}}"#;
        assert_eq!(
            settings(Period::Weekly, Some(periodic), None).unwrap().path_for(d(2021, 1, 3)),
            "Weeks/2021-W02.md"
        );
        assert_eq!(settings(Period::Daily, Some(periodic), Some(daily)).unwrap().folder, "Journal/");
        assert!(settings(Period::Monthly, Some(periodic), Some(daily)).is_none());
        assert!(settings(Period::Daily, None, None).is_none());
    }
}
