//! The audit trail: a record per tool call and /v1 request, read back by admins (the CLI and
//! `GET /v1/audit` as JSON lines), summarised by get_metrics, confined to its tenant, and
//! deleted by the worker's sweep past the tenant's retention.

use std::time::Duration;

use chrono::Utc;
use reqwest::Method;
use serde_json::{Value, json};

use crate::harness::{Isolation, Tenant, TestApp, cli, stderr, stdout};
use crate::write::{err, ok};

/// `GET /v1/audit?query` as `token`: the records, and the next-page cursor.
async fn export(app: &TestApp, token: &str, query: &str) -> (Vec<Value>, Option<String>) {
    let response = app.http.get(app.url(&format!("/v1/audit?{query}"))).bearer_auth(token).send().await.unwrap();
    assert_eq!(response.status(), 200, "{query}");
    assert_eq!(response.headers()["content-type"], "application/x-ndjson");
    let next = response.headers().get("audit-next-before").map(|v| v.to_str().unwrap().to_string());
    let text = response.text().await.unwrap();
    (text.lines().map(|l| serde_json::from_str(l).unwrap()).collect(), next)
}

fn find<'a>(records: &'a [Value], action: &str) -> &'a Value {
    records.iter().find(|r| r["action"] == action).unwrap_or_else(|| panic!("no {action} in {records:?}"))
}

#[tokio::test]
async fn every_call_and_request_leaves_a_record_that_only_its_tenants_admins_read() {
    let app = TestApp::spawn().await;
    let a = Tenant::create(&app.store, "acme").await;
    let (token, _) = a.token(&app.store, "*", false, None).await;
    ok(&app, &token, "write_note", json!({"vault": "Notes", "path": "W.md", "content": "w\n"})).await;
    let missing = err(&app, &token, "read_note", json!({"vault": "Notes", "path": "Nope.md"})).await;
    assert_eq!(missing["code"], "note_not_found");
    crate::index::commit(&app, &token, "Notes", &[("One.md", Some("1\n")), ("Two.md", Some("2\n"))]).await;
    let file = app.http.get(app.url("/v1/vaults/Notes/file?path=One.md")).bearer_auth(&token).send().await.unwrap();
    assert_eq!(file.status(), 200);
    let (status, _) = crate::sync::api(&app, &token, Method::GET, "/v1/vaults/Nope/files", None).await;
    assert_eq!(status, 404);

    let (records, _) = export(&app, &token, "").await;
    let write = find(&records, "write_note");
    assert_eq!(
        (&write["outcome"], &write["vault"], &write["paths"], &write["principal_name"], &write["surface"]),
        (&json!("ok"), &json!("Notes"), &json!(["W.md"]), &json!("alice"), &json!("mcp"))
    );
    assert!(write["duration_us"].as_i64().unwrap() > 0 && write["id"].is_string() && write["at"].is_string());
    assert_eq!(find(&records, "read_note")["outcome"], "note_not_found");
    let commit = find(&records, "POST /v1/vaults/{vault}/commit");
    assert_eq!((&commit["outcome"], &commit["paths"]), (&json!("ok"), &json!(["One.md", "Two.md"])));
    assert_eq!(commit["surface"], "v1");
    let download = find(&records, "GET /v1/vaults/{vault}/file");
    assert_eq!((&download["vault"], &download["paths"]), (&json!("Notes"), &json!(["One.md"])));
    assert_eq!(find(&records, "GET /v1/vaults/{vault}/files")["outcome"], "vault_not_found");
    // Newest first.
    let ids: Vec<&str> = records.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "{ids:?}");

    // Text Postgres cannot hold (NUL) is recorded replaced, and holds back no other record.
    let nul = err(&app, &token, "read_note", json!({"vault": "No\u{0}tes", "path": "a\u{0}b.md"})).await;
    assert_eq!(nul["code"], "invalid_input");
    ok(&app, &token, "list_vaults", json!({})).await;
    let (refused, _) = export(&app, &token, "outcome=invalid_input").await;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!((&refused[0]["vault"], &refused[0]["paths"]), (&json!("No\u{FFFD}tes"), &json!(["a\u{FFFD}b.md"])));
    let (listed, _) = export(&app, &token, "action=list_vaults").await;
    assert_eq!(listed.len(), 1);

    // Filters and pages.
    let (only, _) = export(&app, &token, "action=write_note").await;
    assert_eq!(only.len(), 1);
    let (failed, _) = export(&app, &token, "outcome=note_not_found&principal=alice").await;
    assert_eq!(failed.len(), 1);
    let (first, next) = export(&app, &token, "limit=2").await;
    assert_eq!(first.len(), 2);
    let (second, _) = export(&app, &token, &format!("limit=2&before={}", next.unwrap())).await;
    assert!(second[0]["id"].as_str().unwrap() < first[1]["id"].as_str().unwrap());
    let (status, answer) = crate::sync::api(&app, &token, Method::GET, "/v1/audit?limit=0", None).await;
    assert_eq!((status.as_u16(), answer["error"]["code"].clone()), (400, json!("invalid_input")));

    // get_metrics counts them, per tool, with latencies.
    let metrics = ok(&app, &token, "get_metrics", json!({})).await;
    let row = |action: &str| metrics["actions"].as_array().unwrap().iter().find(|r| r["action"] == action).cloned();
    let write = row("write_note").unwrap();
    assert_eq!((write["calls"].as_i64(), write["errors"].as_i64()), (Some(1), Some(0)));
    assert!(write["p50_ms"].as_f64().unwrap() > 0.0 && write["p99_ms"].as_f64() >= write["p50_ms"].as_f64());
    assert_eq!(row("read_note").unwrap()["errors"], 2, "not found, and the NUL one");
    assert!(metrics["totals"]["calls"].as_i64().unwrap() >= 6, "{metrics}");
    let scoped = ok(&app, &token, "get_metrics", json!({"vault": "Notes", "window_minutes": 5})).await;
    assert!(scoped["actions"].as_array().unwrap().iter().all(|r| r["action"] != "GET /v1/audit"), "{scoped}");

    // The command line reads the same records.
    let out = cli(&app.iso, &["audit", "export", "acme", "--action", "write_note"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["paths"], json!(["W.md"]));
    let shown = stdout(&cli(&app.iso, &["audit", "show", "acme", "--since", "1h", "--limit", "50"]));
    assert!(
        shown.contains("write_note") && shown.contains("note_not_found") && shown.contains("Notes: W.md"),
        "{shown}"
    );
    assert_eq!(stdout(&cli(&app.iso, &["audit", "retention", "acme", "--days", "7"])).trim(), "7 days (tenant)");
    assert_eq!(stdout(&cli(&app.iso, &["audit", "retention", "acme", "--default"])).trim(), "90 days (default)");
    assert!(!cli(&app.iso, &["audit", "retention", "acme", "--days", "0"]).status.success());

    // Another tenant's admin sees none of it; a reader sees nothing at all.
    let b = Tenant::create(&app.store, "globex").await;
    let (b_token, _) = b.token(&app.store, "*", false, None).await;
    ok(&app, &b_token, "list_vaults", json!({})).await;
    let (theirs, _) = export(&app, &b_token, "").await;
    assert!(!theirs.is_empty() && theirs.iter().all(|r| r["action"] != "write_note"), "{theirs:?}");
    let text = serde_json::to_string(&theirs).unwrap();
    assert!(!text.contains("W.md") && !text.contains("One.md"), "{text}");
    let b_metrics = ok(&app, &b_token, "get_metrics", json!({})).await;
    assert!(b_metrics.to_string().find("write_note").is_none(), "{b_metrics}");
    let (reader, _) = a.token(&app.store, "read:*", false, None).await;
    let (status, answer) = crate::sync::api(&app, &reader, Method::GET, "/v1/audit", None).await;
    assert_eq!(status, 403, "{answer}");
    assert_eq!(err(&app, &reader, "get_metrics", json!({})).await["code"], "forbidden");
}

