//! Fixtures the tests of the Bases modules share: a base as Obsidian writes it, rows to run it
//! over, and helpers to run a view or evaluate one expression.

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::{Value, json};

use super::write::double;
use super::{Query, Result_, Row, parse, run};

/// A base as Obsidian writes it.
pub(super) const PROJECTS: &str = r#"filters:
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

pub(super) fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

pub(super) fn row(path: &str, tags: &[&str], props: Value) -> Row {
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

pub(super) fn rows() -> Vec<Row> {
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

pub(super) fn query<'a>(view: Option<&'a str>) -> Query<'a> {
    Query {
        view,
        override_filters: None,
        today: NaiveDate::from_ymd_opt(2024, 5, 1).unwrap(),
        now: at("2024-05-01T15:45:00Z"),
        limit: None,
    }
}

pub(super) fn paths(result: &Result_) -> Vec<&str> {
    result.rows.iter().map(|r| r.path.as_str()).collect()
}

pub(super) fn eval_one(expr: &str, r: &Row) -> Value {
    let text = format!(
        "formulas:\n  x: {}\nviews:\n  - type: table\n    name: T\n    order:\n      - formula.x\n",
        double(expr)
    );
    let base = parse(&text).unwrap();
    let result = run(&base, vec![r.clone()], &query(None)).unwrap();
    result.rows[0].values["formula.x"].clone()
}
