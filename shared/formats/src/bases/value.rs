//! Values an expression evaluates to, their text and JSON, and JavaScript-like equality and
//! comparison, and the order rows sort in.

use std::cmp::Ordering;

use chrono::NaiveDateTime;
use regex::Regex;
use serde_json::{Map, Number, Value};

use super::dates::as_date;
use super::{MAX_JSON_DEPTH, Row};

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum DateKind {
    /// A calendar day.
    Day,
    /// A time with no zone.
    Naive,
    /// A UTC time.
    Utc,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Dur {
    pub(super) months: i64,
    pub(super) millis: i64,
}

#[derive(Debug, Clone)]
pub(super) enum V {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Date(NaiveDateTime, DateKind),
    Dur(Dur),
    List(Vec<V>),
    Obj(Map<String, Value>),
    Link(String, Option<String>),
    File,
    Regex(Regex, bool),
}

pub(super) type Eval = Result<V, String>;

pub(super) fn type_name(v: &V) -> &'static str {
    match v {
        V::Null => "null",
        V::Bool(_) => "boolean",
        V::Num(_) => "number",
        V::Str(_) => "string",
        V::Date(..) => "date",
        V::Dur(_) => "duration",
        V::List(_) => "list",
        V::Obj(_) => "object",
        V::Link(..) => "link",
        V::File => "file",
        V::Regex(..) => "regexp",
    }
}

