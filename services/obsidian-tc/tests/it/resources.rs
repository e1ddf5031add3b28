//! Note resources (`obsidian-tc://<vault>/<path>`): resources/list and resources/read through the
//! Python SDK and raw JSON-RPC, the read_resources and fetch tools, and the checks they share
//! with the tools: scopes, vault binding, the folder ACL, the hidden folders.

use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp, Transport, python_session};
use crate::mcp::{call, error_of, rpc, rpc_raw};

const A: &str = "---\ntags: [alpha]\n---\n# A\nBody of A #beta\n";
/// Names a URI must escape: ':' '#' '?' '%', spaces, non-ASCII.
const ODD: &str = "Open/What? #1: 100% ü 日本.md";

/// A tenant "acme" with vaults Notes (read ACL: Open/** and Top.md) and Work, seeded, and an
/// unbound token with every scope.
async fn setup(tweak: impl FnOnce(&mut otc_config::Config)) -> (TestApp, Tenant, String) {
    let app = TestApp::spawn_with(|c| {
        c.acl.push(crate::harness::read_acl(Some("acme"), "Notes", &["Open/**", "Top.md"]));
        tweak(c);
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    tx.create_vault("Work").await.unwrap();
    tx.commit().await.unwrap();
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    app.seed(
        &token,
        "Notes",
        &[
            ("Open/A.md", Some(A)),
            (ODD, Some("odd one\n")),
            ("Top.md", Some("top\n")),
            ("Secret/S.md", Some("secret\n")),
            ("Open/pic.png", Some("png")),
            (".obsidian/x.md", Some("settings\n")),
        ],
    )
    .await;
    app.seed(&token, "Work", &[("W.md", Some("work\n"))]).await;
    (app, tenant, token)
}

fn uri(vault: &str, path: &str) -> String {
    otc_kernel::citations::note_uri(vault, path)
}

const CATALOG: &str = otc_kernel::resources::CATALOG_URI;

/// Every note of every page of resources/list over raw JSON-RPC, as (uri, resource); the last
/// page ends with the catalogue, which is left out.
async fn list_all(app: &TestApp, token: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = rpc(app, "/mcp", token, "resources/list", params).await;
        for r in page["resources"].as_array().unwrap() {
            out.push((r["uri"].as_str().unwrap().to_string(), r.clone()));
        }
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => {
                let (last, _) = out.pop().expect("the catalogue ends the listing");
                assert_eq!(last, CATALOG);
                return out;
            }
        }
    }
}

/// resources/read over raw JSON-RPC: Ok(contents) or Err(the JSON-RPC error).
async fn read(app: &TestApp, token: &str, uri: &str) -> Result<Value, Value> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}});
    let (status, text) = rpc_raw(app, "/mcp", Some(token), &[], body).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{text}");
    let value: Value = serde_json::from_str(&text).unwrap();
    match value.get("error") {
        Some(error) => Err(error.clone()),
        None => Ok(value["result"]["contents"][0].clone()),
    }
}

