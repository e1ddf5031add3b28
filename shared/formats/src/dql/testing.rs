//! Fixtures the tests of the DQL modules share: a small vault and helpers to run queries and
//! evaluate expressions over it.

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::{Map, Value, json};

use super::{Output, Page, TaskItem, eval_field, parse, run};

pub(super) fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc)
}

pub(super) fn fields(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

pub(super) fn task(text: &str, status: char, line: usize, fields_: Value, tags: &[&str]) -> TaskItem {
    TaskItem {
        text: text.into(),
        status,
        completed: status == 'x',
        line,
        fields: fields(fields_),
        tags: tags.iter().map(|t| t.to_string()).collect(),
    }
}

pub(super) fn page(path: &str, f: Value, tags: &[&str], out: &[&str], inl: &[&str], mtime: &str) -> Page {
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

pub(super) fn vault() -> Vec<Page> {
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
    let mut bob =
        page("People/Bob.md", json!({"role": "dev"}), &["person"], &[], &["Projects/Alpha.md"], "2023-06-01T00:00:00Z");
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

pub(super) fn today() -> NaiveDate {
    NaiveDate::from_ymd_opt(2024, 1, 8).unwrap()
}

pub(super) fn now() -> DateTime<Utc> {
    at("2024-01-08T12:00:00Z")
}

pub(super) fn go(dql: &str) -> Output {
    run(&parse(dql).unwrap_or_else(|e| panic!("{dql}: {e:?}")), &vault(), None, today(), now())
        .unwrap_or_else(|e| panic!("{dql}: {e:?}"))
}

pub(super) fn paths(out: &Output) -> Vec<String> {
    out.rows.iter().map(|r| r.path.clone()).collect()
}

pub(super) fn values(out: &Output) -> Vec<Vec<Value>> {
    out.rows.iter().map(|r| r.values.clone()).collect()
}

pub(super) fn ev(expression: &str) -> Value {
    let v = vault();
    eval_field(expression, &v[0], today(), now()).unwrap_or_else(|e| panic!("{expression}: {e:?}"))
}
