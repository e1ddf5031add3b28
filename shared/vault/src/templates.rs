//! Templates as Obsidian's core Templates plugin and the periodic-notes plugins fill them in,
//! with no I/O. The core plugin keeps `.obsidian/templates.json` (`folder`, `dateFormat`,
//! `timeFormat`); a template is a note whose `{{...}}` variables are replaced when it is used:
//!
//! - `{{title}}`: the new note's name, without its extension;
//! - `{{date}}`, `{{time}}`: the date and time in the configured formats (YYYY-MM-DD, HH:mm);
//! - `{{date:FORMAT}}`, `{{time:FORMAT}}`: in a moment.js format of the template's own;
//! - `{{date+1d}}`, `{{date-2w:FORMAT}}`: shifted by years, quarters, months (M), weeks, days,
//!   hours, minutes (m) or seconds, as the Periodic Notes and Calendar plugins read them;
//! - `{{yesterday}}`, `{{tomorrow}}` and, for a week's note, `{{monday:FORMAT}}` ... the days of
//!   its week;
//! - any name the caller gives values for (`{{project}}`).
//!
//! Anything else between braces stays as written. Templater's `<% ... %>` needs the Templater
//! plugin running inside Obsidian: [`templater_syntax`] finds it so a caller can refuse it.

use std::collections::BTreeMap;

use chrono::{Datelike, Duration, Months, NaiveDateTime};
use regex::Regex;

use crate::periodic::render_at;

pub const TEMPLATES: &str = ".obsidian/templates.json";

/// The core Templates plugin's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateSettings {
    /// The templates folder, when one is set ("" never: no folder is None).
    pub folder: Option<String>,
    pub date_format: String,
    pub time_format: String,
}

/// The settings from `templates.json` (missing or unreadable: the plugin's defaults).
pub fn settings(json: Option<&[u8]>) -> TemplateSettings {
    let value = json.and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok());
    let text = |key: &str| {
        value.as_ref().and_then(|v| v.get(key)).and_then(|s| s.as_str()).map(str::trim).filter(|s| !s.is_empty())
    };
    TemplateSettings {
        folder: text("folder").map(|f| f.trim_matches('/').to_string()).filter(|f| !f.is_empty()),
        date_format: text("dateFormat").unwrap_or("YYYY-MM-DD").to_string(),
        time_format: text("timeFormat").unwrap_or("HH:mm").to_string(),
    }
}

/// What a template is filled in with.
pub struct Fill<'a> {
    /// The new note's name without its extension.
    pub title: &'a str,
    /// The moment `{{date}}` and `{{time}}` stand for: a periodic note's date (with the time of
    /// day it is created), else now.
    pub at: NaiveDateTime,
    pub settings: &'a TemplateSettings,
    /// Values for other names.
    pub values: &'a BTreeMap<String, String>,
}

/// The template with its variables replaced, and the names it held that nothing filled in
/// (left as written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filled {
    pub text: String,
    pub unknown: Vec<String>,
}

/// Whether `text` holds Templater commands (`<% ... %>`), which only Templater can run.
pub fn templater_syntax(text: &str) -> bool {
    text.find("<%").is_some_and(|open| text[open..].contains("%>"))
}

/// Fills in `template`'s variables.
pub fn fill(template: &str, with: &Fill<'_>) -> Filled {
    static VARIABLE: std::sync::LazyLock<Regex> =
        std::sync::LazyLock::new(|| Regex::new(r"\{\{\s*([^{}:]+?)\s*(?::([^{}]*))?\}\}").expect("a valid pattern"));
    static SHIFT: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(r"^(date|time)\s*(?:([+-]\d{1,6})\s*([yYQqMwWdDhHms]))?$").expect("a valid pattern")
    });
    let mut unknown = Vec::new();
    let text = VARIABLE.replace_all(template, |caps: &regex::Captures<'_>| {
        let name = caps[1].trim();
        if name.is_empty() {
            return caps[0].to_string();
        }
        let format = caps.get(2).map(|f| f.as_str());
        let lower = name.to_lowercase();
        if lower == "title" && format.is_none() {
            return with.title.to_string();
        }
        if let Some(value) = with.values.get(name) {
            return value.clone();
        }
        if let Some(shift) = SHIFT.captures(&lower.replace(' ', "")) {
            let is_time = &shift[1] == "time";
            let at = match (shift.get(2), shift.get(3)) {
                // Units read from the name as written: M is months, m minutes.
                (Some(n), Some(_)) => {
                    let unit = name.trim_end().chars().last().unwrap_or('d');
                    shifted(with.at, n.as_str().parse().unwrap_or(0), unit)
                }
                _ => Some(with.at),
            };
            let Some(at) = at else { return caps[0].to_string() };
            let default = if is_time { &with.settings.time_format } else { &with.settings.date_format };
            return render_at(format.map(str::trim).filter(|f| !f.is_empty()).unwrap_or(default), at);
        }
        let day_format = || format.map(str::trim).filter(|f| !f.is_empty()).unwrap_or(&with.settings.date_format);
        match lower.as_str() {
            "yesterday" => return render_at(day_format(), with.at - Duration::days(1)),
            "tomorrow" => return render_at(day_format(), with.at + Duration::days(1)),
            _ => {}
        }
        const DAYS: [&str; 7] = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];
        if let Some(day) = DAYS.iter().position(|d| *d == lower) {
            // The day of the (Sunday-first) week holding the note's date.
            let from = i64::from(with.at.date().weekday().num_days_from_sunday());
            return render_at(day_format(), with.at + Duration::days(day as i64 - from));
        }
        unknown.push(name.to_string());
        caps[0].to_string()
    });
    unknown.sort();
    unknown.dedup();
    Filled { text: text.into_owned(), unknown }
}