#[tokio::test]
async fn the_sweep_deletes_records_past_each_tenants_retention() {
    let iso = Isolation::new().await;
    let store = iso.store();
    let a = Tenant::create(&store, "acme").await;
    let b = Tenant::create(&store, "globex").await;
    let record = |days_ago: i64| otc_store::AuditRecord {
        id: uuid::Uuid::now_v7(),
        at: Utc::now() - chrono::Duration::days(days_ago),
        principal_id: None,
        principal_name: Some("alice".into()),
        client_name: None,
        surface: "mcp".into(),
        class: None,
        action: "read_note".into(),
        vault: Some("Notes".into()),
        paths: vec!["A.md".into()],
        outcome: "ok".into(),
        duration_us: 100,
        episode: None,
    };
    for tenant in [&a, &b] {
        store.record_audit(tenant.id, &[record(10), record(1)]).await.unwrap();
    }
    let mut tx = store.begin(a.id).await.unwrap();
    tx.set_audit_retention(Some(7)).await.unwrap();
    tx.commit().await.unwrap();
    let settings = otc_worker::WorkerSettings {
        sweep_interval: Duration::from_secs(1),
        lease_ttl: Duration::from_secs(3),
        token_retention: chrono::Duration::days(30),
        audit_retention_days: 90,
        gc_grace: chrono::Duration::hours(24),
        snapshots_per_path: 10,
        reconcile: Vec::new(),
        oauth_client_retention: chrono::Duration::days(30),
        maintenance: Default::default(),
        shutdown_grace: Duration::from_secs(10),
    };
    let blobs = otc_blobs::Blobs::from_config(&iso.config().object_store, Duration::from_secs(30)).unwrap();
    let report = otc_worker::sweep_once(&store, &blobs, &settings).await.unwrap();
    assert_eq!(report.audit_records_purged, 1, "only acme's 10-day-old record: {report:?}");
    for (tenant, left) in [(&a, 1), (&b, 2)] {
        let mut tx = store.begin(tenant.id).await.unwrap();
        let records = tx.audit(&otc_store::AuditFilter { limit: 10, ..Default::default() }).await.unwrap();
        tx.commit().await.unwrap();
        assert_eq!(records.len(), left);
    }
}
