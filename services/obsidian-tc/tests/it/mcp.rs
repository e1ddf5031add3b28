//! The MCP surface through real clients (the Python SDK, the Inspector CLI) and raw JSON-RPC:
//! transports, facades, surfaces, profiles, visibility, errors and output schemas.

use std::time::Duration;

use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use reqwest::StatusCode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::harness::{Isolation, Tenant, TestApp, Transport, inspector, python_session};

/// A token with every scope for a fresh tenant of `app`.
async fn full_token(app: &TestApp) -> String {
    let tenant = Tenant::create(&app.store, "acme").await;
    tenant.token(&app.store, "*", false, None).await.0
}

/// One raw JSON-RPC request to an MCP path; returns (status, body).
pub(crate) async fn rpc_raw(
    app: &TestApp,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: Value,
) -> (StatusCode, String) {
    let mut request = app
        .http
        .post(app.url(path))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.json(&body).send().await.unwrap();
    let status = response.status();
    (status, response.text().await.unwrap())
}

pub(crate) async fn rpc(app: &TestApp, path: &str, token: &str, method: &str, params: Value) -> Value {
    let (status, body) =
        rpc_raw(app, path, Some(token), &[], json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let value: Value = serde_json::from_str(&body).unwrap();
    assert!(value.get("error").is_none(), "{method} failed: {value}");
    value["result"].clone()
}

async fn list_names(app: &TestApp, path: &str, token: &str) -> Vec<String> {
    let result = rpc(app, path, token, "tools/list", json!({})).await;
    result["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

pub(crate) async fn call(app: &TestApp, path: &str, token: &str, name: &str, args: Value) -> Value {
    rpc(app, path, token, "tools/call", json!({"name": name, "arguments": args})).await
}

/// A tool call on the gateway at `base` (`http://host:port`: one of several of the same
/// deployment): its result.
pub(crate) async fn call_on(app: &TestApp, base: &str, token: &str, tool: &str, args: Value) -> Value {
    call_at(&app.http, base, token, tool, args).await["result"].clone()
}

/// A tool call on the gateway (or proxy) at `base`: the whole JSON-RPC answer.
pub(crate) async fn call_at(http: &reqwest::Client, base: &str, token: &str, tool: &str, args: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}});
    let response = http
        .post(format!("{base}/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    response.json::<Value>().await.unwrap()
}

/// The structured error of a failed call.
pub(crate) fn error_of(result: &Value) -> &Value {
    assert_eq!(result["isError"], true, "expected a tool error: {result}");
    let err = &result["structuredContent"];
    for key in ["code", "message", "retryable", "hint", "details"] {
        assert!(err.get(key).is_some(), "error payload lacks {key}: {err}");
    }
    assert!(result["content"][0]["text"].as_str().unwrap().starts_with(err["code"].as_str().unwrap()));
    err
}

/// The triad and the connector fetch beside it (search joins when registered).
const TRIAD: [&str; 5] = ["find_capability", "describe_capability", "call_capability", "search", "fetch"];
/// The essentials subset, in listing order.
const ESSENTIALS: [&str; 34] = [
    "add_observation",
    "append_note",
    "cancel_task",
    "create_entity",
    "delete_note",
    "fetch",
    "find_notes_by_property",
    "find_unresolved_links",
    "get_backlinks",
    "get_index_status",
    "get_outgoing_links",
    "get_task_status",
    "index_vault",
    "knowledge_get_critical",
    "knowledge_search",
    "list_notes",
    "list_vaults",
    "move_note",
    "patch_note",
    "plur_recall",
    "query_entity_graph",
    "read_frontmatter",
    "read_note",
    "read_notes",
    "record_retrieval_feedback",
    "search",
    "search_and_read",
    "search_semantic",
    "search_text",
    "search_vault",
    "server_health",
    "update_frontmatter",
    "vault_context",
    "write_note",
];
/// The domain meta-tools a caller who may use everything sees, in listing order.
const DOMAINS: [&str; 13] = [
    "notes",
    "metadata",
    "links",
    "search",
    "vault",
    "attachments",
    "structured",
    "workspace",
    "automation",
    "git",
    "knowledge",
    "docs",
    "admin",
];

/// Every tool but the triad, in listing order.
const FLAT: [&str; 166] = [
    "add_bookmark",
    "add_kanban_card",
    "add_observation",
    "add_tag",
    "add_vault",
    "append_note",
    "append_to_periodic_note",
    "audit_provenance",
    "bulk_create_notes",
    "bulk_move_notes",
    "bulk_set_property",
    "bundle_files",
    "bundle_folder",
    "cancel_task",
    "close_goal",
    "commit_capture",
    "commit_wiki_page",
    "copy_note",
    "create_base",
    "create_canvas",
    "create_entity",
    "create_excalidraw",
    "create_periodic_note",
    "delete_attachment",
    "delete_entity",
    "delete_note",
    "diagnose_retrieval",
    "draft_wiki_page",
    "end_session",
    "enqueue_capture",
    "episode_stats",
    "eval_dataview_field",
    "execute_template",
    "explain_answer",
    "fetch",
    "find_existing_page",
    "find_link_cycles",
    "find_notes_by_property",
    "find_notes_by_tag",
    "find_or_create_periodic_note",
    "find_orphans",
    "find_unresolved_links",
    "format_table",
    "gap_report",
    "generate_uri",
    "get_attachment",
    "get_backlinks",
    "get_entity",
    "get_index_status",
    "get_link_strength",
    "get_metrics",
    "get_note_tags",
    "get_outgoing_links",
    "get_periodic_note",
    "get_provenance",
    "get_server_config",
    "get_session_traces",
    "get_task_status",
    "get_vault",
    "git_diff",
    "git_log",
    "git_status",
    "graph_centrality",
    "graph_communities",
    "graph_path_between",
    "index_vault",
    "insert_table_column",
    "insert_table_row",
    "inspect_acl",
    "inspect_visibility",
    "knowledge_challenge",
    "knowledge_get_critical",
    "knowledge_search",
    "link_entities",
    "lint_wiki",
    "list_attachments",
    "list_bookmarks",
    "list_capture_queue",
    "list_contradictions",
    "list_goals",
    "list_kanban_boards",
    "list_notes",
    "list_periodic_notes",
    "list_properties",
    "list_snapshots",
    "list_tags",
    "list_tasks",
    "list_templates",
    "list_vaults",
    "list_workspaces",
    "move_attachment",
    "move_kanban_card",
    "move_note",
    "note_exists",
    "note_quality_report",
    "ocr_attachment",
    "ocr_bulk",
    "open_workspace",
    "patch_note",
    "plur_get",
    "plur_recall",
    "plur_recall_hybrid",
    "plur_similarity_search",
    "prune_hub_links",
    "query_base",
    "query_canvas",
    "query_entity_graph",
    "read_base",
    "read_canvas",
    "read_excalidraw",
    "read_frontmatter",
    "read_kanban_board",
    "read_note",
    "read_notes",
    "read_property",
    "read_resources",
    "read_snapshot",
    "record_retrieval_feedback",
    "reflect",
    "refresh_plugin_capabilities",
    "reload_vault",
    "remove_bookmark",
    "remove_tag",
    "rename_entity",
    "reset_vault_cache",
    "resolve_daily_note",
    "restore_note",
    "restore_vault",
    "rewrite_link",
    "save_workspace",
    "search",
    "search_and_read",
    "search_dql",
    "search_jsonlogic",
    "search_regex",
    "search_semantic",
    "search_text",
    "search_vault",
    "server_health",
    "session_bootstrap",
    "session_rerun",
    "set_goal",
    "snapshot_note",
    "sort_table_by_column",
    "start_session",
    "suggest_links",
    "suggest_tags",
    "tasks_filter",
    "unlink_entities",
    "update_base",
    "update_canvas",
    "update_excalidraw",
    "update_frontmatter",
    "update_observation",
    "update_task",
    "validate_dql",
    "vault_context",
    "vault_graph_search",
    "vault_health_score",
    "work_episode_chain",
    "work_episodes",
    "work_forget",
    "work_result",
    "work_search",
    "write_attachment",
    "write_note",
];

#[tokio::test]
async fn the_python_sdk_over_http_negotiates_lists_and_calls() {
    let app = TestApp::spawn().await;
    let token = full_token(&app).await;
    let out = python_session(
        Transport::Http { url: app.url("/mcp"), token: &token },
        json!([
            {"op": "list_tools"},
            {"op": "call", "name": "server_health", "args": {}},
            {"op": "call", "name": "call_capability", "args": {"name": "find_capability", "args": {"query": "which rule hides a tool"}}},
            {"op": "call", "name": "find_capability", "args": {"query": ""}},
            {"op": "call", "name": "no_such_tool", "args": {}},
            {"op": "call", "name": "call_capability", "args": {"name": "find_capability", "arguments": {"query": "x"}}}
        ]),
    )
    .await;
    assert_eq!(out["protocol_version"], "2025-11-25");
    assert_eq!(out["server_name"], "obsidian-tc");
    assert_eq!(out["server_version"], env!("CARGO_PKG_VERSION"));
    assert!(out["instructions"].as_str().unwrap().starts_with("Find tools with find_capability"));

    let tools = out["results"][0].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, TRIAD);
    for tool in tools {
        assert_eq!(tool["_meta"]["anthropic/alwaysLoad"], true, "{tool}");
        assert!(tool["title"].is_string());
        assert_eq!(tool["annotations"]["readOnlyHint"], true);
    }
    let health = &out["results"][1];
    assert_eq!(health["isError"], false);
    assert_eq!(health["structuredContent"]["status"], "ok");
    let found = &out["results"][2];
    assert_eq!(found["structuredContent"]["results"][0]["name"], "inspect_visibility", "{found}");
    let invalid = error_of(&out["results"][3]);
    assert_eq!(invalid["code"], "validation_error");
    assert_eq!(invalid["details"]["field"], "query");
    assert_eq!(invalid["retryable"], false);
    let unknown = error_of(&out["results"][4]);
    assert_eq!(unknown["code"], "not_found");
    assert!(
        unknown["hint"].as_str().unwrap().contains("find_capability"),
        "an unknown tool points at discovery: {unknown}"
    );
    // A misspelt envelope key is refused by call_capability's own schema, naming the key.
    let envelope = error_of(&out["results"][5]);
    assert_eq!(envelope["code"], "validation_error");
    assert!(envelope["message"].as_str().unwrap().contains("arguments"), "{envelope}");
    app.stop().await;
}

#[tokio::test]
async fn the_python_sdk_over_stdio_and_dev_stdio() {
    let iso = Isolation::new().await;
    let store = iso.store();
    let tenant = Tenant::create(&store, "acme").await;
    let (token, _) = tenant.token(&store, "read:notes", false, None).await;
    let mut env = iso.env();
    env.push(("OTC_TOKEN".into(), token));
    let steps = json!([
        {"op": "list_tools"},
        {"op": "call", "name": "server_health", "args": {}},
        {"op": "call", "name": "get_server_config", "args": {}}
    ]);
    let out = python_session(Transport::Stdio { args: vec!["stdio".into()], env: env.clone() }, steps.clone()).await;
    assert_eq!(out["protocol_version"], "2025-11-25");
    assert_eq!(out["server_name"], "obsidian-tc");
    let names: Vec<&str> = out["results"][0].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, TRIAD);
    assert_eq!(out["results"][1]["structuredContent"]["status"], "ok");
    // The token holds read:notes only: the admin tool is refused with the scope it needs.
    let denied = error_of(&out["results"][2]);
    assert_eq!(denied["code"], "forbidden");
    assert_eq!(denied["details"]["required"], json!(["admin:config"]));

    // `dev --stdio`: the embedded default, speaking MCP on stdout and nothing else.
    let data = std::env::temp_dir().join(format!("otc-dev-{}", uuid::Uuid::new_v4().simple()));
    let vault = data.join("sample-vault");
    crate::harness::copy_dir(
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/sample-vault")),
        &vault,
    );
    let args = vec![
        "dev".into(),
        "--vault".into(),
        vault.display().to_string(),
        "--stdio".into(),
        "--data-dir".into(),
        data.join("state").display().to_string(),
    ];
    let out = python_session(Transport::Stdio { args, env: iso.env() }, steps).await;
    assert_eq!(out["server_name"], "obsidian-tc");
    assert_eq!(out["results"][1]["structuredContent"]["status"], "ok");
    assert_eq!(out["results"][2]["isError"], false, "the dev token holds every scope");
    let _ = std::fs::remove_dir_all(data);
}

