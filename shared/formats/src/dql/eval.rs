//! Evaluation: the context a query runs in (the pages, link resolution, `this`, today and now),
//! pages and tasks as values, and expressions evaluated over a row.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

use chrono::{DateTime, Datelike, Days, Months, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use otc_errors::echo;
use regex::{Regex, RegexBuilder};
use serde_json::Value;

use super::ast::{BinOp, Expr, Lit};
use super::dates::{UNITS, date_diff, date_field, date_plus, day_in_name};
use super::lexer::{full_date, full_duration, full_embed_link};
use super::value::{Link, V, basename, compare, obj_get, to_text};
use super::{Page, TaskItem};

pub(super) struct Resolver {
    by_path: HashMap<String, usize>,
    by_name: HashMap<String, usize>,
}

impl Resolver {
    fn new(pages: &[Page]) -> Self {
        let mut by_path = HashMap::new();
        let mut by_name: HashMap<String, usize> = HashMap::new();
        for (i, page) in pages.iter().enumerate() {
            let lower = page.path.to_lowercase();
            by_path.entry(lower.strip_suffix(".md").unwrap_or(&lower).to_string()).or_insert(i);
            by_path.entry(lower.clone()).or_insert(i);
            let name = basename(&lower).to_string();
            match by_name.get(&name) {
                Some(&j) if pages[j].path.len() <= page.path.len() => {}
                _ => {
                    by_name.insert(name, i);
                }
            }
        }
        Resolver { by_path, by_name }
    }

    pub(super) fn resolve(&self, target: &str) -> Option<usize> {
        let t = target.trim().to_lowercase();
        let t = t.strip_suffix(".md").unwrap_or(&t);
        self.by_path.get(t).or_else(|| if t.contains('/') { None } else { self.by_name.get(t) }).copied()
    }
}

pub(super) struct Ctx<'a> {
    pub(super) pages: &'a [Page],
    pub(super) resolver: Resolver,
    this: V,
    today: NaiveDate,
    now: NaiveDateTime,
    cache: RefCell<HashMap<usize, V>>,
    regexes: RefCell<HashMap<String, Rc<Regex>>>,
}

pub(super) type Locals = [(String, V)];

impl<'a> Ctx<'a> {
    pub(super) fn new(pages: &'a [Page], this: Option<&Page>, today: NaiveDate, now: DateTime<Utc>) -> Self {
        let mut ctx = Ctx {
            pages,
            resolver: Resolver::new(pages),
            this: V::Obj(Rc::new(Vec::new())),
            today,
            now: now.naive_utc(),
            cache: RefCell::new(HashMap::new()),
            regexes: RefCell::new(HashMap::new()),
        };
        if let Some(page) = this {
            ctx.this = ctx.build_page(page);
        }
        ctx
    }

    pub(super) fn link(&self, mut link: Link) -> Link {
        if let Some(i) = self.resolver.resolve(&link.path) {
            link.path = self.pages[i].path.clone();
        }
        link
    }

    fn json(&self, value: &Value) -> V {
        match value {
            Value::Null => V::Null,
            Value::Bool(b) => V::Bool(*b),
            Value::Number(n) => V::Num(n.as_f64().unwrap_or(0.0)),
            Value::String(s) => {
                if let Some(d) = full_date(s) {
                    V::Date(d)
                } else if let Some(d) = full_duration(s) {
                    V::Dur(d)
                } else if let Some(l) = full_embed_link(s) {
                    V::Link(self.link(l))
                } else {
                    V::Str(s.clone())
                }
            }
            Value::Array(items) => V::List(items.iter().map(|v| self.json(v)).collect()),
            Value::Object(map) => V::Obj(Rc::new(map.iter().map(|(k, v)| (k.clone(), self.json(v))).collect())),
        }
    }

    pub(super) fn page(&self, i: usize) -> V {
        if let Some(v) = self.cache.borrow().get(&i) {
            return v.clone();
        }
        let v = self.build_page(&self.pages[i]);
        self.cache.borrow_mut().insert(i, v.clone());
        v
    }

