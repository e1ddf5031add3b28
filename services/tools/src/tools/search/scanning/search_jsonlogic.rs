//! search_jsonlogic: a JSONLogic rule (datalogic-rs) over each readable note as
//! `{path, content, frontmatter, tags, stat: {ctime, mtime, size}}`, plus `glob` and `regexp`,
//! both `[PATTERN, VALUE]` with the pattern first and a string literal.
//!
//! Before anything runs, the rule is checked here: an object, known operators with the right
//! number of arguments, at most [`MAX_RULE_BYTES`] of JSON, [`MAX_DEPTH`] levels and
//! [`MAX_ITERATION_NESTING`] nested array operators (each level multiplies the work per note);
//! the patterns are compiled once under the regex size limits. The same walk finds what the rule
//! reads (a note's content is fetched only when the rule names `content`; `stat.ctime` costs a
//! change-log lookup) and what the store can narrow by: in a top-level `and` (or as the whole
//! rule), `glob` on the path (its literal head is a path prefix), `==`/`===` between a top-level
//! `frontmatter.<key>` and a scalar (a property filter), `in` of a string in `tags` (a tag
//! filter), and literal words that `content` must hold (for [`candidate_paths`]).
//!
//! `stat.mtime` and `stat.size` come from the manifest (mtime in epoch milliseconds). The server
//! keeps no birth time, so `stat.ctime` is when the path last came into being on the server
//! (its newest create record; a move creates the new path) or the mtime, whichever is earlier.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use datalogic_rs::bumpalo::Bump;
use datalogic_rs::operator::EvalContext;
use datalogic_rs::{ArenaExt, CustomOperator, DataValue, Engine, EvaluationConfig, Logic, NanHandling};
use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::{ErrorCode, ToolError};
use otc_store::{ScanCandidate, ScanFilter};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tools::search::scanning::{
    self, Budget, Limit, Matcher, PageSpec, PatternError, Prefilter, RegexFlags, candidate_paths, merge_prefix,
    root_prefix, search_limit,
};
use otc_kernel::format::{self, ResponseFormat, Verbosity};
use otc_kernel::reading::{PAGE_BUDGET_BYTES, decode_cursor, page};
use otc_kernel::{CallContext, Tool};

pub struct SearchJsonlogic;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    /// Over {path, content, frontmatter, tags, stat: {ctime, mtime, size}} (epoch ms), plus glob
    /// and regexp: [PATTERN, VALUE].
    #[schemars(schema_with = "otc_kernel::writing::any_json")]
    pub logic: Value,
    #[serde(default)]
    pub root: Option<String>,
    /// Default 25, at most 1000.
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub cursor: Option<String>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub verbosity: Option<Verbosity>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    /// Over all pages.
    pub total_count: usize,
    pub hits: Vec<Hit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Notes the rule failed on (not matched), and the first failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule_errors: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule_error: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Hit {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontmatter: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtime: Option<String>,
}

/// The largest rule, as compact JSON.
pub const MAX_RULE_BYTES: usize = 16 * 1024;
/// The deepest nesting of arrays and operations.
pub const MAX_DEPTH: usize = 32;
/// Operations in one rule.
pub const MAX_OPERATIONS: usize = 1000;
/// Array operators (map, filter, reduce, all, some, none) inside one another's per-item rule.
pub const MAX_ITERATION_NESTING: usize = 2;

