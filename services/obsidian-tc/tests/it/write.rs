//! The write tools through the MCP surface: success, the errors each can raise, concise against
//! detailed, the confirmation gate, the compare-and-swap on prev_hash, and the guarantee each
//! makes (nothing written on refusal; bytes outside the edited part unchanged).

use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp};
use crate::index::commit;
use crate::mcp::{call, error_of};

pub(crate) const V: &str = "Notes";

pub(crate) const PLAN: &str = "---\ntitle: Plan\ntags: [work]\n---\nPreamble text.\n\n# Goals\nship it\n\n## Detail\nsmall print ^d1\n\n# Log\n- started\n";

/// An app with confirmation off (unless `confirm`), a tenant "acme" with vault Notes holding
/// Plan.md, and a token with every scope. `acl`: write and delete globs for Notes.
pub(crate) async fn setup_with(confirm: bool, acl: Option<(Vec<&str>, Vec<&str>)>) -> (TestApp, String) {
    let acl = acl.map(|(w, d)| {
        (w.into_iter().map(str::to_string).collect::<Vec<_>>(), d.into_iter().map(str::to_string).collect::<Vec<_>>())
    });
    let restricted = acl.is_some();
    let app = TestApp::spawn_with(move |c| {
        c.tools.confirm_destructive = confirm;
        if let Some((write, delete)) = acl {
            c.acl.push(otc_config::AclEntry {
                tenant: Some("acme".into()),
                vault: V.into(),
                read_paths: None,
                write_paths: Some(write),
                delete_paths: Some(delete),
            });
        }
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    if restricted {
        // The ACL may keep the token's own sync API commits away from Plan.md.
        app.seed(&token, V, &[("Plan.md", Some(PLAN))]).await;
    } else {
        commit(&app, &token, V, &[("Plan.md", Some(PLAN))]).await;
    }
    (app, token)
}

pub(crate) async fn ok(app: &TestApp, token: &str, tool: &str, args: Value) -> Value {
    let result = call(app, "/mcp", token, tool, args.clone()).await;
    assert_eq!(result["isError"], false, "{tool} {args}: {result}");
    result["structuredContent"].clone()
}

pub(crate) async fn err(app: &TestApp, token: &str, tool: &str, args: Value) -> Value {
    let result = call(app, "/mcp", token, tool, args).await;
    error_of(&result).clone()
}

/// The note's text, or None when it is not there.
pub(crate) async fn text(app: &TestApp, token: &str, path: &str) -> Option<String> {
    let result = call(app, "/mcp", token, "read_note", json!({"vault": V, "path": path, "format": "content"})).await;
    if result["isError"] == true {
        assert_eq!(result["structuredContent"]["code"], "note_not_found", "{result}");
        return None;
    }
    Some(result["structuredContent"]["content"].as_str().unwrap().to_string())
}

fn sha(text: &str) -> String {
    obsidian_tc::sync_client::sha256_hex(text.as_bytes())
}

#[tokio::test]
async fn write_note_creates_refuses_to_clobber_overwrites_with_confirmation_and_edits_sections() {
    let (app, token) = setup_with(true, None).await;
    let made = ok(&app, &token, "write_note", json!({"vault": V, "path": "New/Idea.md", "content": "# Idea\n"})).await;
    assert_eq!((made["created"].clone(), made["mode_used"].clone()), (json!(true), json!("create")));
    assert_eq!(made["content_hash"], sha("# Idea\n"));
    assert_eq!((made["previous_size"].clone(), made["current_size"].clone()), (json!(0), json!(7)));
    assert_eq!(made["prev_hash"], Value::Null);
    // Read-your-writes: the index has it before the answer.
    let found = ok(&app, &token, "note_exists", json!({"vault": V, "path": "New/Idea.md"})).await;
    assert_eq!(found["exists"], true);

    // The clobber guard names the in-place tools; nothing changes.
    let e = err(&app, &token, "write_note", json!({"vault": V, "path": "Plan.md", "content": "gone"})).await;
    assert_eq!(e["code"], "note_exists");
    assert!(e["message"].as_str().unwrap().contains("patch_note"), "{e}");
    assert_eq!(text(&app, &token, "Plan.md").await.as_deref(), Some(PLAN));

    // An overwrite needs a person's confirmation, bound to the arguments.
    let args = json!({"vault": V, "path": "Plan.md", "content": "new plan\n", "mode": "overwrite"});
    let e = err(&app, &token, "write_note", args.clone()).await;
    assert_eq!(e["code"], "elicit_required");
    assert_eq!(e["details"]["args_hash"].as_str().unwrap().len(), 64);
    let mut reordered = json!({"mode": "overwrite", "content": "new plan\n", "path": "Plan.md", "vault": V});
    let e2 = err(&app, &token, "write_note", reordered.clone()).await;
    assert_eq!(e2["details"]["args_hash"], e["details"]["args_hash"], "key order does not change the hash");
    reordered["elicit_token"] = json!("made-up");
    assert_eq!(err(&app, &token, "write_note", reordered).await["code"], "elicit_invalid");
    assert_eq!(text(&app, &token, "Plan.md").await.as_deref(), Some(PLAN), "nothing written while unconfirmed");
    // Creating with upsert asks nothing.
    let up =
        ok(&app, &token, "write_note", json!({"vault": V, "path": "Up.md", "content": "u", "mode": "upsert"})).await;
    assert_eq!(up["created"], true);

    // Bad names: link syntax in a new name, a Windows-hostile name, traversal.
    let e = err(&app, &token, "write_note", json!({"vault": V, "path": "A [draft].md", "content": "x"})).await;
    assert_eq!((e["code"].as_str(), e["details"]["field"].as_str()), (Some("invalid_input"), Some("path")));
    assert!(!e["message"].as_str().unwrap().contains("draft"), "the name is never echoed: {e}");
    for bad in ["../x.md", "/abs.md", "a:b.md"] {
        let e = err(&app, &token, "write_note", json!({"vault": V, "path": bad, "content": "x"})).await;
        assert_eq!(e["code"], "path_invalid", "{bad}: {e}");
    }
    let e = err(&app, &token, "write_note", json!({"vault": "Nope", "path": "x.md", "content": "x"})).await;
    assert_eq!(e["code"], "vault_not_found");
    let e =
        err(&app, &token, "write_note", json!({"vault": V, "path": "x.md", "content": "x", "mode": "sideways"})).await;
    assert_eq!(e["code"], "validation_error");

    // Section mode: one heading's subtree, every other byte identical.
    let sec = ok(
        &app,
        &token,
        "write_note",
        json!({"vault": V, "path": "Plan.md", "content": "ship it twice\n", "anchor": {"type": "heading", "heading": "Goals > Detail"}, "response_format": "concise"}),
    )
    .await;
    let expect = PLAN.replace("small print ^d1\n", "ship it twice\n");
    assert_eq!(text(&app, &token, "Plan.md").await.as_deref(), Some(expect.as_str()));
    assert_eq!(sec.as_object().unwrap().keys().collect::<Vec<_>>(), ["content_hash", "path", "vault"], "concise ack");
    assert_eq!(sec["content_hash"], sha(&expect));
    let e = err(
        &app,
        &token,
        "write_note",
        json!({"vault": V, "path": "Plan.md", "content": "x", "anchor": {"type": "heading", "heading": "Nope"}}),
    )
    .await;
    assert_eq!((e["code"].as_str(), e["details"]["field"].as_str()), (Some("invalid_input"), Some("anchor")));
    let e = err(
        &app,
        &token,
        "write_note",
        json!({"vault": V, "path": "Missing.md", "content": "x", "anchor": {"type": "block", "block_id": "d1"}}),
    )
    .await;
    assert_eq!(e["code"], "note_not_found");
}

#[tokio::test]
async fn prev_hash_is_a_compare_and_swap_and_a_refusal_writes_nothing() {
    let (app, token) = setup_with(false, None).await;
    let stale = sha("an older version");
    for (tool, args) in [
        ("write_note", json!({"vault": V, "path": "Plan.md", "content": "x", "mode": "overwrite", "prev_hash": stale})),
        ("append_note", json!({"vault": V, "path": "Plan.md", "content": "x", "prev_hash": stale})),
        (
            "patch_note",
            json!({"vault": V, "path": "Plan.md", "operation": "append", "target_heading": "Log", "content": "x", "prev_hash": stale}),
        ),
        ("delete_note", json!({"vault": V, "path": "Plan.md", "prev_hash": stale})),
    ] {
        let e = err(&app, &token, tool, args).await;
        assert_eq!(e["code"], "concurrent_modification", "{tool}: {e}");
        assert_eq!(e["details"]["actual"], sha(PLAN), "{tool}");
        assert_eq!(e["retryable"], true);
    }
    assert_eq!(text(&app, &token, "Plan.md").await.as_deref(), Some(PLAN));
    let e = err(&app, &token, "append_note", json!({"vault": V, "path": "Plan.md", "content": "x", "prev_hash": "zz"}))
        .await;
    assert_eq!((e["code"].as_str(), e["details"]["field"].as_str()), (Some("invalid_input"), Some("prev_hash")));
    // The right hash goes through.
    let done = ok(
        &app,
        &token,
        "append_note",
        json!({"vault": V, "path": "Plan.md", "content": "- more\n", "prev_hash": sha(PLAN)}),
    )
    .await;
    assert_eq!(done["content_hash"], sha(&format!("{PLAN}- more\n")));
}

#[tokio::test]
async fn append_note_upserts_and_appends_under_anchors() {
    let (app, token) = setup_with(false, None).await;
    let made =
        ok(&app, &token, "append_note", json!({"vault": V, "path": "Daily/2026-11-30.md", "content": "first"})).await;
    assert_eq!(made["created"], true);
    let again =
        ok(&app, &token, "append_note", json!({"vault": V, "path": "Daily/2026-11-30.md", "content": "second"})).await;
    assert_eq!(again["created"], false);
    assert_eq!(again["bytes_written"], 7);
    assert_eq!(text(&app, &token, "Daily/2026-11-30.md").await.as_deref(), Some("first\nsecond"));
    ok(
        &app,
        &token,
        "append_note",
        json!({"vault": V, "path": "Daily/2026-11-30.md", "content": "!", "ensure_newline": false}),
    )
    .await;
    assert_eq!(text(&app, &token, "Daily/2026-11-30.md").await.as_deref(), Some("first\nsecond!"));

    ok(
        &app,
        &token,
        "append_note",
        json!({"vault": V, "path": "Plan.md", "content": "- done", "anchor": {"type": "heading", "heading": "Log"}}),
    )
    .await;
    ok(
        &app,
        &token,
        "append_note",
        json!({"vault": V, "path": "Plan.md", "content": "under goals", "anchor": {"type": "heading", "heading": "goals"}}),
    )
    .await;
    let e = err(
        &app,
        &token,
        "append_note",
        json!({"vault": V, "path": "Plan.md", "content": "x", "anchor": {"type": "heading", "heading": "Ideas"}}),
    )
    .await;
    assert_eq!((e["code"].as_str(), e["details"]["field"].as_str()), (Some("invalid_input"), Some("anchor")));
    let made = ok(
        &app,
        &token,
        "append_note",
        json!({"vault": V, "path": "Plan.md", "content": "idea one", "anchor": {"type": "heading", "heading": "Ideas"}, "create_if_missing": true}),
    )
    .await;
    assert_eq!(made["section_created"], true);
    let expect = PLAN
        .replace("small print ^d1\n", "small print ^d1\nunder goals\n")
        .replace("- started\n", "- started\n- done\n\n## Ideas\nidea one\n");
    assert_eq!(text(&app, &token, "Plan.md").await.as_deref(), Some(expect.as_str()));
    let e = err(
        &app,
        &token,
        "append_note",
        json!({"vault": V, "path": "Nowhere.md", "content": "x", "anchor": {"type": "heading", "heading": "Log"}}),
    )
    .await;
    assert_eq!(e["code"], "note_not_found");
    assert_eq!(text(&app, &token, "Nowhere.md").await, None, "an anchored append creates nothing");
}

#[tokio::test]
async fn patch_note_operations_rules_and_blast_radius() {
    let (app, token) = setup_with(false, None).await;
    let p = |op: &str, extra: Value| {
        let mut args = json!({"vault": V, "path": "Plan.md", "operation": op});
        args.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        args
    };
    // Each cross-field rule names the operation and the field.
    for (args, field) in [
        (p("append", json!({"content": "x"})), "anchor"),
        (p("append", json!({"target_heading": "Log"})), "content"),
        (p("replace_text", json!({"target_heading": "Log", "new_string": "y"})), "old_string"),
        (p("replace_text", json!({"target_heading": "Log", "old_string": "y"})), "new_string"),
        (
            p("replace_text", json!({"target_heading": "Log", "old_string": "a", "new_string": "b", "content": "c"})),
            "content",
        ),
        (p("replace", json!({"target_heading": "Log", "content": "c", "old_string": "a"})), "old_string"),
    ] {
        let e = err(&app, &token, "patch_note", args.clone()).await;
        assert_eq!(
            (e["code"].as_str(), e["details"]["field"].as_str()),
            (Some("invalid_input"), Some(field)),
            "{args}"
        );
        assert_eq!(e["details"]["operation"], args["operation"]);
        assert!(e["message"].as_str().unwrap().contains(args["operation"].as_str().unwrap()));
    }
    let out =
        ok(&app, &token, "patch_note", p("prepend", json!({"target_heading": "Log", "content": "- first"}))).await;
    assert_eq!((out["lines_removed"].clone(), out["bytes_removed"].clone()), (json!(0), json!(0)));
    let out = ok(
        &app,
        &token,
        "patch_note",
        p("replace", json!({"anchor": {"type": "block", "block_id": "d1"}, "content": "fine print", "response_format": "concise"})),
    )
    .await;
    assert_eq!(
        (out["lines_removed"].clone(), out["bytes_removed"].clone()),
        (json!(1), json!(15)),
        "concise keeps them"
    );
    let out = ok(
        &app,
        &token,
        "patch_note",
        p(
            "replace_text",
            json!({"anchor": {"type": "frontmatter"}, "old_string": "Preamble", "new_string": "Opening"}),
        ),
    )
    .await;
    assert_eq!(out["lines_removed"], 1);
    let out = ok(
        &app,
        &token,
        "patch_note",
        p("append", json!({"anchor": {"type": "frontmatter", "field": "tags"}, "content": "plans"})),
    )
    .await;
    assert_eq!(out["operation"], "append");
    let expect = PLAN
        .replace("- started", "- first\n- started")
        .replace("small print ^d1", "fine print ^d1")
        .replace("Preamble", "Opening")
        .replace("tags: [work]", "tags:\n  - work\n  - plans");
    let now = text(&app, &token, "Plan.md").await.unwrap();
    assert_eq!(now.replace("tags: [work, plans]", "tags:\n  - work\n  - plans"), expect);
    let e = err(
        &app,
        &token,
        "patch_note",
        p("replace_text", json!({"target_heading": "Goals", "old_string": "i", "new_string": "I"})),
    )
    .await;
    assert!(e["details"]["occurrences"].as_u64().unwrap() > 1, "{e}");

    // A replace that would discard most of a long note needs confirm_replace.
    let long = format!("# Only\n{}", "line\n".repeat(40));
    ok(&app, &token, "write_note", json!({"vault": V, "path": "Long.md", "content": long})).await;
    let args =
        json!({"vault": V, "path": "Long.md", "operation": "replace", "target_heading": "Only", "content": "short"});
    let e = err(&app, &token, "patch_note", args.clone()).await;
    assert_eq!(e["details"]["field"], "confirm_replace");
    assert_eq!(text(&app, &token, "Long.md").await.as_deref(), Some(long.as_str()));
    let mut confirmed = args;
    confirmed["confirm_replace"] = json!(true);
    let out = ok(&app, &token, "patch_note", confirmed).await;
    assert_eq!(out["lines_removed"], 40);
    assert_eq!(text(&app, &token, "Long.md").await.as_deref(), Some("# Only\nshort\n"));
}

/// A note overwritten again and again (a log an agent rewrites) keeps every old text in the
/// trash: past the hundred numbered names, each copy is numbered by the time, and the write
/// never fails for want of a name.
#[tokio::test]
async fn a_note_overwritten_past_a_hundred_trash_copies_still_writes() {
    let app = TestApp::spawn_with(|c| c.tools.confirm_destructive = false).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    for i in 0..102 {
        let args = json!({"vault": V, "path": "Log.md", "mode": "upsert", "content": format!("v{i}")});
        ok(&app, &token, "write_note", args).await;
    }
    assert_eq!(text(&app, &token, "Log.md").await.as_deref(), Some("v101"));
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let files = tx.files(tenant.vault_id, None, 5000).await.unwrap();
    tx.commit().await.unwrap();
    let names: Vec<&str> = files.iter().map(|f| f.path.as_str()).filter(|p| p.starts_with(".trash/Log")).collect();
    assert_eq!(names.len(), 101, "{names:?}");
    assert!(names.contains(&".trash/Log.md") && names.contains(&".trash/Log (99).md"), "{names:?}");
    // The 101st copy: a name numbered by the time, not a refusal.
    let beyond: Vec<&&str> = names.iter().filter(|n| n.len() > ".trash/Log (100).md".len()).collect();
    assert_eq!(beyond.len(), 1, "{names:?}");
}

#[tokio::test]
async fn delete_goes_to_the_trash_and_restore_brings_it_back() {
    let (app, token) = setup_with(true, None).await;
    let e = err(&app, &token, "delete_note", json!({"vault": V, "path": "Plan.md"})).await;
    assert_eq!(e["code"], "elicit_required");
    assert_eq!(text(&app, &token, "Plan.md").await.as_deref(), Some(PLAN));
    app.stop().await;

    let (app, token) = setup_with(false, None).await;
    let gone = ok(&app, &token, "delete_note", json!({"vault": V, "path": "Plan.md"})).await;
    assert_eq!(gone["trashed_to"], ".trash/Plan.md");
    assert_eq!(gone["prev_hash"], sha(PLAN));
    assert_eq!(text(&app, &token, "Plan.md").await, None);
    let e = err(&app, &token, "delete_note", json!({"vault": V, "path": "Plan.md"})).await;
    assert_eq!(e["code"], "note_not_found");
    // A second note of the same name goes to "Plan (1).md" in the trash.
    ok(&app, &token, "write_note", json!({"vault": V, "path": "Plan.md", "content": "second"})).await;
    let gone2 = ok(&app, &token, "delete_note", json!({"vault": V, "path": "Plan.md", "permanent": false})).await;
    assert_eq!(gone2["trashed_to"], ".trash/Plan (1).md");

    let snaps = ok(&app, &token, "list_snapshots", json!({"vault": V, "path": "Plan.md"})).await;
    let list = snaps["snapshots"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert!(list.iter().all(|s| s["op"] == "delete"));
    let oldest = list.last().unwrap()["id"].as_str().unwrap().to_string();
    let read = ok(&app, &token, "read_snapshot", json!({"vault": V, "snapshot_id": oldest})).await;
    assert_eq!(read["content"], PLAN);
    let back = ok(&app, &token, "restore_note", json!({"vault": V, "path": "Plan.md", "snapshot_id": oldest})).await;
    assert_eq!((back["created"].clone(), back["content_hash"].clone()), (json!(true), json!(sha(PLAN))));
    assert_eq!(text(&app, &token, "Plan.md").await.as_deref(), Some(PLAN));
    let e = err(&app, &token, "restore_note", json!({"vault": V, "path": "Other.md", "snapshot_id": oldest})).await;
    assert_eq!(e["details"]["field"], "snapshot_id");
    let e = err(&app, &token, "read_snapshot", json!({"vault": V, "snapshot_id": "not-a-uuid"})).await;
    assert_eq!(e["code"], "not_found");

    // A manual snapshot, then an edit, then back to the checkpoint.
    let snap = ok(&app, &token, "snapshot_note", json!({"vault": V, "path": "Plan.md"})).await;
    ok(&app, &token, "append_note", json!({"vault": V, "path": "Plan.md", "content": "oops"})).await;
    let concise =
        ok(&app, &token, "list_snapshots", json!({"vault": V, "path": "Plan.md", "response_format": "concise"})).await;
    let first = &concise["snapshots"][0];
    assert_eq!(first["op"], "update");
    assert!(first.get("content_hash").is_none());
    ok(&app, &token, "restore_note", json!({"vault": V, "path": "Plan.md", "snapshot_id": snap["snapshot_id"]})).await;
    assert_eq!(text(&app, &token, "Plan.md").await.as_deref(), Some(PLAN));

    // Permanent: no copy in the trash.
    let gone = ok(&app, &token, "delete_note", json!({"vault": V, "path": "Plan.md", "permanent": true})).await;
    assert_eq!(gone["trashed_to"], Value::Null);
}

#[tokio::test]
async fn copy_note_and_provenance_follow_the_change_log() {
    let (app, token) = setup_with(false, None).await;
    let copied =
        ok(&app, &token, "copy_note", json!({"vault": V, "from": "Plan.md", "to": "Archive/Plan copy.md"})).await;
    assert_eq!((copied["overwritten"].clone(), copied["content_hash"].clone()), (json!(false), json!(sha(PLAN))));
    let e = err(&app, &token, "copy_note", json!({"vault": V, "from": "Plan.md", "to": "Archive/Plan copy.md"})).await;
    assert_eq!(e["code"], "note_exists");
    ok(&app, &token, "write_note", json!({"vault": V, "path": "Other.md", "content": "other"})).await;
    let over = ok(
        &app,
        &token,
        "copy_note",
        json!({"vault": V, "from": "Other.md", "to": "Archive/Plan copy.md", "overwrite": true}),
    )
    .await;
    assert_eq!(over["trashed_dest_to"], ".trash/Archive/Plan copy.md");
    let e = err(&app, &token, "copy_note", json!({"vault": V, "from": "Missing.md", "to": "x.md"})).await;
    assert_eq!(e["code"], "note_not_found");

    ok(
        &app,
        &token,
        "append_note",
        json!({"vault": V, "path": "Plan.md", "content": "more", "provenance": "agent_synthesis"}),
    )
    .await;
    let history =
        ok(&app, &token, "get_provenance", json!({"vault": V, "path": "Plan.md", "include_verification": true})).await;
    let records = history["records"].as_array().unwrap();
    assert_eq!(records.len(), 2, "{history}");
    assert_eq!((records[0]["op"].as_str(), records[0]["tool"].as_str()), (Some("update"), Some("append_note")));
    assert_eq!(records[0]["origin"], "agent_synthesis");
    assert_eq!((records[1]["op"].as_str(), records[1]["tool"].as_str()), (Some("create"), Some("v1_commit")));
    assert!(records[1].get("client_tool").is_none(), "the commit claimed no tool of its own: {history}");
    assert_eq!(records[0]["prev_content_hash"], records[1]["content_hash"]);
    assert_eq!(history["verification"]["intact"], true);
    let page = ok(&app, &token, "get_provenance", json!({"vault": V, "path": "Plan.md", "limit": 1})).await;
    assert_eq!(page["records"].as_array().unwrap().len(), 1);
    let rest =
        ok(&app, &token, "get_provenance", json!({"vault": V, "path": "Plan.md", "cursor": page["next_cursor"]})).await;
    assert_eq!(rest["records"][0]["op"], "create");
    assert!(rest.get("next_cursor").is_none());
}

#[tokio::test]
async fn the_folder_acl_guards_writes_and_deletes() {
    let (app, token) = setup_with(false, Some((vec!["Inbox/**"], vec![]))).await;
    ok(&app, &token, "write_note", json!({"vault": V, "path": "Inbox/a.md", "content": "a"})).await;
    for (tool, args) in [
        ("write_note", json!({"vault": V, "path": "Elsewhere.md", "content": "x"})),
        ("append_note", json!({"vault": V, "path": "Plan.md", "content": "x"})),
        (
            "patch_note",
            json!({"vault": V, "path": "Plan.md", "operation": "append", "target_heading": "Log", "content": "x"}),
        ),
        ("copy_note", json!({"vault": V, "from": "Plan.md", "to": "Copy.md"})),
        ("delete_note", json!({"vault": V, "path": "Inbox/a.md"})),
        ("write_note", json!({"vault": V, "path": ".obsidian/app.json", "content": "{}"})),
    ] {
        let e = err(&app, &token, tool, args.clone()).await;
        assert_eq!(e["code"], "acl_denied", "{tool} {args}: {e}");
    }
    assert_eq!(text(&app, &token, "Plan.md").await.as_deref(), Some(PLAN));
    assert!(text(&app, &token, "Inbox/a.md").await.is_some());
}

#[tokio::test]
async fn concurrent_appends_lose_nothing_and_another_tenant_reaches_nothing() {
    let (app, token) = setup_with(false, None).await;
    let mut handles = Vec::new();
    for i in 0..12 {
        let (url, http, token) = (app.url("/mcp"), app.http.clone(), token.clone());
        handles.push(tokio::spawn(async move {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "append_note", "arguments": {"vault": V, "path": "Plan.md", "content": format!("- line {i}\n")}}});
            let response = http
                .post(url)
                .bearer_auth(token)
                .header("accept", "application/json, text/event-stream")
                .json(&body)
                .send()
                .await
                .unwrap();
            response.json::<Value>().await.unwrap()
        }));
    }
    let mut refused = 0;
    for handle in handles {
        let reply = handle.await.unwrap();
        if reply["result"]["isError"] == true {
            assert_eq!(reply["result"]["structuredContent"]["code"], "concurrent_modification", "{reply}");
            refused += 1;
        }
    }
    let now = text(&app, &token, "Plan.md").await.unwrap();
    let landed = (0..12).filter(|i| now.contains(&format!("- line {i}\n"))).count();
    assert_eq!(landed + refused, 12, "every append either landed or was refused, never lost: {now}");
    assert!(landed >= 3, "the retry loop lets most appends through: {landed}");

    // Another tenant has a vault of the same name: its writes land there and never here.
    let other = Tenant::create(&app.store, "other").await;
    let (other_token, _) = other.token(&app.store, "*", false, None).await;
    let e = err(
        &app,
        &other_token,
        "write_note",
        json!({"vault": V, "path": "Plan.md", "content": "x", "mode": "overwrite"}),
    )
    .await;
    assert_eq!(e["code"], "note_not_found");
    assert_eq!(
        err(&app, &other_token, "delete_note", json!({"vault": V, "path": "Plan.md"})).await["code"],
        "note_not_found"
    );
    let theirs =
        ok(&app, &other_token, "append_note", json!({"vault": V, "path": "Plan.md", "content": "theirs"})).await;
    assert_eq!(theirs["created"], true, "a note of their own");
    assert_eq!(text(&app, &token, "Plan.md").await.unwrap(), now);
    assert_eq!(text(&app, &other_token, "Plan.md").await.as_deref(), Some("theirs"));
    // A token bound to another vault of the same tenant reaches nothing here.
    let mut tx = app.store.begin(other.id).await.unwrap();
    let second = tx.create_vault("Second").await.unwrap();
    tx.commit().await.unwrap();
    let bound = Tenant { id: other.id, slug: other.slug.clone(), vault_id: second.id };
    let (bound_token, _) = bound.token(&app.store, "*", true, None).await;
    let e = err(&app, &bound_token, "append_note", json!({"vault": V, "path": "Plan.md", "content": "x"})).await;
    assert_eq!(e["code"], "vault_not_found");
}

