//! The vault administration the spec puts in tools, on the hosted model: add_vault,
//! reload_vault, reset_vault_cache and refresh_plugin_capabilities (admin:vault), and
//! suggest_tags with and without the client's sampling.

use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp, Transport, python_session_with};
use crate::mcp::{call, error_of};

async fn result(app: &TestApp, token: &str, tool: &str, args: Value) -> Value {
    call(app, "/mcp/full", token, tool, args).await
}

async fn ok(app: &TestApp, token: &str, tool: &str, args: Value) -> Value {
    let out = result(app, token, tool, args.clone()).await;
    assert_eq!(out["isError"], false, "{tool} {args}: {out}");
    out["structuredContent"].clone()
}

#[tokio::test]
async fn add_vault_makes_a_vault_in_the_callers_tenant_only() {
    let app = TestApp::spawn().await;
    let a = Tenant::create(&app.store, "acme").await;
    let b = Tenant::create(&app.store, "globex").await;
    let (admin, _) = a.token(&app.store, "admin:vault,read:vault,read:notes,write:notes", false, None).await;
    let (bound, _) = a.token(&app.store, "*", true, None).await;
    let (reader, _) = a.token(&app.store, "read:vault", false, None).await;
    let (other, _) = b.token(&app.store, "*", false, None).await;

    let made = ok(&app, &admin, "add_vault", json!({"name": "Projects"})).await;
    assert_eq!(made["vault"], "Projects");
    let listed = ok(&app, &admin, "list_vaults", json!({})).await;
    let names: Vec<&str> = listed["vaults"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Notes", "Projects"]);
    // Reachable at once, for writes too.
    ok(&app, &admin, "write_note", json!({"vault": "Projects", "path": "a.md", "content": "x"})).await;
    // Taken, malformed, unscoped and vault-bound callers are refused with their codes.
    let taken = result(&app, &admin, "add_vault", json!({"name": "Projects"})).await;
    assert_eq!(error_of(&taken)["code"], "conflict");
    let bad = result(&app, &admin, "add_vault", json!({"name": "../up"})).await;
    assert_eq!(error_of(&bad)["code"], "invalid_input");
    let unscoped = result(&app, &reader, "add_vault", json!({"name": "X"})).await;
    assert_eq!(error_of(&unscoped)["code"], "forbidden");
    let from_bound = result(&app, &bound, "add_vault", json!({"name": "X"})).await;
    assert_eq!(error_of(&from_bound)["details"]["reason"], "vault_bound");
    // The other tenant sees none of it and may use the same name.
    let theirs = ok(&app, &other, "list_vaults", json!({})).await;
    assert_eq!(theirs["vaults"].as_array().unwrap().len(), 1, "{theirs}");
    ok(&app, &other, "add_vault", json!({"name": "Projects"})).await;
    app.stop().await;
}

#[tokio::test]
async fn reload_and_reset_rebuild_what_is_derived_and_never_touch_the_notes() {
    let app = TestApp::spawn().await;
    let a = Tenant::create(&app.store, "acme").await;
    let b = Tenant::create(&app.store, "globex").await;
    let scopes = "admin:vault,admin:confirm,read:notes,write:notes,read:vault";
    let (admin, _) = a.token(&app.store, scopes, false, None).await;
    let (other, _) = b.token(&app.store, "*", false, None).await;
    app.seed(&admin, "Notes", &[("a.md", Some("# A\nSee [[b]] #garden\n")), ("b.md", Some("# B\n"))]).await;

    let reloaded = ok(&app, &admin, "reload_vault", json!({"vault": "Notes"})).await;
    assert!(reloaded["dropped"].as_array().unwrap().contains(&json!("manifest rows")), "{reloaded}");
    // Another tenant's vault, by id, is a missing one.
    let theirs = result(&app, &admin, "reload_vault", json!({"vault": b.vault_id.to_string()})).await;
    assert_eq!(error_of(&theirs)["code"], "vault_not_found");

    // reset_vault_cache asks for confirmation first, with what it would drop.
    let asked = result(&app, &admin, "reset_vault_cache", json!({"vault": "Notes"})).await;
    let asked = error_of(&asked);
    assert_eq!(asked["code"], "elicit_required", "{asked}");
    assert!(asked["message"].as_str().unwrap().contains("its index"), "{asked}");
    let (status, minted) = crate::sync::api(
        &app,
        &admin,
        reqwest::Method::POST,
        "/v1/elicit",
        Some(json!({"tool": "reset_vault_cache", "args_hash": asked["details"]["args_hash"], "vault": "Notes"})),
    )
    .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{minted}");
    let reset = ok(&app, &admin, "reset_vault_cache", json!({"vault": "Notes", "elicit_token": minted["token"]})).await;
    assert_eq!(reset["reset"], json!(["caches", "embeddings", "index"]), "{reset}");
    assert_eq!(reset["index"]["status"], "completed", "{reset}");
    assert_eq!(reset["index"]["notes"], 2, "{reset}");
    assert_eq!(reset["vectors_dropped"], 0, "no provider: no vectors");
    // The notes and their links are there as before.
    let back = ok(&app, &admin, "get_backlinks", json!({"vault": "Notes", "path": "b.md"})).await;
    assert_eq!(back["backlinks"][0]["source_path"], "a.md", "{back}");
    let read = ok(&app, &admin, "read_note", json!({"vault": "Notes", "path": "a.md", "format": "content"})).await;
    assert!(read["content"].as_str().unwrap().contains("[[b]]"), "{read}");
    // The other tenant's index was not touched.
    ok(&app, &other, "write_note", json!({"vault": "Notes", "path": "x.md", "content": "[[y]]"})).await;
    let unresolved = ok(&app, &other, "find_unresolved_links", json!({"vault": "Notes"})).await;
    assert!(unresolved.to_string().contains("x.md"), "{unresolved}");
    app.stop().await;
}

#[tokio::test]
async fn plugin_capabilities_read_the_vaults_settings_and_say_what_changed() {
    let app = TestApp::spawn().await;
    let a = Tenant::create(&app.store, "acme").await;
    let (admin, _) = a.token(&app.store, "admin:vault,read:notes", false, None).await;
    app.seed(
        &admin,
        "Notes",
        &[
            (".obsidian/community-plugins.json", Some(r#"["dataview", "quickadd", "someone-elses-plugin"]"#)),
            (".obsidian/core-plugins.json", Some(r#"{"canvas": true, "graph": false, "bases": true}"#)),
        ],
    )
    .await;
    let first = ok(&app, &admin, "refresh_plugin_capabilities", json!({"vault": "Notes"})).await;
    let plugins: Vec<(String, String)> = first["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap().to_string(), p["headless"].as_str().unwrap().to_string()))
        .collect();
    let expected = [
        ("bases", "full"),
        ("canvas", "full"),
        ("dataview", "full"),
        ("quickadd", "none"),
        ("someone-elses-plugin", "unknown"),
    ];
    assert_eq!(plugins, expected.map(|(a, b)| (a.to_string(), b.to_string())), "{first}");
    assert_eq!(first["added"].as_array().unwrap().len(), 5, "the first refresh adds every plugin");
    // The vault drops QuickAdd and enables Tasks: the next refresh says so.
    app.seed(
        &admin,
        "Notes",
        &[(".obsidian/community-plugins.json", Some(r#"["dataview", "obsidian-tasks-plugin"]"#))],
    )
    .await;
    let second = ok(&app, &admin, "refresh_plugin_capabilities", json!({"vault": "Notes"})).await;
    assert_eq!(second["added"], json!(["community:obsidian-tasks-plugin"]), "{second}");
    assert_eq!(second["removed"], json!(["community:quickadd", "community:someone-elses-plugin"]), "{second}");
    // A settings file that is not a list says so and leaves nothing out silently.
    app.seed(&admin, "Notes", &[(".obsidian/community-plugins.json", Some("{not json"))]).await;
    let third = ok(&app, &admin, "refresh_plugin_capabilities", json!({"vault": "Notes"})).await;
    assert!(third["warnings"][0].as_str().unwrap().contains("community-plugins.json"), "{third}");
    app.stop().await;
}

#[tokio::test]
async fn suggest_tags_ranks_the_vocabulary_and_asks_the_clients_model_where_it_can() {
    let app = TestApp::spawn().await;
    let a = Tenant::create(&app.store, "acme").await;
    let (token, _) = a.token(&app.store, "*", false, None).await;
    app.seed(
        &token,
        "Notes",
        &[
            (
                "Beds.md",
                Some("---\ntags: [garden]\n---\n# Raised beds\nCompost goes on the beds. See [[Soil]] and [[Rota]].\n"),
            ),
            ("Soil.md", Some("---\ntags: [garden, soil/health]\n---\nLoam.\n")),
            ("Rota.md", Some("#volunteers #garden\nWho waters when.\n")),
            ("Compost.md", Some("#compost\nHot heaps.\n")),
            ("Cake.md", Some("#recipe\nFlour.\n")),
        ],
    )
    .await;
    // The heuristic: the tags the linked notes carry, then the tags whose words the note uses;
    // never one it has, never an unrelated one.
    let out =
        ok(&app, &token, "suggest_tags", json!({"vault": "Notes", "path": "Beds.md", "response_format": "detailed"}))
            .await;
    assert_eq!(out["source"], "vocabulary");
    let tags: Vec<&str> = out["suggestions"].as_array().unwrap().iter().map(|s| s["tag"].as_str().unwrap()).collect();
    assert_eq!(tags, ["soil/health", "volunteers", "compost"], "{out}");
    assert_eq!(out["existing"], json!(["garden"]));
    assert!(out["suggestions"][2]["reasons"][0].as_str().unwrap().contains("compost"), "{out}");
    let missing = result(&app, &token, "suggest_tags", json!({"vault": "Notes", "path": "Nope.md"})).await;
    assert_eq!(error_of(&missing)["code"], "note_not_found");

    // Over stdio with a client that samples: its model chooses (tags it has are dropped) and is
    // shown the note and the vocabulary.
    let mut env = app.iso.env();
    env.push(("OTC_TOKEN".into(), token.clone()));
    let steps = json!([{"op": "call", "name": "suggest_tags", "args": {"vault": "Notes", "path": "Beds.md"}}]);
    let sampled = python_session_with(
        Transport::Stdio { args: vec!["stdio".into()], env },
        steps,
        &[("OTC_TEST_SAMPLE", "#compost\n- raised-beds\ngarden\n1. soil/health")],
    )
    .await;
    let answer = &sampled["results"][0]["structuredContent"];
    assert_eq!(answer["source"], "sampling", "{sampled}");
    let tags: Vec<&str> =
        answer["suggestions"].as_array().unwrap().iter().map(|s| s["tag"].as_str().unwrap()).collect();
    assert_eq!(tags, ["compost", "raised-beds", "soil/health"], "{sampled}");
    assert_eq!(answer["suggestions"][1]["notes"], 0, "a new tag: {sampled}");
    let asked = &sampled["samplings"][0]["text"];
    assert!(asked.as_str().unwrap().contains("Compost goes on the beds"), "{asked}");
    assert!(asked.as_str().unwrap().contains("soil/health"), "the vocabulary is shown: {asked}");
    app.stop().await;
}
