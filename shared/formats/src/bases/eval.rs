//! Evaluating expressions over one row: properties, `file` fields, formulas (cached per row),
//! operators, and the limits on depth and text built.

use std::cell::{Cell, RefCell};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::ops::Range;

use chrono::{DateTime, Datelike, NaiveDate, Timelike, Utc};
use serde_json::Value;

use super::dates::{as_date, parse_duration, shift};
use super::parser::{BinOp, Expr};
use super::run::{CFilter, Plan, Target};
use super::value::{DateKind, Dur, Eval, V, compare, json_to_v, loose_eq, to_num, type_name};
use super::{MAX_BUILT, MAX_EVAL_DEPTH, ROW_BUDGET, Row};

#[derive(Debug, Clone, Copy)]
pub(super) struct Clock {
    pub(super) now: DateTime<Utc>,
    pub(super) today: NaiveDate,
}

/// `value`, `index` and `acc` inside `filter`, `map` and `reduce`.
pub(super) struct Scope<'p> {
    pub(super) value: V,
    pub(super) index: V,
    pub(super) acc: Option<V>,
    pub(super) outer: Option<&'p Scope<'p>>,
}

impl Scope<'_> {
    fn get(&self, name: &str) -> Option<V> {
        match name {
            "value" => Some(self.value.clone()),
            "index" => Some(self.index.clone()),
            "acc" => self.acc.clone().or_else(|| self.outer.and_then(|o| o.get(name))),
            _ => None,
        }
    }
}

/// One row being evaluated.
pub(super) struct Env<'a> {
    pub(super) row: &'a Row,
    plan: &'a Plan,
    pub(super) clock: Clock,
    cache: RefCell<HashMap<String, Eval>>,
    depth: Cell<usize>,
    /// Text bytes built so far.
    spent: Cell<usize>,
}

pub(super) fn frontmatter<'r>(row: &'r Row, name: &str) -> Option<&'r Value> {
    row.properties
        .get(name)
        .or_else(|| row.properties.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v))
}

pub(super) fn arg(args: &[V], i: usize) -> &V {
    args.get(i).unwrap_or(&V::Null)
}

/// JavaScript's `slice` bounds.
pub(super) fn bounds(len: usize, start: &V, end: &V) -> Result<Range<usize>, String> {
    let at = |v: &V, default: usize| -> Result<usize, String> {
        match v {
            V::Null => Ok(default),
            V::Num(n) if n.is_finite() => {
                let n = n.trunc();
                Ok(if n < 0.0 { (len as f64 + n).max(0.0) as usize } else { (n as usize).min(len) })
            }
            other => Err(format!("slice takes numbers, not {}", type_name(other))),
        }
    };
    let (s, e) = (at(start, 0)?, at(end, len)?);
    Ok(s..e.max(s))
}

impl<'a> Env<'a> {
    pub(super) fn new(row: &'a Row, plan: &'a Plan, clock: Clock) -> Self {
        Env { row, plan, clock, cache: RefCell::new(HashMap::new()), depth: Cell::new(0), spent: Cell::new(0) }
    }

    /// Built text, charged to the row's budget.
    pub(super) fn built(&self, s: String) -> Eval {
        let spent = self.spent.get().saturating_add(s.len());
        self.spent.set(spent);
        if s.len() > MAX_BUILT || spent > ROW_BUDGET {
            return Err("the text is too long".to_string());
        }
        Ok(V::Str(s))
    }

    pub(super) fn matches(&self) -> bool {
        self.plan.filters.iter().all(|f| self.filter(f).unwrap_or(false))
    }

