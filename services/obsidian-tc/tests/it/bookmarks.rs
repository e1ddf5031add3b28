//! Bookmarks and workspaces, kept in the vault's own settings files (.obsidian/bookmarks.json
//! and workspaces.json) as Obsidian keeps them: listed through the caller's read ACL, changed
//! with a compare-and-swap, and only by a caller who may write anywhere in the vault.

use serde_json::{Value, json};

use crate::acl::{run, token_for};
use crate::harness::{Tenant, TestApp};
use crate::index::commit;
use crate::write::{err, ok};

const V: &str = "Notes";

/// Bookmarks as Obsidian writes them: a file, a search, and a group holding a private note.
const BOOKMARKS: &str = r#"{
  "items": [
    {"type": "file", "ctime": 1700000000000, "path": "Public/Open.md"},
    {"type": "search", "ctime": 1700000000001, "query": "tag:#todo"},
    {"type": "group", "ctime": 1700000000002, "title": "Work", "items": [
      {"type": "file", "ctime": 1700000000003, "path": "Secret/Plan.md", "title": "The plan"},
      {"type": "folder", "ctime": 1700000000004, "path": "Public"}
    ]}
  ]
}"#;

#[tokio::test]
async fn bookmarks_are_listed_through_the_acl_and_changed_with_a_compare_and_swap() {
    let app = TestApp::spawn_with(|c| c.tools.confirm_destructive = false).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    commit(
        &app,
        &token,
        V,
        &[
            ("Public/Open.md", Some("open\n")),
            ("Secret/Plan.md", Some("# Plan\n## Goals\n")),
            (".obsidian/bookmarks.json", Some(BOOKMARKS)),
        ],
    )
    .await;

    let listed = ok(&app, &token, "list_bookmarks", json!({"vault": V})).await;
    assert_eq!(listed["items"].as_array().unwrap().len(), 3);
    assert_eq!(listed["items"][2]["items"][0]["title"], "The plan");
    // A principal who cannot read Secret/ does not see its bookmark, and may not change the
    // bookmarks (they reach every folder).
    let bob = token_for(&app, &tenant, "bob", "read:bookmarks,write:bookmarks,delete:bookmarks,read:workspaces").await;
    run(&app, &["acl", "set", "acme", "--vault", V, "--principal", "bob", "--read", "Public/**"]);
    let seen = ok(&app, &bob, "list_bookmarks", json!({"vault": V})).await;
    assert_eq!(seen["items"][2]["items"], json!([{"type": "folder", "ctime": 1700000000004u64, "path": "Public"}]));
    assert!(!seen.to_string().contains("Secret"), "{seen}");
    let refused =
        err(&app, &bob, "add_bookmark", json!({"vault": V, "bookmark": {"type": "search", "query": "x"}})).await;
    assert_eq!(refused["code"], "acl_denied");

    let added = ok(&app, &token, "add_bookmark", json!({"vault": V, "bookmark": {"type": "heading", "path": "Secret/Plan.md", "subpath": "Goals"}, "group": "Later", "prev_hash": listed["content_hash"]})).await;
    assert_eq!((added["count"].clone(), added["group_created"].clone()), (json!(4), json!(true)));
    let now = ok(&app, &token, "list_bookmarks", json!({"vault": V})).await;
    let later = &now["items"][3];
    assert_eq!((later["type"].clone(), later["title"].clone()), (json!("group"), json!("Later")));
    assert_eq!(
        (later["items"][0]["path"].clone(), later["items"][0]["subpath"].clone()),
        (json!("Secret/Plan.md"), json!("#Goals"))
    );
    ok(
        &app,
        &token,
        "add_bookmark",
        json!({"vault": V, "bookmark": {"type": "url", "url": "https://obsidian.md", "title": "Home"}}),
    )
    .await;

    let refusals = [
        (
            "add_bookmark",
            json!({"vault": V, "bookmark": {"type": "file", "path": "Public/Open.md"}}),
            "conflict",
            "bookmark",
        ),
        (
            "add_bookmark",
            json!({"vault": V, "bookmark": {"type": "file", "path": "Public/Gone.md"}}),
            "note_not_found",
            "",
        ),
        ("add_bookmark", json!({"vault": V, "bookmark": {"type": "search"}}), "invalid_input", "bookmark"),
        (
            "add_bookmark",
            json!({"vault": V, "bookmark": {"type": "search", "query": "x"}, "prev_hash": listed["content_hash"]}),
            "concurrent_modification",
            "",
        ),
        ("remove_bookmark", json!({"vault": V, "match": {"path": "Nowhere.md"}}), "not_found", "match"),
        ("remove_bookmark", json!({"vault": V, "match": {}}), "invalid_input", "match"),
        ("remove_bookmark", json!({"vault": V, "match": {"colour": "red"}}), "invalid_input", "match"),
    ];
    for (tool, args, code, field) in refusals {
        let e = err(&app, &token, tool, args.clone()).await;
        assert_eq!(e["code"], code, "{tool} {args}: {e}");
        if !field.is_empty() {
            assert_eq!(e["details"]["field"], field, "{tool} {args}: {e}");
        }
    }
    let twice = ok(
        &app,
        &token,
        "add_bookmark",
        json!({"vault": V, "bookmark": {"type": "file", "path": "Public/Open.md"}, "allow_duplicate": true}),
    )
    .await;
    assert_eq!(twice["count"], 6);
    let removed = ok(&app, &token, "remove_bookmark", json!({"vault": V, "match": {"path": "Public/Open.md"}})).await;
    assert_eq!(removed["removed"], 2);
    let in_group =
        ok(&app, &token, "remove_bookmark", json!({"vault": V, "match": {"type": "folder"}, "group": "Work"})).await;
    assert_eq!(in_group["removed"], 1);
    let last = ok(&app, &token, "list_bookmarks", json!({"vault": V})).await;
    let kinds: Vec<&str> = last["items"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["search", "group", "group", "url"]);
}

