//! Literal readers shared by the query parser and the field typer, over chars: dates,
//! numbers, durations, links, strings and tags, and the character classes of identifiers.

use chrono::{NaiveDate, NaiveDateTime, NaiveTime, TimeDelta};

use super::dates::Dur;
use super::value::Link;

pub(super) fn is_emoji(c: char) -> bool {
    let u = c as u32;
    (0x1F000..=0x1FAFF).contains(&u)
        || (0x2600..=0x27BF).contains(&u)
        || (0x2B00..=0x2BFF).contains(&u)
        || (0x2300..=0x23FF).contains(&u)
        || u == 0xFE0F
        || u == 0x200D
}

pub(super) fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || is_emoji(c)
}

pub(super) fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-' || is_emoji(c)
}

pub(super) fn digits(s: &[char], i: usize, n: usize) -> Option<u32> {
    if i + n > s.len() || !s[i..i + n].iter().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s[i..i + n].iter().collect::<String>().parse().ok()
}

/// Dataview's date: `YYYY-MM[-DD[THH[:mm[:ss[.SSS]]]]][Z|+hh[:mm]|[zone]]`.
pub(super) fn read_date(s: &[char], start: usize) -> Option<(NaiveDateTime, usize)> {
    let year = digits(s, start, 4)? as i32;
    if s.get(start + 4) != Some(&'-') {
        return None;
    }
    let month = digits(s, start + 5, 2)?;
    let mut i = start + 7;
    let mut day = 1;
    let (mut hour, mut minute, mut second, mut milli) = (0, 0, 0, 0);
    if s.get(i) == Some(&'-')
        && let Some(d) = digits(s, i + 1, 2)
    {
        day = d;
        i += 3;
        if s.get(i) == Some(&'T')
            && let Some(h) = digits(s, i + 1, 2)
        {
            hour = h;
            i += 3;
            if s.get(i) == Some(&':')
                && let Some(m) = digits(s, i + 1, 2)
            {
                minute = m;
                i += 3;
                if s.get(i) == Some(&':')
                    && let Some(sec) = digits(s, i + 1, 2)
                {
                    second = sec;
                    i += 3;
                    if s.get(i) == Some(&'.')
                        && let Some(ms) = digits(s, i + 1, 3)
                    {
                        milli = ms;
                        i += 4;
                    }
                }
            }
        }
    }
    let date = NaiveDate::from_ymd_opt(year, month, day)?;
    let time = NaiveTime::from_hms_milli_opt(hour, minute, second, milli)?;
    let mut dt = date.and_time(time);
    match s.get(i) {
        Some('Z') => i += 1,
        Some(&sign) if sign == '+' || sign == '-' => {
            let mut j = i + 1;
            let mut n = 0;
            while n < 2 && s.get(j).is_some_and(|c| c.is_ascii_digit()) {
                j += 1;
                n += 1;
            }
            if n > 0 {
                let hours: i64 = s[i + 1..j].iter().collect::<String>().parse().ok()?;
                let mut minutes = 0;
                if s.get(j) == Some(&':')
                    && let Some(m) = digits(s, j + 1, 2)
                {
                    minutes = m as i64;
                    j += 3;
                }
                let offset = TimeDelta::minutes(hours * 60 + minutes);
                dt = if sign == '+' { dt - offset } else { dt + offset };
                i = j;
            }
        }
        Some('[') => {
            let mut j = i + 1;
            while s.get(j).is_some_and(|c| c.is_ascii_alphanumeric() || "+-/_".contains(*c)) {
                j += 1;
            }
            if j > i + 1 && s.get(j) == Some(&']') {
                i = j + 1;
            }
        }
        _ => {}
    }
    Some((dt, i))
}

const DUR_UNITS: &[(&str, usize)] = &[
    ("minutes", 5),
    ("seconds", 6),
    ("minute", 5),
    ("months", 1),
    ("second", 6),
    ("years", 0),
    ("month", 1),
    ("weeks", 2),
    ("hours", 4),
    ("year", 0),
    ("week", 2),
    ("days", 3),
    ("hour", 4),
    ("mins", 5),
    ("secs", 6),
    ("yrs", 0),
    ("mos", 1),
    ("wks", 2),
    ("hrs", 4),
    ("min", 5),
    ("sec", 6),
    ("day", 3),
    ("yr", 0),
    ("mo", 1),
    ("wk", 2),
    ("hr", 4),
    ("w", 2),
    ("d", 3),
    ("h", 4),
    ("m", 5),
    ("s", 6),
];

