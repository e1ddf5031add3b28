//! `/mcp/compat/obsidian`: the 14-tool server's obsidian_* tools, tested from its documented
//! behaviour (the spec's 14-tool reference: clobber guard, upsert with created:true, section
//! modes, text search with context and cursors, JSONLogic glob and regexp taking the pattern
//! first) through a real MCP client and raw JSON-RPC.

use serde_json::{Value, json};

use crate::acl::{run, token_for};
use crate::harness::{Tenant, TestApp, Transport, python_session};
use crate::index::commit;
use crate::mcp::{call, error_of, rpc};
use crate::write::text;

const V: &str = "Notes";
const COMPAT: &str = "/mcp/compat/obsidian";

const PLAN: &str = "---\ntitle: Plan\nstatus: draft\n# a comment\ntags: [work]\nitems: [one]\n---\n# Plan\nIntro line.\n\n## Goals\nShip it. ^goal1\n\n### Detail\nMore here.\n\n## Notes\nSome #inline text.\n\n# Later\n## Notes\nSecond notes.\n";

async fn ok(app: &TestApp, token: &str, tool: &str, args: Value) -> Value {
    let result = call(app, COMPAT, token, tool, args.clone()).await;
    assert_eq!(result["isError"], false, "{tool} {args}: {result}");
    result["structuredContent"].clone()
}

async fn err(app: &TestApp, token: &str, tool: &str, args: Value) -> Value {
    let result = call(app, COMPAT, token, tool, args).await;
    error_of(&result).clone()
}

fn path(p: &str) -> Value {
    json!({"type": "path", "path": p})
}

async fn setup() -> (TestApp, String) {
    let app = TestApp::spawn_with(|c| c.tools.confirm_destructive = false).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    commit(&app, &token, V, &[("Plan.md", Some(PLAN))]).await;
    (app, token)
}

#[tokio::test]
async fn the_surface_lists_its_own_tools_through_a_real_client_and_nothing_else() {
    let (app, token) = setup().await;
    let out = python_session(
        Transport::Http { url: app.url(COMPAT), token: &token },
        json!([
            {"op": "list_tools"},
            {"op": "call", "name": "obsidian_get_note", "args": {"format": "content", "target": {"type": "path", "path": "Plan.md"}}},
            {"op": "call", "name": "read_note", "args": {"path": "Plan.md"}}
        ]),
    )
    .await;
    let names: Vec<&str> = out["results"][0].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    // The three that need a running app are hidden, as every live-app tool is by default.
    assert_eq!(
        names,
        [
            "obsidian_append_to_note",
            "obsidian_delete_note",
            "obsidian_get_note",
            "obsidian_list_notes",
            "obsidian_list_tags",
            "obsidian_manage_frontmatter",
            "obsidian_manage_tags",
            "obsidian_patch_note",
            "obsidian_replace_in_note",
            "obsidian_search_notes",
            "obsidian_write_note"
        ]
    );
    assert_eq!(out["results"][1]["structuredContent"]["result"]["content"], PLAN);
    // Catalogue tools are not on this surface, and these are not on the catalogue's.
    assert_eq!(error_of(&out["results"][2])["code"], "not_found");
    let full = rpc(&app, "/mcp/full", &token, "tools/list", json!({})).await;
    assert!(!full.to_string().contains("obsidian_get_note"));
    let elsewhere =
        call(&app, "/mcp", &token, "obsidian_get_note", json!({"format": "content", "target": path("Plan.md")})).await;
    assert_eq!(error_of(&elsewhere)["code"], "not_found");
    // Instructions speak of this surface.
    let init = rpc(
        &app,
        COMPAT,
        &token,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    )
    .await;
    assert!(init["instructions"].as_str().unwrap().contains("obsidian_get_note"), "{init}");
    // The command palette and the active file need a running app.
    let e = err(&app, &token, "obsidian_execute_command", json!({"commandId": "editor:save-file"})).await;
    assert_eq!(e["code"], "plugin_unavailable");
    assert!(e["hint"].as_str().unwrap().contains("obsidian_patch_note"), "{e}");
    let e = err(&app, &token, "obsidian_list_commands", json!({})).await;
    assert_eq!(e["code"], "plugin_unavailable");
    let e = err(&app, &token, "obsidian_open_in_ui", json!({"path": "Plan.md", "newLeaf": true})).await;
    assert_eq!(e["code"], "plugin_unavailable");
    let e = err(&app, &token, "obsidian_get_note", json!({"format": "content", "target": {"type": "active"}})).await;
    assert_eq!(
        (e["code"].clone(), e["details"]["reason"].clone()),
        (json!("plugin_unavailable"), json!("no_active_file"))
    );
    let e = err(&app, &token, "obsidian_get_note", json!({"format": "content", "target": path("a/../Plan.md")})).await;
    assert_eq!(e["details"]["reason"], "path_traversal");
}

