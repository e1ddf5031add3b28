//! The typed sections of a base (`filters`, `formulas`, `properties`, `views`) read from the
//! YAML tree, refusing sections of the wrong shape.

use otc_errors::{ErrorCode, ToolError};
use serde_json::Value;

use super::yaml::{Node, Scalar, load};
use super::{Base, Filter, Layout, View};

/// Parses a `.base` file; empty text is an empty base. Refusals are `bases_syntax_error` with
/// field `path` and what is wrong in the message: the file, not the call, needs fixing.
pub fn parse(text: &str) -> Result<Base, ToolError> {
    let syntax = |m: String| ToolError::with_message(ErrorCode::BasesSyntaxError, m).detail("field", "path");
    let source = load(text).map_err(syntax)?;
    let mut base = assemble(&source.root).map_err(|m| syntax(format!("the .base file is malformed: {m}")))?;
    base.layout = Layout { source: Some(source) };
    Ok(base)
}

pub(super) fn assemble(root: &Node) -> Result<Base, String> {
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

pub(super) fn filter_from(node: &Node, at: &str) -> Result<Option<Filter>, String> {
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

pub(super) fn formulas_from(node: &Node) -> Result<Vec<(String, String)>, String> {
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

pub(super) fn view_from(node: &Node, at: &str) -> Result<View, String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bases::testing::*;
    use crate::bases::validate;
    use serde_json::json;

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
}
