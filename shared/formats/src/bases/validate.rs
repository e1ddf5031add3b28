//! What Obsidian would load but show as broken: expressions that do not parse, views of no
//! or an unknown type, bad sort directions, missing formulas and formula cycles.

use std::collections::{HashMap, HashSet};

use otc_errors::echo;
use serde_json::Value;

use super::parser::parse_expr;
use super::refs::{Refs, find_cycle};
use super::{Base, Filter};

/// The view types Obsidian has.
const VIEW_TYPES: [&str; 4] = ["table", "cards", "list", "map"];

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bases::parse;

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
}