    pub(super) fn task(&self, page: &Page, task: &TaskItem) -> Vec<(String, V)> {
        let mut entries = vec![
            ("text".to_string(), V::Str(task.text.clone())),
            ("status".to_string(), V::Str(task.status.to_string())),
            ("checked".to_string(), V::Bool(task.status != ' ')),
            ("completed".to_string(), V::Bool(task.completed)),
            ("fullyCompleted".to_string(), V::Bool(task.completed)),
            ("line".to_string(), V::Num(task.line as f64)),
            (
                "tags".to_string(),
                V::List(task.tags.iter().map(|t| V::Str(format!("#{}", t.trim_start_matches('#')))).collect()),
            ),
            ("path".to_string(), V::Str(page.path.clone())),
            ("link".to_string(), V::Link(Link::file(page.path.clone()))),
            ("task".to_string(), V::Bool(true)),
        ];
        for (k, v) in &task.fields {
            if !entries.iter().any(|(e, _)| e == k) {
                entries.push((k.clone(), self.json(v)));
            }
        }
        entries
    }

    fn build_page(&self, page: &Page) -> V {
        let name = basename(&page.path).to_string();
        let file_name = page.path.rsplit('/').next().unwrap_or(&page.path);
        let ext = file_name.rsplit_once('.').map(|(_, e)| e.to_string()).unwrap_or_default();
        let folder = page.path.rsplit_once('/').map(|(f, _)| f.to_string()).unwrap_or_default();
        let mut tags: Vec<V> = Vec::new();
        let mut seen = BTreeSet::new();
        for tag in &page.tags {
            let tag = tag.trim_start_matches('#');
            let mut prefix = String::new();
            for part in tag.split('/') {
                if !prefix.is_empty() {
                    prefix.push('/');
                }
                prefix.push_str(part);
                if seen.insert(prefix.clone()) {
                    tags.push(V::Str(format!("#{prefix}")));
                }
            }
        }
        let date_of = |d: DateTime<Utc>| V::Date(d.naive_utc());
        let day_of = |d: DateTime<Utc>| V::Date(d.date_naive().and_time(NaiveTime::MIN));
        let day = day_in_name(&name).map(V::Date).or_else(|| {
            page.fields.iter().find(|(k, _)| k.eq_ignore_ascii_case("date")).and_then(|(_, v)| match self.json(v) {
                V::Date(d) => Some(V::Date(d)),
                _ => None,
            })
        });
        let links =
            |paths: &[String]| V::List(paths.iter().map(|p| V::Link(self.link(Link::file(p.clone())))).collect());
        let file = vec![
            ("path".to_string(), V::Str(page.path.clone())),
            ("folder".to_string(), V::Str(folder)),
            ("name".to_string(), V::Str(name)),
            ("ext".to_string(), V::Str(ext)),
            ("link".to_string(), V::Link(Link::file(page.path.clone()))),
            ("size".to_string(), V::Num(page.size as f64)),
            ("ctime".to_string(), page.ctime.map_or(V::Null, date_of)),
            ("cday".to_string(), page.ctime.map_or(V::Null, day_of)),
            ("mtime".to_string(), date_of(page.mtime)),
            ("mday".to_string(), day_of(page.mtime)),
            ("tags".to_string(), V::List(tags)),
            (
                "etags".to_string(),
                V::List(page.tags.iter().map(|t| V::Str(format!("#{}", t.trim_start_matches('#')))).collect()),
            ),
            ("inlinks".to_string(), links(&page.inlinks)),
            ("outlinks".to_string(), links(&page.outlinks)),
            ("aliases".to_string(), V::List(page.aliases.iter().map(|a| V::Str(a.clone())).collect())),
            ("tasks".to_string(), V::List(page.tasks.iter().map(|t| V::Obj(Rc::new(self.task(page, t)))).collect())),
            ("day".to_string(), day.unwrap_or(V::Null)),
            ("starred".to_string(), V::Bool(false)),
        ];
        let mut entries = vec![("file".to_string(), V::Obj(Rc::new(file)))];
        for (k, v) in &page.fields {
            if k != "file" {
                entries.push((k.clone(), self.json(v)));
            }
        }
        V::Obj(Rc::new(entries))
    }

