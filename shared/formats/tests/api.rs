//! The public API of `dql`, `bases` and `tasks` stays where other crates find it: every public
//! item resolves at `otc_formats::<module>::<item>` (the modules are folders whose `mod.rs`
//! re-exports them), and the functions keep their signatures.

use chrono::{DateTime, NaiveDate, Utc};
use otc_errors::ToolError;
use serde_json::Value;

#[test]
fn dql_paths_resolve() {
    use otc_formats::dql::{
        self, FUNCTIONS, OutRow, Output, Page, Query, QueryType, Source, TaskItem, eval_field, field_value,
        inline_fields, parse, run, source_matches,
    };
    let _: fn(&str) -> Result<Query, ToolError> = parse;
    type Run = fn(&Query, &[Page], Option<&Page>, NaiveDate, DateTime<Utc>) -> Result<Output, ToolError>;
    let _: Run = run;
    let _: fn(&str, &Page, NaiveDate, DateTime<Utc>) -> Result<Value, ToolError> = eval_field;
    let _: fn(&str) -> Vec<(String, String)> = inline_fields;
    let _: fn(&str) -> Value = field_value;
    let _: fn(&Source, &Page) -> bool = source_matches;
    let _: &[&str] = FUNCTIONS;
    let _ = [QueryType::List, QueryType::Table, QueryType::Task];
    let _ = (Page::default(), TaskItem::default());
    let _: Option<(Output, OutRow, dql::Query)> = None;
}

#[test]
fn bases_paths_resolve() {
    use otc_formats::bases::{
        Base, Filter, Layout, OutRow, Query, Result_, Row, View, parse, render, run, to_yaml, update, validate,
    };
    let _: fn(&str) -> Result<Base, ToolError> = parse;
    let _: fn(&Base, Vec<Row>, &Query) -> Result<Result_, ToolError> = run;
    let _: fn(&Base) -> String = render;
    let _: fn(&Value) -> String = to_yaml;
    let _: fn(&Base) -> Vec<String> = validate;
    let _: fn(&str, &Value) -> Result<String, ToolError> = update;
    let e = Filter::Expr(String::new());
    let _ = [Filter::And(vec![e.clone()]), Filter::Or(vec![e.clone()]), Filter::Not(vec![e])];
    let _ = (Base::default(), View::default(), Layout::default());
    let _: Option<(OutRow, Query<'static>)> = None;
}

#[test]
fn tasks_paths_resolve() {
    use otc_formats::tasks::{
        DateField, DateOp, DateSpec, Filter, Group, GroupBy, GroupField, InvalidDate, Period, Priority, PriorityCmp,
        Query, QueryResult, Relative, Sort, SortKey, StatusType, Task, TaskFormat, TaskRow, TextField, TextMatch,
        Toggled, is_supported_rule, next_occurrence, parse_line, parse_query, render_line, run_query, status_name,
        toggle, urgency,
    };
    let _: fn(&str) -> Option<Task> = parse_line;
    let _: fn(&Task) -> String = render_line;
    let _: fn(&Task, NaiveDate) -> Toggled = toggle;
    let _: fn(&str, &Task, NaiveDate) -> Result<Option<Task>, String> = next_occurrence;
    let _: fn(&str) -> bool = is_supported_rule;
    let _: fn(char) -> &'static str = status_name;
    let _: fn(&Task, NaiveDate) -> f64 = urgency;
    let _: fn(&str) -> Result<Query, ToolError> = parse_query;
    let _: fn(&Query, Vec<TaskRow>, NaiveDate) -> QueryResult = run_query;
    let _ = (StatusType::of(' '), Priority::default(), TaskFormat::default(), DateField::Due, Task::new("x"));
    let _ = (DateOp::In, Relative::This, Period::Week, DateSpec::DaysFromToday(0), PriorityCmp::Is);
    let _ = (TextField::Path, TextMatch::Includes(String::new()), Filter::Done(true), SortKey::Path);
    let _ = (GroupField::Path, Query::default());
    let _: Option<(InvalidDate, Sort, GroupBy, Group)> = None;
}