impl Tool for SearchJsonlogic {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        heavy: Some(otc_catalog::Heavy::Scan),
        scopes: &["read:notes"],
        response_format: Format::Takes,
        ..ToolSpec::base(
            "search_jsonlogic",
            "Filter notes with JSONLogic",
            "Filters notes with a JSONLogic rule over path, content, properties and tags.",
            Domain::Search,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let started = Instant::now();
        let view = ctx.view(&input.vault).await?;
        let root = root_prefix(input.root.as_deref())?;
        let limit = search_limit(input.limit)?;
        let detailed =
            format::resolve(input.response_format, input.verbosity, ctx.default_format()) == ResponseFormat::Detailed;
        let after: Option<String> = input.cursor.as_deref().map(|c| decode_cursor(ctx.tool, c)).transpose()?;
        let rule = Rule::new(&input.logic)?;
        let empty = |vault: &str| Output {
            vault: vault.to_string(),
            total_count: 0,
            hits: Vec::new(),
            next_cursor: None,
            rule_errors: None,
            rule_error: None,
        };
        let prefix = rule.narrow.prefix.as_deref().map_or(Some(root.clone()), |p| merge_prefix(&root, p));
        let Some(prefix) = prefix.filter(|_| !rule.narrow.impossible) else {
            // The rule's path globs (and root) share no path.
            return Ok(empty(&view.vault.name));
        };
        let paths = if rule.needs_content && !rule.narrow.literals.is_empty() {
            candidate_paths(ctx, &view, &rule.narrow.literals).await?
        } else {
            None
        };
        let filter = ScanFilter {
            prefix,
            paths,
            tags: rule.narrow.tags.clone(),
            properties: rule.narrow.properties.clone(),
            with_meta: rule.needs_meta || detailed,
            with_created: rule.needs_created,
        };
        let candidates = scanning::candidates(ctx, &view, &filter).await?;
        let read_content = rule.needs_content;
        let matcher = Arc::new(RuleMatcher::new(rule, detailed)?);
        let budget = Arc::new(Budget::new(ctx, started));
        let scanned =
            scanning::scan(ctx, candidates, read_content, PageSpec { after, limit }, matcher.clone(), budget).await?;
        let hits: Vec<Hit> = scanned.hits.into_iter().map(|(_, hit)| hit).collect();
        let (hits, next_cursor) = page(ctx.tool, hits, scanned.more, PAGE_BUDGET_BYTES, |h| h.path.clone());
        let errors = matcher.errors.load(Ordering::Relaxed);
        Ok(Output {
            vault: view.vault.name.clone(),
            total_count: scanned.total,
            hits,
            next_cursor,
            rule_errors: (errors > 0).then_some(errors),
            rule_error: matcher.first_error.lock().map(|e| e.clone()).unwrap_or_default(),
        })
    }
}

/// jsonlogic_error with `details.reason`.
fn rule_error(reason: &str, message: impl Into<String>) -> ToolError {
    ToolError::with_message(ErrorCode::JsonlogicError, message).detail("field", "logic").detail("reason", reason)
}

/// What the store narrows a rule's candidates by.
#[derive(Debug, Default, Clone, PartialEq)]
struct Narrowing {
    /// The literal head of the rule's path globs (None: any path).
    prefix: Option<String>,
    tags: Vec<String>,
    properties: Vec<(String, Value)>,
    /// Literal text the content must hold.
    literals: Vec<String>,
    /// Two globs whose heads share no path.
    impossible: bool,
}

/// A checked rule: its JSON, its compiled patterns, what it reads and what narrows it.
struct Rule {
    logic: Value,
    globs: HashMap<String, regex::Regex>,
    regexps: HashMap<String, regex::Regex>,
    needs_content: bool,
    needs_meta: bool,
    needs_created: bool,
    narrow: Narrowing,
}

/// The operators a rule may use, with their argument counts (least, most).
fn arity(op: &str) -> Option<(usize, Option<usize>)> {
    Some(match op {
        "var" => (0, Some(2)),
        "missing" | "merge" | "cat" => (0, None),
        "missing_some" => (2, Some(2)),
        "if" | "and" | "or" | "+" | "*" | "max" | "min" => (1, None),
        "?:" | "reduce" => (3, Some(3)),
        "==" | "===" | "!=" | "!==" | ">" | ">=" | "/" | "%" | "in" => (2, Some(2)),
        "map" | "filter" | "all" | "some" | "none" | "glob" | "regexp" => (2, Some(2)),
        "<" | "<=" | "substr" => (2, Some(3)),
        "-" => (1, Some(2)),
        "!" | "!!" => (1, Some(1)),
        _ => return None,
    })
}

/// An operation's arguments: an array, or one value standing for itself.
fn arguments(args: &Value) -> &[Value] {
    match args {
        Value::Array(items) => items,
        one => std::slice::from_ref(one),
    }
}

