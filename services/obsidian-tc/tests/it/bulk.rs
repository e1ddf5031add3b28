//! rewrite_link, the bulk tools and the attachment write tools through MCP: dry runs preview
//! exactly what a real run does, every batch is all-or-nothing, and each refuses what it must.

use base64::Engine;
use serde_json::json;

use crate::index::commit;
use crate::write::{V, err, ok, setup_with, text};

#[tokio::test]
async fn rewrite_link_previews_then_rewrites_and_refuses_targets_that_are_not_one_link() {
    let (app, token) = setup_with(true, None).await;
    commit(
        &app,
        &token,
        V,
        &[
            ("A.md", Some("[[Old]] and [[Old#Part|alias]] and ![[Old]]\n")),
            ("Sub/B.md", Some("---\nrel: \"[[old]]\"\n---\n[[Old.md]]\n")),
            ("C.md", Some("[[Older]] stays\n")),
        ],
    )
    .await;
    let dry = ok(
        &app,
        &token,
        "rewrite_link",
        json!({"vault": V, "from_target": "Old", "to_target": "New", "dry_run": true}),
    )
    .await;
    assert_eq!((dry["notes_changed"].as_u64(), dry["links_rewritten"].as_u64()), (Some(2), Some(5)), "{dry}");
    assert_eq!(
        dry["changes"][0]["links"][1],
        json!({"line": 1, "before": "[[Old#Part|alias]]", "after": "[[New#Part|alias]]"})
    );
    assert_eq!(
        text(&app, &token, "A.md").await.unwrap(),
        "[[Old]] and [[Old#Part|alias]] and ![[Old]]\n",
        "a dry run writes nothing"
    );
    // A real run needs confirmation; then the whole batch lands.
    let e = err(&app, &token, "rewrite_link", json!({"vault": V, "from_target": "Old", "to_target": "New"})).await;
    assert_eq!(e["code"], "elicit_required");
    for bad in ["x]]\ntext", "a|b"] {
        let e = err(
            &app,
            &token,
            "rewrite_link",
            json!({"vault": V, "from_target": "Old", "to_target": bad, "dry_run": true}),
        )
        .await;
        assert_eq!(e["code"], "invalid_input", "{bad:?}: {e}");
    }
    app.stop().await;

    let (app, token) = setup_with(false, None).await;
    commit(
        &app,
        &token,
        V,
        &[("A.md", Some("[[Old]] and ![[Old]]\n")), ("Sub/B.md", Some("---\nrel: \"[[old]]\"\n---\n"))],
    )
    .await;
    let real = ok(
        &app,
        &token,
        "rewrite_link",
        json!({"vault": V, "from_target": "Old", "to_target": "New", "include_embeds": false, "response_format": "concise"}),
    )
    .await;
    assert_eq!((real["notes_changed"].as_u64(), real["links_rewritten"].as_u64()), (Some(2), Some(2)));
    assert!(real.get("changes").is_none(), "concise real runs give counts");
    assert_eq!(text(&app, &token, "A.md").await.unwrap(), "[[New]] and ![[Old]]\n");
    assert_eq!(text(&app, &token, "Sub/B.md").await.unwrap(), "---\nrel: \"[[New]]\"\n---\n");
}

#[tokio::test]
async fn bulk_move_notes_is_a_dry_run_by_default_and_all_or_nothing() {
    let (app, token) = setup_with(false, None).await;
    commit(
        &app,
        &token,
        V,
        &[
            ("One.md", Some("# One\n")),
            ("Two.md", Some("# Two\n")),
            ("Hub.md", Some("[[One]] [[Two|2]] [md](One.md)\n")),
            // Once the root notes move into Done/, these shorter paths would win the bare names.
            ("X/One.md", Some("other one")),
            ("X/Two.md", Some("other two")),
        ],
    )
    .await;
    let moves = json!([{"from": "One.md", "to": "Done/One.md"}, {"from": "Two.md", "to": "Done/Two.md"}]);
    let dry = ok(&app, &token, "bulk_move_notes", json!({"vault": V, "moves": moves})).await;
    assert_eq!(dry["dry_run"], true);
    assert_eq!((dry["notes_updated"].as_u64(), dry["links_updated"].as_u64()), (Some(1), Some(3)), "{dry}");
    assert!(text(&app, &token, "One.md").await.is_some(), "a dry run moves nothing");
    // One move that cannot be proven refuses the whole batch.
    let bad = json!([{"from": "One.md", "to": "Done/One.md"}, {"from": "Two.md", "to": "Done/Two (x).md"}, ]);
    ok(&app, &token, "write_note", json!({"vault": V, "path": "Md.md", "content": "[two](Two.md)\n"})).await;
    let e = err(&app, &token, "bulk_move_notes", json!({"vault": V, "moves": bad, "dry_run": false})).await;
    assert_eq!((e["code"].as_str(), e["details"]["note"].as_str()), (Some("invalid_input"), Some("Md.md")), "{e}");
    assert!(text(&app, &token, "One.md").await.is_some(), "nothing moved");
    let e = err(
        &app,
        &token,
        "bulk_move_notes",
        json!({"vault": V, "moves": [{"from": "One.md", "to": "X.md"}, {"from": "X.md", "to": "Y.md"}]}),
    )
    .await;
    assert_eq!(e["details"]["field"], "moves");
    let e =
        err(&app, &token, "bulk_move_notes", json!({"vault": V, "moves": [{"from": "Nope.md", "to": "X.md"}]})).await;
    assert_eq!((e["code"].as_str(), e["details"]["index"].as_u64()), (Some("note_not_found"), Some(0)));

    let real = ok(&app, &token, "bulk_move_notes", json!({"vault": V, "moves": moves, "dry_run": false})).await;
    assert_eq!(real["links_updated"], 4, "Hub.md's three and Md.md's one");
    assert_eq!(text(&app, &token, "Hub.md").await.unwrap(), "[[Done/One]] [[Done/Two|2]] [md](Done/One.md)\n");
    assert_eq!(text(&app, &token, "Md.md").await.unwrap(), "[two](Done/Two.md)\n");
    assert!(text(&app, &token, "Done/Two.md").await.is_some() && text(&app, &token, "Two.md").await.is_none());
}

