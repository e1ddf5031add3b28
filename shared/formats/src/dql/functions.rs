//! The built-in functions of expressions ([`FUNCTIONS`]), one method per family: values and
//! links, dates, numbers and aggregates, text, and lists.

use std::cmp::Ordering;
use std::rc::Rc;

use chrono::NaiveTime;

use super::ast::BinOp;
use super::dates::dateformat;
use super::eval::{Ctx, Locals, binop};
use super::lexer::{full_date, full_duration};
use super::parser::DATE_SHORTHANDS;
use super::value::{Link, V, compare, to_text};

/// Every function the evaluator knows, by name.
pub const FUNCTIONS: &[&str] = &[
    "all",
    "any",
    "array",
    "average",
    "choice",
    "contains",
    "containsword",
    "date",
    "dateformat",
    "default",
    "dur",
    "econtains",
    "endswith",
    "filter",
    "flat",
    "icontains",
    "join",
    "ldefault",
    "length",
    "link",
    "list",
    "localtime",
    "lower",
    "map",
    "max",
    "maxby",
    "meta",
    "min",
    "minby",
    "none",
    "nonnull",
    "number",
    "object",
    "padleft",
    "padright",
    "product",
    "reduce",
    "regexmatch",
    "regexreplace",
    "regextest",
    "replace",
    "reverse",
    "round",
    "sort",
    "split",
    "startswith",
    "string",
    "striptime",
    "sum",
    "typeof",
    "upper",
];