#[tokio::test]
async fn the_inspector_cli_finds_no_portability_problem_on_any_surface() {
    let app = TestApp::spawn().await;
    let token = full_token(&app).await;
    let header = format!("Authorization: Bearer {token}");
    for path in ["/mcp", "/mcp/triad", "/mcp/domain", "/mcp/essentials", "/mcp/core", "/mcp/full"] {
        let url = app.url(path);
        let out =
            inspector(&[&url, "--transport", "http", "--header", &header, "--method", "tools/list", "--strict"]).await;
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{path}: exit {:?}\n{stdout}\n{stderr}", out.status.code());
        assert!(!stderr.contains("Warning") && !stderr.contains("Error"), "{path}: {stderr}");
        assert!(stdout.contains("\"tools\""), "{path}: {stdout}");
    }
    // A call through the Inspector, too.
    let url = app.url("/mcp/full");
    let out = inspector(&[
        &url,
        "--transport",
        "http",
        "--header",
        &header,
        "--method",
        "tools/call",
        "--tool-name",
        "server_health",
    ])
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("\"status\": \"ok\"")
            || String::from_utf8_lossy(&out.stdout).contains("\"status\":\"ok\"")
    );
    app.stop().await;
}

#[tokio::test]
async fn the_inspector_cli_over_stdio() {
    let iso = Isolation::new().await;
    let store = iso.store();
    let tenant = Tenant::create(&store, "acme").await;
    let (token, _) = tenant.token(&store, "*", false, None).await;
    let bin = env!("CARGO_BIN_EXE_obsidian-tc");
    let mut args: Vec<String> = vec![bin.into(), "stdio".into(), "-e".into(), format!("OTC_TOKEN={token}")];
    for (k, v) in iso.env() {
        args.push("-e".into());
        args.push(format!("{k}={v}"));
    }
    args.extend(["--method", "tools/list", "--strict"].map(String::from));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = inspector(&refs).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("Warning") && !stderr.contains("Error"), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("find_capability"));
}

#[tokio::test]
async fn surfaces_advertise_their_subsets_and_everything_stays_callable_by_name() {
    let app = TestApp::spawn().await;
    let token = full_token(&app).await;
    assert_eq!(list_names(&app, "/mcp", &token).await, TRIAD);
    assert_eq!(list_names(&app, "/mcp/triad", &token).await, TRIAD);
    assert_eq!(list_names(&app, "/mcp/domain", &token).await, DOMAINS);
    assert_eq!(list_names(&app, "/mcp/full", &token).await, FLAT);
    let full_only = [
        "get_attachment",
        "list_attachments",
        "get_provenance",
        "write_attachment",
        "move_attachment",
        "delete_attachment",
        "restore_vault",
        "commit_wiki_page",
        "draft_wiki_page",
        "find_existing_page",
        "find_link_cycles",
        "graph_centrality",
        "graph_communities",
        "lint_wiki",
        "prune_hub_links",
        // Structured documents, periodic notes, bookmarks, workspaces, templates, tasks, links,
        // Dataview, OCR and the vault's history: full only, as in the catalogue.
        "ocr_attachment",
        "ocr_bulk",
        "create_base",
        "query_base",
        "read_base",
        "update_base",
        "eval_dataview_field",
        "search_dql",
        "validate_dql",
        "git_diff",
        "git_log",
        "git_status",
        "add_bookmark",
        "list_bookmarks",
        "list_workspaces",
        "open_workspace",
        "remove_bookmark",
        "save_workspace",
        "create_canvas",
        "create_excalidraw",
        "list_tasks",
        "query_canvas",
        "read_canvas",
        "read_excalidraw",
        "tasks_filter",
        "update_canvas",
        "update_excalidraw",
        "update_task",
        "add_kanban_card",
        "append_to_periodic_note",
        "create_periodic_note",
        "execute_template",
        "find_or_create_periodic_note",
        "format_table",
        "generate_uri",
        "get_periodic_note",
        "insert_table_column",
        "insert_table_row",
        "list_kanban_boards",
        "list_periodic_notes",
        "list_templates",
        "move_kanban_card",
        "read_kanban_board",
        "resolve_daily_note",
        "sort_table_by_column",
        // The vault administration the catalogue puts in tools, and suggest_tags.
        "add_vault",
        "refresh_plugin_capabilities",
        "reload_vault",
        "reset_vault_cache",
        "session_rerun",
        "suggest_tags",
    ];
    let core: Vec<&str> = FLAT.into_iter().filter(|n| !full_only.contains(n)).collect();
    assert_eq!(list_names(&app, "/mcp/core", &token).await, core);
    assert_eq!(list_names(&app, "/mcp/essentials", &token).await, ESSENTIALS);

    let (status, _) =
        rpc_raw(&app, "/mcp/bogus", Some(&token), &[], json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Every tool by name on every surface, and domain envelopes on every surface.
    for path in ["/mcp", "/mcp/domain", "/mcp/essentials", "/mcp/full"] {
        for name in ["server_health", "find_capability"] {
            let args = if name == "find_capability" { json!({"query": "health"}) } else { json!({}) };
            assert_eq!(call(&app, path, &token, name, args).await["isError"], false, "{path} {name}");
        }
        let via_domain = call(&app, path, &token, "admin", json!({"action": "server_health", "args": {}})).await;
        assert_eq!(via_domain["structuredContent"]["status"], "ok", "{path}: {via_domain}");
    }
    let listed = rpc(&app, "/mcp/domain", &token, "tools/list", json!({})).await;
    let domain_tool = listed["tools"].as_array().unwrap().iter().find(|t| t["name"] == "admin").unwrap();
    let actions = domain_tool["inputSchema"]["properties"]["action"]["enum"].as_array().unwrap();
    let admin = [
        "cancel_task",
        "get_index_status",
        "get_metrics",
        "get_server_config",
        "get_task_status",
        "inspect_acl",
        "inspect_visibility",
        "server_health",
        "session_rerun",
    ];
    assert_eq!(actions.iter().map(|a| a.as_str().unwrap()).collect::<Vec<_>>(), admin, "{domain_tool}");
    assert!(domain_tool["description"].as_str().unwrap().contains("server_health"));

    let missing_action = call(&app, "/mcp/domain", &token, "admin", json!({"args": {}})).await;
    assert_eq!(error_of(&missing_action)["details"]["field"], "action");
    let facade =
        call(&app, "/mcp/domain", &token, "admin", json!({"action": "find_capability", "args": {"query": "x"}})).await;
    assert_eq!(error_of(&facade)["code"], "invalid_input");
    let unknown = call(&app, "/mcp/domain", &token, "admin", json!({"action": "nothing_here"})).await;
    assert_eq!(error_of(&unknown)["code"], "not_found");
    let selfcall = call(&app, "/mcp", &token, "call_capability", json!({"name": "call_capability", "args": {}})).await;
    assert_eq!(error_of(&selfcall)["details"]["field"], "name", "call_capability names the operation and the field");
    let stray = call(&app, "/mcp/domain", &token, "admin", json!({"action": "server_health", "extra": 1})).await;
    assert_eq!(error_of(&stray)["details"]["field"], "extra");
    app.stop().await;
}

#[tokio::test]
async fn authentication_hosts_and_origins_are_checked() {
    let app = TestApp::spawn().await;
    let token = full_token(&app).await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let response = app.http.post(app.url("/mcp")).json(&list).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(response.headers().contains_key("www-authenticate"));
    let (status, _) =
        rpc_raw(&app, "/mcp/full", Some(&token), &[("origin", "https://evil.example")], list.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a foreign Origin is refused");
    let (status, _) = rpc_raw(&app, "/mcp", Some(&token), &[("origin", "http://localhost:3000")], list.clone()).await;
    assert_eq!(status, StatusCode::OK, "an allowed Origin passes");
    let (status, _) = rpc_raw(&app, "/mcp", Some(&token), &[("host", "evil.example")], list.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a foreign Host is refused");
    // A client asking for a newer protocol is served 2025-11-25 on initialize.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2026-07-28", "capabilities": {}, "clientInfo": {"name": "future", "version": "1"}}});
    let (status, body) = rpc_raw(&app, "/mcp", Some(&token), &[], init).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["result"]["protocolVersion"], "2025-11-25");
    // A 2026-07-28 client, which sends no initialize and names the protocol on each request.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "future", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}});
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "server_health", "arguments": {}, "_meta": meta}});
    let headers = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "server_health")];
    let (status, body) = rpc_raw(&app, "/mcp", Some(&token), &headers, call).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["result"]["structuredContent"]["status"], "ok", "{body}");
    app.stop().await;
}

