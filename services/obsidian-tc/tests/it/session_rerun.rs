//! session_rerun: a work session's calls replayed in a sandbox copy of its vault as it stood
//! when the session began; what behaves the same compares equal, what the world changed under
//! the session diverges (with where), and the original vault is never written.

use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp};
use crate::mcp::error_of;
use crate::write::ok;

const V: &str = "Notes";

fn verdicts(out: &Value) -> Vec<(String, String)> {
    out["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["tool"].as_str().unwrap().to_string(), r["verdict"].as_str().unwrap().to_string()))
        .collect()
}

#[tokio::test]
async fn a_session_replays_in_a_sandbox_and_divergence_is_located() {
    // The deployment's floor hides Private/ from this vault's callers: the sandbox never holds it.
    let app = TestApp::spawn_with(|c| {
        c.tools.confirm_destructive = false;
        c.acl.push(crate::harness::read_acl(Some("acme"), V, &["*.md"]));
    })
    .await;
    let a = Tenant::create(&app.store, "acme").await;
    let b = Tenant::create(&app.store, "globex").await;
    let (token, _) = a.token(&app.store, "*", false, None).await;
    let (reader, _) = a.token(&app.store, "read:notes,write:memory,read:memory", false, None).await;
    let (other, _) = b.token(&app.store, "*", false, None).await;
    let notes = [("A.md", Some("# A\nalpha [[B]]\n")), ("B.md", Some("# B\nbeta\n")), ("Private/P.md", Some("hidden"))];
    app.seed(&token, V, &notes).await;

    let session = ok(&app, &token, "start_session", json!({"vault": V, "caller": "agent"})).await;
    let sid = session["session_id"].as_str().unwrap().to_string();
    ok(&app, &token, "read_note", json!({"vault": V, "path": "A.md"})).await;
    ok(&app, &token, "search_text", json!({"vault": V, "query": "alpha"})).await;
    ok(&app, &token, "write_note", json!({"vault": V, "path": "C.md", "content": "gamma [[A]]"})).await;
    ok(&app, &token, "get_backlinks", json!({"vault": V, "path": "A.md"})).await;
    ok(&app, &token, "set_goal", json!({"vault": V, "text": "tidy the garden notes"})).await;
    let big = "x".repeat(20_000);
    ok(&app, &token, "write_note", json!({"vault": V, "path": "Big.md", "content": big})).await;
    // Someone else changes B.md while the session runs; the session reads it after.
    app.seed(&token, V, &[("B.md", Some("# B\nbeta, changed by a person\n"))]).await;
    ok(&app, &token, "read_note", json!({"vault": V, "path": "B.md"})).await;
    ok(&app, &token, "end_session", json!({"vault": V, "session_id": sid})).await;
    // After the session the vault moves on; the rerun starts from the session's beginning.
    app.seed(&token, V, &[("A.md", Some("# A\nrewritten later\n"))]).await;

    let out = ok(&app, &token, "session_rerun", json!({"vault": V, "session_id": sid})).await;
    assert_eq!(
        verdicts(&out),
        [
            ("read_note", "same"),
            ("search_text", "same"),
            ("write_note", "same"),
            ("get_backlinks", "same"),
            ("set_goal", "skipped"),
            ("write_note", "skipped"),
            ("read_note", "diverged"),
        ]
        .map(|(t, v)| (t.to_string(), v.to_string())),
        "{out}"
    );
    let summary = &out["summary"];
    assert_eq!(
        (summary["same"].clone(), summary["diverged"].clone(), summary["skipped"].clone()),
        (json!(4), json!(1), json!(2))
    );
    assert_eq!(out["sandbox"]["files"], 2, "A.md and B.md, not the hidden note: {out}");
    assert!(out["records"][5]["reason"].as_str().unwrap().contains("16 KiB"), "{out}");
    let diverged = &out["records"][6];
    assert_eq!(diverged["difference"]["at"], "/body", "{diverged}");
    assert!(diverged["difference"]["recorded"].as_str().unwrap().contains("changed by a person"), "{diverged}");
    assert!(diverged["difference"]["replayed"].as_str().unwrap().contains("beta"), "{diverged}");

    // The vault itself is as it was, and the sandbox is gone.
    let a_now = ok(&app, &token, "read_note", json!({"vault": V, "path": "A.md", "format": "content"})).await;
    assert!(a_now["content"].as_str().unwrap().contains("rewritten later"), "{a_now}");
    let vaults = ok(&app, &token, "list_vaults", json!({})).await;
    assert_eq!(vaults["vaults"].as_array().unwrap().len(), 1, "the sandbox was erased: {vaults}");

    // Scope, another tenant's session and a malformed id.
    let refused =
        crate::mcp::call(&app, "/mcp", &reader, "session_rerun", json!({"vault": V, "session_id": sid})).await;
    assert_eq!(error_of(&refused)["code"], "forbidden");
    let theirs = crate::mcp::call(&app, "/mcp", &other, "session_rerun", json!({"vault": V, "session_id": sid})).await;
    assert_eq!(error_of(&theirs)["code"], "not_found", "another tenant's session is a missing one");
    let bad = crate::mcp::call(&app, "/mcp", &token, "session_rerun", json!({"vault": V, "session_id": "nope"})).await;
    assert_eq!(error_of(&bad)["code"], "invalid_input");
    app.stop().await;
}
