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

use std::cell::{Cell, RefCell};
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::ops::Range;

use chrono::{DateTime, Datelike, Months, NaiveDate, NaiveDateTime, Timelike, Utc};
use otc_errors::{ErrorCode, ToolError, echo};
use regex::{Regex, RegexBuilder};
use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};
use yaml_rust2::{Yaml, YamlLoader};

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
/// The view types Obsidian has.
const VIEW_TYPES: [&str; 4] = ["table", "cards", "list", "map"];
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

// ---------------------------------------------------------------------------------------------
// The public functions.

/// Parses a `.base` file; empty text is an empty base. Refusals are `bases_syntax_error` with
/// field `path` and what is wrong in the message: the file, not the call, needs fixing.
pub fn parse(text: &str) -> Result<Base, ToolError> {
    let syntax = |m: String| ToolError::with_message(ErrorCode::BasesSyntaxError, m).detail("field", "path");
    let source = load(text).map_err(syntax)?;
    let mut base = assemble(&source.root).map_err(|m| syntax(format!("the .base file is malformed: {m}")))?;
    base.layout = Layout { source: Some(source) };
    Ok(base)
}

/// Evaluates a view over `rows`: the base's filters and the view's (or `query.override_filters`),
/// formulas per row, sort (stable; nulls last), grouping and limit. Unknown view names are
/// `invalid_input` (field `view`); constructs not evaluated here (and formula cycles) are
/// `unsupported_base_filter` with detail `construct`.
pub fn run(base: &Base, rows: Vec<Row>, query: &Query) -> Result<Result_, ToolError> {
    let view = match query.view {
        Some(name) => Some(base.views.iter().find(|v| v.name == name).ok_or_else(|| {
            let names: Vec<&str> = base.views.iter().map(|v| v.name.as_str()).collect();
            ToolError::with_message(ErrorCode::InvalidInput, format!("the base has no view named {name:?}"))
                .detail("field", "view")
                .detail("views", names)
        })?),
        None => base.views.first(),
    };
    let view_filter = query.override_filters.or(view.and_then(|v| v.filters.as_ref()));
    let plan = Plan::build(base, view, view_filter)?;
    let clock = Clock { now: query.now, today: query.today };

    let mut keyed: Vec<(usize, Vec<V>)> = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let env = Env::new(row, &plan, clock);
        if !env.matches() {
            continue;
        }
        let mut keys = Vec::new();
        if let Some((target, _)) = &plan.group {
            keys.push(env.target(target).unwrap_or(V::Null));
        }
        for (target, _) in &plan.sort {
            keys.push(env.target(target).unwrap_or(V::Null));
        }
        keyed.push((i, keys));
    }
    let directions: Vec<bool> = plan.group.iter().chain(plan.sort.iter()).map(|(_, desc)| *desc).collect();
    keyed.sort_by(|a, b| {
        for (k, desc) in directions.iter().enumerate() {
            let ordering = sort_cmp(&a.1[k], &b.1[k], *desc);
            if ordering != Ordering::Equal {
                return ordering;
            }
        }
        Ordering::Equal
    });
    let total = keyed.len();
    let limit = match (query.limit, view.and_then(|v| v.limit)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    keyed.truncate(limit.unwrap_or(usize::MAX));

    let mut out = Vec::with_capacity(keyed.len());
    for (i, _) in keyed {
        let row = &rows[i];
        let env = Env::new(row, &plan, clock);
        let mut values = Map::new();
        for (id, target) in &plan.columns {
            values.insert(id.clone(), env.output(target));
        }
        let group = plan.group.as_ref().map(|(target, _)| env.output(target));
        out.push(OutRow { path: row.path.clone(), values, group });
    }
    Ok(Result_ {
        view: view.map(|v| v.name.clone()),
        columns: plan.columns.iter().map(|(id, _)| id.clone()).collect(),
        rows: out,
        total,
    })
}

/// Writes the base as a `.base` file: the typed fields (`filters`, `formulas`, `properties`,
/// `views`) over `raw` (which supplies everything else), in the layout it was read with. An
/// unchanged base renders byte for byte as its file was.
pub fn render(base: &Base) -> String {
    let source = base.layout.source.as_ref();
    let guide = source.map(|s| &s.root);
    let raw = match &base.raw {
        Value::Object(_) => base.raw.clone(),
        _ => Value::Object(Map::new()),
    };
    let Node::Map(mut entries) = build(&raw, guide, Ctx::Root, 0) else {
        return String::new();
    };
    overlay(&mut entries, base);
    write(source, &Node::Map(entries))
}

/// Writes any JSON value as YAML in Obsidian's style (a base's sections in Obsidian's order).
pub fn to_yaml(value: &Value) -> String {
    write(None, &build(value, None, Ctx::Root, 0))
}

/// The base's problems, one sentence each: expressions that do not parse (naming the formula or
/// filter they sit in), views without a type or of an unknown type, sort and group directions
/// other than `ASC`/`DESC`, formulas that use missing formulas or form a cycle.
pub fn validate(base: &Base) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(filter) = &base.filters {
        filter_problems(filter, "the base's filters", &mut problems);
    }
    let names: HashSet<&str> = base.formulas.iter().map(|(n, _)| n.as_str()).collect();
    let mut graph: HashMap<&str, Vec<String>> = HashMap::new();
    for (name, text) in &base.formulas {
        match parse_expr(text) {
            Ok(expr) => {
                let mut refs = Refs::default();
                refs.walk(&expr);
                for used in &refs.formulas {
                    if !names.contains(used.as_str()) {
                        problems.push(format!("formula {name:?} uses formula.{used}, which is not defined"));
                    }
                }
                graph.insert(name, refs.formulas);
            }
            Err(e) => problems.push(format!("formula {name:?} does not parse: {e} (in {:?})", echo(text))),
        }
    }
    let mut reported = HashSet::new();
    for (name, _) in &base.formulas {
        if let Some(cycle) = find_cycle(name, &|n: &str| graph.get(n).cloned().unwrap_or_default()) {
            let mut key: Vec<String> = cycle.clone();
            key.sort();
            key.dedup();
            if reported.insert(key) {
                problems.push(format!("formulas form a cycle: {}", cycle.join(" → ")));
            }
        }
    }
    let raw_views = base.raw.get("views").and_then(Value::as_array);
    for (i, view) in base.views.iter().enumerate() {
        let label = if view.name.is_empty() { format!("view {}", i + 1) } else { format!("view {:?}", view.name) };
        if view.kind.is_empty() {
            problems.push(format!("{label} has no type (table, cards, list or map)"));
        } else if !VIEW_TYPES.contains(&view.kind.as_str()) {
            problems.push(format!("{label} has the unknown type {:?} (table, cards, list or map)", view.kind));
        }
        if let Some(filter) = &view.filters {
            filter_problems(filter, &format!("{label}'s filters"), &mut problems);
        }
        let raw_view = raw_views.and_then(|v| v.get(i));
        let sorts = raw_view.and_then(|v| v.get("sort")).and_then(Value::as_array);
        for (j, item) in sorts.into_iter().flatten().enumerate() {
            if let Some(direction) = item.get("direction")
                && !matches!(direction.as_str(), Some("ASC" | "DESC"))
            {
                problems.push(format!("{label}'s sort {} has the direction {direction}, not ASC or DESC", j + 1));
            }
        }
        if let Some(direction) = raw_view.and_then(|v| v.get("groupBy")).and_then(|g| g.get("direction"))
            && !matches!(direction.as_str(), Some("ASC" | "DESC"))
        {
            problems.push(format!("{label}'s groupBy has the direction {direction}, not ASC or DESC"));
        }
        for id in view.order.iter().chain(view.sort.iter().map(|(id, _)| id)).chain(view.group_by.iter().map(|g| &g.0))
        {
            if let Some(name) = id.strip_prefix("formula.")
                && !names.contains(name)
            {
                problems.push(format!("{label} uses {id}, which is not defined"));
            }
        }
    }
    problems.dedup();
    problems
}

/// Applies a JSON merge patch (RFC 7386: objects merge, null deletes, anything else replaces) to
/// a `.base` file and writes it back: existing keys keep their order, new keys are appended, and
/// the top-level sections the patch does not change keep their bytes. The result is checked:
/// a malformed result, or problems [`validate`] finds that the file did not already have, are
/// refused (`invalid_input`, field `patch`, detail `problems`).
pub fn update(text: &str, patch: &Value) -> Result<String, ToolError> {
    let source = load(text).map_err(|m| invalid("path", m))?;
    if !patch.is_object() {
        return Err(invalid("patch", "a merge patch for a .base file is a JSON object"));
    }
    if json_depth(patch) > MAX_YAML_DEPTH {
        return Err(invalid("patch", format!("the patch is nested deeper than {MAX_YAML_DEPTH} levels")));
    }
    let root = merge(&source.root, patch, Ctx::Root, 0);
    if root.depth() > MAX_YAML_DEPTH {
        return Err(invalid("patch", format!("the patched base would be nested deeper than {MAX_YAML_DEPTH} levels")));
    }
    if same(&root, &source.root) {
        return Ok(text.to_string());
    }
    let after = assemble(&root).map_err(|m| invalid("patch", format!("the patched base would be malformed: {m}")))?;
    let before = assemble(&source.root).map(|b| validate(&b)).unwrap_or_default();
    let problems: Vec<String> = validate(&after).into_iter().filter(|p| !before.contains(p)).collect();
    if !problems.is_empty() {
        return Err(ToolError::with_message(
            ErrorCode::InvalidInput,
            format!("the patched base would have problems: {}", problems.join("; ")),
        )
        .detail("field", "patch")
        .detail("problems", problems));
    }
    Ok(write(Some(&source), &root))
}

fn invalid(field: &str, message: impl Into<String>) -> ToolError {
    ToolError::with_message(ErrorCode::InvalidInput, message).detail("field", field)
}

fn refusal(construct: &str, place: &str, expression: &str) -> ToolError {
    ToolError::with_message(
        ErrorCode::UnsupportedBaseFilter,
        format!("{place} uses {construct}, which this server does not evaluate"),
    )
    .detail("construct", construct)
    .detail("expression", echo(expression))
}

// ---------------------------------------------------------------------------------------------
// The YAML document as an ordered tree that remembers how each scalar was written.

/// How a scalar was written.
#[derive(Debug, Clone, PartialEq)]
enum Style {
    /// Not read from a file: the writer chooses.
    New,
    /// Plain, with its text.
    Plain(String),
    Single,
    Double,
    Literal,
    Folded,
}

#[derive(Debug, Clone, PartialEq)]
struct Scalar {
    /// Null, a boolean, a number or a string.
    value: Value,
    style: Style,
}

#[derive(Debug, Clone, PartialEq)]
struct Key {
    name: String,
    style: Style,
}

impl Key {
    fn new(name: &str) -> Self {
        Key { name: name.to_string(), style: Style::New }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Scalar(Scalar),
    Seq(Vec<Node>),
    Map(Vec<(Key, Node)>),
}

impl Node {
    fn new_scalar(value: Value) -> Self {
        Node::Scalar(Scalar { value, style: Style::New })
    }

    fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Map(entries) => entries.iter().find(|(k, _)| k.name == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn depth(&self) -> usize {
        match self {
            Node::Scalar(_) => 1,
            Node::Seq(items) => 1 + items.iter().map(Node::depth).max().unwrap_or(0),
            Node::Map(entries) => 1 + entries.iter().map(|(_, v)| v.depth()).max().unwrap_or(0),
        }
    }

    fn count(&self) -> usize {
        match self {
            Node::Scalar(_) => 1,
            Node::Seq(items) => 1 + items.iter().map(Node::count).sum::<usize>(),
            Node::Map(entries) => 1 + entries.iter().map(|(_, v)| 1 + v.count()).sum::<usize>(),
        }
    }

    fn to_json(&self) -> Value {
        match self {
            Node::Scalar(s) => s.value.clone(),
            Node::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Node::Map(entries) => Value::Object(entries.iter().map(|(k, v)| (k.name.clone(), v.to_json())).collect()),
        }
    }

    /// The text of a scalar (a number or boolean as written); `None` for null and collections.
    fn text(&self) -> Option<String> {
        match self {
            Node::Scalar(Scalar { value: Value::String(s), .. }) => Some(s.clone()),
            Node::Scalar(Scalar { value: Value::Null, .. }) => None,
            Node::Scalar(Scalar { style: Style::Plain(src), .. }) => Some(src.clone()),
            Node::Scalar(Scalar { value, .. }) => Some(value.to_string()),
            _ => None,
        }
    }

    fn is_null(&self) -> bool {
        matches!(self, Node::Scalar(Scalar { value: Value::Null, .. }))
    }
}

/// Same content and order, however the scalars are quoted.
fn same(a: &Node, b: &Node) -> bool {
    match (a, b) {
        (Node::Scalar(x), Node::Scalar(y)) => x.value == y.value,
        (Node::Seq(x), Node::Seq(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b)),
        (Node::Map(x), Node::Map(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((ka, va), (kb, vb))| ka.name == kb.name && same(va, vb))
        }
        _ => false,
    }
}

/// A file as read: its text, its tree and where each top-level key's lines are.
#[derive(Debug, Clone, PartialEq)]
struct Source {
    text: String,
    root: Node,
    /// The bytes before the first top-level key, and each top-level key's byte range (its lines
    /// up to the next key's); `None` when the top level is not a plain block mapping.
    regions: Option<(usize, Vec<Range<usize>>)>,
}

enum Frame {
    Seq { items: Vec<Node>, anchor: usize },
    Map { entries: Vec<(Key, Node)>, key: Option<Key>, anchor: usize },
}

#[derive(Default)]
struct Loader {
    stack: Vec<Frame>,
    root: Option<Node>,
    anchors: HashMap<usize, Node>,
    documents: usize,
    nodes: usize,
    error: Option<String>,
    /// Line (1-based) and column (0-based) of each top-level key.
    root_keys: Vec<(usize, usize)>,
}

impl Loader {
    fn fail(&mut self, message: impl Into<String>, mark: Marker) {
        if self.error.is_none() {
            self.error = Some(format!("{} (line {}, column {})", message.into(), mark.line(), mark.col() + 1));
        }
    }

