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