impl Ctx<'_> {
    /// Calls the function `name`; where an argument Dataview vectorizes is a list, once per item
    /// (as many times as the shortest such list has items), giving the list of results.
    pub(super) fn call(&self, name: &str, args: Vec<V>, row: &V, locals: &Locals) -> Result<V, String> {
        let positions: &[usize] = match (name, args.len()) {
            ("link" | "date" | "dur" | "localtime" | "number" | "round" | "striptime" | "lower" | "upper", 1) => &[0],
            ("dateformat" | "round", 2) => &[0],
            ("link" | "containsword" | "regexmatch" | "regextest" | "startswith" | "endswith" | "default", 2) => {
                &[0, 1]
            }
            ("padleft" | "padright", 2) => &[0, 1],
            ("contains" | "icontains" | "econtains" | "join" | "reduce", 2) => &[1],
            ("regexreplace" | "replace" | "padleft" | "padright", 3) => &[0, 1, 2],
            ("choice", 3) => &[0],
            _ => &[],
        };
        let lists: Vec<usize> = positions.iter().copied().filter(|&p| matches!(args[p], V::List(_))).collect();
        if !lists.is_empty() {
            let len = lists.iter().map(|&p| if let V::List(l) = &args[p] { l.len() } else { 0 }).min().unwrap_or(0);
            let mut out = Vec::with_capacity(len);
            for k in 0..len {
                let sub: Vec<V> = args
                    .iter()
                    .enumerate()
                    .map(|(p, a)| match a {
                        V::List(l) if lists.contains(&p) => l[k].clone(),
                        other => other.clone(),
                    })
                    .collect();
                out.push(self.call(name, sub, row, locals)?);
            }
            return Ok(V::List(out));
        }
        self.call_one(name, args, row, locals)
    }

    /// One call once list arguments are mapped over ([`Ctx::call`]): dispatched by name to its
    /// family.
    fn call_one(&self, name: &str, args: Vec<V>, row: &V, locals: &Locals) -> Result<V, String> {
        match name {
            "length" | "list" | "array" | "object" | "link" | "number" | "string" | "typeof" | "default"
            | "ldefault" | "choice" | "meta" => self.call_value(name, args, row, locals),
            "date" | "dur" | "dateformat" | "localtime" | "striptime" => self.call_date(name, args),
            "round" | "min" | "max" | "minby" | "maxby" | "sum" | "product" | "average" | "reduce" => {
                self.call_number(name, args, row, locals)
            }
            "contains" | "icontains" | "econtains" | "containsword" | "lower" | "upper" | "startswith" | "endswith"
            | "replace" | "regexreplace" | "regexmatch" | "regextest" | "split" | "padleft" | "padright" | "join" => {
                self.call_text(name, args)
            }
            "reverse" | "sort" | "flat" | "filter" | "map" | "any" | "all" | "none" | "nonnull" => {
                self.call_list(name, args, row, locals)
            }
            _ => Err(format!("unknown function '{name}'")),
        }
    }

    /// Values, conversions and links: `length`, `list`, `object`, `link`, `number`, `string`,
    /// `typeof`, `default`, `choice`, `meta`.
    fn call_value(&self, name: &str, args: Vec<V>, row: &V, locals: &Locals) -> Result<V, String> {
        use V::*;
        let a = args.as_slice();
        match name {
            "length" => match a {
                [List(l)] => Ok(Num(l.len() as f64)),
                [Obj(o)] => Ok(Num(o.len() as f64)),
                [Str(s)] => Ok(Num(s.encode_utf16().count() as f64)),
                [Null] => Ok(Num(0.0)),
                _ => no_impl(name, a),
            },
            "list" | "array" => Ok(List(args)),
            "object" => {
                if !a.len().is_multiple_of(2) {
                    return Err("object() takes an even number of arguments".into());
                }
                let mut entries = Vec::new();
                for pair in a.chunks(2) {
                    let Str(k) = &pair[0] else { return Err("object() keys must be strings".into()) };
                    entries.push((k.clone(), pair[1].clone()));
                }
                Ok(Obj(Rc::new(entries)))
            }
            "link" => match a {
                [Str(s)] => Ok(Link(self.link(self::Link::file(s.clone())))),
                [Link(l)] => Ok(Link(l.clone())),
                [Null] | [Null, _] => Ok(Null),
                [Str(s), Str(d)] => {
                    let mut l = self.link(self::Link::file(s.clone()));
                    l.display = Some(d.clone());
                    Ok(Link(l))
                }
                [Link(l), Str(d)] => {
                    let mut l = l.clone();
                    l.display = Some(d.clone());
                    Ok(Link(l))
                }
                [x, Null] => self.call_one("link", vec![x.clone()], row, locals),
                _ => no_impl(name, a),
            },
            "number" => match a {
                [Num(n)] => Ok(Num(*n)),
                [Str(s)] => {
                    let r = self.regex(r"-?[0-9]+(\.[0-9]+)?")?;
                    Ok(r.find(s).and_then(|m| m.as_str().parse().ok()).map_or(Null, Num))
                }
                [Null] => Ok(Null),
                _ => no_impl(name, a),
            },
            "string" => match a {
                [x] => Ok(Str(to_text(x, false))),
                _ => no_impl(name, a),
            },
            "typeof" => match a {
                [x] => Ok(Str(x.type_name().into())),
                _ => no_impl(name, a),
            },
            "default" | "ldefault" => match a {
                [Null, fallback] => Ok(fallback.clone()),
                [v, _] => Ok(v.clone()),
                _ => no_impl(name, a),
            },
            "choice" => match a {
                [c, x, y] => Ok(if c.truthy() { x.clone() } else { y.clone() }),
                _ => no_impl(name, a),
            },
            "meta" => match a {
                [Link(l)] => Ok(Obj(Rc::new(vec![
                    ("display".into(), l.display.clone().map_or(Null, Str)),
                    ("embed".into(), Bool(l.embed)),
                    ("path".into(), Str(l.path.clone())),
                    ("subpath".into(), l.subpath.clone().map_or(Null, Str)),
                    ("type".into(), Str(if l.subpath.is_some() { "header" } else { "file" }.into())),
                ]))),
                _ => no_impl(name, a),
            },
            _ => Err(format!("unknown function '{name}'")),
        }
    }

    /// Dates and durations: `date`, `dur`, `dateformat`, `localtime`, `striptime`.
    fn call_date(&self, name: &str, args: Vec<V>) -> Result<V, String> {
        use V::*;
        let a = args.as_slice();
        match name {
            "date" => match a {
                [Str(s)] => {
                    let t = s.trim();
                    if let Some(short) = DATE_SHORTHANDS.iter().find(|x| **x == t) {
                        return Ok(Date(self.shorthand(short)));
                    }
                    Ok(full_date(t).map_or(Null, Date))
                }
                [Date(d)] => Ok(Date(*d)),
                [Link(l)] => {
                    if let Some(d) = l.display.as_deref().and_then(full_date).or_else(|| full_date(&l.path)) {
                        return Ok(Date(d));
                    }
                    Ok(match self.resolver.resolve(&l.path) {
                        Some(i) => self.index(&self.index(&self.page(i), &Str("file".into())), &Str("day".into())),
                        None => Null,
                    })
                }
                [Null] => Ok(Null),
                _ => no_impl(name, a),
            },
            "dur" => match a {
                [Str(s)] => Ok(full_duration(s.trim()).map_or(Null, Dur)),
                [Dur(d)] => Ok(Dur(*d)),
                [Null] => Ok(Null),
                _ => no_impl(name, a),
            },
            "dateformat" => match a {
                [Date(d), Str(f)] => Ok(Str(dateformat(d, f))),
                [Null, Str(_)] => Ok(Null),
                _ => no_impl(name, a),
            },
            "localtime" => match a {
                [Date(d)] => Ok(Date(*d)),
                [Null] => Ok(Null),
                _ => no_impl(name, a),
            },
            "striptime" => match a {
                [Date(d)] => Ok(Date(d.date().and_time(NaiveTime::MIN))),
                [Null] => Ok(Null),
                _ => no_impl(name, a),
            },
            _ => Err(format!("unknown function '{name}'")),
        }
    }

    /// Numbers and aggregates: `round`, `min`, `max`, `minby`, `maxby`, `sum`, `product`,
    /// `average`, `reduce`.
    fn call_number(&self, name: &str, args: Vec<V>, row: &V, locals: &Locals) -> Result<V, String> {
        use V::*;
        let a = args.as_slice();
        match name {
            "round" => match a {
                [Num(n)] | [Num(n), Null] => Ok(Num(js_round(*n))),
                [Num(n), Num(p)] => {
                    if *p <= 0.0 {
                        Ok(Num(js_round(*n)))
                    } else {
                        let m = 10f64.powi(p.min(100.0) as i32);
                        Ok(Num((n * m).round() / m))
                    }
                }
                [Null] | [Null, _] => Ok(Null),
                _ => no_impl(name, a),
            },
            "min" | "max" => {
                let items: Vec<V> = match a {
                    [List(l)] => l.clone(),
                    _ => args.clone(),
                };
                let want = if name == "min" { Ordering::Less } else { Ordering::Greater };
                let mut best: Option<V> = None;
                for item in items {
                    if matches!(item, Null) {
                        continue;
                    }
                    best = Some(match best {
                        None => item,
                        Some(b) => {
                            let c = compare(&item, &b);
                            if c == want { item } else { b }
                        }
                    });
                }
                Ok(best.unwrap_or(Null))
            }
            "minby" | "maxby" => match a {
                [List(l), f @ Func(_)] => {
                    let want = if name == "minby" { Ordering::Less } else { Ordering::Greater };
                    let mut best: Option<(V, V)> = None;
                    for item in l {
                        let key = self.apply(f, vec![item.clone()], row, locals)?;
                        if matches!(key, Null) {
                            continue;
                        }
                        let replace = match &best {
                            None => true,
                            Some((_, bk)) => compare(&key, bk) == want,
                        };
                        if replace {
                            best = Some((item.clone(), key));
                        }
                    }
                    Ok(best.map(|(v, _)| v).or_else(|| l.first().cloned()).unwrap_or(Null))
                }
                [Null, Func(_)] => Ok(Null),
                _ => no_impl(name, a),
            },
            "sum" | "product" => match a {
                [List(l)] => reduce_op(l, if name == "sum" { BinOp::Add } else { BinOp::Mul }),
                [x] => Ok(x.clone()),
                _ => no_impl(name, a),
            },
            "average" => match a {
                [List(l)] if l.is_empty() => Ok(Null),
                [List(l)] => binop(BinOp::Div, reduce_op(l, BinOp::Add)?, Num(l.len() as f64)),
                [Null] => Ok(Null),
                _ => no_impl(name, a),
            },
            "reduce" => match a {
                [List(l), Str(op)] => {
                    let op = match op.as_str() {
                        "+" => BinOp::Add,
                        "-" => BinOp::Sub,
                        "*" => BinOp::Mul,
                        "/" => BinOp::Div,
                        "&" => BinOp::And,
                        "|" => BinOp::Or,
                        _ => return Err("reduce(list, op) takes '+', '-', '*', '/', '&' or '|'".into()),
                    };
                    reduce_op(l, op)
                }
                [List(l), f @ Func(_)] => {
                    let Some(first) = l.first() else { return Ok(Null) };
                    let mut acc = first.clone();
                    for item in &l[1..] {
                        if !matches!(item, Null) {
                            acc = self.apply(f, vec![acc, item.clone()], row, locals)?;
                        }
                    }
                    Ok(acc)
                }
                [Null, _] | [_, Null] => Ok(Null),
                _ => no_impl(name, a),
            },
            _ => Err(format!("unknown function '{name}'")),
        }
    }

    /// Text: `contains` (and `icontains`, `econtains`), `containsword`, `lower`, `upper`,
    /// `startswith`, `endswith`, `replace`, `regexreplace`, `regexmatch`, `regextest`, `split`,
    /// `padleft`, `padright`, `join`.
    fn call_text(&self, name: &str, args: Vec<V>) -> Result<V, String> {
        use V::*;
        let a = args.as_slice();
        match name {
            "contains" | "icontains" | "econtains" => {
                contains(name, &args[0], &args[1]).ok_or_else(|| no_impl_message(name, a))
            }
            "containsword" => match a {
                [Str(h), Str(n)] => {
                    let r = self.regex(&format!(r"(?i)\b{}\b", regex::escape(n)))?;
                    Ok(Bool(r.is_match(h)))
                }
                [Null, _] | [_, Null] => Ok(Null),
                _ => no_impl(name, a),
            },
            "lower" | "upper" => match a {
                [Str(s)] => Ok(Str(if name == "lower" { s.to_lowercase() } else { s.to_uppercase() })),
                [Null] => Ok(Null),
                _ => no_impl(name, a),
            },
            "startswith" | "endswith" => match a {
                [Str(s), Str(p)] => {
                    Ok(Bool(if name == "startswith" { s.starts_with(p.as_str()) } else { s.ends_with(p.as_str()) }))
                }
                [Null, _] | [_, Null] => Ok(Null),
                _ => no_impl(name, a),
            },
            "replace" => match a {
                [Str(s), Str(p), Str(r)] => Ok(Str(if p.is_empty() { s.clone() } else { s.replace(p.as_str(), r) })),
                [Null, _, _] | [_, Null, _] | [_, _, Null] => Ok(Null),
                _ => no_impl(name, a),
            },
            "regexreplace" => match a {
                [Str(s), Str(p), Str(r)] => Ok(Str(self.regex(p)?.replace_all(s, r.as_str()).into_owned())),
                [Null, _, _] | [_, Null, _] | [_, _, Null] => Ok(Null),
                _ => no_impl(name, a),
            },
            "regexmatch" => match a {
                [Str(p), Str(s)] => {
                    let anchored =
                        if !p.starts_with('^') && !p.ends_with('$') { format!("^(?:{p})$") } else { p.clone() };
                    Ok(Bool(self.regex(&anchored)?.is_match(s)))
                }
                [Null, _] | [_, Null] => Ok(Bool(false)),
                _ => no_impl(name, a),
            },
            "regextest" => match a {
                [Str(p), Str(s)] => Ok(Bool(self.regex(p)?.is_match(s))),
                [Null, _] | [_, Null] => Ok(Bool(false)),
                _ => no_impl(name, a),
            },
            "split" => match a {
                [Str(s), Str(d)] => Ok(List(self.regex(d)?.split(s).map(|p| Str(p.to_string())).collect())),
                [Str(s), Str(d), Num(n)] => {
                    Ok(List(self.regex(d)?.split(s).take(n.max(0.0) as usize).map(|p| Str(p.to_string())).collect()))
                }
                [Null, ..] | [_, Null, ..] | [_, _, Null] => Ok(Null),
                _ => no_impl(name, a),
            },
            "padleft" | "padright" => {
                let (s, len, pad) = match a {
                    [Str(s), Num(n)] => (s, *n, " ".to_string()),
                    [Str(s), Num(n), Str(p)] => (s, *n, p.clone()),
                    _ if a.iter().any(|v| matches!(v, Null)) => return Ok(Null),
                    _ => return no_impl(name, a),
                };
                let have = s.chars().count();
                let want = (len.max(0.0) as usize).min(100_000);
                if have >= want || pad.is_empty() {
                    return Ok(Str(s.clone()));
                }
                let fill: String = pad.chars().cycle().take(want - have).collect();
                Ok(Str(if name == "padleft" { format!("{fill}{s}") } else { format!("{s}{fill}") }))
            }
            "join" => match a {
                [List(l)] | [List(l), Null] => {
                    Ok(Str(l.iter().map(|v| to_text(v, true)).collect::<Vec<_>>().join(", ")))
                }
                [List(l), Str(sep)] => Ok(Str(l.iter().map(|v| to_text(v, true)).collect::<Vec<_>>().join(sep))),
                [x] | [x, Str(_)] => Ok(Str(to_text(x, false))),
                _ => no_impl(name, a),
            },
            _ => Err(format!("unknown function '{name}'")),
        }
    }

    /// Lists: `reverse`, `sort`, `flat`, `filter`, `map`, `any`, `all`, `none`, `nonnull`.
    fn call_list(&self, name: &str, args: Vec<V>, row: &V, locals: &Locals) -> Result<V, String> {
        use V::*;
        let a = args.as_slice();
        match name {
            "reverse" => match a {
                [List(l)] => Ok(List(l.iter().rev().cloned().collect())),
                [Str(s)] => Ok(Str(s.chars().rev().collect())),
                [x] => Ok(x.clone()),
                _ => no_impl(name, a),
            },
            "sort" => match a {
                [List(l)] => {
                    let mut l = l.clone();
                    l.sort_by(compare);
                    Ok(List(l))
                }
                [List(l), f @ Func(_)] => {
                    let mut keyed = l
                        .iter()
                        .map(|v| Ok((self.apply(f, vec![v.clone()], row, locals)?, v.clone())))
                        .collect::<Result<Vec<_>, String>>()?;
                    keyed.sort_by(|x, y| compare(&x.0, &y.0));
                    Ok(List(keyed.into_iter().map(|(_, v)| v).collect()))
                }
                [x] => Ok(x.clone()),
                _ => no_impl(name, a),
            },
            "flat" => match a {
                [List(l)] => Ok(List(flatten(l, 1))),
                [List(l), Num(d)] => Ok(List(flatten(l, d.clamp(0.0, 64.0) as usize))),
                [x] | [x, _] => Ok(x.clone()),
                _ => no_impl(name, a),
            },
            "filter" | "map" => match a {
                [List(l), f @ Func(_)] => {
                    let mut out = Vec::new();
                    for item in l {
                        let r = self.apply(f, vec![item.clone()], row, locals)?;
                        if name == "map" {
                            out.push(r);
                        } else if r.truthy() {
                            out.push(item.clone());
                        }
                    }
                    Ok(List(out))
                }
                [Null, _] => Ok(Null),
                _ => no_impl(name, a),
            },
            "any" | "all" | "none" => {
                let truths: Vec<bool> = match a {
                    [List(l)] => l.iter().map(V::truthy).collect(),
                    [List(l), f @ Func(_)] => l
                        .iter()
                        .map(|v| self.apply(f, vec![v.clone()], row, locals).map(|r| r.truthy()))
                        .collect::<Result<_, _>>()?,
                    _ => a.iter().map(V::truthy).collect(),
                };
                Ok(Bool(match name {
                    "any" => truths.iter().any(|t| *t),
                    "all" => truths.iter().all(|t| *t),
                    _ => !truths.iter().any(|t| *t),
                }))
            }
            "nonnull" => match a {
                [List(l)] => Ok(List(l.iter().filter(|v| !matches!(v, Null)).cloned().collect())),
                _ => Ok(List(args.into_iter().filter(|v| !matches!(v, Null)).collect())),
            },
            _ => Err(format!("unknown function '{name}'")),
        }
    }
}