    fn filter(&self, f: &CFilter) -> Result<bool, String> {
        match f {
            CFilter::Expr(e) => Ok(self.eval(e, None)?.truthy()),
            CFilter::And(items) => {
                for item in items {
                    if !self.filter(item)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            CFilter::Or(items) => {
                if items.is_empty() {
                    return Ok(true);
                }
                for item in items {
                    if self.filter(item)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            CFilter::Not(items) => {
                for item in items {
                    if self.filter(item)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
        }
    }

    pub(super) fn target(&self, target: &Target) -> Option<V> {
        match target {
            Target::Note(name) => Some(frontmatter(self.row, name).map_or(V::Null, |v| json_to_v(v, 0))),
            Target::Expr(e) => self.eval(e, None).ok(),
        }
    }

    pub(super) fn output(&self, target: &Target) -> Value {
        match target {
            Target::Note(name) => frontmatter(self.row, name).cloned().unwrap_or(Value::Null),
            Target::Expr(e) => self.eval(e, None).map_or(Value::Null, |v| v.json(self.row, 0)),
        }
    }

    fn formula(&self, name: &str) -> Eval {
        if let Some(hit) = self.cache.borrow().get(name) {
            return hit.clone();
        }
        let Some(expr) = self.plan.formulas.get(name) else { return Ok(V::Null) };
        let result = self.eval(expr, None);
        self.cache.borrow_mut().insert(name.to_string(), result.clone());
        result
    }

    pub(super) fn eval(&self, e: &Expr, scope: Option<&Scope>) -> Eval {
        let depth = self.depth.get() + 1;
        if depth > MAX_EVAL_DEPTH {
            return Err("evaluation nested too deeply".to_string());
        }
        self.depth.set(depth);
        let result = self.eval_inner(e, scope);
        self.depth.set(depth - 1);
        result
    }

    fn eval_inner(&self, e: &Expr, scope: Option<&Scope>) -> Eval {
        match e {
            Expr::Lit(v) => Ok(v.clone()),
            Expr::List(items) => Ok(V::List(items.iter().map(|i| self.eval(i, scope)).collect::<Result<_, _>>()?)),
            Expr::Regex(re, g) => Ok(V::Regex(re.clone(), *g)),
            Expr::Prop(name) => {
                if let Some(v) = scope.and_then(|s| s.get(name)) {
                    return Ok(v);
                }
                Ok(frontmatter(self.row, name).map_or(V::Null, |v| json_to_v(v, 0)))
            }
            Expr::Note => Ok(V::Obj(self.row.properties.clone())),
            Expr::File => Ok(V::File),
            Expr::FileField(name) => self.file_field(name),
            Expr::Formula(name) => self.formula(name),
            Expr::Member(base, name) => {
                let v = self.eval(base, scope)?;
                self.member(&v, name)
            }
            Expr::Index(base, index) => {
                let v = self.eval(base, scope)?;
                let i = self.eval(index, scope)?;
                match (&v, &i) {
                    (V::Null, _) => Ok(V::Null),
                    (V::List(items), V::Num(n)) => {
                        let n = if *n < 0.0 { items.len() as f64 + n.trunc() } else { n.trunc() };
                        Ok(if n >= 0.0 { items.get(n as usize).cloned().unwrap_or(V::Null) } else { V::Null })
                    }
                    (V::Str(s), V::Num(n)) if *n >= 0.0 => {
                        Ok(s.chars().nth(*n as usize).map_or(V::Null, |c| V::Str(c.to_string())))
                    }
                    (V::Obj(_) | V::File, V::Str(k)) => self.member(&v, k),
                    _ => Err(format!("cannot index {} with {}", type_name(&v), type_name(&i))),
                }
            }
            Expr::Call(name, args) => self.call(name, args, scope),
            Expr::Method(base, name, args) => {
                let receiver = self.eval(base, scope)?;
                match name.as_str() {
                    "filter" | "map" | "reduce" => self.lambda(&receiver, name, args, scope),
                    _ => {
                        let args = args.iter().map(|a| self.eval(a, scope)).collect::<Result<Vec<_>, _>>()?;
                        self.method(&receiver, name, &args)
                    }
                }
            }
            Expr::Not(inner) => Ok(V::Bool(!self.eval(inner, scope)?.truthy())),
            Expr::Neg(inner) => match self.eval(inner, scope)? {
                V::Null => Ok(V::Null),
                V::Dur(d) => Ok(V::Dur(Dur { months: d.months.saturating_neg(), millis: d.millis.saturating_neg() })),
                v => to_num(&v).map(|n| V::Num(-n)).ok_or_else(|| format!("cannot negate {}", type_name(&v))),
            },
            Expr::And(a, b) => {
                let l = self.eval(a, scope)?;
                if l.truthy() { self.eval(b, scope) } else { Ok(l) }
            }
            Expr::Or(a, b) => {
                let l = self.eval(a, scope)?;
                if l.truthy() { Ok(l) } else { self.eval(b, scope) }
            }
            Expr::Cond(c, a, b) => {
                if self.eval(c, scope)?.truthy() {
                    self.eval(a, scope)
                } else {
                    self.eval(b, scope)
                }
            }
            Expr::Binary(op, a, b) => {
                let l = self.eval(a, scope)?;
                let r = self.eval(b, scope)?;
                self.binary(*op, &l, &r)
            }
            Expr::Unsupported(what) => Err(format!("{what} is not evaluated here")),
        }
    }

    fn binary(&self, op: BinOp, l: &V, r: &V) -> Eval {
        let row = self.row;
        match op {
            BinOp::Eq => return Ok(V::Bool(loose_eq(l, r, row))),
            BinOp::Ne => return Ok(V::Bool(!loose_eq(l, r, row))),
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                let ordering = compare(l, r)?;
                return Ok(V::Bool(ordering.is_some_and(|o| match op {
                    BinOp::Lt => o == Ordering::Less,
                    BinOp::Le => o != Ordering::Greater,
                    BinOp::Gt => o == Ordering::Greater,
                    _ => o != Ordering::Less,
                })));
            }
            _ => {}
        }
        if matches!(l, V::Null) || matches!(r, V::Null) {
            return Ok(V::Null);
        }
        let as_dur = |v: &V| match v {
            V::Dur(d) => Some(*d),
            V::Str(s) => parse_duration(s),
            _ => None,
        };
        match (op, l, r) {
            (BinOp::Add | BinOp::Sub, V::Date(d, k), _) => {
                let sign = if op == BinOp::Add { 1 } else { -1 };
                if let Some(dur) = as_dur(r) {
                    return shift(*d, *k, dur, sign);
                }
                if op == BinOp::Sub
                    && let Some((other, _)) = as_date(r)
                {
                    return Ok(V::Num((*d - other).num_milliseconds() as f64));
                }
                if op == BinOp::Add
                    && let V::Str(s) = r
                {
                    return self.built(format!("{}{s}", l.text(row)));
                }
                Err(format!("cannot {} a date and {}", if sign == 1 { "add" } else { "subtract" }, type_name(r)))
            }
            (BinOp::Add, V::Dur(d), V::Date(date, k)) => shift(*date, *k, *d, 1),
            (BinOp::Add | BinOp::Sub, V::Str(_), _) if as_date(l).is_some() && as_dur(r).is_some() => {
                let (date, kind) = as_date(l).ok_or("not a date")?;
                let dur = as_dur(r).ok_or("not a duration")?;
                shift(date, kind, dur, if op == BinOp::Add { 1 } else { -1 })
            }
            (BinOp::Sub, V::Str(_), V::Date(..)) if as_date(l).is_some() => {
                let (a, _) = as_date(l).ok_or("not a date")?;
                let (b, _) = as_date(r).ok_or("not a date")?;
                Ok(V::Num((a - b).num_milliseconds() as f64))
            }
            (BinOp::Add | BinOp::Sub, V::Dur(a), _) if as_dur(r).is_some() => {
                let b = as_dur(r).ok_or("not a duration")?;
                let sign = if op == BinOp::Add { 1 } else { -1 };
                Ok(V::Dur(Dur {
                    months: b
                        .months
                        .checked_mul(sign)
                        .and_then(|m| a.months.checked_add(m))
                        .ok_or("duration out of range")?,
                    millis: b
                        .millis
                        .checked_mul(sign)
                        .and_then(|m| a.millis.checked_add(m))
                        .ok_or("duration out of range")?,
                }))
            }
            (BinOp::Mul | BinOp::Div, V::Dur(a), V::Num(n)) => {
                let f = if op == BinOp::Mul { *n } else { 1.0 / n };
                let millis = (a.millis as f64 + a.months as f64 * 2_629_800_000.0) * f;
                if !millis.is_finite() || millis.abs() > 1e16 {
                    return Err("duration out of range".to_string());
                }
                if a.months == 0 || (a.months as f64 * f).fract() == 0.0 {
                    Ok(V::Dur(Dur {
                        months: (a.months as f64 * f) as i64,
                        millis: (a.millis as f64 * f).round() as i64,
                    }))
                } else {
                    Ok(V::Dur(Dur { months: 0, millis: millis.round() as i64 }))
                }
            }
            (BinOp::Add, V::Str(a), _) => self.built(format!("{a}{}", r.text(row))),
            (BinOp::Add, _, V::Str(b)) if !matches!(l, V::List(_) | V::Obj(_)) => {
                self.built(format!("{}{b}", l.text(row)))
            }
            _ => {
                let (Some(x), Some(y)) = (to_num(l), to_num(r)) else {
                    return Err(format!("cannot do arithmetic with {} and {}", type_name(l), type_name(r)));
                };
                if matches!(l, V::Bool(_)) || matches!(r, V::Bool(_)) {
                    return Err("cannot do arithmetic with booleans".to_string());
                }
                Ok(V::Num(match op {
                    BinOp::Add => x + y,
                    BinOp::Sub => x - y,
                    BinOp::Mul => x * y,
                    BinOp::Div => x / y,
                    _ => x % y,
                }))
            }
        }
    }

    fn file_field(&self, name: &str) -> Eval {
        let row = self.row;
        let file_name = row.path.rsplit('/').next().unwrap_or("");
        let split = file_name.rfind('.').filter(|i| *i > 0);
        Ok(match name {
            "name" => V::Str(file_name.to_string()),
            "basename" => V::Str(split.map_or(file_name, |i| &file_name[..i]).to_string()),
            "path" => V::Str(row.path.clone()),
            "folder" => V::Str(row.path.rsplit_once('/').map_or("/", |(f, _)| f).to_string()),
            "ext" => V::Str(split.map_or("", |i| &file_name[i + 1..]).to_string()),
            "size" => V::Num(row.size as f64),
            "ctime" => row.ctime.map_or(V::Null, |t| V::Date(t.naive_utc(), DateKind::Utc)),
            "mtime" => V::Date(row.mtime.naive_utc(), DateKind::Utc),
            "tags" => V::List(row.tags.iter().map(|t| V::Str(t.trim_start_matches('#').to_string())).collect()),
            "links" => V::List(row.links.iter().map(|l| V::Link(l.clone(), None)).collect()),
            "properties" => V::Obj(row.properties.clone()),
            other => return Err(format!("file.{other} is not known")),
        })
    }

    fn member(&self, v: &V, name: &str) -> Eval {
        if let Some((d, _)) = match v {
            V::Date(..) => as_date(v),
            V::Str(_) if name != "length" => as_date(v),
            _ => None,
        } {
            return Ok(V::Num(match name {
                "year" => d.year() as f64,
                "month" => d.month() as f64,
                "day" => d.day() as f64,
                "hour" => d.hour() as f64,
                "minute" => d.minute() as f64,
                "second" => d.second() as f64,
                "millisecond" => d.and_utc().timestamp_subsec_millis() as f64,
                _ => return Err(format!("a date has no field {name}")),
            }));
        }
        match (v, name) {
            (V::Null, _) => Ok(V::Null),
            (V::Str(s), "length") => Ok(V::Num(s.chars().count() as f64)),
            (V::List(items), "length") => Ok(V::Num(items.len() as f64)),
            (V::Obj(map), key) => Ok(map
                .get(key)
                .or_else(|| map.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v))
                .map_or(V::Null, |v| json_to_v(v, 0))),
            (V::File, field) => self.file_field(field),
            _ => Err(format!("{} has no field {name}", type_name(v))),
        }
    }
}
