//! Access and fairness: which vault a call reaches when it names none or names it by id, rate
//! limits shared by every gateway, idempotency keys, confirmation tokens and the OAuth
//! resource-server surface.

use serde_json::json;

use crate::harness::{Tenant, TestApp};
use crate::index::commit;
use crate::write::{err, ok};

#[tokio::test]
async fn a_caller_with_one_vault_may_leave_it_out_and_any_caller_may_name_it_by_id() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    commit(&app, &token, "Notes", &[("Plan.md", Some("# Plan\n"))]).await;

    // One vault: `vault` is filled in, for reads and writes alike.
    let read = ok(&app, &token, "read_note", json!({"path": "Plan.md", "format": "content"})).await;
    assert_eq!(read["content"], "# Plan\n");
    ok(&app, &token, "write_note", json!({"path": "Idea.md", "content": "x"})).await;
    let id = tenant.vault_id.to_string();
    let by_id = ok(&app, &token, "read_note", json!({"vault": id, "path": "Idea.md", "format": "content"})).await;
    assert_eq!(by_id["content"], "x");

    // Two vaults: leaving it out names both; a bound token still has one.
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    tx.create_vault("Other").await.unwrap();
    tx.commit().await.unwrap();
    let e = err(&app, &token, "read_note", json!({"path": "Plan.md"})).await;
    assert_eq!(e["code"], "validation_error", "{e}");
    assert_eq!(e["details"]["field"], "vault");
    assert_eq!(e["details"]["vaults"], json!(["Notes", "Other"]));
    let (bound, _) = tenant.token(&app.store, "*", true, None).await;
    let read = ok(&app, &bound, "read_note", json!({"path": "Plan.md", "format": "content"})).await;
    assert_eq!(read["content"], "# Plan\n");

    // Another tenant's vault id is no vault at all; a huge name is not echoed back whole.
    let other = Tenant::create(&app.store, "globex").await;
    let e = err(&app, &token, "read_note", json!({"vault": other.vault_id.to_string(), "path": "Plan.md"})).await;
    assert_eq!(e["code"], "vault_not_found");
    let huge = "v".repeat(3 << 20);
    let e = err(&app, &token, "read_note", json!({"vault": huge, "path": "Plan.md"})).await;
    assert_eq!(e["code"], "vault_not_found");
    assert!(e.to_string().len() < 4096, "the error repeats the input: {} bytes", e.to_string().len());
}