/// A tool outside the core profile, to see what `core` does to one.
struct FullOnlyProbe;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ProbeInput {}

#[derive(Serialize, JsonSchema)]
struct ProbeOutput {
    ok: bool,
}

impl otc_kernel::Tool for FullOnlyProbe {
    type Input = ProbeInput;
    type Output = ProbeOutput;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        core: false,
        response_format: Format::Fixed { why: "test probe" },
        ..ToolSpec::base("graph_probe", "Graph probe", "Computes a probe over the link graph.", Domain::Structured)
    };

    async fn call(_ctx: &otc_kernel::CallContext<'_>, _input: ProbeInput) -> Result<ProbeOutput, ToolError> {
        Ok(ProbeOutput { ok: true })
    }
}

#[tokio::test]
async fn the_core_profile_hides_a_tool_and_every_door_names_the_setting() {
    let app = TestApp::spawn_with_tools(
        |c| c.tool_facade.profile = otc_config::ProfileSetting::Core,
        vec![otc_kernel::entry::<FullOnlyProbe>()],
    )
    .await;
    let token = full_token(&app).await;
    assert!(!list_names(&app, "/mcp/full", &token).await.contains(&"graph_probe".to_string()));
    assert!(!list_names(&app, "/mcp/domain", &token).await.contains(&"structured".to_string()));

    let found = call(&app, "/mcp", &token, "find_capability", json!({"query": "graph probe"})).await;
    let hidden = &found["structuredContent"]["hidden_by_profile"];
    // The probe, and the catalogue's own full-only graph tools the words also match.
    assert_eq!(hidden["names"][0], "graph_probe", "{found}");
    assert_eq!(hidden["count"], hidden["names"].as_array().unwrap().len(), "{found}");
    assert_eq!(hidden["setting"], "tool_facade.profile");

    let check = |result: Value| {
        let err = error_of(&result).clone();
        assert_eq!(err["code"], "forbidden");
        assert_eq!(err["details"]["reason"], "capability_hidden");
        assert_eq!(err["details"]["setting"], "tool_facade.profile");
        assert!(err["message"].as_str().unwrap().contains("graph_probe"));
    };
    check(call(&app, "/mcp", &token, "describe_capability", json!({"name": "graph_probe"})).await);
    check(call(&app, "/mcp", &token, "call_capability", json!({"name": "graph_probe"})).await);
    check(call(&app, "/mcp/full", &token, "graph_probe", json!({})).await);
    check(call(&app, "/mcp", &token, "links", json!({"action": "graph_probe"})).await);

    let inspected = call(&app, "/mcp", &token, "inspect_visibility", json!({"tool": "graph_probe"})).await;
    assert_eq!(inspected["structuredContent"]["tools"][0]["reason"], "disabled_by_profile");
    let init =
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
    let instructions =
        rpc(&app, "/mcp", &token, "initialize", init).await["instructions"].as_str().unwrap().to_string();
    let hidden = otc_tools::toolset::all().iter().filter(|t| !t.declaration.spec.core).count() + 1;
    assert!(instructions.contains(&format!("{hidden} more tool(s)")), "{instructions}");
    app.stop().await;

    // Under the full profile the same tool is listed and runs.
    let app = TestApp::spawn_with_tools(|_| {}, vec![otc_kernel::entry::<FullOnlyProbe>()]).await;
    let token = full_token(&app).await;
    assert!(list_names(&app, "/mcp/full", &token).await.contains(&"graph_probe".to_string()));
    assert_eq!(call(&app, "/mcp", &token, "graph_probe", json!({})).await["structuredContent"]["ok"], true);
    app.stop().await;
}

#[tokio::test]
async fn visibility_rules_hide_disable_and_deny() {
    let app = TestApp::spawn_with(|c| {
        c.tool_visibility.hidden = vec!["server_health".into()];
        c.tool_visibility.disabled = vec!["get_server_config".into()];
    })
    .await;
    let token = full_token(&app).await;
    let others: Vec<&str> = FLAT.into_iter().filter(|n| !["server_health", "get_server_config"].contains(n)).collect();
    assert_eq!(list_names(&app, "/mcp/full", &token).await, others);
    // Hidden: not listed, not found by search, still callable.
    let found = call(&app, "/mcp", &token, "find_capability", json!({"query": "server health"})).await;
    assert!(found["structuredContent"]["results"].as_array().unwrap().iter().all(|h| h["name"] != "server_health"));
    assert_eq!(call(&app, "/mcp", &token, "server_health", json!({})).await["isError"], false);
    // Disabled: as if never registered.
    for result in [
        call(&app, "/mcp", &token, "get_server_config", json!({})).await,
        call(&app, "/mcp", &token, "describe_capability", json!({"name": "get_server_config"})).await,
    ] {
        assert_eq!(error_of(&result)["code"], "not_found");
    }
    let inspected = call(&app, "/mcp", &token, "inspect_visibility", json!({"response_format": "concise"})).await;
    let rows = inspected["structuredContent"]["tools"].as_array().unwrap().clone();
    let row = |name: &str| rows.iter().find(|r| r["name"] == name).unwrap().clone();
    assert_eq!(row("server_health")["reason"], "hidden_name");
    assert_eq!(row("get_server_config")["visibility"], "disabled");
    assert!(row("server_health").get("tags").is_none(), "concise drops tags");
    let summary = &inspected["structuredContent"]["summary"];
    // server_health, and the 19 tools that need a live Obsidian app.
    assert_eq!((summary["hidden"].as_u64(), summary["disabled"].as_u64()), (Some(20), Some(1)));
    app.stop().await;

    // Tags: hidden and disabled by tag, with the matching tag reported.
    let app = TestApp::spawn_with(|c| c.tool_visibility.disabled_tags = vec!["admin".into()]).await;
    let token = full_token(&app).await;
    let untagged: Vec<&str> = FLAT
        .into_iter()
        .filter(|n| {
            ![
                "add_vault",
                "get_metrics",
                "get_server_config",
                "index_vault",
                "inspect_acl",
                "inspect_visibility",
                "refresh_plugin_capabilities",
                "reload_vault",
                "reset_vault_cache",
                "restore_vault",
                "session_rerun",
            ]
            .contains(n)
        })
        .collect();
    assert_eq!(list_names(&app, "/mcp/full", &token).await, untagged);
    assert_eq!(error_of(&call(&app, "/mcp", &token, "get_server_config", json!({})).await)["code"], "not_found");
    app.stop().await;
    let app = TestApp::spawn_with(|c| c.tool_visibility.hidden_tags = vec!["admin".into()]).await;
    let token = full_token(&app).await;
    let inspected = call(&app, "/mcp", &token, "inspect_visibility", json!({"tool": "get_server_config"})).await;
    assert_eq!(inspected["structuredContent"]["tools"][0]["matched_tag"], "admin");
    assert_eq!(inspected["structuredContent"]["tools"][0]["reason"], "hidden_tag");
    app.stop().await;
}

