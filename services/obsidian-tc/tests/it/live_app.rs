//! The tools that need a live Obsidian app: hidden from listings unless the operator shows
//! them, callable by name, and answering plugin_unavailable with a hint that names the tool
//! doing the job on the files; and generate_uri, which works without one.

use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp};
use crate::mcp::{call, rpc};
use crate::write::{V, err, ok, setup_with};

const LIVE_APP: [&str; 19] = [
    "get_active_file",
    "append_active_file",
    "patch_active_file",
    "update_active_file",
    "delete_active_file",
    "execute_command",
    "list_commands",
    "show_file_in_obsidian",
    "list_quickadd_actions",
    "trigger_quickadd",
    "makemd_list_spaces",
    "makemd_query",
    "remotely_save_status",
    "remotely_save_trigger",
    "search_omnisearch",
    "query_datacore",
    "read_metadata_fields",
    "git_stage",
    "git_commit",
];

async fn listed(app: &TestApp, token: &str) -> Vec<String> {
    let result = rpc(app, "/mcp/full", token, "tools/list", json!({})).await;
    result["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn live_app_tools_are_hidden_by_default_and_answer_plugin_unavailable_with_a_headless_hint() {
    let (app, token) = setup_with(false, None).await;
    let names = listed(&app, &token).await;
    for tool in LIVE_APP {
        assert!(!names.iter().any(|n| n == tool), "{tool} is listed");
    }
    assert!(names.iter().any(|n| n == "list_kanban_boards") && names.iter().any(|n| n == "generate_uri"));
    // Called by name with the public implementation's arguments: the typed answer, not a
    // validation error, and a hint naming a tool this caller has.
    let e = err(
        &app,
        &token,
        "get_active_file",
        json!({"vault": V, "anchor": {"type": "heading", "value": "x"}, "response_format": "concise"}),
    )
    .await;
    assert_eq!((e["code"].clone(), e["retryable"].clone()), (json!("plugin_unavailable"), json!(false)));
    assert_eq!(e["details"]["needs"], "the file open in the app");
    assert!(e["hint"].as_str().unwrap().contains("read_note"), "{e}");
    for tool in LIVE_APP {
        let e = err(
            &app,
            &token,
            tool,
            json!({"vault": V, "command_id": "editor:save", "query": "x", "space_id": "s", "content": "x"}),
        )
        .await;
        assert_eq!(e["code"], "plugin_unavailable", "{tool}: {e}");
        let hint = e["hint"].as_str().unwrap();
        assert!(!hint.is_empty(), "{tool}");
        let unknown = err(&app, &token, tool, json!({"vault": "Elsewhere"})).await;
        assert_eq!(unknown["code"], "vault_not_found", "{tool}: {unknown}");
    }
    let remotely = err(&app, &token, "remotely_save_status", json!({"vault": V})).await;
    assert!(remotely["hint"].as_str().unwrap().contains("get_index_status"), "{remotely}");

    // Hidden is not unguarded: called by name, a hidden tool still needs its scopes.
    let tenant = Tenant::create(&app.store, "globex").await;
    let narrow = tenant.token_as(&app.store, "bob", "read:notes").await;
    let result = call(&app, "/mcp", &narrow, "search_omnisearch", json!({"vault": V, "query": "x"})).await;
    assert_eq!(result["structuredContent"]["code"], "forbidden", "{result}");
    assert_eq!(result["structuredContent"]["details"]["required"], json!(["read:omnisearch"]));
    // With the scope, a hint that names a tool the caller cannot reach gives way to the one
    // that names none.
    let scoped = tenant.token_as(&app.store, "carol", "read:omnisearch").await;
    let e = err(&app, &scoped, "search_omnisearch", json!({"vault": V, "query": "x"})).await;
    assert_eq!(e["code"], "plugin_unavailable");
    assert_eq!(e["hint"], "Omnisearch runs only inside the app. Use the server's own search.");
}

#[tokio::test]
async fn an_operator_can_list_the_live_app_tools() {
    let app = TestApp::spawn_with(|c| c.tool_visibility.show_live_app_tools = true).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let names = listed(&app, &token).await;
    for tool in LIVE_APP {
        assert!(names.iter().any(|n| n == tool), "{tool} is not listed");
    }
    let visibility = ok(&app, &token, "inspect_visibility", json!({"response_format": "detailed"})).await;
    let row = visibility["tools"].as_array().unwrap().iter().find(|t| t["name"] == "get_active_file").cloned();
    assert_eq!(row.map(|r| r["visibility"].clone()), Some(json!("listed")));
}

#[tokio::test]
async fn generate_uri_builds_obsidian_links() {
    let (app, token) = setup_with(false, None).await;
    let uri = ok(
        &app,
        &token,
        "generate_uri",
        json!({"vault_name": "My Vault", "action": "open", "params": {"file": "Projects/Plan (v2).md"}}),
    )
    .await;
    assert_eq!(uri["uri"], "obsidian://open?vault=My%20Vault&file=Projects%2FPlan%20(v2).md");
    let search = ok(&app, &token, "generate_uri", json!({"action": "search", "params": {"query": "#todo"}})).await;
    assert_eq!(search["uri"], "obsidian://search?query=%23todo");
    let bad = err(&app, &token, "generate_uri", json!({"action": "open", "params": {"content": "x"}})).await;
    assert_eq!(
        (bad["code"].clone(), bad["details"]["allowed"].clone()),
        (json!("invalid_input"), json!(["file", "path", "paneType"]))
    );
    let unknown = err(&app, &token, "generate_uri", json!({"action": "delete"})).await;
    assert_eq!(unknown["code"], Value::from("validation_error"));
}
