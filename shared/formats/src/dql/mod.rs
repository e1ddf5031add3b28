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

mod ast;
mod dates;
mod eval;
mod functions;
mod inline;
mod lexer;
mod parser;
mod run;
mod source;
#[cfg(test)]
mod testing;
mod value;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};

use self::ast::{Named, Op};
pub use self::functions::FUNCTIONS;
pub use self::inline::{field_value, inline_fields};
pub use self::parser::parse;
pub use self::run::{eval_field, run};
pub use self::source::source_matches;

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
