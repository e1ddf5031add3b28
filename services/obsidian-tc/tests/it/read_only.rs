//! Read-only modes (maintenance, legal holds): the deployment's, a tenant's and a vault's hold
//! refuse every write through MCP and /v1 with `read_only` / `read_only_mode`, leave reads alone,
//! reach another gateway within `read_only.refresh_ms`, and touch no other tenant.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp, cli, stdout};
use crate::mcp::{call, call_at, error_of};
use crate::sync::{api, upload};

fn write_args(vault: &str, path: &str) -> Value {
    json!({"vault": vault, "path": path, "content": "text"})
}

async fn write(app: &TestApp, token: &str, vault: &str, path: &str) -> Value {
    call(app, "/mcp/full", token, "write_note", write_args(vault, path)).await
}

async fn read(app: &TestApp, token: &str, vault: &str, path: &str) -> Value {
    call(app, "/mcp/full", token, "read_note", json!({"vault": vault, "path": path})).await
}

#[tokio::test]
async fn a_vault_hold_refuses_its_writes_through_mcp_and_v1_and_nothing_else() {
    let app = TestApp::spawn().await;
    let a = Tenant::create(&app.store, "acme").await;
    let b = Tenant::create(&app.store, "globex").await;
    let scopes = "admin:vaults,read:notes,write:notes,delete:notes,read:vault";
    let (admin, _) = a.token(&app.store, scopes, false, None).await;
    let (other, _) = b.token(&app.store, "*", false, None).await;
    let (status, made) = api(&app, &admin, Method::POST, "/v1/admin/vaults", Some(json!({"name": "Other"}))).await;
    assert_eq!(status, StatusCode::OK, "{made}");
    assert_eq!(write(&app, &admin, "Notes", "kept.md").await["isError"], false);

    let hold = json!({"reason": "legal hold 2026-17"});
    let (status, held) = api(&app, &admin, Method::PUT, "/v1/admin/vaults/Notes/read-only", Some(hold)).await;
    assert_eq!(status, StatusCode::OK, "{held}");
    assert_eq!(held["read_only"]["reason"], "legal hold 2026-17", "{held}");
    // Another tenant's vault by id answers as a missing one.
    let path = format!("/v1/admin/vaults/{}/read-only", b.vault_id);
    let (status, _) = api(&app, &admin, Method::PUT, &path, Some(json!({}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // MCP: the write is refused with the code and the reason; by name and by id alike.
    let refused = write(&app, &admin, "Notes", "new.md").await;
    let err = error_of(&refused);
    assert_eq!(err["code"], "read_only_mode", "{err}");
    assert_eq!((err["details"]["scope"].clone(), err["details"]["vault"].clone()), (json!("vault"), json!("Notes")));
    assert!(err["message"].as_str().unwrap().contains("legal hold 2026-17"), "{err}");
    let by_id = write(&app, &admin, &a.vault_id.to_string(), "new.md").await;
    assert_eq!(error_of(&by_id)["code"], "read_only_mode");
    // A dry run writes nothing and goes on; reads go on; get_vault says why.
    let preview = json!({"vault": "Notes", "from_target": "kept", "to_target": "other", "dry_run": true});
    let dry = call(&app, "/mcp/full", &admin, "rewrite_link", preview).await;
    assert_eq!(dry["isError"], false, "{dry}");
    assert_eq!(read(&app, &admin, "Notes", "kept.md").await["isError"], false);
    let described = call(&app, "/mcp/full", &admin, "get_vault", json!({"vault": "Notes"})).await;
    let shown = &described["structuredContent"]["read_only"];
    assert_eq!((shown["scope"].clone(), shown["reason"].clone()), (json!("vault"), json!("legal hold 2026-17")));
    // The tenant's other vault and the other tenant write on.
    assert_eq!(write(&app, &admin, "Other", "x.md").await["isError"], false);
    assert_eq!(write(&app, &other, "Notes", "x.md").await["isError"], false);

    // /v1: a commit, an upload, a rename and a deletion of the held vault are refused.
    let (status, body) = api(
        &app,
        &admin,
        Method::POST,
        "/v1/vaults/Notes/commit",
        Some(json!({"changes": [{"path": "kept.md", "expect": "any", "delete": true}]})),
    )
    .await;
    assert_eq!((status, body["error"]["code"].clone()), (StatusCode::FORBIDDEN, json!("read_only_mode")), "{body}");
    let response = app
        .http
        .put(app.url(&format!("/v1/vaults/Notes/blobs/{}", hex::encode(otc_blobs::Blobs::hash_of(b"x")))))
        .bearer_auth(&admin)
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    // By id in any spelling a lookup takes (upper case, no hyphens) the hold still holds.
    let upper = format!("/v1/admin/vaults/{}", a.vault_id.to_string().to_uppercase());
    let simple = format!("/v1/admin/vaults/{}", a.vault_id.simple());
    for (method, path, body) in [
        (Method::PATCH, "/v1/admin/vaults/Notes", Some(json!({"name": "Renamed"}))),
        (Method::DELETE, "/v1/admin/vaults/Notes", None),
        (Method::DELETE, upper.as_str(), None),
        (Method::DELETE, simple.as_str(), None),
    ] {
        let (status, body) = api(&app, &admin, method, path, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {body}");
        assert_eq!(body["error"]["code"], "read_only_mode");
    }
    let (_, listed) = api(&app, &admin, Method::GET, "/v1/admin/vaults", None).await;
    let notes = listed["vaults"].as_array().unwrap().iter().find(|v| v["name"] == "Notes").unwrap().clone();
    assert_eq!(notes["read_only"]["reason"], "legal hold 2026-17", "{listed}");

    // Lifted: writes land again.
    let (status, lifted) = api(&app, &admin, Method::DELETE, "/v1/admin/vaults/Notes/read-only", None).await;
    assert_eq!(status, StatusCode::OK, "{lifted}");
    assert!(lifted.get("read_only").is_none(), "{lifted}");
    assert_eq!(write(&app, &admin, "Notes", "new.md").await["isError"], false);
    app.stop().await;
}

#[tokio::test]
async fn a_tenant_hold_refuses_every_write_of_the_tenant_only() {
    let app = TestApp::spawn().await;
    let a = Tenant::create(&app.store, "acme").await;
    let b = Tenant::create(&app.store, "globex").await;
    let (admin, _) = a.token(&app.store, "admin:confirm,admin:vaults,read:notes,write:notes", false, None).await;
    let (other, _) = b.token(&app.store, "*", false, None).await;
    assert_eq!(write(&app, &admin, "Notes", "a.md").await["isError"], false);
    let on = json!({"read_only": true, "read_only_reason": "migration until 14:00"});
    let (status, policies) = api(&app, &admin, Method::PUT, "/v1/policies", Some(on)).await;
    assert_eq!(status, StatusCode::OK, "{policies}");
    assert_eq!(policies["read_only"]["reason"], "migration until 14:00");

    let err = error_of(&write(&app, &admin, "Notes", "b.md").await).clone();
    assert_eq!((err["code"].clone(), err["details"]["scope"].clone()), (json!("read_only"), json!("tenant")));
    let (status, body) = api(&app, &admin, Method::POST, "/v1/admin/vaults", Some(json!({"name": "New"}))).await;
    assert_eq!((status, body["error"]["code"].clone()), (StatusCode::FORBIDDEN, json!("read_only")), "{body}");
    let hash = upload(&app, &other, "Notes", b"fine").await;
    assert!(!hash.is_empty(), "the other tenant uploads");
    assert_eq!(read(&app, &admin, "Notes", "a.md").await["isError"], false);
    assert_eq!(write(&app, &other, "Notes", "b.md").await["isError"], false);
    // A reason without the hold is refused; lifting it lets writes land.
    let (status, _) = api(&app, &admin, Method::PUT, "/v1/policies", Some(json!({"read_only_reason": "x"}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = api(&app, &admin, Method::PUT, "/v1/policies", Some(json!({"read_only": false}))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(write(&app, &admin, "Notes", "b.md").await["isError"], false);

    // A hold the operator puts on (a legal hold) the tenant's admins can see but not lift, on the
    // tenant or on a vault; the operator can.
    let out = cli(&app.iso, &["read-only", "on", "--tenant", "acme", "--reason", "legal hold"]);
    assert!(stdout(&out).contains("(set by the operator): legal hold"), "{}", stdout(&out));
    let (_, shown) = api(&app, &admin, Method::GET, "/v1/policies", None).await;
    assert_eq!(shown["read_only"]["set_by"], "operator", "{shown}");
    let (status, refused) = api(&app, &admin, Method::PUT, "/v1/policies", Some(json!({"read_only": false}))).await;
    assert_eq!(
        (status, refused["error"]["details"]["reason"].clone()),
        (StatusCode::FORBIDDEN, json!("operator_hold"))
    );
    let (status, _) = api(&app, &admin, Method::PUT, "/v1/policies", Some(json!({"read_only": true}))).await;
    assert_eq!(status, StatusCode::OK, "putting on a hold that is on changes nothing");
    assert_eq!(error_of(&write(&app, &admin, "Notes", "c.md").await)["details"]["set_by"], "operator");
    cli(&app.iso, &["read-only", "off", "--tenant", "acme"]);
    cli(&app.iso, &["read-only", "on", "--tenant", "acme", "--vault", "Notes"]);
    let (status, refused) = api(&app, &admin, Method::DELETE, "/v1/admin/vaults/Notes/read-only", None).await;
    assert_eq!(
        (status, refused["error"]["details"]["reason"].clone()),
        (StatusCode::FORBIDDEN, json!("operator_hold"))
    );
    let out = cli(&app.iso, &["read-only", "off", "--tenant", "acme", "--vault", "Notes"]);
    assert!(out.status.success(), "{}", crate::harness::stderr(&out));
    // The CLI is another process: this gateway sees the change within its refresh.
    let lifted = Instant::now();
    while write(&app, &admin, "Notes", "c.md").await["isError"] == true {
        assert!(lifted.elapsed() < Duration::from_secs(3), "still refused");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    app.stop().await;
}

#[tokio::test]
async fn the_operators_switch_reaches_every_gateway_within_the_refresh() {
    let app = TestApp::spawn().await;
    let second = app.another_gateway(|_| {}).await;
    let a = Tenant::create(&app.store, "acme").await;
    let (token, _) = a.token(&app.store, "read:notes,write:notes", false, None).await;
    let base = format!("http://{}", second.addr);
    // The second gateway has read the holds (none) before the switch.
    let first = call_at(&app.http, &base, &token, "write_note", write_args("Notes", "a.md")).await;
    assert_eq!(first["result"]["isError"], false, "{first}");

    let out = cli(&app.iso, &["read-only", "on", "--reason", "upgrade to 17"]);
    assert!(out.status.success(), "{}", crate::harness::stderr(&out));
    assert!(stdout(&out).contains("the deployment: read-only since"), "{}", stdout(&out));
    let switched = Instant::now();
    let mut attempt = 0;
    let refused = loop {
        attempt += 1;
        let answer =
            call_at(&app.http, &base, &token, "write_note", write_args("Notes", &format!("b{attempt}.md"))).await;
        if answer["result"]["isError"] == true {
            break answer["result"]["structuredContent"].clone();
        }
        // The default refresh is a second; allow the slow machine its slack, no more.
        assert!(switched.elapsed() < Duration::from_secs(3), "the second gateway still writes");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!((refused["code"].clone(), refused["details"]["scope"].clone()), (json!("read_only"), json!("server")));
    assert!(refused["message"].as_str().unwrap().contains("upgrade to 17"));
    let read = call_at(&app.http, &base, &token, "read_note", json!({"vault": "Notes", "path": "a.md"})).await;
    assert_eq!(read["result"]["isError"], false, "reads go on: {read}");
    // A tenant's and a vault's hold through the same command, shown; then all off.
    let out = cli(&app.iso, &["read-only", "on", "--tenant", "acme", "--vault", "Notes"]);
    assert!(stdout(&out).contains("vault Notes: read-only since"), "{}", stdout(&out));
    let out = cli(&app.iso, &["read-only", "off", "--tenant", "acme", "--vault", "Notes"]);
    assert!(stdout(&out).contains("no vault of acme is on hold"), "{}", stdout(&out));
    let out = cli(&app.iso, &["read-only", "off"]);
    assert!(stdout(&out).contains("the deployment: writable"), "{}", stdout(&out));
    let lifted = Instant::now();
    loop {
        attempt += 1;
        let answer =
            call_at(&app.http, &base, &token, "write_note", write_args("Notes", &format!("b{attempt}.md"))).await;
        if answer["result"]["isError"] == false {
            break;
        }
        assert!(lifted.elapsed() < Duration::from_secs(3), "still refused: {answer}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    second.stop().await.unwrap();
    app.stop().await;
}

#[tokio::test]
async fn a_configured_read_only_deployment_refuses_writes_from_the_start() {
    let app = TestApp::spawn_with(|c| c.read_only.server = true).await;
    let a = Tenant::create(&app.store, "acme").await;
    let (token, _) = a.token(&app.store, "read:notes,write:notes", false, None).await;
    let err = error_of(&write(&app, &token, "Notes", "a.md").await).clone();
    assert_eq!(
        (err["code"].clone(), err["details"]["setting"].clone()),
        (json!("read_only"), json!("read_only.server"))
    );
    let listed = call(&app, "/mcp/full", &token, "list_notes", json!({"vault": "Notes"})).await;
    assert_eq!(listed["isError"], false);
    app.stop().await;
}
