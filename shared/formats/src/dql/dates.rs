//! Dates and durations: Luxon's duration units and casual conversion matrix as Dataview uses
//! them, date arithmetic, date fields (`date.year`), the day in a note's name, and `dateformat`
//! tokens.

use chrono::{Datelike, Days, Months, NaiveDate, NaiveDateTime, NaiveTime, SecondsFormat, TimeDelta, Timelike};

use super::lexer::digits;
use super::value::{V, fmt_num};

/// A duration in Luxon's units: years, months, weeks, days, hours, minutes, seconds, ms.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(super) struct Dur([f64; 8]);

pub(super) const MONTHS: [&str; 12] = [
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
const WEEKDAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

pub(super) fn is_midnight(d: &NaiveDateTime) -> bool {
    d.time() == NaiveTime::MIN
}

pub(super) fn iso(d: &NaiveDateTime) -> String {
    if is_midnight(d) {
        d.format("%Y-%m-%d").to_string()
    } else {
        d.and_utc().to_rfc3339_opts(SecondsFormat::AutoSi, true)
    }
}

pub(super) const UNITS: [&str; 8] = ["year", "month", "week", "day", "hour", "minute", "second", "millisecond"];

/// How many of unit `small` make one of unit `big` (`big <= small`).
fn conv(big: usize, small: usize) -> f64 {
    const PER_DAY: [f64; 5] = [1.0, 24.0, 1440.0, 86_400.0, 86_400_000.0];
    const DAYS: [f64; 4] = [365.0, 30.0, 7.0, 1.0];
    match (big, small) {
        (a, b) if a == b => 1.0,
        (0, 1) => 12.0,
        (0, 2) => 52.0,
        (1, 2) => 4.0,
        (a, b) if a <= 3 && b >= 3 => DAYS[a] * PER_DAY[b - 3],
        (a, b) if a >= 3 => PER_DAY[b - 3] / PER_DAY[a - 3],
        _ => 1.0,
    }
}

impl Dur {
    pub(super) fn unit(index: usize, amount: f64) -> Self {
        let mut d = Dur::default();
        d.0[index] = amount;
        d
    }

    pub(super) fn millis(&self) -> f64 {
        self.0.iter().enumerate().map(|(k, v)| v * conv(k, 7)).sum()
    }

    pub(super) fn plus(self, other: Dur) -> Dur {
        let mut d = self;
        for k in 0..8 {
            d.0[k] += other.0[k];
        }
        d
    }

    pub(super) fn scale(self, factor: f64) -> Dur {
        Dur(self.0.map(|v| v * factor))
    }

    /// Luxon's `shiftToAll().normalize()` (Dataview's `normalizeDuration`).
    pub(super) fn normalize(self) -> Dur {
        let vals = self.0;
        let mut built = [0.0; 8];
        let mut acc = [0.0; 8];
        for k in 0..8 {
            let mut own = 0.0;
            for (ak, pending) in acc.iter_mut().enumerate().take(k) {
                if *pending != 0.0 {
                    own += conv(ak, k) * *pending;
                    *pending = 0.0;
                }
            }
            own += vals[k];
            let whole = own.trunc();
            built[k] = whole;
            acc[k] = (own * 1000.0 - whole * 1000.0) / 1000.0;
        }
        built[7] += acc[7];
        let factor = if Dur(built).millis() < 0.0 { -1.0 } else { 1.0 };
        for cur in (0..7).rev() {
            let prev = cur + 1;
            let c = conv(cur, prev);
            let roll = (built[prev] * factor / c).floor();
            built[cur] += roll * factor;
            built[prev] -= roll * c * factor;
        }
        for cur in 1..8 {
            let prev = cur - 1;
            let frac = built[prev] % 1.0;
            built[prev] -= frac;
            built[cur] += frac * conv(prev, cur);
        }
        Dur(built.map(|v| (v * 1e6).round() / 1e6))
    }

    /// Dataview's `renderMinimalDuration`: `3 days, 2 hours`.
    pub(super) fn render(&self) -> String {
        let d = self.normalize();
        let mut parts = Vec::new();
        for (k, v) in d.0.iter().enumerate() {
            if *v != 0.0 {
                let n = (v * 1000.0).round() / 1000.0;
                parts.push(format!("{} {}{}", fmt_num(n), UNITS[k], if n.abs() == 1.0 { "" } else { "s" }));
            }
        }
        parts.join(", ")
    }

    /// The whole duration in one unit (`dur.days`).
    pub(super) fn as_unit(&self, unit: usize) -> f64 {
        self.millis() / conv(unit, 7)
    }
}

/// Luxon's `DateTime.plus(duration)`: whole years and months on the calendar (the day clamped to
/// the month), whole weeks and days as calendar days, the rest as milliseconds.
pub(super) fn date_plus(d: NaiveDateTime, dur: &Dur) -> Result<NaiveDateTime, String> {
    let v = dur.0;
    let months = v[0].trunc() * 12.0 + v[1].trunc();
    let days = v[3].trunc() + v[2].trunc() * 7.0;
    let rest = Dur([v[0].fract(), v[1].fract(), v[2].fract(), v[3].fract(), v[4], v[5], v[6], v[7]]).millis();
    let overflow = || "the date is out of range".to_string();
    if months.abs() > 1.0e6 || days.abs() > 1.0e8 || rest.abs() > 1.0e15 {
        return Err(overflow());
    }
    let mut out = if months >= 0.0 {
        d.checked_add_months(Months::new(months as u32))
    } else {
        d.checked_sub_months(Months::new((-months) as u32))
    }
    .ok_or_else(overflow)?;
    out = if days >= 0.0 {
        out.checked_add_days(Days::new(days as u64))
    } else {
        out.checked_sub_days(Days::new((-days) as u64))
    }
    .ok_or_else(overflow)?;
    out.checked_add_signed(TimeDelta::milliseconds(rest.round() as i64)).ok_or_else(overflow)
}

/// Luxon's `later.diff(earlier, [years, months, days, hours, minutes, seconds, milliseconds])`,
/// then Dataview's normalization.
pub(super) fn date_diff(a: NaiveDateTime, b: NaiveDateTime) -> Result<Dur, String> {
    let (earlier, later, sign) = if a >= b { (b, a, 1.0) } else { (a, b, -1.0) };
    let mut results = Dur::default();
    let mut cursor = earlier;
    for unit in [0usize, 1, 3] {
        let guess = match unit {
            0 => (later.year() - cursor.year()) as f64,
            1 => ((later.year() - cursor.year()) * 12 + later.month() as i32 - cursor.month() as i32) as f64,
            _ => (later.date() - cursor.date()).num_days() as f64,
        };
        results.0[unit] = guess;
        let high = date_plus(earlier, &results)?;
        if high > later {
            results.0[unit] -= 1.0;
            cursor = date_plus(earlier, &results)?;
            if cursor > later {
                results.0[unit] -= 1.0;
                cursor = date_plus(earlier, &results)?;
            }
        } else {
            cursor = high;
        }
    }
    let mut ms = (later - cursor).num_milliseconds() as f64;
    for (unit, size) in [(4usize, 3_600_000.0), (5, 60_000.0), (6, 1000.0)] {
        let whole = (ms / size).trunc();
        results.0[unit] = whole;
        ms -= whole * size;
    }
    results.0[7] = ms;
    Ok(results.scale(sign).normalize())
}

pub(super) fn date_field(d: &NaiveDateTime, key: &str) -> V {
    let n = |x: i64| V::Num(x as f64);
    match key {
        "year" => n(d.year() as i64),
        "month" => n(d.month() as i64),
        "day" => n(d.day() as i64),
        "hour" => n(d.hour() as i64),
        "minute" => n(d.minute() as i64),
        "second" => n(d.second() as i64),
        "millisecond" => n((d.nanosecond() / 1_000_000) as i64),
        "week" | "weeknumber" | "weekNumber" => n(d.iso_week().week() as i64),
        "weekyear" | "weekYear" => n(d.iso_week().year() as i64),
        "weekday" => n(d.weekday().number_from_monday() as i64),
        "ordinal" => n(d.ordinal() as i64),
        "quarter" => n(((d.month() - 1) / 3 + 1) as i64),
        "epoch" | "ts" => n(d.and_utc().timestamp_millis()),
        _ => V::Null,
    }
}

pub(super) fn day_in_name(name: &str) -> Option<NaiveDateTime> {
    let chars: Vec<char> = name.chars().collect();
    for i in 0..chars.len() {
        if let (Some(y), Some('-'), Some(m), Some('-'), Some(d)) = (
            digits(&chars, i, 4),
            chars.get(i + 4).copied(),
            digits(&chars, i + 5, 2),
            chars.get(i + 7).copied(),
            digits(&chars, i + 8, 2),
        ) && let Some(date) = NaiveDate::from_ymd_opt(y as i32, m, d)
        {
            return Some(date.and_time(NaiveTime::MIN));
        }
    }
    for i in 0..chars.len() {
        if let (Some(y), Some(m), Some(d)) = (digits(&chars, i, 4), digits(&chars, i + 4, 2), digits(&chars, i + 6, 2))
            && let Some(date) = NaiveDate::from_ymd_opt(y as i32, m, d)
        {
            return Some(date.and_time(NaiveTime::MIN));
        }
    }
    None
}

/// Luxon's `toFormat` tokens (the common ones; English names).
pub(super) fn dateformat(d: &NaiveDateTime, fmt: &str) -> String {
    let chars: Vec<char> = fmt.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '\'' {
                out.push(chars[j]);
                j += 1;
            }
            i = j + 1;
            continue;
        }
        if !c.is_ascii_alphabetic() {
            out.push(c);
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len() && chars[j] == c {
            j += 1;
        }
        let n = j - i;
        let month = MONTHS[d.month0() as usize];
        let weekday = WEEKDAYS[d.weekday().num_days_from_monday() as usize];
        let hour12 = if d.hour().is_multiple_of(12) { 12 } else { d.hour() % 12 };
        let token = match (c, n) {
            ('y', 2) => Some(format!("{:02}", d.year().rem_euclid(100))),
            ('y', 4) => Some(format!("{:04}", d.year())),
            ('y', _) => Some(d.year().to_string()),
            ('M' | 'L', 1) => Some(d.month().to_string()),
            ('M' | 'L', 2) => Some(format!("{:02}", d.month())),
            ('M' | 'L', 3) => Some(month[..3].to_string()),
            ('M' | 'L', 4) => Some(month.to_string()),
            ('d', 1) => Some(d.day().to_string()),
            ('d', 2) => Some(format!("{:02}", d.day())),
            ('E' | 'c', 1) => Some(d.weekday().number_from_monday().to_string()),
            ('E' | 'c', 3) => Some(weekday[..3].to_string()),
            ('E' | 'c', 4) => Some(weekday.to_string()),
            ('H', 1) => Some(d.hour().to_string()),
            ('H', 2) => Some(format!("{:02}", d.hour())),
            ('h', 1) => Some(hour12.to_string()),
            ('h', 2) => Some(format!("{hour12:02}")),
            ('m', 1) => Some(d.minute().to_string()),
            ('m', 2) => Some(format!("{:02}", d.minute())),
            ('s', 1) => Some(d.second().to_string()),
            ('s', 2) => Some(format!("{:02}", d.second())),
            ('S', 1) => Some((d.nanosecond() / 1_000_000).to_string()),
            ('S', 3) => Some(format!("{:03}", d.nanosecond() / 1_000_000)),
            ('a', 1) => Some(if d.hour() < 12 { "AM" } else { "PM" }.to_string()),
            ('W', 1) => Some(d.iso_week().week().to_string()),
            ('W', 2) => Some(format!("{:02}", d.iso_week().week())),
            ('k', 2) => Some(format!("{:02}", d.iso_week().year().rem_euclid(100))),
            ('k', 4) => Some(format!("{:04}", d.iso_week().year())),
            ('o', 1) => Some(d.ordinal().to_string()),
            ('o', 3) => Some(format!("{:03}", d.ordinal())),
            ('q', 1) => Some(((d.month() - 1) / 3 + 1).to_string()),
            ('q', 2) => Some(format!("{:02}", (d.month() - 1) / 3 + 1)),
            ('D', 1) => Some(format!("{}/{}/{}", d.month(), d.day(), d.year())),
            ('D', 2) => Some(format!("{} {}, {}", &month[..3], d.day(), d.year())),
            ('D', 3) => Some(format!("{month} {}, {}", d.day(), d.year())),
            ('D', 4) => Some(format!("{weekday}, {month} {}, {}", d.day(), d.year())),
            ('t', 1) => Some(format!("{hour12}:{:02} {}", d.minute(), if d.hour() < 12 { "AM" } else { "PM" })),
            ('T', 1) => Some(format!("{:02}:{:02}", d.hour(), d.minute())),
            ('Z', _) => Some("+00:00".to_string()),
            ('z', _) => Some("UTC".to_string()),
            _ => None,
        };
        match token {
            Some(t) => out.push_str(&t),
            None => out.extend(&chars[i..j]),
        }
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::dql::testing::*;
    use serde_json::json;

    #[test]
    fn arithmetic_dates_and_durations() {
        assert_eq!(ev("1 + 2 * 3"), json!(7));
        assert_eq!(ev("(1 + 2) * 3"), json!(9));
        assert_eq!(ev("7 / 2"), json!(3.5));
        assert_eq!(ev("7 % 4"), json!(3));
        assert_eq!(ev("\"a\" + 1"), json!("a1"));
        assert_eq!(ev("1 = \"1\""), json!(false));
        assert_eq!(ev("null < date(today)"), json!(true));
        assert_eq!(ev("!true or 2 > 1"), json!(true));
        assert_eq!(ev("date(2024-01-10) - date(2024-01-01)"), json!("1 week, 2 days"));
        assert_eq!(ev("date(2024-03-15) - date(2024-01-01)"), json!("2 months, 2 weeks"));
        assert_eq!(ev("date(2024-01-01) - date(2024-01-02T06:00)"), json!("-1 day, -6 hours"));
        assert_eq!(ev("date(2024-01-31) + dur(1 month)"), json!("2024-02-29"));
        assert_eq!(ev("date(2024-01-05T10:30) + dur(1 day)"), json!("2024-01-06T10:30:00Z"));
        assert_eq!(ev("date(today)"), json!("2024-01-08"));
        assert_eq!(ev("date(now)"), json!("2024-01-08T12:00:00Z"));
        assert_eq!(ev("date(yesterday)"), json!("2024-01-07"));
        assert_eq!(ev("date(sow)"), json!("2024-01-08"));
        assert_eq!(ev("date(eom)"), json!("2024-01-31T23:59:59.999Z"));
        assert_eq!(ev("dur(3 days) + dur(50 hours)"), json!("5 days, 2 hours"));
        assert_eq!(ev("dur(90 minutes)"), json!("1 hour, 30 minutes"));
        assert_eq!(ev("dur(1 day) * 10"), json!("1 week, 3 days"));
        assert_eq!(ev("dur(2 hours).minutes"), json!(120));
        assert_eq!(ev("due - date(today)"), json!("2 days"));
        assert_eq!(ev("[1, 2] + [3]"), json!([1, 2, 3]));
        assert_eq!(ev("{a: 1, \"b c\": 2}[\"b c\"]"), json!(2));
        assert_eq!(ev("list(1, 2, 3)[1]"), json!(2));
    }
}