    fn open(&mut self, frame: Frame, mark: Marker) {
        if self.stack.len() >= MAX_YAML_DEPTH {
            self.fail(format!("the YAML is nested deeper than {MAX_YAML_DEPTH} levels"), mark);
        } else {
            self.stack.push(frame);
        }
    }

    fn add(&mut self, node: Node, anchor: usize, mark: Marker) {
        self.nodes += 1;
        if self.nodes > MAX_YAML_NODES {
            return self.fail(format!("the YAML has more than {MAX_YAML_NODES} values"), mark);
        }
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        let depth = self.stack.len();
        match self.stack.last_mut() {
            None => {
                if self.root.is_none() {
                    self.root = Some(node);
                }
            }
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map { entries, key, .. }) => match key.take() {
                Some(k) => entries.push((k, node)),
                None => {
                    let Node::Scalar(scalar) = node else {
                        return self.fail("a mapping key must be a single value, not a list or mapping", mark);
                    };
                    let name = match (&scalar.value, &scalar.style) {
                        (Value::String(s), _) => s.clone(),
                        (_, Style::Plain(src)) => src.clone(),
                        (value, _) => value.to_string(),
                    };
                    if entries.iter().any(|(k, _)| k.name == name) {
                        return self.fail(format!("the key {name:?} appears twice in one mapping"), mark);
                    }
                    if depth == 1 {
                        self.root_keys.push((mark.line(), mark.col()));
                    }
                    *key = Some(Key { name, style: scalar.style });
                }
            },
        }
    }
}

impl MarkedEventReceiver for Loader {
    fn on_event(&mut self, event: Event, mark: Marker) {
        if self.error.is_some() {
            return;
        }
        match event {
            Event::DocumentStart => {
                self.documents += 1;
                if self.documents > 1 {
                    self.fail("a .base file holds one YAML document, this one has more", mark);
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                let is_str = tag.as_ref().is_some_and(|t| t.suffix == "str" || t.suffix.ends_with(":str"));
                let node = Node::Scalar(match style {
                    TScalarStyle::SingleQuoted => Scalar { value: Value::String(text), style: Style::Single },
                    TScalarStyle::DoubleQuoted => Scalar { value: Value::String(text), style: Style::Double },
                    TScalarStyle::Literal => Scalar { value: Value::String(text), style: Style::Literal },
                    TScalarStyle::Folded => Scalar { value: Value::String(text), style: Style::Folded },
                    _ => Scalar {
                        value: if is_str { Value::String(text.clone()) } else { resolve_plain(&text) },
                        style: Style::Plain(text),
                    },
                });
                self.add(node, anchor, mark);
            }
            Event::SequenceStart(anchor, _) => self.open(Frame::Seq { items: Vec::new(), anchor }, mark),
            Event::MappingStart(anchor, _) => self.open(Frame::Map { entries: Vec::new(), key: None, anchor }, mark),
            Event::SequenceEnd | Event::MappingEnd => match self.stack.pop() {
                Some(Frame::Seq { items, anchor }) => self.add(Node::Seq(items), anchor, mark),
                Some(Frame::Map { entries, anchor, .. }) => self.add(Node::Map(entries), anchor, mark),
                None => {}
            },
            Event::Alias(id) => match self.anchors.get(&id) {
                Some(node) if self.stack.len() + node.depth() > MAX_YAML_DEPTH => {
                    self.fail(format!("the YAML is nested deeper than {MAX_YAML_DEPTH} levels"), mark)
                }
                Some(node) => {
                    let node = node.clone();
                    self.nodes += node.count().saturating_sub(1);
                    self.add(node, 0, mark);
                }
                None => self.fail("an alias refers to no anchor", mark),
            },
            _ => {}
        }
    }
}

/// A plain scalar as YAML's core schema reads it.
fn resolve_plain(text: &str) -> Value {
    match Yaml::from_str(text) {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Integer(i) => Value::Number(i.into()),
        Yaml::Real(r) => {
            r.parse::<f64>().ok().and_then(Number::from_f64).map(Value::Number).unwrap_or(Value::String(r))
        }
        _ => Value::String(text.to_string()),
    }
}

fn load(text: &str) -> Result<Source, String> {
    let mut loader = Loader::default();
    let mut parser = Parser::new_from_str(text);
    if let Err(e) = parser.load(&mut loader, true) {
        return Err(format!(
            "the .base file is not valid YAML: {} (line {}, column {})",
            e.info(),
            e.marker().line(),
            e.marker().col() + 1
        ));
    }
    if let Some(error) = loader.error {
        return Err(format!("the .base file cannot be read: {error}"));
    }
    let root = match loader.root {
        None | Some(Node::Scalar(Scalar { value: Value::Null, .. })) => Node::Map(Vec::new()),
        Some(root @ Node::Map(_)) => root,
        Some(_) => {
            return Err(
                "the top level of a .base file must be a mapping (filters, formulas, properties, views)".to_string()
            );
        }
    };
    let regions = regions(text, &loader.root_keys);
    Ok(Source { text: text.to_string(), root, regions })
}

/// Where each top-level key's lines are, when every key starts a line at column 0.
fn regions(text: &str, keys: &[(usize, usize)]) -> Option<(usize, Vec<Range<usize>>)> {
    if text.lines().any(|l| l.trim_end() == "...") {
        return None;
    }
    let mut starts = vec![0];
    starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
    let mut offsets = Vec::with_capacity(keys.len());
    for (line, col) in keys {
        let start = *starts.get(line.checked_sub(1)?)?;
        if *col != 0 || offsets.last().is_some_and(|last| *last >= start) {
            return None;
        }
        offsets.push(start);
    }
    let first = offsets.first().copied().unwrap_or(text.len());
    let ranges =
        offsets.iter().enumerate().map(|(i, s)| *s..offsets.get(i + 1).copied().unwrap_or(text.len())).collect();
    Some((first, ranges))
}

// ---------------------------------------------------------------------------------------------
// Typed sections from the tree.

fn assemble(root: &Node) -> Result<Base, String> {
    let mut base = Base { raw: root.to_json(), ..Base::default() };
    if let Some(node) = root.get("filters") {
        base.filters = filter_from(node, "filters")?;
    }
    if let Some(node) = root.get("formulas") {
        base.formulas = formulas_from(node)?;
    }
    match root.get("properties") {
        None => {}
        Some(node) if node.is_null() => {}
        Some(node) => match node.to_json() {
            Value::Object(map) => base.properties = map,
            _ => return Err("properties must be a mapping of property ids".to_string()),
        },
    }
    match root.get("views") {
        None => {}
        Some(node) if node.is_null() => {}
        Some(Node::Seq(items)) => {
            for (i, item) in items.iter().enumerate() {
                base.views.push(view_from(item, &format!("views[{i}]"))?);
            }
        }
        Some(_) => return Err("views must be a list".to_string()),
    }
    Ok(base)
}

fn filter_from(node: &Node, at: &str) -> Result<Option<Filter>, String> {
    if node.is_null() {
        return Ok(None);
    }
    if let Some(text) = node.text() {
        return Ok(Some(Filter::Expr(text)));
    }
    if let Node::Map(entries) = node
        && let [(key, value)] = entries.as_slice()
        && matches!(key.name.as_str(), "and" | "or" | "not")
    {
        let items = match value {
            Node::Seq(items) => items.as_slice(),
            v if v.is_null() => &[],
            _ => return Err(format!("{at}.{} must be a list of filters", key.name)),
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match filter_from(item, &format!("{at}.{}[{i}]", key.name))? {
                Some(f) => out.push(f),
                None => return Err(format!("{at}.{}[{i}] is empty", key.name)),
            }
        }
        return Ok(Some(match key.name.as_str() {
            "and" => Filter::And(out),
            "or" => Filter::Or(out),
            _ => Filter::Not(out),
        }));
    }
    Err(format!("{at} must be an expression or a mapping with exactly one of and, or, not"))
}

fn formulas_from(node: &Node) -> Result<Vec<(String, String)>, String> {
    match node {
        Node::Map(entries) => entries
            .iter()
            .map(|(k, v)| match v {
                Node::Scalar(_) => Ok((k.name.clone(), v.text().unwrap_or_default())),
                _ => Err(format!("formula {:?} must be an expression", k.name)),
            })
            .collect(),
        n if n.is_null() => Ok(Vec::new()),
        _ => Err("formulas must be a mapping of names to expressions".to_string()),
    }
}

fn text_of(node: Option<&Node>, at: &str) -> Result<String, String> {
    match node {
        None => Ok(String::new()),
        Some(n @ Node::Scalar(_)) => Ok(n.text().unwrap_or_default()),
        Some(_) => Err(format!("{at} must be a single value")),
    }
}

fn is_desc(node: Option<&Node>) -> bool {
    node.and_then(Node::text).is_some_and(|d| d.eq_ignore_ascii_case("desc"))
}

fn view_from(node: &Node, at: &str) -> Result<View, String> {
    if !matches!(node, Node::Map(_)) {
        return Err(format!("{at} must be a mapping"));
    }
    let mut view = View {
        kind: text_of(node.get("type"), &format!("{at}.type"))?,
        name: text_of(node.get("name"), &format!("{at}.name"))?,
        ..View::default()
    };
    if let Some(f) = node.get("filters") {
        view.filters = filter_from(f, &format!("{at}.filters"))?;
    }
    match node.get("order") {
        None => {}
        Some(n) if n.is_null() => {}
        Some(Node::Seq(items)) => {
            for (i, item) in items.iter().enumerate() {
                match item.text() {
                    Some(id) if matches!(item, Node::Scalar(_)) => view.order.push(id),
                    _ => return Err(format!("{at}.order[{i}] must be a property id")),
                }
            }
        }
        Some(_) => return Err(format!("{at}.order must be a list of property ids")),
    }
    match node.get("sort") {
        None => {}
        Some(n) if n.is_null() => {}
        Some(Node::Seq(items)) => {
            for (i, item) in items.iter().enumerate() {
                let property = match item.get("property") {
                    Some(p @ Node::Scalar(_)) => p.text(),
                    _ => None,
                };
                let Some(property) = property else {
                    return Err(format!("{at}.sort[{i}] must be a mapping with a property"));
                };
                view.sort.push((property, is_desc(item.get("direction"))));
            }
        }
        Some(_) => return Err(format!("{at}.sort must be a list of {{property, direction}}")),
    }
    match node.get("limit") {
        None => {}
        Some(n) if n.is_null() => {}
        Some(Node::Scalar(Scalar { value: Value::Number(n), .. })) if n.as_u64().is_some() => {
            view.limit = Some(usize::try_from(n.as_u64().unwrap_or(0)).unwrap_or(usize::MAX));
        }
        Some(_) => return Err(format!("{at}.limit must be a whole number, 0 or more")),
    }
    match node.get("groupBy") {
        None => {}
        Some(n) if n.is_null() => {}
        Some(n @ Node::Scalar(_)) => view.group_by = n.text().map(|p| (p, false)),
        Some(n @ Node::Map(_)) => match n.get("property").and_then(Node::text) {
            Some(p) => view.group_by = Some((p, is_desc(n.get("direction")))),
            None => return Err(format!("{at}.groupBy must be a mapping with a property")),
        },
        Some(_) => return Err(format!("{at}.groupBy must be a mapping with a property")),
    }
    Ok(view)
}

fn filter_problems(filter: &Filter, place: &str, problems: &mut Vec<String>) {
    match filter {
        Filter::Expr(text) => {
            if let Err(e) = parse_expr(text) {
                problems.push(format!("{place}: the filter {:?} does not parse: {e}", echo(text)));
            }
        }
        Filter::And(items) | Filter::Or(items) | Filter::Not(items) => {
            for item in items {
                filter_problems(item, place, problems);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// JSON into the tree (keeping the order and quoting of a guide), merge patches, typed overlays.

/// Where a mapping sits, for the order of new keys.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ctx {
    Root,
    Views,
    View,
    Sorts,
    SortItem,
    Other,
}

impl Ctx {
    fn child(self, key: &str) -> Ctx {
        match (self, key) {
            (Ctx::Root, "views") => Ctx::Views,
            (Ctx::View, "sort") => Ctx::Sorts,
            (Ctx::View, "groupBy") => Ctx::SortItem,
            _ => Ctx::Other,
        }
    }

    fn item(self) -> Ctx {
        match self {
            Ctx::Views => Ctx::View,
            Ctx::Sorts => Ctx::SortItem,
            _ => Ctx::Other,
        }
    }

    /// Obsidian's order for a new key; keys it does not know follow, alphabetically.
    fn rank(self, key: &str) -> usize {
        let order: &[&str] = match self {
            Ctx::Root => &["filters", "formulas", "properties", "summaries", "views"],
            Ctx::View => &["type", "name", "filters", "groupBy", "order", "sort", "limit", "summaries"],
            Ctx::SortItem => &["property", "direction"],
            _ => &["and", "or", "not"],
        };
        order.iter().position(|k| *k == key).unwrap_or(order.len())
    }
}

fn json_depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 1usize)];
    while let Some((v, d)) = stack.pop() {
        deepest = deepest.max(d);
        match v {
            Value::Array(items) => stack.extend(items.iter().map(|i| (i, d + 1))),
            Value::Object(map) => stack.extend(map.values().map(|i| (i, d + 1))),
            _ => {}
        }
    }
    deepest
}

/// `value` as a tree: keys the guide has in its order, the others after them; scalars equal to
/// the guide's keep its quoting.
fn build(value: &Value, guide: Option<&Node>, ctx: Ctx, depth: usize) -> Node {
    if depth > MAX_JSON_DEPTH {
        return Node::new_scalar(Value::Null);
    }
    match value {
        Value::Object(map) => {
            let guided: &[(Key, Node)] = match guide {
                Some(Node::Map(entries)) => entries,
                _ => &[],
            };
            let mut entries = Vec::with_capacity(map.len());
            for (k, g) in guided {
                if let Some(v) = map.get(&k.name) {
                    entries.push((k.clone(), build(v, Some(g), ctx.child(&k.name), depth + 1)));
                }
            }
            let mut rest: Vec<&String> = map.keys().filter(|k| !guided.iter().any(|(g, _)| &g.name == *k)).collect();
            rest.sort_by_key(|k| ctx.rank(k));
            for k in rest {
                entries.push((Key::new(k), build(&map[k], None, ctx.child(k), depth + 1)));
            }
            Node::Map(entries)
        }
        Value::Array(items) => {
            let guided: &[Node] = match guide {
                Some(Node::Seq(items)) => items,
                _ => &[],
            };
            Node::Seq(items.iter().enumerate().map(|(i, v)| build(v, guided.get(i), ctx.item(), depth + 1)).collect())
        }
        scalar => match guide {
            Some(Node::Scalar(s)) if s.value == *scalar => Node::Scalar(s.clone()),
            _ => Node::new_scalar(scalar.clone()),
        },
    }
}

/// RFC 7386 on the tree.
fn merge(target: &Node, patch: &Value, ctx: Ctx, depth: usize) -> Node {
    let Value::Object(changes) = patch else {
        return build(patch, Some(target), ctx, depth);
    };
    let existing: &[(Key, Node)] = match target {
        Node::Map(entries) => entries,
        _ => &[],
    };
    let mut entries = Vec::with_capacity(existing.len());
    for (k, v) in existing {
        match changes.get(&k.name) {
            None => entries.push((k.clone(), v.clone())),
            Some(Value::Null) => {}
            Some(change) => entries.push((k.clone(), merge(v, change, ctx.child(&k.name), depth + 1))),
        }
    }
    let mut added: Vec<(&String, &Value)> =
        changes.iter().filter(|(k, v)| !v.is_null() && !existing.iter().any(|(e, _)| &e.name == *k)).collect();
    added.sort_by_key(|(k, _)| ctx.rank(k));
    for (k, v) in added {
        entries.push((Key::new(k), merge(&Node::Map(Vec::new()), v, ctx.child(k), depth + 1)));
    }
    Node::Map(entries)
}

fn filter_json(filter: &Filter) -> Value {
    match filter {
        Filter::Expr(text) => Value::String(text.clone()),
        Filter::And(items) | Filter::Or(items) | Filter::Not(items) => {
            let key = match filter {
                Filter::And(_) => "and",
                Filter::Or(_) => "or",
                _ => "not",
            };
            let mut map = Map::new();
            map.insert(key.to_string(), Value::Array(items.iter().map(filter_json).collect()));
            Value::Object(map)
        }
    }
}

fn set_entry(entries: &mut Vec<(Key, Node)>, key: &str, node: Option<Node>) {
    let at = entries.iter().position(|(k, _)| k.name == key);
    match (at, node) {
        (Some(i), Some(node)) => entries[i].1 = node,
        (Some(i), None) => {
            entries.remove(i);
        }
        (None, Some(node)) => entries.push((Key::new(key), node)),
        (None, None) => {}
    }
}

/// The typed fields over the tree built from `raw`, where they differ from what it holds.
fn overlay(entries: &mut Vec<(Key, Node)>, base: &Base) {
    let root = Node::Map(entries.clone());
    let current = root.get("filters");
    if current.map(|n| filter_from(n, "filters")) != Some(Ok(base.filters.clone()))
        && !(current.is_none() && base.filters.is_none())
    {
        let node = base.filters.as_ref().map(|f| build(&filter_json(f), current, Ctx::Other, 1));
        set_entry(entries, "filters", node);
    }
    let current = root.get("formulas");
    let had = current.map(formulas_from).unwrap_or(Ok(Vec::new()));
    if had != Ok(base.formulas.clone()) {
        let node = (!base.formulas.is_empty()).then(|| {
            Node::Map(
                base.formulas
                    .iter()
                    .map(|(name, text)| {
                        let old = match current {
                            Some(Node::Map(old)) => old.iter().find(|(k, _)| &k.name == name),
                            _ => None,
                        };
                        let key = old.map(|(k, _)| k.clone()).unwrap_or_else(|| Key::new(name));
                        (key, build(&Value::String(text.clone()), old.map(|(_, v)| v), Ctx::Other, 2))
                    })
                    .collect(),
            )
        });
        set_entry(entries, "formulas", node);
    }
    let current = root.get("properties");
    let had = current.map(Node::to_json).unwrap_or(Value::Object(Map::new()));
    let want = Value::Object(base.properties.clone());
    if had != want && !(had.is_null() && base.properties.is_empty()) {
        let node = (!base.properties.is_empty()).then(|| build(&want, current, Ctx::Other, 1));
        set_entry(entries, "properties", node);
    }
    let current = root.get("views");
    let had: Option<Vec<View>> = match current {
        Some(Node::Seq(items)) => {
            items.iter().enumerate().map(|(i, n)| view_from(n, &format!("views[{i}]")).ok()).collect()
        }
        Some(n) if n.is_null() => Some(Vec::new()),
        None => Some(Vec::new()),
        _ => None,
    };
    if had.as_ref() != Some(&base.views) {
        let old: &[Node] = match current {
            Some(Node::Seq(items)) => items,
            _ => &[],
        };
        let node = (!base.views.is_empty())
            .then(|| Node::Seq(base.views.iter().enumerate().map(|(i, v)| view_node(v, old.get(i))).collect()));
        set_entry(entries, "views", node);
    }
}

fn view_node(view: &View, guide: Option<&Node>) -> Node {
    let mut entries = match guide {
        Some(Node::Map(entries)) => entries.clone(),
        _ => Vec::new(),
    };
    let had = guide.and_then(|g| view_from(g, "view").ok()).unwrap_or_default();
    let fresh = guide.is_none_or(|g| view_from(g, "view").is_err());
    let field = |key: &str| guide.and_then(|g| g.get(key));
    let text = |s: &str, key: &str| build(&Value::String(s.to_string()), field(key), Ctx::Other, 3);
    if fresh || had.kind != view.kind {
        set_entry(&mut entries, "type", (!view.kind.is_empty()).then(|| text(&view.kind, "type")));
    }
    if fresh || had.name != view.name {
        set_entry(&mut entries, "name", (!view.name.is_empty()).then(|| text(&view.name, "name")));
    }
    if fresh || had.filters != view.filters {
        let node = view.filters.as_ref().map(|f| build(&filter_json(f), field("filters"), Ctx::Other, 3));
        set_entry(&mut entries, "filters", node);
    }
    if had.group_by != view.group_by || (fresh && view.group_by.is_some()) {
        let node = view.group_by.as_ref().map(|(p, desc)| {
            let json = serde_json::json!({"property": p, "direction": if *desc { "DESC" } else { "ASC" }});
            build(&json, field("groupBy"), Ctx::SortItem, 3)
        });
        set_entry(&mut entries, "groupBy", node);
    }
    if had.order != view.order || (fresh && !view.order.is_empty()) {
        let json = Value::Array(view.order.iter().map(|s| Value::String(s.clone())).collect());
        set_entry(&mut entries, "order", (!view.order.is_empty()).then(|| build(&json, field("order"), Ctx::Other, 3)));
    }
    if had.sort != view.sort || (fresh && !view.sort.is_empty()) {
        let json = Value::Array(
            view.sort
                .iter()
                .map(|(p, desc)| serde_json::json!({"property": p, "direction": if *desc { "DESC" } else { "ASC" }}))
                .collect(),
        );
        set_entry(&mut entries, "sort", (!view.sort.is_empty()).then(|| build(&json, field("sort"), Ctx::Sorts, 3)));
    }
    if had.limit != view.limit || (fresh && view.limit.is_some()) {
        set_entry(
            &mut entries,
            "limit",
            view.limit.map(|l| build(&Value::from(l as u64), field("limit"), Ctx::Other, 3)),
        );
    }
    // A new view's keys in Obsidian's order.
    if guide.is_none() {
        entries.sort_by_key(|(k, _)| Ctx::View.rank(&k.name));
    }
    Node::Map(entries)
}

// ---------------------------------------------------------------------------------------------
// Writing YAML.

fn eol_of(text: &str) -> &'static str {
    match text.find('\n') {
        Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

fn join(lines: &[String], eol: &str) -> String {
    let mut out = String::new();
    for line in lines {
        out.push_str(line);
        out.push_str(eol);
    }
    out
}

/// The document: the old text when nothing changed, else the old text's unchanged top-level
/// sections with the others written anew, else all of it written anew.
fn write(old: Option<&Source>, root: &Node) -> String {
    let eol = old.map_or("\n", |s| eol_of(&s.text));
    if let Some(source) = old {
        if same(&source.root, root) {
            return source.text.clone();
        }
        if let (Some((preamble, ranges)), Node::Map(old_entries), Node::Map(entries)) =
            (&source.regions, &source.root, root)
            && ranges.len() == old_entries.len()
        {
            let mut out = source.text[..*preamble].to_string();
            for (key, node) in entries {
                let kept = old_entries.iter().position(|(k, v)| k == key && v == node);
                match kept.and_then(|i| source.text.get(ranges[i].clone())) {
                    Some(piece) => {
                        if !out.is_empty() && !out.ends_with('\n') {
                            out.push_str(eol);
                        }
                        out.push_str(piece);
                    }
                    None => {
                        if !out.is_empty() && !out.ends_with('\n') {
                            out.push_str(eol);
                        }
                        let mut lines = Vec::new();
                        emit_entry(&mut lines, 0, key, node, 0);
                        out.push_str(&join(&lines, eol));
                    }
                }
            }
            return out;
        }
    }
    let mut lines = Vec::new();
    match root {
        Node::Map(entries) => {
            for (k, v) in entries {
                emit_entry(&mut lines, 0, k, v, 0);
            }
        }
        Node::Seq(items) if !items.is_empty() => {
            for item in items {
                emit_item(&mut lines, 0, item, 0);
            }
        }
        Node::Seq(_) => lines.push("[]".to_string()),
        Node::Scalar(s) => match scalar_out(s) {
            Out::Inline(t) => lines.push(if t.is_empty() { "null".to_string() } else { t }),
            Out::Block(header, body) => {
                lines.push(header);
                lines.extend(body.into_iter().map(|l| if l.is_empty() { l } else { format!("  {l}") }));
            }
        },
    }
    join(&lines, eol)
}

enum Out {
    Inline(String),
    /// A block scalar: its header (`|-`) and its lines, unindented.
    Block(String, Vec<String>),
}

fn emit_entry(out: &mut Vec<String>, indent: usize, key: &Key, node: &Node, depth: usize) {
    let pad = " ".repeat(indent);
    let k = key_text(key);
    match node {
        _ if depth > MAX_JSON_DEPTH => out.push(format!("{pad}{k}: null")),
        Node::Seq(items) if !items.is_empty() => {
            out.push(format!("{pad}{k}:"));
            for item in items {
                emit_item(out, indent + 2, item, depth + 1);
            }
        }
        Node::Map(entries) if !entries.is_empty() => {
            out.push(format!("{pad}{k}:"));
            for (k2, v2) in entries {
                emit_entry(out, indent + 2, k2, v2, depth + 1);
            }
        }
        Node::Seq(_) => out.push(format!("{pad}{k}: []")),
        Node::Map(_) => out.push(format!("{pad}{k}: {{}}")),
        Node::Scalar(s) => match scalar_out(s) {
            Out::Inline(t) if t.is_empty() => out.push(format!("{pad}{k}:")),
            Out::Inline(t) => out.push(format!("{pad}{k}: {t}")),
            Out::Block(header, body) => {
                out.push(format!("{pad}{k}: {header}"));
                out.extend(body.into_iter().map(|l| if l.is_empty() { l } else { format!("{pad}  {l}") }));
            }
        },
    }
}

fn emit_item(out: &mut Vec<String>, indent: usize, node: &Node, depth: usize) {
    let pad = " ".repeat(indent);
    let from = out.len();
    match node {
        _ if depth > MAX_JSON_DEPTH => {
            out.push(format!("{pad}- null"));
            return;
        }
        Node::Seq(items) if !items.is_empty() => {
            for item in items {
                emit_item(out, indent + 2, item, depth + 1);
            }
        }
        Node::Map(entries) if !entries.is_empty() => {
            for (k, v) in entries {
                emit_entry(out, indent + 2, k, v, depth + 1);
            }
        }
        Node::Seq(_) => {
            out.push(format!("{pad}- []"));
            return;
        }
        Node::Map(_) => {
            out.push(format!("{pad}- {{}}"));
            return;
        }
        Node::Scalar(s) => {
            match scalar_out(s) {
                Out::Inline(t) if t.is_empty() => out.push(format!("{pad}-")),
                Out::Inline(t) => out.push(format!("{pad}- {t}")),
                Out::Block(header, body) => {
                    out.push(format!("{pad}- {header}"));
                    out.extend(body.into_iter().map(|l| if l.is_empty() { l } else { format!("{pad}  {l}") }));
                }
            }
            return;
        }
    }
    if let Some(first) = out.get_mut(from) {
        let rest = first.get(indent + 2..).unwrap_or("").to_string();
        *first = format!("{pad}- {rest}");
    }
}

fn scalar_out(s: &Scalar) -> Out {
    let text = match &s.value {
        Value::String(text) => text,
        other => {
            return Out::Inline(match &s.style {
                Style::Plain(src) => src.clone(),
                _ => other.to_string(),
            });
        }
    };
    let multiline = text.contains('\n');
    let controls = text.chars().any(|c| (c.is_control() && c != '\n' && c != '\t') || is_special(c));
    match &s.style {
        Style::Plain(_) | Style::New if !multiline && plain_ok(text, false) => return Out::Inline(text.clone()),
        Style::Single if !multiline && !controls => return Out::Inline(single(text)),
        Style::Double => return Out::Inline(double(text)),
        Style::Folded if !multiline && !controls && !text.is_empty() && !text.starts_with(' ') => {
            return Out::Block(">-".to_string(), vec![text.clone()]);
        }
        _ => {}
    }
    let body = text.trim_end_matches('\n');
    if multiline && !controls && !body.is_empty() && !body.starts_with([' ', '\t']) {
        let trailing = text.len() - body.len();
        let header = match trailing {
            0 => "|-",
            1 => "|",
            _ => "|+",
        };
        let mut lines: Vec<String> = body.split('\n').map(str::to_string).collect();
        lines.extend(std::iter::repeat_n(String::new(), trailing.saturating_sub(1)));
        return Out::Block(header.to_string(), lines);
    }
    if !multiline && !controls && text.contains('"') && !text.contains('\'') {
        Out::Inline(single(text))
    } else {
        Out::Inline(double(text))
    }
}

fn key_text(key: &Key) -> String {
    match &key.style {
        Style::Plain(src) => src.clone(),
        Style::Single if !key.name.contains('\n') => single(&key.name),
        Style::Double => double(&key.name),
        _ if plain_ok(&key.name, true) => key.name.clone(),
        _ if key.name.contains('"') && !key.name.contains('\'') && !key.name.chars().any(char::is_control) => {
            single(&key.name)
        }
        _ => double(&key.name),
    }
}

fn is_special(c: char) -> bool {
    matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{85}')
}

/// Words that some YAML reader takes for a boolean or null.
const RESERVED: &[&str] = &["true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"];

/// Whether `s` may be written plain (as a value, or as a key): conservative, and proven by
/// reading it back.
fn plain_ok(s: &str, key: bool) -> bool {
    let Some(first) = s.chars().next() else { return false };
    if s.trim() != s
        || "-?:,[]{}#&*!|>'\"%@`".contains(first)
        || s.chars().any(|c| c.is_control() || is_special(c))
        || s.contains(": ")
        || s.contains(" #")
        || s.ends_with(':')
        || s == "<<"
    {
        return false;
    }
    let lower = s.to_lowercase();
    if RESERVED.contains(&lower.as_str()) || matches!(lower.trim_start_matches(['+', '-']), ".inf" | ".nan") {
        return false;
    }
    let numeric = s.starts_with(|c: char| c.is_ascii_digit() || c == '+' || c == '.')
        && s.chars().all(|c| c.is_ascii_hexdigit() || "xXoO_.+-:".contains(c));
    if numeric {
        return false;
    }
    let doc = if key { format!("{s}: v\n") } else { format!("k: {s}\n") };
    match YamlLoader::load_from_str(&doc).as_deref() {
        Ok([Yaml::Hash(map)]) if map.len() == 1 => {
            if key {
                map.contains_key(&Yaml::String(s.to_string()))
            } else {
                matches!(map.get(&Yaml::String("k".to_string())), Some(Yaml::String(got)) if got == s)
            }
        }
        _ => false,
    }
}

fn single(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn double(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || is_special(c) => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

// ---------------------------------------------------------------------------------------------
// Expressions: syntax.

#[derive(Debug, Clone, Copy, PartialEq)]
enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone)]
enum Expr {
    Lit(V),
    List(Vec<Expr>),
    Regex(Regex, bool),
    /// A frontmatter property (or `value`/`index`/`acc` inside `filter`/`map`/`reduce`).
    Prop(String),
    /// `note` itself.
    Note,
    /// `file` itself.
    File,
    FileField(String),
    Formula(String),
    Member(Box<Expr>, String),
    Index(Box<Expr>, Box<Expr>),
    Call(String, Vec<Expr>),
    Method(Box<Expr>, String, Vec<Expr>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// Valid Obsidian syntax this server does not evaluate.
    Unsupported(String),
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Str(String),
    Ident(String),
    Op(&'static str),
    End,
}

const OPS: &[&str] = &[
    "===", "!==", "==", "!=", "<=", ">=", "&&", "||", "=>", "(", ")", "[", "]", "{", "}", ",", ".", "+", "-", "*", "/",
    "%", "!", "<", ">", "?", ":", "=",
];

fn parse_expr(text: &str) -> Result<Expr, String> {
    let mut p = ExprParser { src: text, pos: 0, nesting: 0 };
    if p.peek()? == Tok::End {
        return Err("the expression is empty".to_string());
    }
    let (expr, _) = p.ternary()?;
    match p.next()? {
        Tok::End => Ok(expr),
        tok => Err(format!("unexpected {} at character {}", show(&tok), p.pos)),
    }
}

fn show(tok: &Tok) -> String {
    match tok {
        Tok::Num(n) => format!("number {n}"),
        Tok::Str(s) => format!("string {s:?}"),
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Op(op) => format!("`{op}`"),
        Tok::End => "end of expression".to_string(),
    }
}

struct ExprParser<'s> {
    src: &'s str,
    pos: usize,
    nesting: usize,
}

type Parsed = Result<(Expr, usize), String>;

fn ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_' || c == '$'
}

fn ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

impl<'s> ExprParser<'s> {
    fn rest(&self) -> &'s str {
        &self.src[self.pos..]
    }

    fn skip_space(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn next(&mut self) -> Result<Tok, String> {
        self.skip_space();
        let rest = self.rest();
        let Some(c) = rest.chars().next() else { return Ok(Tok::End) };
        let start = self.pos;
        if c.is_ascii_digit() || (c == '.' && rest[1..].starts_with(|d: char| d.is_ascii_digit())) {
            let bytes = rest.as_bytes();
            let mut i = 0;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i < bytes.len() && bytes[i] == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
                let mut j = i + 1;
                if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
                    j += 1;
                }
                if j < bytes.len() && bytes[j].is_ascii_digit() {
                    while j < bytes.len() && bytes[j].is_ascii_digit() {
                        j += 1;
                    }
                    i = j;
                }
            }
            self.pos += i;
            return rest[..i].parse::<f64>().map(Tok::Num).map_err(|_| format!("bad number at character {start}"));
        }
        if c == '"' || c == '\'' {
            let mut out = String::new();
            let mut chars = rest.char_indices().skip(1);
            while let Some((i, ch)) = chars.next() {
                match ch {
                    '\\' => {
                        let Some((_, e)) = chars.next() else { break };
                        match e {
                            'n' => out.push('\n'),
                            't' => out.push('\t'),
                            'r' => out.push('\r'),
                            'b' => out.push('\u{8}'),
                            'f' => out.push('\u{c}'),
                            '0' => out.push('\0'),
                            'u' => {
                                let hex: String = (0..4).filter_map(|_| chars.next().map(|(_, h)| h)).collect();
                                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                                    Some(ch) => out.push(ch),
                                    None => return Err(format!("bad \\u escape at character {}", start + i)),
                                }
                            }
                            other => out.push(other),
                        }
                    }
                    q if q == c => {
                        self.pos += i + 1;
                        return Ok(Tok::Str(out));
                    }
                    other => out.push(other),
                }
            }
            return Err(format!("unterminated string starting at character {start}"));
        }
        if ident_start(c) {
            let end = rest.find(|ch: char| !ident_char(ch)).unwrap_or(rest.len());
            self.pos += end;
            return Ok(Tok::Ident(rest[..end].to_string()));
        }
        for op in OPS {
            if rest.starts_with(op) {
                self.pos += op.len();
                return Ok(Tok::Op(op));
            }
        }
        Err(format!("unexpected character {c:?} at character {start}"))
    }

