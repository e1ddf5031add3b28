//! Tenant isolation, tool by tool: with tenant B's token, every registered tool and every /v1
//! endpoint aimed at tenant A's vault (by name and by id), notes, snapshots, tasks and content
//! answers not_found, vault_not_found, note_not_found or forbidden, and no byte of A's content
//! or of a name B never sent appears in any answer.

use reqwest::Method;
use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp};
use crate::mcp::call;
use crate::sync::api;
use crate::write::ok;

/// Content only tenant A holds.
const SECRET: &str = "SECRET-ALPHA-7731";
/// A note name of A's that B never sends.
const UNSENT: &str = "Zeta-4412";

/// Arguments for `tool` aimed at A: `vault` (A's vault name or id), A's note, A's snapshot, A's
/// work episode.
/// An entity id (the memory tools refuse another tenant's vault before they look it up).
const ENTITY: &str = "00000000-0000-4000-8000-000000000001";

fn args_for(tool: &str, vault: &str, snapshot: &str, episode: &str) -> Value {
    let note = "Secret/Plan.md";
    let uri = format!("obsidian-tc://{}/Secret/Plan.md", vault.replace(' ', "%20"));
    match tool {
        "add_tag" | "remove_tag" => json!({"vault": vault, "path": note, "tag": "x"}),
        "append_note" | "write_note" => json!({"vault": vault, "path": note, "content": "x"}),
        "write_attachment" => json!({"vault": vault, "path": "Secret/a.bin", "content": "eA=="}),
        "bulk_create_notes" => json!({"vault": vault, "items": [{"path": "Secret/New.md", "content": "x"}]}),
        "bulk_move_notes" => json!({"vault": vault, "moves": [{"from": note, "to": "Secret/Moved.md"}]}),
        "bulk_set_property" => json!({"vault": vault, "paths": [note], "key": "k", "value": "v"}),
        "copy_note" | "move_note" | "move_attachment" => json!({"vault": vault, "from": note, "to": "Secret/Other.md"}),
        "patch_note" => {
            json!({"vault": vault, "path": note, "operation": "append", "content": "x", "anchor": {"type": "frontmatter"}})
        }
        "update_frontmatter" => json!({"vault": vault, "path": note, "operation": "set", "key": "k", "value": "v"}),
        "read_property" => json!({"vault": vault, "path": note, "key": "status"}),
        "find_notes_by_property" => json!({"vault": vault, "key": "status"}),
        "find_notes_by_tag" => json!({"vault": vault, "tag": "secret"}),
        "read_notes" => json!({"vault": vault, "paths": [note]}),
        "read_snapshot" => json!({"vault": vault, "snapshot_id": snapshot}),
        "restore_note" => json!({"vault": vault, "path": note, "snapshot_id": snapshot}),
        "restore_vault" => json!({"vault": vault, "at": "1"}),
        "rewrite_link" => json!({"vault": vault, "from_target": "Plan", "to_target": "Other"}),
        "search_jsonlogic" => json!({"vault": vault, "logic": {"==": [1, 1]}}),
        "search_regex" => json!({"vault": vault, "pattern": "SECRET"}),
        "search" | "search_and_read" | "search_semantic" | "search_text" | "search_vault" => {
            json!({"vault": vault, "query": SECRET})
        }
        "graph_path_between" | "get_link_strength" => json!({"vault": vault, "from": note, "to": note}),
        "find_existing_page" | "draft_wiki_page" => json!({"vault": vault, "topic": "Plan"}),
        "commit_wiki_page" => json!({"vault": vault, "page": {"path": "Secret/New page.md", "content": "x"}}),
        "insert_table_row" => json!({"vault": vault, "path": note, "values": ["x"]}),
        "insert_table_column" => json!({"vault": vault, "path": note, "header": "x"}),
        "sort_table_by_column" => json!({"vault": vault, "path": note, "column": "x"}),
        "add_kanban_card" => json!({"vault": vault, "path": note, "column": "Todo", "text": "x"}),
        "move_kanban_card" => {
            json!({"vault": vault, "path": note, "from_column": "Todo", "to_column": "Done", "card_text": "x"})
        }
        "get_periodic_note" | "list_periodic_notes" | "create_periodic_note" | "find_or_create_periodic_note" => {
            json!({"vault": vault, "period": "daily"})
        }
        "append_to_periodic_note" => json!({"vault": vault, "period": "daily", "content": "x"}),
        "execute_template" => json!({"vault": vault, "template": "Secret/Plan", "target": "Secret/New.md"}),
        "generate_uri" => json!({"vault_name": vault, "action": "open", "params": {"file": note}}),
        "read_canvas" | "update_canvas" | "create_canvas" => json!({"vault": vault, "path": "Secret/Map.canvas"}),
        "read_excalidraw" | "update_excalidraw" | "create_excalidraw" => {
            json!({"vault": vault, "path": "Secret/Flow.excalidraw.md"})
        }
        "update_task" => json!({"vault": vault, "path": note, "line": 0}),
        "add_bookmark" => json!({"vault": vault, "bookmark": {"type": "file", "path": note}}),
        "remove_bookmark" => json!({"vault": vault, "match": {"path": note}}),
        "save_workspace" => json!({"vault": vault, "name": "w", "layout": {}}),
        "open_workspace" => json!({"vault": vault, "name": "w"}),
        "tasks_filter" => json!({"vault": vault, "filter": "not done"}),
        "search_dql" | "validate_dql" => json!({"vault": vault, "dql": "LIST"}),
        "eval_dataview_field" => json!({"vault": vault, "path": note, "expression": "status"}),
        "bundle_files" => json!({"vault": vault, "paths": [note]}),
        "bundle_folder" => json!({"vault": vault, "root": ""}),
        "ocr_attachment" => json!({"vault": vault, "path": "Secret/scan.png"}),
        "ocr_bulk" => json!({"vault": vault, "paths": ["Secret/scan.png"]}),
        "read_base" | "query_base" => json!({"vault": vault, "path": "Secret/View.base"}),
        "create_base" => json!({"vault": vault, "path": "Secret/View.base", "base": {}}),
        "update_base" => json!({"vault": vault, "path": "Secret/View.base", "patch": {}}),
        "create_entity" => json!({"vault": vault, "type": "person", "name": "x"}),
        "get_entity" | "delete_entity" => json!({"vault": vault, "entity_id": ENTITY}),
        "rename_entity" => json!({"vault": vault, "entity_id": ENTITY, "new_name": "y"}),
        "add_observation" => json!({"vault": vault, "entity_id": ENTITY, "observation": "x"}),
        "update_observation" => json!({"vault": vault, "entity_id": ENTITY, "observation_id": ENTITY, "retire": true}),
        "link_entities" | "unlink_entities" => {
            json!({"vault": vault, "source_id": ENTITY, "target_id": ENTITY, "relation_type": "r"})
        }
        "query_entity_graph" => json!({"vault": vault, "seed_entity_id": ENTITY}),
        "enqueue_capture" => json!({"vault": vault, "content": "x"}),
        "commit_capture" => json!({"vault": vault, "capture_id": ENTITY, "target_path": "Secret/Captured.md"}),
        "list_capture_queue" => json!({"vault": vault}),
        "start_session" => json!({"vault": vault, "caller": "agent"}),
        "end_session" | "get_session_traces" | "session_rerun" => json!({"vault": vault, "session_id": ENTITY}),
        "session_bootstrap" => json!({"vault": vault, "message": SECRET}),
        "set_goal" => json!({"vault": vault, "text": "x"}),
        "list_goals" => json!({"vault": vault, "status": "all"}),
        "close_goal" => json!({"vault": vault, "id": ENTITY, "status": "done"}),
        "fetch" => json!({"id": uri}),
        "work_episodes" => json!({"any_caller": true, "include_blocked": true}),
        "work_search" => json!({"any_caller": true, "include_pending": true, "min_trust": 0.0}),
        "work_episode_chain" => json!({"id": episode, "any_caller": true}),
        "work_forget" => json!({"episode_id": episode}),
        "work_result" => json!({"result": 1}),
        "episode_stats" => json!({"group_by": "session"}),
        "record_retrieval_feedback" => json!({"chunk_id": note, "feedback": "useful", "last_n": 50}),
        // The knowledge tools search for the hidden note's title (their answers may echo the query).
        "vault_graph_search" | "knowledge_search" | "vault_context" => json!({"vault": vault, "query": "Plan"}),
        "diagnose_retrieval" => json!({"vault": vault, "query": "Plan", "path": note}),
        "reflect" => json!({"vault": vault, "query": "Plan"}),
        "knowledge_challenge" => json!({"vault": vault, "proposal": "Plan"}),
        "list_contradictions" => json!({"vault": vault, "paths": [note]}),
        "plur_get" => json!({"engram_id": "e-1"}),
        "plur_recall" | "plur_recall_hybrid" | "plur_similarity_search" => json!({"query": SECRET}),
        "inspect_acl" => json!({"vault": vault, "path": note, "op": "read"}),
        "add_vault" => json!({"name": "Made by the caller"}),
        "get_metrics" => json!({"vault": vault}),
        "read_resources" => json!({"uris": [uri]}),
        "call_capability" => json!({"name": "read_note", "args": {"vault": vault, "path": note}}),
        "describe_capability" => json!({"name": "read_note"}),
        "find_capability" => json!({"query": "read a note"}),
        "get_task_status" | "cancel_task" => json!({"task_id": snapshot}),
        "get_index_status" | "get_server_config" | "inspect_visibility" | "list_vaults" | "server_health" => json!({}),
        "audit_provenance"
        | "find_link_cycles"
        | "find_orphans"
        | "find_unresolved_links"
        | "graph_centrality"
        | "graph_communities"
        | "lint_wiki"
        | "note_quality_report"
        | "vault_health_score"
        | "get_vault"
        | "index_vault"
        | "list_attachments"
        | "list_notes"
        | "list_properties"
        | "list_tags"
        | "list_kanban_boards"
        | "query_canvas"
        | "list_bookmarks"
        | "git_log"
        | "git_status"
        | "list_workspaces"
        | "list_tasks"
        | "list_templates"
        | "gap_report"
        | "explain_answer"
        | "knowledge_get_critical"
        | "resolve_daily_note"
        | "reload_vault"
        | "reset_vault_cache"
        | "refresh_plugin_capabilities" => json!({"vault": vault}),
        _ => json!({"vault": vault, "path": note}),
    }
}

