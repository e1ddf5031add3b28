//! The audit trail: the tenant's records, newest first, filtered by time, person, action,
//! outcome and vault, a page at a time, and downloaded as CSV or JSON lines with the same
//! filters (`admin:audit`).

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use maud::html;
use serde::Deserialize;

use super::api::{Call, Peer, query};
use super::layout::{self, Nav};
use super::{Console, signed_in};

/// Records shown a page.
const PAGE: &str = "100";

#[derive(Deserialize, Default)]
pub struct Filters {
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    until: Option<String>,
    #[serde(default)]
    principal: Option<String>,
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    outcome: Option<String>,
    #[serde(default)]
    vault: Option<String>,
    #[serde(default)]
    before: Option<String>,
    #[serde(default)]
    format: Option<String>,
}

impl Filters {
    /// The API's query for these filters (a day as its start, or as its end for `until`).
    fn pairs(&self) -> Vec<(&'static str, String)> {
        let day = |d: &str, end: bool| match chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d") {
            Ok(day) if end => format!("{day}T23:59:59.999999Z"),
            Ok(day) => format!("{day}T00:00:00Z"),
            Err(_) => d.to_string(),
        };
        let given = |v: &Option<String>| v.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(str::to_string);
        let mut pairs = Vec::new();
        if let Some(d) = given(&self.since) {
            pairs.push(("since", day(&d, false)));
        }
        if let Some(d) = given(&self.until) {
            pairs.push(("until", day(&d, true)));
        }
        for (name, value) in [
            ("principal", &self.principal),
            ("action", &self.action),
            ("outcome", &self.outcome),
            ("vault", &self.vault),
            ("before", &self.before),
        ] {
            if let Some(v) = given(value) {
                pairs.push((name, v));
            }
        }
        pairs
    }

    /// These filters as the console's own query (the downloads keep the page's `before`; the
    /// next page's link replaces it).
    fn own_query(&self, extra: &[(&str, &str)]) -> String {
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        let before = if extra.iter().any(|(k, _)| *k == "before") { &None } else { &self.before };
        for (name, value) in [
            ("since", &self.since),
            ("until", &self.until),
            ("principal", &self.principal),
            ("action", &self.action),
            ("outcome", &self.outcome),
            ("vault", &self.vault),
            ("before", before),
        ] {
            if let Some(v) = value.as_deref().filter(|v| !v.trim().is_empty()) {
                pairs.push((name, v));
            }
        }
        pairs.extend_from_slice(extra);
        query(&pairs)
    }
}

fn api_path(filters: &Filters, extra: &[(&str, &str)]) -> String {
    let mut pairs: Vec<(&str, String)> = filters.pairs();
    pairs.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
    let refs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    format!("/v1/audit?{}", query(&refs))
}

