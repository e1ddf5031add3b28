//! The audit record of every /v1 request: who, which route, the vault and paths it named, the
//! outcome (ok, or the catalogue code it answered) and how long it took. MCP calls are recorded
//! by the dispatcher, one per tool call, so `/mcp` requests are left to it.

use std::time::Instant;

use axum::extract::{MatchedPath, RawPathParams, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use otc_kernel::audit_writer::{MAX_PATHS, cut_path};

use crate::error::{Code, Paths};
use crate::{AppState, Caller};

pub async fn v1(
    State(state): State<AppState>,
    params: Result<RawPathParams, axum::extract::rejection::RawPathParamsRejection>,
    request: Request,
    next: Next,
) -> Response {
    let audit = &state.dispatcher.services.audit;
    if !audit.is_on() || !request.uri().path().starts_with("/v1/") {
        return next.run(request).await;
    }
    let started = Instant::now();
    let Some(caller) = request.extensions().get::<Caller>().cloned() else { return next.run(request).await };
    let route = request.extensions().get::<MatchedPath>().map_or(request.uri().path(), |m| m.as_str());
    let action = format!("{} {route}", request.method());
    let vault = params.as_ref().ok().and_then(|p| p.iter().find(|(k, _)| *k == "vault").map(|(_, v)| cut_path(v)));
    let mut paths: Vec<String> = form_urlencoded::parse(request.uri().query().unwrap_or("").as_bytes())
        .filter(|(key, _)| key == "path")
        .map(|(_, path)| cut_path(&path))
        .take(MAX_PATHS)
        .collect();
    let client = request
        .headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(|ua| ua.chars().take(100).collect::<String>());
    let response = next.run(request).await;
    if let Some(Paths(named)) = response.extensions().get::<Paths>() {
        paths.extend(named.iter().take(MAX_PATHS - paths.len()).cloned());
    }
    let failed = !(response.status().is_success() || response.status().is_redirection());
    let outcome = match response.extensions().get::<Code>() {
        _ if !failed => "ok".to_string(),
        Some(code) => code.0.to_string(),
        None => format!("http_{}", response.status().as_u16()),
    };
    let call = otc_kernel::audit_writer::Call {
        surface: "v1",
        class: crate::rate_limit::V1_CLASS,
        action: &action,
        client: client.as_deref(),
        vault,
        paths,
        outcome: &outcome,
        episode: None,
    };
    audit.record_call(&caller, call, started);
    response
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportQuery {
    #[serde(default)]
    since: Option<chrono::DateTime<chrono::Utc>>,
    #[serde(default)]
    until: Option<chrono::DateTime<chrono::Utc>>,
    #[serde(default)]
    principal: Option<String>,
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    outcome: Option<String>,
    #[serde(default)]
    vault: Option<String>,
    /// A record id: only records older than it (the `Audit-Next-Before` of the last page).
    #[serde(default)]
    before: Option<uuid::Uuid>,
    #[serde(default)]
    limit: Option<i64>,
    /// `jsonl` (the default) or `csv`.
    #[serde(default)]
    format: Option<String>,
}

/// Most records one export page holds.
const EXPORT_PAGE: i64 = 5000;

/// `GET /v1/audit?since&until&principal&action&outcome&vault&before&limit&format`: the tenant's
/// records as JSON lines (or, with `format=csv`, CSV with a header row), newest first, at most
/// 5000 a page; `Audit-Next-Before` names the cursor of the next page when there may be one.
/// Needs admin:audit; a credential bound to one vault sees that vault's records only.
pub async fn export(
    State(state): State<AppState>,
    axum::extract::Extension(caller): axum::extract::Extension<Caller>,
    axum::extract::Query(query): axum::extract::Query<ExportQuery>,
) -> Result<Response, crate::ApiError> {
    crate::auth::require(&caller, crate::scopes::AUDIT)?;
    let csv = match query.format.as_deref() {
        None | Some("jsonl") => false,
        Some("csv") => true,
        Some(_) => {
            return Err(crate::ApiError::from_tool(
                otc_errors::ToolError::with_message(otc_errors::ErrorCode::InvalidInput, "format is jsonl or csv")
                    .detail("field", "format"),
            ));
        }
    };
    let services = &state.dispatcher.services;
    let limit = query.limit.unwrap_or(1000);
    if !(1..=EXPORT_PAGE).contains(&limit) {
        return Err(crate::ApiError::from_tool(
            otc_errors::ToolError::with_message(otc_errors::ErrorCode::InvalidInput, "limit is 1 to 5000")
                .detail("field", "limit"),
        ));
    }
    services.audit.flush(std::time::Duration::from_secs(2)).await;
    let mut tx = services.store.begin(caller.tenant_id).await.map_err(|e| crate::ApiError::from_store(&e))?;
    let vault = match caller.vault_id {
        None => query.vault,
        Some(bound) => {
            let v = tx.vault(bound).await.map_err(|e| crate::ApiError::from_store(&e))?;
            let v = v.map(|v| v.name);
            if query.vault.is_some() && query.vault != v {
                return Err(crate::ApiError::from_tool(otc_errors::ToolError::new(
                    otc_errors::ErrorCode::VaultNotFound,
                )));
            }
            v
        }
    };
    let filter = otc_store::AuditFilter {
        since: query.since,
        until: query.until,
        principal: query.principal,
        action: query.action,
        outcome: query.outcome,
        vault,
        before: query.before,
        limit,
        // The admin's trail is the security record: a forgotten episode's call stays in it.
        without_forgotten: false,
    };
    let records = tx.audit(&filter).await.map_err(|e| crate::ApiError::from_store(&e))?;
    tx.commit().await.map_err(|e| crate::ApiError::from_store(&e))?;
    let mut body = String::new();
    if csv {
        body.push_str(CSV_HEADER);
        for r in &records {
            csv_row(&mut body, r);
        }
    } else {
        for r in &records {
            body.push_str(&serde_json::to_string(r).expect("a record serializes"));
            body.push('\n');
        }
    }
    let mut response = Response::new(axum::body::Body::from(body));
    let headers = response.headers_mut();
    let content_type = if csv { "text/csv; charset=utf-8" } else { "application/x-ndjson" };
    headers.insert(header::CONTENT_TYPE, axum::http::HeaderValue::from_static(content_type));
    if records.len() as i64 == limit
        && let Some(last) = records.last()
        && let Ok(value) = axum::http::HeaderValue::from_str(&last.id.to_string())
    {
        headers.insert("audit-next-before", value);
    }
    Ok(response)
}

const CSV_HEADER: &str = "id,at,principal_id,principal,client,surface,action,vault,paths,outcome,duration_us\r\n";

/// One record as a CSV row (RFC 4180; paths joined by `;`). A cell a spreadsheet would read as
/// a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) is prefixed with `'`.
fn csv_row(out: &mut String, r: &otc_store::AuditRecord) {
    let cells = [
        r.id.to_string(),
        r.at.to_rfc3339(),
        r.principal_id.map(|p| p.to_string()).unwrap_or_default(),
        r.principal_name.clone().unwrap_or_default(),
        r.client_name.clone().unwrap_or_default(),
        r.surface.clone(),
        r.action.clone(),
        r.vault.clone().unwrap_or_default(),
        r.paths.join(";"),
        r.outcome.clone(),
        r.duration_us.to_string(),
    ];
    for (i, cell) in cells.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let cell = match cell.chars().next() {
            Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{cell}"),
            _ => cell.clone(),
        };
        if cell.contains([',', '"', '\n', '\r']) {
            out.push('"');
            out.push_str(&cell.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(&cell);
        }
    }
    out.push_str("\r\n");
}

/// Records a console session begun or ended in `tenant`'s trail, as the person's (the console
/// does these beside the API; every other console action is an API request, recorded as such).
pub(crate) fn record_console(state: &AppState, tenant: uuid::Uuid, principal: uuid::Uuid, name: &str, action: &str) {
    record_open(&state.dispatcher.services.audit, tenant, Some(principal), name, action);
}

/// Records a /v1 request that came with no credential (an organisation signed up, an
/// invitation accepted) in `tenant`'s trail, as the person it was for.
pub(crate) fn record_open(
    audit: &otc_kernel::audit_writer::Audit,
    tenant: uuid::Uuid,
    principal_id: Option<uuid::Uuid>,
    principal_name: &str,
    action: &str,
) {
    audit.record(
        tenant,
        otc_store::AuditRecord {
            id: uuid::Uuid::now_v7(),
            at: chrono::Utc::now(),
            principal_id,
            principal_name: Some(principal_name.to_string()),
            client_name: None,
            surface: "v1".into(),
            class: Some(crate::rate_limit::V1_CLASS.into()),
            action: action.into(),
            vault: None,
            paths: Vec::new(),
            outcome: "ok".into(),
            duration_us: 0,
            episode: None,
        },
    );
}
