//! Values an expression evaluates to: their type names, truthiness, Dataview's total order,
//! and how they print as text (`string()`) and as JSON (query output).

use std::cmp::Ordering;
use std::rc::Rc;

use chrono::{Datelike, NaiveDateTime};
use serde_json::Value;

use super::ast::Expr;
use super::dates::{Dur, MONTHS, is_midnight, iso};
use super::lexer::is_emoji;
use super::source::link_names;

#[derive(Debug, Clone)]
pub(super) enum V {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Date(NaiveDateTime),
    Dur(Dur),
    Link(Link),
    List(Vec<V>),
    Obj(Rc<Vec<(String, V)>>),
    Func(Rc<(Vec<String>, Expr)>),
}

impl V {
    pub(super) fn type_name(&self) -> &'static str {
        match self {
            V::Null => "null",
            V::Bool(_) => "boolean",
            V::Num(_) => "number",
            V::Str(_) => "string",
            V::Date(_) => "date",
            V::Dur(_) => "duration",
            V::Link(_) => "link",
            V::List(_) => "array",
            V::Obj(_) => "object",
            V::Func(_) => "function",
        }
    }

    pub(super) fn truthy(&self) -> bool {
        match self {
            V::Null => false,
            V::Bool(b) => *b,
            V::Num(n) => *n != 0.0 && !n.is_nan(),
            V::Str(s) => !s.is_empty(),
            V::Date(d) => d.and_utc().timestamp_millis() != 0,
            V::Dur(d) => d.millis() != 0.0,
            V::Link(l) => !l.path.is_empty(),
            V::List(l) => !l.is_empty(),
            V::Obj(o) => !o.is_empty(),
            V::Func(_) => true,
        }
    }
}

pub(super) fn obj_get<'v>(entries: &'v [(String, V)], key: &str) -> Option<&'v V> {
    if let Some((_, v)) = entries.iter().find(|(k, _)| k == key) {
        return Some(v);
    }
    let lower = key.to_lowercase();
    if let Some((_, v)) = entries.iter().find(|(k, _)| k.to_lowercase() == lower) {
        return Some(v);
    }
    let canon = canonical_name(key);
    entries.iter().find(|(k, _)| canonical_name(k) == canon).map(|(_, v)| v)
}

/// Dataview's sanitized field name: lowercase letters, digits, `_` and `-` kept, each run of
/// whitespace becomes `-`, emoji kept, anything else dropped.
fn canonical_name(name: &str) -> String {
    let mut out = String::new();
    let mut in_space = false;
    for c in name.chars() {
        if c.is_whitespace() {
            if !in_space {
                out.push('-');
            }
            in_space = true;
            continue;
        }
        in_space = false;
        if c.is_alphanumeric() || c == '_' || c == '-' {
            out.extend(c.to_lowercase());
        } else if is_emoji(c) {
            out.push(c);
        }
    }
    out
}

fn locale_cmp(a: &str, b: &str) -> Ordering {
    match a.to_lowercase().cmp(&b.to_lowercase()) {
        Ordering::Equal => b.cmp(a),
        o => o,
    }
}

