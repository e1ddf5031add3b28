//! The model-backed tools against a stand-in chat endpoint at its HTTP boundary (a paid external
//! API): each tenant's own endpoint set by `obsidian-tc tenant llm` (its key sealed), what is sent
//! (only what the asker may read), the answers checked (citations naming no source removed), the
//! daily cap and the cost counters, failures as catalogue codes, and the contradiction detector
//! finding and resolving a contradiction between linked notes.

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp, cli_with_env, stderr, stdout};
use crate::sso::SECRET_KEY;
use crate::write::{err, ok};

const V: &str = "Notes";

#[derive(Default)]
pub(crate) struct FakeChat {
    /// Each request's body and authorization header.
    seen: Mutex<Vec<(Value, String)>>,
    failing: Mutex<bool>,
}

async fn chat(State(fake): State<Arc<FakeChat>>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    fake.seen.lock().unwrap().push((body.clone(), auth));
    if *fake.failing.lock().unwrap() {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let system = body["messages"][0]["content"].as_str().unwrap_or("");
    let user = body["messages"][1]["content"].as_str().unwrap_or("");
    let content = if system.contains("red-team") {
        json!({"verdict": "conflicts", "summary": "Releases are fixed on Tuesdays.",
               "objections": [{"text": "The release decision fixes Tuesdays.", "sources": [1, 42]}]})
        .to_string()
    } else if system.contains("contradictions") {
        let tuesday = user.contains("Tuesdays");
        let thursday = user.contains("Thursdays");
        if tuesday && thursday {
            json!({"contradiction": true, "statement_a": "Releases go out on Thursdays",
                   "statement_b": "Releases go out on Tuesdays", "rationale": "Two release days for one release."})
            .to_string()
        } else {
            json!({"contradiction": false}).to_string()
        }
    } else {
        "Releases go out on Tuesdays [1], after the canary [2]. Nobody knows [9].".to_string()
    };
    Json(json!({
        "choices": [{"message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 500},
    }))
    .into_response()
}

pub(crate) async fn fake_chat() -> (Arc<FakeChat>, String) {
    let fake = Arc::new(FakeChat::default());
    let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(chat)).with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (fake, url)
}

fn tenant_llm(app: &TestApp, args: &[&str]) -> String {
    let out = tenant_llm_with(app, args, "[\"127.0.0.1:*\"]");
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

/// `obsidian-tc tenant llm acme ARGS` with `oauth.private_hosts` set to `private_hosts`.
fn tenant_llm_with(app: &TestApp, args: &[&str], private_hosts: &str) -> std::process::Output {
    let config_file = std::env::temp_dir().join(format!("otc-llm-{}.toml", uuid::Uuid::new_v4().simple()));
    std::fs::write(&config_file, format!("[oauth]\nprivate_hosts = {private_hosts}\n")).unwrap();
    let mut env = app.iso.env();
    env.push(("OTC__OAUTH__SECRET_KEY".into(), SECRET_KEY.into()));
    env.push(("FAKE_CHAT_KEY".into(), "sk-fake-chat-key".into()));
    let mut all = vec!["--config", config_file.to_str().unwrap(), "tenant", "llm", "acme"];
    all.extend_from_slice(args);
    let out = cli_with_env(env, &all);
    let _ = std::fs::remove_file(&config_file);
    out
}

/// The deployment: a secret key (which seals the endpoint's key), a wiki, a folder ACL that
/// hides Secret/ from everyone, and the stand-in endpoint's loopback address exempt from the
/// public-address rule.
fn configure(c: &mut otc_config::Config) {
    c.oauth.secret_key = Some(otc_config::Secret::new(SECRET_KEY));
    c.oauth.private_hosts = vec!["127.0.0.1:*".into()];
    c.tools.confirm_destructive = false;
    c.wiki.folder = Some("wiki".into());
    let visible = Some(["Ops/**", "wiki/**"].map(String::from).to_vec());
    c.acl.push(otc_config::AclEntry {
        tenant: Some("acme".into()),
        vault: V.into(),
        read_paths: visible,
        write_paths: None,
        delete_paths: None,
    });
}

#[tokio::test]
async fn model_backed_tools_use_the_tenants_endpoint_within_its_cap() {
    let (fake, url) = fake_chat().await;
    let app = TestApp::spawn_with(configure).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    app.seed(
        &token,
        V,
        &[
            (
                "Ops/Release.md",
                Some("---\ntags: [decision]\n---\n# Release\n\nReleases go out on Tuesdays. See [[Canary]].\n"),
            ),
            ("Ops/Canary.md", Some("# Canary\n\nEvery release runs a canary first. Its cost: [[Budget]].\n")),
            // Hidden, linked both ways, and contradicting Release: were the ACL not applied, the
            // graph expansion and the detector would reach it.
            ("Secret/Budget.md", Some("# Budget\n\nThe release budget is CLASSIFIED-4471. Releases go out on Thursdays. [[Release]] [[Canary]]\n")),
        ],
    )
    .await;

    // Without an endpoint.
    for (tool, args) in [
        ("reflect", json!({"vault": V, "query": "When do releases go out?"})),
        ("knowledge_challenge", json!({"vault": V, "proposal": "Move releases to Fridays"})),
    ] {
        let e = err(&app, &token, tool, args).await;
        assert_eq!(
            (e["code"].clone(), e["details"]["reason"].clone()),
            (json!("plugin_unavailable"), json!("llm_not_configured"))
        );
        assert!(e["hint"].as_str().unwrap().contains("vault_context"), "{e}");
    }

    // The tenant's own endpoint, its key sealed.
    let shown = tenant_llm(
        &app,
        &[
            "--base-url",
            &url,
            "--model",
            "fake-chat",
            "--api-key-env",
            "FAKE_CHAT_KEY",
            "--daily-cap",
            "4",
            "--prompt-cost",
            "1",
            "--completion-cost",
            "2",
        ],
    );
    assert!(shown.contains("model fake-chat key set daily cap 4"), "{shown}");
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let stored = tx.tenant_llm().await.unwrap().unwrap();
    tx.commit().await.unwrap();
    let sealed = stored.sealed_api_key.unwrap();
    assert!(!String::from_utf8_lossy(&sealed).contains("sk-fake-chat-key"), "the key is sealed at rest");

    let answer = ok(&app, &token, "reflect", json!({"vault": V, "query": "When do releases go out?", "k": 3})).await;
    assert_eq!(answer["model"], "fake-chat");
    assert_eq!(answer["invalid_citations"], json!([9]));
    assert!(!answer["answer"].as_str().unwrap().contains("[9]"), "{answer}");
    let cited: Vec<&str> =
        answer["citations"].as_array().unwrap().iter().map(|c| c["path"].as_str().unwrap()).collect();
    assert_eq!(cited.len(), 2, "{answer}");
    assert!(cited.contains(&"Ops/Release.md"));
    assert_eq!(answer["cost_usd"], 0.002, "1000 prompt tokens at $1/M and 500 at $2/M");
    let (sent, auth) = fake.seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(auth, "Bearer sk-fake-chat-key");
    assert!(!sent.to_string().contains("CLASSIFIED"), "only what the asker may read is sent: {sent}");
    let linked = ok(
        &app,
        &token,
        "reflect",
        json!({"vault": V, "query": "When do releases go out?", "citation_style": "wikilink", "persist": true}),
    )
    .await;
    assert!(linked["answer"].as_str().unwrap().contains("[[Ops/"), "{linked}");
    let path = linked["persisted_path"].as_str().unwrap().to_string();
    assert!(path.starts_with("wiki/Reflections/When do releases go out"), "{path}");
    let note = ok(&app, &token, "read_note", json!({"vault": V, "path": path, "format": "content"})).await;
    assert!(note["content"].as_str().unwrap().contains("question: \"When do releases go out?\""), "{note}");

    let challenged =
        ok(&app, &token, "knowledge_challenge", json!({"vault": V, "proposal": "Move releases to Fridays"})).await;
    assert_eq!(challenged["verdict"], "conflicts");
    assert_eq!(challenged["evidence"][0]["path"], "Ops/Release.md", "decisions first: {challenged}");
    let objection = &challenged["objections"][0];
    assert_eq!(objection["sources"].as_array().unwrap().len(), 1, "the evidence number 42 names nothing: {objection}");

    // The fourth call of the day is the last the cap allows; a failure counts too.
    *fake.failing.lock().unwrap() = true;
    let e = err(&app, &token, "reflect", json!({"vault": V, "query": "canary"})).await;
    assert_eq!(
        (e["code"].clone(), e["details"]["reason"].clone(), e["retryable"].clone()),
        (json!("plugin_unreachable"), json!("llm_failed"), json!(true))
    );
    *fake.failing.lock().unwrap() = false;
    let e = err(&app, &token, "reflect", json!({"vault": V, "query": "canary"})).await;
    assert_eq!((e["code"].clone(), e["details"]["reason"].clone()), (json!("throttled"), json!("daily_cap")));
    let calls = fake.seen.lock().unwrap().len();
    assert_eq!(calls, 4, "over the cap nothing is sent");
    let usage = tenant_llm(&app, &[]);
    assert!(
        usage.contains("reflect") && usage.contains("calls     3 failed    1") && usage.contains("$0.0040"),
        "{usage}"
    );
    assert!(usage.contains("knowledge_challenge"), "{usage}");

    // The contradiction detector, between linked notes, until they agree.
    tenant_llm(&app, &["--daily-cap", "100"]);
    let mut config = app.iso.config();
    configure(&mut config);
    let dispatcher = obsidian_tc::app::dispatcher(&config, &app.deps).unwrap();
    ok(&app, &token, "write_note", json!({"vault": V, "path": "Ops/Schedule.md", "content": "# Schedule\n\nReleases go out on Thursdays, per [[Release]].\n"})).await;
    let pass =
        otc_tools::tools::knowledge::maintenance::detect_contradictions(&dispatcher, tenant.id, 50).await.unwrap();
    assert_eq!((pass.tenants, pass.found), (1, 1), "{pass:?}");
    let listed = ok(&app, &token, "list_contradictions", json!({"vault": V, "paths": ["Ops/Schedule.md"]})).await;
    let finding = &listed["contradictions"][0];
    assert_eq!(
        (finding["path_a"].clone(), finding["path_b"].clone()),
        (json!("Ops/Release.md"), json!("Ops/Schedule.md")),
        "{listed}"
    );
    assert_eq!(finding["model"], "fake-chat");
    let context = ok(&app, &token, "vault_context", json!({"vault": V, "query": "release Thursdays"})).await;
    assert_eq!(context["contradictions"].as_array().unwrap().len(), 1, "{context}");
    let again =
        otc_tools::tools::knowledge::maintenance::detect_contradictions(&dispatcher, tenant.id, 50).await.unwrap();
    assert_eq!((again.found, again.judged), (0, 0), "nothing changed, nothing judged: {again:?}");
    ok(&app, &token, "write_note", json!({"vault": V, "path": "Ops/Schedule.md", "content": "# Schedule\n\nReleases go out on Tuesdays, per [[Release]].\n", "mode": "overwrite"})).await;
    let mended =
        otc_tools::tools::knowledge::maintenance::detect_contradictions(&dispatcher, tenant.id, 50).await.unwrap();
    let judged: Vec<String> = fake.seen.lock().unwrap().iter().map(|(body, _)| body.to_string()).collect();
    assert!(judged.iter().all(|b| !b.contains("CLASSIFIED")), "the detector reads what the ACL lets everyone read");
    assert_eq!(mended.resolved, 1, "{mended:?}");
    let listed = ok(
        &app,
        &token,
        "list_contradictions",
        json!({"vault": V, "paths": ["Ops/Schedule.md"], "include_resolved": true}),
    )
    .await;
    assert_eq!(listed["contradictions"][0]["status"], "resolved");
    assert_eq!(listed["contradictions"][0]["resolution"], "the changed notes no longer contradict");

    let cleared = tenant_llm(&app, &["--clear"]);
    assert!(cleared.contains("removed the chat endpoint"), "{cleared}");
    app.stop().await;
}

/// A tenant's chat endpoint is held to the identity providers' rule: public https, or a
/// `host:port` the deployment exempts (`oauth.private_hosts`). Neither the command nor a call
/// reaches a loopback or private address otherwise, and the key is never sent there.
#[tokio::test]
async fn a_chat_endpoint_on_a_private_address_is_refused_when_set_and_when_called() {
    let (fake, url) = fake_chat().await;
    let app = TestApp::spawn_with(|c| {
        configure(c);
        c.oauth.private_hosts = Vec::new();
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    app.seed(&token, V, &[("Ops/Release.md", Some("# Release\n\nReleases go out on Tuesdays.\n"))]).await;
    for base in [
        url.as_str(),
        "http://127.0.0.1:9014/v1",
        "https://10.0.0.8/v1",
        "https://localhost/v1",
        "https://u:p@llm.example/v1",
    ] {
        let out = tenant_llm_with(&app, &["--base-url", base, "--model", "m", "--api-key-env", "FAKE_CHAT_KEY"], "[]");
        assert!(!out.status.success(), "{base} was accepted");
        assert!(stderr(&out).contains("--base-url"), "{}", stderr(&out));
    }
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    assert!(tx.tenant_llm().await.unwrap().is_none(), "nothing was stored");
    // One stored before the rule (or exempt then): the call is refused before anything is sent.
    tx.set_tenant_llm(&otc_store::TenantLlm {
        base_url: url.clone(),
        model: "fake-chat".into(),
        sealed_api_key: None,
        daily_cap: 10,
        prompt_cost_per_mtok: 0.0,
        completion_cost_per_mtok: 0.0,
    })
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let e = err(&app, &token, "reflect", json!({"vault": V, "query": "When do releases go out?"})).await;
    assert_eq!(
        (e["code"].as_str(), e["details"]["reason"].as_str()),
        (Some("plugin_unreachable"), Some("llm_failed")),
        "{e}"
    );
    assert!(fake.seen.lock().unwrap().is_empty(), "nothing reached the private address");
    // Exempt, the same endpoint answers.
    let out = tenant_llm_with(&app, &["--base-url", &url, "--model", "fake-chat"], "[\"127.0.0.1:*\"]");
    assert!(out.status.success(), "{}", stderr(&out));
}

#[tokio::test]
async fn a_tenant_admin_sets_the_chat_endpoint_through_the_api_and_its_key_is_never_shown() {
    let (fake, url) = fake_chat().await;
    let app = TestApp::spawn_with(configure).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let other = Tenant::create(&app.store, "globex").await;
    let (admin, _) = tenant.token(&app.store, "admin:chat", false, None).await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    app.seed(&token, V, &[("Ops/Release.md", Some("# Release\n\nReleases go out on Tuesdays.\n"))]).await;
    let api = async |token: &str, method: reqwest::Method, body: Option<Value>| -> (u16, Value) {
        let mut request = app.http.request(method, app.url("/v1/admin/chat")).bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        (response.status().as_u16(), response.json().await.unwrap())
    };

    let (status, shown) = api(&admin, reqwest::Method::GET, None).await;
    assert_eq!((status, &shown["chat"]), (200, &Value::Null), "{shown}");
    let set = json!({"base_url": url, "model": "fake-chat", "api_key": "sk-from-the-api", "daily_cap": 3,
                     "prompt_cost_per_mtok": 1.0, "completion_cost_per_mtok": 2.0});
    let (status, shown) = api(&admin, reqwest::Method::PUT, Some(set)).await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["chat"]["has_api_key"], true, "{shown}");
    assert_eq!((shown["chat"]["model"].as_str(), shown["chat"]["daily_cap"].as_i64()), (Some("fake-chat"), Some(3)));
    assert!(!shown.to_string().contains("sk-from-the-api"), "{shown}");

    // The tools use it, with the key, and the admin sees the call.
    let answer = ok(&app, &token, "reflect", json!({"vault": V, "query": "When do releases go out?", "k": 2})).await;
    assert_eq!(answer["model"], "fake-chat", "{answer}");
    assert_eq!(fake.seen.lock().unwrap().last().unwrap().1, "Bearer sk-from-the-api");
    let (_, shown) = api(&admin, reqwest::Method::GET, None).await;
    let today = &shown["usage"][0];
    assert_eq!((today["purpose"].as_str(), today["calls"].as_i64()), (Some("reflect"), Some(1)), "{shown}");
    assert_eq!(today["cost_usd"], 0.002, "{shown}");

    // A change of model keeps the key; a new base URL without a key drops it, and says so.
    let (_, shown) = api(&admin, reqwest::Method::PUT, Some(json!({"model": "fake-chat-2"}))).await;
    assert_eq!(
        (shown["chat"]["model"].as_str(), shown["chat"]["has_api_key"].as_bool()),
        (Some("fake-chat-2"), Some(true))
    );
    let moved = url.replace("/v1", "/v2");
    let (_, shown) = api(&admin, reqwest::Method::PUT, Some(json!({"base_url": moved}))).await;
    assert_eq!(
        (shown["chat"]["has_api_key"].as_bool(), shown["key_dropped"].as_bool()),
        (Some(false), Some(true)),
        "{shown}"
    );

    // Refusals: a private address, a negative cap, an unknown field; the scope; nothing changed.
    for (body, field) in [
        (json!({"base_url": "https://10.1.2.3/v1"}), Some("base_url")),
        (json!({"base_url": "ftp://example.com/v1"}), Some("base_url")),
        (json!({"daily_cap": -1}), Some("daily_cap")),
        (json!({"model": ""}), Some("model")),
        (json!({"nope": 1}), None),
    ] {
        let (status, refused) = api(&admin, reqwest::Method::PUT, Some(body.clone())).await;
        assert_eq!((status, refused["error"]["code"].as_str()), (400, Some("invalid_input")), "{body}: {refused}");
        if let Some(field) = field {
            assert_eq!(refused["error"]["details"]["field"], field, "{refused}");
        }
    }
    let (reader, _) = tenant.token(&app.store, "read:notes", false, None).await;
    assert_eq!(api(&reader, reqwest::Method::PUT, Some(json!({"model": "x"}))).await.0, 403);
    let (_, shown) = api(&admin, reqwest::Method::GET, None).await;
    assert_eq!(shown["chat"]["model"], "fake-chat-2", "{shown}");

    // Another tenant sees none of it; removing it twice answers not_found the second time.
    let (theirs, _) = other.token(&app.store, "admin:chat", false, None).await;
    let (_, seen) = api(&theirs, reqwest::Method::GET, None).await;
    assert_eq!((&seen["chat"], seen["usage"].as_array().map(Vec::len)), (&Value::Null, Some(0)), "{seen}");
    assert_eq!(api(&theirs, reqwest::Method::DELETE, None).await.0, 404);
    assert_eq!(api(&admin, reqwest::Method::DELETE, None).await, (200, json!({"removed": true})));
    let e = err(&app, &token, "reflect", json!({"vault": V, "query": "When do releases go out?"})).await;
    assert_eq!(e["details"]["reason"], "llm_not_configured", "{e}");
}

#[tokio::test]
async fn notes_excluded_from_egress_never_reach_the_chat_model_and_are_named_as_skipped() {
    let (fake, url) = fake_chat().await;
    let app = TestApp::spawn_with(configure).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    tenant_llm(&app, &["--base-url", &url, "--model", "fake-chat", "--api-key-env", "FAKE_CHAT_KEY"]);
    let out = cli_with_env(app.iso.env(), &["tenant", "policy", "acme", "--egress-exclude", "Ops/Private"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("egress exclusion (the tenant's own): Ops/Private"), "{}", stdout(&out));
    app.seed(
        &token,
        V,
        &[
            (
                "Ops/Release.md",
                Some("---\ntags: [decision]\n---\n# Release\n\nReleases go out on Tuesdays. See [[Payroll]].\n"),
            ),
            (
                "Ops/Private/Payroll.md",
                Some("# Payroll\n\nReleases go out on Thursdays. SALARY-SECRET-9931. [[Release]]\n"),
            ),
        ],
    )
    .await;

    // reflect and knowledge_challenge send only what is not excluded, and say what they left out.
    let answer = ok(&app, &token, "reflect", json!({"vault": V, "query": "When do releases go out?"})).await;
    assert_eq!(answer["egress_skipped"], json!(["Ops/Private/Payroll.md"]), "{answer}");
    assert!(answer["sources"].as_array().unwrap().iter().all(|s| s["path"] == "Ops/Release.md"), "{answer}");
    let challenged =
        ok(&app, &token, "knowledge_challenge", json!({"vault": V, "proposal": "Releases go out on Fridays"})).await;
    assert_eq!(challenged["egress_skipped"], json!(["Ops/Private/Payroll.md"]), "{challenged}");
    // Only excluded notes to answer from: refused with the code, nothing sent.
    let asked = fake.seen.lock().unwrap().len();
    let e = err(
        &app,
        &token,
        "reflect",
        json!({"vault": V, "query": "SALARY-SECRET-9931 Thursdays", "scope": "Ops/Private"}),
    )
    .await;
    assert_eq!(e["code"], "egress_excluded", "{e}");
    assert_eq!(fake.seen.lock().unwrap().len(), asked);

    // The contradiction detector leaves a pair with an excluded note unjudged.
    let mut config = app.iso.config();
    configure(&mut config);
    let dispatcher = obsidian_tc::app::dispatcher(&config, &app.deps).unwrap();
    let pass =
        otc_tools::tools::knowledge::maintenance::detect_contradictions(&dispatcher, tenant.id, 50).await.unwrap();
    assert_eq!(pass.found, 0, "{pass:?}");

    let seen = fake.seen.lock().unwrap();
    assert!(seen.len() >= 2, "the model was asked: {}", seen.len());
    for (body, _) in seen.iter() {
        assert!(!body.to_string().contains("SALARY-SECRET"), "an excluded note reached the model: {body}");
        assert!(!body.to_string().contains("Thursdays"), "{body}");
    }
}