#[tokio::test]
async fn get_note_projects_content_full_document_map_and_sections() {
    let (app, token) = setup().await;
    commit(
        &app,
        &token,
        V,
        &[(
            "Links.md",
            Some("See [[Plan#Goals|the goals]], ![[pic.png]], [web](https://x.org) and [rel](Plan.md).\n`[[Not]]`\n"),
        )],
    )
    .await;
    let full = ok(
        &app,
        &token,
        "obsidian_get_note",
        json!({"format": "full", "target": path("Links.md"), "includeLinks": true}),
    )
    .await;
    let r = &full["result"];
    assert_eq!(r["format"], "full");
    assert_eq!(
        r["outgoingLinks"],
        json!([{"target": "Plan", "type": "wikilink"}, {"target": "pic.png", "type": "wikilink"}, {"target": "Plan.md", "type": "markdown"}])
    );
    assert!(r["stat"]["mtime"].as_i64().unwrap() > 1_600_000_000_000 && r["stat"]["size"].as_i64().unwrap() > 0);
    let plain = ok(&app, &token, "obsidian_get_note", json!({"format": "full", "target": path("Plan.md")})).await;
    assert!(plain["result"].get("outgoingLinks").is_none());
    assert_eq!(plain["result"]["frontmatter"]["status"], "draft");
    assert_eq!(plain["result"]["tags"], json!(["work", "inline"]));

    let map = ok(&app, &token, "obsidian_get_note", json!({"format": "document-map", "target": path("Plan.md")})).await;
    assert_eq!(
        map["result"]["headings"],
        json!(["Plan", "Plan::Goals", "Plan::Goals::Detail", "Plan::Notes", "Later", "Later::Notes"])
    );
    assert_eq!(map["result"]["blocks"], json!(["goal1"]));
    assert_eq!(map["result"]["frontmatterFields"], json!(["title", "status", "tags", "items"]));

    // A heading section holds the heading line and its whole subtree.
    let goals = ok(
        &app,
        &token,
        "obsidian_get_note",
        json!({"format": "section", "target": path("Plan.md"), "section": {"type": "heading", "target": "Goals"}}),
    )
    .await;
    assert_eq!(goals["result"]["valueText"], "## Goals\nShip it. ^goal1\n\n### Detail\nMore here.");
    assert_eq!(goals["result"]["sectionTarget"], "Plan::Goals");
    // A leaf several headings share: the first is read and every candidate named.
    let notes = ok(
        &app,
        &token,
        "obsidian_get_note",
        json!({"format": "section", "target": path("Plan.md"), "section": {"type": "heading", "target": "Notes"}}),
    )
    .await;
    assert_eq!(notes["result"]["candidates"], json!(["Plan::Notes", "Later::Notes"]));
    assert_eq!(notes["result"]["valueText"], "## Notes\nSome #inline text.");
    let later = ok(&app, &token, "obsidian_get_note", json!({"format": "section", "target": path("Plan.md"), "section": {"type": "heading", "target": "Later::Notes"}})).await;
    assert_eq!(later["result"]["valueText"], "## Notes\nSecond notes.");
    let block = ok(
        &app,
        &token,
        "obsidian_get_note",
        json!({"format": "section", "target": path("Plan.md"), "section": {"type": "block", "target": "goal1"}}),
    )
    .await;
    assert_eq!(block["result"]["valueText"], "Ship it. ^goal1");
    let field = ok(
        &app,
        &token,
        "obsidian_get_note",
        json!({"format": "section", "target": path("Plan.md"), "section": {"type": "frontmatter", "target": "items"}}),
    )
    .await;
    assert_eq!(field["result"]["valueJson"], json!(["one"]));

    let e = err(&app, &token, "obsidian_get_note", json!({"format": "section", "target": path("Plan.md")})).await;
    assert_eq!(e["details"]["reason"], "section_required");
    let e = err(
        &app,
        &token,
        "obsidian_get_note",
        json!({"format": "section", "target": path("Plan.md"), "section": {"type": "heading", "target": "Nope"}}),
    )
    .await;
    assert_eq!(e["details"]["reason"], "section_missing");
    assert!(e["hint"].as_str().unwrap().contains("document-map"), "{e}");
    let e = err(&app, &token, "obsidian_get_note", json!({"format": "content", "target": path("Missing.md")})).await;
    assert_eq!((e["code"].clone(), e["details"]["reason"].clone()), (json!("note_not_found"), json!("note_missing")));
}