pub(super) fn json_to_v(value: &Value, depth: usize) -> V {
    match value {
        _ if depth > MAX_JSON_DEPTH => V::Null,
        Value::Null => V::Null,
        Value::Bool(b) => V::Bool(*b),
        Value::Number(n) => V::Num(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => V::Str(s.clone()),
        Value::Array(items) => V::List(items.iter().map(|v| json_to_v(v, depth + 1)).collect()),
        Value::Object(map) => V::Obj(map.clone()),
    }
}

fn num_json(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 {
        Value::from(n as i64)
    } else {
        Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

fn date_text(d: &NaiveDateTime, kind: DateKind) -> String {
    match kind {
        DateKind::Day => d.format("%Y-%m-%d").to_string(),
        _ => {
            let mut s = d.format("%Y-%m-%dT%H:%M:%S").to_string();
            let millis = d.and_utc().timestamp_subsec_millis();
            if millis != 0 {
                s.push_str(&format!(".{millis:03}"));
            }
            if kind == DateKind::Utc {
                s.push('Z');
            }
            s
        }
    }
}

fn link_text(target: &str, display: &Option<String>) -> String {
    match display {
        Some(d) => format!("[[{target}|{d}]]"),
        None => format!("[[{target}]]"),
    }
}

pub(super) fn num_text(n: f64) -> String {
    if n.is_nan() {
        "NaN".to_string()
    } else if n.is_infinite() {
        if n > 0.0 { "Infinity".to_string() } else { "-Infinity".to_string() }
    } else if n == 0.0 {
        "0".to_string()
    } else {
        n.to_string()
    }
}

impl V {
    pub(super) fn truthy(&self) -> bool {
        match self {
            V::Null => false,
            V::Bool(b) => *b,
            V::Num(n) => *n != 0.0 && !n.is_nan(),
            V::Str(s) => !s.is_empty(),
            V::List(items) => !items.is_empty(),
            V::Obj(map) => !map.is_empty(),
            _ => true,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        match self {
            V::Null => true,
            V::Str(s) => s.is_empty(),
            V::List(items) => items.is_empty(),
            V::Obj(map) => map.is_empty(),
            _ => false,
        }
    }

    pub(super) fn text(&self, row: &Row) -> String {
        match self {
            V::Null => "null".to_string(),
            V::Bool(b) => b.to_string(),
            V::Num(n) => num_text(*n),
            V::Str(s) => s.clone(),
            V::Date(d, k) => date_text(d, *k),
            V::Dur(d) => format!("{}", d.months as f64 * 2_629_800_000.0 + d.millis as f64),
            V::List(items) => items.iter().map(|i| i.text(row)).collect::<Vec<_>>().join(","),
            V::Obj(map) => Value::Object(map.clone()).to_string(),
            V::Link(t, d) => link_text(t, d),
            V::File => row.path.clone(),
            V::Regex(re, g) => format!("/{}/{}", re.as_str(), if *g { "g" } else { "" }),
        }
    }

    pub(super) fn json(&self, row: &Row, depth: usize) -> Value {
        match self {
            _ if depth > MAX_JSON_DEPTH => Value::Null,
            V::Null => Value::Null,
            V::Bool(b) => Value::Bool(*b),
            V::Num(n) => num_json(*n),
            V::Str(s) => Value::String(s.clone()),
            V::Date(d, k) => Value::String(date_text(d, *k)),
            V::Dur(d) => num_json(d.months as f64 * 2_629_800_000.0 + d.millis as f64),
            V::List(items) => Value::Array(items.iter().map(|i| i.json(row, depth + 1)).collect()),
            V::Obj(map) => Value::Object(map.clone()),
            V::Link(t, d) => Value::String(link_text(t, d)),
            V::File => Value::String(link_text(&row.path, &None)),
            V::Regex(..) => Value::String(self.text(row)),
        }
    }
}

pub(super) fn to_num(v: &V) -> Option<f64> {
    match v {
        V::Num(n) => Some(*n),
        V::Str(s) => s.trim().parse::<f64>().ok().filter(|_| !s.trim().is_empty()),
        V::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        _ => None,
    }
}

/// Link targets compared loosely: without `[[ ]]`, alias, heading, a leading `/` or `.md`, case
/// aside; a target without a folder matches any note of that name.
pub(super) fn same_target(a: &str, b: &str) -> bool {
    fn norm(s: &str) -> String {
        let s = s.trim();
        let s = s.strip_prefix("[[").and_then(|s| s.strip_suffix("]]")).unwrap_or(s);
        let s = s.split(['|', '#']).next().unwrap_or("").trim().trim_start_matches('/');
        let s = s.strip_suffix(".md").unwrap_or(s);
        s.to_lowercase()
    }
    let (a, b) = (norm(a), norm(b));
    if a.is_empty() || b.is_empty() {
        return false;
    }
    a == b
        || (!a.contains('/') && b.rsplit('/').next() == Some(a.as_str()))
        || (!b.contains('/') && a.rsplit('/').next() == Some(b.as_str()))
}

pub(super) fn loose_eq(a: &V, b: &V, row: &Row) -> bool {
    match (a, b) {
        (V::Null, V::Null) => true,
        (V::Null, _) | (_, V::Null) => false,
        (V::Num(x), V::Num(y)) => x == y,
        (V::Num(x), V::Str(_)) | (V::Str(_), V::Num(x)) => {
            let s = if let V::Str(s) = a {
                s
            } else if let V::Str(s) = b {
                s
            } else {
                return false;
            };
            s.trim().parse::<f64>().ok().is_some_and(|y| !s.trim().is_empty() && y == *x)
        }
        (V::Str(x), V::Str(y)) => x == y,
        (V::Bool(x), V::Bool(y)) => x == y,
        (V::Date(..), _) | (_, V::Date(..)) => matches!((as_date(a), as_date(b)), (Some(x), Some(y)) if x.0 == y.0),
        (V::Dur(x), V::Dur(y)) => x == y,
        (V::Link(x, _), V::Link(y, _)) | (V::Link(x, _), V::Str(y)) | (V::Str(y), V::Link(x, _)) => same_target(x, y),
        (V::File, V::Link(x, _)) | (V::Link(x, _), V::File) | (V::File, V::Str(x)) | (V::Str(x), V::File) => {
            same_target(&row.path, x)
        }
        (V::File, V::File) => true,
        (V::List(x), V::List(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| loose_eq(a, b, row)),
        (V::Obj(x), V::Obj(y)) => x == y,
        _ => false,
    }
}

/// Ordering for `<` and friends: `None` when null is involved (the comparison is false).
pub(super) fn compare(a: &V, b: &V) -> Result<Option<Ordering>, String> {
    Ok(match (a, b) {
        (V::Null, _) | (_, V::Null) => None,
        (V::Num(x), V::Num(y)) => x.partial_cmp(y),
        (V::Str(x), V::Str(y)) => Some(x.cmp(y)),
        (V::Bool(x), V::Bool(y)) => Some(x.cmp(y)),
        (V::Date(..), _) | (_, V::Date(..)) => match (as_date(a), as_date(b)) {
            (Some(x), Some(y)) => Some(x.0.cmp(&y.0)),
            _ => return Err(format!("cannot compare {} with {}", type_name(a), type_name(b))),
        },
        (V::Num(_), V::Str(_)) | (V::Str(_), V::Num(_)) => match (to_num(a), to_num(b)) {
            (Some(x), Some(y)) => x.partial_cmp(&y),
            _ => return Err("cannot compare a number with text".to_string()),
        },
        (V::Dur(x), V::Dur(y)) => {
            let total = |d: &Dur| i128::from(d.months) * 2_629_800_000 + i128::from(d.millis);
            Some(total(x).cmp(&total(y)))
        }
        _ => return Err(format!("cannot compare {} with {}", type_name(a), type_name(b))),
    })
}

/// The order rows sort in: nulls (and empty strings) last whatever the direction; then numbers,
/// dates, text (case-insensitively), booleans, the rest.
pub(super) fn sort_cmp(a: &V, b: &V, desc: bool) -> Ordering {
    let missing = |v: &V| matches!(v, V::Null) || matches!(v, V::Str(s) if s.is_empty());
    match (missing(a), missing(b)) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        _ => {}
    }
    let rank = |v: &V| match v {
        V::Num(_) => 0,
        V::Date(..) => 1,
        V::Str(_) | V::Link(..) => 2,
        V::Bool(_) => 3,
        _ => 4,
    };
    let ordering = match (a, b) {
        (V::Num(x), V::Num(y)) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        (V::Date(x, _), V::Date(y, _)) => x.cmp(y),
        (V::Str(x) | V::Link(x, _), V::Str(y) | V::Link(y, _)) => {
            x.to_lowercase().cmp(&y.to_lowercase()).then_with(|| x.cmp(y))
        }
        (V::Bool(x), V::Bool(y)) => x.cmp(y),
        (V::List(x), V::List(y)) => {
            let mut ordering = Ordering::Equal;
            for (p, q) in x.iter().zip(y) {
                ordering = sort_cmp(p, q, false);
                if ordering != Ordering::Equal {
                    break;
                }
            }
            ordering.then(x.len().cmp(&y.len()))
        }
        _ => rank(a).cmp(&rank(b)),
    };
    if desc { ordering.reverse() } else { ordering }
}