/// The refusal of a function given arguments it has no variant for.
fn no_impl(name: &str, args: &[V]) -> Result<V, String> {
    Err(no_impl_message(name, args))
}

fn no_impl_message(name: &str, args: &[V]) -> String {
    let types = args.iter().map(V::type_name).collect::<Vec<_>>().join(", ");
    format!("no implementation of '{name}' for arguments ({types})")
}

fn js_round(n: f64) -> f64 {
    (n + 0.5).floor()
}

fn flatten(items: &[V], depth: usize) -> Vec<V> {
    let mut out = Vec::new();
    for item in items {
        match item {
            V::List(inner) if depth > 0 => out.extend(flatten(inner, depth - 1)),
            other => out.push(other.clone()),
        }
    }
    out
}

fn reduce_op(items: &[V], op: BinOp) -> Result<V, String> {
    let Some(first) = items.first() else { return Ok(V::Null) };
    let mut acc = first.clone();
    for item in &items[1..] {
        acc = match op {
            BinOp::And => V::Bool(acc.truthy() && item.truthy()),
            BinOp::Or => V::Bool(acc.truthy() || item.truthy()),
            _ => binop(op, acc, item.clone())?,
        };
    }
    Ok(acc)
}

/// Dataview's `contains` family; `None` when no variant takes these types.
fn contains(name: &str, hay: &V, needle: &V) -> Option<V> {
    let eq = |a: &V, b: &V| compare(a, b) == Ordering::Equal;
    match (hay, needle) {
        (V::List(l), _) => Some(V::Bool(match name {
            "econtains" => l.iter().any(|e| eq(e, needle)),
            _ => l.iter().any(|e| contains(name, e, needle).is_some_and(|v| v.truthy())),
        })),
        (V::Str(h), V::Str(n)) => Some(V::Bool(if name == "icontains" {
            h.to_lowercase().contains(&n.to_lowercase())
        } else {
            h.contains(n.as_str())
        })),
        (V::Obj(o), V::Str(k)) => Some(V::Bool(o.iter().any(|(key, _)| key == k))),
        (V::Null, _) if name == "icontains" => None,
        _ => Some(V::Bool(eq(hay, needle))),
    }
}