#[tokio::test]
async fn another_tenants_token_reaches_nothing_of_a_tenants_vaults_through_any_tool_or_endpoint() {
    // Secret/ is the wiki too, so the wiki tools look where the secrets are.
    let app = TestApp::spawn_with(|c| {
        c.tools.confirm_destructive = false;
        c.wiki.folder = Some("Secret".into());
    })
    .await;
    let a = seed_secrets(&app, "acme").await;
    let b = Tenant::create(&app.store, "globex").await;
    let (b_token, _) = b.token(&app.store, "*", false, None).await;
    reaches_nothing_of(&app, &a, &b_token).await;
}

/// Tenant A, with a vault of secrets, a snapshot, a rule of its own, and a token for everything.
pub(crate) struct Secrets {
    tenant: Tenant,
    token: String,
    vault_id: uuid::Uuid,
    plan: String,
    snapshot: String,
    principal: uuid::Uuid,
    /// A work episode of A's, from a session in which A searched for the secret.
    episode: String,
}

pub(crate) async fn seed_secrets(app: &TestApp, slug: &str) -> Secrets {
    let a = Tenant::create(&app.store, slug).await;
    let (a_token, _) = a.token(&app.store, "*", false, None).await;
    let mut tx = app.store.begin(a.id).await.unwrap();
    let a_vault = tx.create_vault("Acme Secrets").await.unwrap();
    tx.commit().await.unwrap();
    let plan = format!("---\nstatus: {SECRET}\ntags: [secret]\n---\n# Plan\n{SECRET} [[{UNSENT}]]\n");
    let zeta = format!("{SECRET} hidden\n");
    crate::index::commit(
        app,
        &a_token,
        "Acme Secrets",
        &[("Secret/Plan.md", Some(&plan)), (&format!("Hidden/{UNSENT}.md"), Some(&zeta))],
    )
    .await;
    ok(app, &a_token, "write_note", json!({"vault": "Acme Secrets", "path": "Secret/Plan.md", "content": format!("{plan}more\n"), "mode": "overwrite"})).await;
    let snapshots =
        ok(app, &a_token, "list_snapshots", json!({"vault": "Acme Secrets", "path": "Secret/Plan.md"})).await;
    let snapshot = snapshots["snapshots"][0]["id"].as_str().expect("A has a snapshot").to_string();

    let mut tx = app.store.begin(a.id).await.unwrap();
    let a_principal = tx.find_principal("alice").await.unwrap().unwrap().id;
    tx.commit().await.unwrap();
    // A has a rule of its own, which B must neither see nor change.
    let (status, _) = api(
        app,
        &a_token,
        Method::PUT,
        "/v1/acl",
        Some(json!({"vault": "Acme Secrets", "group": "staff", "read_paths": ["Secret/**"]})),
    )
    .await;
    assert_eq!(status, 200);
    // A works in a session: its episodes (which name the secret) are A's alone.
    ok(app, &a_token, "start_session", json!({"vault": "Acme Secrets", "caller": "agent"})).await;
    ok(app, &a_token, "search_and_read", json!({"vault": "Acme Secrets", "query": SECRET, "mode": "section"})).await;
    let episodes = ok(app, &a_token, "work_episodes", json!({"tool": "search_and_read"})).await;
    let episode = episodes["episodes"][0]["id"].as_str().expect("A has an episode").to_string();
    assert!(episodes.to_string().contains(SECRET), "{episodes}");
    Secrets { tenant: a, token: a_token, vault_id: a_vault.id, plan, snapshot, principal: a_principal, episode }
}

