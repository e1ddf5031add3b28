//! Markdown tables and Kanban boards through the MCP surface, on notes written the way people
//! write them: success, every error the tools raise, nothing written on a refusal, and every
//! byte outside the edited table or card unchanged.

use serde_json::json;

use crate::index::commit;
use crate::write::{V, err, ok, setup_with, text};

/// A note with prose, a fenced table that is not one, and two tables.
const TABLES: &str = "---\ntags: [inventory]\n---\n# Stock\nSome prose | with a pipe.\n\n```\n| not | a table |\n|---|---|\n```\n\n| Item | Qty | Price |\n|:-----|----:|:-----:|\n| apple | 3 | 1.20 |\n| pear | 12 | 0.80 |\n| fig | 1,200 | 2.00 |\n\nBetween the tables.\n\n| Name | Role |\n| --- | --- |\n| Ada | lead |\n| Bob | dev |\n\nTail text without a final newline";

fn outside(before: &str, after: &str, table_start: &str, table_end: &str) {
    let start = before.find(table_start).unwrap();
    assert_eq!(&after[..start], &before[..start], "bytes before the table");
    let end_before = before.rfind(table_end).unwrap();
    let end_after = after.rfind(table_end).unwrap();
    assert_eq!(&after[end_after..], &before[end_before..], "bytes after the table");
}

#[tokio::test]
async fn table_tools_edit_one_table_and_leave_every_other_byte() {
    let (app, token) = setup_with(false, Some((vec!["Plan.md", "Stock.md", "Gone.md"], vec![]))).await;
    app.seed(&token, V, &[("Stock.md", Some(TABLES)), ("Locked.md", Some(TABLES))]).await;

    // Insert a row into the second table: the first table, the fence and the prose stay.
    let row = ok(
        &app,
        &token,
        "insert_table_row",
        json!({"vault": V, "path": "Stock.md", "table_index": 1, "values": ["Cy|d", "ops"], "at": 1}),
    )
    .await;
    assert_eq!(
        (row["rows"].clone(), row["columns"].clone(), row["changed"].clone()),
        (json!(3), json!(2), json!(true))
    );
    let now = text(&app, &token, "Stock.md").await.unwrap();
    assert!(now.contains("| Ada | lead |\n| Cy\\|d | ops |\n| Bob | dev |\n\nTail text"), "{now}");
    outside(TABLES, &now, "| Name | Role |", "Tail text");

    // Sort the first table by price, numerically, descending; then by Qty (1,200 is a number).
    let sorted = ok(&app, &token, "sort_table_by_column", json!({"vault": V, "path": "Stock.md", "column": "qty", "order": "desc", "numeric": true, "prev_hash": row["content_hash"]})).await;
    assert_eq!((sorted["rows"].clone(), sorted["columns"].clone()), (json!(3), json!(3)));
    let now2 = text(&app, &token, "Stock.md").await.unwrap();
    let rows: Vec<&str> = now2
        .lines()
        .filter(|l| l.starts_with("| apple") || l.starts_with("| pear") || l.starts_with("| fig"))
        .collect();
    assert_eq!(rows, ["| fig | 1,200 | 2.00 |", "| pear | 12 | 0.80 |", "| apple | 3 | 1.20 |"]);
    outside(&now, &now2, "| Item | Qty | Price |", "\nBetween the tables.");
    assert!(now2.contains("```\n| not | a table |\n|---|---|\n```"), "the fenced table is untouched");

    // A column, then alignment: every cell padded, the colons kept.
    ok(
        &app,
        &token,
        "insert_table_column",
        json!({"vault": V, "path": "Stock.md", "header": "Origin", "values": ["ES", "PT"], "at": 1, "align": "center"}),
    )
    .await;
    let formatted = ok(&app, &token, "format_table", json!({"vault": V, "path": "Stock.md"})).await;
    assert_eq!(formatted["columns"], 4);
    let now3 = text(&app, &token, "Stock.md").await.unwrap();
    assert!(
        now3.contains(
            "| Item  | Origin |   Qty | Price |\n| :---- | :----: | ----: | :---: |\n| fig   |   ES   | 1,200 | 2.00  |"
        ),
        "{now3}"
    );
    outside(&now2, &now3, "| Item", "\nBetween the tables.");
    // Formatting an aligned table again changes nothing.
    let again = ok(&app, &token, "format_table", json!({"vault": V, "path": "Stock.md", "table_index": 0})).await;
    assert_eq!(
        (again["changed"].clone(), again["content_hash"].clone()),
        (json!(false), formatted["content_hash"].clone())
    );

    // Refusals write nothing.
    let before = text(&app, &token, "Stock.md").await.unwrap();
    let refusals = [
        ("format_table", json!({"vault": V, "path": "Stock.md", "table_index": 2}), "invalid_input", "table_index"),
        (
            "insert_table_row",
            json!({"vault": V, "path": "Stock.md", "values": ["a", "b", "c", "d", "e"]}),
            "invalid_input",
            "values",
        ),
        (
            "insert_table_row",
            json!({"vault": V, "path": "Stock.md", "values": ["two\nlines"]}),
            "invalid_input",
            "values",
        ),
        ("insert_table_row", json!({"vault": V, "path": "Stock.md", "values": ["a"], "at": 9}), "invalid_input", "at"),
        (
            "insert_table_column",
            json!({"vault": V, "path": "Stock.md", "header": "X", "values": ["1", "2", "3", "4"]}),
            "invalid_input",
            "values",
        ),
        (
            "sort_table_by_column",
            json!({"vault": V, "path": "Stock.md", "column": "Weight"}),
            "invalid_input",
            "column",
        ),
        (
            "sort_table_by_column",
            json!({"vault": V, "path": "Stock.md", "column": "Qty", "order": "sideways"}),
            "validation_error",
            "order",
        ),
        (
            "format_table",
            json!({"vault": V, "path": "Stock.md", "prev_hash": row["content_hash"]}),
            "concurrent_modification",
            "",
        ),
        ("format_table", json!({"vault": V, "path": "Gone.md"}), "note_not_found", ""),
        ("format_table", json!({"vault": V, "path": "Locked.md"}), "acl_denied", "path"),
        ("format_table", json!({"vault": "Elsewhere", "path": "Stock.md"}), "vault_not_found", ""),
    ];
    for (tool, args, code, field) in refusals {
        let e = err(&app, &token, tool, args.clone()).await;
        assert_eq!(e["code"], code, "{tool} {args}: {e}");
        if !field.is_empty() {
            assert_eq!(e["details"]["field"], field, "{tool} {args}: {e}");
        }
    }
    assert_eq!(text(&app, &token, "Stock.md").await.unwrap(), before, "no refusal wrote");
    assert_eq!(text(&app, &token, "Locked.md").await.unwrap(), TABLES);
    let plain = err(&app, &token, "format_table", json!({"vault": V, "path": "Plan.md"})).await;
    assert_eq!(
        (plain["code"].clone(), plain["details"]["field"].clone()),
        (json!("invalid_input"), json!("table_index"))
    );
}