pub(super) fn read_number(s: &[char], start: usize) -> Option<(f64, usize)> {
    let mut i = start;
    if s.get(i) == Some(&'-') {
        i += 1;
    }
    let int_start = i;
    while s.get(i).is_some_and(|c| c.is_ascii_digit()) {
        i += 1;
    }
    if i == int_start {
        return None;
    }
    if s.get(i) == Some(&'.') && s.get(i + 1).is_some_and(|c| c.is_ascii_digit()) {
        i += 1;
        while s.get(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
    }
    s[start..i].iter().collect::<String>().parse().ok().map(|n| (n, i))
}

pub(super) fn skip_ws(s: &[char], mut i: usize) -> usize {
    while s.get(i).is_some_and(|c| c.is_whitespace()) {
        i += 1;
    }
    i
}

fn read_dur_part(s: &[char], start: usize) -> Option<(Dur, usize)> {
    let (n, i) = read_number(s, start)?;
    let i = skip_ws(s, i);
    for (name, unit) in DUR_UNITS {
        let len = name.chars().count();
        if i + len <= s.len() && s[i..i + len].iter().copied().eq(name.chars()) {
            return Some((Dur::unit(*unit, n), i + len));
        }
    }
    None
}

/// Dataview's duration: `3 days`, `4hr2min`, `1 week, 2 days`.
pub(super) fn read_duration(s: &[char], start: usize) -> Option<(Dur, usize)> {
    let (mut dur, mut i) = read_dur_part(s, start)?;
    loop {
        let mut j = skip_ws(s, i);
        if s.get(j) == Some(&',') {
            j = skip_ws(s, j + 1);
        }
        match read_dur_part(s, j) {
            Some((more, end)) => {
                dur = dur.plus(more);
                i = end;
            }
            None => return Some((dur, i)),
        }
    }
}

/// `[[inner]]` where inner holds no bracket.
pub(super) fn read_link(s: &[char], start: usize) -> Option<(Link, usize)> {
    if s.get(start) != Some(&'[') || s.get(start + 1) != Some(&'[') {
        return None;
    }
    let mut i = start + 2;
    loop {
        match s.get(i)? {
            ']' if s.get(i + 1) == Some(&']') => break,
            '[' | ']' => return None,
            _ => i += 1,
        }
    }
    let inner: String = s[start + 2..i].iter().collect();
    Some((parse_inner_link(&inner), i + 2))
}

fn parse_inner_link(raw: &str) -> Link {
    let mut split = None;
    let bytes: Vec<char> = raw.chars().collect();
    for (idx, c) in bytes.iter().enumerate() {
        if *c == '|' && (idx == 0 || bytes[idx - 1] != '\\') {
            split = Some(idx);
            break;
        }
    }
    let (target, display) = match split {
        Some(idx) => (bytes[..idx].iter().collect::<String>(), Some(bytes[idx + 1..].iter().collect::<String>())),
        None => (raw.to_string(), None),
    };
    let target = target.replace("\\|", "|");
    let (path, subpath) = match target.split_once('#') {
        Some((p, sub)) => (p.to_string(), Some(sub.trim_start_matches('^').to_string())),
        None => (target, None),
    };
    Link { path, display, subpath, embed: false }
}

pub(super) fn read_string(s: &[char], start: usize) -> Option<(String, usize)> {
    if s.get(start) != Some(&'"') {
        return None;
    }
    let mut out = String::new();
    let mut i = start + 1;
    loop {
        match s.get(i)? {
            '"' => return Some((out, i + 1)),
            '\\' => {
                let next = *s.get(i + 1)?;
                match next {
                    '"' => out.push('"'),
                    '\\' => out.push('\\'),
                    other => {
                        out.push('\\');
                        out.push(other);
                    }
                }
                i += 2;
            }
            c => {
                out.push(*c);
                i += 1;
            }
        }
    }
}

fn is_tag_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '/' || c == '-' || is_emoji(c)
}

pub(super) fn read_tag(s: &[char], start: usize) -> Option<(String, usize)> {
    if s.get(start) != Some(&'#') {
        return None;
    }
    let mut i = start + 1;
    while s.get(i).is_some_and(|c| is_tag_char(*c)) {
        i += 1;
    }
    Some((s[start..i].iter().collect(), i))
}

/// A whole string read as a date, else `None`.
pub(super) fn full_date(text: &str) -> Option<NaiveDateTime> {
    let s: Vec<char> = text.chars().collect();
    read_date(&s, 0).filter(|(_, end)| *end == s.len()).map(|(d, _)| d)
}

pub(super) fn full_duration(text: &str) -> Option<Dur> {
    let s: Vec<char> = text.chars().collect();
    read_duration(&s, 0).filter(|(_, end)| *end == s.len()).map(|(d, _)| d)
}

pub(super) fn full_embed_link(text: &str) -> Option<Link> {
    let s: Vec<char> = text.chars().collect();
    let (embed, start) = if s.first() == Some(&'!') { (true, 1) } else { (false, 0) };
    read_link(&s, start).filter(|(_, end)| *end == s.len()).map(|(mut l, _)| {
        l.embed = embed;
        l
    })
}

pub(super) fn starts_with_at(s: &[char], i: usize, word: &str) -> bool {
    let n = word.chars().count();
    i + n <= s.len() && s[i..i + n].iter().copied().eq(word.chars())
}
