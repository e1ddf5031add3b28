//! Running a view: what it evaluates, parsed and checked up front (unsupported constructs and
//! formula cycles refused as a whole), then filtered, sorted, limited and output row by row.

use std::cmp::Ordering;
use std::collections::HashMap;

use otc_errors::{ErrorCode, ToolError, echo};
use serde_json::Map;

use super::eval::{Clock, Env};
use super::parser::{Expr, parse_expr};
use super::refs::{Refs, find_cycle};
use super::value::{V, sort_cmp};
use super::{Base, Filter, OutRow, Query, Result_, Row, View};

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

fn refusal(construct: &str, place: &str, expression: &str) -> ToolError {
    ToolError::with_message(
        ErrorCode::UnsupportedBaseFilter,
        format!("{place} uses {construct}, which this server does not evaluate"),
    )
    .detail("construct", construct)
    .detail("expression", echo(expression))
}

/// What a column, sort or group property id reads.
#[derive(Debug, Clone)]
pub(super) enum Target {
    Note(String),
    Expr(Expr),
}

#[derive(Debug)]
pub(super) enum CFilter {
    Expr(Expr),
    And(Vec<CFilter>),
    Or(Vec<CFilter>),
    Not(Vec<CFilter>),
}

/// Everything [`run`] evaluates, parsed and checked up front.
pub(super) struct Plan {
    pub(super) filters: Vec<CFilter>,
    pub(super) formulas: HashMap<String, Expr>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bases::parse;
    use crate::bases::testing::*;
    use crate::bases::validate;
    use serde_json::{Value, json};

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
}