/// With `b_token` (another tenant's, however it was issued), every registered tool and every /v1
/// route aimed at A's vault (by name and by id) is refused as missing or forbidden, and no byte
/// of A's appears in any answer.
pub(crate) async fn reaches_nothing_of(app: &TestApp, secrets: &Secrets, b_token: &str) {
    let Secrets { tenant: a, token: a_token, vault_id, plan, snapshot, principal: a_principal, episode } = secrets;
    let (a, a_token, a_principal, snapshot, plan) =
        (a, a_token.as_str(), *a_principal, snapshot.as_str(), plan.as_str());
    let b_token = b_token.to_string();
    let leaks = |text: &str| {
        text.contains(SECRET) || text.contains(UNSENT) || text.contains(&a.id.to_string()) || text.contains("staff")
    };

    let tools: Vec<&'static str> = otc_tools::toolset::all().iter().map(|t| t.declaration.spec.name).collect();
    assert!(tools.len() >= 60, "{}", tools.len());
    let mut problems = Vec::new();
    for vault in ["Acme Secrets".to_string(), vault_id.to_string()] {
        for tool in &tools {
            let args = args_for(tool, &vault, snapshot, episode);
            let result = call(app, "/mcp", &b_token, tool, args.clone()).await;
            let text = result.to_string();
            assert!(!leaks(&text), "{tool} {args} leaks A's data: {text}");
            if result["isError"] == true {
                let code = result["structuredContent"]["code"].as_str().unwrap();
                // No PLUR store is configured here: its proxies say so, whoever asks.
                let plur = tool.starts_with("plur_") && code == "plugin_unavailable";
                // add_vault names no vault of A's: it makes one in B's own tenant (the second
                // round finds B's name taken).
                let own = *tool == "add_vault" && code == "conflict";
                if !plur && !own && !matches!(code, "not_found" | "vault_not_found" | "note_not_found" | "forbidden") {
                    problems.push(format!("{tool} {args}: {code}: {text}"));
                }
            } else if matches!(*tool, "read_resources" | "read_notes") {
                // Batches answer per item: each one refused as missing.
                let items = &result["structuredContent"];
                assert!(!text.contains("\"ok\":true"), "{tool} {args}: {text}");
                for item in items.as_object().unwrap().values().flat_map(|v| v.as_array().cloned().unwrap_or_default())
                {
                    let code = item["error"]["code"].as_str().unwrap_or("");
                    assert!(matches!(code, "not_found" | "vault_not_found" | "note_not_found"), "{tool}: {item}");
                }
            } else {
                // Only the tools that name no vault succeed, and with B's own world.
                if !matches!(
                    *tool,
                    "add_vault"
                        | "describe_capability"
                        | "find_capability"
                        | "generate_uri"
                        | "get_index_status"
                        | "get_server_config"
                        | "inspect_visibility"
                        | "list_vaults"
                        | "server_health"
                        | "work_episodes"
                        | "work_search"
                        | "work_result"
                        | "episode_stats"
                        | "record_retrieval_feedback"
                ) {
                    problems.push(format!("{tool} {args} succeeded against A: {text}"));
                }
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        // The sync API, every route.
        let hash = obsidian_tc::sync_client::sha256_hex(plan.as_bytes());
        let v = vault.replace(' ', "%20");
        for (method, path, body) in [
            (Method::GET, format!("/v1/vaults/{v}/files"), None),
            (Method::GET, format!("/v1/vaults/{v}/file?path=Secret/Plan.md"), None),
            (Method::GET, format!("/v1/vaults/{v}/changes"), None),
            (Method::GET, format!("/v1/vaults/{v}/blobs/{hash}"), None),
            (
                Method::POST,
                format!("/v1/vaults/{v}/commit"),
                Some(json!({"changes": [{"path": "Secret/Plan.md", "expect": "any", "delete": true}]})),
            ),
            (Method::GET, format!("/v1/acl?vault={v}"), None),
            (Method::PUT, "/v1/acl".into(), Some(json!({"vault": vault, "everyone": true, "read_paths": ["**"]}))),
            (Method::DELETE, format!("/v1/acl?vault={v}&everyone=true"), None),
            (Method::GET, format!("/v1/principals/{a_principal}/groups"), None),
            (Method::POST, format!("/v1/principals/{a_principal}/groups"), Some(json!({"add": ["x"]}))),
        ] {
            let (status, answer) = api(app, &b_token, method.clone(), &path, body).await;
            let text = answer.to_string();
            assert!(!leaks(&text), "{method} {path} leaks: {text}");
            assert_eq!(status, 404, "{method} {path}: {text}");
            assert!(matches!(answer["error"]["code"].as_str(), Some("not_found" | "vault_not_found")), "{text}");
        }
        let put = app
            .http
            .put(app.url(&format!("/v1/vaults/{v}/blobs/{hash}")))
            .bearer_auth(&b_token)
            .body(plan.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(put.status(), 404, "an upload into A's vault");
    }
    let (status, listed) = api(app, &b_token, Method::GET, "/v1/vaults", None).await;
    assert_eq!(status, 200);
    assert!(!leaks(&listed.to_string()) && !listed.to_string().contains("Acme Secrets"), "{listed}");
    // A's notes are as they were.
    let read =
        ok(app, a_token, "read_note", json!({"vault": "Acme Secrets", "path": "Secret/Plan.md", "format": "content"}))
            .await;
    assert_eq!(read["content"], format!("{plan}more\n"));
    let (_, rules) = api(app, a_token, Method::GET, "/v1/acl", None).await;
    assert_eq!(rules["rules"].as_array().unwrap().len(), 1, "{rules}");
    assert_eq!(rules["rules"][0]["subject"], "group staff");
}

#[tokio::test]
async fn a_folder_the_deployment_acl_hides_is_unreachable_through_every_tool() {
    let app = TestApp::spawn_with(|c| {
        c.tools.confirm_destructive = false;
        c.wiki.folder = Some("Secret".into());
        let public = Some(vec!["Public/**".to_string()]);
        c.acl.push(otc_config::AclEntry {
            tenant: Some("acme".into()),
            vault: "Acme Secrets".into(),
            read_paths: public.clone(),
            write_paths: public.clone(),
            delete_paths: public,
        });
    })
    .await;
    let a = Tenant::create(&app.store, "acme").await;
    let (token, _) = a.token(&app.store, "*", false, None).await;
    hidden_folder_matrix(&app, &a, &token, || {}).await;
}

/// The same matrix with the folder hidden by the tenant's own rules, for one principal: its
/// group's rule (which wins over a wider rule for everyone) shows Public/** only. The sync API
/// hides the folder from it too, and its token keeps working for what the rule grants.
#[tokio::test]
async fn a_folder_a_principals_rules_hide_is_unreachable_through_every_tool_and_the_sync_api() {
    // Secret/ is the wiki too, so the wiki tools look where the secrets are.
    let app = TestApp::spawn_with(|c| {
        c.tools.confirm_destructive = false;
        c.wiki.folder = Some("Secret".into());
    })
    .await;
    let a = Tenant::create(&app.store, "acme").await;
    let (token, _) = a.token(&app.store, "*", false, None).await;
    let restrict = || {
        for args in [
            &["acl", "groups", "acme", "alice", "--add", "contractors"][..],
            &["acl", "set", "acme", "--vault", "Acme Secrets", "--everyone", "--read", "**"],
            &[
                "acl",
                "set",
                "acme",
                "--vault",
                "Acme Secrets",
                "--group",
                "contractors",
                "--read",
                "Public/**",
                "--write",
                "Public/**",
                "--delete",
                "Public/**",
            ],
        ] {
            let out = crate::harness::cli(&app.iso, args);
            assert!(out.status.success(), "{args:?}: {}", crate::harness::stderr(&out));
        }
    };
    hidden_folder_matrix(&app, &a, &token, restrict).await;
    let leaks = |text: &str| text.contains(SECRET) || text.contains(UNSENT);
    // (The matrix's restore_vault may have rolled Public/ back: write a note there again.)
    ok(&app, &token, "write_note", json!({"vault": "Acme Secrets", "path": "Public/New.md", "content": "new\n"})).await;
    let (status, files) = api(&app, &token, Method::GET, "/v1/vaults/Acme%20Secrets/files", None).await;
    assert_eq!(status, 200);
    let paths: Vec<&str> = files["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert!(paths.contains(&"Public/New.md") && paths.iter().all(|p| p.starts_with("Public/")), "{files}");
    assert!(!leaks(&files.to_string()));
    for path in ["Secret/Plan.md", &format!("Hidden/{UNSENT}.md")] {
        let (status, answer) =
            api(&app, &token, Method::GET, &format!("/v1/vaults/Acme%20Secrets/file?path={path}"), None).await;
        assert_eq!(status, 404, "{answer}");
        assert!(!answer.to_string().contains(SECRET));
    }
    let (status, answer) = api(
        &app,
        &token,
        Method::POST,
        "/v1/vaults/Acme%20Secrets/commit",
        Some(json!({"changes": [{"path": "Secret/Plan.md", "expect": "any", "delete": true}]})),
    )
    .await;
    assert!(status == 403 || status == 404, "{status} {answer}");
    let read = ok(&app, &token, "read_note", json!({"vault": "Acme Secrets", "path": "Public/New.md"})).await;
    assert!(read.to_string().contains("new"), "{read}");
}

/// Every registered tool, as `token`, aimed at A's "Acme Secrets" notes outside Public/ (after
/// `restrict` hides them): none answers anything but not found, acl_denied or forbidden, and no
/// byte of the hidden notes shows; they are unchanged afterwards.
async fn hidden_folder_matrix(app: &TestApp, a: &Tenant, token: &str, restrict: impl FnOnce()) {
    let mut tx = app.store.begin(a.id).await.unwrap();
    tx.create_vault("Acme Secrets").await.unwrap();
    tx.commit().await.unwrap();
    let plan = format!("---\nstatus: {SECRET}\ntags: [secret]\n---\n# Plan\n{SECRET} [[{UNSENT}]]\n");
    let zeta = format!("{SECRET} hidden\n");
    let hidden = format!("Hidden/{UNSENT}.md");
    app.seed(
        token,
        "Acme Secrets",
        &[("Secret/Plan.md", Some(&plan)), (&hidden, Some(&zeta)), ("Public/Open.md", Some("open [[Plan]]\n"))],
    )
    .await;
    restrict();
    let leaks = |text: &str| text.contains(SECRET) || text.contains(UNSENT);

    let mut problems = Vec::new();
    let live_app_tools: Vec<&str> = otc_tools::toolset::all()
        .iter()
        .filter(|t| t.declaration.spec.declared_tags.contains(&"plugin-bridge"))
        .map(|t| t.declaration.spec.name)
        .collect();
    for tool in otc_tools::toolset::all().iter().map(|t| t.declaration.spec.name) {
        let args = args_for(tool, "Acme Secrets", "00000000-0000-0000-0000-000000000000", ENTITY);
        let result = call(app, "/mcp", token, tool, args.clone()).await;
        let text = result.to_string();
        if leaks(&text) {
            problems.push(format!("{tool} {args} leaks the hidden folder: {text}"));
        }
        if result["isError"] == true {
            let code = result["structuredContent"]["code"].as_str().unwrap();
            let semantic = tool == "search_semantic" && code == "embedding_provider_error";
            // A tool that needs a live Obsidian app (or the PLUR store, not configured here)
            // answers the same for every path of a vault the caller reaches.
            let live_app =
                code == "plugin_unavailable" && (live_app_tools.contains(&tool) || tool.starts_with("plur_"));
            // add_vault names no vault of A's: it makes one in the caller's own tenant (once).
            let own = tool == "add_vault" && code == "conflict";
            if !semantic
                && !live_app
                && !own
                && !matches!(code, "not_found" | "note_not_found" | "acl_denied" | "forbidden")
            {
                problems.push(format!("{tool} {args}: {code}: {text}"));
            }
        } else if tool == "inspect_acl" {
            assert_eq!(result["structuredContent"]["allowed"], false, "{text}");
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The hidden notes are as they were.
    let mut tx = app.store.begin(a.id).await.unwrap();
    let vault = tx.vault_by_name("Acme Secrets").await.unwrap().unwrap();
    let files = tx.files_at(vault.id, &["Secret/Plan.md".to_string(), hidden.clone()]).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(files.len(), 2, "{files:?}");
}
