//! The read tools through the MCP surface: success, errors, a read-denied note behaving
//! exactly like a missing one, concise against detailed, and paging over a 10k-note vault.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp};
use crate::index::commit;
use crate::mcp::{call, error_of};
use crate::sync::{corpus, remote_env, run_ok};

const A: &str = "---\nup: \"[[B]]\"\ntags: [Project, x/y]\nstatus: open\n---\n# Top\nIntro [[B#Part|see b]] and [md](Folder/C.md) ![[Missing.png]] #inline ^blk\n## Sub\n- [ ] task\n# Other\nend [[#Top]]\n";
const B: &str = "# Part\n[[A]] [[Nowhere]] [[Secret/S]]\n";
const C: &str = "---\nbad: [unclosed\n---\nC links [[A]]\n";
const S: &str = "# Secret\n[[A]] [[Nope]]\n";

/// A vault with four notes, and a token for it; `acl` (if any) applies to vault "Notes".
async fn setup(read_paths: Option<Vec<&str>>) -> (TestApp, String) {
    let read_paths = read_paths.map(|l| l.into_iter().map(str::to_string).collect());
    let app = TestApp::spawn_with(move |c| {
        if let Some(read_paths) = read_paths {
            c.acl.push(otc_config::AclEntry {
                tenant: Some("acme".into()),
                vault: "Notes".into(),
                read_paths: Some(read_paths),
                write_paths: None,
                delete_paths: Some(vec![]),
            });
        }
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    // Through the store: the sync API would not let this token write Secret/ under the ACL.
    app.seed(
        &token,
        "Notes",
        &[
            ("A.md", Some(A)),
            ("B.md", Some(B)),
            ("Folder/C.md", Some(C)),
            ("Secret/S.md", Some(S)),
            ("Lonely.md", Some("no links here or to here")),
            ("Folder/pic.png", Some("png bytes")),
        ],
    )
    .await;
    (app, token)
}

async fn ok(app: &TestApp, token: &str, tool: &str, args: Value) -> Value {
    let result = call(app, "/mcp", token, tool, args.clone()).await;
    assert_eq!(result["isError"], false, "{tool} {args}: {result}");
    result["structuredContent"].clone()
}

async fn err(app: &TestApp, token: &str, tool: &str, args: Value) -> Value {
    let result = call(app, "/mcp", token, tool, args).await;
    error_of(&result).clone()
}

#[tokio::test]
async fn read_note_projections_anchors_and_errors() {
    let (app, token) = setup(None).await;
    let v = "Notes";
    let detailed =
        ok(&app, &token, "read_note", json!({"vault": v, "path": "A.md", "response_format": "detailed"})).await;
    assert_eq!(detailed["content"], A);
    assert_eq!(detailed["content_hash"], obsidian_tc::sync_client::sha256_hex(A.as_bytes()));
    assert_eq!(detailed["frontmatter"]["status"], "open");
    assert_eq!(detailed["has_frontmatter"], true);
    assert!(detailed["body"].as_str().unwrap().starts_with("# Top"));
    assert_eq!(detailed["stat"]["size"], A.len());
    let concise =
        ok(&app, &token, "read_note", json!({"vault": v, "path": "A.md", "response_format": "concise"})).await;
    assert_eq!(concise["body"], detailed["body"]);
    assert!(concise.get("content").is_none() && concise.get("frontmatter").is_none());
    assert_eq!(concise["content_hash"], detailed["content_hash"]);

    let full =
        ok(&app, &token, "read_note", json!({"vault": v, "path": "A.md", "format": "full", "include_links": true}))
            .await;
    assert_eq!(full["tags"], json!(["Project", "x/y", "inline"]));
    let links: Vec<(&str, Option<&str>)> = full["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["target"].as_str().unwrap(), l["target_path"].as_str()))
        .collect();
    assert_eq!(
        links,
        [("B", Some("B.md")), ("B", Some("B.md")), ("Folder/C.md", Some("Folder/C.md")), ("Missing.png", None)]
    );
    let map = ok(&app, &token, "read_note", json!({"vault": v, "path": "A.md", "format": "document-map"})).await;
    assert_eq!(
        map["headings"],
        json!([{"level": 1, "text": "Top", "line": 6}, {"level": 2, "text": "Sub", "line": 8}, {"level": 1, "text": "Other", "line": 10}])
    );
    assert_eq!(map["blocks"], json!([{"id": "blk", "line": 7}]));
    assert_eq!(map["frontmatter_fields"], json!(["status", "tags", "up"]));
    let content = ok(&app, &token, "read_note", json!({"vault": v, "path": "A.md", "format": "content"})).await;
    assert_eq!(content["content"], A);

    // Sections: a heading's subtree, a block's line, a frontmatter field.
    let top = ok(
        &app,
        &token,
        "read_note",
        json!({"vault": v, "path": "A.md", "anchor": {"type": "heading", "heading": "top"}}),
    )
    .await;
    assert_eq!(
        top["section"]["text"],
        "# Top\nIntro [[B#Part|see b]] and [md](Folder/C.md) ![[Missing.png]] #inline ^blk\n## Sub\n- [ ] task\n"
    );
    assert_eq!((top["section"]["start_line"].as_u64(), top["section"]["end_line"].as_u64()), (Some(6), Some(9)));
    let sub = ok(
        &app,
        &token,
        "read_note",
        json!({"vault": v, "path": "A.md", "anchor": {"type": "heading", "heading": "Top > Sub"}}),
    )
    .await;
    assert_eq!(sub["section"]["text"], "## Sub\n- [ ] task\n");
    let block = ok(
        &app,
        &token,
        "read_note",
        json!({"vault": v, "path": "A.md", "anchor": {"type": "block", "block_id": "^blk"}}),
    )
    .await;
    assert!(block["section"]["text"].as_str().unwrap().ends_with("^blk"));
    let field = ok(
        &app,
        &token,
        "read_note",
        json!({"vault": v, "path": "A.md", "anchor": {"type": "frontmatter", "field": "status"}}),
    )
    .await;
    assert_eq!(field["section"]["text"], "open");

    // Periodic notes, where the vault's settings say they live: without settings, daily notes
    // are where Obsidian's defaults put them (the root, YYYY-MM-DD), other periods have none.
    let default_place =
        err(&app, &token, "read_note", json!({"vault": v, "period": "daily", "date": "2026-11-30"})).await;
    assert_eq!(
        (default_place["code"].as_str(), default_place["details"]["path"].as_str()),
        (Some("note_not_found"), Some("2026-11-30.md"))
    );
    let settings_err =
        err(&app, &token, "read_note", json!({"vault": v, "period": "weekly", "date": "2026-11-30"})).await;
    assert_eq!(
        (settings_err["code"].as_str(), settings_err["details"]["field"].as_str()),
        (Some("invalid_input"), Some("period"))
    );
    commit(
        &app,
        &token,
        v,
        &[
            (".obsidian/daily-notes.json", Some(r#"{"folder": "Journal", "format": "YYYY/YYYY-MM-DD"}"#)),
            ("Journal/2026/2026-11-30.md", Some("today's note")),
        ],
    )
    .await;
    let daily = ok(
        &app,
        &token,
        "read_note",
        json!({"vault": v, "period": "daily", "date": "2026-11-30", "format": "content"}),
    )
    .await;
    assert_eq!(
        (daily["path"].as_str(), daily["content"].as_str()),
        (Some("Journal/2026/2026-11-30.md"), Some("today's note"))
    );
    let missing = err(&app, &token, "read_note", json!({"vault": v, "period": "daily", "date": "2026-12-01"})).await;
    assert_eq!(
        (missing["code"].as_str(), missing["details"]["path"].as_str()),
        (Some("note_not_found"), Some("Journal/2026/2026-12-01.md"))
    );
    assert_eq!(
        err(&app, &token, "read_note", json!({"vault": v, "period": "daily", "date": "30/11/2026"})).await["code"],
        "invalid_input"
    );
    assert_eq!(err(&app, &token, "read_note", json!({"vault": v})).await["code"], "invalid_input");

    // Errors: missing, invalid path, unknown vault, bad anchor, wrong scope.
    assert_eq!(err(&app, &token, "read_note", json!({"vault": v, "path": "Nope.md"})).await["code"], "note_not_found");
    assert_eq!(err(&app, &token, "read_note", json!({"vault": v, "path": "../x.md"})).await["code"], "path_invalid");
    assert_eq!(
        err(&app, &token, "read_note", json!({"vault": "Other", "path": "A.md"})).await["code"],
        "vault_not_found"
    );
    let bad = err(
        &app,
        &token,
        "read_note",
        json!({"vault": v, "path": "A.md", "anchor": {"type": "heading", "heading": "Nope"}}),
    )
    .await;
    assert_eq!((bad["code"].as_str(), bad["details"]["field"].as_str()), (Some("invalid_input"), Some("anchor")));
    assert_eq!(
        err(&app, &token, "read_note", json!({"vault": v, "path": "A.md", "format": "section"})).await["code"],
        "invalid_input"
    );
    assert_eq!(
        err(&app, &token, "read_note", json!({"vault": v, "path": "A.md", "bogus": 1})).await["code"],
        "validation_error"
    );
    let store = &app.store;
    let mut tx = store.begin(store.tenant_id_by_slug("acme").await.unwrap().unwrap()).await.unwrap();
    let principal = tx.ensure_principal(otc_store::PrincipalKind::User, "reader").await.unwrap();
    let vault_only = tx
        .issue_token(otc_store::NewToken {
            principal_id: principal.id,
            name: "r".into(),
            scopes: otc_auth::parse_scopes("read:vault").unwrap(),
            vault_id: None,
            expires_at: None,
        })
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let denied = err(&app, &vault_only.plaintext, "read_note", json!({"vault": v, "path": "A.md"})).await;
    assert_eq!(denied["code"], "forbidden");
    app.stop().await;
}

#[tokio::test]
async fn metadata_and_link_tools_concise_and_detailed() {
    let (app, token) = setup(None).await;
    let v = "Notes";
    let fm =
        ok(&app, &token, "read_frontmatter", json!({"vault": v, "path": "A.md", "response_format": "detailed"})).await;
    assert_eq!((fm["has_frontmatter"].as_bool(), fm["frontmatter"]["status"].as_str()), (Some(true), Some("open")));
    let fm =
        ok(&app, &token, "read_frontmatter", json!({"vault": v, "path": "A.md", "response_format": "concise"})).await;
    assert!(fm.get("has_frontmatter").is_none());
    let broken = ok(&app, &token, "read_frontmatter", json!({"vault": v, "path": "Folder/C.md"})).await;
    assert!(broken.get("frontmatter").is_none() && broken["frontmatter_error"].is_string());

    let tags =
        ok(&app, &token, "get_note_tags", json!({"vault": v, "path": "A.md", "response_format": "detailed"})).await;
    assert_eq!(tags["all"], json!(["Project", "x/y", "inline"]));
    assert_eq!(tags["frontmatter"], json!(["Project", "x/y"]));
    assert_eq!(tags["inline"], json!(["inline"]));
    let tags =
        ok(&app, &token, "get_note_tags", json!({"vault": v, "path": "A.md", "response_format": "concise"})).await;
    assert!(tags.get("inline").is_none());

    let out =
        ok(&app, &token, "get_outgoing_links", json!({"vault": v, "path": "A.md", "response_format": "detailed"}))
            .await;
    assert_eq!(out["counts"], json!({"total": 5, "resolved": 4, "unresolved": 1}));
    let links = out["links"].as_array().unwrap();
    // The property link: file position, source and property; body links: neither, lines from
    // the first body line.
    assert_eq!(
        (links[0]["source"].as_str(), links[0]["property"].as_str(), links[0]["line"].as_i64()),
        (Some("property"), Some("up"), Some(2))
    );
    assert!(links[1].get("source").is_none() && links[1].get("property").is_none());
    assert_eq!(
        (links[1]["line"].as_i64(), links[1]["heading"].as_str(), links[1]["display"].as_str()),
        (Some(2), Some("Part"), Some("see b"))
    );
    assert_eq!((links[2]["kind"].as_str(), links[3]["kind"].as_str()), (Some("markdown"), Some("embed")));
    assert_eq!(links[4]["target_path"], "A.md", "[[#Top]] is the note itself");
    let concise = ok(
        &app,
        &token,
        "get_outgoing_links",
        json!({"vault": v, "path": "A.md", "response_format": "concise", "include_embeds": false}),
    )
    .await;
    assert_eq!(concise["counts"]["total"], 4);
    assert!(concise["links"][1].get("raw").is_none() && concise["links"][1].get("col").is_none());
    let with_warning = ok(&app, &token, "get_outgoing_links", json!({"vault": v, "path": "Folder/C.md"})).await;
    assert_eq!(with_warning["warnings"][0]["reason"], "frontmatter_yaml");

    let back =
        ok(&app, &token, "get_backlinks", json!({"vault": v, "path": "A.md", "response_format": "detailed"})).await;
    let sources: Vec<&str> =
        back["backlinks"].as_array().unwrap().iter().map(|b| b["source_path"].as_str().unwrap()).collect();
    assert_eq!(sources, ["B.md", "Folder/C.md", "Secret/S.md"], "not A's own [[#Top]]");
    assert!(back.get("next_cursor").is_none());
    let back =
        ok(&app, &token, "get_backlinks", json!({"vault": v, "path": "B.md", "response_format": "concise"})).await;
    let rows = back["backlinks"].as_array().unwrap();
    assert_eq!(rows[0], json!({"source_path": "A.md", "line": 2, "source": "property", "property": "up"}));
    assert_eq!(rows[1], json!({"source_path": "A.md", "line": 2}));

    let unresolved = ok(&app, &token, "find_unresolved_links", json!({"vault": v, "response_format": "concise"})).await;
    let targets = unresolved_targets(&unresolved);
    assert_eq!(targets, [("A.md", "Missing.png"), ("B.md", "Nowhere"), ("Secret/S.md", "Nope")]);
    assert_eq!(unresolved["warnings"][0]["path"], "Folder/C.md");
    let folder = ok(&app, &token, "find_unresolved_links", json!({"vault": v, "folder": "Secret"})).await;
    assert_eq!(folder["unresolved"].as_array().unwrap().len(), 1);

    let orphans = ok(&app, &token, "find_orphans", json!({"vault": v})).await;
    assert_eq!(orphans["orphans"], json!(["Lonely.md"]), "B is linked only from A's property: not an orphan");
    let orphans = ok(&app, &token, "find_orphans", json!({"vault": v, "require_no_outgoing": true})).await;
    assert_eq!(orphans["orphans"], json!(["Lonely.md"]));

    let listed = ok(&app, &token, "list_notes", json!({"vault": v, "response_format": "concise"})).await;
    assert_eq!(
        listed["notes"],
        json!([{"path": "A.md"}, {"path": "B.md"}, {"path": "Folder/C.md"}, {"path": "Lonely.md"}, {"path": "Secret/S.md"}])
    );
    let top =
        ok(&app, &token, "list_notes", json!({"vault": v, "recursive": false, "response_format": "detailed"})).await;
    assert_eq!(top["notes"].as_array().unwrap().len(), 3);
    assert!(top["notes"][0]["size"].is_number() && top["notes"][0]["mtime"].is_string());
    let pngs = ok(&app, &token, "list_notes", json!({"vault": v, "folder": "Folder", "extensions": ["png"]})).await;
    assert_eq!(pngs["notes"][0]["path"], "Folder/pic.png");
    assert_eq!(ok(&app, &token, "note_exists", json!({"vault": v, "path": "Folder"})).await["type"], "folder");
    assert_eq!(ok(&app, &token, "note_exists", json!({"vault": v, "path": "A.md"})).await["type"], "file");
    assert_eq!(ok(&app, &token, "note_exists", json!({"vault": v, "path": "Z.md"})).await["exists"], false);
    // Notes in the always-hidden folders, and in any dot-named folder (`.gitx/`, as Obsidian
    // shows none), are not counted (nor listed, nor read).
    app.seed(&token, v, &[(".trash/Old.md", Some("old")), (".obsidian/Note.md", Some("x")), (".gitx/N.md", Some("y"))])
        .await;
    let vaults = ok(&app, &token, "list_vaults", json!({})).await;
    assert_eq!((vaults["vaults"][0]["name"].as_str(), vaults["vaults"][0]["notes"].as_i64()), (Some("Notes"), Some(5)));
    let vault = ok(&app, &token, "get_vault", json!({"vault": v})).await;
    assert_eq!(vault["index"]["notes"], 5);
    assert_eq!(vault["acl"]["rules"], json!([]), "unrestricted");
    assert_eq!(
        err(&app, &token, "list_notes", json!({"vault": v, "cursor": "garbage"})).await["details"]["field"],
        "cursor"
    );
    assert_eq!(err(&app, &token, "list_notes", json!({"vault": v, "limit": 0})).await["code"], "invalid_input");
    app.stop().await;
}

#[tokio::test]
async fn a_note_the_acl_hides_behaves_exactly_like_a_missing_one() {
    // Two servers over the same notes: one where Secret/ is not there, one where the ACL hides
    // it. Every read tool answers the two alike.
    let (hidden_app, hidden_token) = setup(Some(vec!["*.md", "Folder/**"])).await;
    let (absent_app, absent_token) = setup(None).await;
    commit(&absent_app, &absent_token, "Notes", &[("Secret/S.md", None)]).await;
    let v = "Notes";
    let calls = [
        ("read_note", json!({"vault": v, "path": "Secret/S.md"})),
        ("read_frontmatter", json!({"vault": v, "path": "Secret/S.md"})),
        ("get_note_tags", json!({"vault": v, "path": "Secret/S.md"})),
        ("get_outgoing_links", json!({"vault": v, "path": "Secret/S.md"})),
        ("get_backlinks", json!({"vault": v, "path": "Secret/S.md"})),
        ("note_exists", json!({"vault": v, "path": "Secret/S.md"})),
        ("note_exists", json!({"vault": v, "path": "Secret"})),
        ("note_exists", json!({"vault": v, "path": "Folder"})),
        ("list_notes", json!({"vault": v})),
        ("list_notes", json!({"vault": v, "folder": "Secret"})),
        ("get_outgoing_links", json!({"vault": v, "path": "B.md"})),
        ("get_backlinks", json!({"vault": v, "path": "A.md"})),
        ("get_backlinks", json!({"vault": v, "path": "B.md"})),
        ("find_unresolved_links", json!({"vault": v})),
        ("find_orphans", json!({"vault": v})),
        ("read_note", json!({"vault": v, "path": "A.md", "format": "full", "include_links": true})),
        ("read_notes", json!({"vault": v, "paths": ["A.md", "Secret/S.md"]})),
        ("read_property", json!({"vault": v, "path": "Secret/S.md", "key": "x"})),
        ("list_tags", json!({"vault": v})),
        ("find_notes_by_tag", json!({"vault": v, "tag": "inline"})),
        ("list_properties", json!({"vault": v})),
        ("find_notes_by_property", json!({"vault": v, "key": "up"})),
        ("list_attachments", json!({"vault": v, "include_reference_count": true})),
        ("get_attachment", json!({"vault": v, "path": "Secret/x.png"})),
    ];
    for (tool, args) in calls {
        let hidden = call(&hidden_app, "/mcp", &hidden_token, tool, args.clone()).await;
        let absent = call(&absent_app, "/mcp", &absent_token, tool, args.clone()).await;
        // Only the modification times differ between the two vaults.
        fn strip(v: &mut Value) {
            match v {
                Value::Object(map) => {
                    map.remove("mtime");
                    map.values_mut().for_each(strip);
                }
                Value::Array(items) => items.iter_mut().for_each(strip),
                _ => {}
            }
        }
        let strip = |mut v: Value| {
            strip(&mut v);
            v["structuredContent"].clone()
        };
        assert_eq!(strip(hidden.clone()), strip(absent.clone()), "{tool} {args}");
        assert_eq!(hidden["isError"], absent["isError"], "{tool} {args}");
    }
    // Counts too: the hidden note is not counted (ids and sequence numbers differ by history).
    let hidden_vaults = ok(&hidden_app, &hidden_token, "list_vaults", json!({})).await;
    let absent_vaults = ok(&absent_app, &absent_token, "list_vaults", json!({})).await;
    assert_eq!(hidden_vaults["vaults"][0]["notes"], absent_vaults["vaults"][0]["notes"]);
    let vault = ok(&hidden_app, &hidden_token, "get_vault", json!({"vault": v})).await;
    assert_eq!(vault["index"]["notes"], absent_vaults["vaults"][0]["notes"]);
    assert_eq!(vault["acl"]["rules"][0]["read_paths"], json!(["*.md", "Folder/**"]));
    assert_eq!(vault["acl"]["rules"][0]["delete_paths"], json!([]));
    hidden_app.stop().await;
    absent_app.stop().await;
}

#[tokio::test]
async fn paging_walks_a_10k_note_vault_without_gaps_or_repeats_in_pages_under_20_kb() {
    let app = TestApp::spawn_with(|c| {
        c.object_store.kind = otc_config::ObjectStoreKind::Local;
        c.object_store.path = std::env::temp_dir().join(format!("otc-page-{}", uuid::Uuid::new_v4().simple()));
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    // 10,000 notes in 20 folders with long names (so pages fill their byte budget before 100
    // items), every one linking the hub and a missing note: 10,000 backlinks, 10,000
    // unresolved links.
    let body = "[[Hub]] [[Missing Target With A Long Name]]\n";
    let hash = crate::sync::upload(&app, &token, "Notes", body.as_bytes()).await;
    let long =
        "a-rather-long-folder-name-so-that-a-hundred-entries-of-a-listing-do-not-fit-in-twenty-kilobytes".repeat(2);
    let mut all: BTreeSet<String> = BTreeSet::new();
    for batch in 0..10 {
        let paths: Vec<String> = (0..1000)
            .map(|i| format!("{long}-{:02}/note number {:05}.md", (batch * 1000 + i) % 20, batch * 1000 + i))
            .collect();
        let changes: Vec<Value> =
            paths.iter().map(|p| json!({"path": p, "expect": "absent", "put": {"hash": hash}})).collect();
        let (status, answer) = crate::sync::api(
            &app,
            &token,
            reqwest::Method::POST,
            "/v1/vaults/Notes/commit",
            Some(json!({"changes": changes})),
        )
        .await;
        assert!(status.is_success() && answer["indexed"] == true, "{answer}");
        all.extend(paths);
    }
    commit(&app, &token, "Notes", &[("Hub.md", Some("hub"))]).await;
    all.insert("Hub.md".into());

    // list_notes: every path once, in order.
    let mut seen = Vec::new();
    let mut pages = 0;
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"vault": "Notes", "response_format": "detailed"});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let page = ok(&app, &token, "list_notes", args).await;
        assert!(serde_json::to_vec(&page).unwrap().len() <= 20_000, "page {pages} is over 20 KB");
        let notes = page["notes"].as_array().unwrap();
        assert!(!notes.is_empty() && notes.len() <= 100);
        seen.extend(notes.iter().map(|n| n["path"].as_str().unwrap().to_string()));
        pages += 1;
        match page.get("next_cursor").and_then(|c| c.as_str()) {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(seen.len(), all.len(), "no gap, no repeat");
    assert_eq!(seen.iter().cloned().collect::<BTreeSet<_>>(), all);
    assert!(seen.windows(2).all(|w| w[0] < w[1]));
    assert!(pages > 101, "the byte budget lowered the page size: {pages} pages");

    // get_backlinks and find_unresolved_links: every link once.
    for (tool, args, key) in [
        ("get_backlinks", json!({"vault": "Notes", "path": "Hub.md", "response_format": "concise"}), "backlinks"),
        ("find_unresolved_links", json!({"vault": "Notes", "response_format": "concise"}), "unresolved"),
        ("find_orphans", json!({"vault": "Notes"}), "orphans"),
    ] {
        let mut items: Vec<Value> = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut a = args.clone();
            if let Some(c) = &cursor {
                a["cursor"] = json!(c);
            }
            let page = ok(&app, &token, tool, a).await;
            assert!(serde_json::to_vec(&page).unwrap().len() <= 20_000, "{tool}: page over 20 KB");
            items.extend(page[key].as_array().unwrap().iter().cloned());
            match page.get("next_cursor").and_then(|c| c.as_str()) {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
        }
        let distinct: BTreeSet<String> = items.iter().map(|i| i.to_string()).collect();
        assert_eq!(distinct.len(), items.len(), "{tool}: no repeat");
        assert_eq!(items.len(), 10_000, "{tool}: no gap");
    }
    app.stop().await;
}

#[tokio::test]
async fn backlinks_and_unresolved_links_agree_with_the_independent_count_on_every_corpus_vault() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let env = remote_env(&app, &token);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/count_vault.py");
    for name in ["jsoncanvas", "kepano-obsidian", "obsidian-tasks-demo", "obsidian-tasks-docs", "starter-vault"] {
        let mut tx = app.store.begin(tenant.id).await.unwrap();
        tx.create_vault(name).await.unwrap();
        tx.commit().await.unwrap();
        let dir = corpus(name).display().to_string();
        let (env2, dir2, vault) = (env.clone(), dir.clone(), name.to_string());
        tokio::task::spawn_blocking(move || run_ok(&env2, &["vault", "import", &dir2, "--vault", &vault, "--quiet"]))
            .await
            .unwrap();
        let out = std::process::Command::new("python3").arg(script).arg(&dir).output().expect("python3 runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let expected: Value = serde_json::from_slice(&out.stdout).unwrap();

        // Unresolved: every page of find_unresolved_links, as (source, target) multisets.
        let mut ours: Vec<(String, String)> = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut args = json!({"vault": name, "limit": 1000});
            if let Some(c) = &cursor {
                args["cursor"] = json!(c);
            }
            let page = ok(&app, &token, "find_unresolved_links", args).await;
            for u in page["unresolved"].as_array().unwrap() {
                ours.push((u["source_path"].as_str().unwrap().into(), u["target"].as_str().unwrap().into()));
            }
            match page.get("next_cursor").and_then(|c| c.as_str()) {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
        }
        let mut theirs: Vec<(String, String)> = expected["unresolved_targets"]
            .as_object()
            .unwrap()
            .iter()
            .flat_map(|(note, ts)| {
                ts.as_array().unwrap().iter().map(move |t| (note.clone(), t.as_str().unwrap().to_string()))
            })
            .collect();
        ours.sort();
        theirs.sort();
        assert_eq!(ours, theirs, "{name}: unresolved links");

        // Backlinks: for every target the count names, the sources get_backlinks lists.
        let mut by_target: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (note, pairs) in expected["resolved"].as_object().unwrap() {
            for p in pairs.as_array().unwrap() {
                let target = p[1].as_str().unwrap().to_string();
                if target != *note {
                    by_target.entry(target).or_default().push(note.clone());
                }
            }
        }
        for (target, mut sources) in by_target {
            let page = ok(&app, &token, "get_backlinks", json!({"vault": name, "path": target, "limit": 1000})).await;
            let mut listed: Vec<String> = page["backlinks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b["source_path"].as_str().unwrap().into())
                .collect();
            listed.sort();
            sources.sort();
            assert_eq!(listed, sources, "{name}: backlinks of {target}");
        }
    }
    app.stop().await;
}

#[tokio::test]
async fn tags_properties_attachments_and_read_notes() {
    let (app, token) = setup(None).await;
    let v = "Notes";
    let tags = ok(&app, &token, "list_tags", json!({"vault": v})).await;
    assert_eq!(tags["notes_scanned"], 5);
    assert_eq!(
        tags["tags"],
        json!([{"name": "inline", "count": 1}, {"name": "Project", "count": 1}, {"name": "x/y", "count": 1}])
    );
    let found =
        ok(&app, &token, "find_notes_by_tag", json!({"vault": v, "tag": "#x", "response_format": "detailed"})).await;
    assert_eq!(found["matches"], json!([{"path": "A.md", "tags": ["x/y"]}]), "x finds x/y");
    assert_eq!(found["truncated"], false);
    let found =
        ok(&app, &token, "find_notes_by_tag", json!({"vault": v, "tag": "project", "response_format": "concise"}))
            .await;
    assert_eq!(found["matches"], json!([{"path": "A.md"}]), "case-insensitive");
    assert_eq!(err(&app, &token, "find_notes_by_tag", json!({"vault": v, "tag": " "})).await["code"], "invalid_input");

    let props = ok(&app, &token, "list_properties", json!({"vault": v})).await;
    assert_eq!(
        props["properties"],
        json!([
            {"name": "status", "count": 1, "types": ["string"]},
            {"name": "tags", "count": 1, "types": ["array"]},
            {"name": "up", "count": 1, "types": ["string"]},
        ])
    );
    let by = ok(
        &app,
        &token,
        "find_notes_by_property",
        json!({"vault": v, "key": "tags", "value": "x/y", "response_format": "detailed"}),
    )
    .await;
    assert_eq!(by["matches"], json!([{"path": "A.md", "value": "[\"Project\",\"x/y\"]"}]), "a list holding the value");
    let by = ok(&app, &token, "find_notes_by_property", json!({"vault": v, "key": "status", "value": "closed"})).await;
    assert_eq!(by["matches"], json!([]));
    let prop = ok(
        &app,
        &token,
        "read_property",
        json!({"vault": v, "path": "A.md", "key": "status", "response_format": "concise"}),
    )
    .await;
    assert_eq!((prop["found"].as_bool(), prop["value"].as_str()), (Some(true), Some("\"open\"")));
    assert!(prop.get("key").is_none());
    let prop = ok(&app, &token, "read_property", json!({"vault": v, "path": "A.md", "key": "nope"})).await;
    assert_eq!(prop["found"], false);

    // An image: its pixel size from the header, the notes that link to it.
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.extend_from_slice(&640u32.to_be_bytes());
    png.extend_from_slice(&480u32.to_be_bytes());
    png.extend_from_slice(&[8, 2, 0, 0, 0]);
    let hash = crate::sync::upload(&app, &token, v, &png).await;
    let (status, body) = crate::sync::api(&app, &token, reqwest::Method::POST, "/v1/vaults/Notes/commit", Some(json!({"changes": [
        {"path": "img/shot.png", "expect": "absent", "put": {"hash": hash}},
        {"path": "Uses.md", "expect": "absent", "put": {"hash": crate::sync::upload(&app, &token, v, b"![[shot.png]]").await}},
    ]}))).await;
    assert!(status.is_success(), "{body}");
    let att =
        ok(&app, &token, "get_attachment", json!({"vault": v, "path": "img/shot.png", "include_references": true}))
            .await;
    assert_eq!(
        (att["width"].as_u64(), att["height"].as_u64(), att["mime"].as_str()),
        (Some(640), Some(480), Some("image/png"))
    );
    assert!(att["description"].as_str().unwrap().contains("640×480"));
    use base64::Engine;
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(att["content"].as_str().unwrap()).unwrap(), png);
    assert_eq!(att["references"], json!(["Uses.md"]));
    let desc =
        ok(&app, &token, "get_attachment", json!({"vault": v, "path": "img/shot.png", "include_content": false})).await;
    assert!(desc.get("content").is_none());
    let too_big =
        err(&app, &token, "get_attachment", json!({"vault": v, "path": "img/shot.png", "max_bytes": 10})).await;
    assert_eq!(
        (too_big["code"].as_str(), too_big["details"]["size"].as_u64()),
        (Some("invalid_input"), Some(png.len() as u64))
    );
    assert_eq!(err(&app, &token, "get_attachment", json!({"vault": v, "path": "A.md"})).await["code"], "invalid_input");
    assert_eq!(
        err(&app, &token, "get_attachment", json!({"vault": v, "path": "img/none.png"})).await["code"],
        "note_not_found"
    );
    let listed = ok(
        &app,
        &token,
        "list_attachments",
        json!({"vault": v, "include_reference_count": true, "response_format": "concise"}),
    )
    .await;
    assert_eq!(
        listed["attachments"],
        json!([{"path": "Folder/pic.png", "reference_count": 0}, {"path": "img/shot.png", "reference_count": 1}])
    );
    app.stop().await;
}

#[tokio::test]
async fn read_notes_pages_by_the_byte_budget_in_request_order() {
    let app = TestApp::spawn_with(|c| c.governor.max_response_bytes = 10_000).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let big = "x".repeat(2_500);
    let huge = "y".repeat(20_000);
    commit(
        &app,
        &token,
        "Notes",
        &[
            ("1.md", Some(&big)),
            ("2.md", Some(&big)),
            ("3.md", Some(&big)),
            ("4.md", Some(&big)),
            ("Huge.md", Some(&huge)),
        ],
    )
    .await;
    let paths = json!(["4.md", "Huge.md", "Missing.md", "1.md", "2.md", "3.md"]);
    let mut got = Vec::new();
    let mut errors = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut args = json!({"vault": "Notes", "paths": paths, "response_format": "concise"});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let page = ok(&app, &token, "read_notes", args).await;
        pages += 1;
        got.extend(page["notes"].as_array().unwrap().iter().map(|n| n["path"].as_str().unwrap().to_string()));
        errors.extend(
            page["errors"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| (e["path"].as_str().unwrap().to_string(), e["code"].as_str().unwrap().to_string())),
        );
        match page.get("next_cursor").and_then(|c| c.as_str()) {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(got, ["4.md", "1.md", "2.md", "3.md"], "request order, no gap, no repeat");
    assert_eq!(
        errors,
        [("Huge.md".to_string(), "too_large".to_string()), ("Missing.md".to_string(), "note_not_found".to_string())]
    );
    assert!(pages >= 2, "{pages}");
    assert_eq!(err(&app, &token, "read_notes", json!({"vault": "Notes", "paths": []})).await["code"], "invalid_input");
    app.stop().await;
}

#[tokio::test]
async fn a_hidden_note_does_not_shadow_a_readable_one_in_any_link_tool() {
    let app =
        TestApp::spawn_with(|c| c.acl.push(crate::harness::read_acl(None, "Notes", &["Public/**", "Index.md"]))).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    // For Obsidian, [[Plan]] is the root Plan.md; this caller cannot read it, so for them the
    // link means Public/Plan.md, as if the hidden note were not there.
    app.seed(
        &token,
        "Notes",
        &[
            ("Plan.md", Some("secret")),
            ("Public/Plan.md", Some("open")),
            ("Index.md", Some("[[Plan]]")),
            ("Public/Notes.md", Some("---\nup: \"[[Plan]]\"\n---\n[[Gone]]")),
        ],
    )
    .await;
    let v = "Notes";
    let out = ok(&app, &token, "get_outgoing_links", json!({"vault": v, "path": "Index.md"})).await;
    assert_eq!(out["links"][0]["target_path"], "Public/Plan.md", "{out}");
    assert!(out["links"][0].get("candidates").is_none(), "the hidden candidate is not named");
    // The same holds for every tool that works from the stored resolution.
    let back = ok(&app, &token, "get_backlinks", json!({"vault": v, "path": "Public/Plan.md"})).await;
    let sources: BTreeSet<&str> =
        back["backlinks"].as_array().unwrap().iter().map(|l| l["source_path"].as_str().unwrap()).collect();
    assert_eq!(sources, BTreeSet::from(["Index.md", "Public/Notes.md"]), "{back}");
    let unresolved = ok(&app, &token, "find_unresolved_links", json!({"vault": v})).await;
    let targets: Vec<&str> =
        unresolved["unresolved"].as_array().unwrap().iter().map(|l| l["target"].as_str().unwrap()).collect();
    assert_eq!(targets, ["Gone"], "{unresolved}");
    let orphans = ok(&app, &token, "find_orphans", json!({"vault": v})).await;
    let orphans: BTreeSet<&str> = orphans["orphans"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    assert!(!orphans.contains("Public/Plan.md"), "linked through the hidden note's name: {orphans:?}");
    assert_eq!(orphans, BTreeSet::from(["Index.md", "Public/Notes.md"]));
    app.stop().await;
}

/// read_note on the gateway at `base` (a second gateway of the same deployment).
async fn read_on(app: &TestApp, base: &str, token: &str, path: &str) -> Value {
    let args = json!({"vault": "Notes", "path": path, "response_format": "detailed"});
    crate::mcp::call_on(app, base, token, "read_note", args).await
}

#[tokio::test]
async fn a_read_after_a_write_sees_it_on_every_gateway() {
    // Rows kept for a minute: only the vault's generation can make a gateway read again.
    let app = TestApp::spawn_with(|c| c.tools.file_cache_ms = 60_000).await;
    let second = app.another_gateway(|c| c.tools.file_cache_ms = 60_000).await;
    let b = format!("http://{}", second.addr);
    let a = app.url("");
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    commit(&app, &token, "Notes", &[("N.md", Some("v0"))]).await;
    for i in 1..=20 {
        // Both gateways have the row cached, then a write lands through the first.
        for base in [&a, &b] {
            assert_eq!(
                read_on(&app, base, &token, "N.md").await["structuredContent"]["content"],
                format!("v{}", i - 1)
            );
        }
        let text = format!("v{i}");
        commit(&app, &token, "Notes", &[("N.md", Some(&text))]).await;
        for base in [&b, &a] {
            let read = read_on(&app, base, &token, "N.md").await;
            assert_eq!(read["structuredContent"]["content"], text, "read after write #{i} on {base}");
            assert_eq!(
                read["structuredContent"]["content_hash"],
                obsidian_tc::sync_client::sha256_hex(text.as_bytes())
            );
            assert_eq!(read["structuredContent"]["stat"]["size"], text.len());
        }
    }
    commit(&app, &token, "Notes", &[("N.md", None)]).await;
    for base in [&b, &a] {
        assert_eq!(error_of(&read_on(&app, base, &token, "N.md").await)["code"], "note_not_found");
    }
    commit(&app, &token, "Notes", &[("N.md", Some("back"))]).await;
    assert_eq!(read_on(&app, &b, &token, "N.md").await["structuredContent"]["content"], "back");

    // What makes this hold is the vault's generation: a commit that does not move it on (here,
    // one made behind the gateways' backs) is not seen while the cached row is young...
    let hash = crate::sync::upload(&app, &token, "Notes", b"sneaky").await;
    let hash: otc_store::Hash = hex::decode(&hash).unwrap().try_into().unwrap();
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let change = otc_store::Change {
        path: "N.md".into(),
        expect: otc_store::Expect::Any,
        action: otc_store::Action::Put { hash, size: 6, mtime: chrono::Utc::now() },
    };
    tx.commit_changes(tenant.vault_id, &[change], &otc_store::Provenance::default(), &[]).await.unwrap().unwrap();
    tx.commit().await.unwrap();
    assert_eq!(read_on(&app, &b, &token, "N.md").await["structuredContent"]["content"], "back");
    // ...and is seen as soon as it is.
    let kv = obsidian_tc::app::Deps::new(&app.iso.config()).unwrap().kv;
    kv.bump_generation(otc_kv::Generation::Vault(tenant.vault_id)).await.unwrap();
    for base in [&b, &a] {
        assert_eq!(read_on(&app, base, &token, "N.md").await["structuredContent"]["content"], "sneaky");
    }
    second.stop().await.unwrap();
    app.stop().await;
}

/// As in Obsidian, a file or folder whose name starts with a dot (`.github/`, `Notes/.draft.md`)
/// is no note: not listed, read, searched, tagged, linked from or linked to; it stays in the
/// store and the sync API, as `.obsidian/` does.
#[tokio::test]
async fn dot_named_files_and_folders_are_no_notes() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let v = "Notes";
    commit(
        &app,
        &token,
        v,
        &[
            ("Home.md", Some("# Home\nSee [[CONTRIBUTING]] and [[Guide]].\n")),
            ("Guide.md", Some("# Guide\nzanzibar guide #public\n")),
            (".github/CONTRIBUTING.md", Some("# Contributing\nzanzibar rules #dotted [[Guide]] [[Ghost]]\n")),
            ("Notes/.draft.md", Some("# Draft\nzanzibar draft [[Guide]]\n")),
        ],
    )
    .await;
    let listed = ok(&app, &token, "list_notes", json!({"vault": v, "recursive": true})).await.to_string();
    assert!(listed.contains("Home.md") && !listed.contains(".github") && !listed.contains(".draft"), "{listed}");
    let r = call(&app, "/mcp", &token, "read_note", json!({"vault": v, "path": ".github/CONTRIBUTING.md"})).await;
    assert_eq!(error_of(&r)["code"], "note_not_found", "{r}");
    let found = ok(&app, &token, "search_text", json!({"vault": v, "query": "zanzibar"})).await.to_string();
    assert!(found.contains("Guide.md") && !found.contains(".github") && !found.contains(".draft"), "{found}");
    let found = ok(&app, &token, "search_vault", json!({"vault": v, "query": "zanzibar"})).await.to_string();
    assert!(!found.contains(".github") && !found.contains(".draft"), "{found}");
    let tags = ok(&app, &token, "list_tags", json!({"vault": v})).await.to_string();
    assert!(tags.contains("public") && !tags.contains("dotted"), "{tags}");
    let back = ok(&app, &token, "get_backlinks", json!({"vault": v, "path": "Guide.md"})).await;
    let sources: Vec<&str> =
        back["backlinks"].as_array().unwrap().iter().map(|b| b["source_path"].as_str().unwrap()).collect();
    assert_eq!(sources, ["Home.md"], "{back}");
    let unresolved = ok(&app, &token, "find_unresolved_links", json!({"vault": v, "response_format": "concise"})).await;
    let targets = unresolved_targets(&unresolved);
    assert_eq!(targets, [("Home.md", "CONTRIBUTING")], "a link to a dot-named note is unresolved, as in Obsidian");
    // The sync API still carries them.
    let (_, files) = crate::sync::api(&app, &token, reqwest::Method::GET, "/v1/vaults/Notes/files", None).await;
    assert!(files.to_string().contains(".github/CONTRIBUTING.md"), "{files}");
    app.stop().await;
}

/// find_unresolved_links' answer as (source path, target) pairs.
fn unresolved_targets(answer: &Value) -> Vec<(&str, &str)> {
    answer["unresolved"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| (u["source_path"].as_str().unwrap(), u["target"].as_str().unwrap()))
        .collect()
}
