//! Canvas file nodes and the links inside text nodes count as links in the index (backlinks,
//! orphans, unresolved links, a rebuild), and a move rewrites them in the canvas, proven, in the
//! move's one batch, the rest of the file byte for byte.

use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp};
use crate::index::commit;
use crate::write::{ok, text};

const V: &str = "Notes";

/// A canvas in Obsidian's own layout (tabs): a file node, a file node with a subpath, a text
/// node with a path link and a bare link, a link node, a group and an edge.
const BOARD: &str = "{\n\t\"nodes\":[\n\t\t{\"id\":\"a1\",\"type\":\"file\",\"file\":\"Docs/Spec.md\",\"x\":0,\"y\":0,\"width\":400,\"height\":300},\n\t\t{\"id\":\"a2\",\"type\":\"file\",\"file\":\"Docs/Spec.md\",\"subpath\":\"#Scope\",\"x\":500,\"y\":0,\"width\":400,\"height\":300},\n\t\t{\"id\":\"t1\",\"type\":\"text\",\"text\":\"See [[Docs/Plan]] and [[Idea]].\\nAlso [[Ghost]].\",\"x\":0,\"y\":400,\"width\":300,\"height\":120,\"color\":\"4\"},\n\t\t{\"id\":\"l1\",\"type\":\"link\",\"url\":\"https://jsoncanvas.org\",\"x\":500,\"y\":400,\"width\":300,\"height\":120},\n\t\t{\"id\":\"m1\",\"type\":\"file\",\"file\":\"Missing.md\",\"x\":900,\"y\":400,\"width\":300,\"height\":120}\n\t],\n\t\"edges\":[\n\t\t{\"id\":\"e1\",\"fromNode\":\"a1\",\"fromSide\":\"right\",\"toNode\":\"a2\",\"toSide\":\"left\"}\n\t]\n}";

fn sources(out: &Value) -> Vec<String> {
    let mut found: Vec<String> = out["backlinks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["source_path"].as_str().unwrap_or_default().to_string())
        .collect();
    found.dedup();
    found
}

#[tokio::test]
async fn canvas_nodes_are_links_and_a_move_rewrites_them() {
    let app = TestApp::spawn_with(|c| c.tools.confirm_destructive = false).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    commit(
        &app,
        &token,
        V,
        &[
            ("Docs/Spec.md", Some("# Spec\n## Scope\nall\n")),
            ("Docs/Plan.md", Some("plan\n")),
            ("Idea.md", Some("idea\n")),
            ("Lonely.md", Some("nobody links here\n")),
            ("Boards/Board.canvas", Some(BOARD)),
        ],
    )
    .await;

    let spec =
        ok(&app, &token, "get_backlinks", json!({"vault": V, "path": "Docs/Spec.md", "response_format": "detailed"}))
            .await;
    assert_eq!(sources(&spec), ["Boards/Board.canvas"], "{spec}");
    assert_eq!(spec["backlinks"].as_array().unwrap().len(), 2, "{spec}");
    let plan =
        ok(&app, &token, "get_backlinks", json!({"vault": V, "path": "Docs/Plan.md", "response_format": "detailed"}))
            .await;
    assert_eq!(sources(&plan), ["Boards/Board.canvas"], "{plan}");
    let idea =
        ok(&app, &token, "get_backlinks", json!({"vault": V, "path": "Idea.md", "response_format": "detailed"})).await;
    assert_eq!(sources(&idea), ["Boards/Board.canvas"], "{idea}");
    // Notes only a canvas shows are no orphans.
    let orphans = ok(&app, &token, "find_orphans", json!({"vault": V})).await;
    let orphans: Vec<&str> = orphans["orphans"].as_array().unwrap().iter().map(|o| o.as_str().unwrap()).collect();
    assert!(
        orphans.contains(&"Lonely.md") && !orphans.contains(&"Docs/Spec.md") && !orphans.contains(&"Idea.md"),
        "{orphans:?}"
    );
    // A file node or text link to nothing is an unresolved link of the canvas.
    let unresolved =
        ok(&app, &token, "find_unresolved_links", json!({"vault": V, "response_format": "detailed"})).await;
    let text_of = unresolved.to_string();
    assert!(
        text_of.contains("Missing.md") && text_of.contains("Ghost") && text_of.contains("Boards/Board.canvas"),
        "{unresolved}"
    );

    // A rebuild writes them again (emptied first, so the rebuild is what brings them back).
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let vault = tx.list_vaults().await.unwrap().into_iter().find(|v| v.name == V).unwrap();
    tx.replace_file_links(vault.id, &[("Boards/Board.canvas".to_string(), Vec::new())]).await.unwrap();
    tx.commit().await.unwrap();
    let none = ok(&app, &token, "get_backlinks", json!({"vault": V, "path": "Docs/Spec.md"})).await;
    assert_eq!(none["backlinks"], json!([]));
    ok(&app, &token, "index_vault", json!({"vault": V})).await;
    let spec = ok(&app, &token, "get_backlinks", json!({"vault": V, "path": "Docs/Spec.md"})).await;
    assert_eq!(spec["backlinks"].as_array().unwrap().len(), 2, "{spec}");

    // Moving the note a file node shows rewrites the node's path (both nodes, the subpath
    // kept) and nothing else in the file.
    let moved = ok(
        &app,
        &token,
        "move_note",
        json!({"vault": V, "from": "Docs/Spec.md", "to": "Archive/Spec v2.md", "update_backlinks": true}),
    )
    .await;
    assert_eq!(moved["backlinks_updated"], json!({"notes": 1, "links": 2}), "{moved}");
    let board = text(&app, &token, "Boards/Board.canvas").await.unwrap();
    assert_eq!(board, BOARD.replace("\"file\":\"Docs/Spec.md\"", "\"file\":\"Archive/Spec v2.md\""));
    // And the note a text node links to by path: the link inside the node's text is rewritten.
    ok(
        &app,
        &token,
        "move_note",
        json!({"vault": V, "from": "Docs/Plan.md", "to": "Plans/Plan.md", "update_backlinks": true}),
    )
    .await;
    let board = text(&app, &token, "Boards/Board.canvas").await.unwrap();
    assert_eq!(
        board,
        BOARD
            .replace("\"file\":\"Docs/Spec.md\"", "\"file\":\"Archive/Spec v2.md\"")
            .replace("[[Docs/Plan]]", "[[Plans/Plan]]")
    );
    let plan = ok(&app, &token, "get_backlinks", json!({"vault": V, "path": "Plans/Plan.md"})).await;
    assert_eq!(sources(&plan), ["Boards/Board.canvas"]);
    let spec = ok(&app, &token, "get_backlinks", json!({"vault": V, "path": "Archive/Spec v2.md"})).await;
    assert_eq!(spec["backlinks"].as_array().unwrap().len(), 2, "{spec}");
    // A literal retarget (rewrite_link) leaves canvases alone: their links are JSON.
    let board_before = text(&app, &token, "Boards/Board.canvas").await.unwrap();
    ok(
        &app,
        &token,
        "rewrite_link",
        json!({"vault": V, "from_target": "Idea", "to_target": "Idea2", "dry_run": false}),
    )
    .await;
    assert_eq!(text(&app, &token, "Boards/Board.canvas").await.unwrap(), board_before);
    // The canvas still reads as the same canvas.
    let read = ok(&app, &token, "read_canvas", json!({"vault": V, "path": "Boards/Board.canvas"})).await;
    assert_eq!(read["nodes"].as_array().unwrap().len(), 5, "{read}");
}