#[tokio::test]
async fn scopes_filter_the_listing_and_refuse_the_call() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (reader, _) = tenant.token(&app.store, "read:notes", false, None).await;
    // Every tool that needs more than read:notes.
    let beyond: &[&str] = &[
        "add_tag",
        "add_vault",
        "refresh_plugin_capabilities",
        "reload_vault",
        "reset_vault_cache",
        "session_rerun",
        "append_note",
        "bulk_create_notes",
        "bulk_move_notes",
        "bulk_set_property",
        "copy_note",
        "commit_wiki_page",
        "delete_attachment",
        "delete_note",
        "get_attachment",
        "get_metrics",
        "get_provenance",
        "get_server_config",
        "get_vault",
        "index_vault",
        "inspect_acl",
        "inspect_visibility",
        "list_attachments",
        "list_vaults",
        "move_attachment",
        "move_note",
        "patch_note",
        "prune_hub_links",
        "remove_tag",
        "restore_note",
        "restore_vault",
        "rewrite_link",
        "update_frontmatter",
        "write_attachment",
        "write_note",
        "add_kanban_card",
        "append_to_periodic_note",
        "create_periodic_note",
        "execute_template",
        "find_or_create_periodic_note",
        "format_table",
        "get_periodic_note",
        "insert_table_column",
        "insert_table_row",
        "list_periodic_notes",
        "list_templates",
        "move_kanban_card",
        "resolve_daily_note",
        "sort_table_by_column",
        "create_canvas",
        "create_excalidraw",
        "list_tasks",
        "query_canvas",
        "read_canvas",
        "read_excalidraw",
        "tasks_filter",
        "update_canvas",
        "update_excalidraw",
        "update_task",
        "add_bookmark",
        "list_bookmarks",
        "list_workspaces",
        "open_workspace",
        "remove_bookmark",
        "save_workspace",
        "git_diff",
        "git_log",
        "git_status",
        "bundle_files",
        "bundle_folder",
        "eval_dataview_field",
        "search_dql",
        "validate_dql",
        "create_base",
        "query_base",
        "read_base",
        "update_base",
        "ocr_attachment",
        "ocr_bulk",
        "add_observation",
        "create_entity",
        "delete_entity",
        "get_entity",
        "link_entities",
        "query_entity_graph",
        "rename_entity",
        "unlink_entities",
        "update_observation",
        "enqueue_capture",
        "list_capture_queue",
        "commit_capture",
        "start_session",
        "end_session",
        "get_session_traces",
        "set_goal",
        "close_goal",
        "work_episodes",
        "work_episode_chain",
        "work_search",
        "work_result",
        "work_forget",
        "episode_stats",
        "record_retrieval_feedback",
        "plur_get",
        "plur_recall",
        "plur_recall_hybrid",
        "plur_similarity_search",
        "knowledge_search",
        "knowledge_get_critical",
    ];
    let readable: Vec<&str> = FLAT.into_iter().filter(|n| !beyond.contains(n)).collect();
    assert_eq!(list_names(&app, "/mcp/full", &reader).await, readable);
    let denied = call(&app, "/mcp", &reader, "get_server_config", json!({})).await;
    let err = error_of(&denied);
    assert_eq!(err["code"], "forbidden");
    assert_eq!(err["details"]["required"], json!(["admin:config"]));
    // Describing a tool the caller cannot call reads as absent.
    let described = call(&app, "/mcp", &reader, "describe_capability", json!({"name": "inspect_visibility"})).await;
    assert_eq!(error_of(&described)["code"], "not_found");
    let found = call(&app, "/mcp", &reader, "find_capability", json!({"query": "configuration"})).await;
    assert!(found["structuredContent"]["results"].as_array().unwrap().iter().all(|h| h["name"] != "get_server_config"));
    app.stop().await;
}

#[tokio::test]
async fn facade_modes_and_advertise_settings() {
    let app = TestApp::spawn_with(|c| c.tool_facade.mode = otc_config::FacadeModeSetting::Flat).await;
    let token = full_token(&app).await;
    assert_eq!(list_names(&app, "/mcp", &token).await, FLAT);
    assert_eq!(list_names(&app, "/mcp/triad", &token).await, TRIAD, "the URL wins over the mode");
    app.stop().await;

    let app = TestApp::spawn_with(|c| c.tool_facade.mode = otc_config::FacadeModeSetting::Domain).await;
    let token = full_token(&app).await;
    assert_eq!(list_names(&app, "/mcp", &token).await, DOMAINS);
    app.stop().await;

    let app = TestApp::spawn_with(|c| c.tool_facade.advertise = otc_config::AdvertiseSetting::Essentials).await;
    let token = full_token(&app).await;
    assert_eq!(list_names(&app, "/mcp", &token).await, ESSENTIALS);
    app.stop().await;

    // auto: deprecated, resolves to triad, reported by server_health with its explanation.
    let app = TestApp::spawn_with(|c| c.tool_facade.mode = otc_config::FacadeModeSetting::Auto).await;
    let token = full_token(&app).await;
    assert_eq!(list_names(&app, "/mcp", &token).await, TRIAD);
    let health = call(&app, "/mcp", &token, "server_health", json!({})).await;
    let facade = &health["structuredContent"]["tool_facade"];
    assert_eq!(facade["configured_mode"], "auto");
    assert_eq!(facade["listing"], "triad");
    assert!(facade["deprecations"][0].as_str().unwrap().contains("deprecated"), "{facade}");
    assert_eq!(facade["explanation"]["rule"], "no-client-name");
    app.stop().await;
}

#[tokio::test]
async fn auto_clients_pick_a_mode_by_client_name_over_stdio() {
    let iso = Isolation::new().await;
    let store = iso.store();
    let tenant = Tenant::create(&store, "acme").await;
    let (token, _) = tenant.token(&store, "*", false, None).await;
    let mut env = iso.env();
    env.push(("OTC_TOKEN".into(), token));
    env.push(("OTC__TOOL_FACADE__MODE".into(), "auto".into()));
    env.push(("OTC__TOOL_FACADE__EXPLAIN_AUTO_MODE".into(), "true".into()));
    let file = std::env::temp_dir().join(format!("otc-auto-{}.toml", uuid::Uuid::new_v4().simple()));
    // The Python SDK introduces itself as "mcp".
    std::fs::write(&file, "[tool_facade.auto_clients]\nnobody = \"domain\"\nmcp = \"flat\"\n").unwrap();
    let args = vec!["--config".into(), file.display().to_string(), "stdio".into()];
    let out = python_session(
        Transport::Stdio { args, env },
        json!([{"op": "list_tools"}, {"op": "call", "name": "server_health", "args": {}}]),
    )
    .await;
    std::fs::remove_file(&file).unwrap();
    let names: Vec<&str> = out["results"][0].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, FLAT, "auto_clients mapped mcp to flat");
    let explanation = &out["results"][1]["structuredContent"]["tool_facade"]["explanation"];
    assert_eq!(explanation["rule"], "configured-override", "{explanation}");
    assert_eq!(explanation["matched_key"], "mcp");
    assert_eq!(explanation["configured_keys"], json!(["nobody", "mcp"]));
}

#[tokio::test]
async fn response_formats_and_the_governor() {
    let app =
        TestApp::spawn_with(|c| c.tools.defaults.response_format = otc_config::ResponseFormatSetting::Concise).await;
    let token = full_token(&app).await;
    let concise = call(&app, "/mcp", &token, "get_server_config", json!({})).await;
    assert!(concise["structuredContent"].get("tool_visibility").is_none(), "the configured default is concise");
    let detailed = call(&app, "/mcp", &token, "get_server_config", json!({"response_format": "detailed"})).await;
    assert!(detailed["structuredContent"].get("tool_visibility").is_some());
    let alias = call(&app, "/mcp", &token, "get_server_config", json!({"verbosity": "full"})).await;
    assert!(alias["structuredContent"].get("observability").is_some(), "verbosity full is detailed");
    let both =
        call(&app, "/mcp", &token, "get_server_config", json!({"response_format": "concise", "verbosity": "full"}))
            .await;
    assert!(both["structuredContent"].get("observability").is_none(), "response_format wins over verbosity");
    let bad = call(&app, "/mcp", &token, "get_server_config", json!({"response_format": "loud"})).await;
    assert_eq!(error_of(&bad)["details"]["field"], "response_format");
    app.stop().await;

    let app = TestApp::spawn_with(|c| c.governor.max_response_bytes = 1024).await;
    let token = full_token(&app).await;
    let big = call(&app, "/mcp", &token, "describe_capability", json!({"name": "inspect_visibility"})).await;
    let err = error_of(&big);
    assert_eq!(err["code"], "overflow");
    assert_eq!(err["details"]["limit"], 1024);
    assert_eq!(call(&app, "/mcp", &token, "server_health", json!({})).await["isError"], false, "small results pass");
    app.stop().await;
}