#[tokio::test]
async fn the_python_sdk_lists_and_reads_note_resources_and_the_acl_holds() {
    let (app, _tenant, token) = setup(|_| {}).await;
    let out = python_session(
        Transport::Http { url: app.url("/mcp"), token: &token },
        json!([
            {"op": "list_resources"},
            {"op": "read_resource", "uri": uri("Notes", "Open/A.md")},
            {"op": "read_resource", "uri": uri("Notes", ODD)},
            {"op": "read_resource", "uri": uri("Notes", "Secret/S.md")},
            {"op": "read_resource", "uri": "file:///etc/passwd"},
            {"op": "read_resource", "uri": uri("Nowhere", "A.md")},
            {"op": "read_resource", "uri": uri("Notes", "Open/Missing.md")}
        ]),
    )
    .await;
    assert!(out["capabilities"].get("resources").is_some(), "resources are advertised: {out}");
    let listed: Vec<&str> =
        out["results"][0]["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap()).collect();
    let expected =
        [uri("Notes", "Open/A.md"), uri("Notes", ODD), uri("Notes", "Top.md"), uri("Work", "W.md"), CATALOG.into()];
    assert_eq!(listed, expected, "readable notes only, in (vault, path) order, then the catalogue");
    let first = &out["results"][0]["resources"][0];
    assert_eq!(first["mimeType"], "text/markdown");
    assert_eq!(first["name"], "Open/A.md");
    assert_eq!(first["title"], "A");
    assert_eq!(first["size"], A.len());

    let a = &out["results"][1]["contents"][0];
    assert_eq!(a["text"], A, "the configured default (detailed) is the whole note");
    assert_eq!(a["mimeType"], "text/markdown");
    assert_eq!(a["uri"], uri("Notes", "Open/A.md"));
    assert_eq!(out["results"][2]["contents"][0]["text"], "odd one\n", "{}", out["results"][2]);
    // Hidden by the ACL, an unknown scheme, an unknown vault, a missing note: all not found.
    for (i, code) in [(3, "note_not_found"), (4, "not_found"), (5, "note_not_found"), (6, "note_not_found")] {
        let error = &out["results"][i]["error"];
        assert_eq!(error["code"], -32002, "step {i}: {}", out["results"][i]);
        assert_eq!(error["data"]["code"], code, "step {i}: {error}");
    }
    let hidden = &out["results"][3]["error"];
    let missing = &out["results"][6]["error"];
    assert_eq!(hidden["data"]["message"], missing["data"]["message"], "hidden reads exactly as missing");
    app.stop().await;
}

#[tokio::test]
async fn a_vault_bound_token_stays_on_its_vault() {
    let (app, tenant, _) = setup(|_| {}).await;
    let (bound, _) = tenant.token(&app.store, "read:notes", true, None).await;
    let out = python_session(
        Transport::Http { url: app.url("/mcp"), token: &bound },
        json!([
            {"op": "list_resources"},
            {"op": "read_resource", "uri": uri("Work", "W.md")},
            {"op": "read_resource", "uri": uri("Notes", "Top.md")},
            {"op": "call", "name": "read_resources", "args": {"uris": [uri("Work", "W.md"), uri("Notes", "Top.md")], "response_format": "concise"}},
            {"op": "call", "name": "fetch", "args": {"id": uri("Work", "W.md")}}
        ]),
    )
    .await;
    let listed: Vec<&str> =
        out["results"][0]["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap()).collect();
    assert_eq!(listed.last(), Some(&CATALOG), "{listed:?}");
    let notes = &listed[..listed.len() - 1];
    assert!(notes.iter().all(|u| u.starts_with("obsidian-tc://Notes/")), "{listed:?}");
    assert_eq!(notes.len(), 3);
    assert_eq!(out["results"][1]["error"]["data"]["code"], "note_not_found", "{}", out["results"][1]);
    assert_eq!(out["results"][2]["contents"][0]["text"], "top\n");
    let batch = &out["results"][3]["structuredContent"]["resources"];
    assert_eq!(batch[0]["ok"], false);
    assert_eq!(batch[0]["error"]["code"], "note_not_found");
    assert_eq!(batch[1], json!({"ok": true, "uri": uri("Notes", "Top.md"), "text": "top\n"}));
    assert_eq!(error_of(&out["results"][4])["code"], "vault_not_found");

    // A token without read:notes lists nothing and reads nothing.
    let (admin, _) = tenant.token(&app.store, "admin:config", false, None).await;
    assert!(list_all(&app, &admin).await.is_empty());
    assert_eq!(read(&app, &admin, &uri("Notes", "Top.md")).await.unwrap_err()["data"]["code"], "note_not_found");
    app.stop().await;
}

#[tokio::test]
async fn read_resources_and_fetch_answer_per_item_and_in_the_connector_shape() {
    let (app, _tenant, token) =
        setup(|c| c.tools.defaults.response_format = otc_config::ResponseFormatSetting::Concise).await;
    // resources/read follows the configured default: concise is the body alone.
    assert_eq!(read(&app, &token, &uri("Notes", "Open/A.md")).await.unwrap()["text"], "# A\nBody of A #beta\n");
    let uris = [uri("Notes", "Open/A.md"), uri("Notes", "Secret/S.md"), "nonsense".to_string(), uri("Work", "W.md")];
    let concise = call(&app, "/mcp", &token, "read_resources", json!({"uris": uris})).await;
    let items = concise["structuredContent"]["resources"].as_array().unwrap().clone();
    assert_eq!(items[0], json!({"ok": true, "uri": uris[0], "text": "# A\nBody of A #beta\n"}));
    assert_eq!(items[1]["error"]["code"], "note_not_found");
    assert_eq!(items[2]["error"]["code"], "not_found");
    assert_eq!(items[3]["text"], "work\n");
    let detailed =
        call(&app, "/mcp", &token, "read_resources", json!({"uris": [uris[0]], "response_format": "detailed"})).await;
    let item = &detailed["structuredContent"]["resources"][0];
    assert_eq!(item["text"], A);
    assert_eq!((item["vault"].as_str(), item["path"].as_str()), (Some("Notes"), Some("Open/A.md")));
    assert_eq!(item["mime_type"], "text/markdown");
    assert_eq!(item["size"], A.len());
    let bad = call(&app, "/mcp", &token, "read_resources", json!({"uris": []})).await;
    assert_eq!(error_of(&bad)["details"]["field"], "uris");

    let fetched = call(&app, "/mcp", &token, "fetch", json!({"id": uri("Notes", "Open/A.md")})).await;
    let f = &fetched["structuredContent"];
    assert_eq!(f["id"], uri("Notes", "Open/A.md"));
    assert_eq!(f["url"], f["id"]);
    assert_eq!(f["title"], "A");
    assert_eq!(f["text"], A, "fetch returns the whole note whatever the default format");
    assert_eq!(f["metadata"]["tags"], json!(["alpha", "beta"]));
    assert_eq!(f["metadata"]["size"], A.len());
    assert_eq!(f["metadata"]["content_hash"].as_str().unwrap().len(), 64);
    let odd = call(&app, "/mcp", &token, "fetch", json!({"id": uri("Notes", ODD)})).await;
    assert_eq!(odd["structuredContent"]["metadata"]["path"], ODD, "{odd}");
    let hidden = call(&app, "/mcp", &token, "fetch", json!({"id": uri("Notes", "Secret/S.md")})).await;
    assert_eq!(error_of(&hidden)["code"], "note_not_found");
    let malformed = call(&app, "/mcp", &token, "fetch", json!({"id": "Notes/Open/A.md"})).await;
    assert_eq!(error_of(&malformed)["details"]["field"], "id");
    app.stop().await;
}

#[tokio::test]
async fn resources_list_pages_and_bound_vault_only_keeps_to_the_default_vault() {
    let (app, tenant, token) = setup(|c| c.resources.bound_vault_only = true).await;
    let many: Vec<(String, Option<String>)> =
        (0..130).map(|i| (format!("Open/Many/{i:03}.md"), Some(format!("note {i}\n")))).collect();
    let refs: Vec<(&str, Option<&str>)> = many.iter().map(|(p, t)| (p.as_str(), t.as_deref())).collect();
    app.seed(&token, "Notes", &refs).await;
    // Two vaults, no binding: with bound_vault_only, no default vault, so no resources.
    assert!(list_all(&app, &token).await.is_empty());
    assert!(read(&app, &token, &uri("Notes", "Top.md")).await.is_err());
    // Bound to Notes: its notes, in pages of 100 with a cursor.
    let (bound, _) = tenant.token(&app.store, "read:notes", true, None).await;
    let first = rpc(&app, "/mcp", &bound, "resources/list", json!({})).await;
    assert_eq!(first["resources"].as_array().unwrap().len(), 100);
    assert!(first["nextCursor"].is_string());
    let all = list_all(&app, &bound).await;
    assert_eq!(all.len(), 133, "130 + A, the odd one and Top");
    let mut sorted = all.clone();
    sorted.sort_by(|a, b| a.1["name"].as_str().cmp(&b.1["name"].as_str()));
    assert_eq!(all, sorted, "path order across pages, no repeats");
    let bogus = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/list", "params": {"cursor": "bogus"}});
    let (_, text) = rpc_raw(&app, "/mcp", Some(&bound), &[], bogus).await;
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["error"]["code"], -32602, "{text}");
    app.stop().await;
}

#[tokio::test]
async fn the_catalogue_is_a_resource_of_the_tools_the_caller_may_list() {
    let (app, tenant, token) = setup(|c| c.tool_visibility.hidden_tags = vec!["admin".into()]).await;
    let read_catalog = async |token: &str| -> Value {
        let contents = read(&app, token, CATALOG).await.expect("the catalogue reads");
        assert_eq!(contents["mimeType"], "application/json");
        serde_json::from_str(contents["text"].as_str().unwrap()).unwrap()
    };
    let all = read_catalog(&token).await;
    let names: Vec<&str> = all["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.len() > 100, "{}", names.len());
    let read_note = all["tools"].as_array().unwrap().iter().find(|t| t["name"] == "read_note").unwrap();
    assert_eq!(read_note["scopes"], json!(["read:notes"]), "{read_note}");
    assert!(read_note["description"].as_str().is_some_and(|d| !d.is_empty()));
    // A hidden tag's tools are not in it, as not in tools/list; nor what the scopes cannot call.
    assert!(all["tools"].as_array().unwrap().iter().all(|t| !t["tags"].as_array().unwrap().contains(&json!("admin"))));
    assert!(!names.contains(&"get_server_config"), "{names:?}");
    let (reader, _) = tenant.token(&app.store, "read:notes", false, None).await;
    let theirs = read_catalog(&reader).await;
    let theirs: Vec<&str> = theirs["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(theirs.contains(&"read_note") && !theirs.contains(&"write_note"), "{theirs:?}");
    assert!(theirs.len() < names.len());
    app.stop().await;
}
