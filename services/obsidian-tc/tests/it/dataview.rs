//! The Dataview subset and the bundles through the MCP surface, on notes with frontmatter,
//! inline fields, tags, links and tasks: queries run from the index without Obsidian, read
//! only what the caller may read, and refuse what they do not support with a typed error.

use serde_json::json;

use crate::acl::{run, token_for};
use crate::harness::{Tenant, TestApp};
use crate::index::commit;
use crate::write::{err, ok};

const V: &str = "Notes";

async fn vault() -> (TestApp, Tenant, String) {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    commit(&app, &token, V, &[
        ("Projects/Alpha.md", Some("---\nstatus: active\ntags: [project]\n---\n# Alpha\nowner:: Ada\nSee [[Beta]].\n- [ ] ship alpha 📅 2030-01-02\n- [x] plan alpha\n")),
        ("Projects/Beta.md", Some("---\nstatus: done\ntags: [project]\n---\n# Beta\nowner:: Bob\n[[Alpha]]\n")),
        ("Projects/Gamma.md", Some("---\nstatus: active\n---\n# Gamma\nowner:: Cy\n- [ ] start gamma\n")),
        ("Secret/Delta.md", Some("---\nstatus: active\ntags: [project]\n---\nowner:: Eve\n- [ ] hidden task\n")),
    ]).await;
    (app, tenant, token)
}