    pub(super) fn shorthand(&self, name: &str) -> NaiveDateTime {
        let today = self.today.and_time(NaiveTime::MIN);
        let end_of = |d: NaiveDate| d.and_hms_milli_opt(23, 59, 59, 999).expect("valid time");
        let week_start = self.today - Days::new(self.today.weekday().num_days_from_monday() as u64);
        let month_start = self.today.with_day(1).expect("day 1");
        let year_start = NaiveDate::from_ymd_opt(self.today.year(), 1, 1).expect("January 1");
        match name {
            "now" => self.now,
            "yesterday" => today - Days::new(1),
            "tomorrow" => today + Days::new(1),
            "sow" | "start-of-week" => week_start.and_time(NaiveTime::MIN),
            "eow" | "end-of-week" => end_of(week_start + Days::new(6)),
            "som" | "start-of-month" => month_start.and_time(NaiveTime::MIN),
            "eom" | "end-of-month" => end_of(month_start + Months::new(1) - Days::new(1)),
            "soy" | "start-of-year" => year_start.and_time(NaiveTime::MIN),
            "eoy" | "end-of-year" => end_of(NaiveDate::from_ymd_opt(self.today.year(), 12, 31).expect("December 31")),
            _ => today,
        }
    }

    pub(super) fn eval(&self, e: &Expr, row: &V, locals: &Locals) -> Result<V, String> {
        match e {
            Expr::Lit(lit) => Ok(match lit {
                Lit::Null => V::Null,
                Lit::Bool(b) => V::Bool(*b),
                Lit::Num(n) => V::Num(*n),
                Lit::Str(s) => V::Str(s.clone()),
                Lit::Date(d) => V::Date(*d),
                Lit::DateShorthand(s) => V::Date(self.shorthand(s)),
                Lit::Dur(d) => V::Dur(*d),
                Lit::Link(l) => V::Link(self.link(l.clone())),
            }),
            Expr::Var(name) => Ok(self.var(name, row, locals)),
            Expr::Index(base, key) => {
                let base = self.eval(base, row, locals)?;
                let key = self.eval(key, row, locals)?;
                Ok(self.index(&base, &key))
            }
            Expr::Call(name, args) => {
                let values = args.iter().map(|a| self.eval(a, row, locals)).collect::<Result<Vec<_>, _>>()?;
                self.call(name, values, row, locals)
            }
            Expr::Not(inner) => Ok(V::Bool(!self.eval(inner, row, locals)?.truthy())),
            Expr::Bin(a, BinOp::And, b) => {
                Ok(V::Bool(self.eval(a, row, locals)?.truthy() && self.eval(b, row, locals)?.truthy()))
            }
            Expr::Bin(a, BinOp::Or, b) => {
                Ok(V::Bool(self.eval(a, row, locals)?.truthy() || self.eval(b, row, locals)?.truthy()))
            }
            Expr::Bin(a, op, b) => binop(*op, self.eval(a, row, locals)?, self.eval(b, row, locals)?),
            Expr::List(items) => {
                Ok(V::List(items.iter().map(|i| self.eval(i, row, locals)).collect::<Result<Vec<_>, _>>()?))
            }
            Expr::Object(entries) => Ok(V::Obj(Rc::new(
                entries
                    .iter()
                    .map(|(k, e)| Ok((k.clone(), self.eval(e, row, locals)?)))
                    .collect::<Result<Vec<_>, String>>()?,
            ))),
            Expr::Lambda(params, body) => Ok(V::Func(Rc::new((params.clone(), (**body).clone())))),
        }
    }

