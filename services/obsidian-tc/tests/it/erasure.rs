//! Deleting a vault and a tenant: gone from every tool and token at once, back as it was after
//! an undo, and after the purge nothing of it anywhere: no row in any table of the schema
//! (enumerated from the catalog, so a new table cannot be forgotten), no object under its
//! prefix, no Redis key naming it; while another tenant is untouched.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp};
use crate::mcp::call;
use crate::mcp::error_of;
use crate::sync::upload;
use crate::write::{V, ok};

/// Fills a tenant's vault through the tools: notes with links, tags and tasks, an attachment's
/// blob, memory, a session (audit, idempotency, rate-limit and task state come with the calls).
async fn fill(app: &TestApp, token: &str) {
    for i in 0..12 {
        let content = format!("# Note {i}\n#topic links [[Note {}]]\n- [ ] task {i}\n", (i + 1) % 12);
        ok(app, token, "write_note", json!({"vault": V, "path": format!("Note {i}.md"), "content": content})).await;
    }
    upload(app, token, V, b"attachment bytes of this tenant").await;
    ok(
        app,
        token,
        "create_entity",
        json!({"vault": V, "type": "person", "name": "Ana", "observations": ["in Lisbon"]}),
    )
    .await;
    ok(app, token, "search_vault", json!({"vault": V, "query": "note", "limit": 5})).await;
}

fn readable(result: &Value) -> bool {
    result["isError"] == false
}

/// Rows of the whole schema that mention any of `ids` (past row-level security).
async fn rows_naming(app: &TestApp, ids: &[uuid::Uuid]) -> Vec<(String, i64)> {
    let needles: Vec<String> = ids.iter().flat_map(|id| [id.to_string(), id.simple().to_string()]).collect();
    otc_store::testing::rows_mentioning(&app.store, &needles).await.unwrap()
}

/// `after` holds every row `before` held: the same counts per table, but the audit trail and
/// the usage counters, which the audit writer fills after a call answers, may only have grown.
fn untouched(before: &[(String, i64)], after: &[(String, i64)]) {
    let names = |rows: &[(String, i64)]| rows.iter().map(|(t, _)| t.clone()).collect::<Vec<_>>();
    assert_eq!(names(after), names(before), "the other tenant's tables");
    for ((table, was), (_, now)) in before.iter().zip(after) {
        if table == "audit_log" || table == "tenant_usage_daily" {
            assert!(now >= was, "the other tenant's {table} shrank: {was} -> {now}");
        } else {
            assert_eq!(now, was, "the other tenant's rows in {table}");
        }
    }
}

async fn keys_naming(app: &TestApp, ids: &[uuid::Uuid]) -> Vec<String> {
    let mut keys = Vec::new();
    for id in ids {
        keys.extend(app.deps.kv.keys_naming(&id.to_string(), 100).await.unwrap());
        keys.extend(app.deps.kv.keys_naming(&id.simple().to_string(), 100).await.unwrap());
    }
    keys
}

#[tokio::test]
async fn a_deleted_vault_answers_nowhere_comes_back_on_undo_and_is_erased_after_purge() {
    let app = TestApp::spawn().await;
    let a = Tenant::create(&app.store, "acme").await;
    let b = Tenant::create(&app.store, "globex").await;
    let (token, _) = a.token(&app.store, "*", false, None).await;
    let (bound, _) = a.token(&app.store, "*", true, None).await;
    let (other, _) = b.token(&app.store, "*", false, None).await;
    fill(&app, &token).await;
    fill(&app, &other).await;
    // A second vault of the same tenant stays.
    let kept = {
        let mut tx = app.store.begin(a.id).await.unwrap();
        let v = tx.create_vault("Kept").await.unwrap();
        tx.commit().await.unwrap();
        v
    };
    ok(&app, &token, "write_note", json!({"vault": "Kept", "path": "k.md", "content": "kept"})).await;
    assert!(rows_naming(&app, &[a.vault_id]).await.len() > 10, "the vault's rows are visible to the count");
    assert!(!keys_naming(&app, &[a.vault_id]).await.is_empty(), "writes leave keys naming the vault");
    let b_before = rows_naming(&app, &[b.id]).await;
    assert!(b_before.len() > 15, "the rows of a filled tenant are visible to the count: {b_before:?}");
    let read = json!({"vault": V, "path": "Note 1.md"});

    // Deleted: no tool finds it, a token bound to it stops, the tenant's other vault answers.
    let grace = Duration::from_secs(3600);
    let (_, purge_after) = otc_kernel::lifecycle::delete_vault(&app.store, &app.deps.kv, a.id, V, grace).await.unwrap();
    assert!(purge_after > chrono::Utc::now() + chrono::Duration::minutes(59));
    let gone = call(&app, "/mcp", &token, "read_note", read.clone()).await;
    assert_eq!(error_of(&gone)["code"], "vault_not_found", "{gone}");
    let listed = ok(&app, &token, "list_vaults", json!({})).await;
    assert!(!listed.to_string().contains("\"Notes\""), "{listed}");
    let status = app.http.post(app.url("/mcp")).bearer_auth(&bound).json(&json!({})).send().await.unwrap().status();
    assert_eq!(status, 401, "a token bound to a deleted vault stops");
    assert!(readable(&call(&app, "/mcp", &token, "read_note", json!({"vault": "Kept", "path": "k.md"})).await));
    // The job queue skips it.
    assert!(app.store.due_job_vaults("index", 100).await.unwrap().iter().all(|(_, v)| *v != a.vault_id));

    // Undone: as it was.
    otc_kernel::lifecycle::undelete_vault(&app.store, &app.deps.kv, a.id, V).await.unwrap();
    let back = ok(&app, &token, "read_note", read.clone()).await;
    assert!(back["content"].as_str().unwrap().contains("[[Note 2]]"), "{back}");
    assert!(readable(&call(&app, "/mcp", &bound, "read_note", read.clone()).await));

    // Deleted again and purged: no row, no key names the vault; the rest is untouched.
    otc_kernel::lifecycle::delete_vault(&app.store, &app.deps.kv, a.id, V, grace).await.unwrap();
    otc_kernel::lifecycle::purge_vault(&app.store, a.id, V).await.unwrap();
    let report = otc_worker::erasure::erase_due(&app.store, &app.deps.blobs, &app.deps.kv, a.id, None).await.unwrap();
    assert_eq!((report.vaults, report.tenant, report.finished), (1, false, true), "{report:?}");
    assert!(report.rows > 12, "{report:?}");
    assert_eq!(rows_naming(&app, &[a.vault_id]).await, vec![], "rows of the erased vault");
    assert_eq!(keys_naming(&app, &[a.vault_id]).await, Vec::<String>::new(), "Redis keys of the erased vault");
    assert!(readable(&call(&app, "/mcp", &token, "read_note", json!({"vault": "Kept", "path": "k.md"})).await));
    untouched(&b_before, &rows_naming(&app, &[b.id]).await);
    // The name is free again.
    let mut tx = app.store.begin(a.id).await.unwrap();
    tx.create_vault(V).await.unwrap();
    tx.commit().await.unwrap();
    let _ = kept;
}