#[tokio::test]
async fn search_dql_runs_list_table_and_task_queries_from_the_index() {
    let (app, tenant, token) = vault().await;
    let listed =
        ok(&app, &token, "search_dql", json!({"vault": V, "dql": "LIST FROM #project SORT file.name ASC"})).await;
    assert_eq!(listed["kind"], "list");
    assert_eq!(listed["note_paths"], json!(["Projects/Alpha.md", "Projects/Beta.md", "Secret/Delta.md"]));
    // Flattened and sorted, a note's rows are apart; each note is still named once.
    let flat = ok(
        &app,
        &token,
        "search_dql",
        json!({"vault": V, "dql": "TABLE n FROM #project FLATTEN list(1, 2) AS n SORT n, file.name"}),
    )
    .await;
    assert_eq!(flat["total"], 6);
    assert_eq!(flat["note_paths"], json!(["Projects/Alpha.md", "Projects/Beta.md", "Secret/Delta.md"]));

    let table = ok(&app, &token, "search_dql", json!({"vault": V, "dql": "TABLE status, owner AS \"Owner\" FROM \"Projects\" WHERE status = \"active\" SORT file.name DESC", "format": "markdown"})).await;
    assert_eq!(table["headers"], json!(["File", "status", "Owner"]));
    let owners: Vec<&str> =
        table["rows"].as_array().unwrap().iter().map(|r| r["values"][2].as_str().unwrap()).collect();
    assert_eq!(owners, ["Cy", "Ada"]);
    assert_eq!(table["total"], 2);
    assert!(
        table["markdown"].as_str().unwrap().starts_with("| File | status | Owner |\n| --- | --- | --- |\n"),
        "{table}"
    );

    let tasks =
        ok(&app, &token, "search_dql", json!({"vault": V, "dql": "TASK FROM \"Projects\" WHERE !completed"})).await;
    let texts: Vec<&str> = tasks["rows"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["tasks"].as_array().unwrap())
        .map(|t| t["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts.len(), 2, "{tasks}");
    assert!(texts.iter().any(|t| t.starts_with("ship alpha")) && texts.iter().any(|t| t.starts_with("start gamma")));
    let grouped = ok(
        &app,
        &token,
        "search_dql",
        json!({"vault": V, "dql": "TABLE length(rows) AS n FROM #project GROUP BY status"}),
    )
    .await;
    assert_eq!(grouped["rows"].as_array().unwrap().len(), 2);

    let inlinks = ok(
        &app,
        &token,
        "eval_dataview_field",
        json!({"vault": V, "path": "Projects/Alpha.md", "expression": "length(file.inlinks)"}),
    )
    .await;
    assert_eq!(inlinks["value"], 1);
    let owner = ok(
        &app,
        &token,
        "eval_dataview_field",
        json!({"vault": V, "path": "Projects/Alpha.md", "expression": "upper(owner)"}),
    )
    .await;
    assert_eq!(owner["value"], "ADA");

    let valid = ok(
        &app,
        &token,
        "validate_dql",
        json!({"vault": V, "dql": "TABLE owner FROM #project WHERE status = \"active\""}),
    )
    .await;
    assert_eq!((valid["valid"].clone(), valid["kind"].clone()), (json!(true), json!("table")));
    let invalid = ok(&app, &token, "validate_dql", json!({"vault": V, "dql": "TABLE owner\nWHERE (status = "})).await;
    assert_eq!((invalid["valid"].clone(), invalid["errors"][0]["line"].clone()), (json!(false), json!(2)));

    for (args, code) in [
        (json!({"vault": V, "dql": "CALENDAR file.ctime"}), "dql_error"),
        (json!({"vault": V, "dql": "LIST WHERE"}), "dql_error"),
        (json!({"vault": V, "dql": "TABLE nosuchfunction(x)"}), "dql_error"),
        (json!({"vault": "Elsewhere", "dql": "LIST"}), "vault_not_found"),
    ] {
        assert_eq!(err(&app, &token, "search_dql", args.clone()).await["code"], code, "{args}");
    }
    assert_eq!(
        err(&app, &token, "eval_dataview_field", json!({"vault": V, "path": "Gone.md", "expression": "x"})).await["code"],
        "note_not_found"
    );

    // A principal who cannot read Secret/ gets no row, task or path of it.
    let bob = token_for(&app, &tenant, "bob", "read:notes,read:dataview").await;
    run(&app, &["acl", "set", "acme", "--vault", V, "--principal", "bob", "--read", "Projects/**"]);
    let seen = ok(&app, &bob, "search_dql", json!({"vault": V, "dql": "TASK FROM #project"})).await;
    assert!(!seen.to_string().contains("Secret") && !seen.to_string().contains("hidden task"), "{seen}");
    assert_eq!(
        err(&app, &bob, "eval_dataview_field", json!({"vault": V, "path": "Secret/Delta.md", "expression": "owner"}))
            .await["code"],
        "note_not_found"
    );
}

#[tokio::test]
async fn bundles_pack_notes_within_their_budget() {
    let (app, _, token) = vault().await;
    let files = ok(&app, &token, "bundle_files", json!({"vault": V, "paths": ["Projects/Beta.md", "Gone.md", "Projects/Alpha.md"], "include_frontmatter": false, "response_format": "detailed"})).await;
    assert_eq!(
        (files["file_count"].clone(), files["missing_paths"].clone(), files["truncated"].clone()),
        (json!(2), json!(["Gone.md"]), json!(false))
    );
    let bundle = files["bundle"].as_str().unwrap();
    assert!(
        bundle.starts_with("# Projects/Beta.md\n\n# Beta\nowner:: Bob\n[[Alpha]]\n\n---\n\n# Projects/Alpha.md\n"),
        "{bundle}"
    );
    assert!(!bundle.contains("status:"), "frontmatter left out");
    assert_eq!(files["files"][0]["path"], "Projects/Beta.md");
    let tight = ok(&app, &token, "bundle_files", json!({"vault": V, "paths": ["Projects/Alpha.md", "Projects/Beta.md"], "max_bytes": 1000, "format": "xml", "response_format": "concise"})).await;
    assert!(tight["bundle"].as_str().unwrap().starts_with("<file path=\"Projects/Alpha.md\">\n---\nstatus: active"));
    assert!(tight.get("files").is_none());

    let first = ok(&app, &token, "bundle_folder", json!({"vault": V, "root": "Projects", "max_files": 2})).await;
    assert_eq!((first["file_count"].clone(), first["truncated"].clone()), (json!(2), json!(true)));
    let rest = ok(
        &app,
        &token,
        "bundle_folder",
        json!({"vault": V, "root": "Projects", "max_files": 2, "cursor": first["next_cursor"]}),
    )
    .await;
    assert_eq!((rest["file_count"].clone(), rest["truncated"].clone()), (json!(1), json!(false)));
    assert!(rest["bundle"].as_str().unwrap().starts_with("# Projects/Gamma.md"));
    for (tool, args) in [
        ("bundle_files", json!({"vault": V, "paths": []})),
        ("bundle_files", json!({"vault": V, "paths": ["a.md"], "max_bytes": 10})),
        ("bundle_folder", json!({"vault": V, "root": "../x"})),
    ] {
        let e = err(&app, &token, tool, args.clone()).await;
        assert!(matches!(e["code"].as_str(), Some("invalid_input" | "path_invalid")), "{tool} {args}: {e}");
    }
}

/// A base as Obsidian writes it: filters, a formula, two views.
const BASE: &str = "filters:\n  and:\n    - file.inFolder(\"Projects\")\n    - file.hasTag(\"project\")\nformulas:\n  shout: owner_name.upper()\nproperties:\n  status:\n    displayName: Status\nviews:\n  - type: table\n    name: Active\n    filters:\n      and:\n        - status == \"active\"\n    order:\n      - file.name\n      - status\n    sort:\n      - property: file.name\n        direction: DESC\n  - type: cards\n    name: All\n";

#[tokio::test]
async fn bases_are_read_queried_created_and_patched() {
    let (app, _, token) = vault().await;
    commit(&app, &token, V, &[("Views/Projects.base", Some(BASE)), ("Views/Broken.base", Some("views: [\n"))]).await;
    let read = ok(&app, &token, "read_base", json!({"vault": V, "path": "Views/Projects.base"})).await;
    assert_eq!(read["views"], json!([{"name": "Active", "type": "table"}, {"name": "All", "type": "cards"}]));
    assert_eq!(read["base"]["formulas"]["shout"], "owner_name.upper()");

    let active = ok(&app, &token, "query_base", json!({"vault": V, "path": "Views/Projects.base"})).await;
    assert_eq!(
        (active["view"].clone(), active["columns"].clone(), active["total"].clone()),
        (json!("Active"), json!(["file.name", "status"]), json!(1))
    );
    assert_eq!(active["rows"][0]["path"], "Projects/Alpha.md");
    let all =
        ok(&app, &token, "query_base", json!({"vault": V, "path": "Views/Projects.base", "view": "All", "limit": 1}))
            .await;
    assert_eq!((all["total"].clone(), all["rows"].as_array().unwrap().len()), (json!(2), 1));
    let next = ok(
        &app,
        &token,
        "query_base",
        json!({"vault": V, "path": "Views/Projects.base", "view": "All", "limit": 1, "cursor": all["next_cursor"]}),
    )
    .await;
    assert_eq!(next["rows"].as_array().unwrap().len(), 1);
    let overridden = ok(
        &app,
        &token,
        "query_base",
        json!({"vault": V, "path": "Views/Projects.base", "override_filters": {"or": ["status == \"done\""]}}),
    )
    .await;
    assert_eq!(overridden["rows"][0]["path"], "Projects/Beta.md");

    let made = ok(&app, &token, "create_base", json!({"vault": V, "path": "Views/Done.base", "base": {"filters": "status == \"done\"", "views": [{"type": "table", "name": "Done"}]}})).await;
    assert_eq!((made["views"].clone(), made["created"].clone()), (json!(1), json!(true)));
    let done = ok(&app, &token, "query_base", json!({"vault": V, "path": "Views/Done.base"})).await;
    assert_eq!(done["rows"][0]["path"], "Projects/Beta.md");

    let patched = ok(&app, &token, "update_base", json!({"vault": V, "path": "Views/Projects.base", "prev_hash": read["content_hash"], "patch": {"properties": {"status": {"displayName": "State"}}}})).await;
    assert_eq!(patched["changed"], true);
    let text = crate::write::text(&app, &token, "Views/Projects.base").await.unwrap();
    assert_eq!(text, BASE.replace("displayName: Status", "displayName: State"), "only the patched value changed");

    let refusals = [
        ("read_base", json!({"vault": V, "path": "Projects/Alpha.md"}), "invalid_input"),
        ("read_base", json!({"vault": V, "path": "Views/Broken.base"}), "bases_syntax_error"),
        ("query_base", json!({"vault": V, "path": "Views/Projects.base", "view": "Nope"}), "invalid_input"),
        (
            "query_base",
            json!({"vault": V, "path": "Views/Projects.base", "override_filters": {"xor": []}}),
            "invalid_input",
        ),
        (
            "query_base",
            json!({"vault": V, "path": "Views/Projects.base", "override_filters": "this.file.name == \"x\""}),
            "unsupported_base_filter",
        ),
        ("create_base", json!({"vault": V, "path": "Views/Done.base", "base": {}}), "note_exists"),
        (
            "create_base",
            json!({"vault": V, "path": "Views/Bad.base", "base": {"formulas": {"x": "1 +"}}}),
            "invalid_input",
        ),
        (
            "update_base",
            json!({"vault": V, "path": "Views/Projects.base", "patch": {"formulas": {"shout": "((("}}}),
            "invalid_input",
        ),
        (
            "update_base",
            json!({"vault": V, "path": "Views/Projects.base", "patch": {}, "prev_hash": read["content_hash"]}),
            "concurrent_modification",
        ),
    ];
    for (tool, args, code) in refusals {
        assert_eq!(err(&app, &token, tool, args.clone()).await["code"], code, "{tool} {args}");
    }
}