impl Rule {
    fn new(logic: &Value) -> Result<Rule, ToolError> {
        if !logic.is_object() {
            return Err(rule_error("not_an_object", "the rule is a JSONLogic operation: an object with one key"));
        }
        if logic.to_string().len() > MAX_RULE_BYTES {
            return Err(rule_error("too_large", format!("the rule is over {MAX_RULE_BYTES} bytes"))
                .detail("max_rule_bytes", MAX_RULE_BYTES));
        }
        let mut rule = Rule {
            logic: logic.clone(),
            globs: HashMap::new(),
            regexps: HashMap::new(),
            needs_content: false,
            needs_meta: false,
            needs_created: false,
            narrow: Narrowing::default(),
        };
        let mut operations = 0;
        rule.walk(logic, 0, 0, &mut operations)?;
        rule.narrow = narrowing(logic);
        if !rule.needs_content {
            rule.narrow.literals.clear();
        }
        Ok(rule)
    }

    fn walk(&mut self, node: &Value, depth: usize, iterating: usize, operations: &mut usize) -> Result<(), ToolError> {
        if depth > MAX_DEPTH {
            return Err(rule_error("too_deep", format!("the rule nests deeper than {MAX_DEPTH}"))
                .detail("max_depth", MAX_DEPTH));
        }
        match node {
            Value::Array(items) => items.iter().try_for_each(|i| self.walk(i, depth + 1, iterating, operations)),
            Value::Object(map) => {
                let mut entries = map.iter();
                let (Some((op, args)), None) = (entries.next(), entries.next()) else {
                    return Err(rule_error(
                        "not_an_operation",
                        "an operation is an object with exactly one key, the operator",
                    ));
                };
                *operations += 1;
                if *operations > MAX_OPERATIONS {
                    return Err(rule_error("too_large", format!("the rule has over {MAX_OPERATIONS} operations"))
                        .detail("max_operations", MAX_OPERATIONS));
                }
                let Some((least, most)) = arity(op) else {
                    return Err(rule_error("unknown_operator", format!("unknown operator {op:?}"))
                        .detail("operator", op.as_str()));
                };
                let args = arguments(args);
                if args.len() < least || most.is_some_and(|m| args.len() > m) {
                    let expected = match most {
                        Some(m) if m == least => format!("{least}"),
                        Some(m) => format!("{least} to {m}"),
                        None => format!("at least {least}"),
                    };
                    return Err(rule_error(
                        "wrong_arity",
                        format!("{op} takes {expected} arguments, not {}", args.len()),
                    )
                    .detail("operator", op.as_str())
                    .detail("expected", expected));
                }
                match op.as_str() {
                    "var" => self.var(args.first()),
                    "missing" => args.iter().for_each(|a| self.names(a)),
                    "missing_some" => self.names(&args[1]),
                    "glob" | "regexp" => self.pattern(op, &args[0])?,
                    _ => {}
                }
                let per_item = matches!(op.as_str(), "map" | "filter" | "reduce" | "all" | "some" | "none");
                for (i, arg) in args.iter().enumerate() {
                    let nested = if per_item && i > 0 { iterating + 1 } else { iterating };
                    if nested > MAX_ITERATION_NESTING {
                        return Err(rule_error(
                            "too_deep",
                            format!("array operators nest at most {MAX_ITERATION_NESTING} deep"),
                        )
                        .detail("max_iteration_nesting", MAX_ITERATION_NESTING));
                    }
                    self.walk(arg, depth + 1, nested, operations)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// A `var`'s name: a literal records what it reads; anything else may read everything.
    fn var(&mut self, name: Option<&Value>) {
        match name {
            None => self.reads(""),
            Some(Value::String(s)) => self.reads(s),
            Some(Value::Number(_)) => {}
            Some(_) => self.reads(""),
        }
    }

    /// The names `missing` checks: literals, or arrays of them.
    fn names(&mut self, arg: &Value) {
        match arg {
            Value::String(s) => self.reads(s),
            Value::Array(items) => items.iter().for_each(|i| self.names(i)),
            Value::Number(_) => {}
            _ => self.reads(""),
        }
    }

    fn reads(&mut self, name: &str) {
        let mut parts = name.split('.');
        match parts.next().unwrap_or("") {
            "" => {
                self.needs_content = true;
                self.needs_meta = true;
                self.needs_created = true;
            }
            "content" => self.needs_content = true,
            "frontmatter" | "tags" => self.needs_meta = true,
            "stat" => {
                if matches!(parts.next(), None | Some("ctime")) {
                    self.needs_created = true;
                }
            }
            _ => {}
        }
    }

    fn pattern(&mut self, op: &str, pattern: &Value) -> Result<(), ToolError> {
        let Value::String(pattern) = pattern else {
            return Err(rule_error(
                "pattern_not_literal",
                format!("{op} takes [PATTERN, VALUE]: the pattern first, as a string literal"),
            )
            .detail("operator", op));
        };
        let (source, table) = if op == "glob" {
            (otc_vault::acl::glob_regex(pattern), &mut self.globs)
        } else {
            (pattern.clone(), &mut self.regexps)
        };
        if table.contains_key(pattern) {
            return Ok(());
        }
        let compiled = scanning::compile_regex(&source, RegexFlags::default()).map_err(|e| match e {
            PatternError::Syntax(message) => rule_error("invalid_regexp", format!("{op} pattern does not parse"))
                .detail("operator", op)
                .detail("error", message),
            PatternError::TooLarge => scanning::too_large("logic"),
        })?;
        table.insert(pattern.clone(), compiled);
        Ok(())
    }
}

/// The var a narrowing condition compares: `{"var": "name"}` or `{"var": ["name"]}` (a default
/// would stand in for a missing value, so that form narrows nothing).
fn plain_var(node: &Value) -> Option<&str> {
    let args = node.as_object().filter(|m| m.len() == 1)?.get("var")?;
    match args {
        Value::String(s) => Some(s),
        Value::Array(items) if items.len() == 1 => items[0].as_str(),
        _ => None,
    }
}

/// What the conditions of a top-level `and` (or the rule as one condition) let the store
/// narrow by. Each only drops notes the condition is false for.
fn narrowing(rule: &Value) -> Narrowing {
    let mut out = Narrowing::default();
    let conditions = match rule.get("and") {
        Some(args) if rule.as_object().is_some_and(|m| m.len() == 1) => arguments(args),
        _ => std::slice::from_ref(rule),
    };
    for condition in conditions {
        let Some((op, args)) = condition.as_object().filter(|m| m.len() == 1).and_then(|m| m.iter().next()) else {
            continue;
        };
        let args = arguments(args);
        if args.len() != 2 {
            continue;
        }
        match (op.as_str(), &args[0], plain_var(&args[1])) {
            ("glob", Value::String(pattern), Some("path")) => {
                let head: String = pattern.chars().take_while(|c| *c != '*' && *c != '?').collect();
                match out.prefix.as_deref().map_or(Some(head.clone()), |p| merge_prefix(p, &head)) {
                    Some(p) => out.prefix = Some(p),
                    None => out.impossible = true,
                }
            }
            ("in", Value::String(tag), Some("tags")) if !tag.is_empty() => out.tags.push(tag.clone()),
            ("in", Value::String(text), Some("content")) if !text.is_empty() => out.literals.push(text.clone()),
            ("regexp", Value::String(pattern), Some("content")) => {
                out.literals.extend(Prefilter::new(pattern, RegexFlags::default()).literals().iter().cloned());
            }
            ("==" | "===", _, _) => {
                let (var, literal) = match (plain_var(&args[0]), plain_var(&args[1])) {
                    (Some(var), None) => (var, &args[1]),
                    (None, Some(var)) => (var, &args[0]),
                    _ => continue,
                };
                let Some(key) = var.strip_prefix("frontmatter.").filter(|k| !k.is_empty() && !k.contains('.')) else {
                    continue;
                };
                if matches!(literal, Value::String(_) | Value::Number(_) | Value::Bool(_)) {
                    out.properties.push((key.to_string(), literal.clone()));
                }
            }
            _ => {}
        }
    }
    out
}

/// A compiled pattern operator: `[PATTERN, VALUE]`, true when VALUE (a string, or any string of
/// an array) matches. Patterns are literals, compiled when the rule was checked.
struct PatternOp {
    name: &'static str,
    patterns: HashMap<String, regex::Regex>,
}

impl CustomOperator for PatternOp {
    fn evaluate<'a>(
        &self,
        args: &[&'a DataValue<'a>],
        _ctx: &mut EvalContext<'_, 'a>,
        arena: &'a Bump,
    ) -> datalogic_rs::Result<&'a DataValue<'a>> {
        let pattern = args.first().and_then(|p| p.as_str());
        let Some(regex) = pattern.and_then(|p| self.patterns.get(p)) else {
            return Err(datalogic_rs::Error::invalid_arguments(format!("{} takes a literal pattern first", self.name)));
        };
        let found = match args.get(1) {
            Some(DataValue::String(s)) => regex.is_match(s),
            Some(DataValue::Array(items)) => items.iter().any(|i| i.as_str().is_some_and(|s| regex.is_match(s))),
            _ => false,
        };
        Ok(arena.bool(found))
    }
}

/// `rule` with every ordering comparison (`<`, `<=`, `>`, `>=`) false where the engine cannot
/// compare (a number against a word, an array): JSONLogic's JavaScript answers false there,
/// where datalogic-rs raises an error that would sink the whole rule (an `or` beside it too).
fn lenient(rule: &Value) -> Value {
    match rule {
        Value::Array(items) => Value::Array(items.iter().map(lenient).collect()),
        Value::Object(map) => {
            let inner: Map<String, Value> = map.iter().map(|(k, v)| (k.clone(), lenient(v))).collect();
            let ordering = map.len() == 1 && map.keys().all(|k| matches!(k.as_str(), "<" | "<=" | ">" | ">="));
            if ordering { serde_json::json!({"try": [Value::Object(inner), false]}) } else { Value::Object(inner) }
        }
        other => other.clone(),
    }
}

/// Evaluates a checked rule on each note.
struct RuleMatcher {
    engine: Engine,
    logic: Logic,
    detailed: bool,
    errors: AtomicUsize,
    first_error: Mutex<Option<String>>,
}

impl RuleMatcher {
    fn new(rule: Rule, detailed: bool) -> Result<Self, ToolError> {
        let config = EvaluationConfig::default()
            .with_loose_equality_errors(false)
            .with_arithmetic_nan_handling(NanHandling::ReturnNull);
        let engine = Engine::builder()
            .with_config(config)
            .add_operator("glob", PatternOp { name: "glob", patterns: rule.globs })
            .add_operator("regexp", PatternOp { name: "regexp", patterns: rule.regexps })
            .build();
        let logic = engine
            .compile(lenient(&rule.logic).to_string().as_str())
            .map_err(|e| rule_error("invalid", "the rule does not compile").detail("error", e.to_string()))?;
        Ok(Self { engine, logic, detailed, errors: AtomicUsize::new(0), first_error: Mutex::new(None) })
    }

    /// Whether the rule holds for `data`; a failure counts as not holding and is recorded.
    fn holds(&self, note: &ScanCandidate, text: Option<&str>) -> bool {
        let arena = Bump::new();
        let data = note_data(note, text, &arena);
        match self.engine.evaluate(&self.logic, data, &arena) {
            Ok(value) => self.engine.truthy(value),
            Err(e) => {
                if self.errors.fetch_add(1, Ordering::Relaxed) == 0
                    && let Ok(mut first) = self.first_error.lock()
                {
                    *first = Some(format!("{}: {e}", note.path));
                }
                false
            }
        }
    }
}

impl Matcher for RuleMatcher {
    type Hit = Hit;

    fn matches(&self, note: &ScanCandidate, text: Option<&str>) -> bool {
        self.holds(note, text)
    }

    fn hit(&self, note: &ScanCandidate, _text: Option<&str>, _budget: &Budget) -> Result<Hit, Limit> {
        let detailed = self.detailed;
        Ok(Hit {
            path: note.path.clone(),
            frontmatter: detailed.then(|| match &note.frontmatter {
                Some(Value::Object(map)) => map.clone(),
                _ => Map::new(),
            }),
            tags: detailed.then(|| note.tags.clone()),
            mtime: detailed.then(|| note.mtime.to_rfc3339()),
        })
    }
}

/// The note as the rule sees it.
fn note_data<'a>(note: &'a ScanCandidate, text: Option<&'a str>, arena: &'a Bump) -> DataValue<'a> {
    let frontmatter = match &note.frontmatter {
        Some(v @ Value::Object(_)) => to_data(v, arena),
        _ => DataValue::Object(&[]),
    };
    let tags = DataValue::Array(arena.alloc_slice_fill_iter(note.tags.iter().map(|t| DataValue::String(t))));
    let millis = |t: chrono::DateTime<chrono::Utc>| DataValue::from_i64(t.timestamp_millis());
    let ctime = note.created.map_or(note.mtime, |c| c.min(note.mtime));
    let stat = DataValue::Object(arena.alloc_slice_fill_iter([
        ("ctime", millis(ctime)),
        ("mtime", millis(note.mtime)),
        ("size", DataValue::from_i64(note.size)),
    ]));
    DataValue::Object(arena.alloc_slice_fill_iter([
        ("path", DataValue::String(&note.path)),
        ("content", text.map_or(DataValue::Null, DataValue::String)),
        ("frontmatter", frontmatter),
        ("tags", tags),
        ("stat", stat),
    ]))
}

fn to_data<'a>(value: &'a Value, arena: &'a Bump) -> DataValue<'a> {
    match value {
        Value::Null => DataValue::Null,
        Value::Bool(b) => DataValue::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => DataValue::from_i64(i),
            None => DataValue::from_f64(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => DataValue::String(s),
        Value::Array(items) => DataValue::Array(arena.alloc_slice_fill_iter(items.iter().map(|i| to_data(i, arena)))),
        Value::Object(map) => {
            DataValue::Object(arena.alloc_slice_fill_iter(map.iter().map(|(k, v)| (k.as_str(), to_data(v, arena)))))
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use serde_json::json;

    use super::*;

    fn note(path: &str, frontmatter: Value, tags: &[&str]) -> ScanCandidate {
        ScanCandidate {
            path: path.into(),
            hash: [0; 32],
            size: 42,
            mtime: Utc.timestamp_millis_opt(1_700_000_000_000).unwrap(),
            frontmatter: Some(frontmatter),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            created: Some(Utc.timestamp_millis_opt(1_600_000_000_000).unwrap()),
        }
    }

    fn holds(rule: Value, note: &ScanCandidate, text: Option<&str>) -> bool {
        let matcher = RuleMatcher::new(Rule::new(&rule).unwrap(), false).unwrap();
        let verdict = matcher.holds(note, text);
        assert_eq!(matcher.errors.load(Ordering::Relaxed), 0, "{:?}", matcher.first_error.lock().unwrap());
        verdict
    }

    fn refused(rule: Value) -> Value {
        match Rule::new(&rule) {
            Ok(_) => panic!("{rule} was accepted"),
            Err(e) => e.to_payload(),
        }
    }

    #[test]
    fn rules_see_path_content_frontmatter_tags_and_stat() {
        let n =
            note("Projects/Alpha.md", json!({"status": "open", "priority": 2, "nested": {"k": "v"}}), &["work", "x/y"]);
        let text = Some("# Alpha\nSee [[Target Note|it]] and TODO\n");
        assert!(holds(json!({"==": [{"var": "frontmatter.status"}, "open"]}), &n, text));
        assert!(holds(json!({">=": [{"var": "frontmatter.priority"}, 2]}), &n, None));
        assert!(holds(json!({"==": [{"var": "frontmatter.nested.k"}, "v"]}), &n, None));
        assert!(holds(json!({"in": ["x/y", {"var": "tags"}]}), &n, None));
        assert!(!holds(json!({"in": ["nope", {"var": "tags"}]}), &n, None));
        assert!(holds(json!({"in": ["TODO", {"var": "content"}]}), &n, text));
        assert!(holds(json!({"==": [{"var": "stat.size"}, 42]}), &n, None));
        assert!(holds(json!({"==": [{"var": "stat.mtime"}, 1_700_000_000_000i64]}), &n, None));
        assert!(holds(json!({"==": [{"var": "stat.ctime"}, 1_600_000_000_000i64]}), &n, None));
        assert!(holds(json!({"==": [{"var": "path"}, "Projects/Alpha.md"]}), &n, None));
        assert!(holds(json!({"!": {"var": "frontmatter.missing"}}), &n, None));
        assert!(holds(json!({"some": [{"var": "tags"}, {"==": [{"var": ""}, "work"]}]}), &n, None));
        // A type mismatch is a plain false, never an error.
        assert!(!holds(json!({"==": [{"var": "frontmatter.nested"}, 3]}), &n, None));
        assert!(!holds(json!({"<": [{"var": "frontmatter.status"}, 3]}), &n, None));
        // ctime is never after mtime.
        let mut late = n.clone();
        late.created = Some(Utc.timestamp_millis_opt(1_800_000_000_000).unwrap());
        assert!(holds(json!({"==": [{"var": "stat.ctime"}, {"var": "stat.mtime"}]}), &late, None));
    }

    #[test]
    fn glob_and_regexp_take_the_pattern_first() {
        let n = note("Projects/Sub/Alpha.md", json!({}), &["proj/one"]);
        let text = Some("links [[Target Note|x]] here\nand [[Other]]");
        assert!(holds(json!({"glob": ["Projects/**", {"var": "path"}]}), &n, None));
        assert!(!holds(json!({"glob": ["Projects/*.md", {"var": "path"}]}), &n, None), "* stays in one folder");
        assert!(holds(json!({"glob": ["Projects/*/Alph?.md", {"var": "path"}]}), &n, None));
        assert!(holds(json!({"regexp": ["\\[\\[Target Note(\\||#|\\]\\])", {"var": "content"}]}), &n, text));
        assert!(!holds(json!({"regexp": ["\\[\\[Nope", {"var": "content"}]}), &n, text));
        assert!(holds(json!({"regexp": ["^proj/", {"var": "tags"}]}), &n, None), "any string of an array");
        assert!(!holds(json!({"regexp": ["x", {"var": "frontmatter.none"}]}), &n, None), "null matches nothing");
        let reversed = refused(json!({"glob": [{"var": "path"}, "Projects/**"]}));
        assert_eq!(reversed["code"], "jsonlogic_error");
        assert_eq!(reversed["details"]["reason"], "pattern_not_literal");
        let bad = refused(json!({"regexp": ["(unclosed", {"var": "content"}]}));
        assert_eq!(
            (bad["details"]["reason"].as_str(), bad["details"]["operator"].as_str()),
            (Some("invalid_regexp"), Some("regexp"))
        );
        assert!(bad["details"]["error"].as_str().unwrap().contains("unclosed"));
        let big = refused(json!({"regexp": ["a{1000}{1000}", {"var": "content"}]}));
        assert_eq!(big["code"], "compute_budget_exceeded");
    }

    #[test]
    fn malformed_rules_are_refused_with_a_reason() {
        let reason = |rule: Value| refused(rule)["details"]["reason"].as_str().unwrap().to_string();
        assert_eq!(reason(json!([1, 2])), "not_an_object");
        assert_eq!(reason(json!("x")), "not_an_object");
        assert_eq!(reason(json!({"nope": [1]})), "unknown_operator");
        assert_eq!(refused(json!({"nope": [1]}))["details"]["operator"], "nope");
        assert_eq!(reason(json!({"and": [{"bogus": 1}]})), "unknown_operator");
        assert_eq!(reason(json!({"==": [1]})), "wrong_arity");
        assert_eq!(reason(json!({"!": [1, 2]})), "wrong_arity");
        assert_eq!(reason(json!({"var": ["a", 1, 2]})), "wrong_arity");
        assert_eq!(refused(json!({"in": [1, 2, 3]}))["details"]["expected"], "2");
        assert_eq!(reason(json!({"==": [1, 1], "!=": [1, 2]})), "not_an_operation");
        assert_eq!(reason(json!({})), "not_an_operation");
        let mut deep = json!(true);
        for _ in 0..40 {
            deep = json!({"!": [deep]});
        }
        assert_eq!(reason(deep), "too_deep");
        let nested = json!({"some": [{"var": "tags"}, {"some": [{"var": ""}, {"some": [{"var": ""}, true]}]}]});
        assert_eq!(reason(nested), "too_deep");
        let wide = json!({"or": (0..1200).map(|i| json!({"==": [i, 1]})).collect::<Vec<_>>()});
        assert_eq!(reason(wide), "too_large");
        let long = json!({"in": ["x".repeat(MAX_RULE_BYTES), {"var": "content"}]});
        assert_eq!(reason(long), "too_large");
        let e = refused(json!({"nope": 1}));
        assert_eq!(e["code"], "jsonlogic_error");
        assert_eq!(e["details"]["field"], "logic");
    }

    #[test]
    fn the_walk_finds_what_a_rule_reads() {
        let reads = |rule: Value| {
            let r = Rule::new(&rule).unwrap();
            (r.needs_content, r.needs_meta, r.needs_created)
        };
        assert_eq!(reads(json!({"glob": ["A/**", {"var": "path"}]})), (false, false, false));
        assert_eq!(reads(json!({"==": [{"var": "frontmatter.a"}, 1]})), (false, true, false));
        assert_eq!(reads(json!({"in": ["x", {"var": ["tags"]}]})), (false, true, false));
        assert_eq!(reads(json!({">": [{"var": "stat.mtime"}, 1]})), (false, false, false));
        assert_eq!(reads(json!({">": [{"var": "stat.ctime"}, 1]})), (false, false, true));
        assert_eq!(reads(json!({"in": ["x", {"var": "content"}]})), (true, false, false));
        assert_eq!(reads(json!({"missing": ["content"]})), (true, false, false));
        assert_eq!(reads(json!({"var": {"cat": ["con", "tent"]}})), (true, true, true), "a computed name reads all");
        assert_eq!(reads(json!({"!!": {"var": ""}})), (true, true, true));
    }

    #[test]
    fn top_level_conditions_narrow_the_candidates() {
        let narrow = |rule: Value| Rule::new(&rule).unwrap().narrow;
        let n = narrow(json!({"and": [
            {"glob": ["Projects/A*/**", {"var": "path"}]},
            {"==": [{"var": "frontmatter.status"}, "open"]},
            {"===": [3, {"var": "frontmatter.rank"}]},
            {"in": ["work", {"var": "tags"}]},
            {"in": ["TODO", {"var": "content"}]},
            {"regexp": ["due:\\s*\\d{4}", {"var": "content"}]},
            {"==": [{"var": ["frontmatter.defaulted", "open"]}, "open"]},
            {"==": [{"var": "frontmatter.a.b"}, 1]},
            {"==": [{"var": "frontmatter.list"}, [1]]},
            {"or": [{"in": ["no", {"var": "tags"}]}]}
        ]}));
        assert_eq!(n.prefix.as_deref(), Some("Projects/A"));
        assert_eq!(n.properties, [("status".to_string(), json!("open")), ("rank".to_string(), json!(3))]);
        assert_eq!(n.tags, ["work"]);
        assert_eq!(n.literals, ["TODO", "due:"]);
        let single = narrow(json!({"in": ["solo", {"var": "tags"}]}));
        assert_eq!(single.tags, ["solo"]);
        assert!(narrow(json!({"or": [{"in": ["a", {"var": "tags"}]}]})).tags.is_empty());
        let clash = narrow(json!({"and": [{"glob": ["A/*", {"var": "path"}]}, {"glob": ["B/*", {"var": "path"}]}]}));
        assert!(clash.impossible);
        assert!(narrow(json!({"in": ["x", {"var": "tags"}]})).literals.is_empty());
    }

    #[test]
    fn evaluation_failures_count_as_no_match() {
        // An integer divided by zero is an error in datalogic-rs: recorded, not raised.
        let rule = json!({"or": [{"/": [{"var": "stat.size"}, 0]}, true]});
        let matcher = RuleMatcher::new(Rule::new(&rule).unwrap(), false).unwrap();
        let n = note("A.md", json!({}), &[]);
        assert!(!matcher.holds(&n, None));
        assert!(!matcher.holds(&n, None));
        assert_eq!(matcher.errors.load(Ordering::Relaxed), 2);
        assert!(matcher.first_error.lock().unwrap().as_deref().unwrap().starts_with("A.md: "));
        // An ordering comparison it cannot make is false, as in JavaScript, and the rule goes on.
        let n = note("B.md", json!({"priority": "high"}), &["t"]);
        assert!(holds(
            json!({"or": [{"<": [{"var": "frontmatter.priority"}, 3]}, {"in": ["t", {"var": "tags"}]}]}),
            &n,
            None
        ));
        assert!(!holds(json!({">=": [{"var": "tags"}, 1]}), &n, None));
    }
}
