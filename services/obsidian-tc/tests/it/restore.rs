//! Vault restore (the admin tool and `obsidian-tc vault restore`) and audit_provenance.

use std::collections::BTreeMap;

use serde_json::json;

use crate::harness::{cli, stderr, stdout};
use crate::write::{V, err, ok, setup_with, text};

/// Every note the caller can list, with its text.
async fn snapshot(app: &crate::harness::TestApp, token: &str) -> BTreeMap<String, String> {
    let listed = ok(app, token, "list_notes", json!({"vault": V, "limit": 1000})).await;
    let mut out = BTreeMap::new();
    for note in listed["notes"].as_array().unwrap() {
        let path = note["path"].as_str().unwrap().to_string();
        let body = text(app, token, &path).await.unwrap();
        out.insert(path, body);
    }
    out
}

/// The sequence of the newest change to `path`.
async fn last_seq(app: &crate::harness::TestApp, token: &str, path: &str) -> i64 {
    let history = ok(app, token, "get_provenance", json!({"vault": V, "path": path, "limit": 1})).await;
    history["records"][0]["seq"].as_i64().unwrap()
}

#[tokio::test]
async fn restore_vault_puts_a_vault_or_a_folder_back_as_one_new_change() {
    let (app, token) = setup_with(false, None).await;
    ok(&app, &token, "write_note", json!({"vault": V, "path": "Keep/a.md", "content": "a1"})).await;
    ok(&app, &token, "write_note", json!({"vault": V, "path": "Keep/b.md", "content": "b1"})).await;
    let then = snapshot(&app, &token).await;
    let seq = last_seq(&app, &token, "Keep/b.md").await;

    // Changes after the checkpoint: an edit, a delete, a move with a rewrite, a new note.
    ok(&app, &token, "append_note", json!({"vault": V, "path": "Keep/a.md", "content": " more"})).await;
    ok(&app, &token, "delete_note", json!({"vault": V, "path": "Keep/b.md"})).await;
    ok(&app, &token, "move_note", json!({"vault": V, "from": "Plan.md", "to": "Old/Plan.md"})).await;
    ok(&app, &token, "write_note", json!({"vault": V, "path": "New.md", "content": "new"})).await;

    let dry = ok(&app, &token, "restore_vault", json!({"vault": V, "at": seq.to_string(), "dry_run": true})).await;
    assert_eq!((dry["restored"].as_u64(), dry["deleted"].as_u64()), (Some(3), Some(2)), "{dry}");
    assert_eq!(text(&app, &token, "New.md").await.as_deref(), Some("new"), "a dry run changes nothing");

    let done = ok(&app, &token, "restore_vault", json!({"vault": V, "at": seq.to_string()})).await;
    assert!(done["head"].as_i64().unwrap() > seq);
    assert_eq!(snapshot(&app, &token).await, then, "the vault reads as it did then");
    let history = ok(&app, &token, "get_provenance", json!({"vault": V, "path": "Keep/a.md", "limit": 1})).await;
    assert_eq!(history["records"][0]["tool"], "restore_vault");
    let links = ok(&app, &token, "find_unresolved_links", json!({"vault": V})).await;
    assert_eq!(links["links"].as_array().map_or(0, Vec::len), 0, "the index followed the restore: {links}");

    // One folder only, by time; then errors.
    ok(&app, &token, "write_note", json!({"vault": V, "path": "Keep/c.md", "content": "c"})).await;
    ok(&app, &token, "write_note", json!({"vault": V, "path": "Other.md", "content": "o"})).await;
    let now = chrono::Utc::now().to_rfc3339();
    ok(&app, &token, "write_note", json!({"vault": V, "path": "Keep/d.md", "content": "d"})).await;
    ok(&app, &token, "write_note", json!({"vault": V, "path": "Other2.md", "content": "o2"})).await;
    let folder = ok(&app, &token, "restore_vault", json!({"vault": V, "at": now, "folder": "Keep"})).await;
    assert_eq!((folder["restored"].as_u64(), folder["deleted"].as_u64()), (Some(0), Some(1)));
    assert!(text(&app, &token, "Keep/d.md").await.is_none() && text(&app, &token, "Other2.md").await.is_some());
    let e = err(&app, &token, "restore_vault", json!({"vault": V, "at": "yesterday"})).await;
    assert_eq!(e["details"]["field"], "at");
    let e = err(&app, &token, "restore_vault", json!({"vault": V, "at": "999999"})).await;
    assert_eq!(e["details"]["field"], "at");
}

#[tokio::test]
async fn the_restore_command_plans_and_applies_from_the_shell() {
    let (app, token) = setup_with(false, None).await;
    let seq = last_seq(&app, &token, "Plan.md").await;
    ok(&app, &token, "write_note", json!({"vault": V, "path": "Plan.md", "content": "changed", "mode": "overwrite"}))
        .await;
    let dry =
        cli(&app.iso, &["vault", "restore", "--tenant", "acme", "--vault", V, "--at", &seq.to_string(), "--dry-run"]);
    assert!(dry.status.success(), "{}", stderr(&dry));
    assert!(stdout(&dry).contains("1 restored, 0 deleted"), "{}", stdout(&dry));
    assert!(stdout(&dry).contains("restore Plan.md"));
    assert_eq!(text(&app, &token, "Plan.md").await.as_deref(), Some("changed"));
    let real = cli(&app.iso, &["vault", "restore", "--tenant", "acme", "--vault", V, "--at", &seq.to_string()]);
    assert!(real.status.success(), "{}", stderr(&real));
    assert_eq!(text(&app, &token, "Plan.md").await.as_deref(), Some(crate::write::PLAN));
    let bad = cli(&app.iso, &["vault", "restore", "--tenant", "acme", "--vault", V, "--at", "soon"]);
    assert!(!bad.status.success());
}

#[tokio::test]
async fn audit_provenance_reports_notes_without_a_source() {
    let (app, token) = setup_with(false, None).await;
    for (path, content) in [
        ("Lit/a.md", "---\nsource: https://example.org\n---\n"),
        ("Lit/b.md", "---\nsource: \"\"\n---\n"),
        ("Lit/c.md", "no frontmatter"),
        ("Drafts/d.md", "---\ncited: x\n---\n"),
    ] {
        ok(&app, &token, "write_note", json!({"vault": V, "path": path, "content": content})).await;
    }
    let all = ok(&app, &token, "audit_provenance", json!({"vault": V})).await;
    assert_eq!(all["notes"], 5);
    assert_eq!(all["missing"], json!(["Drafts/d.md", "Lit/b.md", "Lit/c.md", "Plan.md"]));
    let lit = ok(&app, &token, "audit_provenance", json!({"vault": V, "include": ["Lit/**"], "limit": 1})).await;
    assert_eq!((lit["notes"].as_u64(), lit["truncated"].as_bool()), (Some(3), Some(true)));
    assert!((lit["coverage"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-9);
    let cited = ok(
        &app,
        &token,
        "audit_provenance",
        json!({"vault": V, "field": "cited", "exclude": ["Lit/**"], "response_format": "concise"}),
    )
    .await;
    assert_eq!((cited["notes"].as_u64(), cited["missing"].clone()), (Some(2), json!(["Plan.md"])));
    assert!(cited.get("with_provenance").is_none());
}