#[tokio::test]
async fn bulk_create_and_set_property_are_one_batch_with_per_item_results() {
    let (app, token) = setup_with(false, None).await;
    let items = json!([{"path": "B/1.md", "content": "one"}, {"path": "Plan.md", "content": "clash"}, {"path": "B/2.md", "content": "two"}]);
    let e = err(&app, &token, "bulk_create_notes", json!({"vault": V, "items": items})).await;
    assert_eq!((e["code"].as_str(), e["details"]["index"].as_u64()), (Some("note_exists"), Some(1)));
    assert!(text(&app, &token, "B/1.md").await.is_none(), "nothing written");
    let partial =
        ok(&app, &token, "bulk_create_notes", json!({"vault": V, "items": items, "stop_on_first_error": false})).await;
    assert_eq!((partial["created"].as_u64(), partial["failed"].as_u64()), (Some(2), Some(1)));
    assert_eq!(partial["results"][1]["code"], "note_exists");
    assert_eq!(text(&app, &token, "B/2.md").await.as_deref(), Some("two"));

    const BROKEN: &str = "---\nx: [\n---\n";
    ok(&app, &token, "write_note", json!({"vault": V, "path": "B/broken.md", "content": BROKEN})).await;
    let paths = json!(["B/1.md", "B/2.md", "B/broken.md"]);
    let e =
        err(&app, &token, "bulk_set_property", json!({"vault": V, "paths": paths, "key": "status", "value": "done"}))
            .await;
    assert_eq!((e["code"].as_str(), e["details"]["path"].as_str()), (Some("invalid_input"), Some("B/broken.md")));
    assert_eq!(text(&app, &token, "B/1.md").await.as_deref(), Some("one"), "nothing written");
    let done = ok(
        &app,
        &token,
        "bulk_set_property",
        json!({"vault": V, "paths": paths, "key": "status", "value": "done", "stop_on_first_error": false, "response_format": "concise"}),
    )
    .await;
    assert_eq!((done["changed"].as_u64(), done["failed"].as_u64()), (Some(2), Some(1)));
    assert_eq!(done["results"].as_array().unwrap().len(), 1, "concise lists only the failures");
    assert_eq!(text(&app, &token, "B/1.md").await.as_deref(), Some("---\nstatus: done\n---\none"));
    let again = ok(
        &app,
        &token,
        "bulk_set_property",
        json!({"vault": V, "paths": ["B/1.md"], "key": "status", "value": "done"}),
    )
    .await;
    assert_eq!(again["unchanged"], 1);
}

#[tokio::test]
async fn attachments_are_written_moved_with_their_embeds_and_deleted() {
    let (app, token) = setup_with(false, None).await;
    let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\nnot really");
    let made = ok(
        &app,
        &token,
        "write_attachment",
        json!({"vault": V, "path": "Assets/pic.png", "content": png, "mime_type": "image/png"}),
    )
    .await;
    assert_eq!((made["created"].as_bool(), made["size"].as_u64()), (Some(true), Some(18)));
    let e = err(&app, &token, "write_attachment", json!({"vault": V, "path": "Assets/pic.png", "content": png})).await;
    assert_eq!(e["code"], "note_exists");
    for (args, field) in [
        (json!({"vault": V, "path": "x.md", "content": png}), "path"),
        (json!({"vault": V, "path": "y.png", "content": "%%%"}), "content"),
        (json!({"vault": V, "path": "y.png", "content": png, "mime_type": "application/pdf"}), "mime_type"),
    ] {
        assert_eq!(err(&app, &token, "write_attachment", args).await["details"]["field"], field);
    }
    ok(
        &app,
        &token,
        "write_note",
        json!({"vault": V, "path": "Page.md", "content": "![[pic.png|200]] and ![alt](Assets/pic.png)\n"}),
    )
    .await;
    let moved =
        ok(&app, &token, "move_attachment", json!({"vault": V, "from": "Assets/pic.png", "to": "Media/photo.png"}))
            .await;
    assert_eq!(moved["references_updated"], json!({"notes": 1, "links": 2}));
    assert_eq!(text(&app, &token, "Page.md").await.unwrap(), "![[photo.png|200]] and ![alt](Media/photo.png)\n");
    let att =
        ok(&app, &token, "get_attachment", json!({"vault": V, "path": "Media/photo.png", "include_content": false}))
            .await;
    assert_eq!(att["size"], 18);
    let gone = ok(&app, &token, "delete_attachment", json!({"vault": V, "path": "Media/photo.png"})).await;
    assert_eq!(gone["still_referenced_by"], json!(["Page.md"]));
    assert_eq!(gone["trashed_to"], ".trash/Media/photo.png");
    let e = err(&app, &token, "delete_attachment", json!({"vault": V, "path": "Media/photo.png"})).await;
    assert_eq!(e["code"], "note_not_found");
}