pub async fn page(
    State(console): State<Console>,
    headers: HeaderMap,
    peer: Peer,
    Query(filters): Query<Filters>,
) -> Response {
    let session = signed_in!(console, headers, peer);
    let call = Call::get(api_path(&filters, &[("limit", PAGE)]));
    let response = console.api.raw(&session.origin, Some(&session.token), call).await;
    let status = response.status();
    let next = response.headers().get("audit-next-before").and_then(|v| v.to_str().ok()).map(str::to_string);
    let bytes = axum::body::to_bytes(response.into_body(), 16 * 1024 * 1024).await.unwrap_or_default();
    if !status.is_success() {
        let failure = super::api::failure(status, &bytes);
        if failure.status.is_client_error()
            && !failure.is_missing()
            && failure.status != axum::http::StatusCode::FORBIDDEN
        {
            // A filter the API refused (a bad time): said on the page, filters kept.
            let content = html! { (form(&filters)) p.flash.error role="alert" { (failure.message) } };
            return layout::page(&session, Nav::Audit, "Audit trail", content);
        }
        return layout::failure_page(&failure);
    }
    let records: Vec<otc_store::AuditRecord> = String::from_utf8_lossy(&bytes)
        .lines()
        .filter(|l| !l.is_empty())
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let content = html! {
        (form(&filters))
        p {
            "Download these records (up to 5000 a file): "
            a href=(format!("/console/audit/export?{}", filters.own_query(&[("format", "csv")]))) download { "CSV" }
            " · "
            a href=(format!("/console/audit/export?{}", filters.own_query(&[("format", "jsonl")]))) download { "JSON lines" }
            br;
            span.hint { "A download holds the records of this page and older ones; past 5000, download again from the oldest record's page." }
        }
        @if records.is_empty() {
            p { "No records." }
        } @else {
            div.table-wrap tabindex="0" role="region" aria-label="Table, scrolls sideways" {
                table {
                    thead {
                        tr {
                            th scope="col" { "When" } th scope="col" { "Who" } th scope="col" { "Action" }
                            th scope="col" { "Vault" } th scope="col" { "Paths" } th scope="col" { "Outcome" } th.num scope="col" { "ms" }
                        }
                    }
                    tbody {
                        @for r in &records {
                            tr {
                                td { (r.at.format("%Y-%m-%d %H:%M:%S")) }
                                td { (r.principal_name.as_deref().unwrap_or("")) @if let Some(c) = &r.client_name { br; span.hint { (c) } } }
                                td { code { (r.action) } }
                                td { (r.vault.as_deref().unwrap_or("")) }
                                td { (r.paths.join(", ")) }
                                td { @if r.outcome == "ok" { "ok" } @else { span.badge.warn { (r.outcome) } } }
                                td.num { (format!("{:.1}", r.duration_us as f64 / 1000.0)) }
                            }
                        }
                    }
                }
            }
        }
        @if let Some(next) = &next {
            p { a href=(format!("/console/audit?{}", filters.own_query(&[("before", next)]))) { "Older records" } }
        }
    };
    layout::page(&session, Nav::Audit, "Audit trail", content)
}

fn form(filters: &Filters) -> maud::Markup {
    let field = |id: &str, label: &str, kind: &str, value: &Option<String>| {
        html! {
            div {
                label for=(format!("f-{id}")) { (label) }
                input id=(format!("f-{id}")) type=(kind) name=(id) value=[value.as_deref()];
            }
        }
    };
    html! {
        form method="get" action="/console/audit" {
            div.row {
                (field("since", "From (day)", "date", &filters.since))
                (field("until", "To (day)", "date", &filters.until))
                (field("principal", "Person", "text", &filters.principal))
                (field("action", "Action", "text", &filters.action))
                (field("outcome", "Outcome (ok, or a code)", "text", &filters.outcome))
                (field("vault", "Vault", "text", &filters.vault))
            }
            button type="submit" { "Filter" }
        }
    }
}

/// `GET /console/audit/export?format=csv|jsonl&...`: the API's export, as a download.
pub async fn export(
    State(console): State<Console>,
    headers: HeaderMap,
    peer: Peer,
    Query(filters): Query<Filters>,
) -> Response {
    let session = signed_in!(console, headers, peer);
    let format = if filters.format.as_deref() == Some("csv") { "csv" } else { "jsonl" };
    let call = Call::get(api_path(&filters, &[("limit", "5000"), ("format", format)]));
    let response = console.api.raw(&session.origin, Some(&session.token), call).await;
    if !response.status().is_success() {
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 64 * 1024).await.unwrap_or_default();
        return layout::failure_page(&super::api::failure(status, &bytes));
    }
    let (mut parts, body) = response.into_parts();
    let name = format!("attachment; filename=\"audit.{}\"", if format == "csv" { "csv" } else { "jsonl" });
    parts.headers.insert(header::CONTENT_DISPOSITION, HeaderValue::from_str(&name).expect("an ASCII header"));
    parts.headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Response::from_parts(parts, body)
}