const BOARD: &str = "---\n\nkanban-plugin: board\n\n---\n\n## Todo\n\n- [ ] Write the spec\n- [ ] Review [[Plan]] @{2026-12-10}\n\tsecond line of the card\n\n## Doing (2)\n\n- [ ] Ship it\n\n## Done\n\n**Complete**\n- [x] Kickoff\n\n***\n\n## Archive\n\n- [x] Old card\n\n%% kanban:settings\n```\n{\"kanban-plugin\":\"board\",\"list-collapse\":[false,false,false]}\n```\n%%";

#[tokio::test]
async fn kanban_tools_list_read_add_and_move_cards_leaving_the_rest_of_the_board() {
    let (app, token) = setup_with(false, None).await;
    commit(&app, &token, V, &[("Boards/Sprint.md", Some(BOARD)), ("Boards/Notes.md", Some("# Not a board\n"))]).await;

    let listed = ok(&app, &token, "list_kanban_boards", json!({"vault": V})).await;
    assert_eq!(listed["boards"], json!(["Boards/Sprint.md"]));
    let none = ok(&app, &token, "list_kanban_boards", json!({"vault": V, "folder": "Elsewhere"})).await;
    assert_eq!(none["boards"], json!([]));

    let board = ok(&app, &token, "read_kanban_board", json!({"vault": V, "path": "Boards/Sprint.md"})).await;
    let titles: Vec<&str> = board["lanes"].as_array().unwrap().iter().map(|l| l["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["Todo", "Doing (2)", "Done"]);
    assert_eq!(board["lanes"][0]["cards"][1]["text"], "Review [[Plan]] @{2026-12-10}\nsecond line of the card");
    assert_eq!(
        (board["lanes"][1]["max_items"].clone(), board["lanes"][2]["complete"].clone()),
        (json!(2), json!(true))
    );
    assert_eq!(board["archive"][0]["text"], "Old card");

    let added = ok(&app, &token, "add_kanban_card", json!({"vault": V, "path": "Boards/Sprint.md", "column": "doing", "text": "Fix the build", "prev_hash": board["content_hash"]})).await;
    assert_eq!((added["column"].clone(), added["position"].clone()), (json!("Doing (2)"), json!(1)));
    let now = text(&app, &token, "Boards/Sprint.md").await.unwrap();
    assert_eq!(now, BOARD.replace("- [ ] Ship it\n", "- [ ] Ship it\n- [ ] Fix the build\n"));

    // Into the Complete lane: checked, its continuation line carried along.
    let moved = ok(&app, &token, "move_kanban_card", json!({"vault": V, "path": "Boards/Sprint.md", "from_column": "Todo", "to_column": "Done", "card_text": "Review"})).await;
    assert_eq!(
        (moved["to_column"].clone(), moved["position"].clone(), moved["changed"].clone()),
        (json!("Done"), json!(1), json!(true))
    );
    let after = text(&app, &token, "Boards/Sprint.md").await.unwrap();
    let expected = now
        .replace("- [ ] Review [[Plan]] @{2026-12-10}\n\tsecond line of the card\n", "")
        .replace("- [x] Kickoff\n", "- [x] Kickoff\n- [x] Review [[Plan]] @{2026-12-10}\n\tsecond line of the card\n");
    assert_eq!(after, expected);
    // The board's link still counts as a link of the note.
    let links = ok(&app, &token, "get_outgoing_links", json!({"vault": V, "path": "Boards/Sprint.md"})).await;
    assert!(links.to_string().contains("Plan.md"), "{links}");

    let refusals = [
        ("read_kanban_board", json!({"vault": V, "path": "Boards/Notes.md"}), "invalid_input", "path"),
        (
            "add_kanban_card",
            json!({"vault": V, "path": "Boards/Sprint.md", "column": "Later", "text": "x"}),
            "invalid_input",
            "column",
        ),
        (
            "add_kanban_card",
            json!({"vault": V, "path": "Boards/Sprint.md", "column": "Todo", "text": " "}),
            "invalid_input",
            "text",
        ),
        (
            "move_kanban_card",
            json!({"vault": V, "path": "Boards/Sprint.md", "from_column": "Todo", "to_column": "Nowhere", "card_text": "Write"}),
            "invalid_input",
            "to_column",
        ),
        (
            "move_kanban_card",
            json!({"vault": V, "path": "Boards/Sprint.md", "from_column": "Nowhere", "to_column": "Done", "card_text": "Write"}),
            "invalid_input",
            "from_column",
        ),
        (
            "move_kanban_card",
            json!({"vault": V, "path": "Boards/Sprint.md", "from_column": "Todo", "to_column": "Done", "card_text": "Missing"}),
            "invalid_input",
            "card_text",
        ),
        (
            "move_kanban_card",
            json!({"vault": V, "path": "Boards/Sprint.md", "from_column": "Todo", "to_column": "Done", "card_text": "Write", "prev_hash": added["content_hash"]}),
            "concurrent_modification",
            "",
        ),
        (
            "add_kanban_card",
            json!({"vault": V, "path": "Boards/Gone.md", "column": "Todo", "text": "x"}),
            "note_not_found",
            "",
        ),
    ];
    for (tool, args, code, field) in refusals {
        let e = err(&app, &token, tool, args.clone()).await;
        assert_eq!(e["code"], code, "{tool} {args}: {e}");
        if !field.is_empty() {
            assert_eq!(e["details"]["field"], field, "{tool} {args}: {e}");
        }
    }
    assert_eq!(text(&app, &token, "Boards/Sprint.md").await.unwrap(), after, "no refusal wrote");
    let same = ok(&app, &token, "move_kanban_card", json!({"vault": V, "path": "Boards/Sprint.md", "from_column": "Done", "to_column": "done", "card_text": "Kickoff"})).await;
    assert_eq!(same["changed"], false);
}

/// The JSON Canvas project's own sample (corpus/jsoncanvas, MIT), in the layout Obsidian writes.
const SAMPLE_CANVAS: &str = include_str!("../../../../corpus/jsoncanvas/sample.canvas");

#[tokio::test]
async fn canvas_tools_read_query_create_and_update_in_obsidians_layout() {
    let (app, token) = setup_with(false, None).await;
    commit(&app, &token, V, &[("Maps/sample.canvas", Some(SAMPLE_CANVAS)), ("Maps/broken.canvas", Some("{not json"))])
        .await;

    let concise = ok(
        &app,
        &token,
        "read_canvas",
        json!({"vault": V, "path": "Maps/sample.canvas", "response_format": "concise"}),
    )
    .await;
    assert_eq!(concise["nodes"].as_array().unwrap().len(), 5);
    assert_eq!(
        concise["nodes"][1],
        json!({"id": "8132d4d894c80022", "type": "file", "file": "readme.md", "color": "6"})
    );
    assert_eq!(
        concise["edges"][0],
        json!({"id": "6fa11ab87f90b8af", "fromNode": "7efdbbe0c4742315", "toNode": "59e896bc8da20699"})
    );
    assert!(concise.get("node_count").is_none());
    let detailed = ok(
        &app,
        &token,
        "read_canvas",
        json!({"vault": V, "path": "Maps/sample.canvas", "response_format": "detailed"}),
    )
    .await;
    assert_eq!((detailed["node_count"].clone(), detailed["edge_count"].clone()), (json!(5), json!(1)));
    assert_eq!(detailed["nodes"][0]["width"], 610);
    assert!(detailed.get("problems").is_none(), "the sample keeps every rule: {detailed}");

    let found = ok(&app, &token, "query_canvas", json!({"vault": V, "filter": {"type": "file"}})).await;
    assert_eq!((found["total"].clone(), found["unreadable"].clone()), (json!(3), json!(["Maps/broken.canvas"])));
    let inside = ok(
        &app,
        &token,
        "query_canvas",
        json!({"vault": V, "paths": ["Maps/sample.canvas"], "filter": {"in_group": "754a8ef995f366bc"}}),
    )
    .await;
    let ids: Vec<&str> = inside["matches"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["7efdbbe0c4742315", "59e896bc8da20699"]);
    let paged = ok(&app, &token, "query_canvas", json!({"vault": V, "limit": 2})).await;
    let rest = ok(&app, &token, "query_canvas", json!({"vault": V, "limit": 2, "cursor": paged["next_cursor"]})).await;
    assert_eq!(paged["matches"].as_array().unwrap().len() + rest["matches"].as_array().unwrap().len(), 4);

    // An update touches only what it names: the other nodes keep their bytes.
    let updated = ok(&app, &token, "update_canvas", json!({
        "vault": V, "path": "Maps/sample.canvas", "prev_hash": detailed["content_hash"],
        "add_nodes": [{"type": "text", "text": "New idea [[readme]]", "x": 400, "y": 0, "width": 200, "height": 100}],
        "update_nodes": [{"id": "8132d4d894c80022", "color": null}],
        "remove_node_ids": ["7efdbbe0c4742315"]
    })).await;
    assert_eq!(
        (
            updated["nodes_added"].clone(),
            updated["nodes_removed"].clone(),
            updated["nodes_updated"].clone(),
            updated["edges_removed_with_nodes"].clone()
        ),
        (json!(1), json!(1), json!(1), json!(1))
    );
    let now = text(&app, &token, "Maps/sample.canvas").await.unwrap();
    let group_line = SAMPLE_CANVAS.lines().find(|l| l.contains("754a8ef995f366bc")).unwrap();
    assert!(now.contains(group_line), "an untouched node keeps its line: {now}");
    assert!(now.contains("\"text\":\"New idea [[readme]]\"") && !now.contains("7efdbbe0c4742315"), "{now}");
    assert!(!now.contains("\"color\":\"6\""));

    let made = ok(
        &app,
        &token,
        "create_canvas",
        json!({"vault": V, "path": "Maps/new.canvas",
        "nodes": [{"id": "a", "type": "text", "text": "A", "x": 0, "y": 0, "width": 100, "height": 50},
                  {"type": "file", "file": "Plan.md", "x": 200, "y": 0, "width": 100, "height": 50}],
        "edges": [{"fromNode": "a", "toNode": "a"}]}),
    )
    .await;
    assert_eq!(
        (made["nodes"].clone(), made["edges"].clone(), made["ids_generated"].clone(), made["created"].clone()),
        (json!(2), json!(1), json!(2), json!(true))
    );
    let written = text(&app, &token, "Maps/new.canvas").await.unwrap();
    assert!(
        written.starts_with("{\n\t\"nodes\":[\n\t\t{\"id\":\"a\",\"type\":\"text\",\"text\":\"A\",\"x\":0"),
        "{written}"
    );

    let refusals = [
        ("read_canvas", json!({"vault": V, "path": "Plan.md"}), "invalid_input", "path"),
        ("read_canvas", json!({"vault": V, "path": "Maps/broken.canvas"}), "invalid_input", "path"),
        ("create_canvas", json!({"vault": V, "path": "Maps/new.canvas"}), "note_exists", ""),
        (
            "create_canvas",
            json!({"vault": V, "path": "Maps/bad.canvas", "nodes": [{"type": "text", "x": 0, "y": 0, "width": 1, "height": 1}]}),
            "invalid_input",
            "nodes",
        ),
        ("create_canvas", json!({"vault": V, "path": "Maps/bad#name.canvas"}), "invalid_input", "path"),
        (
            "update_canvas",
            json!({"vault": V, "path": "Maps/new.canvas", "remove_node_ids": ["zzz"]}),
            "invalid_input",
            "remove_node_ids",
        ),
        (
            "update_canvas",
            json!({"vault": V, "path": "Maps/new.canvas", "add_edges": [{"fromNode": "a", "toNode": "nowhere"}]}),
            "invalid_input",
            "canvas",
        ),
        (
            "update_canvas",
            json!({"vault": V, "path": "Maps/new.canvas", "add_nodes": [], "prev_hash": updated["content_hash"]}),
            "concurrent_modification",
            "",
        ),
        ("update_canvas", json!({"vault": V, "path": "Maps/none.canvas"}), "note_not_found", ""),
    ];
    for (tool, args, code, field) in refusals {
        let e = err(&app, &token, tool, args.clone()).await;
        assert_eq!(e["code"], code, "{tool} {args}: {e}");
        if !field.is_empty() {
            assert_eq!(e["details"]["field"], field, "{tool} {args}: {e}");
        }
    }
    assert_eq!(text(&app, &token, "Maps/new.canvas").await.unwrap(), written, "no refusal wrote");
    assert_eq!(text(&app, &token, "Maps/bad.canvas").await, None);
}

#[tokio::test]
async fn excalidraw_tools_create_read_and_update_drawings() {
    let (app, token) = setup_with(false, None).await;
    let made = ok(
        &app,
        &token,
        "create_excalidraw",
        json!({"vault": V, "path": "Drawings/Flow.excalidraw.md",
        "elements": [{"type": "rectangle", "x": 0, "y": 0, "width": 120, "height": 60},
                     {"type": "text", "x": 10, "y": 10, "text": "Start here", "link": "[[Plan]]"}]}),
    )
    .await;
    assert_eq!((made["elements"].clone(), made["created"].clone()), (json!(2), json!(true)));
    let ids: Vec<String> =
        made["added_ids"].as_array().unwrap().iter().map(|i| i.as_str().unwrap().to_string()).collect();
    let file = text(&app, &token, "Drawings/Flow.excalidraw.md").await.unwrap();
    assert!(file.contains("excalidraw-plugin: parsed") && file.contains("```compressed-json"), "{file}");
    assert!(file.contains(&format!("Start here ^{}", ids[1])), "the Text Elements section: {file}");

    let read = ok(&app, &token, "read_excalidraw", json!({"vault": V, "path": "Drawings/Flow.excalidraw.md"})).await;
    assert_eq!(
        (read["elements"].clone(), read["by_type"].clone(), read["compressed"].clone()),
        (json!(2), json!({"rectangle": 1, "text": 1}), json!(true))
    );
    assert_eq!(read["texts"], json!([{"id": ids[1], "text": "Start here"}]));
    assert_eq!(read["links"], json!(["[[Plan]]"]));
    assert!(read.get("scene").is_none());
    let scene = ok(
        &app,
        &token,
        "read_excalidraw",
        json!({"vault": V, "path": "Drawings/Flow.excalidraw.md", "format": "scene"}),
    )
    .await;
    assert_eq!(scene["scene"]["elements"].as_array().unwrap().len(), 2);

    let changed = ok(
        &app,
        &token,
        "update_excalidraw",
        json!({"vault": V, "path": "Drawings/Flow.excalidraw.md", "prev_hash": read["content_hash"],
        "add_elements": [{"type": "ellipse", "x": 200, "y": 0, "width": 50, "height": 50}],
        "remove_element_ids": [ids[0]],
        "update_elements": [{"id": ids[1], "text": "Begin"}],
        "update_app_state": {"viewBackgroundColor": "#fafafa"}}),
    )
    .await;
    assert_eq!(
        (changed["added"].clone(), changed["removed"].clone(), changed["updated"].clone()),
        (json!(1), json!(1), json!(1))
    );
    let after = ok(
        &app,
        &token,
        "read_excalidraw",
        json!({"vault": V, "path": "Drawings/Flow.excalidraw.md", "format": "scene"}),
    )
    .await;
    assert_eq!(after["by_type"], json!({"ellipse": 1, "text": 1}));
    assert_eq!(after["texts"][0]["text"], "Begin");
    assert_eq!(after["scene"]["appState"]["viewBackgroundColor"], "#fafafa");

    let refusals = [
        ("create_excalidraw", json!({"vault": V, "path": "Drawings/X.md"}), "invalid_input", "path"),
        ("create_excalidraw", json!({"vault": V, "path": "Drawings/Flow.excalidraw.md"}), "note_exists", ""),
        (
            "create_excalidraw",
            json!({"vault": V, "path": "Drawings/Y.excalidraw.md", "elements": [{"type": "hexagon"}]}),
            "invalid_input",
            "add_elements",
        ),
        ("read_excalidraw", json!({"vault": V, "path": "Plan.md"}), "invalid_input", "path"),
        (
            "read_excalidraw",
            json!({"vault": V, "path": "Drawings/Flow.excalidraw.md", "source": "companion"}),
            "plugin_unavailable",
            "",
        ),
        (
            "update_excalidraw",
            json!({"vault": V, "path": "Drawings/Flow.excalidraw.md", "remove_element_ids": ["nope"]}),
            "invalid_input",
            "remove_element_ids",
        ),
        (
            "update_excalidraw",
            json!({"vault": V, "path": "Drawings/Flow.excalidraw.md", "prev_hash": read["content_hash"]}),
            "concurrent_modification",
            "",
        ),
    ];
    for (tool, args, code, field) in refusals {
        let e = err(&app, &token, tool, args.clone()).await;
        assert_eq!(e["code"], code, "{tool} {args}: {e}");
        if !field.is_empty() {
            assert_eq!(e["details"]["field"], field, "{tool} {args}: {e}");
        }
    }
    assert_eq!(text(&app, &token, "Drawings/Y.excalidraw.md").await, None);
}

const TASKS: &str = "# Work\n- [ ] Write report 📅 2020-01-10 #work\n- [x] Kickoff ✅ 2020-01-01\n## Chores\n- [ ] Water plants 🔁 every week 📅 2020-01-06\n- [/] Fix bike ⏫ #home/garage\n  - [ ] nested step\nnot a task\n";

#[tokio::test]
async fn task_tools_list_query_and_update_tasks_in_the_plugins_format() {
    let (app, token) = setup_with(false, None).await;
    commit(&app, &token, V, &[("Todo.md", Some(TASKS)), ("Other/More.md", Some("- [ ] Call Ada 📅 2099-01-01 🔼\n"))])
        .await;

    let all = ok(&app, &token, "list_tasks", json!({"vault": V})).await;
    assert_eq!(all["total"], 6);
    let overdue = ok(&app, &token, "list_tasks", json!({"vault": V, "due": "overdue"})).await;
    let names: Vec<&str> =
        overdue["tasks"].as_array().unwrap().iter().map(|t| t["description"].as_str().unwrap()).collect();
    assert_eq!(names, ["Write report #work", "Water plants"]);
    assert_eq!(
        overdue["tasks"][0],
        json!({"path": "Todo.md", "line": 1, "status": " ", "status_type": "TODO", "description": "Write report #work", "due": "2020-01-10", "tags": ["work"], "heading": "Work"})
    );
    let home = ok(&app, &token, "list_tasks", json!({"vault": V, "tags": ["#home"], "status": "in_progress"})).await;
    assert_eq!((home["total"].clone(), home["tasks"][0]["priority"].clone()), (json!(1), json!("high")));
    let done = ok(&app, &token, "list_tasks", json!({"vault": V, "status": "done", "root": "Other"})).await;
    assert_eq!(done["total"], 0);
    let page = ok(&app, &token, "list_tasks", json!({"vault": V, "limit": 4})).await;
    let next = ok(&app, &token, "list_tasks", json!({"vault": V, "limit": 4, "cursor": page["next_cursor"]})).await;
    assert_eq!((page["tasks"].as_array().unwrap().len(), next["tasks"].as_array().unwrap().len()), (4, 2));

    let query = ok(&app, &token, "tasks_filter", json!({"vault": V, "filter": "not done\n(due before 2021-01-01) OR (priority is above medium)\nhide edit button", "sort_by": "due", "group_by": "filename"})).await;
    let got: Vec<(String, String)> = query["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["group"].as_str().unwrap().to_string(), t["description"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(
        got,
        [
            ("Todo".to_string(), "Water plants".to_string()),
            ("Todo".to_string(), "Write report #work".to_string()),
            ("Todo".to_string(), "Fix bike #home/garage".to_string())
        ]
    );
    assert_eq!((query["total"].clone(), query["ignored"].clone()), (json!(3), json!(["hide edit button"])));

    // Completing a recurring task writes its next occurrence above it, as the plugin does.
    let before = text(&app, &token, "Todo.md").await.unwrap();
    let toggled =
        ok(&app, &token, "update_task", json!({"vault": V, "path": "Todo.md", "line": 4, "set": {"toggle": true}}))
            .await;
    let today = chrono::Utc::now().date_naive().to_string();
    assert_eq!(
        (toggled["before"]["status"].clone(), toggled["after"]["status"].clone(), toggled["after"]["done"].clone()),
        (json!(" "), json!("x"), json!(today))
    );
    assert_eq!(toggled["next"]["due"], "2020-01-13");
    let after = text(&app, &token, "Todo.md").await.unwrap();
    let expected = before.replace(
        "- [ ] Water plants 🔁 every week 📅 2020-01-06\n",
        &format!("- [ ] Water plants 🔁 every week 📅 2020-01-13\n- [x] Water plants 🔁 every week 📅 2020-01-06 ✅ {today}\n"),
    );
    assert_eq!(after, expected);
    let dated = ok(
        &app,
        &token,
        "update_task",
        json!({"vault": V, "path": "Todo.md", "line": 7, "set": {"due": "2030-05-01", "priority": "low"}}),
    )
    .await;
    assert_eq!(
        (dated["after"]["due"].clone(), dated["after"]["priority"].clone()),
        (json!("2030-05-01"), json!("low"))
    );
    assert!(text(&app, &token, "Todo.md").await.unwrap().contains("  - [ ] nested step 🔽 📅 2030-05-01\n"));

    let refusals = [
        (
            "update_task",
            json!({"vault": V, "path": "Todo.md", "line": 0, "set": {"toggle": true}}),
            "invalid_input",
            "line",
        ),
        (
            "update_task",
            json!({"vault": V, "path": "Todo.md", "line": 99, "set": {"toggle": true}}),
            "invalid_input",
            "line",
        ),
        (
            "update_task",
            json!({"vault": V, "path": "Todo.md", "line": 1, "set": {"due": "soon"}}),
            "invalid_input",
            "set",
        ),
        ("update_task", json!({"vault": V, "path": "Gone.md", "line": 1}), "note_not_found", ""),
        ("tasks_filter", json!({"vault": V, "filter": "due whenever it suits"}), "invalid_input", "filter"),
        ("list_tasks", json!({"vault": V, "priority": "urgent"}), "invalid_input", "priority"),
        ("list_tasks", json!({"vault": V, "due": "someday"}), "invalid_input", "due"),
    ];
    for (tool, args, code, field) in refusals {
        let e = err(&app, &token, tool, args.clone()).await;
        assert_eq!(e["code"], code, "{tool} {args}: {e}");
        if !field.is_empty() {
            assert_eq!(e["details"]["field"], field, "{tool} {args}: {e}");
        }
    }
}