/// Arguments that make each tool succeed; a new tool must add its own here. `task_id` is a
/// task of the caller's, `snapshot_id` a snapshot of A.md.
fn sample_calls(task_id: &str, snapshot_id: &str) -> Vec<(&'static str, Value)> {
    let v = "Notes";
    let scan = {
        use base64::Engine;
        let png = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ocr/whiteboard.png");
        base64::engine::general_purpose::STANDARD.encode(std::fs::read(png).unwrap())
    };
    vec![
        ("read_note", json!({"vault": v, "path": "A.md"})),
        ("read_note", json!({"vault": v, "path": "A.md", "response_format": "concise"})),
        ("read_note", json!({"vault": v, "path": "A.md", "format": "content"})),
        ("read_note", json!({"vault": v, "path": "A.md", "format": "full", "include_links": true})),
        ("read_note", json!({"vault": v, "path": "A.md", "format": "document-map"})),
        ("read_note", json!({"vault": v, "path": "A.md", "anchor": {"type": "heading", "heading": "Top"}})),
        ("read_note", json!({"vault": v, "path": "A.md", "anchor": {"type": "frontmatter", "field": "up"}})),
        ("note_exists", json!({"vault": v, "path": "A.md"})),
        ("list_notes", json!({"vault": v, "response_format": "detailed"})),
        ("list_notes", json!({"vault": v, "response_format": "concise"})),
        ("read_frontmatter", json!({"vault": v, "path": "A.md", "response_format": "detailed"})),
        ("read_frontmatter", json!({"vault": v, "path": "A.md", "response_format": "concise"})),
        ("get_note_tags", json!({"vault": v, "path": "A.md", "response_format": "detailed"})),
        ("get_note_tags", json!({"vault": v, "path": "A.md", "response_format": "concise"})),
        ("get_outgoing_links", json!({"vault": v, "path": "A.md", "response_format": "detailed"})),
        ("get_outgoing_links", json!({"vault": v, "path": "A.md", "response_format": "concise"})),
        ("get_backlinks", json!({"vault": v, "path": "A.md", "response_format": "detailed"})),
        ("get_backlinks", json!({"vault": v, "path": "A.md", "response_format": "concise"})),
        ("find_unresolved_links", json!({"vault": v, "response_format": "detailed"})),
        ("find_unresolved_links", json!({"vault": v, "response_format": "concise"})),
        ("find_orphans", json!({"vault": v})),
        ("list_vaults", json!({})),
        ("get_vault", json!({"vault": v})),
        ("read_notes", json!({"vault": v, "paths": ["A.md", "B.md", "Nope.md"], "response_format": "detailed"})),
        ("read_notes", json!({"vault": v, "paths": ["A.md"], "response_format": "concise"})),
        ("fetch", json!({"id": "obsidian-tc://Notes/A.md"})),
        (
            "read_resources",
            json!({"uris": ["obsidian-tc://Notes/A.md", "obsidian-tc://Notes/Nope.md"], "response_format": "detailed"}),
        ),
        ("read_resources", json!({"uris": ["obsidian-tc://Notes/B.md"], "response_format": "concise"})),
        ("read_property", json!({"vault": v, "path": "A.md", "key": "up", "response_format": "detailed"})),
        ("read_property", json!({"vault": v, "path": "A.md", "key": "up", "response_format": "concise"})),
        ("list_tags", json!({"vault": v})),
        ("list_properties", json!({"vault": v})),
        ("find_notes_by_tag", json!({"vault": v, "tag": "x", "response_format": "detailed"})),
        ("find_notes_by_tag", json!({"vault": v, "tag": "x", "response_format": "concise"})),
        ("find_notes_by_property", json!({"vault": v, "key": "tags", "value": "x", "response_format": "detailed"})),
        ("find_notes_by_property", json!({"vault": v, "key": "tags", "response_format": "concise"})),
        ("search", json!({"vault": v, "query": "top part"})),
        ("search_vault", json!({"vault": v, "query": "top part", "explain": true, "response_format": "detailed"})),
        ("search_vault", json!({"vault": v, "query": "part", "limit": 1, "response_format": "concise"})),
        ("suggest_links", json!({"vault": v, "path": "A.md", "response_format": "detailed"})),
        ("suggest_links", json!({"vault": v, "path": "A.md", "limit": 1})),
        ("search_text", json!({"vault": v, "query": "Part", "response_format": "detailed"})),
        ("search_text", json!({"vault": v, "query": "text", "whole_word": true, "response_format": "concise"})),
        ("search_and_read", json!({"vault": v, "query": "part", "response_format": "detailed"})),
        (
            "search_and_read",
            json!({"vault": v, "query": "top", "mode": "section", "k": 1, "response_format": "concise"}),
        ),
        ("search_regex", json!({"vault": v, "pattern": "Top|Part", "flags": "i", "response_format": "detailed"})),
        (
            "search_regex",
            json!({"vault": v, "pattern": "Part", "max_matches_per_file": 1, "response_format": "concise"}),
        ),
        (
            "search_jsonlogic",
            json!({"vault": v, "logic": {"in": ["x", {"var": "tags"}]}, "response_format": "detailed"}),
        ),
        (
            "search_jsonlogic",
            json!({"vault": v, "logic": {"glob": ["*.md", {"var": "path"}]}, "limit": 1, "response_format": "concise"}),
        ),
        ("get_attachment", json!({"vault": v, "path": "pic.png", "include_references": true})),
        ("get_attachment", json!({"vault": v, "path": "pic.png", "include_content": false})),
        ("list_attachments", json!({"vault": v, "include_reference_count": true, "response_format": "detailed"})),
        ("list_attachments", json!({"vault": v, "response_format": "concise"})),
        ("index_vault", json!({"vault": "Notes", "response_format": "concise"})),
        ("index_vault", json!({"vault": "Notes", "response_format": "detailed"})),
        ("get_index_status", json!({})),
        ("get_task_status", json!({"task_id": task_id})),
        ("cancel_task", json!({"task_id": task_id})),
        ("find_capability", json!({"query": "health"})),
        ("describe_capability", json!({"name": "inspect_visibility"})),
        ("call_capability", json!({"name": "server_health"})),
        ("server_health", json!({})),
        ("get_server_config", json!({"response_format": "detailed"})),
        ("get_server_config", json!({"response_format": "concise"})),
        ("inspect_visibility", json!({"response_format": "detailed"})),
        ("inspect_visibility", json!({"response_format": "concise"})),
        ("inspect_acl", json!({"vault": v, "path": "A.md", "op": "write"})),
        ("inspect_acl", json!({"vault": v, "path": ".obsidian/app.json", "op": "read", "scopes": ["read:notes"]})),
        ("get_metrics", json!({})),
        ("get_metrics", json!({"vault": v, "window_minutes": 5})),
        // The write tools, on notes of their own (confirmation is off for this test).
        (
            "write_note",
            json!({"vault": v, "path": "W.md", "content": "# W\n- item ^b1\n", "response_format": "detailed"}),
        ),
        ("write_note", json!({"vault": v, "path": "W2.md", "content": "w2", "response_format": "concise"})),
        ("append_note", json!({"vault": v, "path": "W.md", "content": "more", "response_format": "detailed"})),
        ("append_note", json!({"vault": v, "path": "W.md", "content": "more", "response_format": "concise"})),
        (
            "patch_note",
            json!({"vault": v, "path": "W.md", "operation": "append", "target_heading": "W", "content": "p", "response_format": "detailed"}),
        ),
        (
            "patch_note",
            json!({"vault": v, "path": "W.md", "operation": "replace", "anchor": {"type": "block", "block_id": "b1"}, "content": "q", "response_format": "concise"}),
        ),
        (
            "update_frontmatter",
            json!({"vault": v, "path": "W.md", "operation": "set", "key": "k", "value": 1, "response_format": "detailed"}),
        ),
        (
            "update_frontmatter",
            json!({"vault": v, "path": "W.md", "operation": "merge", "properties": {"j": [1]}, "response_format": "concise"}),
        ),
        ("add_tag", json!({"vault": v, "path": "W.md", "tag": "t"})),
        ("remove_tag", json!({"vault": v, "path": "W.md", "tag": "t"})),
        (
            "bulk_set_property",
            json!({"vault": v, "paths": ["W.md"], "key": "s", "value": "v", "response_format": "detailed"}),
        ),
        (
            "bulk_set_property",
            json!({"vault": v, "paths": ["W.md"], "key": "s", "value": "w", "response_format": "concise"}),
        ),
        (
            "bulk_create_notes",
            json!({"vault": v, "items": [{"path": "N1.md", "content": "n"}], "response_format": "detailed"}),
        ),
        (
            "bulk_create_notes",
            json!({"vault": v, "items": [{"path": "N2.md", "content": "n"}], "response_format": "concise"}),
        ),
        ("copy_note", json!({"vault": v, "from": "W.md", "to": "W copy.md"})),
        ("move_note", json!({"vault": v, "from": "W copy.md", "to": "Moved/W copy.md"})),
        ("bulk_move_notes", json!({"vault": v, "moves": [{"from": "N1.md", "to": "Moved/N1.md"}]})),
        ("bulk_move_notes", json!({"vault": v, "moves": [{"from": "N1.md", "to": "Moved/N1.md"}], "dry_run": false})),
        ("rewrite_link", json!({"vault": v, "from_target": "Nowhere", "to_target": "Elsewhere", "dry_run": true})),
        (
            "rewrite_link",
            json!({"vault": v, "from_target": "Nowhere", "to_target": "Elsewhere", "response_format": "concise"}),
        ),
        (
            "rewrite_link",
            json!({"vault": v, "from_target": "Elsewhere", "to_target": "Nowhere", "response_format": "detailed"}),
        ),
        ("snapshot_note", json!({"vault": v, "path": "A.md"})),
        ("list_snapshots", json!({"vault": v, "path": "W.md", "response_format": "detailed"})),
        ("list_snapshots", json!({"vault": v, "path": "W.md", "response_format": "concise"})),
        ("read_snapshot", json!({"vault": v, "snapshot_id": snapshot_id})),
        ("restore_note", json!({"vault": v, "path": "A.md", "snapshot_id": snapshot_id})),
        (
            "get_provenance",
            json!({"vault": v, "path": "W.md", "include_verification": true, "response_format": "detailed"}),
        ),
        ("get_provenance", json!({"vault": v, "path": "Moved/N1.md", "response_format": "concise"})),
        ("audit_provenance", json!({"vault": v, "response_format": "detailed"})),
        ("audit_provenance", json!({"vault": v, "response_format": "concise"})),
        ("write_attachment", json!({"vault": v, "path": "att.png", "content": "iVBORw0KGgo="})),
        ("move_attachment", json!({"vault": v, "from": "att.png", "to": "Moved/att.png"})),
        ("delete_attachment", json!({"vault": v, "path": "Moved/att.png"})),
        ("delete_note", json!({"vault": v, "path": "W2.md"})),
        ("restore_vault", json!({"vault": v, "at": "1", "dry_run": true})),
        // The vault administration and suggest_tags.
        ("suggest_tags", json!({"vault": v, "path": "A.md"})),
        ("suggest_tags", json!({"vault": v, "path": "B.md", "response_format": "detailed"})),
        ("add_vault", json!({"name": "Second"})),
        ("reload_vault", json!({"vault": v})),
        ("refresh_plugin_capabilities", json!({"vault": v})),
        ("reset_vault_cache", json!({"vault": "Second"})),
        // The graph and wiki tools (the wiki folder is wiki/).
        ("graph_path_between", json!({"vault": v, "from": "A.md", "to": "B.md"})),
        ("graph_path_between", json!({"vault": v, "from": "B", "to": "A", "directed": false})),
        ("get_link_strength", json!({"vault": v, "from": "A.md", "to": "B.md"})),
        ("graph_centrality", json!({"vault": v})),
        ("graph_centrality", json!({"vault": v, "metric": "betweenness", "min_incoming_links": 1})),
        ("graph_communities", json!({"vault": v, "min_size": 1})),
        ("find_link_cycles", json!({"vault": v, "min_length": 2})),
        ("vault_health_score", json!({"vault": v, "response_format": "detailed"})),
        ("vault_health_score", json!({"vault": v, "response_format": "concise"})),
        ("note_quality_report", json!({"vault": v, "response_format": "detailed"})),
        ("note_quality_report", json!({"vault": v, "flags": ["orphan"], "response_format": "concise"})),
        ("find_existing_page", json!({"vault": v, "topic": "A", "response_format": "detailed"})),
        ("find_existing_page", json!({"vault": v, "topic": "Nothing like it", "response_format": "concise"})),
        ("draft_wiki_page", json!({"vault": v, "topic": "Wiki topic", "response_format": "detailed"})),
        ("draft_wiki_page", json!({"vault": v, "topic": "Part", "response_format": "concise"})),
        (
            "commit_wiki_page",
            json!({"vault": v, "page": {"path": "wiki/Wiki topic.md", "content": "# Wiki topic\n[[A]]\n"}}),
        ),
        ("lint_wiki", json!({"vault": v, "response_format": "detailed"})),
        ("lint_wiki", json!({"vault": v, "folder": "", "response_format": "concise"})),
        ("prune_hub_links", json!({"vault": v, "path": "B.md", "response_format": "detailed"})),
        ("prune_hub_links", json!({"vault": v, "path": "B.md", "dry_run": false, "response_format": "concise"})),
        // Structured documents, periodic notes, templates and links.
        ("write_note", json!({"vault": v, "path": "T.md", "content": "| a | b |\n|---|---|\n| 2 | x |\n| 1 | y |\n"})),
        ("format_table", json!({"vault": v, "path": "T.md"})),
        ("insert_table_row", json!({"vault": v, "path": "T.md", "values": ["3", "z"]})),
        ("insert_table_column", json!({"vault": v, "path": "T.md", "header": "c", "align": "right"})),
        ("sort_table_by_column", json!({"vault": v, "path": "T.md", "column": "a", "numeric": true})),
        (
            "write_note",
            json!({"vault": v, "path": "K.md", "content": "---\nkanban-plugin: board\n---\n\n## Todo\n\n- [ ] one\n\n## Done\n\n"}),
        ),
        ("list_kanban_boards", json!({"vault": v})),
        ("read_kanban_board", json!({"vault": v, "path": "K.md"})),
        ("add_kanban_card", json!({"vault": v, "path": "K.md", "column": "Todo", "text": "two"})),
        (
            "move_kanban_card",
            json!({"vault": v, "path": "K.md", "from_column": "Todo", "to_column": "Done", "card_text": "one"}),
        ),
        ("resolve_daily_note", json!({"vault": v, "date": "2026-01-01"})),
        (
            "get_periodic_note",
            json!({"vault": v, "period": "daily", "date": "2026-01-01", "response_format": "detailed"}),
        ),
        ("create_periodic_note", json!({"vault": v, "period": "daily", "date": "2026-01-01"})),
        (
            "find_or_create_periodic_note",
            json!({"vault": v, "period": "daily", "date": "2026-01-01", "response_format": "detailed"}),
        ),
        (
            "find_or_create_periodic_note",
            json!({"vault": v, "period": "daily", "date": "2026-01-02", "response_format": "concise"}),
        ),
        (
            "append_to_periodic_note",
            json!({"vault": v, "period": "daily", "date": "2026-01-03", "content": "x", "heading": "Log"}),
        ),
        (
            "get_periodic_note",
            json!({"vault": v, "period": "daily", "date": "2026-01-01", "response_format": "concise"}),
        ),
        ("list_periodic_notes", json!({"vault": v, "period": "daily", "response_format": "detailed"})),
        ("list_periodic_notes", json!({"vault": v, "period": "daily", "limit": 1, "response_format": "concise"})),
        ("list_templates", json!({"vault": v})),
        ("execute_template", json!({"vault": v, "template": "A", "target": "From A", "args": {"x": "y"}})),
        ("generate_uri", json!({"vault_name": v, "action": "open", "params": {"file": "A.md"}})),
        (
            "create_canvas",
            json!({"vault": v, "path": "C.canvas", "nodes": [{"type": "text", "text": "x [[A]]", "x": 0, "y": 0, "width": 10, "height": 10}]}),
        ),
        ("read_canvas", json!({"vault": v, "path": "C.canvas", "response_format": "detailed"})),
        ("read_canvas", json!({"vault": v, "path": "C.canvas", "response_format": "concise"})),
        ("query_canvas", json!({"vault": v, "filter": {"text": "x"}})),
        (
            "update_canvas",
            json!({"vault": v, "path": "C.canvas", "add_nodes": [{"type": "link", "url": "https://example.com", "x": 0, "y": 20, "width": 10, "height": 10}]}),
        ),
        (
            "create_excalidraw",
            json!({"vault": v, "path": "D.excalidraw.md", "elements": [{"type": "text", "text": "hi"}]}),
        ),
        ("read_excalidraw", json!({"vault": v, "path": "D.excalidraw.md", "format": "scene"})),
        ("update_excalidraw", json!({"vault": v, "path": "D.excalidraw.md", "add_elements": [{"type": "rectangle"}]})),
        ("write_note", json!({"vault": v, "path": "Tasks.md", "content": "- [ ] a 📅 2020-01-01 🔁 every day\n"})),
        ("list_tasks", json!({"vault": v})),
        ("tasks_filter", json!({"vault": v, "filter": "not done", "group_by": "path"})),
        ("update_task", json!({"vault": v, "path": "Tasks.md", "line": 0, "set": {"toggle": true}})),
        ("add_bookmark", json!({"vault": v, "bookmark": {"type": "file", "path": "A.md"}, "group": "G"})),
        ("list_bookmarks", json!({"vault": v})),
        ("remove_bookmark", json!({"vault": v, "match": {"path": "A.md"}})),
        ("save_workspace", json!({"vault": v, "name": "W", "layout": {"main": {}}})),
        ("list_workspaces", json!({"vault": v})),
        ("open_workspace", json!({"vault": v, "name": "W"})),
        ("git_log", json!({"vault": v})),
        ("git_diff", json!({"vault": v, "path": "A.md", "from": 0})),
        ("git_status", json!({"vault": v})),
        ("search_dql", json!({"vault": v, "dql": "TABLE tags FROM \"\" SORT file.name", "format": "markdown"})),
        ("search_dql", json!({"vault": v, "dql": "TASK WHERE !completed"})),
        ("validate_dql", json!({"vault": v, "dql": "LIST WHERE"})),
        ("validate_dql", json!({"vault": v, "dql": "LIST"})),
        ("eval_dataview_field", json!({"vault": v, "path": "A.md", "expression": "file.name"})),
        ("bundle_files", json!({"vault": v, "paths": ["A.md", "B.md"], "response_format": "detailed"})),
        ("bundle_files", json!({"vault": v, "paths": ["A.md"], "response_format": "concise"})),
        ("bundle_folder", json!({"vault": v, "root": "", "max_files": 1, "response_format": "detailed"})),
        ("bundle_folder", json!({"vault": v, "root": "", "response_format": "concise"})),
        (
            "create_base",
            json!({"vault": v, "path": "V.base", "base": {"views": [{"type": "table", "name": "T", "order": ["file.name"]}]}}),
        ),
        ("read_base", json!({"vault": v, "path": "V.base"})),
        ("query_base", json!({"vault": v, "path": "V.base", "limit": 1})),
        ("update_base", json!({"vault": v, "path": "V.base", "patch": {"filters": "file.hasTag(\"x\")"}})),
        ("write_attachment", json!({"vault": v, "path": "scan.png", "content": scan})),
        ("ocr_attachment", json!({"vault": v, "path": "scan.png"})),
        ("ocr_bulk", json!({"vault": v, "paths": ["scan.png"]})),
        // Entity memory: "@e1", "@e2" and "@o1" stand for the ids the calls before made.
        (
            "create_entity",
            json!({"vault": v, "type": "person", "name": "Ana", "observations": ["likes tea"], "materialize": true}),
        ),
        ("create_entity", json!({"vault": v, "type": "project", "name": "Atlas"})),
        ("add_observation", json!({"vault": v, "entity_id": "@e1", "observation": "lead", "key": "role"})),
        (
            "update_observation",
            json!({"vault": v, "entity_id": "@e1", "observation_id": "@o1", "observation": "staff"}),
        ),
        ("link_entities", json!({"vault": v, "source_id": "@e1", "target_id": "@e2", "relation_type": "works_on"})),
        ("get_entity", json!({"vault": v, "entity_id": "@e1", "include_retired": true, "response_format": "detailed"})),
        ("get_entity", json!({"vault": v, "type": "person", "name": "ana", "response_format": "concise"})),
        ("query_entity_graph", json!({"vault": v, "seed_entity_id": "@e2", "response_format": "detailed"})),
        ("query_entity_graph", json!({"vault": v, "seed_entity_id": "@e2", "limit": 1, "response_format": "concise"})),
        ("unlink_entities", json!({"vault": v, "source_id": "@e1", "target_id": "@e2", "relation_type": "works_on"})),
        ("rename_entity", json!({"vault": v, "entity_id": "@e1", "new_name": "Ana Lima", "status": "archived"})),
        ("delete_entity", json!({"vault": v, "entity_id": "@e2", "permanent": true})),
        (
            "enqueue_capture",
            json!({"vault": v, "content": "A thought worth keeping", "title": "Thought", "tags": ["idea"]}),
        ),
        ("list_capture_queue", json!({"vault": v, "response_format": "detailed"})),
        ("list_capture_queue", json!({"vault": v, "response_format": "concise"})),
        ("commit_capture", json!({"vault": v, "capture_id": "@c1", "target_path": "Captured.md"})),
        ("start_session", json!({"vault": v, "caller": "agent", "session_metadata": {"task": "t"}})),
        ("set_goal", json!({"vault": v, "text": "Ship it", "target_date": "2027-01-01"})),
        ("list_goals", json!({"vault": v, "response_format": "detailed"})),
        ("list_goals", json!({"vault": v, "status": "all", "response_format": "concise"})),
        ("close_goal", json!({"vault": v, "id": "@g1", "status": "done"})),
        ("get_session_traces", json!({"vault": v, "session_id": "@s1", "response_format": "detailed"})),
        // Work memory: the calls above, made while @s1 was open, are its episodes ("@w1").
        ("work_episodes", json!({"session_id": "@s1", "response_format": "detailed"})),
        ("work_episodes", json!({"unstamped_debt": true, "k": 5, "response_format": "concise"})),
        ("work_episode_chain", json!({"id": "@w1", "response_format": "detailed"})),
        ("work_episode_chain", json!({"id": "@w1", "k": 3, "response_format": "concise"})),
        ("record_retrieval_feedback", json!({"chunk_id": "Captured.md#0", "feedback": "useful"})),
        ("record_retrieval_feedback", json!({"verdicts": [{"chunk_id": "Captured.md", "feedback": "not_useful"}]})),
        ("work_result", json!({"result": 1})),
        ("work_search", json!({"query": "goal", "response_format": "detailed"})),
        ("work_search", json!({"include_pending": true, "min_trust": 0.1, "response_format": "concise"})),
        ("episode_stats", json!({"group_by": "eligibility"})),
        (
            "vault_graph_search",
            json!({"vault": v, "query": "part", "queries": ["parts"], "response_format": "detailed"}),
        ),
        ("vault_graph_search", json!({"vault": v, "query": "part", "vaults": ["Nope"], "response_format": "concise"})),
        ("vault_context", json!({"vault": v, "query": "part", "since": "2020-01-01", "response_format": "detailed"})),
        ("vault_context", json!({"vault": v, "token_budget": 300, "response_format": "concise"})),
        (
            "diagnose_retrieval",
            json!({"vault": v, "query": "part", "path": "Captured.md", "response_format": "detailed"}),
        ),
        (
            "diagnose_retrieval",
            json!({"vault": v, "query": "part", "path": "Captured.md", "response_format": "concise"}),
        ),
        ("gap_report", json!({"vault": v, "response_format": "detailed"})),
        ("gap_report", json!({"vault": v, "gaps_only": true, "response_format": "concise"})),
        ("explain_answer", json!({"vault": v, "response_format": "detailed"})),
        ("explain_answer", json!({"vault": v, "session_id": "@s1", "response_format": "concise"})),
        ("list_contradictions", json!({"vault": v, "paths": ["Captured.md"], "include_resolved": true})),
        ("knowledge_search", json!({"vault": v, "query": "part", "response_format": "detailed"})),
        ("knowledge_get_critical", json!({"vault": v, "response_format": "detailed"})),
        ("reflect", json!({"vault": v, "query": "part", "citation_style": "wikilink", "detail": "full"})),
        ("knowledge_challenge", json!({"vault": v, "proposal": "Drop the parts list"})),
        ("work_forget", json!({"episode_id": "@w1"})),
        ("plur_get", json!({"engram_id": "e-1"})),
        ("plur_recall", json!({"query": "deploys", "k": 3})),
        ("plur_recall_hybrid", json!({"query": "deploys", "bm25_weight": 0.4})),
        ("plur_similarity_search", json!({"query": "deploys", "min_score": 0.2})),
        ("end_session", json!({"vault": v, "session_id": "@s1", "end_metadata": {"outcome": "ok"}})),
        ("session_rerun", json!({"vault": v, "session_id": "@s1", "limit": 5})),
        ("get_session_traces", json!({"vault": v, "session_id": "@s1", "response_format": "concise"})),
        ("session_bootstrap", json!({"vault": v, "message": "Top", "response_format": "detailed"})),
        ("session_bootstrap", json!({"vault": v, "mode": "full", "response_format": "concise"})),
    ]
}