/// `at` moved by `n` of `unit`, or None past the calendar's range.
fn shifted(at: NaiveDateTime, n: i64, unit: char) -> Option<NaiveDateTime> {
    let months = |m: i64| {
        let m = u32::try_from(m.unsigned_abs()).ok()?;
        if n >= 0 { at.checked_add_months(Months::new(m)) } else { at.checked_sub_months(Months::new(m)) }
    };
    match unit {
        'y' | 'Y' => months(n.checked_mul(12)?),
        'Q' | 'q' => months(n.checked_mul(3)?),
        'M' => months(n),
        'w' | 'W' => at.checked_add_signed(Duration::try_weeks(n)?),
        'd' | 'D' => at.checked_add_signed(Duration::try_days(n)?),
        'h' | 'H' => at.checked_add_signed(Duration::try_hours(n)?),
        'm' => at.checked_add_signed(Duration::try_minutes(n)?),
        's' => at.checked_add_signed(Duration::try_seconds(n)?),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> NaiveDateTime {
        chrono::NaiveDate::from_ymd_opt(2026, 12, 3).unwrap().and_hms_opt(9, 5, 0).unwrap()
    }

    fn run(template: &str) -> Filled {
        let settings = settings(Some(br#"{"folder": "Templates/", "dateFormat": "DD.MM.YYYY"}"#));
        let values = BTreeMap::from([("project".to_string(), "Apollo".to_string())]);
        fill(template, &Fill { title: "Plan", at: at(), settings: &settings, values: &values })
    }

    #[test]
    fn core_variables() {
        assert_eq!(run("# {{title}}\n{{date}} {{time}}\n").text, "# Plan\n03.12.2026 09:05\n");
        assert_eq!(run("{{date:YYYY-MM-DD}} {{ time:HH:mm:ss }} {{DATE:dddd}}").text, "2026-12-03 09:05:00 Thursday");
        assert_eq!(run("{{project}} {{ title }}").text, "Apollo Plan");
    }

    #[test]
    fn shifted_and_named_days() {
        assert_eq!(run("{{date+1d:YYYY-MM-DD}} {{date-1M:YYYY-MM}} {{date+1y:YYYY}}").text, "2026-12-04 2026-11 2027");
        assert_eq!(run("{{time+90m:HH:mm}} {{date-2w:MM-DD}}").text, "10:35 11-19");
        assert_eq!(run("{{yesterday}} {{tomorrow:YYYY-MM-DD}}").text, "02.12.2026 2026-12-04");
        assert_eq!(run("{{sunday:YYYY-MM-DD}} {{saturday:YYYY-MM-DD}}").text, "2026-11-29 2026-12-05");
    }

    #[test]
    fn unknown_names_stay_and_are_reported() {
        let filled = run("{{nobody}} {{date:}} {{ }} {{a{b}} }}");
        assert_eq!(filled.text, "{{nobody}} 03.12.2026 {{ }} {{a{b}} }}");
        assert_eq!(filled.unknown, ["nobody"]);
    }

    #[test]
    fn settings_defaults_and_templater() {
        let s = settings(None);
        assert_eq!((s.folder, s.date_format.as_str(), s.time_format.as_str()), (None, "YYYY-MM-DD", "HH:mm"));
        assert_eq!(settings(Some(b"not json")).date_format, "YYYY-MM-DD");
        assert!(templater_syntax("<% tp.date.now() %>"));
        assert!(!templater_syntax("a <% b"));
    }
}