#[tokio::test]
async fn write_refuses_to_clobber_and_append_upserts_with_created() {
    let (app, token) = setup().await;
    let made = ok(&app, &token, "obsidian_write_note", json!({"target": path("New.md"), "content": "hello\n"})).await;
    assert_eq!(
        made,
        json!({"path": "New.md", "sectionTargeted": false, "created": true, "previousSizeInBytes": 0, "currentSizeInBytes": 6})
    );
    // The clobber guard: refused, named file_exists, pointing at the in-place tools; nothing written.
    let e = err(&app, &token, "obsidian_write_note", json!({"target": path("New.md"), "content": "bye\n"})).await;
    assert_eq!((e["code"].clone(), e["details"]["reason"].clone()), (json!("note_exists"), json!("file_exists")));
    assert!(e["hint"].as_str().unwrap().contains("obsidian_patch_note"), "{e}");
    assert_eq!(text(&app, &token, "New.md").await.unwrap(), "hello\n");
    let over = ok(
        &app,
        &token,
        "obsidian_write_note",
        json!({"target": path("New.md"), "content": "bye\n", "overwrite": true}),
    )
    .await;
    assert_eq!(
        (over["created"].clone(), over["previousSizeInBytes"].clone(), over["currentSizeInBytes"].clone()),
        (json!(false), json!(6), json!(4))
    );

    // Upsert: a missing note is created with the content as its whole body, created: true.
    let up = ok(&app, &token, "obsidian_append_to_note", json!({"target": path("Log.md"), "content": "first"})).await;
    assert_eq!((up["created"].clone(), up["previousSizeInBytes"].clone()), (json!(true), json!(0)));
    let up =
        ok(&app, &token, "obsidian_append_to_note", json!({"target": path("Log.md"), "content": "second\n"})).await;
    assert_eq!(up["created"], false);
    assert_eq!(text(&app, &token, "Log.md").await.unwrap(), "first\nsecond\n");
    assert_eq!(up["previousSizeInBytes"], 5);

    // A section append needs the note.
    let e = err(
        &app,
        &token,
        "obsidian_append_to_note",
        json!({"target": path("Nope.md"), "content": "x", "section": {"type": "heading", "target": "A"}}),
    )
    .await;
    assert_eq!(e["details"]["reason"], "note_missing");
}