#[tokio::test]
async fn every_tools_real_output_matches_its_advertised_output_schema() {
    // The PLUR proxies answer from a stand-in engram store.
    let (_plur, plur_url) = crate::plur::fake_plur().await;
    // A zero task budget: index_vault answers with a task handle (which must fit its schema too).
    let app = TestApp::spawn_with(|c| {
        c.memory.plur.base_url = Some(plur_url.clone());
        c.oauth.private_hosts = vec!["127.0.0.1:*".into()];
        c.tools.task_budget_ms = 0;
        c.tools.confirm_destructive = false;
        c.wiki.folder = Some("wiki".into());
        // Listed here to check them against the answers (by default describe_capability alone
        // answers them).
        c.tool_visibility.list_output_schemas = true;
    })
    .await;
    let token = full_token(&app).await;
    // The model-backed tools answer from a stand-in chat endpoint, the tenant's own.
    let (_chat, chat_url) = crate::models::fake_chat().await;
    let tenant = token.parse::<otc_auth::PresentedToken>().unwrap().tenant;
    let mut tx = app.store.begin(tenant).await.unwrap();
    let llm = otc_store::TenantLlm {
        base_url: chat_url,
        model: "fake-chat".into(),
        sealed_api_key: None,
        daily_cap: 100,
        prompt_cost_per_mtok: 0.0,
        completion_cost_per_mtok: 0.0,
    };
    tx.set_tenant_llm(&llm).await.unwrap();
    tx.commit().await.unwrap();
    crate::index::commit(
        &app,
        &token,
        "Notes",
        &[
            ("A.md", Some("---\nup: \"[[B]]\"\ntags: [x]\n---\n# Top\nText [[B#Part|b]] ![[Missing.png]] #y ^blk\n")),
            ("B.md", Some("# Part\n[[A]] [[Nowhere]] ![[pic.png]]\n")),
            ("pic.png", Some("\u{89}PNG")),
        ],
    )
    .await;
    let handle = call(&app, "/mcp", &token, "index_vault", json!({"vault": "Notes"})).await;
    assert_eq!(handle["structuredContent"]["status"], "working", "{handle}");
    let task_id = handle["structuredContent"]["task_id"].as_str().unwrap().to_string();
    crate::index::poll(&app, &token, &task_id).await;
    let listed = rpc(&app, "/mcp/full", &token, "tools/list", json!({})).await;
    let triad = rpc(&app, "/mcp/triad", &token, "tools/list", json!({})).await;
    let advertised: Vec<Value> =
        listed["tools"].as_array().unwrap().iter().chain(triad["tools"].as_array().unwrap()).cloned().collect();
    let registered: Vec<String> =
        otc_tools::toolset::all().iter().map(|e| e.declaration.spec.name.to_string()).collect();
    let snapshot = call(&app, "/mcp", &token, "snapshot_note", json!({"vault": "Notes", "path": "A.md"})).await;
    let snapshot_id = snapshot["structuredContent"]["snapshot_id"].as_str().unwrap().to_string();
    let samples = sample_calls(&task_id, &snapshot_id);
    // Tools that can only refuse in this deployment (no embedding provider is configured).
    // Tools that can only refuse in this deployment (no embedding provider is configured; no
    // live Obsidian app).
    let live_app: Vec<String> = otc_tools::toolset::all()
        .iter()
        .filter(|e| e.declaration.spec.declared_tags.contains(&"plugin-bridge"))
        .map(|e| e.declaration.spec.name.to_string())
        .collect();
    let refusing: Vec<&str> = ["search_semantic"].into_iter().chain(live_app.iter().map(String::as_str)).collect();
    for name in registered.iter().filter(|n| !refusing.contains(&n.as_str())) {
        assert!(samples.iter().any(|(n, _)| n == name), "no sample call for {name}");
    }
    let mut made: Vec<(String, String)> = Vec::new();
    for (name, args) in samples {
        let mut text = args.to_string();
        for (placeholder, id) in &made {
            text = text.replace(placeholder.as_str(), id);
        }
        let args: Value = serde_json::from_str(&text).unwrap();
        let result = call(&app, "/mcp", &token, name, args.clone()).await;
        assert_eq!(result["isError"], false, "{name} {args}: {result}");
        let out = &result["structuredContent"];
        if name == "create_entity" {
            made.push((
                format!("@e{}", made.iter().filter(|(p, _)| p.starts_with("@e")).count() + 1),
                out["entity_id"].as_str().unwrap().into(),
            ));
        }
        if name == "start_session" {
            made.push(("@s1".into(), out["session_id"].as_str().unwrap().into()));
        }
        if name == "set_goal" {
            made.push(("@g1".into(), out["goal_id"].as_str().unwrap().into()));
        }
        if name == "enqueue_capture" {
            made.push(("@c1".into(), out["capture_id"].as_str().unwrap().into()));
        }
        if name == "work_episodes" && !made.iter().any(|(p, _)| p == "@w1") {
            made.push(("@w1".into(), out["episodes"][0]["id"].as_str().unwrap().into()));
        }
        if name == "add_observation" {
            made.push(("@o1".into(), out["observation_id"].as_str().unwrap().into()));
        }
        if let Some(running) = result["structuredContent"]["task_id"].as_str().filter(|_| name == "index_vault") {
            // One rebuild per vault at a time: let this one finish before the next sample.
            crate::index::poll(&app, &token, running).await;
        }
        let tool = advertised.iter().find(|t| t["name"] == name).unwrap();
        match tool.get("outputSchema") {
            Some(schema) => {
                let validator = otc_catalog::schema::Validator::compile(schema).unwrap();
                let issues = validator.issues(&result["structuredContent"]);
                assert!(issues.is_empty(), "{name} {args}: {issues:?}");
            }
            None => assert!(
                ["call_capability", "find_capability", "describe_capability", "search", "fetch"].contains(&name),
                "only the tools listed beside the triad go without an output schema: {name}"
            ),
        }
    }
    app.stop().await;
}