    fn peek(&mut self) -> Result<Tok, String> {
        let pos = self.pos;
        let tok = self.next();
        self.pos = pos;
        tok
    }

    fn eat(&mut self, op: &str) -> Result<bool, String> {
        if matches!(self.peek()?, Tok::Op(o) if o == op) {
            self.next()?;
            return Ok(true);
        }
        Ok(false)
    }

    fn expect(&mut self, op: &str) -> Result<(), String> {
        match self.next()? {
            Tok::Op(o) if o == op => Ok(()),
            tok => Err(format!("expected `{op}` but found {} at character {}", show(&tok), self.pos)),
        }
    }

    fn deeper(&mut self) -> Result<(), String> {
        self.nesting += 1;
        if self.nesting > MAX_EXPR_DEPTH {
            return Err(format!("the expression is nested deeper than {MAX_EXPR_DEPTH} levels"));
        }
        Ok(())
    }

    fn check_depth(depth: usize) -> Result<usize, String> {
        if depth > MAX_EXPR_DEPTH {
            return Err(format!("the expression is nested deeper than {MAX_EXPR_DEPTH} levels"));
        }
        Ok(depth)
    }

    fn ternary(&mut self) -> Parsed {
        self.deeper()?;
        let (cond, cd) = self.or()?;
        let out = if self.eat("?")? {
            let (a, ad) = self.ternary()?;
            self.expect(":")?;
            let (b, bd) = self.ternary()?;
            let depth = Self::check_depth(1 + cd.max(ad).max(bd))?;
            (Expr::Cond(Box::new(cond), Box::new(a), Box::new(b)), depth)
        } else {
            (cond, cd)
        };
        self.nesting -= 1;
        Ok(out)
    }