#[tokio::test]
async fn section_writes_touch_only_their_section() {
    let (app, token) = setup().await;
    let p = path("Plan.md");
    // Under a heading; the same content again is refused as already there.
    let out = ok(
        &app,
        &token,
        "obsidian_append_to_note",
        json!({"target": p, "content": "- added", "section": {"type": "heading", "target": "Plan::Goals::Detail"}}),
    )
    .await;
    assert_eq!(
        (out["sectionTargeted"].clone(), out["sectionTarget"].clone()),
        (json!(true), json!("Plan::Goals::Detail"))
    );
    let now = text(&app, &token, "Plan.md").await.unwrap();
    assert!(now.contains("More here.\n- added\n\n## Notes"), "{now}");
    let e = err(
        &app,
        &token,
        "obsidian_append_to_note",
        json!({"target": p, "content": "- added", "section": {"type": "heading", "target": "Detail"}}),
    )
    .await;
    assert_eq!(e["details"]["reason"], "content_preexists");
    // A missing heading: refused, or created with createTargetIfMissing.
    let e = err(
        &app,
        &token,
        "obsidian_append_to_note",
        json!({"target": p, "content": "x", "section": {"type": "heading", "target": "Ideas"}}),
    )
    .await;
    assert_eq!(e["details"]["reason"], "section_target_missing");
    ok(&app, &token, "obsidian_append_to_note", json!({"target": p, "content": "an idea", "section": {"type": "heading", "target": "Ideas"}, "createTargetIfMissing": true})).await;
    assert!(text(&app, &token, "Plan.md").await.unwrap().ends_with("\n\n# Ideas\nan idea\n"));
    // A missing level of a path is created under the deepest level the note has, never in a
    // same-named heading elsewhere.
    let before = text(&app, &token, "Plan.md").await.unwrap();
    ok(&app, &token, "obsidian_append_to_note", json!({"target": p, "content": "- a risk", "section": {"type": "heading", "target": "Plan::Goals::Risks"}, "createTargetIfMissing": true})).await;
    let now = text(&app, &token, "Plan.md").await.unwrap();
    assert_eq!(now, before.replace("- added\n\n## Notes", "- added\n\n### Risks\n- a risk\n\n## Notes"));
    let out = ok(&app, &token, "obsidian_patch_note", json!({"target": p, "section": {"type": "heading", "target": "Later::Goals"}, "operation": "replace", "content": "later goals", "patchOptions": {"createTargetIfMissing": true}})).await;
    assert_eq!(out["section"]["target"], "Later::Goals");
    let after = text(&app, &token, "Plan.md").await.unwrap();
    assert!(
        after.contains("## Goals\nShip it.") && after.contains("## Notes\nSecond notes.\n\n## Goals\nlater goals\n"),
        "{after}"
    );
    // A block's text is joined to the content with no separator; the block keeps its id.
    ok(
        &app,
        &token,
        "obsidian_append_to_note",
        json!({"target": p, "content": " (soon)", "section": {"type": "block", "target": "goal1"}}),
    )
    .await;
    assert!(text(&app, &token, "Plan.md").await.unwrap().contains("Ship it. (soon) ^goal1\n"));
    let block = ok(
        &app,
        &token,
        "obsidian_get_note",
        json!({"format": "section", "target": p, "section": {"type": "block", "target": "goal1"}}),
    )
    .await;
    assert_eq!(block["result"]["valueText"], "Ship it. (soon) ^goal1");
    // A frontmatter list grows by one item; other keys and the comment stay byte for byte.
    ok(
        &app,
        &token,
        "obsidian_append_to_note",
        json!({"target": p, "content": "two", "section": {"type": "frontmatter", "target": "items"}}),
    )
    .await;
    let now = text(&app, &token, "Plan.md").await.unwrap();
    assert!(now.starts_with("---\ntitle: Plan\nstatus: draft\n# a comment\ntags: [work]\n"), "{now}");
    // An item is compared as an item: "on" is not in ["one", "two"]; "two" is.
    ok(
        &app,
        &token,
        "obsidian_append_to_note",
        json!({"target": p, "content": "on", "section": {"type": "frontmatter", "target": "items"}}),
    )
    .await;
    let e = err(
        &app,
        &token,
        "obsidian_append_to_note",
        json!({"target": p, "content": "two", "section": {"type": "frontmatter", "target": "items"}}),
    )
    .await;
    assert_eq!(e["details"]["reason"], "content_preexists");
    let items =
        ok(&app, &token, "obsidian_manage_frontmatter", json!({"operation": "get", "target": p, "key": "items"})).await;
    assert_eq!(items["result"]["value"], json!(["one", "two", "on"]));

    // A leaf two headings share is refused for writes, naming both.
    let e = err(
        &app,
        &token,
        "obsidian_write_note",
        json!({"target": p, "content": "x", "section": {"type": "heading", "target": "Notes"}}),
    )
    .await;
    assert_eq!(e["details"]["reason"], "ambiguous_section");
    assert_eq!(e["details"]["candidates"], json!(["Plan::Notes", "Later::Notes"]));
    assert!(e["hint"].as_str().unwrap().contains("document-map"), "{e}");
    // Replace one heading's body; content that repeats the heading line does not double it.
    let before = text(&app, &token, "Plan.md").await.unwrap();
    let out = ok(&app, &token, "obsidian_write_note", json!({"target": p, "content": "## Notes\n\nNew notes.\n", "section": {"type": "heading", "target": "Later::Notes"}, "overwrite": false})).await;
    assert_eq!((out["created"].clone(), out["sectionTarget"].clone()), (json!(false), json!("Later::Notes")));
    let after = text(&app, &token, "Plan.md").await.unwrap();
    assert_eq!(after, before.replace("## Notes\nSecond notes.\n", "## Notes\nNew notes.\n"));

    // patch: prepend, replace, and the preexisting-content override.
    let out = ok(&app, &token, "obsidian_patch_note", json!({"target": p, "section": {"type": "heading", "target": "Plan::Goals"}, "operation": "prepend", "content": "First!\n"})).await;
    assert_eq!(out["section"], json!({"type": "heading", "target": "Plan::Goals"}));
    assert!(text(&app, &token, "Plan.md").await.unwrap().contains("## Goals\nFirst!\nShip it."));
    let e = err(&app, &token, "obsidian_patch_note", json!({"target": p, "section": {"type": "heading", "target": "Plan::Goals"}, "operation": "append", "content": "First!"})).await;
    assert_eq!(e["details"]["reason"], "content_preexists");
    ok(&app, &token, "obsidian_patch_note", json!({"target": p, "section": {"type": "heading", "target": "Plan::Goals"}, "operation": "append", "content": "First!", "patchOptions": {"applyIfContentPreexists": true}})).await;
    ok(&app, &token, "obsidian_patch_note", json!({"target": p, "section": {"type": "frontmatter", "target": "status"}, "operation": "replace", "content": "\"done\"", "contentType": "json"})).await;
    let status =
        ok(&app, &token, "obsidian_manage_frontmatter", json!({"operation": "get", "target": p, "key": "status"}))
            .await;
    assert_eq!(status["result"]["value"], "done");
}