#[tokio::test]
async fn frontmatter_and_tag_edits_keep_untouched_bytes_and_refuse_broken_yaml() {
    let (app, token) = setup_with(true, None).await;
    const FM: &str = "---\n# a comment stays\ntitle: 'Quoted'   # trailing\nstatus: open\nlist:\n  - a\n  - b\n---\nBody #old text\n";
    ok(&app, &token, "write_note", json!({"vault": V, "path": "F.md", "content": FM})).await;
    let set = ok(
        &app,
        &token,
        "update_frontmatter",
        json!({"vault": V, "path": "F.md", "operation": "set", "key": "status", "value": "done"}),
    )
    .await;
    assert_eq!(set["frontmatter"]["status"], "done");
    assert_eq!(set["changed"], true);
    assert_eq!(text(&app, &token, "F.md").await.unwrap(), FM.replace("status: open", "status: done"));
    ok(
        &app,
        &token,
        "update_frontmatter",
        json!({"vault": V, "path": "F.md", "operation": "set", "key": "meta.owner", "value": "ana", "nested": true}),
    )
    .await;
    ok(&app, &token, "update_frontmatter", json!({"vault": V, "path": "F.md", "operation": "remove", "key": "list"}))
        .await;
    let merged = ok(
        &app,
        &token,
        "update_frontmatter",
        json!({"vault": V, "path": "F.md", "operation": "merge", "properties": {"n": 3, "up": "[[Plan]]"}}),
    )
    .await;
    assert_eq!(merged["frontmatter"]["meta"], json!({"owner": "ana"}));
    let now = text(&app, &token, "F.md").await.unwrap();
    assert!(now.starts_with("---\n# a comment stays\ntitle: 'Quoted'   # trailing\nstatus: done\n"), "{now}");
    assert!(now.contains("up: \"[[Plan]]\"") && now.ends_with("---\nBody #old text\n"), "{now}");
    // The property link is a link now.
    let links =
        ok(&app, &token, "get_outgoing_links", json!({"vault": V, "path": "F.md", "response_format": "detailed"}))
            .await;
    assert!(links.to_string().contains("Plan.md"), "{links}");
    // Rule errors name the field; replace needs confirmation.
    let e =
        err(&app, &token, "update_frontmatter", json!({"vault": V, "path": "F.md", "operation": "set", "key": "k"}))
            .await;
    assert_eq!(e["details"]["field"], "value");
    let e = err(&app, &token, "update_frontmatter", json!({"vault": V, "path": "F.md", "operation": "merge"})).await;
    assert_eq!(e["details"]["field"], "properties");
    let e = err(
        &app,
        &token,
        "update_frontmatter",
        json!({"vault": V, "path": "F.md", "operation": "replace", "properties": {"only": 1}}),
    )
    .await;
    assert_eq!(e["code"], "elicit_required");
    let e = err(
        &app,
        &token,
        "update_frontmatter",
        json!({"vault": V, "path": "Nope.md", "operation": "remove", "key": "x"}),
    )
    .await;
    assert_eq!(e["code"], "note_not_found");
    let made = ok(
        &app,
        &token,
        "update_frontmatter",
        json!({"vault": V, "path": "Made.md", "operation": "set", "key": "k", "value": [1, "two"], "create_if_missing": true}),
    )
    .await;
    assert_eq!(made["created"], true);
    assert_eq!(text(&app, &token, "Made.md").await.unwrap(), "---\nk:\n  - 1\n  - two\n---\n");

    // A note whose YAML does not parse is refused, never rewritten.
    const BROKEN: &str = "---\nbad: [unclosed\n---\nbody #keep\n";
    ok(&app, &token, "write_note", json!({"vault": V, "path": "Broken.md", "content": BROKEN})).await;
    for (tool, args) in [
        ("update_frontmatter", json!({"vault": V, "path": "Broken.md", "operation": "set", "key": "a", "value": 1})),
        ("add_tag", json!({"vault": V, "path": "Broken.md", "tag": "x"})),
        ("remove_tag", json!({"vault": V, "path": "Broken.md", "tag": "keep", "location": "frontmatter"})),
    ] {
        let e = err(&app, &token, tool, args).await;
        assert_eq!(
            (e["code"].as_str(), e["details"]["reason"].as_str()),
            (Some("invalid_input"), Some("frontmatter_unparseable")),
            "{tool}"
        );
    }
    assert_eq!(text(&app, &token, "Broken.md").await.as_deref(), Some(BROKEN));
    // Body tags still work on it.
    let removed =
        ok(&app, &token, "remove_tag", json!({"vault": V, "path": "Broken.md", "tag": "#keep", "location": "body"}))
            .await;
    assert_eq!(removed["removed_from_body"], 1);

    // Tags: into the tags property (created), a duplicate is a no-op, nested children stay.
    let added = ok(&app, &token, "add_tag", json!({"vault": V, "path": "F.md", "tag": "#project/alpha"})).await;
    assert_eq!((added["tag"].as_str(), added["added"].as_bool()), (Some("project/alpha"), Some(true)));
    let again = ok(&app, &token, "add_tag", json!({"vault": V, "path": "F.md", "tag": "Project/Alpha"})).await;
    assert_eq!(again["added"], false);
    ok(&app, &token, "add_tag", json!({"vault": V, "path": "F.md", "tag": "old/child", "location": "body"})).await;
    let tags = ok(&app, &token, "get_note_tags", json!({"vault": V, "path": "F.md"})).await;
    assert!(tags.to_string().contains("project/alpha") && tags.to_string().contains("old/child"), "{tags}");
    let removed = ok(&app, &token, "remove_tag", json!({"vault": V, "path": "F.md", "tag": "old"})).await;
    assert_eq!(
        (removed["removed_from_body"].as_u64(), removed["removed_from_frontmatter"].as_bool()),
        (Some(1), Some(false))
    );
    let now = text(&app, &token, "F.md").await.unwrap();
    assert!(now.contains("Body text\n") && now.contains("#old/child"), "{now}");
    for bad in ["", "has space", "123", "/lead"] {
        let e = err(&app, &token, "add_tag", json!({"vault": V, "path": "F.md", "tag": bad})).await;
        assert_eq!(
            (e["code"].as_str(), e["details"]["field"].as_str()),
            (Some("invalid_input"), Some("tag")),
            "{bad:?}"
        );
    }
}