#[tokio::test]
async fn an_erased_tenant_leaves_no_row_object_or_key_and_another_is_untouched() {
    let app = TestApp::spawn().await;
    let a = Tenant::create(&app.store, "acme").await;
    let b = Tenant::create(&app.store, "globex").await;
    let (token, _) = a.token(&app.store, "*", false, None).await;
    let (other, _) = b.token(&app.store, "*", false, None).await;
    fill(&app, &token).await;
    fill(&app, &other).await;
    let a_vaults = [a.vault_id];
    assert!(!app.deps.blobs.list_plain(&format!("t/{}", a.id.simple())).await.unwrap().is_empty());
    assert!(!keys_naming(&app, &[a.id]).await.is_empty(), "calls leave keys naming the tenant");
    let b_rows = rows_naming(&app, &[b.id]).await;
    assert!(b_rows.len() > 15, "the rows of a filled tenant are visible to the count: {b_rows:?}");
    let b_objects = app.deps.blobs.list_plain(&format!("t/{}", b.id.simple())).await.unwrap().len();
    let b_keys = keys_naming(&app, &[b.id]).await.len();
    assert!(b_objects > 0 && b_keys > 0);

    // Deleted: every token stops; undone: they work again.
    let grace = Duration::from_secs(3600);
    let deletion = otc_kernel::lifecycle::delete_tenant(&app.store, &app.deps.kv, a.id, grace).await.unwrap();
    assert!(deletion.purge_after > deletion.deleted_at);
    let status = app.http.post(app.url("/mcp")).bearer_auth(&token).json(&json!({})).send().await.unwrap().status();
    assert_eq!(status, 401, "a deleted tenant's token stops");
    otc_kernel::lifecycle::undelete_tenant(&app.store, &app.deps.kv, a.id).await.unwrap();
    assert!(readable(&call(&app, "/mcp", &token, "read_note", json!({"vault": V, "path": "Note 3.md"})).await));

    // Nothing is erased before its grace is over.
    otc_kernel::lifecycle::delete_tenant(&app.store, &app.deps.kv, a.id, grace).await.unwrap();
    let early = otc_worker::erasure::erase_due(&app.store, &app.deps.blobs, &app.deps.kv, a.id, None).await.unwrap();
    assert_eq!((early.tenant, early.rows), (false, 0), "{early:?}");

    // Purged: nothing of it in any table, object prefix or key.
    otc_kernel::lifecycle::purge_tenant(&app.store, a.id).await.unwrap();
    let report = otc_worker::erasure::erase_due(&app.store, &app.deps.blobs, &app.deps.kv, a.id, None).await.unwrap();
    assert!(report.tenant && report.finished && report.objects > 0 && report.keys > 0, "{report:?}");
    let mut ids = vec![a.id];
    ids.extend(a_vaults);
    assert_eq!(rows_naming(&app, &ids).await, vec![], "rows naming the erased tenant");
    assert_eq!(app.deps.blobs.list_plain(&format!("t/{}", a.id.simple())).await.unwrap().len(), 0);
    assert_eq!(keys_naming(&app, &ids).await, Vec::<String>::new(), "Redis keys naming the erased tenant");
    assert!(app.store.resolve_tenant("acme").await.is_err(), "the tenant is gone");

    // The other tenant: every row, object and key as it was, and it works.
    untouched(&b_rows, &rows_naming(&app, &[b.id]).await);
    assert_eq!(app.deps.blobs.list_plain(&format!("t/{}", b.id.simple())).await.unwrap().len(), b_objects);
    assert!(keys_naming(&app, &[b.id]).await.len() >= b_keys);
    assert!(readable(&call(&app, "/mcp", &other, "read_note", json!({"vault": V, "path": "Note 3.md"})).await));
}