#[tokio::test]
async fn text_search_pages_with_cursors_and_windows_each_match() {
    let (app, token) = setup().await;
    let mut notes: Vec<(String, String)> =
        (0..55).map(|i| (format!("Many/n{i:02}.md"), format!("line {i} with the Needle inside\n"))).collect();
    notes.push(("Other/heavy.md".into(), "needle ".repeat(15)));
    let (before, after) = ("abcd ".repeat(30), " wxyz".repeat(30));
    notes.push(("Other/ctx.md".into(), format!("{before}NEEDLE{after}")));
    let changes: Vec<(&str, Option<&str>)> = notes.iter().map(|(p, t)| (p.as_str(), Some(t.as_str()))).collect();
    commit(&app, &token, V, &changes).await;

    let first = ok(&app, &token, "obsidian_search_notes", json!({"mode": "text", "query": "needle"})).await;
    let r = &first["result"];
    assert_eq!((r["mode"].clone(), r["totalCount"].clone()), (json!("text"), json!(57)));
    assert_eq!(r["hits"].as_array().unwrap().len(), 50);
    let cursor = r["nextCursor"].as_str().unwrap().to_string();
    let second =
        ok(&app, &token, "obsidian_search_notes", json!({"mode": "text", "query": "needle", "cursor": cursor})).await;
    assert_eq!(second["result"]["hits"].as_array().unwrap().len(), 7);
    assert!(second["result"].get("nextCursor").is_none(), "{second}");
    let mut all: Vec<String> = r["hits"]
        .as_array()
        .unwrap()
        .iter()
        .chain(second["result"]["hits"].as_array().unwrap())
        .map(|h| h["filename"].as_str().unwrap().to_string())
        .collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 57, "every hit once across the pages");

    // Context windows: contextLength characters each side, and context[contextStart..contextEnd]
    // is the match (case-insensitive).
    let ctx = ok(
        &app,
        &token,
        "obsidian_search_notes",
        json!({"mode": "text", "query": "needle", "pathPrefix": "Other/ctx", "contextLength": 20}),
    )
    .await;
    assert_eq!(ctx["result"]["totalCount"], 1);
    let m = &ctx["result"]["hits"][0]["matches"][0];
    let context = m["context"].as_str().unwrap();
    assert_eq!(context, format!("{}NEEDLE{}", &before[130..], &after[..20]));
    let (cs, ce) =
        (m["match"]["contextStart"].as_u64().unwrap() as usize, m["match"]["contextEnd"].as_u64().unwrap() as usize);
    assert_eq!(&context[cs..ce], "NEEDLE");
    assert_eq!((m["match"]["start"].clone(), m["match"]["end"].clone()), (json!(150), json!(156)));
    // maxMatchesPerHit clips one note's matches, saying how many there were.
    let heavy = ok(
        &app,
        &token,
        "obsidian_search_notes",
        json!({"mode": "text", "query": "needle", "pathPrefix": "Other/heavy", "maxMatchesPerHit": 3}),
    )
    .await;
    let hit = &heavy["result"]["hits"][0];
    assert_eq!(
        (hit["matches"].as_array().unwrap().len(), hit["truncated"].clone(), hit["totalMatches"].clone()),
        (3, json!(true), json!(15))
    );
    let unclipped =
        ok(&app, &token, "obsidian_search_notes", json!({"mode": "text", "query": "needle", "pathPrefix": "Many/n01"}))
            .await;
    assert!(unclipped["result"]["hits"][0].get("truncated").is_none());

    let e = err(
        &app,
        &token,
        "obsidian_search_notes",
        json!({"mode": "jsonlogic", "logic": {"==": [1, 1]}, "pathPrefix": "Many/"}),
    )
    .await;
    assert_eq!(e["details"]["reason"], "path_prefix_invalid_mode");
    let e = err(&app, &token, "obsidian_search_notes", json!({"mode": "text"})).await;
    assert_eq!(e["details"]["reason"], "query_required");
    let e =
        err(&app, &token, "obsidian_search_notes", json!({"mode": "text", "query": "x", "cursor": "garbage!"})).await;
    assert_eq!(e["details"]["reason"], "invalid_cursor");
    let none = ok(&app, &token, "obsidian_search_notes", json!({"mode": "text", "query": "zzzz-nothing"})).await;
    assert_eq!((none["result"]["totalCount"].clone(), none["result"]["hits"].clone()), (json!(0), json!([])));
    assert!(none["notice"].is_string());
}

