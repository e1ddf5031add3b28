//! The functions and methods of expressions: globals (`if`, `date`, `link`, ...), `filter`,
//! `map` and `reduce`, and the methods of every value, of `file`, of text, numbers, lists,
//! objects, regular expressions and dates.

use super::MAX_BUILT;
use super::dates::{as_date, moment, parse_date, parse_duration};
use super::eval::{Env, Scope, arg, bounds, frontmatter};
use super::parser::Expr;
use super::value::{DateKind, Eval, V, json_to_v, loose_eq, num_text, same_target, sort_cmp, to_num, type_name};

impl Env<'_> {
    pub(super) fn call(&self, name: &str, args: &[Expr], scope: Option<&Scope>) -> Eval {
        if name == "if" {
            let cond = self.eval(args.first().ok_or("if() needs a condition")?, scope)?;
            return match (cond.truthy(), args.get(1), args.get(2)) {
                (true, Some(a), _) => self.eval(a, scope),
                (false, _, Some(b)) => self.eval(b, scope),
                _ => Ok(V::Null),
            };
        }
        let args = args.iter().map(|a| self.eval(a, scope)).collect::<Result<Vec<_>, _>>()?;
        let first = arg(&args, 0);
        match name {
            "now" => Ok(V::Date(self.clock.now.naive_utc(), DateKind::Utc)),
            "today" => Ok(V::Date(self.clock.today.and_hms_opt(0, 0, 0).ok_or("bad date")?, DateKind::Day)),
            "date" => match first {
                V::Null => Ok(V::Null),
                V::Date(..) => Ok(first.clone()),
                V::Str(s) => parse_date(s).map(|(d, k)| V::Date(d, k)).ok_or_else(|| format!("{s:?} is not a date")),
                other => Err(format!("date() takes text, not {}", type_name(other))),
            },
            "duration" => match first {
                V::Null => Ok(V::Null),
                V::Dur(_) => Ok(first.clone()),
                V::Str(s) => parse_duration(s).map(V::Dur).ok_or_else(|| format!("{s:?} is not a duration")),
                other => Err(format!("duration() takes text, not {}", type_name(other))),
            },
            "number" => match first {
                V::Null => Ok(V::Null),
                V::Date(d, _) => Ok(V::Num(d.and_utc().timestamp_millis() as f64)),
                V::Dur(d) => Ok(V::Num(d.months as f64 * 2_629_800_000.0 + d.millis as f64)),
                other => to_num(other).map(V::Num).ok_or_else(|| format!("{} is not a number", type_name(other))),
            },
            "link" => {
                let display = match arg(&args, 1) {
                    V::Null => None,
                    d => Some(d.text(self.row)),
                };
                match first {
                    V::Str(s) => {
                        let s = s.trim();
                        let s = s.strip_prefix("[[").and_then(|s| s.strip_suffix("]]")).unwrap_or(s);
                        Ok(V::Link(s.to_string(), display))
                    }
                    V::Link(t, d) => Ok(V::Link(t.clone(), display.or(d.clone()))),
                    V::File => Ok(V::Link(self.row.path.clone(), display)),
                    other => Err(format!("link() takes a path, not {}", type_name(other))),
                }
            }
            "list" => Ok(match first {
                V::List(_) => first.clone(),
                V::Null => V::List(Vec::new()),
                other => V::List(vec![other.clone()]),
            }),
            "min" | "max" => {
                let mut best: Option<f64> = None;
                for a in &args {
                    let n = match a {
                        V::Null => continue,
                        V::Num(n) => *n,
                        other => return Err(format!("{name}() takes numbers, not {}", type_name(other))),
                    };
                    best = Some(match best {
                        None => n,
                        Some(b) if name == "min" => b.min(n),
                        Some(b) => b.max(n),
                    });
                }
                Ok(best.map_or(V::Null, V::Num))
            }
            "escapeHTML" => match first {
                V::Null => Ok(V::Null),
                v => Ok(V::Str(
                    v.text(self.row)
                        .replace('&', "&amp;")
                        .replace('<', "&lt;")
                        .replace('>', "&gt;")
                        .replace('"', "&quot;")
                        .replace('\'', "&#39;"),
                )),
            },
            other => Err(format!("{other}() is not evaluated here")),
        }
    }

    pub(super) fn lambda(&self, receiver: &V, name: &str, args: &[Expr], scope: Option<&Scope>) -> Eval {
        let items = match receiver {
            V::Null => return Ok(V::Null),
            V::List(items) => items,
            other => return Err(format!("{name}() works on lists, not {}", type_name(other))),
        };
        let body = args.first().ok_or_else(|| format!("{name}() needs an expression"))?;
        match name {
            "reduce" => {
                let mut acc = match args.get(1) {
                    Some(init) => self.eval(init, scope)?,
                    None => V::Null,
                };
                for (i, item) in items.iter().enumerate() {
                    let s = Scope { value: item.clone(), index: V::Num(i as f64), acc: Some(acc), outer: scope };
                    acc = self.eval(body, Some(&s))?;
                }
                Ok(acc)
            }
            _ => {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let s = Scope { value: item.clone(), index: V::Num(i as f64), acc: None, outer: scope };
                    let v = self.eval(body, Some(&s))?;
                    if name == "map" {
                        out.push(v);
                    } else if v.truthy() {
                        out.push(item.clone());
                    }
                }
                Ok(V::List(out))
            }
        }
    }

    pub(super) fn method(&self, v: &V, name: &str, args: &[V]) -> Eval {
        let row = self.row;
        let a0 = arg(args, 0);
        // Methods every value has.
        match name {
            "isEmpty" => return Ok(V::Bool(v.is_empty())),
            "isTruthy" => return Ok(V::Bool(v.truthy())),
            "toString" => return Ok(V::Str(v.text(row))),
            "isType" => {
                let want = a0.text(row).to_lowercase();
                let got = type_name(v);
                return Ok(V::Bool(want == got || (want == "regex" && got == "regexp")));
            }
            _ => {}
        }
        if let V::Null = v {
            return Ok(V::Null);
        }
        if let V::File = v {
            return self.file_method(name, args);
        }
        if matches!(name, "format" | "date" | "time")
            && let Some((d, kind)) = as_date(v)
        {
            return match name {
                "format" => {
                    let pattern = match a0 {
                        V::Null => "YYYY-MM-DD".to_string(),
                        p => p.text(row),
                    };
                    self.built(moment(&d, &pattern))
                }
                "date" => Ok(V::Date(d.date().and_hms_opt(0, 0, 0).ok_or("bad date")?, DateKind::Day)),
                _ => {
                    let _ = kind;
                    Ok(V::Str(d.format("%H:%M:%S").to_string()))
                }
            };
        }
        match v {
            V::Str(s) => self.string_method(s, name, args),
            V::Num(n) => {
                let n = *n;
                match name {
                    "abs" => Ok(V::Num(n.abs())),
                    "ceil" => Ok(V::Num(n.ceil())),
                    "floor" => Ok(V::Num(n.floor())),
                    "round" => {
                        let digits = match a0 {
                            V::Null => 0.0,
                            V::Num(d) => d.trunc().clamp(0.0, 15.0),
                            other => return Err(format!("round() takes a number, not {}", type_name(other))),
                        };
                        let f = 10f64.powi(digits as i32);
                        Ok(V::Num((n * f + 0.5).floor() / f))
                    }
                    "toFixed" => {
                        let digits = match a0 {
                            V::Null => 0,
                            V::Num(d) if (0.0..=100.0).contains(d) => *d as usize,
                            _ => return Err("toFixed() takes 0 to 100 digits".to_string()),
                        };
                        if !n.is_finite() {
                            return Ok(V::Str(num_text(n)));
                        }
                        Ok(V::Str(format!("{n:.digits$}")))
                    }
                    _ => Err(format!("a number has no method {name}()")),
                }
            }
            V::List(items) => self.list_method(items, name, args),
            V::Obj(map) => match name {
                "keys" => Ok(V::List(map.keys().map(|k| V::Str(k.clone())).collect())),
                "values" => Ok(V::List(map.values().map(|v| json_to_v(v, 0)).collect())),
                _ => Err(format!("an object has no method {name}()")),
            },
            V::Regex(re, _) => match name {
                "matches" => match a0 {
                    V::Null => Ok(V::Bool(false)),
                    s => Ok(V::Bool(re.is_match(&s.text(row)))),
                },
                _ => Err(format!("a regular expression has no method {name}()")),
            },
            V::Link(target, _) if name == "contains" => Ok(V::Bool(target.contains(&a0.text(row)))),
            _ => Err(format!("{} has no method {name}()", type_name(v))),
        }
    }

    fn file_method(&self, name: &str, args: &[V]) -> Eval {
        let row = self.row;
        match name {
            "hasTag" => {
                let tags: Vec<String> = row.tags.iter().map(|t| t.trim_start_matches('#').to_lowercase()).collect();
                let mut wanted = Vec::new();
                for a in args {
                    match a {
                        V::List(items) => wanted.extend(items.iter().map(|i| i.text(row))),
                        V::Null => {}
                        other => wanted.push(other.text(row)),
                    }
                }
                Ok(V::Bool(wanted.iter().any(|w| {
                    let w = w.trim().trim_start_matches('#').to_lowercase();
                    !w.is_empty() && tags.iter().any(|t| *t == w || t.starts_with(&format!("{w}/")))
                })))
            }
            "inFolder" => {
                let folder = match arg(args, 0) {
                    V::Null => return Ok(V::Bool(false)),
                    f => f.text(row),
                };
                let folder = folder.trim().trim_matches('/');
                Ok(V::Bool(folder.is_empty() || row.path.starts_with(&format!("{folder}/"))))
            }
            "hasLink" => {
                let target = match arg(args, 0) {
                    V::Null => return Ok(V::Bool(false)),
                    V::Link(t, _) => t.clone(),
                    V::File => row.path.clone(),
                    other => other.text(row),
                };
                Ok(V::Bool(row.links.iter().any(|l| same_target(l, &target))))
            }
            "hasProperty" => Ok(V::Bool(frontmatter(row, &arg(args, 0).text(row)).is_some())),
            "asLink" => Ok(V::Link(
                row.path.clone(),
                match arg(args, 0) {
                    V::Null => None,
                    d => Some(d.text(row)),
                },
            )),
            _ => Err(format!("file has no method {name}()")),
        }
    }

    fn string_method(&self, s: &str, name: &str, args: &[V]) -> Eval {
        let row = self.row;
        let texts = || args.iter().map(|a| a.text(row)).collect::<Vec<_>>();
        let a0 = arg(args, 0);
        match name {
            "contains" => Ok(V::Bool(s.contains(&a0.text(row)))),
            "containsAll" => Ok(V::Bool(texts().iter().all(|t| s.contains(t.as_str())))),
            "containsAny" => Ok(V::Bool(texts().iter().any(|t| s.contains(t.as_str())))),
            "startsWith" => Ok(V::Bool(s.starts_with(&a0.text(row)))),
            "endsWith" => Ok(V::Bool(s.ends_with(&a0.text(row)))),
            "lower" => Ok(V::Str(s.to_lowercase())),
            "upper" => Ok(V::Str(s.to_uppercase())),
            "trim" => Ok(V::Str(s.trim().to_string())),
            "title" => Ok(V::Str(
                s.split(' ')
                    .map(|w| {
                        let mut c = w.chars();
                        match c.next() {
                            Some(f) => f.to_uppercase().chain(c.flat_map(char::to_lowercase)).collect(),
                            None => String::new(),
                        }
                    })
                    .collect::<Vec<String>>()
                    .join(" "),
            )),
            "reverse" => Ok(V::Str(s.chars().rev().collect())),
            "repeat" => match a0 {
                V::Num(n) if *n >= 0.0 && (*n * s.len() as f64) <= MAX_BUILT as f64 => {
                    self.built(s.repeat(*n as usize))
                }
                _ => Err("repeat() takes a small count".to_string()),
            },
            "slice" => {
                let chars: Vec<char> = s.chars().collect();
                let range = bounds(chars.len(), a0, arg(args, 1))?;
                Ok(V::Str(chars[range].iter().collect()))
            }
            "split" => {
                let parts: Vec<V> = match a0 {
                    V::Regex(re, _) => re.split(s).map(|p| V::Str(p.to_string())).collect(),
                    V::Null => vec![V::Str(s.to_string())],
                    sep => {
                        let sep = sep.text(row);
                        if sep.is_empty() {
                            s.chars().map(|c| V::Str(c.to_string())).collect()
                        } else {
                            s.split(sep.as_str()).map(|p| V::Str(p.to_string())).collect()
                        }
                    }
                };
                let limit = match arg(args, 1) {
                    V::Num(n) if *n >= 0.0 => *n as usize,
                    _ => usize::MAX,
                };
                Ok(V::List(parts.into_iter().take(limit).collect()))
            }
            "replace" => {
                let with = arg(args, 1).text(row);
                match a0 {
                    V::Regex(re, global) => {
                        let hits = if *global { re.find_iter(s).count() } else { 1 };
                        if hits.saturating_mul(with.len()).saturating_add(s.len()) > MAX_BUILT {
                            return Err("the text is too long".to_string());
                        }
                        let out = if *global {
                            re.replace_all(s, regex::NoExpand(&with))
                        } else {
                            re.replace(s, regex::NoExpand(&with))
                        };
                        self.built(out.into_owned())
                    }
                    pattern => self.built(s.replacen(&pattern.text(row), &with, 1)),
                }
            }
            _ => Err(format!("text has no method {name}()")),
        }
    }

    fn list_method(&self, items: &[V], name: &str, args: &[V]) -> Eval {
        let row = self.row;
        let has = |x: &V| items.iter().any(|i| loose_eq(i, x, row));
        match name {
            "contains" => Ok(V::Bool(has(arg(args, 0)))),
            "containsAll" => Ok(V::Bool(args.iter().all(has))),
            "containsAny" => Ok(V::Bool(args.iter().any(has))),
            "join" => {
                let sep = match arg(args, 0) {
                    V::Null => ",".to_string(),
                    s => s.text(row),
                };
                self.built(items.iter().map(|i| i.text(row)).collect::<Vec<_>>().join(&sep))
            }
            "reverse" => Ok(V::List(items.iter().rev().cloned().collect())),
            "slice" => {
                let range = bounds(items.len(), arg(args, 0), arg(args, 1))?;
                Ok(V::List(items[range].to_vec()))
            }
            "sort" => {
                let mut out = items.to_vec();
                out.sort_by(|a, b| sort_cmp(a, b, false));
                Ok(V::List(out))
            }
            "unique" => {
                let mut out: Vec<V> = Vec::new();
                for i in items {
                    if !out.iter().any(|o| loose_eq(o, i, row)) {
                        out.push(i.clone());
                    }
                }
                Ok(V::List(out))
            }
            "flat" => {
                let mut out = Vec::new();
                for i in items {
                    match i {
                        V::List(inner) => out.extend(inner.iter().cloned()),
                        other => out.push(other.clone()),
                    }
                }
                if out.len() > MAX_BUILT {
                    return Err("the list is too long".to_string());
                }
                Ok(V::List(out))
            }
            _ => Err(format!("a list has no method {name}()")),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::bases::testing::*;
    use serde_json::{Value, json};

    #[test]
    fn evaluates_dates_and_functions() {
        let r = row(
            "Work/Alpha.md",
            &["project/a"],
            json!({"due": "2024-05-10", "tags": ["x", "y"], "n": 4.56789, "title": "hello world"}),
        );
        let cases: &[(&str, Value)] = &[
            (r#"date(due) + "1d""#, json!("2024-05-11")),
            (r#"due + "1 week""#, json!("2024-05-17")),
            (r#"today() - "7 days""#, json!("2024-04-24")),
            (r#"now() + "2h""#, json!("2024-05-01T17:45:00Z")),
            (r#"date("2024-01-31") + "1M""#, json!("2024-02-29")),
            (r#"date("2024-01-31 10:30:00") - "1y""#, json!("2023-01-31T10:30:00")),
            (r#"now() + duration("1d") * 2"#, json!("2024-05-03T15:45:00Z")),
            (r#"(now() - file.mtime) / 3600000"#, json!(75.25)),
            (r#"date(due) - today()"#, json!(9 * 86_400_000)),
            (r#"due < today() + "10d""#, json!(true)),
            (r#"file.mtime > now() - "7d""#, json!(true)),
            (r#"file.mtime.format("YYYY-MM-DD HH:mm")"#, json!("2024-04-28 12:30")),
            (r#"date(due).format("dddd, MMMM Do [of] YYYY")"#, json!("Friday, May 10th of 2024")),
            (r#"[date(due).year, date(due).month, due.day]"#, json!([2024, 5, 10])),
            (r#"file.ctime"#, json!("2024-04-01T09:00:00Z")),
            (r#"if(due, "has", "none")"#, json!("has")),
            (r#"if(missing, "has")"#, Value::Null),
            (r#"n.toFixed(2) + " units""#, json!("4.57 units")),
            (r#"n.round(1)"#, json!(4.6)),
            (r#"number("42") + 1"#, json!(43)),
            (r#"min(3, 1, 2) + max(4, 9)"#, json!(10)),
            (r#"tags.join(" & ")"#, json!("x & y")),
            (r#"tags.length"#, json!(2)),
            (r#"tags.contains("y") && !tags.isEmpty()"#, json!(true)),
            (r#"title.upper().startsWith("HELLO")"#, json!(true)),
            (r#"title.title()"#, json!("Hello World")),
            (r#"title.split(" ").map(value.length)"#, json!([5, 5])),
            (r#"[1, 2, 3, 4].filter(value % 2 == 0).reduce(acc + value, 0)"#, json!(6)),
            (r#"/^hel+o/i.matches(title)"#, json!(true)),
            (r#"title.replace(/o/g, "0")"#, json!("hell0 w0rld")),
            (r#"link("Projects/Plan")"#, json!("[[Projects/Plan]]")),
            (r#"file.asLink()"#, json!("[[Work/Alpha.md]]")),
            (r#"list(due)"#, json!(["2024-05-10"])),
            (r#"file.hasTag("project") && file.inFolder("Work/") && !file.inFolder("Wor")"#, json!(true)),
            (r#"file.hasProperty("due") && !file.hasProperty("nope")"#, json!(true)),
            (
                r#"[file.name, file.basename, file.folder, file.ext, file.size]"#,
                json!(["Alpha.md", "Alpha", "Work", "md", 100]),
            ),
            (r#"note["due"] == "2024-05-10" ? 1 : 2"#, json!(1)),
            (r#"missing.lower()"#, Value::Null),
            (r#""a" - 1"#, Value::Null),
            (r#"title * 2"#, Value::Null),
            (r#"1 / 0"#, Value::Null),
        ];
        for (expr, want) in cases {
            assert_eq!(&eval_one(expr, &r), want, "{expr}");
        }
    }
}