    fn or(&mut self) -> Parsed {
        let (mut left, mut depth) = self.and()?;
        while self.eat("||")? {
            let (right, rd) = self.and()?;
            depth = Self::check_depth(1 + depth.max(rd))?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        Ok((left, depth))
    }

    fn and(&mut self) -> Parsed {
        let (mut left, mut depth) = self.binary(0)?;
        while self.eat("&&")? {
            let (right, rd) = self.binary(0)?;
            depth = Self::check_depth(1 + depth.max(rd))?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
        Ok((left, depth))
    }

    /// Levels: 0 equality, 1 comparison, 2 additive, 3 multiplicative.
    fn binary(&mut self, level: usize) -> Parsed {
        if level > 3 {
            return self.unary();
        }
        let (mut left, mut depth) = self.binary(level + 1)?;
        loop {
            let op = match (level, self.peek()?) {
                (0, Tok::Op("==" | "===")) => BinOp::Eq,
                (0, Tok::Op("!=" | "!==")) => BinOp::Ne,
                (1, Tok::Op("<")) => BinOp::Lt,
                (1, Tok::Op("<=")) => BinOp::Le,
                (1, Tok::Op(">")) => BinOp::Gt,
                (1, Tok::Op(">=")) => BinOp::Ge,
                (2, Tok::Op("+")) => BinOp::Add,
                (2, Tok::Op("-")) => BinOp::Sub,
                (3, Tok::Op("*")) => BinOp::Mul,
                (3, Tok::Op("/")) => BinOp::Div,
                (3, Tok::Op("%")) => BinOp::Rem,
                _ => break,
            };
            self.next()?;
            let (right, rd) = self.binary(level + 1)?;
            depth = Self::check_depth(1 + depth.max(rd))?;
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
        Ok((left, depth))
    }

    fn unary(&mut self) -> Parsed {
        let op = match self.peek()? {
            Tok::Op(op @ ("!" | "-" | "+")) => op,
            _ => return self.postfix(),
        };
        self.next()?;
        self.deeper()?;
        let (inner, depth) = self.unary()?;
        self.nesting -= 1;
        let depth = Self::check_depth(depth + 1)?;
        let expr = match op {
            "!" => Expr::Not(Box::new(inner)),
            "-" => Expr::Neg(Box::new(inner)),
            _ => Expr::Call("number".to_string(), vec![inner]),
        };
        Ok((expr, depth))
    }

    fn args(&mut self) -> Result<(Vec<Expr>, usize), String> {
        let mut args = Vec::new();
        let mut depth = 0;
        if self.eat(")")? {
            return Ok((args, depth));
        }
        loop {
            let (arg, d) = self.ternary()?;
            depth = depth.max(d);
            args.push(arg);
            if self.eat(")")? {
                return Ok((args, depth));
            }
            self.expect(",")?;
        }
    }

    fn postfix(&mut self) -> Parsed {
        let (mut expr, mut depth) = self.primary()?;
        loop {
            if self.eat(".")? {
                let name = match self.next()? {
                    Tok::Ident(name) => name,
                    tok => return Err(format!("expected a name after `.` but found {}", show(&tok))),
                };
                let call = matches!(self.peek()?, Tok::Op("("));
                if call {
                    self.next()?;
                    let (args, ad) = self.args()?;
                    depth = Self::check_depth(1 + depth.max(ad))?;
                    expr = match expr {
                        Expr::Unsupported(u) if u == "formula" => Expr::Unsupported("formula used as a value".into()),
                        base => Expr::Method(Box::new(base), name, args),
                    };
                } else {
                    depth = Self::check_depth(depth + 1)?;
                    expr = match expr {
                        Expr::Note => Expr::Prop(name),
                        Expr::File => Expr::FileField(name),
                        Expr::Unsupported(u) if u == "formula" => Expr::Formula(name),
                        base => Expr::Member(Box::new(base), name),
                    };
                }
            } else if self.eat("[")? {
                self.deeper()?;
                let (index, id) = self.ternary()?;
                self.nesting -= 1;
                self.expect("]")?;
                depth = Self::check_depth(1 + depth.max(id))?;
                expr = match (expr, index) {
                    (Expr::Note, Expr::Lit(V::Str(name))) => Expr::Prop(name),
                    (Expr::File, Expr::Lit(V::Str(name))) => Expr::FileField(name),
                    (Expr::Unsupported(u), Expr::Lit(V::Str(name))) if u == "formula" => Expr::Formula(name),
                    (Expr::Unsupported(u), _) if u == "formula" => {
                        Expr::Unsupported("formula[…] with a computed name".into())
                    }
                    (base, index) => Expr::Index(Box::new(base), Box::new(index)),
                };
            } else if matches!(self.peek()?, Tok::Op("(")) {
                return Err("only functions and methods can be called".to_string());
            } else {
                break;
            }
        }
        if let Expr::Unsupported(u) = &expr
            && u == "formula"
        {
            expr = Expr::Unsupported("formula used as a value".into());
        }
        Ok((expr, depth))
    }

    fn primary(&mut self) -> Parsed {
        self.skip_space();
        if self.rest().starts_with('/') {
            return self.regex();
        }
        let at = self.pos;
        match self.next()? {
            Tok::Num(n) => Ok((Expr::Lit(V::Num(n)), 1)),
            Tok::Str(s) => Ok((Expr::Lit(V::Str(s)), 1)),
            Tok::Op("(") => {
                self.deeper()?;
                let (inner, depth) = self.ternary()?;
                self.nesting -= 1;
                self.expect(")")?;
                if matches!(self.peek()?, Tok::Op("=>")) {
                    return Err("arrow functions are not part of the Bases language".to_string());
                }
                Ok((inner, depth))
            }
            Tok::Op("[") => {
                self.deeper()?;
                let mut items = Vec::new();
                let mut depth = 0;
                if !self.eat("]")? {
                    loop {
                        let (item, d) = self.ternary()?;
                        depth = depth.max(d);
                        items.push(item);
                        if self.eat("]")? {
                            break;
                        }
                        self.expect(",")?;
                    }
                }
                self.nesting -= 1;
                Ok((Expr::List(items), Self::check_depth(depth + 1)?))
            }
            Tok::Ident(name) => {
                if matches!(self.peek()?, Tok::Op("(")) {
                    self.next()?;
                    self.deeper()?;
                    let (args, depth) = self.args()?;
                    self.nesting -= 1;
                    return Ok((Expr::Call(name, args), Self::check_depth(depth + 1)?));
                }
                let expr = match name.as_str() {
                    "true" => Expr::Lit(V::Bool(true)),
                    "false" => Expr::Lit(V::Bool(false)),
                    "null" | "undefined" => Expr::Lit(V::Null),
                    "note" => Expr::Note,
                    "file" => Expr::File,
                    "formula" => Expr::Unsupported("formula".into()),
                    "this" => Expr::Unsupported("this".into()),
                    _ => Expr::Prop(name),
                };
                Ok((expr, 1))
            }
            tok => Err(format!("unexpected {} at character {at}", show(&tok))),
        }
    }

    fn regex(&mut self) -> Parsed {
        let start = self.pos;
        let rest = self.rest();
        let mut in_class = false;
        let mut escaped = false;
        let mut end = None;
        for (i, c) in rest.char_indices().skip(1) {
            match c {
                '\n' => break,
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '[' => in_class = true,
                ']' => in_class = false,
                '/' if !in_class => {
                    end = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let Some(end) = end else { return Err(format!("unterminated regular expression at character {start}")) };
        let pattern = &rest[1..end];
        let flags_len = rest[end + 1..].find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len() - end - 1);
        let flags = &rest[end + 1..end + 1 + flags_len];
        self.pos += end + 1 + flags_len;
        let literal = format!("/{pattern}/{flags}");
        if flags.chars().any(|f| !"gimsu".contains(f)) {
            return Ok((Expr::Unsupported(format!("the regular expression {literal} (its flags)")), 1));
        }
        let built = RegexBuilder::new(pattern)
            .case_insensitive(flags.contains('i'))
            .multi_line(flags.contains('m'))
            .dot_matches_new_line(flags.contains('s'))
            .size_limit(1 << 20)
            .build();
        Ok(match built {
            Ok(re) => (Expr::Regex(re, flags.contains('g')), 1),
            Err(_) => (Expr::Unsupported(format!("the regular expression {literal}")), 1),
        })
    }
}

/// What an expression refers to, and the constructs it uses that are not evaluated here.
#[derive(Default)]
struct Refs {
    formulas: Vec<String>,
    /// Property ids, in first use (`note.X`, `file.X`, `formula.X`).
    ids: Vec<String>,
    unsupported: Vec<String>,
}

impl Refs {
    fn id(&mut self, id: String) {
        if !self.ids.contains(&id) {
            self.ids.push(id);
        }
    }

    fn walk(&mut self, expr: &Expr) {
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
fn find_cycle(start: &str, edges: &dyn Fn(&str) -> Vec<String>) -> Option<Vec<String>> {
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

// ---------------------------------------------------------------------------------------------
// Expressions: values and evaluation.

#[derive(Debug, Clone, Copy, PartialEq)]
enum DateKind {
    /// A calendar day.
    Day,
    /// A time with no zone.
    Naive,
    /// A UTC time.
    Utc,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Dur {
    months: i64,
    millis: i64,
}

#[derive(Debug, Clone)]
enum V {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Date(NaiveDateTime, DateKind),
    Dur(Dur),
    List(Vec<V>),
    Obj(Map<String, Value>),
    Link(String, Option<String>),
    File,
    Regex(Regex, bool),
}

type Eval = Result<V, String>;

fn type_name(v: &V) -> &'static str {
    match v {
        V::Null => "null",
        V::Bool(_) => "boolean",
        V::Num(_) => "number",
        V::Str(_) => "string",
        V::Date(..) => "date",
        V::Dur(_) => "duration",
        V::List(_) => "list",
        V::Obj(_) => "object",
        V::Link(..) => "link",
        V::File => "file",
        V::Regex(..) => "regexp",
    }
}

fn json_to_v(value: &Value, depth: usize) -> V {
    match value {
        _ if depth > MAX_JSON_DEPTH => V::Null,
        Value::Null => V::Null,
        Value::Bool(b) => V::Bool(*b),
        Value::Number(n) => V::Num(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => V::Str(s.clone()),
        Value::Array(items) => V::List(items.iter().map(|v| json_to_v(v, depth + 1)).collect()),
        Value::Object(map) => V::Obj(map.clone()),
    }
}

fn num_json(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 {
        Value::from(n as i64)
    } else {
        Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

fn date_text(d: &NaiveDateTime, kind: DateKind) -> String {
    match kind {
        DateKind::Day => d.format("%Y-%m-%d").to_string(),
        _ => {
            let mut s = d.format("%Y-%m-%dT%H:%M:%S").to_string();
            let millis = d.and_utc().timestamp_subsec_millis();
            if millis != 0 {
                s.push_str(&format!(".{millis:03}"));
            }
            if kind == DateKind::Utc {
                s.push('Z');
            }
            s
        }
    }
}

fn link_text(target: &str, display: &Option<String>) -> String {
    match display {
        Some(d) => format!("[[{target}|{d}]]"),
        None => format!("[[{target}]]"),
    }
}

fn num_text(n: f64) -> String {
    if n.is_nan() {
        "NaN".to_string()
    } else if n.is_infinite() {
        if n > 0.0 { "Infinity".to_string() } else { "-Infinity".to_string() }
    } else if n == 0.0 {
        "0".to_string()
    } else {
        n.to_string()
    }
}

impl V {
    fn truthy(&self) -> bool {
        match self {
            V::Null => false,
            V::Bool(b) => *b,
            V::Num(n) => *n != 0.0 && !n.is_nan(),
            V::Str(s) => !s.is_empty(),
            V::List(items) => !items.is_empty(),
            V::Obj(map) => !map.is_empty(),
            _ => true,
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            V::Null => true,
            V::Str(s) => s.is_empty(),
            V::List(items) => items.is_empty(),
            V::Obj(map) => map.is_empty(),
            _ => false,
        }
    }

    fn text(&self, row: &Row) -> String {
        match self {
            V::Null => "null".to_string(),
            V::Bool(b) => b.to_string(),
            V::Num(n) => num_text(*n),
            V::Str(s) => s.clone(),
            V::Date(d, k) => date_text(d, *k),
            V::Dur(d) => format!("{}", d.months as f64 * 2_629_800_000.0 + d.millis as f64),
            V::List(items) => items.iter().map(|i| i.text(row)).collect::<Vec<_>>().join(","),
            V::Obj(map) => Value::Object(map.clone()).to_string(),
            V::Link(t, d) => link_text(t, d),
            V::File => row.path.clone(),
            V::Regex(re, g) => format!("/{}/{}", re.as_str(), if *g { "g" } else { "" }),
        }
    }

    fn json(&self, row: &Row, depth: usize) -> Value {
        match self {
            _ if depth > MAX_JSON_DEPTH => Value::Null,
            V::Null => Value::Null,
            V::Bool(b) => Value::Bool(*b),
            V::Num(n) => num_json(*n),
            V::Str(s) => Value::String(s.clone()),
            V::Date(d, k) => Value::String(date_text(d, *k)),
            V::Dur(d) => num_json(d.months as f64 * 2_629_800_000.0 + d.millis as f64),
            V::List(items) => Value::Array(items.iter().map(|i| i.json(row, depth + 1)).collect()),
            V::Obj(map) => Value::Object(map.clone()),
            V::Link(t, d) => Value::String(link_text(t, d)),
            V::File => Value::String(link_text(&row.path, &None)),
            V::Regex(..) => Value::String(self.text(row)),
        }
    }
}

/// A date read from text: `2024-05-01`, `2024-05-01 10:00[:00]`, ISO with `T`, RFC 3339.
fn parse_date(s: &str) -> Option<(NaiveDateTime, DateKind)> {
    let s = s.trim();
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return d.and_hms_opt(0, 0, 0).map(|t| (t, DateKind::Day));
    }
    if let Ok(d) = DateTime::parse_from_rfc3339(s) {
        return Some((d.with_timezone(&Utc).naive_utc(), DateKind::Utc));
    }
    for format in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"] {
        if let Ok(d) = NaiveDateTime::parse_from_str(s, format) {
            return Some((d, DateKind::Naive));
        }
    }
    None
}

/// A duration read from text: `1d`, `7 days`, `2h 30m`, `-1w`.
fn parse_duration(s: &str) -> Option<Dur> {
    let mut rest = s.trim();
    if rest.is_empty() {
        return None;
    }
    let mut dur = Dur { months: 0, millis: 0 };
    while !rest.is_empty() {
        let num_len =
            rest.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+')).unwrap_or(rest.len());
        let amount: f64 = rest[..num_len].parse().ok()?;
        rest = rest[num_len..].trim_start();
        let unit_len = rest.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = rest[unit_len..].trim_start().trim_start_matches(',').trim_start();
        let lower = unit.to_ascii_lowercase();
        let (months, millis) = match (unit, lower.as_str()) {
            ("M", _) | (_, "month" | "months" | "mo") => (1.0, 0.0),
            ("y", _) | (_, "year" | "years" | "yr" | "yrs") => (12.0, 0.0),
            ("w", _) | (_, "week" | "weeks" | "wk" | "wks") => (0.0, 604_800_000.0),
            ("d", _) | (_, "day" | "days") => (0.0, 86_400_000.0),
            ("h", _) | (_, "hour" | "hours" | "hr" | "hrs") => (0.0, 3_600_000.0),
            ("m", _) | (_, "minute" | "minutes" | "min" | "mins") => (0.0, 60_000.0),
            ("s", _) | (_, "second" | "seconds" | "sec" | "secs") => (0.0, 1000.0),
            ("ms", _) | (_, "millisecond" | "milliseconds") => (0.0, 1.0),
            _ => return None,
        };
        if months != 0.0 {
            if amount.fract() != 0.0 || amount.abs() > 120_000.0 {
                return None;
            }
            dur.months = dur.months.checked_add((amount * months) as i64)?;
        } else {
            let ms = amount * millis;
            if !ms.is_finite() || ms.abs() > 1e16 {
                return None;
            }
            dur.millis = dur.millis.checked_add(ms.round() as i64)?;
        }
    }
    Some(dur)
}

fn as_date(v: &V) -> Option<(NaiveDateTime, DateKind)> {
    match v {
        V::Date(d, k) => Some((*d, *k)),
        V::Str(s) => parse_date(s),
        _ => None,
    }
}

fn shift(date: NaiveDateTime, kind: DateKind, dur: Dur, sign: i64) -> Eval {
    let months = dur.months.checked_mul(sign).ok_or("date out of range")?;
    let moved = if months >= 0 {
        date.checked_add_months(Months::new(u32::try_from(months).map_err(|_| "date out of range")?))
    } else {
        let back = months.checked_neg().ok_or("date out of range")?;
        date.checked_sub_months(Months::new(u32::try_from(back).map_err(|_| "date out of range")?))
    }
    .ok_or("date out of range")?;
    let millis = dur.millis.checked_mul(sign).ok_or("date out of range")?;
    let delta = chrono::Duration::try_milliseconds(millis).ok_or("date out of range")?;
    let moved = moved.checked_add_signed(delta).ok_or("date out of range")?;
    let kind = if kind == DateKind::Day && dur.millis % 86_400_000 != 0 { DateKind::Naive } else { kind };
    Ok(V::Date(moved, kind))
}

fn to_num(v: &V) -> Option<f64> {
    match v {
        V::Num(n) => Some(*n),
        V::Str(s) => s.trim().parse::<f64>().ok().filter(|_| !s.trim().is_empty()),
        V::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        _ => None,
    }
}

/// Link targets compared loosely: without `[[ ]]`, alias, heading, a leading `/` or `.md`, case
/// aside; a target without a folder matches any note of that name.
fn same_target(a: &str, b: &str) -> bool {
    fn norm(s: &str) -> String {
        let s = s.trim();
        let s = s.strip_prefix("[[").and_then(|s| s.strip_suffix("]]")).unwrap_or(s);
        let s = s.split(['|', '#']).next().unwrap_or("").trim().trim_start_matches('/');
        let s = s.strip_suffix(".md").unwrap_or(s);
        s.to_lowercase()
    }
    let (a, b) = (norm(a), norm(b));
    if a.is_empty() || b.is_empty() {
        return false;
    }
    a == b
        || (!a.contains('/') && b.rsplit('/').next() == Some(a.as_str()))
        || (!b.contains('/') && a.rsplit('/').next() == Some(b.as_str()))
}

fn loose_eq(a: &V, b: &V, row: &Row) -> bool {
    match (a, b) {
        (V::Null, V::Null) => true,
        (V::Null, _) | (_, V::Null) => false,
        (V::Num(x), V::Num(y)) => x == y,
        (V::Num(x), V::Str(_)) | (V::Str(_), V::Num(x)) => {
            let s = if let V::Str(s) = a {
                s
            } else if let V::Str(s) = b {
                s
            } else {
                return false;
            };
            s.trim().parse::<f64>().ok().is_some_and(|y| !s.trim().is_empty() && y == *x)
        }
        (V::Str(x), V::Str(y)) => x == y,
        (V::Bool(x), V::Bool(y)) => x == y,
        (V::Date(..), _) | (_, V::Date(..)) => matches!((as_date(a), as_date(b)), (Some(x), Some(y)) if x.0 == y.0),
        (V::Dur(x), V::Dur(y)) => x == y,
        (V::Link(x, _), V::Link(y, _)) | (V::Link(x, _), V::Str(y)) | (V::Str(y), V::Link(x, _)) => same_target(x, y),
        (V::File, V::Link(x, _)) | (V::Link(x, _), V::File) | (V::File, V::Str(x)) | (V::Str(x), V::File) => {
            same_target(&row.path, x)
        }
        (V::File, V::File) => true,
        (V::List(x), V::List(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| loose_eq(a, b, row)),
        (V::Obj(x), V::Obj(y)) => x == y,
        _ => false,
    }
}

/// Ordering for `<` and friends: `None` when null is involved (the comparison is false).
fn compare(a: &V, b: &V) -> Result<Option<Ordering>, String> {
    Ok(match (a, b) {
        (V::Null, _) | (_, V::Null) => None,
        (V::Num(x), V::Num(y)) => x.partial_cmp(y),
        (V::Str(x), V::Str(y)) => Some(x.cmp(y)),
        (V::Bool(x), V::Bool(y)) => Some(x.cmp(y)),
        (V::Date(..), _) | (_, V::Date(..)) => match (as_date(a), as_date(b)) {
            (Some(x), Some(y)) => Some(x.0.cmp(&y.0)),
            _ => return Err(format!("cannot compare {} with {}", type_name(a), type_name(b))),
        },
        (V::Num(_), V::Str(_)) | (V::Str(_), V::Num(_)) => match (to_num(a), to_num(b)) {
            (Some(x), Some(y)) => x.partial_cmp(&y),
            _ => return Err("cannot compare a number with text".to_string()),
        },
        (V::Dur(x), V::Dur(y)) => {
            let total = |d: &Dur| i128::from(d.months) * 2_629_800_000 + i128::from(d.millis);
            Some(total(x).cmp(&total(y)))
        }
        _ => return Err(format!("cannot compare {} with {}", type_name(a), type_name(b))),
    })
}

/// The order rows sort in: nulls (and empty strings) last whatever the direction; then numbers,
/// dates, text (case-insensitively), booleans, the rest.
fn sort_cmp(a: &V, b: &V, desc: bool) -> Ordering {
    let missing = |v: &V| matches!(v, V::Null) || matches!(v, V::Str(s) if s.is_empty());
    match (missing(a), missing(b)) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        _ => {}
    }
    let rank = |v: &V| match v {
        V::Num(_) => 0,
        V::Date(..) => 1,
        V::Str(_) | V::Link(..) => 2,
        V::Bool(_) => 3,
        _ => 4,
    };
    let ordering = match (a, b) {
        (V::Num(x), V::Num(y)) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        (V::Date(x, _), V::Date(y, _)) => x.cmp(y),
        (V::Str(x) | V::Link(x, _), V::Str(y) | V::Link(y, _)) => {
            x.to_lowercase().cmp(&y.to_lowercase()).then_with(|| x.cmp(y))
        }
        (V::Bool(x), V::Bool(y)) => x.cmp(y),
        (V::List(x), V::List(y)) => {
            let mut ordering = Ordering::Equal;
            for (p, q) in x.iter().zip(y) {
                ordering = sort_cmp(p, q, false);
                if ordering != Ordering::Equal {
                    break;
                }
            }
            ordering.then(x.len().cmp(&y.len()))
        }
        _ => rank(a).cmp(&rank(b)),
    };
    if desc { ordering.reverse() } else { ordering }
}

/// What a column, sort or group property id reads.
#[derive(Debug, Clone)]
enum Target {
    Note(String),
    Expr(Expr),
}

#[derive(Debug)]
enum CFilter {
    Expr(Expr),
    And(Vec<CFilter>),
    Or(Vec<CFilter>),
    Not(Vec<CFilter>),
}

/// Everything [`run`] evaluates, parsed and checked up front.
struct Plan {
    filters: Vec<CFilter>,
    formulas: HashMap<String, Expr>,
    columns: Vec<(String, Target)>,
    sort: Vec<(Target, bool)>,
    group: Option<(Target, bool)>,
}

fn target_of(id: &str) -> Target {
    if let Some(name) = id.strip_prefix("note.") {
        Target::Note(name.to_string())
    } else if let Some(name) = id.strip_prefix("file.") {
        Target::Expr(Expr::FileField(name.to_string()))
    } else if let Some(name) = id.strip_prefix("formula.") {
        Target::Expr(Expr::Formula(name.to_string()))
    } else {
        Target::Note(id.to_string())
    }
}

impl Plan {
    fn build(base: &Base, view: Option<&View>, view_filter: Option<&Filter>) -> Result<Plan, ToolError> {
        let mut refs = Refs::default();
        let mut filters = Vec::new();
        if let Some(f) = &base.filters {
            filters.push(compile(f, "the base's filters", &mut refs)?);
        }
        if let Some(f) = view_filter {
            filters.push(compile(f, "the view's filters", &mut refs)?);
        }
        let check_id = |id: &str, refs: &mut Refs| -> Result<Target, ToolError> {
            let target = target_of(id);
            if let Target::Expr(e) = &target {
                let mut own = Refs::default();
                own.walk(e);
                if let Some(what) = own.unsupported.first() {
                    return Err(refusal(what, &format!("the property {id}"), id));
                }
                refs.walk(e);
            }
            Ok(target)
        };
        let mut sort = Vec::new();
        let mut group = None;
        if let Some(view) = view {
            for (id, desc) in &view.sort {
                sort.push((check_id(id, &mut refs)?, *desc));
            }
            if let Some((id, desc)) = &view.group_by {
                group = Some((check_id(id, &mut refs)?, *desc));
            }
        }
        let mut column_ids: Vec<String> = view.map(|v| v.order.clone()).unwrap_or_default();
        if column_ids.is_empty() {
            column_ids.push("file.name".to_string());
            let mut used = refs.ids.clone();
            if let Some(view) = view {
                used.extend(view.sort.iter().map(|(id, _)| id.clone()));
                used.extend(view.group_by.iter().map(|(id, _)| id.clone()));
            }
            for id in used {
                let canonical = match target_of(&id) {
                    Target::Note(name) => format!("note.{name}"),
                    Target::Expr(_) => id,
                };
                if !column_ids.contains(&canonical) {
                    column_ids.push(canonical);
                }
            }
        }
        let mut columns = Vec::new();
        for id in column_ids {
            let target = check_id(&id, &mut refs)?;
            columns.push((id, target));
        }

        // The formulas used, with the formulas they use.
        let defined: HashMap<&str, &str> = base.formulas.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
        let mut formulas: HashMap<String, Expr> = HashMap::new();
        let mut graph: HashMap<String, Vec<String>> = HashMap::new();
        let mut pending: Vec<String> = refs.formulas.clone();
        while let Some(name) = pending.pop() {
            if formulas.contains_key(&name) {
                continue;
            }
            let Some(text) = defined.get(name.as_str()) else { continue };
            let place = format!("formula {name:?}");
            let expr = parse_expr(text)
                .map_err(|e| refusal("an expression that does not parse", &place, text).detail("reason", e.clone()))?;
            let mut own = Refs::default();
            own.walk(&expr);
            if let Some(what) = own.unsupported.first() {
                return Err(refusal(what, &place, text));
            }
            pending.extend(own.formulas.iter().cloned());
            graph.insert(name.clone(), own.formulas);
            formulas.insert(name, expr);
        }
        let mut names: Vec<&String> = graph.keys().collect();
        names.sort();
        for name in names {
            if let Some(cycle) = find_cycle(name, &|n: &str| graph.get(n).cloned().unwrap_or_default()) {
                return Err(ToolError::with_message(
                    ErrorCode::UnsupportedBaseFilter,
                    format!("the formulas {} refer to each other in a cycle", cycle.join(" → ")),
                )
                .detail("construct", "formula cycle")
                .detail("cycle", cycle));
            }
        }
        Ok(Plan { filters, formulas, columns, sort, group })
    }
}

fn compile(filter: &Filter, place: &str, refs: &mut Refs) -> Result<CFilter, ToolError> {
    Ok(match filter {
        Filter::Expr(text) => {
            let expr = parse_expr(text)
                .map_err(|e| refusal("an expression that does not parse", place, text).detail("reason", e.clone()))?;
            let mut own = Refs::default();
            own.walk(&expr);
            if let Some(what) = own.unsupported.first() {
                return Err(refusal(what, place, text));
            }
            refs.walk(&expr);
            CFilter::Expr(expr)
        }
        Filter::And(items) => CFilter::And(items.iter().map(|f| compile(f, place, refs)).collect::<Result<_, _>>()?),
        Filter::Or(items) => CFilter::Or(items.iter().map(|f| compile(f, place, refs)).collect::<Result<_, _>>()?),
        Filter::Not(items) => CFilter::Not(items.iter().map(|f| compile(f, place, refs)).collect::<Result<_, _>>()?),
    })
}

#[derive(Debug, Clone, Copy)]
struct Clock {
    now: DateTime<Utc>,
    today: NaiveDate,
}

/// `value`, `index` and `acc` inside `filter`, `map` and `reduce`.
struct Scope<'p> {
    value: V,
    index: V,
    acc: Option<V>,
    outer: Option<&'p Scope<'p>>,
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
struct Env<'a> {
    row: &'a Row,
    plan: &'a Plan,
    clock: Clock,
    cache: RefCell<HashMap<String, Eval>>,
    depth: Cell<usize>,
    /// Text bytes built so far.
    spent: Cell<usize>,
}

fn frontmatter<'r>(row: &'r Row, name: &str) -> Option<&'r Value> {
    row.properties
        .get(name)
        .or_else(|| row.properties.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v))
}

fn arg(args: &[V], i: usize) -> &V {
    args.get(i).unwrap_or(&V::Null)
}

/// JavaScript's `slice` bounds.
fn bounds(len: usize, start: &V, end: &V) -> Result<Range<usize>, String> {
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
    fn new(row: &'a Row, plan: &'a Plan, clock: Clock) -> Self {
        Env { row, plan, clock, cache: RefCell::new(HashMap::new()), depth: Cell::new(0), spent: Cell::new(0) }
    }

    /// Built text, charged to the row's budget.
    fn built(&self, s: String) -> Eval {
        let spent = self.spent.get().saturating_add(s.len());
        self.spent.set(spent);
        if s.len() > MAX_BUILT || spent > ROW_BUDGET {
            return Err("the text is too long".to_string());
        }
        Ok(V::Str(s))
    }

    fn matches(&self) -> bool {
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

    fn target(&self, target: &Target) -> Option<V> {
        match target {
            Target::Note(name) => Some(frontmatter(self.row, name).map_or(V::Null, |v| json_to_v(v, 0))),
            Target::Expr(e) => self.eval(e, None).ok(),
        }
    }

    fn output(&self, target: &Target) -> Value {
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

    fn eval(&self, e: &Expr, scope: Option<&Scope>) -> Eval {
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

    fn call(&self, name: &str, args: &[Expr], scope: Option<&Scope>) -> Eval {
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

    fn lambda(&self, receiver: &V, name: &str, args: &[Expr], scope: Option<&Scope>) -> Eval {
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

    fn method(&self, v: &V, name: &str, args: &[V]) -> Eval {
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

/// A date in a moment.js pattern (`YYYY-MM-DD HH:mm`); text in `[brackets]` is literal.
fn moment(d: &NaiveDateTime, pattern: &str) -> String {
    const TOKENS: &[&str] = &[
        "YYYY", "YY", "MMMM", "MMM", "MM", "M", "Do", "DD", "D", "dddd", "ddd", "dd", "d", "HH", "H", "hh", "h", "mm",
        "m", "ss", "s", "SSS", "A", "a", "X", "x",
    ];
    let mut out = String::new();
    let mut rest = pattern;
    while let Some(c) = rest.chars().next() {
        if c == '[' {
            match rest.find(']') {
                Some(end) => {
                    out.push_str(&rest[1..end]);
                    rest = &rest[end + 1..];
                }
                None => {
                    out.push_str(&rest[1..]);
                    rest = "";
                }
            }
            continue;
        }
        let Some(token) = TOKENS.iter().find(|t| rest.starts_with(**t)) else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        };
        let hour12 = match d.hour() % 12 {
            0 => 12,
            h => h,
        };
        let text = match *token {
            "YYYY" => format!("{:04}", d.year()),
            "YY" => format!("{:02}", d.year().rem_euclid(100)),
            "MMMM" => d.format("%B").to_string(),
            "MMM" => d.format("%b").to_string(),
            "MM" => format!("{:02}", d.month()),
            "M" => d.month().to_string(),
            "Do" => {
                let day = d.day();
                let suffix = match (day % 10, day % 100) {
                    (_, 11..=13) => "th",
                    (1, _) => "st",
                    (2, _) => "nd",
                    (3, _) => "rd",
                    _ => "th",
                };
                format!("{day}{suffix}")
            }
            "DD" => format!("{:02}", d.day()),
            "D" => d.day().to_string(),
            "dddd" => d.format("%A").to_string(),
            "ddd" => d.format("%a").to_string(),
            "dd" => d.format("%a").to_string().chars().take(2).collect(),
            "d" => d.weekday().num_days_from_sunday().to_string(),
            "HH" => format!("{:02}", d.hour()),
            "H" => d.hour().to_string(),
            "hh" => format!("{hour12:02}"),
            "h" => hour12.to_string(),
            "mm" => format!("{:02}", d.minute()),
            "m" => d.minute().to_string(),
            "ss" => format!("{:02}", d.second()),
            "s" => d.second().to_string(),
            "SSS" => format!("{:03}", d.and_utc().timestamp_subsec_millis()),
            "A" => if d.hour() < 12 { "AM" } else { "PM" }.to_string(),
            "a" => if d.hour() < 12 { "am" } else { "pm" }.to_string(),
            "X" => d.and_utc().timestamp().to_string(),
            _ => d.and_utc().timestamp_millis().to_string(),
        };
        out.push_str(&text);
        rest = &rest[token.len()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A base as Obsidian writes it.
    const PROJECTS: &str = r#"filters:
  and:
    - file.hasTag("project")
    - or:
        - file.inFolder("Work")
        - file.inFolder("Personal")
    - not:
        - file.hasTag("archived")
formulas:
  total: price * quantity
  with_tax: (formula.total * 1.2).round(2)
  due_in: 'if(due, ((date(due) - today()) / 86400000).round(0), "")'
properties:
  note.status:
    displayName: Status
  formula.total:
    displayName: Total
views:
  - type: table
    name: Active
    filters:
      and:
        - status != "done"
    order:
      - file.name
      - status
      - formula.total
      - formula.with_tax
    sort:
      - property: formula.total
        direction: DESC
    limit: 3
  - type: cards
    name: By due date
    order:
      - file.basename
      - due
      - formula.due_in
    sort:
      - property: due
        direction: ASC
"#;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn row(path: &str, tags: &[&str], props: Value) -> Row {
        Row {
            path: path.to_string(),
            properties: props.as_object().cloned().unwrap_or_default(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            links: Vec::new(),
            size: 100,
            ctime: Some(at("2024-04-01T09:00:00Z")),
            mtime: at("2024-04-28T12:30:00Z"),
        }
    }

    fn rows() -> Vec<Row> {
        vec![
            row(
                "Work/Alpha.md",
                &["project"],
                json!({"status": "active", "price": 10, "quantity": 3, "due": "2024-05-10"}),
            ),
            row(
                "Work/Beta.md",
                &["project/client"],
                json!({"status": "done", "price": 5, "quantity": 2, "due": "2024-05-03"}),
            ),
            row("Personal/Gamma.md", &["project"], json!({"status": "active", "price": 7.5, "quantity": 2})),
            row("Work/Delta.md", &["project", "archived"], json!({"status": "active", "price": 1, "quantity": 1})),
            row("Other/Epsilon.md", &["project"], json!({"status": "active", "price": 1, "quantity": 1})),
            row("Work/Zeta.md", &["idea"], json!({"status": "active", "price": 1, "quantity": 1})),
            row(
                "Personal/Sub/Eta.md",
                &["Project"],
                json!({"status": "waiting", "price": "abc", "quantity": 2, "due": "2024-05-01"}),
            ),
            row(
                "Work/Theta.md",
                &["#project"],
                json!({"status": "active", "price": 20, "quantity": 2, "due": "2024-06-01"}),
            ),
        ]
    }

    fn query<'a>(view: Option<&'a str>) -> Query<'a> {
        Query {
            view,
            override_filters: None,
            today: NaiveDate::from_ymd_opt(2024, 5, 1).unwrap(),
            now: at("2024-05-01T15:45:00Z"),
            limit: None,
        }
    }

    fn paths(result: &Result_) -> Vec<&str> {
        result.rows.iter().map(|r| r.path.as_str()).collect()
    }

    #[test]
    fn parses_the_sections() {
        let base = parse(PROJECTS).unwrap();
        let Some(Filter::And(items)) = &base.filters else { panic!("{:?}", base.filters) };
        assert_eq!(items.len(), 3);
        assert_eq!(items[0], Filter::Expr("file.hasTag(\"project\")".into()));
        assert_eq!(
            items[1],
            Filter::Or(vec![
                Filter::Expr("file.inFolder(\"Work\")".into()),
                Filter::Expr("file.inFolder(\"Personal\")".into())
            ])
        );
        assert_eq!(items[2], Filter::Not(vec![Filter::Expr("file.hasTag(\"archived\")".into())]));
        let names: Vec<&str> = base.formulas.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["total", "with_tax", "due_in"]);
        assert_eq!(base.properties["note.status"], json!({"displayName": "Status"}));
        assert_eq!(base.views.len(), 2);
        let active = &base.views[0];
        assert_eq!(active.kind, "table");
        assert_eq!(active.name, "Active");
        assert_eq!(active.order, ["file.name", "status", "formula.total", "formula.with_tax"]);
        assert_eq!(active.sort, [("formula.total".to_string(), true)]);
        assert_eq!(active.limit, Some(3));
        assert_eq!(base.views[1].sort, [("due".to_string(), false)]);
        assert_eq!(base.raw["views"][1]["name"], "By due date");
        assert!(validate(&base).is_empty(), "{:?}", validate(&base));
    }

    #[test]
    fn runs_the_first_view() {
        let base = parse(PROJECTS).unwrap();
        let result = run(&base, rows(), &query(None)).unwrap();
        assert_eq!(result.view.as_deref(), Some("Active"));
        assert_eq!(result.columns, ["file.name", "status", "formula.total", "formula.with_tax"]);
        // Alpha, Gamma, Eta and Theta match (Beta is done; Delta archived; Epsilon elsewhere;
        // Zeta untagged); Eta's total is an error (null), so it sorts last and the limit cuts it.
        assert_eq!(result.total, 4);
        assert_eq!(paths(&result), ["Work/Theta.md", "Work/Alpha.md", "Personal/Gamma.md"]);
        assert_eq!(
            Value::Object(result.rows[0].values.clone()),
            json!({"file.name": "Theta.md", "status": "active", "formula.total": 40, "formula.with_tax": 48})
        );
        assert_eq!(result.rows[2].values["formula.total"], json!(15));
        assert_eq!(result.rows[2].values["formula.with_tax"], json!(18));
        assert_eq!(result.rows[0].group, None);

        // The caller's limit is the smaller one here; without it all four come, Eta's total null.
        let all = run(&base, rows(), &Query { limit: Some(10), ..query(None) }).unwrap();
        assert_eq!(all.rows.len(), 3);
        let mut unlimited = base.clone();
        unlimited.views[0].limit = None;
        let all = run(&unlimited, rows(), &query(None)).unwrap();
        assert_eq!(paths(&all), ["Work/Theta.md", "Work/Alpha.md", "Personal/Gamma.md", "Personal/Sub/Eta.md"]);
        assert_eq!(all.rows[3].values["formula.total"], Value::Null);
        assert_eq!(all.rows[3].values["formula.with_tax"], Value::Null);
        let two = run(&unlimited, rows(), &Query { limit: Some(2), ..query(None) }).unwrap();
        assert_eq!((two.rows.len(), two.total), (2, 4));
    }

    #[test]
    fn runs_a_named_view_with_dates() {
        let base = parse(PROJECTS).unwrap();
        let result = run(&base, rows(), &query(Some("By due date"))).unwrap();
        assert_eq!(result.columns, ["file.basename", "due", "formula.due_in"]);
        assert_eq!(
            paths(&result),
            ["Personal/Sub/Eta.md", "Work/Beta.md", "Work/Alpha.md", "Work/Theta.md", "Personal/Gamma.md"]
        );
        let due_in: Vec<Value> = result.rows.iter().map(|r| r.values["formula.due_in"].clone()).collect();
        assert_eq!(due_in, [json!(0), json!(2), json!(9), json!(31), json!("")]);
        assert_eq!(result.rows[0].values["file.basename"], "Eta");
        assert_eq!(result.rows[0].values["due"], "2024-05-01");
        assert_eq!(result.total, 5);

        let missing = run(&base, rows(), &query(Some("Nope"))).unwrap_err();
        assert_eq!(missing.code, ErrorCode::InvalidInput);
        assert_eq!(missing.details["field"], "view");
    }

    #[test]
    fn overrides_the_view_filters() {
        let base = parse(PROJECTS).unwrap();
        let filter = Filter::Expr("price > 6".into());
        let result = run(&base, rows(), &Query { override_filters: Some(&filter), ..query(Some("Active")) }).unwrap();
        // Beta (done) is back in, but its price is 5; Eta's price is text that is no number.
        assert_eq!(paths(&result), ["Work/Theta.md", "Work/Alpha.md", "Personal/Gamma.md"]);
        assert_eq!(result.total, 3);
        let filter =
            Filter::Or(vec![Filter::Expr("status == \"done\"".into()), Filter::Expr("price == \"abc\"".into())]);
        let result = run(&base, rows(), &Query { override_filters: Some(&filter), ..query(Some("Active")) }).unwrap();
        assert_eq!(paths(&result), ["Work/Beta.md", "Personal/Sub/Eta.md"]);
    }

    fn eval_one(expr: &str, r: &Row) -> Value {
        let text = format!(
            "formulas:\n  x: {}\nviews:\n  - type: table\n    name: T\n    order:\n      - formula.x\n",
            double(expr)
        );
        let base = parse(&text).unwrap();
        let result = run(&base, vec![r.clone()], &query(None)).unwrap();
        result.rows[0].values["formula.x"].clone()
    }

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

    #[test]
    fn matches_links_and_groups() {
        let mut a = row("A.md", &[], json!({"kind": "x"}));
        a.links = vec!["Notes/Target.md".into()];
        let b = row("B.md", &[], json!({"kind": "y"}));
        let c = row("C.md", &[], json!({"kind": "x"}));
        let d = row("D.md", &[], json!({}));
        let text = "views:\n  - type: table\n    name: G\n    groupBy:\n      property: kind\n      direction: DESC\n    sort:\n      - property: file.name\n        direction: DESC\n";
        let base = parse(text).unwrap();
        let result = run(&base, vec![a.clone(), b.clone(), c.clone(), d.clone()], &query(None)).unwrap();
        assert_eq!(paths(&result), ["B.md", "C.md", "A.md", "D.md"]);
        let groups: Vec<Option<Value>> = result.rows.iter().map(|r| r.group.clone()).collect();
        assert_eq!(groups, [Some(json!("y")), Some(json!("x")), Some(json!("x")), Some(Value::Null)]);
        assert_eq!(result.columns, ["file.name", "note.kind"]);

        let filter = Filter::Expr(r#"file.hasLink("Target") || file.hasLink(link("Notes/Target"))"#.into());
        let result = run(&base, vec![a, b, c, d], &Query { override_filters: Some(&filter), ..query(None) }).unwrap();
        assert_eq!(paths(&result), ["A.md"]);
    }

    #[test]
    fn refuses_what_it_does_not_evaluate() {
        let base = parse(PROJECTS).unwrap();
        for (expr, construct) in [
            ("file.backlinks.length > 0", "file.backlinks"),
            ("this.file.name == file.name", "this"),
            ("image(cover)", "the function image()"),
            ("file.mtime.relative() != \"\"", "the method .relative()"),
            ("file.links[0].asFile()", "the method .asFile()"),
            ("/(?<=a)b/.matches(title)", "the regular expression /(?<=a)b/"),
            ("status ==", "an expression that does not parse"),
        ] {
            let filter = Filter::Expr(expr.into());
            let err = run(&base, rows(), &Query { override_filters: Some(&filter), ..query(None) }).unwrap_err();
            assert_eq!(err.code, ErrorCode::UnsupportedBaseFilter, "{expr}");
            assert_eq!(err.details["construct"], construct, "{expr}");
            assert!(err.message.contains(construct), "{}", err.message);
        }
        // An unsupported formula refuses only when the view uses it.
        let text = "formulas:\n  ago: file.mtime.relative()\nviews:\n  - type: table\n    name: A\n    order:\n      - file.name\n  - type: table\n    name: B\n    order:\n      - formula.ago\n";
        let base = parse(text).unwrap();
        assert!(run(&base, rows(), &query(Some("A"))).is_ok());
        let err = run(&base, rows(), &query(Some("B"))).unwrap_err();
        assert_eq!(err.details["construct"], "the method .relative()");
    }

    #[test]
    fn refuses_formula_cycles() {
        let text = "formulas:\n  a: formula.b + 1\n  b: formula.c * 2\n  c: formula.a\n  d: price\nviews:\n  - type: table\n    name: T\n    order:\n      - formula.a\n";
        let base = parse(text).unwrap();
        let err = run(&base, rows(), &query(None)).unwrap_err();
        assert_eq!(err.code, ErrorCode::UnsupportedBaseFilter);
        assert_eq!(err.details["construct"], "formula cycle");
        assert_eq!(err.details["cycle"], json!(["a", "b", "c", "a"]));
        assert_eq!(validate(&base), ["formulas form a cycle: a → b → c → a"]);
        // A self-reference too.
        let base = parse(
            "formulas:\n  a: formula.a + 1\nviews:\n  - type: table\n    name: T\n    order:\n      - formula.a\n",
        )
        .unwrap();
        assert_eq!(run(&base, rows(), &query(None)).unwrap_err().details["cycle"], json!(["a", "a"]));
    }

    #[test]
    fn round_trips_byte_for_byte() {
        let base = parse(PROJECTS).unwrap();
        assert_eq!(render(&base), PROJECTS);
        // Written anew from the tree (not copied), the same bytes come out.
        let source = base.layout.source.as_ref().unwrap();
        assert_eq!(write(None, &source.root), PROJECTS);
        let quoted = "filters: 'status == \"done\"'\nformulas:\n  a: \"price * 2\"\n  b: |-\n    line one\n    line two\nviews:\n  - type: list\n    name: \"My list\"\n    limit: 10\n    order: []\n";
        let base = parse(quoted).unwrap();
        assert_eq!(write(None, &base.layout.source.as_ref().unwrap().root), quoted);
        assert_eq!(render(&base), quoted);
        // A hand-written file with comments and flow style comes back as it was, too.
        let odd = "# my base\nviews: [{type: table, name: X}]   # one view\n";
        assert_eq!(render(&parse(odd).unwrap()), odd);
        assert_eq!(render(&parse("").unwrap()), "");
    }

    #[test]
    fn renders_typed_changes() {
        let mut base = parse(PROJECTS).unwrap();
        base.views[0].limit = Some(5);
        base.views[1].sort[0].1 = true;
        let want = PROJECTS
            .replace("limit: 3", "limit: 5")
            .replace("property: due\n        direction: ASC", "property: due\n        direction: DESC");
        assert_eq!(render(&base), want);

        base.formulas.push(("margin".into(), "price - cost".into()));
        base.views.push(View {
            kind: "list".into(),
            name: "All".into(),
            order: vec!["file.name".into()],
            ..View::default()
        });
        let text = render(&base);
        assert!(text.contains("  due_in: 'if(due, ((date(due) - today()) / 86400000).round(0), \"\")'\n  margin: price - cost\nproperties:"), "{text}");
        assert!(text.ends_with("  - type: list\n    name: All\n    order:\n      - file.name\n"), "{text}");
        let again = parse(&text).unwrap();
        assert_eq!(again.views, base.views);
        assert_eq!(again.formulas, base.formulas);

        let fresh = Base {
            filters: Some(Filter::Not(vec![Filter::Expr("file.hasTag(\"x\")".into())])),
            views: vec![View { kind: "table".into(), name: "T".into(), limit: Some(2), ..View::default() }],
            ..Base::default()
        };
        assert_eq!(
            render(&fresh),
            "filters:\n  not:\n    - file.hasTag(\"x\")\nviews:\n  - type: table\n    name: T\n    limit: 2\n"
        );
    }

    #[test]
    fn writes_json_as_obsidian_yaml() {
        let value = json!({
            "views": [{"order": ["file.name"], "name": "T", "type": "table", "columnSize": {"file.name": 200}}],
            "filters": {"and": ["file.hasTag(\"x\")", "!done", "a: b", "it's \"q\"", "'both' \"q\""]},
            "properties": {},
            "summaries": {"s": "values.mean()"}
        });
        assert_eq!(
            to_yaml(&value),
            "filters:\n  and:\n    - file.hasTag(\"x\")\n    - \"!done\"\n    - \"a: b\"\n    - it's \"q\"\n    - \"'both' \\\"q\\\"\"\nproperties: {}\nsummaries:\n  s: values.mean()\nviews:\n  - type: table\n    name: T\n    order:\n      - file.name\n    columnSize:\n      file.name: 200\n"
        );
        assert_eq!(
            to_yaml(&json!({"a": "multi\nline\n", "b": [], "c": null, "d": "123", "e": true})),
            "a: |\n  multi\n  line\nb: []\nc: null\nd: \"123\"\ne: true\n"
        );
    }

    #[test]
    fn updates_with_a_merge_patch() {
        let patch = json!({
            "formulas": {"with_tax": "(formula.total * 1.25).round(2)", "margin": "price - cost"},
            "properties": {"note.status": {"displayName": "State"}},
            "summaries": {"avg": "values.mean()"}
        });
        let out = update(PROJECTS, &patch).unwrap();
        let want = PROJECTS
            .replace("1.2).round", "1.25).round")
            .replace("\"\")'\nproperties:", "\"\")'\n  margin: price - cost\nproperties:")
            .replace("displayName: Status", "displayName: State")
            + "summaries:\n  avg: values.mean()\n";
        assert_eq!(out, want);
        let base = parse(&out).unwrap();
        assert_eq!(base.raw["summaries"]["avg"], "values.mean()");

        // Replacing the views keeps the quoting of what stayed the same.
        let text = "views:\n  - type: table\n    name: \"Main\"\n    order:\n      - file.name\n";
        let out =
            update(text, &json!({"views": [{"type": "table", "name": "Main", "order": ["file.name", "status"]}]}))
                .unwrap();
        assert_eq!(out, "views:\n  - type: table\n    name: \"Main\"\n    order:\n      - file.name\n      - status\n");

        // CRLF files stay CRLF.
        let crlf = "formulas:\r\n  a: price * 2\r\nviews:\r\n  - type: table\r\n    name: T\r\n";
        let out = update(crlf, &json!({"formulas": {"a": "price * 3", "b": "1"}})).unwrap();
        assert_eq!(out, "formulas:\r\n  a: price * 3\r\n  b: \"1\"\r\nviews:\r\n  - type: table\r\n    name: T\r\n");

        // No change, no rewrite.
        assert_eq!(update(PROJECTS, &json!({"formulas": {"nope": null}})).unwrap(), PROJECTS);

        for (patch, needle) in [
            (json!({"views": [{"type": "grid", "name": "X"}]}), "unknown type \"grid\""),
            (json!({"formulas": {"bad": "price +"}}), "formula \"bad\" does not parse"),
            (json!({"views": [{"name": "X", "sort": [{"property": "a", "direction": "UP"}]}]}), "not ASC or DESC"),
            (json!({"views": "nope"}), "views must be a list"),
            (json!({"formulas": {"with_tax": null}}), "view \"Active\" uses formula.with_tax, which is not defined"),
            (json!(["not", "an", "object"]), "JSON object"),
        ] {
            let err = update(PROJECTS, &patch).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidInput);
            assert_eq!(err.details["field"], "patch");
            assert!(err.message.contains(needle), "{needle}: {}", err.message);
        }
    }

    #[test]
    fn validates() {
        let text = r#"filters: file.hasTag("a"
formulas:
  ok: price * 2
  broken: (price
  uses: formula.nothing + 1
views:
  - name: Untyped
    sort:
      - property: file.name
        direction: up
  - type: kanban
    name: K
    filters:
      or:
        - status == "a"
        - status = "b"
    order:
      - formula.ghost
    groupBy:
      property: status
      direction: sideways
"#;
        let base = parse(text).unwrap();
        assert_eq!(
            validate(&base),
            [
                "the base's filters: the filter \"file.hasTag(\\\"a\\\"\" does not parse: expected `,` but found end of expression at character 15",
                "formula \"broken\" does not parse: expected `)` but found end of expression at character 6 (in \"(price\")",
                "formula \"uses\" uses formula.nothing, which is not defined",
                "view \"Untyped\" has no type (table, cards, list or map)",
                "view \"Untyped\"'s sort 1 has the direction \"up\", not ASC or DESC",
                "view \"K\" has the unknown type \"kanban\" (table, cards, list or map)",
                "view \"K\"'s filters: the filter \"status = \\\"b\\\"\" does not parse: unexpected `=` at character 8",
                "view \"K\"'s groupBy has the direction \"sideways\", not ASC or DESC",
                "view \"K\" uses formula.ghost, which is not defined",
            ]
        );
    }

    #[test]
    fn refuses_malformed_files() {
        for (text, needle) in [
            ("filters: [unclosed", "not valid YAML: while parsing a flow sequence"),
            ("views: 3", "views must be a list"),
            ("views:\n  - 3", "views[0] must be a mapping"),
            ("filters:\n  and: x\n", "filters.and must be a list"),
            ("filters:\n  xor: []\n", "exactly one of and, or, not"),
            ("views:\n  - type: table\n    limit: -1\n", "limit must be a whole number"),
            ("a: 1\na: 2\n", "appears twice"),
            ("- just\n- a list\n", "must be a mapping"),
            ("a: 1\n---\nb: 2\n", "one YAML document"),
        ] {
            let err = parse(text).unwrap_err();
            assert_eq!(err.code, ErrorCode::BasesSyntaxError, "{text}");
            assert_eq!(err.details["field"], "path");
            assert!(err.message.contains(needle), "{needle}: {}", err.message);
        }
        let empty = parse("").unwrap();
        assert_eq!((empty.filters, empty.views.len(), empty.raw), (None, 0, json!({})));
        assert!(parse("# only a comment\n").unwrap().views.is_empty());
    }

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
