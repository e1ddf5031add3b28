//! Dates and durations read from text, date arithmetic, and moment.js formats.

use chrono::{DateTime, Datelike, Months, NaiveDate, NaiveDateTime, Timelike, Utc};

use super::value::{DateKind, Dur, Eval, V};

/// A date read from text: `2024-05-01`, `2024-05-01 10:00[:00]`, ISO with `T`, RFC 3339.
pub(super) fn parse_date(s: &str) -> Option<(NaiveDateTime, DateKind)> {
    let s = s.trim();
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return d.and_hms_opt(0, 0, 0).map(|t| (t, DateKind::Day));
    }
    if let Ok(d) = DateTime::parse_from_rfc3339(s) {
        return Some((d.with_timezone(&Utc).naive_utc(), DateKind::Utc));
    }
    for format in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"] {
        if let Ok(d) = NaiveDateTime::parse_from_str(s, format) {
            return Some((d, DateKind::Naive));
        }
    }
    None
}

/// A duration read from text: `1d`, `7 days`, `2h 30m`, `-1w`.
pub(super) fn parse_duration(s: &str) -> Option<Dur> {
    let mut rest = s.trim();
    if rest.is_empty() {
        return None;
    }
    let mut dur = Dur { months: 0, millis: 0 };
    while !rest.is_empty() {
        let num_len =
            rest.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+')).unwrap_or(rest.len());
        let amount: f64 = rest[..num_len].parse().ok()?;
        rest = rest[num_len..].trim_start();
        let unit_len = rest.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = rest[unit_len..].trim_start().trim_start_matches(',').trim_start();
        let lower = unit.to_ascii_lowercase();
        let (months, millis) = match (unit, lower.as_str()) {
            ("M", _) | (_, "month" | "months" | "mo") => (1.0, 0.0),
            ("y", _) | (_, "year" | "years" | "yr" | "yrs") => (12.0, 0.0),
            ("w", _) | (_, "week" | "weeks" | "wk" | "wks") => (0.0, 604_800_000.0),
            ("d", _) | (_, "day" | "days") => (0.0, 86_400_000.0),
            ("h", _) | (_, "hour" | "hours" | "hr" | "hrs") => (0.0, 3_600_000.0),
            ("m", _) | (_, "minute" | "minutes" | "min" | "mins") => (0.0, 60_000.0),
            ("s", _) | (_, "second" | "seconds" | "sec" | "secs") => (0.0, 1000.0),
            ("ms", _) | (_, "millisecond" | "milliseconds") => (0.0, 1.0),
            _ => return None,
        };
        if months != 0.0 {
            if amount.fract() != 0.0 || amount.abs() > 120_000.0 {
                return None;
            }
            dur.months = dur.months.checked_add((amount * months) as i64)?;
        } else {
            let ms = amount * millis;
            if !ms.is_finite() || ms.abs() > 1e16 {
                return None;
            }
            dur.millis = dur.millis.checked_add(ms.round() as i64)?;
        }
    }
    Some(dur)
}

pub(super) fn as_date(v: &V) -> Option<(NaiveDateTime, DateKind)> {
    match v {
        V::Date(d, k) => Some((*d, *k)),
        V::Str(s) => parse_date(s),
        _ => None,
    }
}

pub(super) fn shift(date: NaiveDateTime, kind: DateKind, dur: Dur, sign: i64) -> Eval {
    let months = dur.months.checked_mul(sign).ok_or("date out of range")?;
    let moved = if months >= 0 {
        date.checked_add_months(Months::new(u32::try_from(months).map_err(|_| "date out of range")?))
    } else {
        let back = months.checked_neg().ok_or("date out of range")?;
        date.checked_sub_months(Months::new(u32::try_from(back).map_err(|_| "date out of range")?))
    }
    .ok_or("date out of range")?;
    let millis = dur.millis.checked_mul(sign).ok_or("date out of range")?;
    let delta = chrono::Duration::try_milliseconds(millis).ok_or("date out of range")?;
    let moved = moved.checked_add_signed(delta).ok_or("date out of range")?;
    let kind = if kind == DateKind::Day && dur.millis % 86_400_000 != 0 { DateKind::Naive } else { kind };
    Ok(V::Date(moved, kind))
}

/// A date in a moment.js pattern (`YYYY-MM-DD HH:mm`); text in `[brackets]` is literal.
pub(super) fn moment(d: &NaiveDateTime, pattern: &str) -> String {
    const TOKENS: &[&str] = &[
        "YYYY", "YY", "MMMM", "MMM", "MM", "M", "Do", "DD", "D", "dddd", "ddd", "dd", "d", "HH", "H", "hh", "h", "mm",
        "m", "ss", "s", "SSS", "A", "a", "X", "x",
    ];
    let mut out = String::new();
    let mut rest = pattern;
    while let Some(c) = rest.chars().next() {
        if c == '[' {
            match rest.find(']') {
                Some(end) => {
                    out.push_str(&rest[1..end]);
                    rest = &rest[end + 1..];
                }
                None => {
                    out.push_str(&rest[1..]);
                    rest = "";
                }
            }
            continue;
        }
        let Some(token) = TOKENS.iter().find(|t| rest.starts_with(**t)) else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        };
        let hour12 = match d.hour() % 12 {
            0 => 12,
            h => h,
        };
        let text = match *token {
            "YYYY" => format!("{:04}", d.year()),
            "YY" => format!("{:02}", d.year().rem_euclid(100)),
            "MMMM" => d.format("%B").to_string(),
            "MMM" => d.format("%b").to_string(),
            "MM" => format!("{:02}", d.month()),
            "M" => d.month().to_string(),
            "Do" => {
                let day = d.day();
                let suffix = match (day % 10, day % 100) {
                    (_, 11..=13) => "th",
                    (1, _) => "st",
                    (2, _) => "nd",
                    (3, _) => "rd",
                    _ => "th",
                };
                format!("{day}{suffix}")
            }
            "DD" => format!("{:02}", d.day()),
            "D" => d.day().to_string(),
            "dddd" => d.format("%A").to_string(),
            "ddd" => d.format("%a").to_string(),
            "dd" => d.format("%a").to_string().chars().take(2).collect(),
            "d" => d.weekday().num_days_from_sunday().to_string(),
            "HH" => format!("{:02}", d.hour()),
            "H" => d.hour().to_string(),
            "hh" => format!("{hour12:02}"),
            "h" => hour12.to_string(),
            "mm" => format!("{:02}", d.minute()),
            "m" => d.minute().to_string(),
            "ss" => format!("{:02}", d.second()),
            "s" => d.second().to_string(),
            "SSS" => format!("{:03}", d.and_utc().timestamp_subsec_millis()),
            "A" => if d.hour() < 12 { "AM" } else { "PM" }.to_string(),
            "a" => if d.hour() < 12 { "am" } else { "pm" }.to_string(),
            "X" => d.and_utc().timestamp().to_string(),
            _ => d.and_utc().timestamp_millis().to_string(),
        };
        out.push_str(&text);
        rest = &rest[token.len()..];
    }
    out
}
