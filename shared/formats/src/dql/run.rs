//! Running a query: rows from pages (or their tasks), the data commands applied in order, and
//! the output; and one expression evaluated against one page.

use std::cmp::Ordering;
use std::rc::Rc;

use chrono::{DateTime, NaiveDate, Utc};
use otc_errors::{ErrorCode, ToolError};
use serde_json::Value;

use super::ast::Op;
use super::eval::Ctx;
use super::parser::parse_expression;
use super::source::{bind_this, src_matches};
use super::value::{Link, V, compare, to_json};
use super::{OutRow, Output, Page, Query, QueryType, TaskItem};

#[derive(Clone)]
struct Row {
    data: V,
    origin: Origin,
}

#[derive(Clone)]
enum Origin {
    Page(usize),
    Task(usize, usize),
    Group(V, Vec<Row>),
}

fn every_row_failed(step: &str, first: &str) -> ToolError {
    ToolError::with_message(ErrorCode::DqlError, format!("every row failed in {step}: {first}"))
        .detail("step", step)
        .bounded()
}

fn set_field(data: &V, name: &str, value: V) -> V {
    let mut entries = match data {
        V::Obj(o) => o.as_ref().clone(),
        _ => Vec::new(),
    };
    match entries.iter_mut().find(|(k, _)| k == name) {
        Some(slot) => slot.1 = value,
        None => entries.push((name.to_string(), value)),
    }
    V::Obj(Rc::new(entries))
}

impl Ctx<'_> {
    fn step(&self, rows: Vec<Row>, op: &Op, group_names: &mut Vec<String>) -> Result<Vec<Row>, ToolError> {
        let incoming = rows.len();
        let mut errors: Vec<String> = Vec::new();
        let out = match op {
            Op::Where(e) => {
                let mut kept = Vec::new();
                for row in rows {
                    match self.eval(e, &row.data, &[]) {
                        Ok(v) if v.truthy() => kept.push(row),
                        Ok(_) => {}
                        Err(err) => errors.push(err),
                    }
                }
                kept
            }
            Op::Sort(keys) => {
                let mut keyed = Vec::new();
                'rows: for row in rows {
                    let mut values = Vec::new();
                    for (e, _) in keys {
                        match self.eval(e, &row.data, &[]) {
                            Ok(v) => values.push(v),
                            Err(err) => {
                                errors.push(err);
                                continue 'rows;
                            }
                        }
                    }
                    keyed.push((values, row));
                }
                keyed.sort_by(|(x, _), (y, _)| {
                    for (k, (_, desc)) in keys.iter().enumerate() {
                        let c = compare(&x[k], &y[k]);
                        if c != Ordering::Equal {
                            return if *desc { c.reverse() } else { c };
                        }
                    }
                    Ordering::Equal
                });
                keyed.into_iter().map(|(_, r)| r).collect()
            }
            Op::Limit(e) => {
                let n = match self.eval(e, &V::Obj(Rc::new(Vec::new())), &[]) {
                    Ok(V::Num(n)) => n,
                    Ok(other) => {
                        return Err(ToolError::with_message(
                            ErrorCode::DqlError,
                            format!("LIMIT should be a number, not {}", other.type_name()),
                        ));
                    }
                    Err(err) => {
                        return Err(
                            ToolError::with_message(ErrorCode::DqlError, format!("LIMIT failed: {err}")).bounded()
                        );
                    }
                };
                let mut rows = rows;
                let keep =
                    if n < 0.0 { rows.len().saturating_sub((-n) as usize) } else { (n as usize).min(rows.len()) };
                rows.truncate(keep);
                rows
            }
            Op::Group(named) => {
                let mut keyed = Vec::new();
                for row in rows {
                    match self.eval(&named.expr, &row.data, &[]) {
                        Ok(v) => keyed.push((v, row)),
                        Err(err) => errors.push(err),
                    }
                }
                keyed.sort_by(|(x, _), (y, _)| compare(x, y));
                let mut groups: Vec<(V, Vec<Row>)> = Vec::new();
                for (key, row) in keyed {
                    match groups.last_mut() {
                        Some((k, members)) if compare(k, &key) == Ordering::Equal => members.push(row),
                        _ => groups.push((key, vec![row])),
                    }
                }
                group_names.push(named.name.clone());
                groups
                    .into_iter()
                    .map(|(key, members)| {
                        let mut entries = vec![
                            ("key".to_string(), key.clone()),
                            ("rows".to_string(), V::List(members.iter().map(|m| m.data.clone()).collect())),
                        ];
                        if named.name != "key" && named.name != "rows" {
                            entries.push((named.name.clone(), key.clone()));
                        }
                        Row { data: V::Obj(Rc::new(entries)), origin: Origin::Group(key, members) }
                    })
                    .collect()
            }
            Op::Flatten(named) => {
                let mut out = Vec::new();
                for row in rows {
                    match self.eval(&named.expr, &row.data, &[]) {
                        Ok(V::List(items)) => {
                            for item in items {
                                out.push(Row {
                                    data: set_field(&row.data, &named.name, item),
                                    origin: row.origin.clone(),
                                });
                            }
                        }
                        Ok(v) => {
                            out.push(Row { data: set_field(&row.data, &named.name, v), origin: row.origin.clone() })
                        }
                        Err(err) => errors.push(err),
                    }
                }
                if group_names.last() == Some(&named.name) {
                    group_names.pop();
                }
                out
            }
        };
        if incoming > 0 && errors.len() >= incoming {
            let step = match op {
                Op::Where(_) => "WHERE",
                Op::Sort(_) => "SORT",
                Op::Group(_) => "GROUP BY",
                Op::Limit(_) => "LIMIT",
                Op::Flatten(_) => "FLATTEN",
            };
            return Err(every_row_failed(step, &errors[0]));
        }
        Ok(out)
    }

    fn id_of(&self, row: &Row) -> V {
        match &row.origin {
            Origin::Page(i) | Origin::Task(i, _) => V::Link(Link::file(self.pages[*i].path.clone())),
            Origin::Group(key, _) => key.clone(),
        }
    }

    fn tasks_of(&self, row: &Row, out: &mut Vec<TaskItem>) {
        match &row.origin {
            Origin::Task(p, t) => out.push(self.pages[*p].tasks[*t].clone()),
            Origin::Group(_, members) => members.iter().for_each(|m| self.tasks_of(m, out)),
            Origin::Page(_) => {}
        }
    }
}

