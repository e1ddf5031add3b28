//! A subset of the Dataview plugin's query language (DQL), with no I/O: [`parse`] reads a query,
//! [`run`] runs it over page rows the caller read from the index, [`eval_field`] evaluates one
//! expression against one page, and [`inline_fields`] / [`field_value`] read a note's inline
//! fields the way Dataview types them.
//!
//! Supported:
//! - query types `LIST [WITHOUT ID] [expr]`, `TABLE [WITHOUT ID] expr [AS name], ...` and `TASK`
//!   (`CALENDAR` is refused with `details.unsupported = "CALENDAR"`);
//! - `FROM` with `#tag` (nested tags included), `"folder"` or `"path/to/note"`, `[[note]]` (pages
//!   linking to the note; `[[]]` is the `this` page when [`run`] gets one), `outgoing([[note]])`,
//!   `and`, `or`, `-`/`!` negation and parentheses (`csv(...)` is refused);
//! - `WHERE`, `SORT expr [ASC|DESC], ...`, `GROUP BY expr [AS name]`, `LIMIT n` and
//!   `FLATTEN expr [AS name]`, in any order and repeated, after an optional `FROM`;
//! - expressions: literals (numbers, strings, booleans, `null`, `date(...)`, `dur(...)`, links,
//!   lists, objects), fields (case-insensitive, also matched by their sanitized form: `Due Date`
//!   is `due-date`), `a.b`, `a["b c"]`, `list[0]`, `list.field` (mapped over the list),
//!   `+ - * / %`, comparisons, `and`/`or`/`!`, date and duration arithmetic, lambdas, `this` and
//!   `row`, and the functions listed in [`FUNCTIONS`].
//!
//! Semantics follow Dataview: operators `and`/`or` share one precedence level (as in Dataview),
//! values of different types order by type name, `null` sorts first (so `null < date(today)` is
//! true), `=` is the same ordering (`1 = "1"` is false). Words `FROM WHERE SORT LIMIT GROUP
//! FLATTEN` cannot be bare field names (use `row.sort`); Dataview reserves all but `SORT`.
//!
//! Row errors: a row whose `WHERE`, `SORT`, `GROUP BY` or `FLATTEN` expression fails is dropped
//! (as Dataview does), and when *every* row of such a step fails the query fails with
//! `dql_error` naming the first error (as Dataview does). A `TABLE`/`LIST` cell whose expression
//! fails is `null` (Dataview drops such a row; a null cell keeps the row visible).
//!
//! Times: the server has no time zone; every date is read as UTC (a zone offset in a value is
//! converted to UTC) and `date(today)` is `today` at midnight.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

use chrono::{
    DateTime, Datelike, Days, Months, NaiveDate, NaiveDateTime, NaiveTime, SecondsFormat, TimeDelta, Timelike, Utc,
};
use otc_errors::{ErrorCode, ToolError, echo};
use regex::{Regex, RegexBuilder};
use serde::Serialize;
use serde_json::{Map, Value};

// ---------------------------------------------------------------------------------------------
// Public model
// ---------------------------------------------------------------------------------------------

/// One note as the caller read it from the index.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Page {
    /// Vault-relative path with its extension (`Projects/Alpha.md`).
    pub path: String,
    /// Frontmatter plus inline fields (the caller merges them; [`field_value`] types an inline
    /// field). Strings that read as dates, durations or `[[links]]` are typed as Dataview does.
    pub fields: Map<String, Value>,
    /// Tags without `#`, as written in the note (`project/alpha`).
    pub tags: Vec<String>,
    /// Vault paths this note links to (resolved).
    pub outlinks: Vec<String>,
    /// Vault paths of the notes linking here.
    pub inlinks: Vec<String>,
    /// The note's aliases.
    pub aliases: Vec<String>,
    /// Size in bytes.
    pub size: i64,
    /// Creation time, where known.
    pub ctime: Option<DateTime<Utc>>,
    /// Last modification time.
    pub mtime: DateTime<Utc>,
    /// The note's tasks (needed for `TASK` queries and `file.tasks`; see [`Query::needs_tasks`]).
    pub tasks: Vec<TaskItem>,
}

/// One task (a list item with a checkbox) of a page.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TaskItem {
    /// The task's text after the checkbox.
    pub text: String,
    /// The checkbox symbol (`' '`, `'x'`, `'/'`, ...).
    pub status: char,
    /// Whether the task is checked as done (`x` or `X`).
    pub completed: bool,
    /// Line number in the note (0-based, as Dataview counts).
    pub line: usize,
    /// Inline fields of the task plus the Tasks plugin's emoji dates, mapped as Dataview maps
    /// them (`due`, `scheduled`, `start`, `completion`, `created`).
    pub fields: Map<String, Value>,
    /// Tags in the task, without `#`.
    pub tags: Vec<String>,
}

/// The kind of a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum QueryType {
    /// `LIST`: one row per page (or group), with an optional value.
    List,
    /// `TABLE`: one row per page (or group), one column per expression.
    Table,
    /// `TASK`: the pages' tasks.
    Task,
}

/// A parsed query. Build one with [`parse`].
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The query type.
    pub kind: QueryType,
    /// False after `WITHOUT ID`.
    pub show_id: bool,
    /// TABLE columns, or the LIST expression (at most one).
    columns: Vec<Named>,
    source: Option<Source>,
    ops: Vec<Op>,
}

/// A `FROM` clause.
#[derive(Debug, Clone, PartialEq)]
pub struct Source(Src);

#[derive(Debug, Clone, PartialEq)]
enum Src {
    /// Lowercased, without `#`.
    Tag(String),
    Folder(String),
    /// `[[note]]`: pages linking to the note.
    LinksTo(String),
    /// `outgoing([[note]])`: pages the note links to.
    LinkedFrom(String),
    Not(Box<Src>),
    And(Box<Src>, Box<Src>),
    Or(Box<Src>, Box<Src>),
}

/// A query's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Output {
    /// The query type.
    pub kind: QueryType,
    /// Column names: the ID column (`File`, or the group's name after `GROUP BY`) unless
    /// `WITHOUT ID`, then the TABLE columns or the LIST expression. Empty for TASK.
    pub headers: Vec<String>,
    /// The rows, in result order.
    pub rows: Vec<OutRow>,
    /// The number of results: rows for LIST and TABLE, tasks for TASK.
    pub total: usize,
}

/// One result row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutRow {
    /// The page's path; empty for a group row.
    pub path: String,
    /// One value per header (dates as ISO strings, durations as Dataview prints them, links as
    /// `[[path|display]]`, lists as arrays; a cell whose expression failed is `null`).
    pub values: Vec<Value>,
    /// The group's key after `GROUP BY`.
    pub group: Option<Value>,
    /// TASK queries: the row's tasks (one row per page, or per group after `GROUP BY`).
    pub tasks: Vec<TaskItem>,
}

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

// ---------------------------------------------------------------------------------------------
// AST
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
struct Named {
    name: String,
    expr: Expr,
}

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Where(Expr),
    /// (expression, descending)
    Sort(Vec<(Expr, bool)>),
    Group(Named),
    Limit(Expr),
    Flatten(Named),
}

#[derive(Debug, Clone, PartialEq)]
enum Expr {
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
enum Lit {
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
enum BinOp {
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
    fn text(self) -> &'static str {
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

#[derive(Debug, Clone, PartialEq)]
struct Link {
    path: String,
    display: Option<String>,
    subpath: Option<String>,
    embed: bool,
}

/// A duration in Luxon's units: years, months, weeks, days, hours, minutes, seconds, ms.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Dur([f64; 8]);

// ---------------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum V {
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
    fn type_name(&self) -> &'static str {
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