#[tokio::test]
async fn workspaces_are_saved_listed_and_made_active() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let empty = ok(&app, &token, "list_workspaces", json!({"vault": V})).await;
    assert_eq!((empty["workspaces"].clone(), empty["content_hash"].clone()), (json!([]), json!("")));

    let layout = json!({"main": {"id": "m1", "type": "split", "children": []}, "active": "m1"});
    let saved = ok(&app, &token, "save_workspace", json!({"vault": V, "name": "Writing", "layout": layout})).await;
    assert_eq!((saved["created"].clone(), saved["workspaces"].clone()), (json!(true), json!(1)));
    ok(
        &app,
        &token,
        "save_workspace",
        json!({"vault": V, "name": "Review", "layout": {"main": {}}, "prev_hash": saved["content_hash"]}),
    )
    .await;
    let listed = ok(&app, &token, "list_workspaces", json!({"vault": V})).await;
    assert_eq!(
        (listed["workspaces"].clone(), listed["active"].clone()),
        (json!(["Review", "Writing"]), json!("Writing"))
    );

    let opened = ok(&app, &token, "open_workspace", json!({"vault": V, "name": "Review"})).await;
    assert_eq!(opened["layout"], json!({"main": {}}));
    assert_eq!(ok(&app, &token, "list_workspaces", json!({"vault": V})).await["active"], "Review");

    let refusals = [
        ("save_workspace", json!({"vault": V, "name": "Review", "layout": {}}), "conflict", "name"),
        ("save_workspace", json!({"vault": V, "name": " ", "layout": {}}), "invalid_input", "name"),
        (
            "save_workspace",
            json!({"vault": V, "name": "X", "layout": {}, "prev_hash": saved["content_hash"]}),
            "concurrent_modification",
            "",
        ),
        ("open_workspace", json!({"vault": V, "name": "Nope"}), "not_found", "name"),
        ("list_workspaces", json!({"vault": "Elsewhere"}), "vault_not_found", ""),
    ];
    for (tool, args, code, field) in refusals {
        let e = err(&app, &token, tool, args.clone()).await;
        assert_eq!(e["code"], Value::from(code), "{tool} {args}: {e}");
        if !field.is_empty() {
            assert_eq!(e["details"]["field"], field, "{tool} {args}: {e}");
        }
    }
    let replaced = ok(
        &app,
        &token,
        "save_workspace",
        json!({"vault": V, "name": "Review", "layout": {"left": {}}, "overwrite": true, "set_active": true}),
    )
    .await;
    assert_eq!(replaced["created"], false);
}
