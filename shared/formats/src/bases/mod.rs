//! Obsidian Bases (`.base` files, Obsidian 1.9+): parsed, checked, evaluated over rows the
//! caller read from the index, and written back the way Obsidian writes them. Pure: no I/O.
//!
//! # The file
//!
//! A `.base` file is YAML: optional top-level `filters` (an expression string, or a mapping with
//! exactly one of `and:` / `or:` / `not:` holding a list of filters), `formulas` (name →
//! expression), `properties` (property id → settings such as `displayName`), `summaries` and
//! `views` (a list of `{type, name, filters?, order?, sort?, limit?, groupBy?, ...}`). Property ids
//! are `note.X` (frontmatter property X; a bare `X` means the same), `file.X` (name, basename,
//! path, folder, ext, size, ctime, mtime, tags, links, properties) and `formula.X`.
//!
//! [`parse`] refuses (`invalid_input`, field `path`) text that is not YAML (the message gives the
//! line and column), more than one document, a top level that is not a mapping, nesting deeper
//! than 64 levels, duplicate keys, and sections of the wrong shape (`views` not a list, a filter
//! that is neither a string nor a one-key `and`/`or`/`not` mapping, a `limit` that is not a whole
//! number, ...). What Obsidian would load but show as broken (an expression that does not parse,
//! a view without a type or of an unknown type, a sort direction other than `ASC`/`DESC`, a
//! formula that refers to a missing formula or to itself through others) is reported by
//! [`validate`].
//!
//! # Writing
//!
//! [`render`] and [`update`] write Obsidian's style: block YAML, 2-space indentation, list items
//! indented under their key, keys in the order the file had them (new keys appended; a new file
//! gets Obsidian's order: `filters`, `formulas`, `properties`, `summaries`, `views`, and in a view
//! `type`, `name`, `filters`, `groupBy`, `order`, `sort`, `limit`, `summaries`), strings plain
//! when YAML reads them back as the same string, else single-quoted when they hold a `"` and no
//! `'`, else double-quoted; multi-line strings as `|` blocks. A value that did not change keeps
//! the quoting it had, and a top-level section that did not change keeps its bytes (comments
//! included), so an unchanged file renders byte for byte as it was read. Long lines are not
//! folded.
//!
//! # Expressions
//!
//! The JavaScript-like language of filters and formulas: numbers, `"strings"` and `'strings'`,
//! `true`/`false`/`null`, `[lists]`, `/regular expressions/flags`, property access (`status`,
//! `note.status`, `note["odd key"]`, `file.name`, `formula.total`, `obj.key`, `list[0]`),
//! `+ - * / %`, `== != < > <= >=` (`===`/`!==` read as `==`/`!=`), `&& || !` (JavaScript
//! semantics: `a || b` is `a` when truthy, else `b`), `cond ? a : b` and parentheses.
//!
//! Functions: `if(cond, a, b?)`, `now()`, `today()`, `date(s)`, `duration(s)`, `number(x)`,
//! `link(path, display?)`, `list(x)`, `min(..)`, `max(..)`, `escapeHTML(s)`. Methods on any value:
//! `isEmpty()`, `isTruthy()`, `isType(t)`, `toString()`. Strings: `.length`, `contains`,
//! `containsAll`, `containsAny`, `startsWith`, `endsWith`, `lower`, `upper`, `title`, `trim`,
//! `replace` (a string pattern replaces the first occurrence; a regex all of them with `g`),
//! `repeat`, `reverse`, `slice`, `split`. Numbers: `abs`, `ceil`, `floor`, `round(digits?)`,
//! `toFixed(n)`. Lists: `.length`, `contains`, `containsAll`, `containsAny`, `join`, `reverse`,
//! `slice`, `sort`, `unique`, `flat`, `filter(expr)`, `map(expr)`, `reduce(expr, init)` (the
//! expression sees `value`, `index` and `acc`). Objects: `keys`, `values`. Regular expressions:
//! `matches(s)`. Dates: `.year`, `.month`, `.day`, `.hour`, `.minute`, `.second`,
//! `.millisecond`, `format(moment pattern)`, `date()`, `time()`. Files: `file.hasTag(..)` (any of
//! the tags, nested tags included, case-insensitive), `file.inFolder(f)` (subfolders included),
//! `file.hasLink(x)`, `file.hasProperty(p)`, `file.asLink()`.
//!
//! Dates: `date + "1d"`, `now() - "7 days"`, `date + duration("2h")` (units `y` `M` `w` `d` `h` `m`
//! `s` `ms` and their English names), `date - date` (milliseconds). A string meets a date as a
//! date when it reads as one (`due < today()` with `due: 2024-05-01`). Dates come out as ISO
//! strings (`2024-05-01`, or `2024-05-01T10:00:00` and `...Z` for times), links as `"[[path]]"`.
//!
//! Anything else (`this`, `file.backlinks`, `file.embeds`, `file(..)`, `image(..)`, `icon(..)`,
//! `html(..)`, `date.relative()`, `link.asFile()`, summaries, a regular expression the `regex`
//! crate cannot compile, ...) is refused as a whole by [`run`] with `unsupported_base_filter`,
//! naming the construct (detail `construct`). A value that errors while one row is evaluated (a
//! type mismatch such as `"a" - 1`) is null in that row's cell, and a filter that errors does not
//! match; a missing property is null, and comparisons with null are false.

