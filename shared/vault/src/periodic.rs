//! Periodic notes: where a vault keeps its daily (weekly, monthly, quarterly, yearly) note for a
//! date, from Obsidian's own settings. The core Daily notes plugin keeps
//! `.obsidian/daily-notes.json` (`folder`, `format`); the community Periodic Notes plugin keeps
//! `.obsidian/plugins/periodic-notes/data.json` with one `{enabled, folder, format}` per period.
//! Formats are moment.js patterns; the tokens vault names use are supported (see [`render`]).

use chrono::{Datelike, NaiveDate};

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
}

impl Settings {
    /// The vault path of the period's note for `date`.
    pub fn path_for(&self, date: NaiveDate) -> String {
        let name = render(&self.format, date);
        let folder = self.folder.trim_matches('/');
        if folder.is_empty() { format!("{name}.md") } else { format!("{folder}/{name}.md") }
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
        });
    }
    if period == Period::Daily
        && let Some(config) = daily_json.and_then(read)
    {
        return Some(Settings {
            folder: text(&config, "folder").unwrap_or_default(),
            format: text(&config, "format").filter(|f| !f.is_empty()).unwrap_or_else(|| "YYYY-MM-DD".into()),
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

/// A moment.js format for `date`: YYYY YY Q MMMM MMM MM M DDDD DDD DD Do D dddd ddd dd d gggg ww
/// w GGGG WW W, and [literal] text; anything else is copied as it is.
pub fn render(format: &str, date: NaiveDate) -> String {
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
    let tokens: [&str; 23] = [
        "YYYY", "YY", "Q", "MMMM", "MMM", "MM", "M", "DDDD", "DDD", "DD", "Do", "D", "dddd", "ddd", "dd", "d", "gggg",
        "ww", "w", "GGGG", "WW", "W", "[",
    ];
    let mut out = String::new();
    let mut rest = format;
    while !rest.is_empty() {
        let Some(token) = tokens.iter().find(|t| rest.starts_with(**t)) else {
            let c = rest.chars().next().expect("not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        };
        let (local_year, local_week) = week_of(date, 0, 6);
        let (iso_year, iso_week) = week_of(date, 1, 4);
        let text = match *token {
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
            _ => unreachable!("every token is handled"),
        };
        out.push_str(&text);
        rest = &rest[token.len()..];
    }
    out
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