#[cfg(test)]
mod tests {
    use crate::dql::eval_field;
    use crate::dql::testing::*;
    use otc_errors::ErrorCode;
    use serde_json::{Value, json};

    #[test]
    fn functions() {
        let cases: &[(&str, Value)] = &[
            ("contains(\"hello\", \"ell\")", json!(true)),
            ("contains(list(\"words\", \"more\"), \"word\")", json!(true)),
            ("econtains(list(\"words\", \"more\"), \"word\")", json!(false)),
            ("icontains(\"Hello\", \"hELL\")", json!(true)),
            ("contains(file.tags, \"#work\")", json!(true)),
            ("contains(file.outlinks, [[Bob]])", json!(true)),
            ("contains(\"abc\", list(\"a\", \"z\"))", json!([true, false])),
            ("length(list(1, 2))", json!(2)),
            ("length(null)", json!(0)),
            ("length(\"abc\")", json!(3)),
            ("lower(\"ABC\")", json!("abc")),
            ("upper(list(\"a\", \"b\"))", json!(["A", "B"])),
            ("startswith(file.name, \"Al\")", json!(true)),
            ("endswith(file.name, \"x\")", json!(false)),
            ("replace(\"a-b-c\", \"-\", \"+\")", json!("a+b+c")),
            ("regextest(\"\\w+\", \"hi there\")", json!(true)),
            ("regexmatch(\"\\w+\", \"hi there\")", json!(false)),
            ("regexmatch(\"h.*e\", \"hi there\")", json!(true)),
            ("regexreplace(\"a1b22\", \"[0-9]+\", \"#\")", json!("a#b#")),
            ("split(\"a, b,c\", \",\\s*\")", json!(["a", "b", "c"])),
            ("split(\"a,b,c\", \",\", 2)", json!(["a", "b"])),
            ("join(list(1, 2, 3))", json!("1, 2, 3")),
            ("join(list(\"a\", \"b\"), \"-\")", json!("a-b")),
            ("sum(list(1, 2, 3))", json!(6)),
            ("min(3, 1, 2)", json!(1)),
            ("max(list(3, 7, null))", json!(7)),
            ("average(list(1, 2, 3, 4))", json!(2.5)),
            ("round(2.5)", json!(3)),
            ("round(2.71828, 2)", json!(2.72)),
            ("default(missing, \"n/a\")", json!("n/a")),
            ("default(status, \"n/a\")", json!("active")),
            ("choice(priority > 1, \"high\", \"low\")", json!("high")),
            ("date(\"2024-02-03\")", json!("2024-02-03")),
            ("date(\"today\")", json!("2024-01-08")),
            ("date(\"nope\")", Value::Null),
            ("dur(\"2 hours\")", json!("2 hours")),
            (
                "dateformat(date(2024-01-05T09:07), \"yyyy-MM-dd HH:mm EEE MMMM\")",
                json!("2024-01-05 09:07 Fri January"),
            ),
            ("dateformat(file.mtime, \"'week' W, DDD\")", json!("week 1, January 4, 2024")),
            ("number(\"about 42.5 km\")", json!(42.5)),
            ("number(\"none\")", Value::Null),
            ("string(12)", json!("12")),
            ("string(date(2024-01-05))", json!("January 05, 2024")),
            ("string(dur(1 day))", json!("1 day")),
            ("link(\"Bob\")", json!("[[Bob|Bob]]")),
            ("link(\"Bob\", \"B\")", json!("[[Bob|B]]")),
            ("typeof(1)", json!("number")),
            ("typeof(list())", json!("array")),
            ("typeof(file.mtime)", json!("date")),
            ("typeof(file.link)", json!("link")),
            ("typeof(dur(1 s))", json!("duration")),
            ("typeof(null)", json!("null")),
            ("flat(list(1, list(2, list(3))))", json!([1, 2, [3]])),
            ("flat(list(1, list(2, list(3))), 2)", json!([1, 2, 3])),
            ("sort(list(3, 1, 2))", json!([1, 2, 3])),
            ("sort(list(\"b\", \"A\", \"a\"))", json!(["a", "A", "b"])),
            ("sort(list(3, 1, 2), (x) => 0 - x)", json!([3, 2, 1])),
            ("reverse(list(1, 2, 3))", json!([3, 2, 1])),
            ("reverse(\"abc\")", json!("cba")),
            ("filter(list(1, 2, 3, 4), (x) => x % 2 = 0)", json!([2, 4])),
            ("map(list(1, 2), (x) => x * 10)", json!([10, 20])),
            ("map(file.tasks, (t) => t.completed)", json!([false, true])),
            ("any(list(false, 1))", json!(true)),
            ("all(list(true, 0))", json!(false)),
            ("any(file.tasks, (t) => t.completed)", json!(true)),
            ("all(list(1, 2), (x) => x > 1)", json!(false)),
            ("nonnull(list(1, null, 2))", json!([1, 2])),
            ("nonnull(null, 3)", json!([3])),
            ("striptime(date(2024-01-05T10:30))", json!("2024-01-05")),
            ("containsword(\"a big cat\", \"BIG\")", json!(true)),
            ("padleft(\"7\", 3, \"0\")", json!("007")),
            ("minby(list(3, 1, 2), (x) => x)", json!(1)),
            ("reduce(list(1, 2, 3), (a, b) => a * b)", json!(6)),
        ];
        for (expression, want) in cases {
            assert_eq!(&ev(expression), want, "{expression}");
        }
        // In a run, links resolve against the pages given (and can be followed).
        let out = go(
            "TABLE WITHOUT ID link(\"Bob\"), link(\"Bob\", \"B\"), [[Bob]].role, date([[2024-01-05]]) FROM \"Inbox\"",
        );
        assert_eq!(
            values(&out),
            [vec![json!("[[People/Bob.md|Bob]]"), json!("[[People/Bob.md|B]]"), json!("dev"), json!("2024-01-05")]]
        );
        let err = eval_field("1 + null", &vault()[0], today(), now()).unwrap_err();
        assert_eq!(err.code, ErrorCode::DqlError);
        assert!(err.message.contains("number + null"), "{}", err.message);
    }
}
