//! move_note: every kind of link to the moved note is rewritten (aliases, headings, blocks,
//! embeds, markdown and property links kept), the index afterwards equals a full rebuild, and
//! a move whose rewrite cannot be proven, or that would touch a note the caller cannot see,
//! changes nothing.

use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp};
use crate::index::links_by_note;
use crate::mcp::call;
use crate::write::{V, err, ok, text};

const TARGET: &str = "# Target\n## Head\ntext ^blk\n[rel](../Other.md)\n";
const A: &str = "See [[Target]], [[Target|the target]], [[Target#Head]] and [[Target#^blk|block]].\n![[Target]]\n";
const B: &str = "---\nup: \"[[Target]]\"\nrelated:\n  - \"[[Target#Head|h]]\"\n---\nA [md link](Docs/Target.md) and [[Docs/Target]].\n| col | [[Target\\|cell]] |\n";
const C: &str = "Nothing about it here, but [[Other]].\n";
const OTHER: &str = "# Other\n";

async fn vault(acl_read: Option<Vec<&str>>) -> (TestApp, String, Tenant) {
    let acl_read = acl_read.map(|l| l.into_iter().map(str::to_string).collect::<Vec<_>>());
    let app = TestApp::spawn_with(move |c| {
        c.tools.confirm_destructive = false;
        if let Some(read) = acl_read {
            c.acl.push(otc_config::AclEntry {
                tenant: Some("acme".into()),
                vault: V.into(),
                read_paths: Some(read),
                write_paths: None,
                delete_paths: None,
            });
        }
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    app.seed(
        &token,
        V,
        &[
            ("Docs/Target.md", Some(TARGET)),
            ("A.md", Some(A)),
            ("Deep/B.md", Some(B)),
            ("C.md", Some(C)),
            ("Other.md", Some(OTHER)),
        ],
    )
    .await;
    (app, token, tenant)
}

/// Every link row of the vault now, and again after index_vault rebuilt it from the files.
async fn index_matches_a_rebuild(app: &TestApp, token: &str, tenant: &Tenant) {
    let incremental = links_by_note(app, tenant.id, tenant.vault_id).await;
    let rebuilt = call(app, "/mcp", token, "index_vault", json!({"vault": V})).await;
    assert_eq!(rebuilt["isError"], false, "{rebuilt}");
    let full = links_by_note(app, tenant.id, tenant.vault_id).await;
    assert_eq!(incremental, full, "the index after the move equals a full rebuild");
}

#[tokio::test]
async fn move_note_rewrites_every_kind_of_link_and_the_index_agrees_with_a_rebuild() {
    let (app, token, tenant) = vault(None).await;
    let moved = ok(&app, &token, "move_note", json!({"vault": V, "from": "Docs/Target.md", "to": "Archive/Renamed.md"})).await;
    assert_eq!(moved["moved"], true);
    assert_eq!(moved["backlinks_updated"], json!({"notes": 2, "links": 10}), "{moved}");
    assert_eq!(text(&app, &token, "Docs/Target.md").await, None);
    assert_eq!(
        text(&app, &token, "A.md").await.unwrap(),
        "See [[Renamed]], [[Renamed|the target]], [[Renamed#Head]] and [[Renamed#^blk|block]].\n![[Renamed]]\n"
    );
    assert_eq!(
        text(&app, &token, "Deep/B.md").await.unwrap(),
        "---\nup: \"[[Renamed]]\"\nrelated:\n  - \"[[Renamed#Head|h]]\"\n---\nA [md link](Archive/Renamed.md) and [[Archive/Renamed]].\n| col | [[Renamed\\|cell]] |\n"
    );
    assert_eq!(text(&app, &token, "C.md").await.as_deref(), Some(C), "a note without such links is untouched");
    // The moved note's own relative link still reaches Other.md from its new folder.
    let own = text(&app, &token, "Archive/Renamed.md").await.unwrap();
    assert_eq!(own, TARGET, "../Other.md still resolves from Archive/");
    assert_eq!(moved["content_hash"], obsidian_tc::sync::sha256_hex(own.as_bytes()));

    let back = ok(&app, &token, "get_backlinks", json!({"vault": V, "path": "Archive/Renamed.md", "response_format": "detailed"})).await;
    let sources: std::collections::BTreeSet<&str> =
        back["backlinks"].as_array().unwrap().iter().map(|b| b["source_path"].as_str().unwrap()).collect();
    assert_eq!(sources.into_iter().collect::<Vec<_>>(), ["A.md", "Deep/B.md"]);
    let unresolved = ok(&app, &token, "find_unresolved_links", json!({"vault": V})).await;
    assert_eq!(unresolved["links"].as_array().map_or(0, Vec::len), 0, "{unresolved}");
    index_matches_a_rebuild(&app, &token, &tenant).await;

    // Its history follows it through the move.
    let history = ok(&app, &token, "get_provenance", json!({"vault": V, "path": "Archive/Renamed.md"})).await;
    let records = history["records"].as_array().unwrap();
    assert_eq!((records[0]["op"].as_str(), records[0]["from"].as_str()), (Some("move"), Some("Docs/Target.md")));
    assert_eq!(records[1]["path"], "Docs/Target.md");
    // Each rewritten note's earlier text is a snapshot restore_note can bring back.
    let snaps = ok(&app, &token, "list_snapshots", json!({"vault": V, "path": "A.md"})).await;
    let read = ok(&app, &token, "read_snapshot", json!({"vault": V, "snapshot_id": snaps["snapshots"][0]["id"]})).await;
    assert_eq!(read["content"], A);
}

#[tokio::test]
async fn a_move_that_would_capture_a_link_keeps_it_on_its_note() {
    let (app, token, tenant) = vault(None).await;
    // C.md links [[Other]] (the root Other.md). Once that moves to Old/, the shorter
    // S/Other.md would win the bare name: C's link must be rewritten to keep its note.
    ok(&app, &token, "write_note", json!({"vault": V, "path": "S/Other.md", "content": "another other"})).await;
    ok(&app, &token, "move_note", json!({"vault": V, "from": "Other.md", "to": "Old/Other.md"})).await;
    let c = text(&app, &token, "C.md").await.unwrap();
    assert_eq!(c, "Nothing about it here, but [[Old/Other]].\n", "not captured by S/Other.md");
    let own = text(&app, &token, "Old/Other.md").await.unwrap();
    assert_eq!(own, OTHER);
    let target = text(&app, &token, "Docs/Target.md").await.unwrap();
    assert_eq!(target, TARGET.replace("../Other.md", "../Old/Other.md"), "a relative link to the moved note follows it");
    index_matches_a_rebuild(&app, &token, &tenant).await;
}

#[tokio::test]
async fn refused_moves_change_nothing() {
    let (app, token, _tenant) = vault(None).await;
    let before: Vec<Option<String>> =
        futures::future::join_all(["Docs/Target.md", "A.md", "Deep/B.md"].map(|p| text(&app, &token, p))).await;

    // A markdown link cannot carry ')': the whole move is refused, naming the note.
    let e = err(&app, &token, "move_note", json!({"vault": V, "from": "Docs/Target.md", "to": "Docs/Report (final).md"})).await;
    assert_eq!(e["code"], "invalid_input", "{e}");
    assert_eq!(e["details"]["note"], "Deep/B.md");
    // A new name with link syntax, an existing destination, a missing source.
    let e = err(&app, &token, "move_note", json!({"vault": V, "from": "Docs/Target.md", "to": "Docs/T#1.md"})).await;
    assert_eq!((e["code"].as_str(), e["details"]["field"].as_str()), (Some("invalid_input"), Some("to")));
    let e = err(&app, &token, "move_note", json!({"vault": V, "from": "Docs/Target.md", "to": "C.md"})).await;
    assert_eq!(e["code"], "note_exists");
    let e = err(&app, &token, "move_note", json!({"vault": V, "from": "Nope.md", "to": "Z.md"})).await;
    assert_eq!(e["code"], "note_not_found");
    let e = err(
        &app,
        &token,
        "move_note",
        json!({"vault": V, "from": "Docs/Target.md", "to": "Z.md", "prev_hash": obsidian_tc::sync::sha256_hex(b"old")}),
    )
    .await;
    assert_eq!(e["code"], "concurrent_modification");
    let after: Vec<Option<String>> =
        futures::future::join_all(["Docs/Target.md", "A.md", "Deep/B.md"].map(|p| text(&app, &token, p))).await;
    assert_eq!(before, after);
    assert_eq!(text(&app, &token, "Docs/Report (final).md").await, None);

    // Without update_backlinks only the note moves.
    let moved = ok(
        &app,
        &token,
        "move_note",
        json!({"vault": V, "from": "Docs/Target.md", "to": "Docs/Report (final).md", "update_backlinks": false}),
    )
    .await;
    assert_eq!(moved["backlinks_updated"], json!({"notes": 0, "links": 0}));
    assert_eq!(text(&app, &token, "A.md").await.as_deref(), Some(A));
}

#[tokio::test]
async fn a_note_the_caller_cannot_read_is_never_named_and_blocks_the_move() {
    let (app, token, _tenant) = vault(Some(vec!["Docs/**", "A.md", "C.md", "Other.md"])).await;
    let e = err(&app, &token, "move_note", json!({"vault": V, "from": "Docs/Target.md", "to": "Docs/Moved.md"})).await;
    assert_eq!(e["code"], "invalid_input", "{e}");
    assert_eq!(e["details"]["hidden_notes"], Value::Bool(true));
    assert!(!e.to_string().contains("Deep/B"), "the hidden note is never named: {e}");
    assert!(text(&app, &token, "Docs/Target.md").await.is_some());
    // A note no hidden note links to moves fine.
    ok(&app, &token, "move_note", json!({"vault": V, "from": "C.md", "to": "Docs/C.md"})).await;
}