/// Runs a parsed query over `pages` (the caller may pass every page, or only those
/// [`source_matches`](super::source_matches) accepts; the `FROM` clause is applied here either
/// way). `this` is the page the query runs in (`this.field`, `FROM [[]]`); `today` and `now` fix
/// `date(today)` and `date(now)`. LIST and TABLE give one row per page (or group); TASK gives one
/// row per page (or group) holding its matching tasks, in result order. A query-level failure
/// (every row of a step failing, a bad LIMIT) answers `dql_error`.
pub fn run(
    query: &Query,
    pages: &[Page],
    this: Option<&Page>,
    today: NaiveDate,
    now: DateTime<Utc>,
) -> Result<Output, ToolError> {
    let ctx = Ctx::new(pages, this, today, now);
    let source = query.source.as_ref().map(|s| match this {
        Some(page) => bind_this(&s.0, &page.path),
        None => s.0.clone(),
    });
    let mut rows = Vec::new();
    for (i, page) in pages.iter().enumerate() {
        if source.as_ref().is_some_and(|s| !src_matches(s, page)) {
            continue;
        }
        if query.kind == QueryType::Task {
            let V::Obj(page_obj) = ctx.page(i) else { continue };
            for (t, task) in page.tasks.iter().enumerate() {
                let mut entries = ctx.task(page, task);
                for (k, v) in page_obj.iter() {
                    if !entries.iter().any(|(e, _)| e == k) {
                        entries.push((k.clone(), v.clone()));
                    }
                }
                rows.push(Row { data: V::Obj(Rc::new(entries)), origin: Origin::Task(i, t) });
            }
        } else {
            rows.push(Row { data: ctx.page(i), origin: Origin::Page(i) });
        }
    }
    let mut group_names = Vec::new();
    for op in &query.ops {
        rows = ctx.step(rows, op, &mut group_names)?;
    }
    let id_name = group_names.last().cloned().unwrap_or_else(|| "File".to_string());
    let group_of = |row: &Row| match &row.origin {
        Origin::Group(key, _) => Some(to_json(key)),
        _ => None,
    };
    let path_of = |row: &Row| match &row.origin {
        Origin::Page(i) | Origin::Task(i, _) => pages[*i].path.clone(),
        Origin::Group(..) => String::new(),
    };
    if query.kind == QueryType::Task {
        let mut out: Vec<OutRow> = Vec::new();
        let mut total = 0;
        for row in &rows {
            let mut tasks = Vec::new();
            ctx.tasks_of(row, &mut tasks);
            total += tasks.len();
            let path = path_of(row);
            let group = group_of(row);
            match out.last_mut() {
                Some(last) if group.is_none() && last.group.is_none() && last.path == path => last.tasks.extend(tasks),
                _ => out.push(OutRow { path, values: Vec::new(), group, tasks }),
            }
        }
        return Ok(Output { kind: QueryType::Task, headers: Vec::new(), rows: out, total });
    }
    let mut headers = Vec::new();
    if query.show_id || (query.kind == QueryType::List && query.columns.is_empty()) {
        headers.push(id_name);
    }
    headers.extend(query.columns.iter().map(|c| c.name.clone()));
    let with_id = headers.len() > query.columns.len();
    let out: Vec<OutRow> = rows
        .iter()
        .map(|row| {
            let mut values = Vec::with_capacity(headers.len());
            if with_id {
                values.push(to_json(&ctx.id_of(row)));
            }
            for column in &query.columns {
                values.push(ctx.eval(&column.expr, &row.data, &[]).map_or(Value::Null, |v| to_json(&v)));
            }
            OutRow { path: path_of(row), values, group: group_of(row), tasks: Vec::new() }
        })
        .collect();
    Ok(Output { kind: query.kind, headers, total: out.len(), rows: out })
}