    fn truthy(&self) -> bool {
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

fn obj_get<'v>(entries: &'v [(String, V)], key: &str) -> Option<&'v V> {
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

fn is_emoji(c: char) -> bool {
    let u = c as u32;
    (0x1F000..=0x1FAFF).contains(&u)
        || (0x2600..=0x27BF).contains(&u)
        || (0x2B00..=0x2BFF).contains(&u)
        || (0x2300..=0x23FF).contains(&u)
        || u == 0xFE0F
        || u == 0x200D
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || is_emoji(c)
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-' || is_emoji(c)
}

fn locale_cmp(a: &str, b: &str) -> Ordering {
    match a.to_lowercase().cmp(&b.to_lowercase()) {
        Ordering::Equal => b.cmp(a),
        o => o,
    }
}

/// Dataview's total order over values.
fn compare(a: &V, b: &V) -> Ordering {
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

fn fmt_num(n: f64) -> String {
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

const MONTHS: [&str; 12] = [
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

fn is_midnight(d: &NaiveDateTime) -> bool {
    d.time() == NaiveTime::MIN
}

fn iso(d: &NaiveDateTime) -> String {
    if is_midnight(d) {
        d.format("%Y-%m-%d").to_string()
    } else {
        d.and_utc().to_rfc3339_opts(SecondsFormat::AutoSi, true)
    }
}

fn basename(path: &str) -> &str {
    let file = path.rsplit('/').next().unwrap_or(path);
    match file.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem,
        _ => file,
    }
}

impl Link {
    fn file(path: String) -> Self {
        Link { path, display: None, subpath: None, embed: false }
    }

    /// `[[path#sub|display]]`; `default_display` puts the file's name where no display is set.
    fn markdown(&self, default_display: bool) -> String {
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
fn to_text(v: &V, nested: bool) -> String {
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

fn to_json(v: &V) -> Value {
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

// ---------------------------------------------------------------------------------------------
// Durations (Luxon's casual conversion matrix, as Dataview uses it)
// ---------------------------------------------------------------------------------------------

const UNITS: [&str; 8] = ["year", "month", "week", "day", "hour", "minute", "second", "millisecond"];

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
    fn unit(index: usize, amount: f64) -> Self {
        let mut d = Dur::default();
        d.0[index] = amount;
        d
    }

    fn millis(&self) -> f64 {
        self.0.iter().enumerate().map(|(k, v)| v * conv(k, 7)).sum()
    }

    fn plus(self, other: Dur) -> Dur {
        let mut d = self;
        for k in 0..8 {
            d.0[k] += other.0[k];
        }
        d
    }

    fn scale(self, factor: f64) -> Dur {
        Dur(self.0.map(|v| v * factor))
    }

    /// Luxon's `shiftToAll().normalize()` (Dataview's `normalizeDuration`).
    fn normalize(self) -> Dur {
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
    fn render(&self) -> String {
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
    fn as_unit(&self, unit: usize) -> f64 {
        self.millis() / conv(unit, 7)
    }
}

/// Luxon's `DateTime.plus(duration)`: whole years and months on the calendar (the day clamped to
/// the month), whole weeks and days as calendar days, the rest as milliseconds.
fn date_plus(d: NaiveDateTime, dur: &Dur) -> Result<NaiveDateTime, String> {
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
fn date_diff(a: NaiveDateTime, b: NaiveDateTime) -> Result<Dur, String> {
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

// ---------------------------------------------------------------------------------------------
// Literal readers shared by the query parser and the field typer (over chars)
// ---------------------------------------------------------------------------------------------

fn digits(s: &[char], i: usize, n: usize) -> Option<u32> {
    if i + n > s.len() || !s[i..i + n].iter().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s[i..i + n].iter().collect::<String>().parse().ok()
}

/// Dataview's date: `YYYY-MM[-DD[THH[:mm[:ss[.SSS]]]]][Z|+hh[:mm]|[zone]]`.
fn read_date(s: &[char], start: usize) -> Option<(NaiveDateTime, usize)> {
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

fn read_number(s: &[char], start: usize) -> Option<(f64, usize)> {
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

fn skip_ws(s: &[char], mut i: usize) -> usize {
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
fn read_duration(s: &[char], start: usize) -> Option<(Dur, usize)> {
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
fn read_link(s: &[char], start: usize) -> Option<(Link, usize)> {
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

fn read_string(s: &[char], start: usize) -> Option<(String, usize)> {
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

fn read_tag(s: &[char], start: usize) -> Option<(String, usize)> {
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
fn full_date(text: &str) -> Option<NaiveDateTime> {
    let s: Vec<char> = text.chars().collect();
    read_date(&s, 0).filter(|(_, end)| *end == s.len()).map(|(d, _)| d)
}

fn full_duration(text: &str) -> Option<Dur> {
    let s: Vec<char> = text.chars().collect();
    read_duration(&s, 0).filter(|(_, end)| *end == s.len()).map(|(d, _)| d)
}

fn full_embed_link(text: &str) -> Option<Link> {
    let s: Vec<char> = text.chars().collect();
    let (embed, start) = if s.first() == Some(&'!') { (true, 1) } else { (false, 0) };
    read_link(&s, start).filter(|(_, end)| *end == s.len()).map(|(mut l, _)| {
        l.embed = embed;
        l
    })
}

// ---------------------------------------------------------------------------------------------
// Inline fields
// ---------------------------------------------------------------------------------------------

/// The inline fields of a note's text, in order, as raw `(key, value)` pairs: bracketed
/// `[key:: value]` and `(key:: value)` anywhere in a line, or else a whole-line `key:: value`
/// (leading list markers, quotes and Markdown emphasis around the key dropped). Frontmatter and
/// fenced code blocks are skipped; type the values with [`field_value`].
pub fn inline_fields(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines().peekable();
    if lines.peek().is_some_and(|l| l.trim_end() == "---") {
        lines.next();
        for line in lines.by_ref() {
            let l = line.trim_end();
            if l == "---" || l == "..." {
                break;
            }
        }
    }
    let mut fence: Option<(char, usize)> = None;
    for line in lines {
        let trimmed = line.trim_start();
        let fence_char = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        if let Some(fc) = fence_char {
            let run = trimmed.chars().take_while(|c| *c == fc).count();
            if run >= 3 {
                match fence {
                    Some((open, len)) if open == fc && run >= len && trimmed[run..].trim().is_empty() => fence = None,
                    Some(_) => {}
                    None => fence = Some((fc, run)),
                }
                continue;
            }
        }
        if fence.is_some() || !line.contains("::") {
            continue;
        }
        let line = line.trim();
        let bracketed = bracketed_fields(line);
        if !bracketed.is_empty() {
            out.extend(bracketed);
        } else if let Some(field) = full_line_field(line) {
            out.push(field);
        }
    }
    out
}

fn bracketed_fields(line: &str) -> Vec<(String, String)> {
    let s: Vec<char> = line.chars().collect();
    let mut found: Vec<(usize, String, String)> = Vec::new();
    for (open, close) in [('[', ']'), ('(', ')')] {
        let mut i = 0;
        while i < s.len() {
            if s[i] != open {
                i += 1;
                continue;
            }
            match bracketed_at(&s, i, open, close) {
                Some((key, value, end)) => {
                    found.push((i, key, value));
                    i = end;
                }
                None => i += 1,
            }
        }
    }
    found.sort_by_key(|(start, _, _)| *start);
    found.into_iter().filter(|(_, k, _)| !k.is_empty()).map(|(_, k, v)| (k, v)).collect()
}

fn bracketed_at(s: &[char], start: usize, open: char, close: char) -> Option<(String, String, usize)> {
    let sep = (start + 1..s.len().saturating_sub(1)).find(|&j| s[j] == ':' && s[j + 1] == ':')?;
    let key: String = s[start + 1..sep].iter().collect();
    if key.contains(['[', ']', '(', ')']) {
        return None;
    }
    let mut nesting = 0i32;
    let mut escaped = false;
    for j in sep + 2..s.len() {
        let c = s[j];
        if c == '\\' {
            escaped = !escaped;
            continue;
        }
        if escaped {
            escaped = false;
            continue;
        }
        if c == open {
            nesting += 1;
        } else if c == close {
            nesting -= 1;
        }
        if nesting < 0 {
            let value: String = s[sep + 2..j].iter().collect();
            return Some((key.trim().to_string(), value.trim().to_string(), j + 1));
        }
    }
    None
}

fn full_line_field(line: &str) -> Option<(String, String)> {
    let (raw_key, value) = line.split_once("::")?;
    let raw_key = raw_key.trim();
    let start = raw_key.find(|c: char| c.is_alphanumeric() || c == '_' || is_emoji(c))?;
    let rest = &raw_key[start..];
    let key_end = rest
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || c.is_whitespace() || "_/-".contains(*c) || is_emoji(*c)))
        .map_or(rest.len(), |(i, _)| i);
    if !rest[key_end..].chars().all(|c| "_*~`".contains(c)) {
        return None;
    }
    let key = rest[..key_end].trim();
    (!key.is_empty()).then(|| (key.to_string(), value.trim().to_string()))
}

/// An inline field's raw value typed as Dataview types it: empty is null; a date
/// (`2024-01-05`, `2024-01-05T10:30`) becomes an ISO string; a duration (`3 hours`) its
/// normalized text (`3 hours`); `true`/`false`, numbers and `null` their JSON values; a
/// `"quoted"` string its content; a `[[link]]` stays `[[link]]`; a `#tag` stays text.
/// Comma-separated values become a list only when every item is one of those literals
/// (`1, 2, 3` or `[[a]], [[b]]`, as Dataview does); anything else (`apples, pears`) stays the
/// whole string.
pub fn field_value(raw: &str) -> Value {
    let text = raw.trim();
    if text.is_empty() {
        return Value::Null;
    }
    let s: Vec<char> = text.chars().collect();
    let Some((first, mut i)) = inline_atom(&s, 0) else { return Value::String(text.to_string()) };
    let mut items = vec![first];
    let sep = |i: usize| {
        let j = skip_ws(&s, i);
        (s.get(j) == Some(&',')).then(|| skip_ws(&s, j + 1))
    };
    if let Some(after) = sep(i) {
        i = after;
        if let Some((next, end)) = inline_atom(&s, i) {
            items.push(next);
            i = end;
            while let Some(after) = sep(i) {
                match inline_atom(&s, after) {
                    Some((next, end)) => {
                        items.push(next);
                        i = end;
                    }
                    None => break,
                }
            }
        }
    }
    if i != s.len() {
        return Value::String(text.to_string());
    }
    let json = |v: &V| match v {
        V::Link(l) => Value::String(l.markdown(false)),
        other => to_json(other),
    };
    if items.len() == 1 && sep(i).is_none() && !text.ends_with(',') {
        json(&items[0])
    } else {
        Value::Array(items.iter().map(json).collect())
    }
}

fn inline_atom(s: &[char], i: usize) -> Option<(V, usize)> {
    if let Some((d, end)) = read_date(s, i) {
        return Some((V::Date(d), end));
    }
    if let Some((d, end)) = read_duration(s, i) {
        return Some((V::Dur(d.normalize()), end));
    }
    if let Some((text, end)) = read_string(s, i) {
        return Some((V::Str(text), end));
    }
    if let Some((tag, end)) = read_tag(s, i) {
        return Some((V::Str(tag), end));
    }
    let (embed, at) = if s.get(i) == Some(&'!') { (true, i + 1) } else { (false, i) };
    if let Some((mut link, end)) = read_link(s, at) {
        link.embed = embed;
        return Some((V::Link(link), end));
    }
    for (word, value) in [("true", true), ("True", true), ("false", false), ("False", false)] {
        if starts_with_at(s, i, word) {
            return Some((V::Bool(value), i + word.len()));
        }
    }
    if let Some((n, end)) = read_number(s, i) {
        return Some((V::Num(n), end));
    }
    if starts_with_at(s, i, "null") {
        return Some((V::Null, i + 4));
    }
    None
}

fn starts_with_at(s: &[char], i: usize, word: &str) -> bool {
    let n = word.chars().count();
    i + n <= s.len() && s[i..i + n].iter().copied().eq(word.chars())
}

// ---------------------------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------------------------

const KEYWORDS: &[&str] = &["FROM", "WHERE", "SORT", "LIMIT", "GROUP", "FLATTEN"];
const MAX_DEPTH: usize = 64;
const MAX_NODES: usize = 256;
const DATE_SHORTHANDS: &[&str] = &[
    "start-of-month",
    "start-of-week",
    "start-of-year",
    "end-of-month",
    "end-of-week",
    "end-of-year",
    "yesterday",
    "tomorrow",
    "today",
    "now",
    "sow",
    "eow",
    "soy",
    "eoy",
    "som",
    "eom",
];

struct PErr {
    pos: usize,
    message: String,
    unsupported: Option<String>,
}

struct Parser {
    s: Vec<char>,
    pos: usize,
    depth: usize,
    /// Operators, accesses and negations read so far: bounds the tree's depth (evaluation
    /// recurses along left-leaning chains).
    nodes: usize,
}

impl Parser {
    fn new(text: &str) -> Self {
        Parser { s: text.chars().collect(), pos: 0, depth: 0, nodes: 0 }
    }

    fn fail(&self, pos: usize, message: impl Into<String>) -> PErr {
        PErr { pos, message: message.into(), unsupported: None }
    }

    fn unsupported(&self, pos: usize, construct: &str, message: impl Into<String>) -> PErr {
        PErr { pos, message: message.into(), unsupported: Some(construct.to_string()) }
    }

    fn nest(&mut self) -> Result<(), PErr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.fail(self.pos, "the query nests too deeply"));
        }
        Ok(())
    }

    fn count_node(&mut self) -> Result<(), PErr> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(self.fail(self.pos, "the query is too long: it has too many operators"));
        }
        Ok(())
    }

    fn peek(&self) -> Option<char> {
        self.s.get(self.pos).copied()
    }

    fn eof(&self) -> bool {
        self.pos >= self.s.len()
    }

    fn at(&self, lit: &str) -> bool {
        starts_with_at(&self.s, self.pos, lit)
    }

    fn eat(&mut self, lit: &str) -> bool {
        if self.at(lit) {
            self.pos += lit.chars().count();
            true
        } else {
            false
        }
    }

    fn ws(&mut self) -> bool {
        let start = self.pos;
        self.pos = skip_ws(&self.s, self.pos);
        self.pos > start
    }

    /// `word` (case-insensitive) here, not followed by an identifier character.
    fn word_at(&self, word: &str) -> bool {
        let n = word.chars().count();
        self.pos + n <= self.s.len()
            && self.s[self.pos..self.pos + n].iter().zip(word.chars()).all(|(a, b)| a.eq_ignore_ascii_case(&b))
            && !self.s.get(self.pos + n).is_some_and(|c| is_ident_char(*c))
    }

    fn eat_word(&mut self, word: &str) -> bool {
        if self.word_at(word) {
            self.pos += word.chars().count();
            true
        } else {
            false
        }
    }

    fn ident(&mut self) -> Option<String> {
        if !self.peek().is_some_and(is_ident_start) {
            return None;
        }
        let start = self.pos;
        while self.peek().is_some_and(is_ident_char) {
            self.pos += 1;
        }
        Some(self.s[start..self.pos].iter().collect())
    }

    fn need_ws(&mut self, after: &str) -> Result<(), PErr> {
        if self.ws() { Ok(()) } else { Err(self.fail(self.pos, format!("expected whitespace after {after}"))) }
    }

    // --- query -------------------------------------------------------------------------------

    fn query(&mut self) -> Result<Query, PErr> {
        self.ws();
        let kind = if self.eat_word("TABLE") {
            QueryType::Table
        } else if self.eat_word("LIST") {
            QueryType::List
        } else if self.eat_word("TASK") {
            QueryType::Task
        } else if self.word_at("CALENDAR") {
            return Err(self.unsupported(
                self.pos,
                "CALENDAR",
                "CALENDAR queries are not supported; use TABLE, LIST or TASK",
            ));
        } else {
            return Err(self.fail(self.pos, "expected the query type: TABLE, LIST or TASK"));
        };
        let mut show_id = true;
        let mut columns = Vec::new();
        if kind != QueryType::Task && !self.eof() {
            let at_clause = self.pos;
            if self.ws() {
                let save = self.pos;
                if self.eat_word("WITHOUT") && self.ws() && self.eat_word("ID") {
                    show_id = false;
                } else {
                    self.pos = save;
                }
                self.ws();
                if let Some(first) = self.named_opt()? {
                    columns.push(first);
                    if kind == QueryType::Table {
                        loop {
                            let save = self.pos;
                            self.ws();
                            if !self.eat(",") {
                                self.pos = save;
                                break;
                            }
                            self.ws();
                            match self.named_opt()? {
                                Some(named) => columns.push(named),
                                None => return Err(self.fail(self.pos, "expected a column expression after ','")),
                            }
                        }
                    }
                }
            } else {
                return Err(self.fail(at_clause, "expected whitespace after the query type"));
            }
        }
        let mut source = None;
        let mut ops = Vec::new();
        loop {
            self.ws();
            if self.eof() {
                break;
            }
            let at = self.pos;
            if self.eat_word("FROM") {
                if source.is_some() || !ops.is_empty() {
                    return Err(self.fail(at, "FROM must come once, right after the query type"));
                }
                self.need_ws("FROM")?;
                source = Some(Source(self.source()?));
            } else if self.eat_word("WHERE") {
                self.need_ws("WHERE")?;
                ops.push(Op::Where(self.expr()?));
            } else if self.eat_word("SORT") {
                self.need_ws("SORT")?;
                let mut keys = Vec::new();
                loop {
                    let e = self.expr()?;
                    let save = self.pos;
                    self.ws();
                    let desc = if self.eat_word("DESCENDING") || self.eat_word("DESC") {
                        true
                    } else if self.eat_word("ASCENDING") || self.eat_word("ASC") {
                        false
                    } else {
                        self.pos = save;
                        false
                    };
                    keys.push((e, desc));
                    let save = self.pos;
                    self.ws();
                    if self.eat(",") {
                        self.ws();
                    } else {
                        self.pos = save;
                        break;
                    }
                }
                ops.push(Op::Sort(keys));
            } else if self.eat_word("GROUP") {
                self.need_ws("GROUP")?;
                if !self.eat_word("BY") {
                    return Err(self.fail(self.pos, "expected BY after GROUP"));
                }
                self.need_ws("GROUP BY")?;
                let named =
                    self.named_opt()?.ok_or_else(|| self.fail(self.pos, "expected an expression after GROUP BY"))?;
                ops.push(Op::Group(named));
            } else if self.eat_word("LIMIT") {
                self.need_ws("LIMIT")?;
                ops.push(Op::Limit(self.expr()?));
            } else if self.eat_word("FLATTEN") {
                self.need_ws("FLATTEN")?;
                let named =
                    self.named_opt()?.ok_or_else(|| self.fail(self.pos, "expected an expression after FLATTEN"))?;
                ops.push(Op::Flatten(named));
            } else if self.word_at("CALENDAR") || self.word_at("TABLE") || self.word_at("LIST") || self.word_at("TASK")
            {
                return Err(self.fail(at, "a query has one query type, at its start"));
            } else {
                return Err(self.fail(
                    at,
                    "expected an operator or a data command (FROM, WHERE, SORT, GROUP BY, LIMIT, FLATTEN) or the end of the query",
                ));
            }
        }
        Ok(Query { kind, show_id, columns, source, ops })
    }

    /// `expr [AS name]`; the name defaults to the expression's text.
    fn named_opt(&mut self) -> Result<Option<Named>, PErr> {
        let start = self.pos;
        let Some(expr) = self.expr_opt()? else { return Ok(None) };
        let raw: String = self.s[start..self.pos].iter().collect();
        let mut name = raw.lines().map(str::trim).collect::<Vec<_>>().join("");
        let save = self.pos;
        if self.ws() && self.eat_word("AS") {
            self.ws();
            if let Some(id) = self.ident() {
                name = id;
            } else if let Some((text, end)) = read_string(&self.s, self.pos) {
                name = text;
                self.pos = end;
            } else {
                return Err(self.fail(self.pos, "expected a name (an identifier or a \"string\") after AS"));
            }
        } else {
            self.pos = save;
        }
        Ok(Some(Named { name, expr }))
    }

    // --- sources -----------------------------------------------------------------------------

    fn source(&mut self) -> Result<Src, PErr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.fail(self.pos, "the FROM clause nests too deeply"));
        }
        let mut left = self.source_atom()?;
        loop {
            let save = self.pos;
            self.ws();
            let and = if self.eat_word("and") || self.eat("&") {
                true
            } else if self.eat_word("or") || self.eat("|") {
                false
            } else {
                self.pos = save;
                break;
            };
            self.ws();
            self.count_node()?;
            let right = self.source_atom()?;
            left =
                if and { Src::And(Box::new(left), Box::new(right)) } else { Src::Or(Box::new(left), Box::new(right)) };
        }
        self.depth -= 1;
        Ok(left)
    }

    fn source_atom(&mut self) -> Result<Src, PErr> {
        let at = self.pos;
        match self.peek() {
            Some('(') => {
                self.pos += 1;
                self.ws();
                let inner = self.source()?;
                self.ws();
                if !self.eat(")") {
                    return Err(self.fail(self.pos, "expected ')' to close the source"));
                }
                Ok(inner)
            }
            Some('-') | Some('!') => {
                self.pos += 1;
                self.nest()?;
                let inner = self.source_atom()?;
                self.depth -= 1;
                Ok(Src::Not(Box::new(inner)))
            }
            Some('"') => {
                let (folder, end) = read_string(&self.s, self.pos)
                    .ok_or_else(|| self.fail(at, "expected the closing '\"' of the folder"))?;
                self.pos = end;
                Ok(Src::Folder(folder.trim_end_matches('/').to_string()))
            }
            Some('#') => {
                let (tag, end) = read_tag(&self.s, self.pos).expect("at '#'");
                if tag.len() == 1 {
                    return Err(self.fail(at, "expected a tag name after '#'"));
                }
                self.pos = end;
                Ok(Src::Tag(tag[1..].to_lowercase()))
            }
            Some('[') => {
                let (link, end) = read_link(&self.s, self.pos).ok_or_else(|| self.fail(at, "expected a [[link]]"))?;
                self.pos = end;
                Ok(Src::LinksTo(link.path))
            }
            _ if self.at("outgoing(") => {
                self.pos += "outgoing(".len();
                self.ws();
                let (link, end) = read_link(&self.s, self.pos)
                    .ok_or_else(|| self.fail(self.pos, "expected a [[link]] in outgoing(...)"))?;
                self.pos = end;
                self.ws();
                if !self.eat(")") {
                    return Err(self.fail(self.pos, "expected ')' after outgoing([[link]]"));
                }
                Ok(Src::LinkedFrom(link.path))
            }
            _ if self.at("csv(") => Err(self.unsupported(at, "csv() source", "csv() sources are not supported")),
            _ => Err(self.fail(at, "expected a source: #tag, \"folder\", [[note]] or outgoing([[note]])")),
        }
    }

    // --- expressions -------------------------------------------------------------------------

    fn expr(&mut self) -> Result<Expr, PErr> {
        match self.expr_opt()? {
            Some(e) => Ok(e),
            None => Err(self.fail(self.pos, "expected an expression")),
        }
    }

    fn expr_opt(&mut self) -> Result<Option<Expr>, PErr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.fail(self.pos, "the expression nests too deeply"));
        }
        let result = self.level(0);
        self.depth -= 1;
        result
    }

    fn level(&mut self, lvl: u8) -> Result<Option<Expr>, PErr> {
        let Some(mut left) = (if lvl == 3 { self.postfix()? } else { self.level(lvl + 1)? }) else { return Ok(None) };
        loop {
            let save = self.pos;
            self.ws();
            let Some(op) = self.binop(lvl) else {
                self.pos = save;
                break;
            };
            self.ws();
            self.count_node()?;
            let at = self.pos;
            let right = if lvl == 3 { self.postfix()? } else { self.level(lvl + 1)? };
            match right {
                Some(right) => left = Expr::Bin(Box::new(left), op, Box::new(right)),
                None => return Err(self.fail(at, format!("expected an expression after '{}'", op.text()))),
            }
        }
        Ok(Some(left))
    }

    fn binop(&mut self, lvl: u8) -> Option<BinOp> {
        let table: &[(&str, BinOp)] = match lvl {
            0 => &[("&", BinOp::And), ("|", BinOp::Or)],
            1 => &[
                (">=", BinOp::Ge),
                ("<=", BinOp::Le),
                ("!=", BinOp::Ne),
                (">", BinOp::Gt),
                ("<", BinOp::Lt),
                ("=", BinOp::Eq),
            ],
            2 => &[("+", BinOp::Add), ("-", BinOp::Sub)],
            _ => &[("*", BinOp::Mul), ("/", BinOp::Div), ("%", BinOp::Mod)],
        };
        if lvl == 0 {
            if self.eat_word("and") {
                return Some(BinOp::And);
            }
            if self.eat_word("or") {
                return Some(BinOp::Or);
            }
        }
        if lvl == 1 && self.at("=>") {
            return None;
        }
        for (text, op) in table {
            if self.eat(text) {
                return Some(*op);
            }
        }
        None
    }

    fn postfix(&mut self) -> Result<Option<Expr>, PErr> {
        let Some(mut e) = self.atom()? else { return Ok(None) };
        loop {
            if matches!(self.peek(), Some('.' | '[' | '(')) {
                self.count_node()?;
            }
            match self.peek() {
                Some('.') if self.s.get(self.pos + 1).is_some_and(|c| is_ident_start(*c)) => {
                    self.pos += 1;
                    let name = self.ident().expect("identifier start");
                    e = Expr::Index(Box::new(e), Box::new(Expr::Lit(Lit::Str(name))));
                }
                Some('[') => {
                    self.pos += 1;
                    self.ws();
                    let index = self.expr()?;
                    self.ws();
                    if !self.eat("]") {
                        return Err(self.fail(self.pos, "expected ']' to close the index"));
                    }
                    e = Expr::Index(Box::new(e), Box::new(index));
                }
                Some('(') => {
                    let at = self.pos;
                    let Expr::Var(name) = e else {
                        return Err(self.unsupported(
                            at,
                            "calling an expression",
                            "only named functions can be called",
                        ));
                    };
                    let lower = name.to_lowercase();
                    if !FUNCTIONS.contains(&lower.as_str()) {
                        return Err(self.unsupported(
                            at - name.chars().count(),
                            "function",
                            format!("unknown or unsupported function '{}'", echo(&name)),
                        ));
                    }
                    self.pos += 1;
                    let args = self.args(")")?;
                    e = Expr::Call(lower, args);
                }
                _ => break,
            }
        }
        Ok(Some(e))
    }

    /// Comma-separated expressions up to `close` (the opener already eaten).
    fn args(&mut self, close: &str) -> Result<Vec<Expr>, PErr> {
        let mut args = Vec::new();
        self.ws();
        if self.eat(close) {
            return Ok(args);
        }
        loop {
            args.push(self.expr()?);
            self.ws();
            if self.eat(",") {
                self.ws();
                continue;
            }
            if self.eat(close) {
                return Ok(args);
            }
            return Err(self.fail(self.pos, format!("expected ',' or '{close}'")));
        }
    }

    fn atom(&mut self) -> Result<Option<Expr>, PErr> {
        let Some(c) = self.peek() else { return Ok(None) };
        let at = self.pos;
        match c {
            '!' => {
                if let Some((mut link, end)) = read_link(&self.s, self.pos + 1) {
                    link.embed = true;
                    self.pos = end;
                    return Ok(Some(Expr::Lit(Lit::Link(link))));
                }
                self.pos += 1;
                self.count_node()?;
                self.nest()?;
                let inner = self.postfix()?;
                self.depth -= 1;
                match inner {
                    Some(e) => Ok(Some(Expr::Not(Box::new(e)))),
                    None => Err(self.fail(self.pos, "expected an expression after '!'")),
                }
            }
            '[' => {
                if let Some((link, end)) = read_link(&self.s, self.pos) {
                    self.pos = end;
                    return Ok(Some(Expr::Lit(Lit::Link(link))));
                }
                self.pos += 1;
                Ok(Some(Expr::List(self.args("]")?)))
            }
            '{' => {
                self.pos += 1;
                let mut entries = Vec::new();
                self.ws();
                if self.eat("}") {
                    return Ok(Some(Expr::Object(entries)));
                }
                loop {
                    let key = if let Some(id) = self.ident() {
                        id
                    } else if let Some((text, end)) = read_string(&self.s, self.pos) {
                        self.pos = end;
                        text
                    } else {
                        return Err(self.fail(self.pos, "expected an object key"));
                    };
                    self.ws();
                    if !self.eat(":") {
                        return Err(self.fail(self.pos, "expected ':' after the object key"));
                    }
                    self.ws();
                    entries.push((key, self.expr()?));
                    self.ws();
                    if self.eat(",") {
                        self.ws();
                    } else if self.eat("}") {
                        return Ok(Some(Expr::Object(entries)));
                    } else {
                        return Err(self.fail(self.pos, "expected ',' or '}'"));
                    }
                }
            }
            '(' => {
                if let Some(params) = self.lambda_head() {
                    self.ws();
                    let body = self.expr()?;
                    return Ok(Some(Expr::Lambda(params, Box::new(body))));
                }
                self.pos += 1;
                self.ws();
                let inner = self.expr()?;
                self.ws();
                if !self.eat(")") {
                    return Err(self.fail(self.pos, "expected ')'"));
                }
                Ok(Some(inner))
            }
            '"' => {
                let (text, end) = read_string(&self.s, self.pos)
                    .ok_or_else(|| self.fail(at, "expected the closing '\"' of the string"))?;
                self.pos = end;
                Ok(Some(Expr::Lit(Lit::Str(text))))
            }
            c if c.is_ascii_digit() || (c == '-' && self.s.get(self.pos + 1).is_some_and(|d| d.is_ascii_digit())) => {
                let (n, end) = read_number(&self.s, self.pos).expect("a digit");
                self.pos = end;
                Ok(Some(Expr::Lit(Lit::Num(n))))
            }
            c if is_ident_start(c) => {
                let id = self.ident().expect("identifier start");
                match id.as_str() {
                    "true" | "True" => return Ok(Some(Expr::Lit(Lit::Bool(true)))),
                    "false" | "False" => return Ok(Some(Expr::Lit(Lit::Bool(false)))),
                    "null" => return Ok(Some(Expr::Lit(Lit::Null))),
                    _ => {}
                }
                let lower = id.to_lowercase();
                if (lower == "date" || lower == "dur")
                    && self.peek() == Some('(')
                    && let Some(lit) = self.literal_call(lower == "date")
                {
                    return Ok(Some(Expr::Lit(lit)));
                }
                let is_call = self.peek() == Some('(') && FUNCTIONS.contains(&lower.as_str());
                if KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(&id)) && !is_call {
                    self.pos = at;
                    return Ok(None);
                }
                Ok(Some(Expr::Var(id)))
            }
            _ => Ok(None),
        }
    }

    /// `(a, b) =>`; restores the position when this is no lambda.
    fn lambda_head(&mut self) -> Option<Vec<String>> {
        let save = self.pos;
        self.pos += 1;
        self.ws();
        let mut params = Vec::new();
        if !self.eat(")") {
            loop {
                let Some(id) = self.ident() else {
                    self.pos = save;
                    return None;
                };
                params.push(id);
                self.ws();
                if self.eat(",") {
                    self.ws();
                } else if self.eat(")") {
                    break;
                } else {
                    self.pos = save;
                    return None;
                }
            }
        }
        self.ws();
        if self.eat("=>") {
            Some(params)
        } else {
            self.pos = save;
            None
        }
    }

    /// `date(2024-01-05)`, `date(today)`, `dur(3 days)` as literals; restores the position when
    /// the argument is an expression instead.
    fn literal_call(&mut self, date: bool) -> Option<Lit> {
        let save = self.pos;
        self.pos += 1;
        self.ws();
        let lit = if date {
            if let Some(short) = DATE_SHORTHANDS.iter().find(|s| self.at(s)) {
                self.pos += short.len();
                Some(Lit::DateShorthand(short))
            } else if let Some((d, end)) = read_date(&self.s, self.pos) {
                self.pos = end;
                Some(Lit::Date(d))
            } else {
                None
            }
        } else if let Some((d, end)) = read_duration(&self.s, self.pos) {
            self.pos = end;
            Some(Lit::Dur(d))
        } else {
            None
        };
        self.ws();
        if lit.is_some() && self.eat(")") {
            lit
        } else {
            self.pos = save;
            None
        }
    }
}

fn line_col(s: &[char], pos: usize) -> (usize, usize) {
    let pos = pos.min(s.len());
    let line = s[..pos].iter().filter(|c| **c == '\n').count() + 1;
    let line_start = s[..pos].iter().rposition(|c| *c == '\n').map_or(0, |i| i + 1);
    (line, pos - line_start + 1)
}

fn parse_error(err: PErr, s: &[char]) -> ToolError {
    let (line, column) = line_col(s, err.pos);
    let mut out =
        ToolError::with_message(ErrorCode::DqlError, format!("{} (line {line}, column {column})", err.message))
            .detail("line", line)
            .detail("column", column);
    if let Some(construct) = err.unsupported {
        out = out.detail("unsupported", construct);
    }
    out.bounded()
}

/// Lines starting with `//` are comments.
fn strip_comments(text: &str) -> String {
    text.split('\n')
        .map(
            |line| {
                if line.trim_start().starts_with("//") { " ".repeat(line.chars().count()) } else { line.to_string() }
            },
        )
        .collect::<Vec<_>>()
        .join("\n")
}

/// Reads a query. A syntax error answers `dql_error` with `details.line` and `details.column`
/// (1-based) and a message naming what was expected there; a construct outside the subset
/// (`CALENDAR`, `csv()` sources, an unknown function, calling a non-function) answers the same
/// code with `details.unsupported` naming it.
pub fn parse(dql: &str) -> Result<Query, ToolError> {
    let text = strip_comments(dql);
    let mut parser = Parser::new(&text);
    parser.query().map_err(|e| parse_error(e, &parser.s))
}

fn parse_expression(expression: &str) -> Result<Expr, ToolError> {
    let mut parser = Parser::new(expression);
    let result = (|| {
        parser.ws();
        let e = parser.expr()?;
        parser.ws();
        if !parser.eof() {
            return Err(parser.fail(parser.pos, "expected an operator or the end of the expression"));
        }
        Ok(e)
    })();
    result.map_err(|e| parse_error(e, &parser.s))
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

// ---------------------------------------------------------------------------------------------
// Sources
// ---------------------------------------------------------------------------------------------

/// Whether `target` (a link's text, `Alpha` or `Projects/Alpha.md`) names the note at `path`,
/// as Obsidian resolves links (case-insensitive, `.md` optional, by name or by path suffix).
fn link_names(target: &str, path: &str) -> bool {
    let target = target.trim().to_lowercase();
    let path = path.to_lowercase();
    let t = target.strip_suffix(".md").unwrap_or(&target);
    let p = path.strip_suffix(".md").unwrap_or(&path);
    !t.is_empty() && (p == t || p.ends_with(&format!("/{t}")))
}

fn src_matches(src: &Src, page: &Page) -> bool {
    match src {
        Src::Tag(tag) => page.tags.iter().any(|t| {
            let t = t.trim_start_matches('#').to_lowercase();
            t == *tag || t.starts_with(&format!("{tag}/"))
        }),
        Src::Folder(folder) => {
            folder.is_empty()
                || page.path == *folder
                || page.path == format!("{folder}.md")
                || page.path.starts_with(&format!("{folder}/"))
        }
        Src::LinksTo(target) => page.outlinks.iter().any(|o| link_names(target, o)),
        Src::LinkedFrom(target) => page.inlinks.iter().any(|i| link_names(target, i)),
        Src::Not(inner) => !src_matches(inner, page),
        Src::And(a, b) => src_matches(a, page) && src_matches(b, page),
        Src::Or(a, b) => src_matches(a, page) || src_matches(b, page),
    }
}

/// Whether the page is in the `FROM` clause's set: a tag (nested tags included, any case), a
/// folder (or the note itself, with or without `.md`), pages linking to `[[note]]`, pages
/// `outgoing([[note]])` links to (read from the page's `inlinks`), combined with and/or/not.
/// `[[]]` (the current note) matches nothing here; [`run`] binds it to `this`.
pub fn source_matches(source: &Source, page: &Page) -> bool {
    src_matches(&source.0, page)
}

fn bind_this(src: &Src, this: &str) -> Src {
    match src {
        Src::LinksTo(t) if t.is_empty() => Src::LinksTo(this.to_string()),
        Src::LinkedFrom(t) if t.is_empty() => Src::LinkedFrom(this.to_string()),
        Src::Not(a) => Src::Not(Box::new(bind_this(a, this))),
        Src::And(a, b) => Src::And(Box::new(bind_this(a, this)), Box::new(bind_this(b, this))),
        Src::Or(a, b) => Src::Or(Box::new(bind_this(a, this)), Box::new(bind_this(b, this))),
        other => other.clone(),
    }
}

// ---------------------------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------------------------

struct Resolver {
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

    fn resolve(&self, target: &str) -> Option<usize> {
        let t = target.trim().to_lowercase();
        let t = t.strip_suffix(".md").unwrap_or(&t);
        self.by_path.get(t).or_else(|| if t.contains('/') { None } else { self.by_name.get(t) }).copied()
    }
}

struct Ctx<'a> {
    pages: &'a [Page],
    resolver: Resolver,
    this: V,
    today: NaiveDate,
    now: NaiveDateTime,
    cache: RefCell<HashMap<usize, V>>,
    regexes: RefCell<HashMap<String, Rc<Regex>>>,
}

type Locals = [(String, V)];

impl<'a> Ctx<'a> {
    fn new(pages: &'a [Page], this: Option<&Page>, today: NaiveDate, now: DateTime<Utc>) -> Self {
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

    fn link(&self, mut link: Link) -> Link {
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

    fn page(&self, i: usize) -> V {
        if let Some(v) = self.cache.borrow().get(&i) {
            return v.clone();
        }
        let v = self.build_page(&self.pages[i]);
        self.cache.borrow_mut().insert(i, v.clone());
        v
    }

    fn task(&self, page: &Page, task: &TaskItem) -> Vec<(String, V)> {
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

    fn shorthand(&self, name: &str) -> NaiveDateTime {
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

    fn eval(&self, e: &Expr, row: &V, locals: &Locals) -> Result<V, String> {
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

    fn index(&self, base: &V, key: &V) -> V {
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

    fn apply(&self, f: &V, args: Vec<V>, row: &V, locals: &Locals) -> Result<V, String> {
        let V::Func(func) = f else { return Err(format!("expected a function (lambda), got {}", f.type_name())) };
        let (params, body) = func.as_ref();
        let mut scope: Vec<(String, V)> = locals.to_vec();
        let mut args = args.into_iter();
        for p in params {
            scope.push((p.clone(), args.next().unwrap_or(V::Null)));
        }
        self.eval(body, row, &scope)
    }

    fn regex(&self, pattern: &str) -> Result<Rc<Regex>, String> {
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

    fn call(&self, name: &str, args: Vec<V>, row: &V, locals: &Locals) -> Result<V, String> {
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

    fn call_one(&self, name: &str, args: Vec<V>, row: &V, locals: &Locals) -> Result<V, String> {
        use V::*;
        let types = || args.iter().map(V::type_name).collect::<Vec<_>>().join(", ");
        let no_impl = || Err(format!("no implementation of '{name}' for arguments ({})", types()));
        let a = args.as_slice();
        match name {
            "length" => match a {
                [List(l)] => Ok(Num(l.len() as f64)),
                [Obj(o)] => Ok(Num(o.len() as f64)),
                [Str(s)] => Ok(Num(s.encode_utf16().count() as f64)),
                [Null] => Ok(Num(0.0)),
                _ => no_impl(),
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
                _ => no_impl(),
            },
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
                _ => no_impl(),
            },
            "dur" => match a {
                [Str(s)] => Ok(full_duration(s.trim()).map_or(Null, Dur)),
                [Dur(d)] => Ok(Dur(*d)),
                [Null] => Ok(Null),
                _ => no_impl(),
            },
            "dateformat" => match a {
                [Date(d), Str(f)] => Ok(Str(dateformat(d, f))),
                [Null, Str(_)] => Ok(Null),
                _ => no_impl(),
            },
            "localtime" => match a {
                [Date(d)] => Ok(Date(*d)),
                [Null] => Ok(Null),
                _ => no_impl(),
            },
            "striptime" => match a {
                [Date(d)] => Ok(Date(d.date().and_time(NaiveTime::MIN))),
                [Null] => Ok(Null),
                _ => no_impl(),
            },
            "number" => match a {
                [Num(n)] => Ok(Num(*n)),
                [Str(s)] => {
                    let r = self.regex(r"-?[0-9]+(\.[0-9]+)?")?;
                    Ok(r.find(s).and_then(|m| m.as_str().parse().ok()).map_or(Null, Num))
                }
                [Null] => Ok(Null),
                _ => no_impl(),
            },
            "string" => match a {
                [x] => Ok(Str(to_text(x, false))),
                _ => no_impl(),
            },
            "typeof" => match a {
                [x] => Ok(Str(x.type_name().into())),
                _ => no_impl(),
            },
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
                _ => no_impl(),
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
                _ => no_impl(),
            },
            "sum" | "product" => match a {
                [List(l)] => reduce_op(l, if name == "sum" { BinOp::Add } else { BinOp::Mul }),
                [x] => Ok(x.clone()),
                _ => no_impl(),
            },
            "average" => match a {
                [List(l)] if l.is_empty() => Ok(Null),
                [List(l)] => binop(BinOp::Div, reduce_op(l, BinOp::Add)?, Num(l.len() as f64)),
                [Null] => Ok(Null),
                _ => no_impl(),
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
                _ => no_impl(),
            },
            "contains" | "icontains" | "econtains" => contains(name, &args[0], &args[1])
                .ok_or_else(|| format!("no implementation of '{name}' for arguments ({})", types())),
            "containsword" => match a {
                [Str(h), Str(n)] => {
                    let r = self.regex(&format!(r"(?i)\b{}\b", regex::escape(n)))?;
                    Ok(Bool(r.is_match(h)))
                }
                [Null, _] | [_, Null] => Ok(Null),
                _ => no_impl(),
            },
            "lower" | "upper" => match a {
                [Str(s)] => Ok(Str(if name == "lower" { s.to_lowercase() } else { s.to_uppercase() })),
                [Null] => Ok(Null),
                _ => no_impl(),
            },
            "startswith" | "endswith" => match a {
                [Str(s), Str(p)] => {
                    Ok(Bool(if name == "startswith" { s.starts_with(p.as_str()) } else { s.ends_with(p.as_str()) }))
                }
                [Null, _] | [_, Null] => Ok(Null),
                _ => no_impl(),
            },
            "replace" => match a {
                [Str(s), Str(p), Str(r)] => Ok(Str(if p.is_empty() { s.clone() } else { s.replace(p.as_str(), r) })),
                [Null, _, _] | [_, Null, _] | [_, _, Null] => Ok(Null),
                _ => no_impl(),
            },
            "regexreplace" => match a {
                [Str(s), Str(p), Str(r)] => Ok(Str(self.regex(p)?.replace_all(s, r.as_str()).into_owned())),
                [Null, _, _] | [_, Null, _] | [_, _, Null] => Ok(Null),
                _ => no_impl(),
            },
            "regexmatch" => match a {
                [Str(p), Str(s)] => {
                    let anchored =
                        if !p.starts_with('^') && !p.ends_with('$') { format!("^(?:{p})$") } else { p.clone() };
                    Ok(Bool(self.regex(&anchored)?.is_match(s)))
                }
                [Null, _] | [_, Null] => Ok(Bool(false)),
                _ => no_impl(),
            },
            "regextest" => match a {
                [Str(p), Str(s)] => Ok(Bool(self.regex(p)?.is_match(s))),
                [Null, _] | [_, Null] => Ok(Bool(false)),
                _ => no_impl(),
            },
            "split" => match a {
                [Str(s), Str(d)] => Ok(List(self.regex(d)?.split(s).map(|p| Str(p.to_string())).collect())),
                [Str(s), Str(d), Num(n)] => {
                    Ok(List(self.regex(d)?.split(s).take(n.max(0.0) as usize).map(|p| Str(p.to_string())).collect()))
                }
                [Null, ..] | [_, Null, ..] | [_, _, Null] => Ok(Null),
                _ => no_impl(),
            },
            "padleft" | "padright" => {
                let (s, len, pad) = match a {
                    [Str(s), Num(n)] => (s, *n, " ".to_string()),
                    [Str(s), Num(n), Str(p)] => (s, *n, p.clone()),
                    _ if a.iter().any(|v| matches!(v, Null)) => return Ok(Null),
                    _ => return no_impl(),
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
                _ => no_impl(),
            },
            "default" | "ldefault" => match a {
                [Null, fallback] => Ok(fallback.clone()),
                [v, _] => Ok(v.clone()),
                _ => no_impl(),
            },
            "choice" => match a {
                [c, x, y] => Ok(if c.truthy() { x.clone() } else { y.clone() }),
                _ => no_impl(),
            },
            "reverse" => match a {
                [List(l)] => Ok(List(l.iter().rev().cloned().collect())),
                [Str(s)] => Ok(Str(s.chars().rev().collect())),
                [x] => Ok(x.clone()),
                _ => no_impl(),
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
                _ => no_impl(),
            },
            "flat" => match a {
                [List(l)] => Ok(List(flatten(l, 1))),
                [List(l), Num(d)] => Ok(List(flatten(l, d.clamp(0.0, 64.0) as usize))),
                [x] | [x, _] => Ok(x.clone()),
                _ => no_impl(),
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
                _ => no_impl(),
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
            "meta" => match a {
                [Link(l)] => Ok(Obj(Rc::new(vec![
                    ("display".into(), l.display.clone().map_or(Null, Str)),
                    ("embed".into(), Bool(l.embed)),
                    ("path".into(), Str(l.path.clone())),
                    ("subpath".into(), l.subpath.clone().map_or(Null, Str)),
                    ("type".into(), Str(if l.subpath.is_some() { "header" } else { "file" }.into())),
                ]))),
                _ => no_impl(),
            },
            _ => Err(format!("unknown function '{name}'")),
        }
    }
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

fn binop(op: BinOp, a: V, b: V) -> Result<V, String> {
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

fn date_field(d: &NaiveDateTime, key: &str) -> V {
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

fn day_in_name(name: &str) -> Option<NaiveDateTime> {
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
fn dateformat(d: &NaiveDateTime, fmt: &str) -> String {
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

// ---------------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------------

#[derive(Clone)]
struct Row {
    data: V,
    origin: Origin,
}

#[derive(Clone)]
enum Origin {
    Page(usize),
    Task(usize, usize),
    Group(V, Vec<Row>),
}

fn every_row_failed(step: &str, first: &str) -> ToolError {
    ToolError::with_message(ErrorCode::DqlError, format!("every row failed in {step}: {first}"))
        .detail("step", step)
        .bounded()
}

fn set_field(data: &V, name: &str, value: V) -> V {
    let mut entries = match data {
        V::Obj(o) => o.as_ref().clone(),
        _ => Vec::new(),
    };
    match entries.iter_mut().find(|(k, _)| k == name) {
        Some(slot) => slot.1 = value,
        None => entries.push((name.to_string(), value)),
    }
    V::Obj(Rc::new(entries))
}

impl Ctx<'_> {
    fn step(&self, rows: Vec<Row>, op: &Op, group_names: &mut Vec<String>) -> Result<Vec<Row>, ToolError> {
        let incoming = rows.len();
        let mut errors: Vec<String> = Vec::new();
        let out = match op {
            Op::Where(e) => {
                let mut kept = Vec::new();
                for row in rows {
                    match self.eval(e, &row.data, &[]) {
                        Ok(v) if v.truthy() => kept.push(row),
                        Ok(_) => {}
                        Err(err) => errors.push(err),
                    }
                }
                kept
            }
            Op::Sort(keys) => {
                let mut keyed = Vec::new();
                'rows: for row in rows {
                    let mut values = Vec::new();
                    for (e, _) in keys {
                        match self.eval(e, &row.data, &[]) {
                            Ok(v) => values.push(v),
                            Err(err) => {
                                errors.push(err);
                                continue 'rows;
                            }
                        }
                    }
                    keyed.push((values, row));
                }
                keyed.sort_by(|(x, _), (y, _)| {
                    for (k, (_, desc)) in keys.iter().enumerate() {
                        let c = compare(&x[k], &y[k]);
                        if c != Ordering::Equal {
                            return if *desc { c.reverse() } else { c };
                        }
                    }
                    Ordering::Equal
                });
                keyed.into_iter().map(|(_, r)| r).collect()
            }
            Op::Limit(e) => {
                let n = match self.eval(e, &V::Obj(Rc::new(Vec::new())), &[]) {
                    Ok(V::Num(n)) => n,
                    Ok(other) => {
                        return Err(ToolError::with_message(
                            ErrorCode::DqlError,
                            format!("LIMIT should be a number, not {}", other.type_name()),
                        ));
                    }
                    Err(err) => {
                        return Err(
                            ToolError::with_message(ErrorCode::DqlError, format!("LIMIT failed: {err}")).bounded()
                        );
                    }
                };
                let mut rows = rows;
                let keep =
                    if n < 0.0 { rows.len().saturating_sub((-n) as usize) } else { (n as usize).min(rows.len()) };
                rows.truncate(keep);
                rows
            }
            Op::Group(named) => {
                let mut keyed = Vec::new();
                for row in rows {
                    match self.eval(&named.expr, &row.data, &[]) {
                        Ok(v) => keyed.push((v, row)),
                        Err(err) => errors.push(err),
                    }
                }
                keyed.sort_by(|(x, _), (y, _)| compare(x, y));
                let mut groups: Vec<(V, Vec<Row>)> = Vec::new();
                for (key, row) in keyed {
                    match groups.last_mut() {
                        Some((k, members)) if compare(k, &key) == Ordering::Equal => members.push(row),
                        _ => groups.push((key, vec![row])),
                    }
                }
                group_names.push(named.name.clone());
                groups
                    .into_iter()
                    .map(|(key, members)| {
                        let mut entries = vec![
                            ("key".to_string(), key.clone()),
                            ("rows".to_string(), V::List(members.iter().map(|m| m.data.clone()).collect())),
                        ];
                        if named.name != "key" && named.name != "rows" {
                            entries.push((named.name.clone(), key.clone()));
                        }
                        Row { data: V::Obj(Rc::new(entries)), origin: Origin::Group(key, members) }
                    })
                    .collect()
            }
            Op::Flatten(named) => {
                let mut out = Vec::new();
                for row in rows {
                    match self.eval(&named.expr, &row.data, &[]) {
                        Ok(V::List(items)) => {
                            for item in items {
                                out.push(Row {
                                    data: set_field(&row.data, &named.name, item),
                                    origin: row.origin.clone(),
                                });
                            }
                        }
                        Ok(v) => {
                            out.push(Row { data: set_field(&row.data, &named.name, v), origin: row.origin.clone() })
                        }
                        Err(err) => errors.push(err),
                    }
                }
                if group_names.last() == Some(&named.name) {
                    group_names.pop();
                }
                out
            }
        };
        if incoming > 0 && errors.len() >= incoming {
            let step = match op {
                Op::Where(_) => "WHERE",
                Op::Sort(_) => "SORT",
                Op::Group(_) => "GROUP BY",
                Op::Limit(_) => "LIMIT",
                Op::Flatten(_) => "FLATTEN",
            };
            return Err(every_row_failed(step, &errors[0]));
        }
        Ok(out)
    }

    fn id_of(&self, row: &Row) -> V {
        match &row.origin {
            Origin::Page(i) | Origin::Task(i, _) => V::Link(Link::file(self.pages[*i].path.clone())),
            Origin::Group(key, _) => key.clone(),
        }
    }

    fn tasks_of(&self, row: &Row, out: &mut Vec<TaskItem>) {
        match &row.origin {
            Origin::Task(p, t) => out.push(self.pages[*p].tasks[*t].clone()),
            Origin::Group(_, members) => members.iter().for_each(|m| self.tasks_of(m, out)),
            Origin::Page(_) => {}
        }
    }
}

/// Runs a parsed query over `pages` (the caller may pass every page, or only those
/// [`source_matches`] accepts; the `FROM` clause is applied here either way). `this` is the
/// page the query runs in (`this.field`, `FROM [[]]`); `today` and `now` fix `date(today)` and
/// `date(now)`. LIST and TABLE give one row per page (or group); TASK gives one row per page
/// (or group) holding its matching tasks, in result order. A query-level failure (every row of a
/// step failing, a bad LIMIT) answers `dql_error`.
pub fn run(
    query: &Query,
    pages: &[Page],
    this: Option<&Page>,
    today: NaiveDate,
    now: DateTime<Utc>,
) -> Result<Output, ToolError> {
    let ctx = Ctx::new(pages, this, today, now);
    let source = query.source.as_ref().map(|s| match this {
        Some(page) => bind_this(&s.0, &page.path),
        None => s.0.clone(),
    });
    let mut rows = Vec::new();
    for (i, page) in pages.iter().enumerate() {
        if source.as_ref().is_some_and(|s| !src_matches(s, page)) {
            continue;
        }
        if query.kind == QueryType::Task {
            let V::Obj(page_obj) = ctx.page(i) else { continue };
            for (t, task) in page.tasks.iter().enumerate() {
                let mut entries = ctx.task(page, task);
                for (k, v) in page_obj.iter() {
                    if !entries.iter().any(|(e, _)| e == k) {
                        entries.push((k.clone(), v.clone()));
                    }
                }
                rows.push(Row { data: V::Obj(Rc::new(entries)), origin: Origin::Task(i, t) });
            }
        } else {
            rows.push(Row { data: ctx.page(i), origin: Origin::Page(i) });
        }
    }
    let mut group_names = Vec::new();
    for op in &query.ops {
        rows = ctx.step(rows, op, &mut group_names)?;
    }
    let id_name = group_names.last().cloned().unwrap_or_else(|| "File".to_string());
    let group_of = |row: &Row| match &row.origin {
        Origin::Group(key, _) => Some(to_json(key)),
        _ => None,
    };
    let path_of = |row: &Row| match &row.origin {
        Origin::Page(i) | Origin::Task(i, _) => pages[*i].path.clone(),
        Origin::Group(..) => String::new(),
    };
    if query.kind == QueryType::Task {
        let mut out: Vec<OutRow> = Vec::new();
        let mut total = 0;
        for row in &rows {
            let mut tasks = Vec::new();
            ctx.tasks_of(row, &mut tasks);
            total += tasks.len();
            let path = path_of(row);
            let group = group_of(row);
            match out.last_mut() {
                Some(last) if group.is_none() && last.group.is_none() && last.path == path => last.tasks.extend(tasks),
                _ => out.push(OutRow { path, values: Vec::new(), group, tasks }),
            }
        }
        return Ok(Output { kind: QueryType::Task, headers: Vec::new(), rows: out, total });
    }
    let mut headers = Vec::new();
    if query.show_id || (query.kind == QueryType::List && query.columns.is_empty()) {
        headers.push(id_name);
    }
    headers.extend(query.columns.iter().map(|c| c.name.clone()));
    let with_id = headers.len() > query.columns.len();
    let out: Vec<OutRow> = rows
        .iter()
        .map(|row| {
            let mut values = Vec::with_capacity(headers.len());
            if with_id {
                values.push(to_json(&ctx.id_of(row)));
            }
            for column in &query.columns {
                values.push(ctx.eval(&column.expr, &row.data, &[]).map_or(Value::Null, |v| to_json(&v)));
            }
            OutRow { path: path_of(row), values, group: group_of(row), tasks: Vec::new() }
        })
        .collect();
    Ok(Output { kind: query.kind, headers, total: out.len(), rows: out })
}

/// Evaluates one expression with `this` (and the row) set to `page`, for `eval_dataview_field`:
/// `file.name`, `this.status`, `dateformat(file.mtime, "yyyy-MM-dd")`. A syntax error answers
/// `dql_error` with line and column; an evaluation error answers `dql_error` with its reason.
pub fn eval_field(expression: &str, page: &Page, today: NaiveDate, now: DateTime<Utc>) -> Result<Value, ToolError> {
    let expr = parse_expression(expression)?;
    let pages = std::slice::from_ref(page);
    let ctx = Ctx::new(pages, Some(page), today, now);
    let row = ctx.page(0);
    ctx.eval(&expr, &row, &[])
        .map(|v| to_json(&v))
        .map_err(|e| ToolError::with_message(ErrorCode::DqlError, format!("the expression failed: {e}")).bounded())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc)
    }

    fn fields(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn task(text: &str, status: char, line: usize, fields_: Value, tags: &[&str]) -> TaskItem {
        TaskItem {
            text: text.into(),
            status,
            completed: status == 'x',
            line,
            fields: fields(fields_),
            tags: tags.iter().map(|t| t.to_string()).collect(),
        }
    }

    fn page(path: &str, f: Value, tags: &[&str], out: &[&str], inl: &[&str], mtime: &str) -> Page {
        Page {
            path: path.into(),
            fields: fields(f),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            outlinks: out.iter().map(|t| t.to_string()).collect(),
            inlinks: inl.iter().map(|t| t.to_string()).collect(),
            aliases: Vec::new(),
            size: 100,
            ctime: Some(at("2023-01-01T00:00:00Z")),
            mtime: at(mtime),
            tasks: Vec::new(),
        }
    }

    fn vault() -> Vec<Page> {
        let mut alpha = page(
            "Projects/Alpha.md",
            json!({"status": "active", "due": "2024-01-10", "priority": 2, "Due Date": "2024-01-12", "owner": "[[Bob]]"}),
            &["project/alpha", "work"],
            &["People/Bob.md", "Projects/Beta.md"],
            &["Daily/2024-01-05.md"],
            "2024-01-04T10:00:00Z",
        );
        alpha.tasks = vec![
            task("Write spec", ' ', 5, json!({"due": "2024-01-08"}), &[]),
            task("Kickoff", 'x', 6, json!({"completion": "2024-01-02"}), &[]),
        ];
        let mut beta = page(
            "Projects/Beta.md",
            json!({"status": "done", "due": "2024-01-03", "priority": 1}),
            &["project/beta"],
            &[],
            &["Projects/Alpha.md"],
            "2023-12-01T00:00:00Z",
        );
        beta.tasks = vec![task("Review", ' ', 3, json!({}), &[])];
        let gamma = page(
            "Projects/Archive/Gamma.md",
            json!({"status": "active", "priority": 3}),
            &["project"],
            &[],
            &[],
            "2024-01-06T08:00:00Z",
        );
        let mut bob = page(
            "People/Bob.md",
            json!({"role": "dev"}),
            &["person"],
            &[],
            &["Projects/Alpha.md"],
            "2023-06-01T00:00:00Z",
        );
        bob.aliases = vec!["Robert".into()];
        let mut daily = page(
            "Daily/2024-01-05.md",
            json!({"mood": "good"}),
            &["daily"],
            &["Projects/Alpha.md"],
            &[],
            "2024-01-05T21:00:00Z",
        );
        daily.tasks = vec![task("Call Bob", ' ', 2, json!({}), &["call"])];
        let inbox = page("Inbox.md", json!({}), &[], &[], &[], "2024-01-07T00:00:00Z");
        let reading = page(
            "Notes/Reading.md",
            json!({"books": ["Dune", "Emma"], "rating": 4.5}),
            &["reading"],
            &[],
            &[],
            "2024-01-02T00:00:00Z",
        );
        let ideas = page(
            "Notes/Ideas.md",
            json!({"Time Spent": "90 minutes"}),
            &["idea", "work"],
            &[],
            &[],
            "2024-01-07T00:00:00Z",
        );
        vec![alpha, beta, gamma, bob, daily, inbox, reading, ideas]
    }

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2024, 1, 8).unwrap()
    }

    fn now() -> DateTime<Utc> {
        at("2024-01-08T12:00:00Z")
    }

    fn go(dql: &str) -> Output {
        run(&parse(dql).unwrap_or_else(|e| panic!("{dql}: {e:?}")), &vault(), None, today(), now())
            .unwrap_or_else(|e| panic!("{dql}: {e:?}"))
    }

    fn paths(out: &Output) -> Vec<String> {
        out.rows.iter().map(|r| r.path.clone()).collect()
    }

    fn values(out: &Output) -> Vec<Vec<Value>> {
        out.rows.iter().map(|r| r.values.clone()).collect()
    }

    fn ev(expression: &str) -> Value {
        let v = vault();
        eval_field(expression, &v[0], today(), now()).unwrap_or_else(|e| panic!("{expression}: {e:?}"))
    }

    #[test]
    fn list_pages_of_a_folder() {
        let out = go("LIST FROM \"Projects\"");
        assert_eq!(out.kind, QueryType::List);
        assert_eq!(out.headers, ["File"]);
        assert_eq!(paths(&out), ["Projects/Alpha.md", "Projects/Beta.md", "Projects/Archive/Gamma.md"]);
        assert_eq!(out.rows[0].values, [json!("[[Projects/Alpha.md|Alpha]]")]);
        assert_eq!(out.total, 3);
        let all = go("list");
        assert_eq!(all.total, 8);
    }

    #[test]
    fn list_with_an_expression_and_without_id() {
        let out = go("LIST status FROM #project SORT file.name");
        assert_eq!(out.headers, ["File", "status"]);
        assert_eq!(
            values(&out),
            [
                vec![json!("[[Projects/Alpha.md|Alpha]]"), json!("active")],
                vec![json!("[[Projects/Beta.md|Beta]]"), json!("done")],
                vec![json!("[[Projects/Archive/Gamma.md|Gamma]]"), json!("active")],
            ]
        );
        let out = go("LIST WITHOUT ID file.name FROM #project SORT file.name DESC");
        assert_eq!(out.headers, ["file.name"]);
        assert_eq!(values(&out), [vec![json!("Gamma")], vec![json!("Beta")], vec![json!("Alpha")]]);
    }

    #[test]
    fn table_with_names_and_without_id() {
        let out = go("TABLE status AS \"State\", priority, due FROM \"Projects\" SORT priority DESC");
        assert_eq!(out.headers, ["File", "State", "priority", "due"]);
        assert_eq!(
            values(&out),
            [
                vec![json!("[[Projects/Archive/Gamma.md|Gamma]]"), json!("active"), json!(3), Value::Null],
                vec![json!("[[Projects/Alpha.md|Alpha]]"), json!("active"), json!(2), json!("2024-01-10")],
                vec![json!("[[Projects/Beta.md|Beta]]"), json!("done"), json!(1), json!("2024-01-03")],
            ]
        );
        // Case-insensitive and sanitized field names; links in fields resolve to vault paths.
        let out = go("TABLE WITHOUT ID file.name AS Name, due-date, STATUS, owner, owner.role FROM \"Projects/Alpha\"");
        assert_eq!(out.headers, ["Name", "due-date", "STATUS", "owner", "owner.role"]);
        assert_eq!(
            values(&out),
            [vec![json!("Alpha"), json!("2024-01-12"), json!("active"), json!("[[People/Bob.md|Bob]]"), json!("dev")]]
        );
        let out = go("TABLE time-spent, row[\"Time Spent\"] + dur(30 minutes) AS total FROM #idea");
        assert_eq!(
            values(&out),
            [vec![json!("[[Notes/Ideas.md|Ideas]]"), json!("1 hour, 30 minutes"), json!("2 hours")]]
        );
    }

    #[test]
    fn task_queries() {
        let out = go("TASK FROM \"Projects\" WHERE !completed");
        assert_eq!(out.kind, QueryType::Task);
        assert!(out.headers.is_empty());
        assert_eq!(out.total, 2);
        assert_eq!(paths(&out), ["Projects/Alpha.md", "Projects/Beta.md"]);
        assert_eq!(out.rows[0].tasks.iter().map(|t| t.text.as_str()).collect::<Vec<_>>(), ["Write spec"]);
        assert_eq!(out.rows[1].tasks[0].text, "Review");

        let out = go("TASK WHERE !completed AND contains(tags, \"#call\")");
        assert_eq!(paths(&out), ["Daily/2024-01-05.md"]);
        // A task reads its own fields first, then its page's (Dataview's merge).
        let out = go("TASK WHERE due <= date(2024-01-08) AND due SORT text");
        let texts: Vec<&str> = out.rows.iter().flat_map(|r| r.tasks.iter().map(|t| t.text.as_str())).collect();
        assert_eq!(texts, ["Review", "Write spec"]);
        let out = go("TASK FROM #project GROUP BY file.name");
        assert_eq!(out.rows.len(), 2);
        assert_eq!(out.rows[0].group, Some(json!("Alpha")));
        assert_eq!(out.rows[0].tasks.len(), 2);
        assert_eq!(out.total, 3);
    }

    #[test]
    fn from_sources() {
        let names = |dql: &str| go(dql).rows.iter().map(|r| basename(&r.path).to_string()).collect::<Vec<_>>();
        assert_eq!(names("LIST FROM #project"), ["Alpha", "Beta", "Gamma"]);
        assert_eq!(names("LIST FROM #PROJECT/alpha"), ["Alpha"]);
        assert_eq!(names("LIST FROM #work AND \"Notes\""), ["Ideas"]);
        assert_eq!(names("LIST FROM #work or #daily"), ["Alpha", "2024-01-05", "Ideas"]);
        assert_eq!(names("LIST FROM \"Projects\" and -#project/alpha"), ["Beta", "Gamma"]);
        assert_eq!(names("LIST FROM [[Alpha]]"), ["2024-01-05"]);
        assert_eq!(names("LIST FROM outgoing([[Projects/Alpha]])"), ["Beta", "Bob"]);
        assert_eq!(names("LIST FROM \"Projects/Alpha\""), ["Alpha"]);
        assert_eq!(names("LIST FROM !(\"Projects\" or #daily)"), ["Bob", "Inbox", "Reading", "Ideas"]);
        let q = parse("LIST FROM [[]]").unwrap();
        let pages = vault();
        let out = run(&q, &pages, Some(&pages[0]), today(), now()).unwrap();
        assert_eq!(paths(&out), ["Daily/2024-01-05.md"]);
        let source = parse("LIST FROM #person or \"Inbox\"").unwrap();
        let source = source.source().unwrap();
        assert!(
            source_matches(source, &pages[3])
                && source_matches(source, &pages[5])
                && !source_matches(source, &pages[0])
        );
    }

    #[test]
    fn where_with_dates() {
        let names = |dql: &str| go(dql).rows.iter().map(|r| basename(&r.path).to_string()).collect::<Vec<_>>();
        assert_eq!(
            names("LIST WHERE file.mtime >= date(today) - dur(7 days)"),
            ["Alpha", "Gamma", "2024-01-05", "Inbox", "Reading", "Ideas"]
        );
        assert_eq!(
            names("LIST WHERE due < date(today)"),
            ["Beta", "Gamma", "Bob", "2024-01-05", "Inbox", "Reading", "Ideas"]
        );
        assert_eq!(names("LIST WHERE due AND due < date(today)"), ["Beta"]);
        assert_eq!(names("LIST WHERE file.day = date(2024-01-05)"), ["2024-01-05"]);
        assert_eq!(names("LIST WHERE date(now) - file.mtime < dur(2 days)"), ["Inbox", "Ideas"]);
    }

    #[test]
    fn sort_on_several_keys() {
        let out = go("TABLE priority FROM #project SORT status ASC, priority DESC");
        assert_eq!(paths(&out), ["Projects/Archive/Gamma.md", "Projects/Alpha.md", "Projects/Beta.md"]);
        let out = go("LIST FROM #project SORT status DESCENDING, file.name ascending");
        assert_eq!(paths(&out), ["Projects/Beta.md", "Projects/Alpha.md", "Projects/Archive/Gamma.md"]);
    }

    #[test]
    fn group_by_with_rows() {
        let out = go("TABLE length(rows) AS n, rows.file.name AS names FROM #project GROUP BY status");
        assert_eq!(out.headers, ["status", "n", "names"]);
        assert_eq!(
            values(&out),
            [
                vec![json!("active"), json!(2), json!(["Alpha", "Gamma"])],
                vec![json!("done"), json!(1), json!(["Beta"])]
            ]
        );
        assert_eq!(out.rows[0].group, Some(json!("active")));
        assert_eq!(out.rows[0].path, "");
        let out = go("LIST rows.file.link FROM #project GROUP BY status AS state WHERE length(rows) > 1");
        assert_eq!(out.headers, ["state", "rows.file.link"]);
        assert_eq!(
            values(&out),
            [vec![json!("active"), json!(["[[Projects/Alpha.md|Alpha]]", "[[Projects/Archive/Gamma.md|Gamma]]"])]]
        );
        let out = go("TABLE WITHOUT ID key, sum(rows.priority) AS total FROM #project GROUP BY status SORT key DESC");
        assert_eq!(values(&out), [vec![json!("done"), json!(1)], vec![json!("active"), json!(5)]]);
    }

    #[test]
    fn limit_and_flatten() {
        let out = go("LIST FROM #project SORT file.name LIMIT 2");
        assert_eq!(paths(&out), ["Projects/Alpha.md", "Projects/Beta.md"]);
        assert_eq!(out.total, 2);
        let out = go("TABLE WITHOUT ID file.name, book FROM \"Notes\" FLATTEN books AS book WHERE book");
        assert_eq!(values(&out), [vec![json!("Reading"), json!("Dune")], vec![json!("Reading"), json!("Emma")]]);
        let out = go("TABLE WITHOUT ID file.name, t FROM #work FLATTEN file.etags AS t SORT t LIMIT 3");
        assert_eq!(
            values(&out),
            [
                vec![json!("Ideas"), json!("#idea")],
                vec![json!("Alpha"), json!("#project/alpha")],
                vec![json!("Alpha"), json!("#work")]
            ]
        );
    }

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

    #[test]
    fn errors_in_rows() {
        // A failing cell is null; a failing WHERE drops the row; every row failing fails the query.
        let out = go("TABLE WITHOUT ID file.name, priority + 1 AS next FROM \"Notes\" OR #project SORT file.name");
        assert_eq!(out.rows.iter().find(|r| r.path == "Notes/Ideas.md").unwrap().values[1], Value::Null);
        assert_eq!(out.rows.iter().find(|r| r.path == "Projects/Beta.md").unwrap().values[1], json!(2));
        let out = go("LIST FROM \"Notes\" or #project WHERE priority + 1 > 2");
        assert_eq!(paths(&out), ["Projects/Alpha.md", "Projects/Archive/Gamma.md"]);
        let q = parse("LIST FROM \"Notes\" WHERE mood + 1 > 2").unwrap();
        let err = run(&q, &vault(), None, today(), now()).unwrap_err();
        assert_eq!(err.code, ErrorCode::DqlError);
        assert_eq!(err.details["step"], "WHERE");
        let q = parse("LIST LIMIT \"x\"").unwrap();
        assert_eq!(run(&q, &vault(), None, today(), now()).unwrap_err().code, ErrorCode::DqlError);
    }

    #[test]
    fn syntax_errors_name_line_and_column() {
        let err = parse("LIST\nWHERE status =").unwrap_err();
        assert_eq!(err.code, ErrorCode::DqlError);
        assert_eq!((err.details["line"].clone(), err.details["column"].clone()), (json!(2), json!(15)));
        assert!(err.message.contains("expected an expression after '='"), "{}", err.message);
        let err = parse("LIST FROM \"a\" WHER x").unwrap_err();
        assert_eq!((err.details["line"].clone(), err.details["column"].clone()), (json!(1), json!(15)));
        assert!(err.message.contains("data command"), "{}", err.message);
        let err = parse("TABLE a, FROM #x").unwrap_err();
        assert!(err.message.contains("column expression"), "{}", err.message);
        let err = parse("CHART * FROM x").unwrap_err();
        assert_eq!((err.details["line"].clone(), err.details["column"].clone()), (json!(1), json!(1)));
        assert!(err.message.contains("TABLE, LIST or TASK"));
        let err = parse("LIST FROM #a WHERE (x").unwrap_err();
        assert!(err.message.contains("expected ')'"), "{}", err.message);
        let err = parse("LIST WHERE x SORT y FROM #a").unwrap_err();
        assert!(err.message.contains("FROM must come once"), "{}", err.message);
        let err = parse("LIST FROM nowhere").unwrap_err();
        assert!(err.message.contains("expected a source"), "{}", err.message);
        let err = parse(&format!("LIST WHERE {}1{}", "(".repeat(200), ")".repeat(200))).unwrap_err();
        assert!(err.message.contains("nests too deeply"), "{}", err.message);
        for long in [
            format!("LIST WHERE x{}", " + 1".repeat(100_000)),
            format!("LIST WHERE x{}", ".a".repeat(100_000)),
            format!("LIST FROM #a{}", " or #b".repeat(100_000)),
        ] {
            assert!(parse(&long).unwrap_err().message.contains("too many operators"));
        }
        let long = parse(&format!("LIST WITHOUT ID priority{} FROM \"Projects/Beta\"", " + 1".repeat(250))).unwrap();
        assert_eq!(run(&long, &vault(), None, today(), now()).unwrap().rows[0].values, [json!(251)]);
        let long = parse(&format!("LIST WITHOUT ID file{} FROM \"Projects/Beta\"", ".name".repeat(250))).unwrap();
        assert_eq!(run(&long, &vault(), None, today(), now()).unwrap().rows[0].values, [Value::Null]);
        for deep in [format!("LIST WHERE {}x", "!".repeat(100_000)), format!("LIST FROM {}#a", "-".repeat(100_000))] {
            assert!(parse(&deep).unwrap_err().message.contains("nests too deeply"));
        }
        let err = eval_field("1 +", &vault()[0], today(), now()).unwrap_err();
        assert_eq!(err.details["column"], 4);
    }

    #[test]
    fn unsupported_constructs_are_refused() {
        let err = parse("CALENDAR file.mtime FROM #x").unwrap_err();
        assert_eq!(err.code, ErrorCode::DqlError);
        assert_eq!(err.details["unsupported"], "CALENDAR");
        assert_eq!(err.details["line"], 1);
        let err = parse("LIST FROM csv(\"data.csv\")").unwrap_err();
        assert_eq!(err.details["unsupported"], "csv() source");
        let err = parse("LIST hash(file.name)").unwrap_err();
        assert_eq!(err.details["unsupported"], "function");
        assert!(err.message.contains("'hash'"));
        assert_eq!(err.details["column"], 6);
    }

    #[test]
    fn parsed_queries_and_outputs_cross_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Query>();
        send_sync::<Source>();
        send_sync::<Output>();
        send_sync::<Page>();
    }

    #[test]
    fn parsing_details() {
        let q = parse("// a comment\nTABLE WITHOUT ID\n  file.link AS Note,\n  status\nFROM #project\nWHERE status != \"done\"\nSORT file.mtime DESC").unwrap();
        assert_eq!(q.kind, QueryType::Table);
        assert!(!q.show_id);
        let used: Vec<String> = q.fields_used().into_iter().collect();
        assert_eq!(used, ["file.link", "file.mtime", "status"]);
        assert!(!q.needs_tasks());
        assert!(parse("TASK").unwrap().needs_tasks());
        assert!(parse("LIST length(file.tasks)").unwrap().needs_tasks());
        let q = parse("LIST filter(file.outlinks, (l) => l.status = this.status)").unwrap();
        assert_eq!(q.fields_used().into_iter().collect::<Vec<_>>(), ["file.outlinks", "this.status"]);
        assert!(parse("list").unwrap().source().is_none());
        assert!(parse("table without id").is_ok());
        // `row` reaches a field whose name is a keyword.
        assert!(parse("LIST row.sort").is_ok());
    }

    #[test]
    fn inline_fields_are_read_from_text() {
        let text = "---\nstatus:: ignored\n---\n# Title\nStatus:: active\n- **Owner**:: [[Bob]]\nA line with [due:: 2024-01-05] and (hidden:: yes) fields.\n```\ncode:: no\n```\n- [ ] Task [priority:: high] [[link]]\nplain text\nurl: http://x\n";
        assert_eq!(
            inline_fields(text),
            [
                ("Status".to_string(), "active".to_string()),
                ("Owner".to_string(), "[[Bob]]".to_string()),
                ("due".to_string(), "2024-01-05".to_string()),
                ("hidden".to_string(), "yes".to_string()),
                ("priority".to_string(), "high".to_string()),
            ]
        );
        assert_eq!(inline_fields("[a:: [nested] value]"), [("a".to_string(), "[nested] value".to_string())]);
    }

    #[test]
    fn field_values_are_typed() {
        assert_eq!(field_value(""), Value::Null);
        assert_eq!(field_value(" 42 "), json!(42));
        assert_eq!(field_value("-1.5"), json!(-1.5));
        assert_eq!(field_value("true"), json!(true));
        assert_eq!(field_value("null"), Value::Null);
        assert_eq!(field_value("2024-01-05"), json!("2024-01-05"));
        assert_eq!(field_value("2024-01-05T14:30"), json!("2024-01-05T14:30:00Z"));
        assert_eq!(field_value("3 hours"), json!("3 hours"));
        assert_eq!(field_value("90 min"), json!("1 hour, 30 minutes"));
        assert_eq!(field_value("[[Bob|Robert]]"), json!("[[Bob|Robert]]"));
        assert_eq!(field_value("\"quoted, text\""), json!("quoted, text"));
        assert_eq!(field_value("#tag"), json!("#tag"));
        assert_eq!(field_value("1, 2, 3"), json!([1, 2, 3]));
        assert_eq!(field_value("[[a]], [[b]]"), json!(["[[a]]", "[[b]]"]));
        assert_eq!(field_value("apples, pears"), json!("apples, pears"));
        assert_eq!(field_value("10 apples"), json!("10 apples"));
        assert_eq!(field_value("2024-13-01"), json!("2024-13-01"));
        // Typed values read back the same way in a query.
        let mut p = vault().remove(5);
        p.fields.insert("when".into(), field_value("2024-01-05"));
        p.fields.insert("spent".into(), field_value("90 min"));
        assert_eq!(eval_field("when + spent", &p, today(), now()).unwrap(), json!("2024-01-05T01:30:00Z"));
    }
}