#[tokio::test]
async fn two_gateways_serve_one_clients_calls_round_robin() {
    use crate::harness::Child;
    let iso = Isolation::new().await;
    let store = iso.store();
    let tenant = Tenant::create(&store, "acme").await;
    let (token, _) = tenant.token(&store, "*", false, None).await;
    let a = Child::start(iso.env(), &["serve"], true);
    let b = Child::start(iso.env(), &["serve"], true);
    let upstreams = vec![a.addr.unwrap(), b.addr.unwrap()];
    let proxy = otc_loadtests::proxy::Proxy::start("127.0.0.1:0".parse().unwrap(), upstreams).await.unwrap();
    let mut steps = vec![json!({"op": "list_tools"})];
    for _ in 0..5 {
        steps.push(json!({"op": "call", "name": "server_health", "args": {}}));
        steps.push(json!({"op": "call", "name": "find_capability", "args": {"query": "configuration"}}));
    }
    let out = python_session(
        Transport::Http { url: format!("http://{}/mcp", proxy.addr), token: &token },
        Value::Array(steps),
    )
    .await;
    for result in out["results"].as_array().unwrap().iter().skip(1) {
        assert_eq!(result["isError"], false, "{result}");
    }
    let counts = proxy.answered();
    assert!(counts.iter().all(|c| *c >= 5), "both gateways answered: {counts:?}");
    drop((a, b));
}