mod dates;
mod eval;
mod functions;
mod lexer;
mod parser;
mod patch;
mod refs;
mod run;
mod sections;
#[cfg(test)]
mod testing;
mod validate;
mod value;
mod write;
mod yaml;

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::{Map, Value};

pub use self::patch::update;
pub use self::run::run;
pub use self::sections::parse;
pub use self::validate::validate;
pub use self::write::{render, to_yaml};
use self::yaml::Source;

/// The deepest YAML nesting a `.base` file may have.
const MAX_YAML_DEPTH: usize = 64;
/// The most YAML nodes a file may expand to (aliases included).
const MAX_YAML_NODES: usize = 100_000;
/// The deepest JSON nesting written out; deeper values are written as null.
const MAX_JSON_DEPTH: usize = 256;
/// The deepest expression tree.
const MAX_EXPR_DEPTH: usize = 64;
/// The deepest evaluation (formulas calling formulas included); deeper is an error in that row.
const MAX_EVAL_DEPTH: usize = 160;
/// The longest string or list an expression may build.
const MAX_BUILT: usize = 1 << 20;
/// The most text bytes the expressions of one row may build in all.
const ROW_BUDGET: usize = 16 << 20;

// ---------------------------------------------------------------------------------------------
// Public types.

/// A parsed `.base` file.
#[derive(Debug, Clone, PartialEq)]
pub struct Base {
    /// The top-level filters, applied in every view.
    pub filters: Option<Filter>,
    /// Formula name and expression, in file order.
    pub formulas: Vec<(String, String)>,
    /// Property id → its settings (`displayName`, ...).
    pub properties: Map<String, Value>,
    /// The views, in file order.
    pub views: Vec<View>,
    /// The whole YAML as JSON (sections this module does not model, such as `summaries` and view
    /// settings like `columnSize`, live only here; [`render`] writes them from here).
    pub raw: Value,
    /// How the file was written (key order, quoting, the text itself), so that [`render`] keeps
    /// it; [`Layout::default`] for a base that was not read from a file.
    pub layout: Layout,
}

impl Default for Base {
    fn default() -> Self {
        Self {
            filters: None,
            formulas: Vec::new(),
            properties: Map::new(),
            views: Vec::new(),
            raw: Value::Object(Map::new()),
            layout: Layout::default(),
        }
    }
}

/// A filter: an expression, or a group of filters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    /// One expression; a row matches when it is truthy.
    Expr(String),
    /// Every filter matches (an empty group matches everything).
    And(Vec<Filter>),
    /// At least one filter matches (an empty group matches everything).
    Or(Vec<Filter>),
    /// None of the filters matches.
    Not(Vec<Filter>),
}

/// One view of a base.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct View {
    /// `table`, `cards`, `list` or `map` (empty when the file gives none).
    pub kind: String,
    /// The view's name (empty when the file gives none).
    pub name: String,
    /// The view's own filters, applied with the base's.
    pub filters: Option<Filter>,
    /// The property ids shown, in order.
    pub order: Vec<String>,
    /// Property id and whether it sorts descending, most significant first.
    pub sort: Vec<(String, bool)>,
    /// The most rows shown.
    pub limit: Option<usize>,
    /// Property id the rows are grouped by, and whether groups sort descending.
    pub group_by: Option<(String, bool)>,
}

/// How a base's file was written: what [`render`] needs to write it back the same way.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Layout {
    source: Option<Source>,
}

