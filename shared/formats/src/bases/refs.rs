//! What an expression refers to (formulas, property ids) and the constructs it uses that are
//! not evaluated here; cycles among formulas.

use std::collections::HashSet;

use super::parser::Expr;

/// Global functions evaluated here.
const GLOBALS: &[&str] =
    &["if", "now", "today", "date", "duration", "number", "link", "list", "min", "max", "escapeHTML"];
/// Methods evaluated here (on whichever types have them).
const METHODS: &[&str] = &[
    "isEmpty",
    "isTruthy",
    "isType",
    "toString",
    "contains",
    "containsAll",
    "containsAny",
    "startsWith",
    "endsWith",
    "lower",
    "upper",
    "title",
    "trim",
    "replace",
    "repeat",
    "reverse",
    "slice",
    "split",
    "abs",
    "ceil",
    "floor",
    "round",
    "toFixed",
    "join",
    "sort",
    "unique",
    "flat",
    "filter",
    "map",
    "reduce",
    "keys",
    "values",
    "matches",
    "format",
    "date",
    "time",
];
/// Methods of `file`.
const FILE_METHODS: &[&str] = &["hasTag", "inFolder", "hasLink", "hasProperty", "asLink", "isEmpty", "toString"];
/// Fields of `file` a [`Row`] can answer.
const FILE_FIELDS: &[&str] =
    &["name", "basename", "path", "folder", "ext", "size", "ctime", "mtime", "tags", "links", "properties"];

/// What an expression refers to, and the constructs it uses that are not evaluated here.
#[derive(Default)]
pub(super) struct Refs {
    pub(super) formulas: Vec<String>,
    /// Property ids, in first use (`note.X`, `file.X`, `formula.X`).
    pub(super) ids: Vec<String>,
    pub(super) unsupported: Vec<String>,
}

impl Refs {
    fn id(&mut self, id: String) {
        if !self.ids.contains(&id) {
            self.ids.push(id);
        }
    }

    pub(super) fn walk(&mut self, expr: &Expr) {
        match expr {
            Expr::Lit(_) | Expr::Regex(..) | Expr::Note | Expr::File => {}
            Expr::Prop(name) => self.id(format!("note.{name}")),
            Expr::FileField(name) => {
                if !FILE_FIELDS.contains(&name.as_str()) {
                    self.unsupported.push(format!("file.{name}"));
                }
                self.id(format!("file.{name}"));
            }
            Expr::Formula(name) => {
                if !self.formulas.contains(name) {
                    self.formulas.push(name.clone());
                }
                self.id(format!("formula.{name}"));
            }
            Expr::List(items) => items.iter().for_each(|e| self.walk(e)),
            Expr::Member(base, _) | Expr::Not(base) | Expr::Neg(base) => self.walk(base),
            Expr::Index(a, b) | Expr::Binary(_, a, b) | Expr::And(a, b) | Expr::Or(a, b) => {
                self.walk(a);
                self.walk(b);
            }
            Expr::Cond(a, b, c) => {
                self.walk(a);
                self.walk(b);
                self.walk(c);
            }
            Expr::Call(name, args) => {
                if !GLOBALS.contains(&name.as_str()) {
                    self.unsupported.push(format!("the function {name}()"));
                }
                args.iter().for_each(|e| self.walk(e));
            }
            Expr::Method(base, name, args) => {
                let known = match **base {
                    Expr::File => FILE_METHODS.contains(&name.as_str()),
                    _ => METHODS.contains(&name.as_str()),
                };
                if !known {
                    let on = if matches!(**base, Expr::File) { "file" } else { "" };
                    self.unsupported.push(format!("the method {on}.{name}()"));
                }
                self.walk(base);
                args.iter().for_each(|e| self.walk(e));
            }
            Expr::Unsupported(what) => self.unsupported.push(what.clone()),
        }
    }
}

/// A cycle through `start` in the formula graph, as the names along it (first = last).
pub(super) fn find_cycle(start: &str, edges: &dyn Fn(&str) -> Vec<String>) -> Option<Vec<String>> {
    // Iterative depth-first search from `start`, looking for a way back to any node on the path.
    let mut path: Vec<(String, Vec<String>)> = vec![(start.to_string(), edges(start))];
    let mut done: HashSet<String> = HashSet::new();
    while let Some((_, pending)) = path.last_mut() {
        match pending.pop() {
            Some(next) => {
                if let Some(at) = path.iter().position(|(n, _)| *n == next) {
                    let mut cycle: Vec<String> = path[at..].iter().map(|(n, _)| n.clone()).collect();
                    cycle.push(next);
                    return Some(cycle);
                }
                if done.contains(&next) {
                    continue;
                }
                let children = edges(&next);
                path.push((next, children));
            }
            None => {
                if let Some((name, _)) = path.pop() {
                    done.insert(name);
                }
            }
        }
    }
    None
}