/// `explain_auto_mode` writes one `obsidian-tc toolFacade.explain {...}` JSON line to stderr per
/// resolution, naming the client, the keys checked, the rule and the mode.
#[tokio::test]
async fn explain_auto_mode_writes_one_json_line_per_resolution() {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    let iso = Isolation::new().await;
    let store = iso.store();
    let tenant = Tenant::create(&store, "acme").await;
    let (token, _) = tenant.token(&store, "*", false, None).await;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_obsidian-tc"))
        .arg("stdio")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(iso.env())
        .env("OTC_TOKEN", token)
        .env("OTC__TOOL_FACADE__MODE", "auto")
        .env("OTC__TOOL_FACADE__EXPLAIN_AUTO_MODE", "true")
        .env("RUST_LOG", "error")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "Zed\u{7}Editor", "version": "1"}}});
    for message in [
        init,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ] {
        stdin.write_all(format!("{message}\n").as_bytes()).await.unwrap();
    }
    let mut answered = 0;
    while answered < 2 {
        let line = tokio::time::timeout(Duration::from_secs(20), stdout.next_line()).await.unwrap().unwrap().unwrap();
        if serde_json::from_str::<Value>(&line).unwrap().get("id").is_some() {
            answered += 1;
        }
    }
    drop(stdin);
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).await.unwrap();
    let _ = child.wait().await;
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("obsidian-tc toolFacade.explain ")).collect();
    assert!(!lines.is_empty(), "{stderr}");
    let record: Value = serde_json::from_str(lines[0].trim_start_matches("obsidian-tc toolFacade.explain ")).unwrap();
    assert_eq!(record["client_name"], "ZedEditor", "control characters are stripped: {record}");
    assert_eq!(record["rule"], "no-match");
    assert_eq!(record["mode"], "triad");
    assert_eq!(record["fallback"], "triad");
}

/// A malformed message gets JSON-RPC's own error (HTTP 400, a JSON body with the request's id
/// when it has one) on every surface, never the transport's 415 or a tool error; a body that
/// is not JSON by its content type still gets 415.
#[tokio::test]
async fn malformed_messages_get_json_rpc_errors_on_every_surface() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let post = |path: &'static str, body: Vec<u8>, content_type: &'static str| {
        let (app, token) = (&app, &token);
        async move {
            let response = app
                .http
                .post(app.url(path))
                .bearer_auth(token)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", content_type)
                .body(body)
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            (status, response.text().await.unwrap())
        }
    };
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)).into_bytes();
    let cases: Vec<(Vec<u8>, i64, Value)> = vec![
        (b"this is not json".to_vec(), -32700, Value::Null),
        (b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}".to_vec(), -32700, Value::Null),
        (deep, -32700, Value::Null),
        (b"[]".to_vec(), -32600, Value::Null),
        (br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.to_vec(), -32600, Value::Null),
        (br#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#.to_vec(), -32600, json!(3)),
        (
            br#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"read_note","arguments":[1]}}"#
                .to_vec(),
            -32602,
            json!("x"),
        ),
    ];
    for path in ["/mcp", "/mcp/triad", "/mcp/domain", "/mcp/essentials", "/mcp/core", "/mcp/full"] {
        for (body, code, id) in &cases {
            let (status, text) = post(path, body.clone(), "application/json").await;
            assert_eq!(status, 400, "{path}: {text}");
            let answer: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{path}: not JSON: {text}"));
            assert_eq!(answer["jsonrpc"], "2.0", "{path}: {answer}");
            assert_eq!(answer["error"]["code"], *code, "{path}: {answer}");
            assert_eq!(answer["id"], *id, "{path}: {answer}");
        }
        let (status, _) = post(path, b"{}".to_vec(), "text/plain").await;
        assert_eq!(status, 415, "{path}: a body that is not JSON by its type");
        let ok = br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"list_vaults","arguments":{}}}"#;
        let (status, text) = post(path, ok.to_vec(), "application/json").await;
        assert_eq!(status, 200, "{path}: {text}");
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["id"], 9, "{text}");
    }
    app.stop().await;
}

/// The metrics count each client call once, as the tool that ran, under the facade or domain
/// meta-tool it came through (`none` when called by name); a facade call that ran nothing
/// counts as itself.
#[tokio::test]
async fn metrics_name_the_tool_that_ran_under_its_facade() {
    let app = TestApp::spawn().await;
    let token = full_token(&app).await;
    crate::index::commit(&app, &token, "Notes", &[("Plan.md", Some("# Plan\n"))]).await;
    let read = json!({"vault": "Notes", "path": "Plan.md"});
    let direct = call(&app, "/mcp", &token, "read_note", read.clone()).await;
    assert_eq!(direct["isError"], false, "{direct}");
    for _ in 0..2 {
        let routed = call(&app, "/mcp", &token, "call_capability", json!({"name": "read_note", "args": read})).await;
        assert_eq!(routed["isError"], false, "{routed}");
    }
    let domain = call(&app, "/mcp/domain", &token, "notes", json!({"action": "read_note", "args": read})).await;
    assert_eq!(domain["isError"], false, "{domain}");
    let nothing = call(&app, "/mcp", &token, "call_capability", json!({"name": "no_such_tool", "args": {}})).await;
    assert_eq!(nothing["isError"], true, "{nothing}");
    let malformed = call(&app, "/mcp", &token, "call_capability", json!({"args": {}})).await;
    assert_eq!(malformed["isError"], true, "{malformed}");
    let text = otc_telemetry::metrics().prometheus_text();
    let count = |labels: &str| {
        let prefix = format!("otc_tool_calls_total{{{labels}}} ");
        text.lines().find_map(|l| l.strip_prefix(&prefix)).map(|n| n.parse::<u64>().unwrap()).unwrap_or(0)
    };
    assert!(count(r#"facade="none",outcome="ok",tool="read_note""#) >= 1, "{text}");
    assert_eq!(count(r#"facade="call_capability",outcome="ok",tool="read_note""#), 2, "{text}");
    assert_eq!(count(r#"facade="notes",outcome="ok",tool="read_note""#), 1, "{text}");
    assert_eq!(count(r#"facade="call_capability",outcome="ok",tool="call_capability""#), 0, "{text}");
    // A name that is no tool is counted as `unknown` (a label is never what a caller sent).
    assert_eq!(count(r#"facade="call_capability",outcome="not_found",tool="unknown""#), 1, "{text}");
    assert!(
        text.lines().any(|l| l.starts_with(r#"otc_tool_calls_total{facade="call_capability","#)
            && l.contains(r#"tool="call_capability""#)
            && !l.contains(r#"outcome="ok""#)),
        "a facade call refused before it routed counts as itself: {text}"
    );
    app.stop().await;
}