/// One note (or file) the base is evaluated over, as the caller read it from the index.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Vault-relative path with extension (`Projects/Alpha.md`).
    pub path: String,
    /// The frontmatter.
    pub properties: Map<String, Value>,
    /// Tags (frontmatter and body), without `#`.
    pub tags: Vec<String>,
    /// Outgoing link targets, as vault paths.
    pub links: Vec<String>,
    /// Size in bytes.
    pub size: i64,
    /// Creation time, when known.
    pub ctime: Option<DateTime<Utc>>,
    /// Last modification time.
    pub mtime: DateTime<Utc>,
}

/// What [`run`] evaluates.
#[derive(Debug, Clone)]
pub struct Query<'a> {
    /// The view's name; the first view when `None`.
    pub view: Option<&'a str>,
    /// Filters used instead of the view's own (the base's filters still apply).
    pub override_filters: Option<&'a Filter>,
    /// What `today()` is.
    pub today: NaiveDate,
    /// What `now()` is.
    pub now: DateTime<Utc>,
    /// The most rows returned (the smaller of this and the view's limit when both are set).
    pub limit: Option<usize>,
}

/// The rows a view shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Result_ {
    /// The view's name (`None` when the base has no views).
    pub view: Option<String>,
    /// The column ids: the view's `order`, or `file.name` followed by the properties the filters,
    /// sort and grouping use.
    pub columns: Vec<String>,
    /// The rows, sorted (grouped first) and cut to the limit.
    pub rows: Vec<OutRow>,
    /// How many rows matched before the limit.
    pub total: usize,
}

/// One row of a [`Result_`].
#[derive(Debug, Clone, PartialEq)]
pub struct OutRow {
    /// The note's path.
    pub path: String,
    /// Column id → value (frontmatter values as they are; computed dates as ISO strings, links
    /// as `"[[path]]"`, values that failed to evaluate as null).
    pub values: Map<String, Value>,
    /// The value of the `groupBy` property, when the view groups.
    pub group: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::parser::parse_expr;
    use super::testing::*;
    use super::*;
    use serde_json::json;

    #[test]
    fn survives_hostile_input() {
        assert!(parse(&"[".repeat(100_000)).is_err());
        assert!(parse(&format!("a: {}1{}", "[".repeat(70), "]".repeat(70))).is_err());
        let bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n";
        assert!(parse(bomb).is_err());
        for expr in [
            "(".repeat(10_000),
            format!("{}1", "1+".repeat(5_000)),
            format!("{}x", "!".repeat(5_000)),
            format!("{}1{}", "[".repeat(1_000), "]".repeat(1_000)),
            "\"unterminated".to_string(),
            "/unterminated".to_string(),
            "a.".to_string(),
            "f(1,".to_string(),
        ] {
            assert!(parse_expr(&expr).is_err(), "{}", &expr[..expr.len().min(20)]);
        }
        let r = row("A.md", &[], json!({"n": 1e308, "s": "x"}));
        for expr in [
            "n * 10",
            "s.repeat(100000000)",
            "date(\"9999-12-31\") + \"1000y\"",
            "now() + duration(\"99999999999999999999d\")",
            "(1).toFixed(1000)",
            "s.slice(-5, 99999999999)",
        ] {
            let _ = eval_one(expr, &r);
        }
        assert_eq!(eval_one("s.slice(-5, 99999999999)", &r), json!("x"));
        assert_eq!(eval_one("s.repeat(1000000).replace(/x/g, s.repeat(1000)).length", &r), Value::Null);
        assert_eq!(
            eval_one("[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17].map(s.repeat(1000000)).length", &r),
            Value::Null
        );
        assert_eq!(eval_one("duration(\"1d\") * 1e300 > duration(\"1d\")", &r), Value::Null);
        // A long chain of formulas is cut off as an error in the row, not a crash.
        let mut text = String::from("formulas:\n  f0: 1\n");
        for i in 1..400 {
            text.push_str(&format!("  f{i}: formula.f{} + 1\n", i - 1));
        }
        text.push_str("views:\n  - type: table\n    name: T\n    order:\n      - formula.f399\n      - formula.f10\n");
        let base = parse(&text).unwrap();
        let result = run(&base, vec![r], &query(None)).unwrap();
        assert_eq!(result.rows[0].values["formula.f399"], Value::Null);
        assert_eq!(result.rows[0].values["formula.f10"], json!(11));
    }
}