/// Evaluates one expression with `this` (and the row) set to `page`, for `eval_dataview_field`:
/// `file.name`, `this.status`, `dateformat(file.mtime, "yyyy-MM-dd")`. A syntax error answers
/// `dql_error` with line and column; an evaluation error answers `dql_error` with its reason.
pub fn eval_field(expression: &str, page: &Page, today: NaiveDate, now: DateTime<Utc>) -> Result<Value, ToolError> {
    let expr = parse_expression(expression)?;
    let pages = std::slice::from_ref(page);
    let ctx = Ctx::new(pages, Some(page), today, now);
    let row = ctx.page(0);
    ctx.eval(&expr, &row, &[])
        .map(|v| to_json(&v))
        .map_err(|e| ToolError::with_message(ErrorCode::DqlError, format!("the expression failed: {e}")).bounded())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dql::testing::*;
    use crate::dql::value::basename;
    use crate::dql::{Source, parse};
    use serde_json::json;

    #[test]
    fn list_pages_of_a_folder() {
        let out = go("LIST FROM \"Projects\"");
        assert_eq!(out.kind, QueryType::List);
        assert_eq!(out.headers, ["File"]);
        assert_eq!(paths(&out), ["Projects/Alpha.md", "Projects/Beta.md", "Projects/Archive/Gamma.md"]);
        assert_eq!(out.rows[0].values, [json!("[[Projects/Alpha.md|Alpha]]")]);
        assert_eq!(out.total, 3);
        let all = go("list");
        assert_eq!(all.total, 8);
    }

    #[test]
    fn list_with_an_expression_and_without_id() {
        let out = go("LIST status FROM #project SORT file.name");
        assert_eq!(out.headers, ["File", "status"]);
        assert_eq!(
            values(&out),
            [
                vec![json!("[[Projects/Alpha.md|Alpha]]"), json!("active")],
                vec![json!("[[Projects/Beta.md|Beta]]"), json!("done")],
                vec![json!("[[Projects/Archive/Gamma.md|Gamma]]"), json!("active")],
            ]
        );
        let out = go("LIST WITHOUT ID file.name FROM #project SORT file.name DESC");
        assert_eq!(out.headers, ["file.name"]);
        assert_eq!(values(&out), [vec![json!("Gamma")], vec![json!("Beta")], vec![json!("Alpha")]]);
    }

    #[test]
    fn table_with_names_and_without_id() {
        let out = go("TABLE status AS \"State\", priority, due FROM \"Projects\" SORT priority DESC");
        assert_eq!(out.headers, ["File", "State", "priority", "due"]);
        assert_eq!(
            values(&out),
            [
                vec![json!("[[Projects/Archive/Gamma.md|Gamma]]"), json!("active"), json!(3), Value::Null],
                vec![json!("[[Projects/Alpha.md|Alpha]]"), json!("active"), json!(2), json!("2024-01-10")],
                vec![json!("[[Projects/Beta.md|Beta]]"), json!("done"), json!(1), json!("2024-01-03")],
            ]
        );
        // Case-insensitive and sanitized field names; links in fields resolve to vault paths.
        let out = go("TABLE WITHOUT ID file.name AS Name, due-date, STATUS, owner, owner.role FROM \"Projects/Alpha\"");
        assert_eq!(out.headers, ["Name", "due-date", "STATUS", "owner", "owner.role"]);
        assert_eq!(
            values(&out),
            [vec![json!("Alpha"), json!("2024-01-12"), json!("active"), json!("[[People/Bob.md|Bob]]"), json!("dev")]]
        );
        let out = go("TABLE time-spent, row[\"Time Spent\"] + dur(30 minutes) AS total FROM #idea");
        assert_eq!(
            values(&out),
            [vec![json!("[[Notes/Ideas.md|Ideas]]"), json!("1 hour, 30 minutes"), json!("2 hours")]]
        );
    }

    #[test]
    fn task_queries() {
        let out = go("TASK FROM \"Projects\" WHERE !completed");
        assert_eq!(out.kind, QueryType::Task);
        assert!(out.headers.is_empty());
        assert_eq!(out.total, 2);
        assert_eq!(paths(&out), ["Projects/Alpha.md", "Projects/Beta.md"]);
        assert_eq!(out.rows[0].tasks.iter().map(|t| t.text.as_str()).collect::<Vec<_>>(), ["Write spec"]);
        assert_eq!(out.rows[1].tasks[0].text, "Review");

        let out = go("TASK WHERE !completed AND contains(tags, \"#call\")");
        assert_eq!(paths(&out), ["Daily/2024-01-05.md"]);
        // A task reads its own fields first, then its page's (Dataview's merge).
        let out = go("TASK WHERE due <= date(2024-01-08) AND due SORT text");
        let texts: Vec<&str> = out.rows.iter().flat_map(|r| r.tasks.iter().map(|t| t.text.as_str())).collect();
        assert_eq!(texts, ["Review", "Write spec"]);
        let out = go("TASK FROM #project GROUP BY file.name");
        assert_eq!(out.rows.len(), 2);
        assert_eq!(out.rows[0].group, Some(json!("Alpha")));
        assert_eq!(out.rows[0].tasks.len(), 2);
        assert_eq!(out.total, 3);
    }

    #[test]
    fn where_with_dates() {
        let names = |dql: &str| go(dql).rows.iter().map(|r| basename(&r.path).to_string()).collect::<Vec<_>>();
        assert_eq!(
            names("LIST WHERE file.mtime >= date(today) - dur(7 days)"),
            ["Alpha", "Gamma", "2024-01-05", "Inbox", "Reading", "Ideas"]
        );
        assert_eq!(
            names("LIST WHERE due < date(today)"),
            ["Beta", "Gamma", "Bob", "2024-01-05", "Inbox", "Reading", "Ideas"]
        );
        assert_eq!(names("LIST WHERE due AND due < date(today)"), ["Beta"]);
        assert_eq!(names("LIST WHERE file.day = date(2024-01-05)"), ["2024-01-05"]);
        assert_eq!(names("LIST WHERE date(now) - file.mtime < dur(2 days)"), ["Inbox", "Ideas"]);
    }

    #[test]
    fn sort_on_several_keys() {
        let out = go("TABLE priority FROM #project SORT status ASC, priority DESC");
        assert_eq!(paths(&out), ["Projects/Archive/Gamma.md", "Projects/Alpha.md", "Projects/Beta.md"]);
        let out = go("LIST FROM #project SORT status DESCENDING, file.name ascending");
        assert_eq!(paths(&out), ["Projects/Beta.md", "Projects/Alpha.md", "Projects/Archive/Gamma.md"]);
    }

    #[test]
    fn group_by_with_rows() {
        let out = go("TABLE length(rows) AS n, rows.file.name AS names FROM #project GROUP BY status");
        assert_eq!(out.headers, ["status", "n", "names"]);
        assert_eq!(
            values(&out),
            [
                vec![json!("active"), json!(2), json!(["Alpha", "Gamma"])],
                vec![json!("done"), json!(1), json!(["Beta"])]
            ]
        );
        assert_eq!(out.rows[0].group, Some(json!("active")));
        assert_eq!(out.rows[0].path, "");
        let out = go("LIST rows.file.link FROM #project GROUP BY status AS state WHERE length(rows) > 1");
        assert_eq!(out.headers, ["state", "rows.file.link"]);
        assert_eq!(
            values(&out),
            [vec![json!("active"), json!(["[[Projects/Alpha.md|Alpha]]", "[[Projects/Archive/Gamma.md|Gamma]]"])]]
        );
        let out = go("TABLE WITHOUT ID key, sum(rows.priority) AS total FROM #project GROUP BY status SORT key DESC");
        assert_eq!(values(&out), [vec![json!("done"), json!(1)], vec![json!("active"), json!(5)]]);
    }

    #[test]
    fn limit_and_flatten() {
        let out = go("LIST FROM #project SORT file.name LIMIT 2");
        assert_eq!(paths(&out), ["Projects/Alpha.md", "Projects/Beta.md"]);
        assert_eq!(out.total, 2);
        let out = go("TABLE WITHOUT ID file.name, book FROM \"Notes\" FLATTEN books AS book WHERE book");
        assert_eq!(values(&out), [vec![json!("Reading"), json!("Dune")], vec![json!("Reading"), json!("Emma")]]);
        let out = go("TABLE WITHOUT ID file.name, t FROM #work FLATTEN file.etags AS t SORT t LIMIT 3");
        assert_eq!(
            values(&out),
            [
                vec![json!("Ideas"), json!("#idea")],
                vec![json!("Alpha"), json!("#project/alpha")],
                vec![json!("Alpha"), json!("#work")]
            ]
        );
    }

    #[test]
    fn errors_in_rows() {
        // A failing cell is null; a failing WHERE drops the row; every row failing fails the query.
        let out = go("TABLE WITHOUT ID file.name, priority + 1 AS next FROM \"Notes\" OR #project SORT file.name");
        assert_eq!(out.rows.iter().find(|r| r.path == "Notes/Ideas.md").unwrap().values[1], Value::Null);
        assert_eq!(out.rows.iter().find(|r| r.path == "Projects/Beta.md").unwrap().values[1], json!(2));
        let out = go("LIST FROM \"Notes\" or #project WHERE priority + 1 > 2");
        assert_eq!(paths(&out), ["Projects/Alpha.md", "Projects/Archive/Gamma.md"]);
        let q = parse("LIST FROM \"Notes\" WHERE mood + 1 > 2").unwrap();
        let err = run(&q, &vault(), None, today(), now()).unwrap_err();
        assert_eq!(err.code, ErrorCode::DqlError);
        assert_eq!(err.details["step"], "WHERE");
        let q = parse("LIST LIMIT \"x\"").unwrap();
        assert_eq!(run(&q, &vault(), None, today(), now()).unwrap_err().code, ErrorCode::DqlError);
    }

    #[test]
    fn parsed_queries_and_outputs_cross_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Query>();
        send_sync::<Source>();
        send_sync::<Output>();
        send_sync::<Page>();
    }
}
