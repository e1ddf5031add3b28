//! JSON into the YAML tree: building a tree from JSON (keeping a guide's key order and quoting),
//! JSON merge patches ([`update`]) and the typed fields overlaid on the tree they came from.

use otc_errors::{ErrorCode, ToolError};
use serde_json::{Map, Value};

use super::sections::{assemble, filter_from, formulas_from, view_from};
use super::validate::validate;
use super::write::write;
use super::yaml::{Key, Node, load, same};
use super::{Base, Filter, MAX_JSON_DEPTH, MAX_YAML_DEPTH, View};

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

/// Where a mapping sits, for the order of new keys.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Ctx {
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
pub(super) fn build(value: &Value, guide: Option<&Node>, ctx: Ctx, depth: usize) -> Node {
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
pub(super) fn overlay(entries: &mut Vec<(Key, Node)>, base: &Base) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bases::parse;
    use crate::bases::testing::*;
    use otc_errors::ErrorCode;
    use serde_json::json;

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
}