/// Dataview's total order over values.
pub(super) fn compare(a: &V, b: &V) -> Ordering {
    match (a, b) {
        (V::Null, V::Null) => Ordering::Equal,
        (V::Null, _) => Ordering::Less,
        (_, V::Null) => Ordering::Greater,
        _ if a.type_name() != b.type_name() => a.type_name().cmp(b.type_name()),
        (V::Str(x), V::Str(y)) => locale_cmp(x, y),
        (V::Num(x), V::Num(y)) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        (V::Bool(x), V::Bool(y)) => x.cmp(y),
        (V::Date(x), V::Date(y)) => x.cmp(y),
        (V::Dur(x), V::Dur(y)) => x.millis().partial_cmp(&y.millis()).unwrap_or(Ordering::Equal),
        (V::Link(x), V::Link(y)) => {
            // An unresolved link (`[[Bob]]` where the vault was not given) still equals the
            // note it names (`People/Bob.md`).
            let same = link_names(&x.path, &y.path) || link_names(&y.path, &x.path);
            let path = if same { Ordering::Equal } else { locale_cmp(&x.path, &y.path) };
            path.then_with(|| match (&x.subpath, &y.subpath) {
                (None, None) => Ordering::Equal,
                (Some(_), None) => Ordering::Greater,
                (None, Some(_)) => Ordering::Less,
                (Some(p), Some(q)) => locale_cmp(p, q),
            })
        }
        (V::List(x), V::List(y)) => {
            for (p, q) in x.iter().zip(y) {
                let c = compare(p, q);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (V::Obj(x), V::Obj(y)) => {
            let mut kx: Vec<&String> = x.iter().map(|(k, _)| k).collect();
            let mut ky: Vec<&String> = y.iter().map(|(k, _)| k).collect();
            kx.sort();
            ky.sort();
            let keys = kx.cmp(&ky);
            if keys != Ordering::Equal {
                return keys;
            }
            for k in kx {
                let c = compare(obj_get(x, k).unwrap_or(&V::Null), obj_get(y, k).unwrap_or(&V::Null));
                if c != Ordering::Equal {
                    return c;
                }
            }
            Ordering::Equal
        }
        _ => Ordering::Equal,
    }
}

pub(super) fn fmt_num(n: f64) -> String {
    if n.is_nan() {
        "NaN".into()
    } else if n.is_infinite() {
        if n > 0.0 { "Infinity".into() } else { "-Infinity".into() }
    } else if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Link {
    pub(super) path: String,
    pub(super) display: Option<String>,
    pub(super) subpath: Option<String>,
    pub(super) embed: bool,
}

pub(super) fn basename(path: &str) -> &str {
    let file = path.rsplit('/').next().unwrap_or(path);
    match file.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem,
        _ => file,
    }
}

impl Link {
    pub(super) fn file(path: String) -> Self {
        Link { path, display: None, subpath: None, embed: false }
    }

    /// `[[path#sub|display]]`; `default_display` puts the file's name where no display is set.
    pub(super) fn markdown(&self, default_display: bool) -> String {
        let mut out = String::new();
        if self.embed {
            out.push('!');
        }
        out.push_str("[[");
        out.push_str(&self.path.replace('|', "\\|"));
        if let Some(sub) = &self.subpath {
            out.push('#');
            out.push_str(sub);
        }
        match (&self.display, default_display) {
            (Some(d), _) => {
                out.push('|');
                out.push_str(d);
            }
            (None, true) => {
                out.push('|');
                out.push_str(basename(&self.path));
            }
            (None, false) => {}
        }
        out.push_str("]]");
        out
    }
}

/// Dataview's `Values.toString` (default settings): what `string()`, `join()` and `+` produce.
pub(super) fn to_text(v: &V, nested: bool) -> String {
    match v {
        V::Null => "-".into(),
        V::Bool(b) => b.to_string(),
        V::Num(n) => fmt_num(*n),
        V::Str(s) => s.clone(),
        V::Date(d) => {
            let day = format!("{} {:02}, {}", MONTHS[d.month0() as usize], d.day(), d.year());
            if is_midnight(d) { day } else { format!("{} - {day}", d.format("%-I:%M %p")) }
        }
        V::Dur(d) => d.render(),
        V::Link(l) => l.markdown(false),
        V::List(items) => {
            let inner = items.iter().map(|i| to_text(i, true)).collect::<Vec<_>>().join(", ");
            if nested { format!("[{inner}]") } else { inner }
        }
        V::Obj(o) => {
            format!(
                "{{ {} }}",
                o.iter().map(|(k, v)| format!("{k}: {}", to_text(v, true))).collect::<Vec<_>>().join(", ")
            )
        }
        V::Func(_) => "<function>".into(),
    }
}

pub(super) fn to_json(v: &V) -> Value {
    match v {
        V::Null => Value::Null,
        V::Bool(b) => Value::Bool(*b),
        V::Num(n) => {
            if n.fract() == 0.0 && n.abs() < 9.0e15 {
                Value::from(*n as i64)
            } else {
                serde_json::Number::from_f64(*n).map(Value::Number).unwrap_or(Value::Null)
            }
        }
        V::Str(s) => Value::String(s.clone()),
        V::Date(d) => Value::String(iso(d)),
        V::Dur(d) => Value::String(d.render()),
        V::Link(l) => Value::String(l.markdown(true)),
        V::List(items) => Value::Array(items.iter().map(to_json).collect()),
        V::Obj(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), to_json(v))).collect()),
        V::Func(_) => Value::String("<function>".into()),
    }
}
