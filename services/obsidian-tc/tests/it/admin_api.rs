//! The tenant admin API: vaults (`/v1/admin/vaults`: make, rename, delete, restore and purge)
//! and API tokens (`/v1/admin/tokens`: make, list, revoke), with idempotency keys, typed
//! refusals, scopes, every action audited, and another tenant's ids answering as missing ones.

use std::collections::BTreeMap;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp};
use crate::mcp::{call, error_of};

/// `method path` with an optional body and idempotency key: the status and the JSON answer.
async fn admin(
    app: &TestApp,
    token: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
    key: Option<&str>,
) -> (StatusCode, Value) {
    let mut request = app.http.request(method, app.url(path)).bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn names(app: &TestApp, token: &str) -> (Vec<String>, Vec<String>) {
    let (status, listed) = admin(app, token, Method::GET, "/v1/admin/vaults", None, None).await;
    assert_eq!(status, 200, "{listed}");
    let of = |k: &str| listed[k].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap().to_string()).collect();
    (of("vaults"), of("deleted"))
}

#[tokio::test]
async fn an_admin_makes_renames_deletes_restores_and_purges_vaults_with_keys_scopes_and_audit() {
    let app = TestApp::spawn().await;
    let a = Tenant::create(&app.store, "acme").await;
    let b = Tenant::create(&app.store, "globex").await;
    let (admin_token, _) = a.token(&app.store, "admin:vaults,read:notes,write:notes,admin:audit", false, None).await;
    let (writer, _) = a.token(&app.store, "read:notes,write:notes", false, None).await;
    let (bound, _) = a.token(&app.store, "*", true, None).await;
    let (other, _) = b.token(&app.store, "*", false, None).await;
    let t = admin_token.as_str();

    // Scopes: without admin:vaults, 403 naming it; a token bound to one vault manages none.
    let (status, refused) = admin(&app, &writer, Method::GET, "/v1/admin/vaults", None, None).await;
    assert_eq!(status, 403, "{refused}");
    assert_eq!(refused["error"]["details"]["required"], json!(["admin:vaults"]), "{refused}");
    let (status, _) = admin(&app, &bound, Method::POST, "/v1/admin/vaults", Some(json!({"name": "X"})), None).await;
    assert_eq!(status, 403);

    // Made once under a key, however often the request is sent; the same key with another
    // body is refused.
    let make = json!({"name": "Projects"});
    let (status, first) = admin(&app, t, Method::POST, "/v1/admin/vaults", Some(make.clone()), Some("k1")).await;
    assert_eq!(status, 200, "{first}");
    let (status, again) = admin(&app, t, Method::POST, "/v1/admin/vaults", Some(make.clone()), Some("k1")).await;
    assert_eq!((status, &again["id"]), (StatusCode::OK, &first["id"]), "{again}");
    let (status, clash) =
        admin(&app, t, Method::POST, "/v1/admin/vaults", Some(json!({"name": "Other"})), Some("k1")).await;
    assert_eq!(
        (status, clash["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("idempotency_key_mismatch"))
    );
    assert_eq!(names(&app, t).await.0, ["Notes", "Projects"]);

    // Typed refusals: a taken name, a bad name, a body with an unknown field.
    let (status, taken) = admin(&app, t, Method::POST, "/v1/admin/vaults", Some(make.clone()), None).await;
    assert_eq!((status, taken["error"]["code"].as_str()), (StatusCode::CONFLICT, Some("conflict")), "{taken}");
    let (status, bad) = admin(&app, t, Method::POST, "/v1/admin/vaults", Some(json!({"name": "../x"})), None).await;
    assert_eq!((status, bad["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_input")), "{bad}");
    let (status, _) =
        admin(&app, t, Method::POST, "/v1/admin/vaults", Some(json!({"name": "Y", "owner": "z"})), None).await;
    assert_eq!(status, 400);

    // Renamed: the tools find the new name at once, not the old one.
    ok_tool(&app, &writer, "write_note", json!({"vault": "Projects", "path": "p.md", "content": "plan"})).await;
    let (status, renamed) =
        admin(&app, t, Method::PATCH, "/v1/admin/vaults/Projects", Some(json!({"name": "Work"})), None).await;
    assert_eq!((status, renamed["name"].as_str()), (StatusCode::OK, Some("Work")), "{renamed}");
    let old = call(&app, "/mcp", &writer, "read_note", json!({"vault": "Projects", "path": "p.md"})).await;
    assert_eq!(error_of(&old)["code"], "vault_not_found");
    ok_tool(&app, &writer, "read_note", json!({"vault": "Work", "path": "p.md"})).await;

    // Deleted: listed as deleted with its erasure time, found by no tool.
    let (status, gone) = admin(&app, t, Method::DELETE, "/v1/admin/vaults/Work", None, Some("d1")).await;
    assert_eq!(status, 200, "{gone}");
    assert!(gone["purge_after"].is_string() && gone["deleted_at"].is_string(), "{gone}");
    assert_eq!(names(&app, t).await, (vec!["Notes".to_string()], vec!["Work".to_string()]));
    let read = call(&app, "/mcp", &writer, "read_note", json!({"vault": "Work", "path": "p.md"})).await;
    assert_eq!(error_of(&read)["code"], "vault_not_found");
    let (status, _) = admin(&app, t, Method::DELETE, "/v1/admin/vaults/Work", None, Some("d1")).await;
    assert_eq!(status, 200, "a retry under the same key answers the first deletion");
    let (status, twice) = admin(&app, t, Method::DELETE, "/v1/admin/vaults/Work", None, None).await;
    assert_eq!((status, twice["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("vault_not_found")));

    // Another tenant's admin reaches none of it: the names and ids answer as missing ones.
    let id = renamed["id"].as_str().unwrap();
    for path in [format!("/v1/admin/vaults/{id}/restore"), "/v1/admin/vaults/Work/restore".to_string()] {
        let (status, missing) = admin(&app, &other, Method::POST, &path, None, None).await;
        assert_eq!((status, missing["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("vault_not_found")));
    }
    let (status, _) =
        admin(&app, &other, Method::DELETE, &format!("/v1/admin/vaults/{}", a.vault_id), None, None).await;
    assert_eq!(status, 404);
    assert_eq!(names(&app, &other).await, (vec!["Notes".to_string()], vec![]));

    // Restored by id: as it was.
    let (status, back) = admin(&app, t, Method::POST, &format!("/v1/admin/vaults/{id}/restore"), None, None).await;
    assert_eq!((status, back["name"].as_str()), (StatusCode::OK, Some("Work")), "{back}");
    let note = ok_tool(&app, &writer, "read_note", json!({"vault": "Work", "path": "p.md"})).await;
    assert_eq!(note["content"], "plan");

    // Purged: erased at the erase pass, then gone from every list.
    admin(&app, t, Method::DELETE, "/v1/admin/vaults/Work", None, None).await;
    let (status, purged) = admin(&app, t, Method::POST, "/v1/admin/vaults/Work/purge", None, None).await;
    assert_eq!(status, 200, "{purged}");
    let report = otc_worker::erasure::erase_due(&app.store, &app.deps.blobs, &app.deps.kv, a.id, None).await.unwrap();
    assert_eq!(report.vaults, 1, "{report:?}");
    assert_eq!(names(&app, t).await, (vec!["Notes".to_string()], vec![]));
    let (status, _) = admin(&app, t, Method::POST, "/v1/admin/vaults/Work/restore", None, None).await;
    assert_eq!(status, 404, "an erased vault cannot come back");

    // Every action is in the tenant's audit trail, with its outcome.
    // The export waits for every record queued before it.
    let (status, _) = admin(&app, t, Method::GET, "/v1/audit?limit=1", None, None).await;
    assert_eq!(status, 200);
    let mut tx = app.store.begin(a.id).await.unwrap();
    let records = tx.audit(&otc_store::AuditFilter { limit: 200, ..Default::default() }).await.unwrap();
    tx.commit().await.unwrap();
    for (action, outcome) in [
        ("POST /v1/admin/vaults", "ok"),
        ("POST /v1/admin/vaults", "conflict"),
        ("PATCH /v1/admin/vaults/{vault}", "ok"),
        ("DELETE /v1/admin/vaults/{vault}", "ok"),
        ("DELETE /v1/admin/vaults/{vault}", "vault_not_found"),
        ("POST /v1/admin/vaults/{vault}/restore", "ok"),
        ("POST /v1/admin/vaults/{vault}/purge", "ok"),
    ] {
        assert!(
            records.iter().any(|r| r.action == action && r.outcome == outcome),
            "no {action} {outcome} in {:?}",
            records.iter().map(|r| (&r.action, &r.outcome)).collect::<Vec<_>>()
        );
    }
}

#[tokio::test]
async fn an_admin_makes_lists_and_revokes_tokens_holding_no_more_than_it_has() {
    let app = TestApp::spawn().await;
    let a = Tenant::create(&app.store, "acme").await;
    let b = Tenant::create(&app.store, "globex").await;
    let (t, _) = a.token(&app.store, "admin:tokens,read:notes,write:notes", false, None).await;
    let (other, _) = b.token(&app.store, "*", false, None).await;
    ok_tool(&app, &t, "write_note", json!({"vault": "Notes", "path": "n.md", "content": "hello"})).await;

    // A read-only token bound to Notes, made once under a key; its text only in the first answer.
    let ask = json!({"name": "ci-bot", "scopes": ["read:notes"], "vault": "Notes", "expires_in_days": 30});
    let (status, made) = admin(&app, &t, Method::POST, "/v1/admin/tokens", Some(ask.clone()), Some("t1")).await;
    assert_eq!(status, 200, "{made}");
    let bot = made["token"].as_str().expect("the text, this once").to_string();
    assert_eq!((made["vault"].as_str(), made["scopes"].clone()), (Some("Notes"), json!(["read:notes"])), "{made}");
    let (status, again) = admin(&app, &t, Method::POST, "/v1/admin/tokens", Some(ask), Some("t1")).await;
    assert_eq!((status, &again["id"]), (StatusCode::OK, &made["id"]), "{again}");
    assert!(again.get("token").is_none(), "a retry never shows the text again: {again}");
    let read = ok_tool(&app, &bot, "read_note", json!({"vault": "Notes", "path": "n.md"})).await;
    assert_eq!(read["content"], "hello");
    let write = call(&app, "/mcp", &bot, "write_note", json!({"vault": "Notes", "path": "x.md", "content": "x"})).await;
    assert_eq!(write["isError"], true, "read:notes only: {write}");

    // No one hands out more than they hold; bad input is typed.
    let (status, beyond) = admin(
        &app,
        &t,
        Method::POST,
        "/v1/admin/tokens",
        Some(json!({"name": "root", "scopes": ["admin:vaults"]})),
        None,
    )
    .await;
    assert_eq!((status, beyond["error"]["code"].as_str()), (StatusCode::FORBIDDEN, Some("forbidden")), "{beyond}");
    assert_eq!(beyond["error"]["details"]["scope"], "admin:vaults");
    for bad in [json!({"name": "x", "scopes": []}), json!({"name": "x", "scopes": ["read:notes"], "vault": "Nope"})] {
        let (status, refused) = admin(&app, &t, Method::POST, "/v1/admin/tokens", Some(bad.clone()), None).await;
        assert!(status == 400 || status == 404, "{bad}: {status} {refused}");
    }

    // Listed without secrets; revoked, it stops at once; another tenant's admin cannot touch it.
    let (status, listed) = admin(&app, &t, Method::GET, "/v1/admin/tokens", None, None).await;
    assert_eq!(status, 200);
    let row = listed["tokens"].as_array().unwrap().iter().find(|r| r["id"] == made["id"]).unwrap().clone();
    assert_eq!((row["vault"].as_str(), row["principal"].as_str()), (Some("Notes"), Some("ci-bot")), "{row}");
    assert!(!listed.to_string().contains(&bot), "no secret in the list");
    let id = made["id"].as_str().unwrap();
    let (status, _) = admin(&app, &other, Method::DELETE, &format!("/v1/admin/tokens/{id}"), None, None).await;
    assert_eq!(status, 404, "another tenant's token is a missing one");
    ok_tool(&app, &bot, "read_note", json!({"vault": "Notes", "path": "n.md"})).await;
    let (status, revoked) = admin(&app, &t, Method::DELETE, &format!("/v1/admin/tokens/{id}"), None, None).await;
    assert_eq!((status, revoked["revoked"].as_bool()), (StatusCode::OK, Some(true)), "{revoked}");
    let status = app.http.post(app.url("/mcp")).bearer_auth(&bot).json(&json!({})).send().await.unwrap().status();
    assert_eq!(status, 401, "a revoked token stops at once");
    let (status, _) = admin(&app, &t, Method::DELETE, "/v1/admin/tokens/not-an-id", None, None).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn usage_counts_every_call_by_class_and_outcome_as_the_audit_trail_has_them() {
    let app = TestApp::spawn().await;
    let a = Tenant::create(&app.store, "acme").await;
    let b = Tenant::create(&app.store, "globex").await;
    let (t, _) = a.token(&app.store, "admin:usage,admin:audit,read:notes,write:notes", false, None).await;
    let (other, _) = b.token(&app.store, "*", false, None).await;
    for i in 0..3 {
        ok_tool(&app, &t, "write_note", json!({"vault": "Notes", "path": format!("{i}.md"), "content": "x"})).await;
    }
    ok_tool(&app, &t, "read_note", json!({"vault": "Notes", "path": "0.md"})).await;
    let missing = call(&app, "/mcp", &t, "read_note", json!({"vault": "Notes", "path": "nope.md"})).await;
    assert_eq!(error_of(&missing)["code"], "note_not_found");
    crate::sync::upload(&app, &t, "Notes", b"an attachment").await;
    ok_tool(&app, &other, "write_note", json!({"vault": "Notes", "path": "b.md", "content": "b"})).await;

    // The trail as it stands (the export waits for every record before it), then the usage.
    let trail = app.http.get(app.url("/v1/audit?limit=1000")).bearer_auth(&t).send().await.unwrap();
    let trail: Vec<Value> = trail.text().await.unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let (status, usage) = admin(&app, &t, Method::GET, "/v1/admin/usage?days=7", None, None).await;
    assert_eq!(status, 200, "{usage}");
    let today = &usage["days"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(today["day"], chrono::Utc::now().date_naive().to_string());
    let counted = |class: &str, outcome: &str| today["calls"][class][outcome].as_i64().unwrap_or(0);
    assert_eq!(
        (counted("write", "ok"), counted("read", "ok"), counted("read", "note_not_found")),
        (3, 1, 1),
        "{usage}"
    );
    assert_eq!(today["uploads"], 1, "{usage}");
    // Every record of the trail, and the export's own, is counted once; nothing of globex.
    let mut by_outcome: BTreeMap<String, i64> = BTreeMap::new();
    for record in &trail {
        *by_outcome.entry(record["outcome"].as_str().unwrap().to_string()).or_default() += 1;
    }
    *by_outcome.entry("ok".into()).or_default() += 1;
    let mut metered: BTreeMap<String, i64> = BTreeMap::new();
    for outcomes in today["calls"].as_object().unwrap().values() {
        for (outcome, n) in outcomes.as_object().unwrap() {
            *metered.entry(outcome.clone()).or_default() += n.as_i64().unwrap();
        }
    }
    assert_eq!(metered, by_outcome, "usage {usage} against the trail {trail:?}");
    assert!(usage["storage_bytes"]["used"].as_i64().unwrap() > 0 && usage["notes"]["used"] == 3, "{usage}");

    // Scopes and bounds.
    let (status, _) = admin(&app, &other, Method::GET, "/v1/admin/usage?days=0", None, None).await;
    assert_eq!(status, 400);
    let (status, _) = admin(&app, &t, Method::GET, "/v1/admin/usage?days=400", None, None).await;
    assert_eq!(status, 400);
    let (reader, _) = a.token(&app.store, "read:notes", false, None).await;
    let (status, _) = admin(&app, &reader, Method::GET, "/v1/admin/usage", None, None).await;
    assert_eq!(status, 403);
}

#[tokio::test]
async fn a_member_sees_and_ends_only_what_is_theirs_and_gets_client_setups() {
    let app = TestApp::spawn().await;
    let a = Tenant::create(&app.store, "acme").await;
    let mut tx = app.store.begin(a.id).await.unwrap();
    tx.create_vault("Work").await.unwrap();
    tx.commit().await.unwrap();
    let (alice, _) = a.token(&app.store, "read:notes", false, None).await;
    let (spare, spare_id) = a.token(&app.store, "read:notes", false, None).await;
    let (bound, _) = a.token(&app.store, "read:notes", true, None).await;
    let bob = a.token_as(&app.store, "bob", "read:notes").await;
    let alice_id = a.caller(&app.store, &alice).await.principal_id;
    let bob_id = a.caller(&app.store, &bob).await.principal_id;

    // Vaults: every one, or the one a token is bound to.
    let names = |v: &Value| v["vaults"].as_array().unwrap().iter().map(|x| x["name"].clone()).collect::<Vec<_>>();
    let (_, mine) = admin(&app, &alice, Method::GET, "/v1/me/vaults", None, None).await;
    assert_eq!(names(&mine), [json!("Notes"), json!("Work")]);
    let (_, only) = admin(&app, &bound, Method::GET, "/v1/me/vaults", None, None).await;
    assert_eq!(names(&only), [json!("Notes")]);

    // Tokens: their own only; another's answers as missing; their own stops at once.
    let (_, listed) = admin(&app, &alice, Method::GET, "/v1/me/tokens", None, None).await;
    assert_eq!(listed["tokens"].as_array().unwrap().len(), 3, "{listed}");
    let bobs = admin(&app, &bob, Method::GET, "/v1/me/tokens", None, None).await.1["tokens"][0]["id"].clone();
    let (status, _) =
        admin(&app, &alice, Method::DELETE, &format!("/v1/me/tokens/{}", bobs.as_str().unwrap()), None, None).await;
    assert_eq!(status, 404);
    let (status, ended) = admin(&app, &alice, Method::DELETE, &format!("/v1/me/tokens/{spare_id}"), None, None).await;
    assert_eq!((status, ended["revoked"].as_bool()), (StatusCode::OK, Some(true)));
    let after = app.http.post(app.url("/mcp")).bearer_auth(&spare).json(&json!({})).send().await.unwrap().status();
    assert_eq!(after, 401);

    // Grants: theirs only; another's answers as missing.
    let mut tx = app.store.begin(a.id).await.unwrap();
    let grant = |principal| otc_store::NewGrant {
        principal_id: principal,
        client_id: "client",
        client_name: Some("Claude"),
        scopes: &[],
        resource: "https://x.example/mcp",
        via: "authorization_code",
    };
    let own = tx.create_grant(grant(alice_id)).await.unwrap();
    let others = tx.create_grant(grant(bob_id)).await.unwrap();
    tx.commit().await.unwrap();
    let (_, grants) = admin(&app, &alice, Method::GET, "/v1/me/grants", None, None).await;
    assert_eq!(grants["grants"].as_array().unwrap().len(), 1, "{grants}");
    assert_eq!(grants["grants"][0]["client_name"], "Claude");
    let (status, _) = admin(&app, &alice, Method::DELETE, &format!("/v1/me/grants/{}", others.id), None, None).await;
    assert_eq!(status, 404);
    let (status, _) = admin(&app, &alice, Method::DELETE, &format!("/v1/me/grants/{}", own.id), None, None).await;
    assert_eq!(status, 200);
    let (_, grants) = admin(&app, &alice, Method::GET, "/v1/me/grants", None, None).await;
    assert!(grants["grants"].as_array().unwrap().is_empty());
    let (_, bobs_grants) = admin(&app, &bob, Method::GET, "/v1/me/grants", None, None).await;
    assert_eq!(bobs_grants["grants"].as_array().unwrap().len(), 1, "another's grant stands");

    // Client setups for this server's endpoint.
    let (status, setups) = admin(&app, &alice, Method::GET, "/v1/me/clients", None, None).await;
    assert_eq!(status, 200);
    let url = setups["url"].as_str().unwrap();
    assert!(url.ends_with("/mcp"), "{setups}");
    let clients: Vec<&str> =
        setups["clients"].as_array().unwrap().iter().map(|c| c["client"].as_str().unwrap()).collect();
    assert_eq!(clients, ["Claude Code", "Cursor", "VS Code", "Codex", "ChatGPT"]);
    let cursor: Value = serde_json::from_str(setups["clients"][1]["text"].as_str().unwrap()).unwrap();
    assert_eq!(cursor["mcpServers"]["obsidian-tc"]["url"], url);
    assert_eq!(setups["vaults"], json!(["Notes", "Work"]));
}

/// Debian's dnsmasq on a loopback port, answering only these TXT records. Killed on drop.
pub(crate) struct Dns(std::process::Child);

impl Dns {
    /// A loopback port for dnsmasq, free for both UDP and TCP (it listens on both). Taken below
    /// Linux's ephemeral range (32768 and up): a port from `bind(0)` is an ephemeral one, which
    /// any other socket of the machine (a browser's connection, another test's listener) may be
    /// handed before dnsmasq binds it, a minute later in a long test.
    pub(crate) fn free_port() -> u16 {
        loop {
            let port = 20_000 + (uuid::Uuid::new_v4().as_u128() % 12_000) as u16;
            let udp = std::net::UdpSocket::bind(("127.0.0.1", port));
            let tcp = std::net::TcpListener::bind(("127.0.0.1", port));
            if udp.is_ok() && tcp.is_ok() {
                return port;
            }
        }
    }

    pub(crate) fn start(port: u16, records: &[(&str, &str)]) -> Self {
        let mut command = std::process::Command::new("/usr/sbin/dnsmasq");
        command.args([
            "--keep-in-foreground",
            "--no-resolv",
            "--no-hosts",
            "--no-poll",
            "--conf-file=/dev/null",
            "--pid-file=",
            "--listen-address=127.0.0.1",
            "--bind-interfaces",
            &format!("--port={port}"),
        ]);
        for (name, value) in records {
            command.arg(format!("--txt-record={name},{value}"));
        }
        let mut child = command
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("dnsmasq (scripts/services installs Debian's dnsmasq-base)");
        // Ready once it answers.
        let resolver = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        for _ in 0..100 {
            if let Ok(Some(status)) = child.try_wait() {
                let mut said = String::new();
                let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut said);
                panic!("dnsmasq on {resolver} exited ({status}): {said}");
            }
            let asked = tokio::task::block_in_place(|| {
                tokio::runtime::Handle::current().block_on(otc_kernel::dns::txt(
                    resolver,
                    "ready.test",
                    std::time::Duration::from_millis(100),
                ))
            });
            // Any answer will do (it refuses names it holds nothing for).
            if matches!(asked, Ok(_) | Err(otc_kernel::dns::DnsError::Failed(_))) {
                return Self(child);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("dnsmasq did not answer on {resolver}");
    }
}

impl Drop for Dns {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_domain_is_the_tenants_once_its_dns_publishes_the_challenge_and_no_one_elses() {
    let port = Dns::free_port();
    let app = TestApp::spawn_with(|c| c.domains.resolver = format!("127.0.0.1:{port}")).await;
    let a = Tenant::create(&app.store, "acme").await;
    let b = Tenant::create(&app.store, "globex").await;
    let (t, _) = a.token(&app.store, "admin:domains", false, None).await;
    let (other, _) = b.token(&app.store, "admin:domains", false, None).await;
    let post = |token: &str, path: &str, body: Option<Value>| {
        let (token, path) = (token.to_string(), path.to_string());
        let app = &app;
        async move { admin(app, &token, Method::POST, &path, body, None).await }
    };

    // Claimed: the record to publish; not the tenant's yet.
    let (status, claim) = post(&t, "/v1/admin/domains", Some(json!({"domain": "Acme.test"}))).await;
    assert_eq!(status, 200, "{claim}");
    assert_eq!(claim["record_name"], "_obsidian-tc-challenge.acme.test");
    let value = claim["record_value"].as_str().unwrap().to_string();
    assert!(value.starts_with("obsidian-tc-verify="));
    let held = |tenant: uuid::Uuid| {
        let store = app.store.clone();
        async move {
            let mut tx = store.begin(tenant).await.unwrap();
            let held: Vec<String> = tx.tenant_domains().await.unwrap().into_iter().map(|d| d.domain).collect();
            tx.commit().await.unwrap();
            held
        }
    };
    assert!(held(a.id).await.is_empty());

    // The resolver down, then up without the record: typed refusals, nothing proven.
    let (status, down) = post(&t, "/v1/admin/domains/acme.test/verify", None).await;
    assert_eq!(
        (status, down["error"]["code"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("service_unavailable")),
        "{down}"
    );
    let dns = Dns::start(port, &[("_obsidian-tc-challenge.acme.test", "someone-else")]);
    let (status, missing) = post(&t, "/v1/admin/domains/acme.test/verify", None).await;
    assert_eq!((status, missing["error"]["code"].as_str()), (StatusCode::CONFLICT, Some("conflict")), "{missing}");
    assert_eq!(missing["error"]["details"]["found"], json!(["someone-else"]));
    drop(dns);

    // Published: proven (SCIM admits its people; the admin may name it for the provider).
    let dns = Dns::start(port, &[("_obsidian-tc-challenge.acme.test", &value)]);
    let (status, proven) = post(&t, "/v1/admin/domains/acme.test/verify", None).await;
    assert_eq!((status, proven["done"].as_bool()), (StatusCode::OK, Some(true)), "{proven}");
    assert_eq!(held(a.id).await, ["acme.test"]);
    let (_, listed) = admin(&app, &t, Method::GET, "/v1/admin/domains", None, None).await;
    assert_eq!(listed["domains"][0]["domain"], "acme.test");
    assert_eq!(listed["domains"][0]["via"], "dns");
    assert!(listed["claims"].as_array().unwrap().is_empty());
    drop(dns);

    // Another tenant cannot take it, even publishing its own challenge.
    let (_, theirs) = post(&other, "/v1/admin/domains", Some(json!({"domain": "acme.test"}))).await;
    let dns = Dns::start(port, &[("_obsidian-tc-challenge.acme.test", theirs["record_value"].as_str().unwrap())]);
    let (status, taken) = post(&other, "/v1/admin/domains/acme.test/verify", None).await;
    assert_eq!((status, taken["error"]["code"].as_str()), (StatusCode::CONFLICT, Some("conflict")), "{taken}");
    assert!(!taken.to_string().contains("acme inc"), "the holder is not named");
    assert!(held(b.id).await.is_empty());
    drop(dns);

    // The provider names it: sign-in for the domain goes to the tenant (home-realm discovery).
    let mut tx = app.store.begin(a.id).await.unwrap();
    tx.set_idp(&otc_store::IdpConfig {
        issuer: "https://idp.acme.test".into(),
        client_id: "obsidian-tc".into(),
        sealed_secret: None,
        email_domains: vec!["acme.test".into()],
        groups_claim: "groups".into(),
        default_scopes: vec![],
        group_scopes: json!({}),
        group_acl: json!({}),
        cimd_hosts: vec![],
    })
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(app.store.tenant_by_email_domain("acme.test").await.unwrap(), Some(a.id));

    // Bad input, and giving it up: the provider still lists it, but it routes no one.
    let (status, _) = post(&t, "/v1/admin/domains", Some(json!({"domain": "not a domain"}))).await;
    assert_eq!(status, 400);
    let (status, _) = admin(&app, &t, Method::DELETE, "/v1/admin/domains/acme.test", None, None).await;
    assert_eq!(status, 200);
    assert!(held(a.id).await.is_empty());
    assert_eq!(app.store.tenant_by_email_domain("acme.test").await.unwrap(), None);
    let (status, _) = admin(&app, &t, Method::DELETE, "/v1/admin/domains/acme.test", None, None).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_first_admin_accepts_an_invitation_once_and_runs_the_tenant_from_there() {
    let app = TestApp::spawn().await;
    // The operator makes the tenant with an invitation; the code is printed once.
    let made =
        crate::harness::cli_with_env(app.iso.env(), &["tenant", "create", "initech", "--invite", "ann@initech.test"]);
    assert!(made.status.success(), "{}{}", crate::harness::stdout(&made), crate::harness::stderr(&made));
    let out = crate::harness::stdout(&made);
    let code = out.lines().find(|l| l.starts_with("otci_")).unwrap_or_else(|| panic!("{out}")).trim().to_string();
    let app = &app;
    let accept = |code: &str| {
        let body = json!({"code": code});
        async move {
            let response = app.http.post(app.url("/v1/invitations/accept")).json(&body).send().await.unwrap();
            (response.status(), response.json::<Value>().await.unwrap())
        }
    };

    // Accepted: an admin token for the invited person, without any credential beforehand.
    let (status, accepted) = accept(&code).await;
    assert_eq!(status, 200, "{accepted}");
    assert_eq!(
        (accepted["tenant"].as_str(), accepted["principal"].as_str()),
        (Some("initech"), Some("ann@initech.test"))
    );
    let token = accepted["token"].as_str().unwrap().to_string();
    let (status, made) =
        admin(app, &token, Method::POST, "/v1/admin/vaults", Some(json!({"name": "Handbook"})), None).await;
    assert_eq!(status, 200, "{made}");
    let (status, who) = admin(app, &token, Method::GET, "/v1/whoami", None, None).await;
    assert_eq!((status, who["principal"]["name"].as_str()), (StatusCode::OK, Some("ann@initech.test")));

    // In the tenant's trail.
    let tenant = app.store.resolve_tenant("initech").await.unwrap();
    let (status, _) = admin(app, &token, Method::GET, "/v1/audit?limit=1", None, None).await;
    assert_eq!(status, 200);
    let mut tx = app.store.begin(tenant).await.unwrap();
    let trail = tx.audit(&otc_store::AuditFilter { limit: 50, ..Default::default() }).await.unwrap();
    tx.commit().await.unwrap();
    assert!(
        trail
            .iter()
            .any(|r| r.action == "POST /v1/invitations/accept"
                && r.principal_name.as_deref() == Some("ann@initech.test"))
    );

    // Once only; an unknown, expired or malformed code answers alike.
    let (status, again) = accept(&code).await;
    assert_eq!((status, again["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")), "{again}");
    let mut tx = app.store.begin(tenant).await.unwrap();
    let scopes = otc_auth::parse_scopes("read:*").unwrap();
    let stale = tx.invite("bo@initech.test", &scopes, chrono::Utc::now() - chrono::Duration::seconds(1)).await.unwrap();
    tx.commit().await.unwrap();
    for bad in [stale.code.as_str(), "otci_nonsense", &code.replace(&code[code.len() - 6..], "000000")] {
        let (status, refused) = accept(bad).await;
        assert_eq!(status, 404, "{bad}: {refused}");
    }
    let (status, _) = accept("").await;
    assert_eq!(status, 404);
}

async fn ok_tool(app: &TestApp, token: &str, tool: &str, args: Value) -> Value {
    let result = call(app, "/mcp", token, tool, args.clone()).await;
    assert_eq!(result["isError"], false, "{tool} {args}: {result}");
    result["structuredContent"].clone()
}

#[tokio::test]
async fn a_person_signs_an_organisation_up_only_as_the_operator_allows() {
    let post = async |app: &TestApp, path: &str, body: Value| -> (StatusCode, Value) {
        let response = app.http.post(app.url(path)).json(&body).send().await.unwrap();
        (response.status(), response.json().await.unwrap_or(Value::Null))
    };
    let asked = json!({"slug": "hooli", "name": "Hooli", "email": "gavin@hooli.test", "access_code": "beta-2026"});
    // Off by default: creating tenants is the operator's.
    let closed = TestApp::spawn().await;
    let (status, refused) = post(&closed, "/v1/signup", asked.clone()).await;
    assert_eq!((status, refused["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")), "{refused}");
    assert!(closed.store.resolve_tenant("hooli").await.is_err());

    let app = TestApp::spawn_with(|c| {
        c.signup.enabled = true;
        c.signup.email_domains = vec!["hooli.test".into()];
        c.signup.access_code = Some(otc_config::Secret::new("beta-2026"));
        c.oauth.registrations_per_hour = 600;
    })
    .await;
    // Refused: without the code, for another domain, with a bad slug.
    for (body, status, code) in [
        (json!({"slug": "hooli", "email": "gavin@hooli.test"}), StatusCode::FORBIDDEN, "forbidden"),
        (
            json!({"slug": "hooli", "email": "gavin@hooli.test", "access_code": "beta-2025"}),
            StatusCode::FORBIDDEN,
            "forbidden",
        ),
        (
            json!({"slug": "hooli", "email": "gavin@piedpiper.test", "access_code": "beta-2026"}),
            StatusCode::FORBIDDEN,
            "forbidden",
        ),
        (
            json!({"slug": "Not A Slug", "email": "gavin@hooli.test", "access_code": "beta-2026"}),
            StatusCode::BAD_REQUEST,
            "invalid_input",
        ),
        (
            json!({"slug": "hooli", "email": "gavin@hooli.test", "access_code": "beta-2026", "admin": true}),
            StatusCode::BAD_REQUEST,
            "invalid_input",
        ),
    ] {
        let (got, refused) = post(&app, "/v1/signup", body.clone()).await;
        assert_eq!((got, refused["error"]["code"].as_str()), (status, Some(code)), "{body}: {refused}");
    }
    assert!(app.store.resolve_tenant("hooli").await.is_err(), "nothing was made");

    // Signed up: the tenant, and an invitation its first admin accepts for their token.
    let (status, signed) = post(&app, "/v1/signup", asked.clone()).await;
    assert_eq!(status, StatusCode::OK, "{signed}");
    assert_eq!(signed["tenant"], "hooli");
    let (status, accepted) = post(&app, "/v1/invitations/accept", json!({"code": signed["invitation"]})).await;
    assert_eq!(status, StatusCode::OK, "{accepted}");
    assert_eq!(accepted["principal"], "gavin@hooli.test");
    let token = accepted["token"].as_str().unwrap().to_string();
    let (status, made) =
        admin(&app, &token, Method::POST, "/v1/admin/vaults", Some(json!({"name": "Wiki"})), None).await;
    assert_eq!(status, StatusCode::OK, "{made}");
    // Its trail begins with the sign-up; a second sign-up for the name is a conflict.
    let (status, _) = admin(&app, &token, Method::GET, "/v1/audit?limit=1", None, None).await;
    assert_eq!(status, StatusCode::OK);
    let tenant = app.store.resolve_tenant("hooli").await.unwrap();
    let mut tx = app.store.begin(tenant).await.unwrap();
    let trail = tx.audit(&otc_store::AuditFilter { limit: 50, ..Default::default() }).await.unwrap();
    tx.commit().await.unwrap();
    assert!(
        trail.iter().any(|r| r.action == "POST /v1/signup" && r.principal_name.as_deref() == Some("gavin@hooli.test"))
    );
    let (status, taken) = post(&app, "/v1/signup", asked).await;
    assert_eq!((status, taken["error"]["code"].as_str()), (StatusCode::CONFLICT, Some("conflict")), "{taken}");
}
