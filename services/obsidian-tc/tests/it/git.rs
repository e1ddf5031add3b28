//! The git tools over the change log: every write is a commit, git_log lists them, git_diff
//! shows what one changed, git_status is always clean; staging and committing by hand answer
//! plugin_unavailable. Paths the caller cannot read stay out of every answer.

use serde_json::json;

use crate::acl::{run, token_for};
use crate::harness::{Tenant, TestApp};
use crate::write::{err, ok};

const V: &str = "Notes";

#[tokio::test]
async fn the_change_log_answers_git_log_diff_and_status() {
    let app = TestApp::spawn_with(|c| c.tools.confirm_destructive = false).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    ok(&app, &token, "write_note", json!({"vault": V, "path": "Plan.md", "content": "# Plan\none\ntwo\n"})).await;
    ok(&app, &token, "write_note", json!({"vault": V, "path": "Secret/Key.md", "content": "hidden\n"})).await;
    let first = ok(&app, &token, "git_status", json!({"vault": V})).await;
    ok(&app, &token, "patch_note", json!({"vault": V, "path": "Plan.md", "operation": "replace_text", "target_heading": "Plan", "old_string": "two", "new_string": "three"})).await;

    let log = ok(&app, &token, "git_log", json!({"vault": V, "limit": 2})).await;
    let commits = log["commits"].as_array().unwrap();
    assert_eq!(commits.len(), 2);
    assert_eq!((commits[0]["tool"].clone(), commits[0]["author"].clone()), (json!("patch_note"), json!("alice")));
    assert_eq!(commits[0]["changes"], json!([{"op": "update", "path": "Plan.md"}]));
    assert_eq!(commits[1]["changes"], json!([{"op": "create", "path": "Secret/Key.md"}]));

    let diff = ok(&app, &token, "git_diff", json!({"vault": V, "path": "Plan.md"})).await;
    assert_eq!((diff["lines_added"].clone(), diff["lines_removed"].clone()), (json!(1), json!(1)));
    assert!(
        diff["diff"]
            .as_str()
            .unwrap()
            .contains("--- a/Plan.md\n+++ b/Plan.md\n@@ -1,3 +1,3 @@\n # Plan\n one\n-two\n+three\n"),
        "{diff}"
    );
    let whole =
        ok(&app, &token, "git_diff", json!({"vault": V, "path": "Plan.md", "from": 0, "to": first["head"]})).await;
    assert_eq!((whole["lines_added"].clone(), whole.get("from_hash").is_none()), (json!(3), true));
    let staged = ok(&app, &token, "git_diff", json!({"vault": V, "path": "Plan.md", "staged": true})).await;
    assert_eq!(staged["diff"], "");

    let status = ok(&app, &token, "git_status", json!({"vault": V})).await;
    assert_eq!((status["clean"].clone(), status["last_change"]["path"].clone()), (json!(true), json!("Plan.md")));
    assert!(status["head"].as_i64().unwrap() > first["head"].as_i64().unwrap());

    // A principal who cannot read Secret/ never sees it in the history.
    let bob = token_for(&app, &tenant, "bob", "read:git,execute:git,write:git").await;
    run(&app, &["acl", "set", "acme", "--vault", V, "--principal", "bob", "--read", "Plan.md"]);
    let seen = ok(&app, &bob, "git_log", json!({"vault": V})).await;
    assert!(!seen.to_string().contains("Secret"), "{seen}");
    assert_eq!(
        err(&app, &bob, "git_diff", json!({"vault": V, "path": "Secret/Key.md"})).await["code"],
        "note_not_found"
    );

    for (tool, args, code) in [
        ("git_stage", json!({"vault": V, "paths": ["Plan.md"]}), "plugin_unavailable"),
        ("git_commit", json!({"vault": V, "message": "x"}), "plugin_unavailable"),
        ("git_diff", json!({"vault": V, "path": "Nope.md"}), "note_not_found"),
        ("git_diff", json!({"vault": V, "path": "Plan.md", "from": -1}), "invalid_input"),
        ("git_log", json!({"vault": V, "limit": 0}), "invalid_input"),
    ] {
        assert_eq!(err(&app, &token, tool, args.clone()).await["code"], code, "{tool} {args}");
    }
    let hint = err(&app, &token, "git_commit", json!({"vault": V, "message": "x"})).await;
    assert!(hint["hint"].as_str().unwrap().contains("git_log"), "{hint}");
}
