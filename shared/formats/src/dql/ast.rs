//! The syntax tree of a parsed query, and what [`Query`] can tell about it before it runs.

use std::collections::BTreeSet;

use chrono::NaiveDateTime;

use super::dates::Dur;
use super::value::Link;
use super::{Query, QueryType, Source};

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Named {
    pub(super) name: String,
    pub(super) expr: Expr,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Op {
    Where(Expr),
    /// (expression, descending)
    Sort(Vec<(Expr, bool)>),
    Group(Named),
    Limit(Expr),
    Flatten(Named),
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Expr {
    Lit(Lit),
    Var(String),
    Index(Box<Expr>, Box<Expr>),
    Call(String, Vec<Expr>),
    Not(Box<Expr>),
    Bin(Box<Expr>, BinOp, Box<Expr>),
    List(Vec<Expr>),
    Object(Vec<(String, Expr)>),
    Lambda(Vec<String>, Box<Expr>),
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Lit {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Date(NaiveDateTime),
    DateShorthand(&'static str),
    Dur(Dur),
    Link(Link),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

impl BinOp {
    pub(super) fn text(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::Eq => "=",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "and",
            BinOp::Or => "or",
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Query introspection
// ---------------------------------------------------------------------------------------------

impl Query {
    /// The `FROM` clause, if any (none means every page).
    pub fn source(&self) -> Option<&Source> {
        self.source.as_ref()
    }

    /// Whether running the query reads pages' tasks (a TASK query, or `file.tasks` used).
    pub fn needs_tasks(&self) -> bool {
        self.kind == QueryType::Task || self.fields_used().iter().any(|f| f.to_lowercase().starts_with("file.tasks"))
    }

    /// The field paths the query reads, as written (`status`, `file.mtime`, `this.project`,
    /// `rows.file.link`): each variable with its chain of `.name` / `["name"]` accesses. Lambda
    /// parameters are left out.
    pub fn fields_used(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let mut exprs: Vec<&Expr> = self.columns.iter().map(|c| &c.expr).collect();
        for op in &self.ops {
            match op {
                Op::Where(e) | Op::Limit(e) => exprs.push(e),
                Op::Sort(keys) => exprs.extend(keys.iter().map(|(e, _)| e)),
                Op::Group(n) | Op::Flatten(n) => exprs.push(&n.expr),
            }
        }
        for e in exprs {
            collect_fields(e, &mut Vec::new(), &mut out);
        }
        out
    }
}

fn field_path(e: &Expr) -> Option<(String, &str)> {
    match e {
        Expr::Var(name) => Some((name.clone(), name.as_str())),
        Expr::Index(base, key) => match key.as_ref() {
            Expr::Lit(Lit::Str(k)) => field_path(base).map(|(p, root)| (format!("{p}.{k}"), root)),
            _ => None,
        },
        _ => None,
    }
}

fn collect_fields(e: &Expr, locals: &mut Vec<String>, out: &mut BTreeSet<String>) {
    if let Some((path, root)) = field_path(e) {
        if !locals.iter().any(|l| l == root) {
            out.insert(path);
        }
        return;
    }
    match e {
        Expr::Lit(_) | Expr::Var(_) => {}
        Expr::Index(a, b) | Expr::Bin(a, _, b) => {
            collect_fields(a, locals, out);
            collect_fields(b, locals, out);
        }
        Expr::Not(a) => collect_fields(a, locals, out),
        Expr::Call(_, args) | Expr::List(args) => args.iter().for_each(|a| collect_fields(a, locals, out)),
        Expr::Object(entries) => entries.iter().for_each(|(_, a)| collect_fields(a, locals, out)),
        Expr::Lambda(params, body) => {
            let n = locals.len();
            locals.extend(params.iter().cloned());
            collect_fields(body, locals, out);
            locals.truncate(n);
        }
    }
}