    fn var(&self, name: &str, row: &V, locals: &Locals) -> V {
        if let Some((_, v)) = locals.iter().rev().find(|(k, _)| k == name) {
            return v.clone();
        }
        if name == "row" {
            return row.clone();
        }
        if let V::Obj(o) = row
            && let Some(v) = obj_get(o, name)
        {
            return v.clone();
        }
        if name == "this" {
            return self.this.clone();
        }
        V::Null
    }

    pub(super) fn index(&self, base: &V, key: &V) -> V {
        match (base, key) {
            (V::Obj(o), V::Str(k)) => obj_get(o, k).cloned().unwrap_or(V::Null),
            (V::Link(l), V::Str(_)) => match self.resolver.resolve(&l.path) {
                Some(i) => self.index(&self.page(i), key),
                None => V::Null,
            },
            (V::List(items), V::Num(n)) => {
                if *n >= 0.0 && n.fract() == 0.0 {
                    items.get(*n as usize).cloned().unwrap_or(V::Null)
                } else {
                    V::Null
                }
            }
            (V::List(items), V::Str(_)) => V::List(items.iter().map(|i| self.index(i, key)).collect()),
            (V::Str(s), V::Num(n)) if *n >= 0.0 => {
                s.chars().nth(*n as usize).map_or(V::Null, |c| V::Str(c.to_string()))
            }
            (V::Date(d), V::Str(k)) => date_field(d, k),
            (V::Dur(d), V::Str(k)) => {
                let unit = UNITS.iter().position(|u| k.trim_end_matches('s') == *u);
                unit.map_or(V::Null, |u| V::Num(d.as_unit(u)))
            }
            _ => V::Null,
        }
    }

    pub(super) fn apply(&self, f: &V, args: Vec<V>, row: &V, locals: &Locals) -> Result<V, String> {
        let V::Func(func) = f else { return Err(format!("expected a function (lambda), got {}", f.type_name())) };
        let (params, body) = func.as_ref();
        let mut scope: Vec<(String, V)> = locals.to_vec();
        let mut args = args.into_iter();
        for p in params {
            scope.push((p.clone(), args.next().unwrap_or(V::Null)));
        }
        self.eval(body, row, &scope)
    }

    pub(super) fn regex(&self, pattern: &str) -> Result<Rc<Regex>, String> {
        if let Some(r) = self.regexes.borrow().get(pattern) {
            return Ok(r.clone());
        }
        let r = Rc::new(
            RegexBuilder::new(pattern)
                .size_limit(1 << 20)
                .build()
                .map_err(|_| format!("invalid regular expression '{}'", echo(pattern)))?,
        );
        self.regexes.borrow_mut().insert(pattern.to_string(), r.clone());
        Ok(r)
    }
}