#[tokio::test]
async fn jsonlogic_takes_the_pattern_first_for_glob_and_regexp() {
    let (app, token) = setup().await;
    commit(
        &app,
        &token,
        V,
        &[
            ("Projects/Alpha.md", Some("Links to [[Target Note]].\n")),
            ("Projects/Beta.md", Some("Links to [[Target Note|alias]].\n")),
            ("Projects/Sub/Gamma.md", Some("No link.\n")),
            ("Target Note.md", Some("target\n")),
        ],
    )
    .await;
    let search = |logic: Value| {
        let app = &app;
        let token = &token;
        async move {
            let out = ok(app, token, "obsidian_search_notes", json!({"mode": "jsonlogic", "logic": logic})).await;
            let mut files: Vec<String> = out["result"]["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h["filename"].as_str().unwrap().to_string())
                .collect();
            files.sort();
            (files, out)
        }
    };
    let (files, out) = search(json!({"glob": ["Projects/*.md", {"var": "path"}]})).await;
    assert_eq!(files, ["Projects/Alpha.md", "Projects/Beta.md"]);
    assert_eq!(out["result"]["hits"][0]["result"], true);
    assert_eq!(out["result"]["totalCount"], 2);
    // The operands reversed would take each note's path as the pattern: refused, saying so,
    // rather than silently matching nothing.
    let e = err(
        &app,
        &token,
        "obsidian_search_notes",
        json!({"mode": "jsonlogic", "logic": {"glob": [{"var": "path"}, "Projects/*.md"]}}),
    )
    .await;
    assert_eq!(e["details"]["reason"], "logic_invalid");
    assert!(e["message"].as_str().unwrap().contains("pattern first"), "{e}");
    // Backlinks as the other server's users write them.
    let (files, _) = search(json!({"regexp": ["\\[\\[Target Note(\\||#|\\]\\])", {"var": "content"}]})).await;
    assert_eq!(files, ["Projects/Alpha.md", "Projects/Beta.md"]);
    let (files, _) = search(json!({"in": ["work", {"var": "tags"}]})).await;
    assert_eq!(files, ["Plan.md"]);
    let e = err(&app, &token, "obsidian_search_notes", json!({"mode": "jsonlogic"})).await;
    assert_eq!(e["details"]["reason"], "logic_required");
}

#[tokio::test]
async fn replace_frontmatter_tags_delete_and_listings() {
    let (app, token) = setup().await;
    let p = path("Plan.md");
    let before = text(&app, &token, "Plan.md").await.unwrap();
    let out = ok(
        &app,
        &token,
        "obsidian_replace_in_note",
        json!({"target": p, "replacements": [
            {"search": "plan", "replace": "X"},
            {"search": "(Ship) (it)", "replace": "$2 $1 [$&]", "useRegex": true},
            {"search": "notes", "replace": "Notes!", "caseSensitive": false, "replaceAll": false},
            {"search": "More   here", "replace": "Less", "flexibleWhitespace": true, "wholeWord": true}
        ]}),
    )
    .await;
    let counts: Vec<u64> =
        out["perReplacement"].as_array().unwrap().iter().map(|c| c["count"].as_u64().unwrap()).collect();
    // "plan" is case-sensitive by default (no lower-case plan in the body); the frontmatter's
    // "Plan" is out of scope.
    assert_eq!(counts, [0, 1, 1, 1]);
    assert_eq!(out["totalReplacements"], 3);
    let now = text(&app, &token, "Plan.md").await.unwrap();
    assert!(now.starts_with("---\ntitle: Plan\n"), "the frontmatter stays: {now}");
    assert!(
        now.contains("it Ship [Ship it]. ^goal1") && now.contains("## Notes!\nSome") && now.contains("Less.\n"),
        "{now}"
    );
    assert_eq!(now.matches("Notes!").count(), 1);
    assert_eq!(out["previousSizeInBytes"], before.len());
    // No match writes nothing.
    let none = ok(
        &app,
        &token,
        "obsidian_replace_in_note",
        json!({"target": p, "replacements": [{"search": "absent", "replace": "x"}]}),
    )
    .await;
    assert_eq!(none["previousSizeInBytes"], none["currentSizeInBytes"]);
    let fm = ok(
        &app,
        &token,
        "obsidian_replace_in_note",
        json!({"target": p, "scope": "frontmatter", "replacements": [{"search": "draft", "replace": "final"}]}),
    )
    .await;
    assert_eq!(fm["perReplacement"][0]["frontmatterCount"], 1);
    let e = err(
        &app,
        &token,
        "obsidian_replace_in_note",
        json!({"target": p, "replacements": [{"search": "(a+)+", "replace": "", "useRegex": true}]}),
    )
    .await;
    assert_eq!(e["details"]["reason"], "regex_unsafe");

    // Frontmatter: get of an absent key, set (the whole frontmatter after), delete.
    let got =
        ok(&app, &token, "obsidian_manage_frontmatter", json!({"operation": "get", "target": p, "key": "owner"})).await;
    assert_eq!(
        got["result"],
        json!({"operation": "get", "path": "Plan.md", "key": "owner", "exists": false, "value": null})
    );
    let e = err(&app, &token, "obsidian_manage_frontmatter", json!({"operation": "set", "target": p, "key": "owner"}))
        .await;
    assert_eq!(e["details"]["reason"], "value_required");
    let set = ok(
        &app,
        &token,
        "obsidian_manage_frontmatter",
        json!({"operation": "set", "target": p, "key": "owner", "value": {"name": "Ana"}}),
    )
    .await;
    assert_eq!(set["result"]["frontmatter"]["owner"], json!({"name": "Ana"}));
    assert_eq!(set["result"]["frontmatter"]["status"], "final");
    let del =
        ok(&app, &token, "obsidian_manage_frontmatter", json!({"operation": "delete", "target": p, "key": "owner"}))
            .await;
    assert!(del["result"]["frontmatter"].get("owner").is_none());
    assert!(text(&app, &token, "Plan.md").await.unwrap().contains("# a comment\n"));

    // Tags: frontmatter by default, skipped when already so.
    let listed = ok(&app, &token, "obsidian_manage_tags", json!({"operation": "list", "target": p})).await;
    assert_eq!(
        listed["result"]["tags"],
        json!({"frontmatter": ["work"], "inline": ["inline"], "all": ["work", "inline"]})
    );
    let added =
        ok(&app, &token, "obsidian_manage_tags", json!({"operation": "add", "target": p, "tags": ["#urgent", "work"]}))
            .await;
    assert_eq!(
        (added["result"]["applied"].clone(), added["result"]["skipped"].clone()),
        (json!(["urgent"]), json!(["work"]))
    );
    assert_eq!(added["result"]["tags"], json!(["work", "urgent", "inline"]));
    let removed = ok(
        &app,
        &token,
        "obsidian_manage_tags",
        json!({"operation": "remove", "target": p, "tags": ["inline"], "location": "inline"}),
    )
    .await;
    assert_eq!(removed["result"]["applied"], json!(["inline"]));
    let e = err(&app, &token, "obsidian_manage_tags", json!({"operation": "add", "target": p})).await;
    assert_eq!(e["details"]["reason"], "tags_required");

    // Listings: folders first met depth-first, truncated below the depth; tags with parents counted.
    commit(
        &app,
        &token,
        V,
        &[("A/B/C/deep.md", Some("#proj/x\n")), ("A/one.md", Some("#proj/y #proj\n")), ("A/pic.png", Some("png"))],
    )
    .await;
    let listed = ok(&app, &token, "obsidian_list_notes", json!({"path": "A"})).await;
    assert_eq!(
        listed["entries"],
        json!([{"path": "A/B", "type": "directory"}, {"path": "A/B/C", "type": "directory", "truncated": true}, {"path": "A/one.md", "type": "file"}, {"path": "A/pic.png", "type": "file"}])
    );
    assert_eq!(listed["totals"], json!({"entries": 4, "files": 2, "directories": 2}));
    let md = ok(&app, &token, "obsidian_list_notes", json!({"path": "A", "extension": "MD", "depth": 5})).await;
    assert_eq!(md["appliedFilters"], json!({"extension": ".md", "depth": 5}));
    assert_eq!(md["totals"]["files"], 2);
    let e = err(&app, &token, "obsidian_list_notes", json!({"path": "Nowhere"})).await;
    assert_eq!(e["details"]["reason"], "directory_missing");
    let tags = ok(&app, &token, "obsidian_list_tags", json!({"nameRegex": "^proj"})).await;
    assert_eq!(
        tags["tags"],
        json!([{"name": "proj", "count": 3}, {"name": "proj/x", "count": 1}, {"name": "proj/y", "count": 1}])
    );

    // Delete: the note leaves the vault (for its trash).
    let size = text(&app, &token, "A/one.md").await.unwrap().len();
    let gone = ok(&app, &token, "obsidian_delete_note", json!({"target": path("A/one.md")})).await;
    assert_eq!(
        gone,
        json!({"path": "A/one.md", "deleted": true, "previousSizeInBytes": size, "currentSizeInBytes": 0})
    );
    assert!(text(&app, &token, "A/one.md").await.is_none());
    let e = err(&app, &token, "obsidian_delete_note", json!({"target": path("A/one.md")})).await;
    assert_eq!(e["details"]["reason"], "note_missing");
}

#[tokio::test]
async fn the_folder_acl_and_tenants_hold_on_the_compat_surface() {
    let app = TestApp::spawn_with(|c| c.tools.confirm_destructive = false).await;
    let acme = Tenant::create(&app.store, "acme").await;
    let (token, _) = acme.token(&app.store, "*", false, None).await;
    commit(&app, &token, V, &[("Public/Open.md", Some("open needle\n")), ("Secret/Plan.md", Some("secret needle\n"))])
        .await;
    let other = Tenant::create(&app.store, "other").await;
    let (stranger, _) = other.token(&app.store, "*", false, None).await;
    // Another tenant's vault of the same name is its own: the note is not there.
    let e = err(
        &app,
        &stranger,
        "obsidian_get_note",
        json!({"vault": V, "format": "content", "target": path("Secret/Plan.md")}),
    )
    .await;
    assert_eq!(e["details"]["reason"], "note_missing");
    assert!(!e.to_string().contains("secret needle"));

    let bob = token_for(&app, &acme, "bob", "read:notes,write:notes").await;
    run(
        &app,
        &["acl", "set", "acme", "--vault", V, "--principal", "bob", "--read", "Public/**", "--write", "Public/**"],
    );
    let found = ok(&app, &bob, "obsidian_search_notes", json!({"mode": "text", "query": "needle"})).await;
    assert_eq!(found["result"]["totalCount"], 1);
    assert!(!found.to_string().contains("Secret"));
    let e = err(&app, &bob, "obsidian_get_note", json!({"format": "content", "target": path("Secret/Plan.md")})).await;
    assert_eq!(e["details"]["reason"], "note_missing");
    let e = err(&app, &bob, "obsidian_append_to_note", json!({"target": path("Secret/Plan.md"), "content": "x"})).await;
    assert_eq!(e["details"]["reason"], "path_forbidden");
    let listed = ok(&app, &bob, "obsidian_list_notes", json!({})).await;
    assert!(!listed.to_string().contains("Secret"), "{listed}");
    assert_eq!(text(&app, &token, "Secret/Plan.md").await.unwrap(), "secret needle\n");
}

#[tokio::test]
async fn periodic_targets_resolve_from_the_vault_settings() {
    let (app, token) = setup().await;
    commit(&app, &token, V, &[(".obsidian/daily-notes.json", Some(r#"{"folder": "Daily", "format": "YYYY-MM-DD"}"#))])
        .await;
    let target = json!({"type": "periodic", "period": "daily", "date": "2026-03-04"});
    let up = ok(&app, &token, "obsidian_append_to_note", json!({"target": target, "content": "- standup\n"})).await;
    assert_eq!((up["path"].clone(), up["created"].clone()), (json!("Daily/2026-03-04.md"), json!(true)));
    let got = ok(&app, &token, "obsidian_get_note", json!({"format": "content", "target": target})).await;
    assert_eq!(got["result"]["content"], "- standup\n");
}

#[tokio::test]
async fn a_compat_call_spends_once_from_the_rate_limit() {
    let (app, token) = setup().await;
    let out = crate::harness::cli(&app.iso, &["tenant", "limits", "acme", "--set", "read=60/3", "--set", "write=60/1"]);
    assert!(out.status.success(), "{}", crate::harness::stderr(&out));
    // get_note reads through read_note, list_notes reads the index itself: each is one read.
    ok(&app, &token, "obsidian_get_note", json!({"format": "content", "target": path("Plan.md")})).await;
    ok(&app, &token, "obsidian_list_notes", json!({})).await;
    ok(&app, &token, "obsidian_get_note", json!({"format": "document-map", "target": path("Plan.md")})).await;
    let e = err(&app, &token, "obsidian_get_note", json!({"format": "content", "target": path("Plan.md")})).await;
    assert_eq!((e["code"].clone(), e["details"]["class"].clone()), (json!("throttled"), json!("read")));
    // An in-place edit is a write, spent once.
    ok(&app, &token, "obsidian_manage_tags", json!({"operation": "add", "target": path("Plan.md"), "tags": ["x"]}))
        .await;
    let e = err(
        &app,
        &token,
        "obsidian_replace_in_note",
        json!({"target": path("Plan.md"), "replacements": [{"search": "a", "replace": "b"}]}),
    )
    .await;
    assert_eq!((e["code"].clone(), e["details"]["class"].clone()), (json!("throttled"), json!("write")));
}