pub(super) fn binop(op: BinOp, a: V, b: V) -> Result<V, String> {
    use V::*;
    let cmp = || compare(&a, &b);
    let result = match op {
        BinOp::Eq => Bool(cmp() == Ordering::Equal),
        BinOp::Ne => Bool(cmp() != Ordering::Equal),
        BinOp::Lt => Bool(cmp() == Ordering::Less),
        BinOp::Le => Bool(cmp() != Ordering::Greater),
        BinOp::Gt => Bool(cmp() == Ordering::Greater),
        BinOp::Ge => Bool(cmp() != Ordering::Less),
        BinOp::And => Bool(a.truthy() && b.truthy()),
        BinOp::Or => Bool(a.truthy() || b.truthy()),
        BinOp::Add => match (&a, &b) {
            (Num(x), Num(y)) => Num(x + y),
            (Str(x), y) => Str(format!("{x}{}", to_text(y, false))),
            (x, Str(y)) => Str(format!("{}{y}", to_text(x, false))),
            (Date(d), Dur(u)) | (Dur(u), Date(d)) => Date(date_plus(*d, u)?),
            (Dur(x), Dur(y)) => Dur(x.plus(*y).normalize()),
            (List(x), List(y)) => List(x.iter().chain(y).cloned().collect()),
            (Obj(x), Obj(y)) => {
                let mut merged: Vec<(String, V)> = x.as_ref().clone();
                for (k, v) in y.iter() {
                    match merged.iter_mut().find(|(mk, _)| mk == k) {
                        Some(slot) => slot.1 = v.clone(),
                        None => merged.push((k.clone(), v.clone())),
                    }
                }
                Obj(Rc::new(merged))
            }
            (Null, Null) | (Date(_), Null) | (Null, Date(_)) => Null,
            _ => return no_op(op, &a, &b),
        },
        BinOp::Sub => match (&a, &b) {
            (Num(x), Num(y)) => Num(x - y),
            (Date(x), Date(y)) => Dur(date_diff(*x, *y)?),
            (Date(d), Dur(u)) => Date(date_plus(*d, &u.scale(-1.0))?),
            (Dur(x), Dur(y)) => Dur(x.plus(y.scale(-1.0)).normalize()),
            (Null, Null) | (Date(_), Null) | (Null, Date(_)) => Null,
            _ => return no_op(op, &a, &b),
        },
        BinOp::Mul => match (&a, &b) {
            (Num(x), Num(y)) => Num(x * y),
            (Str(s), Num(n)) | (Num(n), Str(s)) => {
                Str(if *n < 0.0 { String::new() } else { s.repeat((*n as usize).min(100_000)) })
            }
            (Dur(d), Num(n)) | (Num(n), Dur(d)) => Dur(d.scale(*n).normalize()),
            (Null, Null) => Null,
            _ => return no_op(op, &a, &b),
        },
        BinOp::Div => match (&a, &b) {
            (Num(x), Num(y)) => Num(x / y),
            (Dur(d), Num(n)) => Dur(d.scale(1.0 / n).normalize()),
            (Null, Null) => Null,
            _ => return no_op(op, &a, &b),
        },
        BinOp::Mod => match (&a, &b) {
            (Num(x), Num(y)) => Num(x % y),
            (Null, Null) => Null,
            _ => return no_op(op, &a, &b),
        },
    };
    Ok(result)
}

fn no_op(op: BinOp, a: &V, b: &V) -> Result<V, String> {
    Err(format!("no implementation found for '{} {} {}'", a.type_name(), op.text(), b.type_name()))
}

#[cfg(test)]
mod tests {
    use crate::dql::eval_field;
    use crate::dql::testing::*;
    use serde_json::{Value, json};

    #[test]
    fn file_fields() {
        assert_eq!(ev("file.name"), json!("Alpha"));
        assert_eq!(ev("file.path"), json!("Projects/Alpha.md"));
        assert_eq!(ev("file.folder"), json!("Projects"));
        assert_eq!(ev("file.ext"), json!("md"));
        assert_eq!(ev("file.link"), json!("[[Projects/Alpha.md|Alpha]]"));
        assert_eq!(ev("file.size"), json!(100));
        assert_eq!(ev("file.mtime"), json!("2024-01-04T10:00:00Z"));
        assert_eq!(ev("file.mday"), json!("2024-01-04"));
        assert_eq!(ev("file.cday"), json!("2023-01-01"));
        assert_eq!(ev("file.tags"), json!(["#project", "#project/alpha", "#work"]));
        assert_eq!(ev("file.etags"), json!(["#project/alpha", "#work"]));
        assert_eq!(ev("file.outlinks"), json!(["[[People/Bob.md|Bob]]", "[[Projects/Beta.md|Beta]]"]));
        assert_eq!(ev("file.inlinks[0]"), json!("[[Daily/2024-01-05.md|2024-01-05]]"));
        assert_eq!(ev("file.tasks.text"), json!(["Write spec", "Kickoff"]));
        assert_eq!(ev("file.day"), Value::Null);
        assert_eq!(ev("this.status"), json!("active"));
        assert_eq!(ev("file.mtime.year"), json!(2024));
        let v = vault();
        assert_eq!(eval_field("file.day", &v[4], today(), now()).unwrap(), json!("2024-01-05"));
        assert_eq!(eval_field("file.aliases", &v[3], today(), now()).unwrap(), json!(["Robert"]));
    }
}
