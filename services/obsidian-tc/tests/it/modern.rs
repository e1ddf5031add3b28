//! MCP 2026-07-28 beside 2025-11-25 on the same endpoints, decided per request: discovery,
//! cache hints and result stamps on every surface; confirmations as input-required results whose
//! request state any gateway checks; the Tasks extension over the task records in Redis;
//! subscriptions/listen for note resources; and the refusals (header and body disagree, unknown
//! version, tampered, expired or replayed state).

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp, Transport, python_session_with};
use crate::mcp::rpc_raw;
use otc_loadtests::proxy::{Proxy, Turns};

const MODERN: &str = "2026-07-28";
const TASKS: &str = "io.modelcontextprotocol/tasks";
const NOTE: &str = "# Plan\n\nShip it.\n";

fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "it-modern", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

/// The routing headers a 2026-07-28 client mirrors from the body.
fn routing(method: &str, params: &Value) -> Vec<(String, String)> {
    let mut headers = vec![("mcp-protocol-version".into(), MODERN.into()), ("mcp-method".into(), method.into())];
    let name = match method {
        "tools/call" | "prompts/get" => params["name"].as_str(),
        "resources/read" => params["uri"].as_str(),
        m if m.starts_with("tasks/") => params["taskId"].as_str(),
        _ => None,
    };
    if let Some(name) = name {
        headers.push(("mcp-name".into(), name.into()));
    }
    headers
}

/// One 2026-07-28 request to the gateway (or proxy) at `base`: (HTTP status, the answer).
async fn modern_at(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    method: &str,
    mut params: Value,
    capabilities: Value,
) -> (StatusCode, Value) {
    params["_meta"] = meta(capabilities);
    let mut request =
        http.post(format!("{base}/mcp")).bearer_auth(token).header("accept", "application/json, text/event-stream");
    for (k, v) in routing(method, &params) {
        request = request.header(k, v);
    }
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let response = request.json(&body).send().await.unwrap();
    let status = response.status();
    (status, response.json::<Value>().await.unwrap())
}

/// One 2026-07-28 request on an MCP path of `app`, with `headers` replacing the mirrored ones
/// of the same name.
async fn modern_on(
    app: &TestApp,
    path: &str,
    token: &str,
    method: &str,
    mut params: Value,
    capabilities: Value,
    headers: &[(&str, &str)],
) -> (StatusCode, Value) {
    if params.get("_meta").is_none() {
        params["_meta"] = meta(capabilities);
    }
    let mut all: Vec<(String, String)> =
        routing(method, &params).into_iter().filter(|(k, _)| !headers.iter().any(|(h, _)| h == k)).collect();
    all.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let all: Vec<(&str, &str)> = all.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let (status, text) = rpc_raw(app, path, Some(token), &all, body).await;
    (status, serde_json::from_str(&text).unwrap_or_else(|_| panic!("{status}: {text}")))
}

async fn modern(app: &TestApp, token: &str, method: &str, params: Value, capabilities: Value) -> (StatusCode, Value) {
    modern_on(app, "/mcp", token, method, params, capabilities, &[]).await
}

fn delete_args() -> Value {
    json!({"name": "delete_note", "arguments": {"vault": "Notes", "path": "Plan.md"}})
}

async fn exists(app: &TestApp, token: &str) -> bool {
    let found = crate::mcp::call(app, "/mcp", token, "note_exists", json!({"vault": "Notes", "path": "Plan.md"})).await;
    found["structuredContent"]["exists"].as_bool().unwrap()
}

/// Round one of a confirmed delete: the input-required result's request state.
async fn asked(app: &TestApp, token: &str) -> String {
    let (status, answer) = modern(app, token, "tools/call", delete_args(), json!({"elicitation": {}})).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let result = &answer["result"];
    assert_eq!(result["resultType"], "input_required", "{answer}");
    let ask = &result["inputRequests"]["confirm"];
    assert_eq!(ask["method"], "elicitation/create", "{answer}");
    assert!(ask["params"]["message"].as_str().unwrap().contains("delete_note"), "{answer}");
    assert_eq!(ask["params"]["requestedSchema"]["properties"]["confirm"]["type"], "boolean");
    result["requestState"].as_str().unwrap().to_string()
}

fn retry(state: &str, confirm: bool) -> Value {
    let mut params = delete_args();
    params["requestState"] = json!(state);
    params["inputResponses"] = json!({"confirm": {"action": "accept", "content": {"confirm": confirm}}});
    params
}

#[tokio::test]
async fn both_eras_are_served_on_every_surface() {
    let app = TestApp::spawn_with(|c| c.mcp.list_ttl_ms = 45_000).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let (reader, _) = tenant.token(&app.store, "read:notes", false, None).await;
    for path in ["/mcp", "/mcp/triad", "/mcp/domain", "/mcp/essentials", "/mcp/core", "/mcp/full"] {
        let ask = |method: &'static str, params: Value| modern_on(&app, path, &token, method, params, json!({}), &[]);
        // server/discover: versions, capabilities, identity, this caller's instructions.
        let (status, discover) = ask("server/discover", json!({})).await;
        assert_eq!(status, StatusCode::OK, "{path}: {discover}");
        let d = &discover["result"];
        assert_eq!(d["resultType"], "complete", "{path}: {d}");
        let versions: Vec<&str> = d["supportedVersions"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert!(versions.contains(&MODERN) && versions.contains(&"2025-11-25"), "{versions:?}");
        assert!(d["capabilities"]["tools"].is_object(), "{d}");
        assert!(d["capabilities"]["resources"].is_object(), "{d}");
        assert_eq!(d["capabilities"]["resources"]["subscribe"], true, "{d}");
        assert!(d["capabilities"]["extensions"][TASKS].is_object(), "{d}");
        assert_eq!(d["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "obsidian-tc");
        assert_eq!((d["ttlMs"].as_u64(), d["cacheScope"].as_str()), (Some(45_000), Some("private")));
        // The instructions are this caller's: the text initialize gives the same client.
        let init = crate::mcp::rpc(
            &app,
            path,
            &token,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "it-modern", "version": "1.0.0"}}),
        )
        .await;
        assert_eq!(d["instructions"], init["instructions"], "{path}");
        assert!(!d["instructions"].as_str().unwrap().is_empty());

        // Listings are cacheable by this caller alone; older clients get them as before.
        let (_, list) = ask("tools/list", json!({})).await;
        let l = &list["result"];
        let hints = (l["resultType"].as_str(), l["ttlMs"].as_u64(), l["cacheScope"].as_str());
        assert_eq!(hints, (Some("complete"), Some(45_000), Some("private")), "{path}");
        let old = crate::mcp::rpc(&app, path, &token, "tools/list", json!({})).await;
        assert!(old.get("ttlMs").is_none() && old.get("resultType").is_none(), "{path}: {old}");
        assert_eq!(old["tools"], l["tools"], "{path}: the same tools in both eras");
        let (_, called) = ask("tools/call", json!({"name": "find_capability", "arguments": {"query": "health"}})).await;
        assert_eq!(called["result"]["resultType"], "complete", "{path}: {called}");
        assert_eq!(called["result"]["isError"], false, "{path}: {called}");
        let old = crate::mcp::call(&app, path, &token, "find_capability", json!({"query": "health"})).await;
        assert!(old.get("resultType").is_none(), "{old}");
    }
    // Another caller, other instructions: discovery is per caller.
    let (_, mine) = modern(&app, &token, "server/discover", json!({}), json!({})).await;
    let (_, theirs) = modern(&app, &reader, "server/discover", json!({}), json!({})).await;
    assert_ne!(mine["result"]["instructions"], theirs["result"]["instructions"]);
    let (_, templates) = modern(&app, &token, "resources/templates/list", json!({}), json!({})).await;
    assert_eq!(templates["result"]["cacheScope"], "private", "{templates}");
    app.stop().await;
}

fn refused_with(answer: &(StatusCode, Value), code: i64) -> String {
    assert_eq!(answer.1["error"]["code"], code, "{answer:?}");
    answer.1["error"]["message"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_confirmation_is_an_input_required_round_trip_and_bad_state_is_refused() {
    let app = TestApp::spawn_with(|c| {
        c.mcp.request_state_ttl_secs = 2;
        c.mcp.confirm_in_client = true;
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let other = tenant.token_as(&app.store, "bob", "*").await;
    let stranger = Tenant::create(&app.store, "globex").await;
    let (foreign, _) = stranger.token(&app.store, "*", false, None).await;
    app.seed(&token, "Notes", &[("Plan.md", Some(NOTE))]).await;
    app.seed(&foreign, "Notes", &[("Plan.md", Some(NOTE))]).await;
    let elicit = || json!({"elicitation": {}});

    // A client that declared no elicitation gets the token route, as older clients do.
    let (_, plain) = modern(&app, &token, "tools/call", delete_args(), json!({})).await;
    assert_eq!(plain["result"]["resultType"], "complete", "{plain}");
    assert_eq!(crate::mcp::error_of(&plain["result"])["code"], "elicit_required");

    // Declined: nothing happens, and the answer says so.
    let state = asked(&app, &token).await;
    let (_, declined) = modern(&app, &token, "tools/call", retry(&state, false), elicit()).await;
    let e = crate::mcp::error_of(&declined["result"]);
    assert_eq!((e["code"].as_str(), e["details"]["declined"].as_bool()), (Some("elicit_required"), Some(true)));
    assert!(exists(&app, &token).await);

    // An answer without a state, and a state without an answer, only ask again.
    let mut unasked = delete_args();
    unasked["inputResponses"] = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    let (_, again) = modern(&app, &token, "tools/call", unasked, elicit()).await;
    assert_eq!(again["result"]["resultType"], "input_required", "{again}");
    let state = asked(&app, &token).await;
    let mut unanswered = delete_args();
    unanswered["requestState"] = json!(state);
    let (_, again) = modern(&app, &token, "tools/call", unanswered, elicit()).await;
    assert_eq!(again["result"]["resultType"], "input_required", "{again}");
    assert!(exists(&app, &token).await);

    // Tampered, another principal's, another tenant's, another call's, oversized, a malformed
    // answer: refused, nothing deleted, and none of them spends the state.
    let state = asked(&app, &token).await;
    let tampered = format!("{state}-TAMPERED");
    let answer = modern(&app, &token, "tools/call", retry(&tampered, true), elicit()).await;
    assert_eq!(answer.0, StatusCode::OK);
    assert!(refused_with(&answer, -32602).contains("not valid"));
    let answer = modern(&app, &other, "tools/call", retry(&state, true), elicit()).await;
    assert!(refused_with(&answer, -32602).contains("another caller"), "{answer:?}");
    let answer = modern(&app, &foreign, "tools/call", retry(&state, true), elicit()).await;
    refused_with(&answer, -32602);
    let mut elsewhere = retry(&state, true);
    elsewhere["arguments"]["path"] = json!("Other.md");
    let answer = modern(&app, &token, "tools/call", elsewhere, elicit()).await;
    refused_with(&answer, -32602);
    let huge = "A".repeat(5000);
    let answer = modern(&app, &token, "tools/call", retry(&huge, true), elicit()).await;
    assert!(refused_with(&answer, -32602).contains("larger"));
    let mut malformed = retry(&state, true);
    malformed["inputResponses"]["confirm"] = json!(12345);
    let answer = modern(&app, &token, "tools/call", malformed, elicit()).await;
    assert!(refused_with(&answer, -32602).contains("inputResponses.confirm"), "{answer:?}");
    assert!(exists(&app, &token).await && exists(&app, &foreign).await);

    // The same state, answered yes by its own caller: deleted. Used again: a replay.
    let (_, done) = modern(&app, &token, "tools/call", retry(&state, true), elicit()).await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(done["result"]["isError"], false, "{done}");
    assert!(!exists(&app, &token).await);
    let answer = modern(&app, &token, "tools/call", retry(&state, true), elicit()).await;
    assert!(refused_with(&answer, -32602).contains("already been used"));

    // Expired: past mcp.request_state_ttl_secs the state is refused.
    app.seed(&token, "Notes", &[("Plan.md", Some(NOTE))]).await;
    let state = asked(&app, &token).await;
    tokio::time::sleep(Duration::from_millis(3100)).await;
    let answer = modern(&app, &token, "tools/call", retry(&state, true), elicit()).await;
    assert!(refused_with(&answer, -32602).contains("expired"));
    assert!(exists(&app, &token).await);

    // Through a facade: the question names the routed tool, and the answer confirms it.
    let routed = json!({"name": "call_capability",
                        "arguments": {"name": "delete_note", "args": {"vault": "Notes", "path": "Plan.md"}}});
    let (_, first) = modern(&app, &token, "tools/call", routed.clone(), elicit()).await;
    let r = &first["result"];
    assert_eq!(r["resultType"], "input_required", "{first}");
    assert!(r["inputRequests"]["confirm"]["params"]["message"].as_str().unwrap().contains("delete_note"));
    let mut answered = routed;
    answered["requestState"] = r["requestState"].clone();
    answered["inputResponses"] = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    let (_, done) = modern(&app, &token, "tools/call", answered, elicit()).await;
    assert_eq!(done["result"]["isError"], false, "{done}");
    assert!(!exists(&app, &token).await);
    app.stop().await;
}

#[tokio::test]
async fn confirm_in_client_off_leaves_only_the_token_route() {
    // Off by default: a hosted service does not let a client confirm its own call.
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    app.seed(&token, "Notes", &[("Plan.md", Some(NOTE))]).await;
    let (_, answer) = modern(&app, &token, "tools/call", delete_args(), json!({"elicitation": {}})).await;
    let e = crate::mcp::error_of(&answer["result"]);
    assert_eq!(e["code"], "elicit_required", "{answer}");
    // An answer with a made-up state changes nothing.
    let (_, answer) = modern(&app, &token, "tools/call", retry("made-up", true), json!({"elicitation": {}})).await;
    assert_eq!(crate::mcp::error_of(&answer["result"])["code"], "elicit_required", "{answer}");
    assert!(exists(&app, &token).await);
    app.stop().await;
}

#[tokio::test]
async fn versions_and_routing_headers_are_checked_against_the_body() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let call = json!({"name": "server_health", "arguments": {}});

    // The header names one tool, the body another; the method header disagrees; the version
    // header disagrees with _meta.
    for headers in [
        vec![("mcp-name", "read_note")],
        vec![("mcp-method", "tools/list")],
        vec![("mcp-protocol-version", "2025-11-25")],
    ] {
        let answer = modern_on(&app, "/mcp", &token, "tools/call", call.clone(), json!({}), &headers).await;
        assert_eq!(answer.0, StatusCode::BAD_REQUEST, "{headers:?}: {answer:?}");
        refused_with(&answer, -32020);
    }

    // A version this server does not speak: the supported ones in the error.
    let mut params = call.clone();
    params["_meta"] = meta(json!({}));
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let answer =
        modern_on(&app, "/mcp", &token, "tools/call", params, json!({}), &[("mcp-protocol-version", "2099-01-01")])
            .await;
    assert_eq!(answer.0, StatusCode::BAD_REQUEST, "{answer:?}");
    refused_with(&answer, -32022);
    let data = &answer.1["error"]["data"];
    assert_eq!(data["requested"], "2099-01-01");
    let supported: Vec<&str> = data["supported"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(supported.contains(&MODERN) && supported.contains(&"2025-11-25"), "{data}");

    // _meta without the client's capabilities is malformed; a method the new era removed is not
    // found; the older era's initialize still works on the same endpoint.
    let mut params = call.clone();
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": MODERN});
    let answer = modern_on(&app, "/mcp", &token, "tools/call", params, json!({}), &[]).await;
    assert_eq!(answer.0, StatusCode::BAD_REQUEST, "{answer:?}");
    refused_with(&answer, -32602);
    let answer = modern(&app, &token, "ping", json!({}), json!({})).await;
    assert_eq!(answer.0, StatusCode::NOT_FOUND, "{answer:?}");
    refused_with(&answer, -32601);
    let init = crate::mcp::rpc(
        &app,
        "/mcp",
        &token,
        "initialize",
        json!({"protocolVersion": MODERN, "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}),
    )
    .await;
    assert_eq!(init["protocolVersion"], "2025-11-25", "initialize negotiates the handshake era: {init}");

    // A task method from a client that did not declare the extension.
    let answer = modern(&app, &token, "tasks/get", json!({"taskId": "x"}), json!({})).await;
    refused_with(&answer, -32021);
    assert!(answer.1["error"]["data"]["requiredCapabilities"]["extensions"][TASKS].is_object(), "{answer:?}");
    app.stop().await;
}

#[tokio::test]
async fn the_python_sdk_confirms_across_two_gateways_behind_a_round_robin_proxy() {
    let app = TestApp::spawn_with(|c| c.mcp.confirm_in_client = true).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    app.seed(&token, "Notes", &[("Plan.md", Some(NOTE)), ("Keep.md", Some(NOTE))]).await;
    let b = app.another_gateway(|c| c.mcp.confirm_in_client = true).await;
    for (answer, path, gone) in [("decline", "Keep.md", false), ("accept", "Plan.md", true)] {
        // Turns per method: the call and its retry reach different gateways whatever the SDK
        // sends between them.
        let gateways = vec![app.addr, b.addr];
        let proxy = Proxy::start_with("127.0.0.1:0".parse().unwrap(), gateways, Turns::PerMethod).await.unwrap();
        let url = format!("http://{}/mcp", proxy.addr);
        let steps = json!([{"op": "call", "name": "delete_note", "args": {"vault": "Notes", "path": path}}]);
        let env = [("OTC_TEST_ELICIT", answer), ("OTC_TEST_MCP_MODE", "auto")];
        let out = python_session_with(Transport::Http { url, token: &token }, steps, &env).await;
        assert_eq!(out["protocol_version"], MODERN, "{out}");
        assert_eq!(out["elicitations"].as_array().unwrap().len(), 1, "{out}");
        assert!(out["elicitations"][0].as_str().unwrap().contains("delete_note"), "{out}");
        let result = &out["results"][0];
        if gone {
            assert_eq!(result["isError"], false, "{out}");
        } else {
            assert_eq!(crate::mcp::error_of(result)["details"]["declined"], true, "{out}");
        }
        let found =
            crate::mcp::call(&app, "/mcp", &token, "note_exists", json!({"vault": "Notes", "path": path})).await;
        assert_eq!(found["structuredContent"]["exists"], !gone, "{path}");
        // The call and its retry with the answer: the question was asked on one gateway and
        // its answer taken on the other.
        let routed = proxy.routed();
        let calls: Vec<usize> = routed.iter().filter(|(_, m)| m == "tools/call").map(|(g, _)| *g).collect();
        assert_eq!(calls.len(), 2, "{routed:?}");
        assert_ne!(calls[0], calls[1], "{routed:?}");
    }
    b.stop().await.unwrap();
    app.stop().await;
}

/// Two gateways on one deployment whose index_vault always answers with a task (no budget) and
/// takes a while (200 notes, two at a time), with a full token for alice of acme.
async fn two_slow_gateways() -> (TestApp, Tenant, String, obsidian_tc::app::Running) {
    let slow = |c: &mut otc_config::Config| {
        c.tools.task_budget_ms = 0;
        c.worker.index_rebuild_batch = 2;
    };
    let app = TestApp::spawn_with(slow).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let notes: Vec<(String, String)> =
        (0..200).map(|i| (format!("n/{i}.md"), format!("# Note {i}\n\n[[n/{}]]\n", (i + 1) % 200))).collect();
    let changes: Vec<(&str, Option<&str>)> = notes.iter().map(|(p, t)| (p.as_str(), Some(t.as_str()))).collect();
    app.seed(&token, "Notes", &changes).await;
    let b = app.another_gateway(slow).await;
    (app, tenant, token, b)
}

#[tokio::test]
async fn a_task_started_on_one_gateway_is_read_and_cancelled_on_another() {
    let (app, tenant, token, b) = two_slow_gateways().await;
    let other = tenant.token_as(&app.store, "bob", "*").await;
    let (a_url, b_url) = (app.url(""), format!("http://{}", b.addr));
    let caps = json!({"extensions": {TASKS: {}}});
    let index = json!({"name": "index_vault", "arguments": {"vault": "Notes"}});

    // Started on A: the client follows it as a task of its own.
    let (status, created) = modern_at(&app.http, &a_url, &token, "tools/call", index.clone(), caps.clone()).await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let task = &created["result"];
    assert_eq!((task["resultType"].as_str(), task["status"].as_str()), (Some("task"), Some("working")), "{created}");
    assert!(task.get("result").is_none() && task.get("requestState").is_none(), "{task}");
    assert!(task["ttlMs"].as_u64().unwrap() > 0 && task["pollIntervalMs"].as_u64().unwrap() > 0, "{task}");
    let id = task["taskId"].as_str().unwrap().to_string();

    // Read on B.
    let get = json!({"taskId": id});
    let (_, read) = modern_at(&app.http, &b_url, &token, "tasks/get", get.clone(), caps.clone()).await;
    let r = &read["result"];
    assert_eq!((r["resultType"].as_str(), r["taskId"].as_str()), (Some("complete"), Some(id.as_str())), "{read}");
    assert!(["working", "completed"].contains(&r["status"].as_str().unwrap()), "{read}");

    // Nobody else's, and no unknown id: invalid params on either gateway.
    for (who, body) in [(other.as_str(), get.clone()), (token.as_str(), json!({"taskId": "nope"}))] {
        let answer = modern_at(&app.http, &b_url, who, "tasks/get", body.clone(), caps.clone()).await;
        refused_with(&answer, -32602);
        let answer = modern_at(&app.http, &a_url, who, "tasks/cancel", body, caps.clone()).await;
        refused_with(&answer, -32602);
    }
    // Answers for a task that asks nothing are acknowledged and ignored.
    let update = json!({"taskId": id, "inputResponses": {"unknown": {"ignored": true}}});
    let (_, ack) = modern_at(&app.http, &a_url, &token, "tasks/update", update, caps.clone()).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");

    // Cancelled on B; it ends cancelled before its 200 notes are indexed, as seen from A.
    let (_, ack) = modern_at(&app.http, &b_url, &token, "tasks/cancel", get.clone(), caps.clone()).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let mut last = Value::Null;
    for _ in 0..300 {
        let (_, read) = modern_at(&app.http, &a_url, &token, "tasks/get", get.clone(), caps.clone()).await;
        last = read["result"].clone();
        if last["status"] != "working" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(last["status"], "cancelled", "{last}");
    // Cancelling an ended task is acknowledged again.
    let (_, ack) = modern_at(&app.http, &a_url, &token, "tasks/cancel", get.clone(), caps.clone()).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");

    // To completion: the tool's own result, as the call would have answered inline.
    let (_, created) = modern_at(&app.http, &a_url, &token, "tools/call", index.clone(), caps.clone()).await;
    let get = json!({"taskId": created["result"]["taskId"]});
    for _ in 0..600 {
        let (_, read) = modern_at(&app.http, &b_url, &token, "tasks/get", get.clone(), caps.clone()).await;
        last = read["result"].clone();
        if last["status"] != "working" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(last["status"], "completed", "{last}");
    assert_eq!(last["result"]["isError"], false, "{last}");
    assert_eq!(last["result"]["structuredContent"]["notes"], 200, "{last}");

    // A client without the extension gets the tools' own handle, as before.
    let (_, handle) = modern_at(&app.http, &a_url, &token, "tools/call", index, json!({})).await;
    assert_eq!(handle["result"]["resultType"], "complete", "{handle}");
    assert_eq!(handle["result"]["structuredContent"]["poll_tool"], "get_task_status", "{handle}");
    b.stop().await.unwrap();
    app.stop().await;
}

#[tokio::test]
async fn the_python_sdk_follows_a_task_started_on_one_gateway_on_another() {
    let (app, _, token, b) = two_slow_gateways().await;
    // The call goes to the first gateway; every task method to the second.
    let pins = Turns::Pinned(vec![("tools/call".into(), 0), ("tasks/".into(), 1)]);
    let proxy = Proxy::start_with("127.0.0.1:0".parse().unwrap(), vec![app.addr, b.addr], pins).await.unwrap();
    let url = format!("http://{}/mcp", proxy.addr);
    let steps = json!([{"op": "task", "name": "index_vault", "args": {"vault": "Notes"}}]);
    let out =
        python_session_with(Transport::Http { url, token: &token }, steps, &[("OTC_TEST_MCP_MODE", "auto")]).await;
    assert_eq!(out["protocol_version"], MODERN, "{out}");
    let task = &out["results"][0];
    assert_eq!(task["created"]["resultType"], "task", "{out}");
    let id = task["created"]["taskId"].as_str().unwrap();
    assert_eq!((task["read"]["taskId"].as_str(), task["read"]["resultType"].as_str()), (Some(id), Some("complete")));
    assert_eq!(task["cancel"], json!({"resultType": "complete"}), "{out}");
    assert_eq!(task["ended"]["status"], "cancelled", "{out}");
    let routed = proxy.routed();
    let on = |m: &str| routed.iter().filter(|(_, method)| method.starts_with(m)).map(|(g, _)| *g).collect::<Vec<_>>();
    assert_eq!(on("tools/call"), [0], "{routed:?}");
    let tasks = on("tasks/");
    assert!(tasks.len() >= 3 && tasks.iter().all(|g| *g == 1), "{routed:?}");
    b.stop().await.unwrap();
    app.stop().await;
}

/// The JSON messages of an SSE stream read so far, and what is left of a partial event.
struct Frames {
    response: reqwest::Response,
    buffer: String,
}

impl Frames {
    /// The next message, or None when none came within `wait` (or the stream ended).
    async fn next(&mut self, wait: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                let data: String = event.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim_start).collect();
                if data.is_empty() {
                    continue;
                }
                return Some(serde_json::from_str(&data).unwrap());
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk()).await.ok()?.unwrap()?;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
        }
    }
}

/// Opens a 2026-07-28 listen stream for `filter` and reads its acknowledgement.
async fn listen(app: &TestApp, token: &str, filter: Value) -> (Frames, Value) {
    let mut params = json!({"notifications": filter});
    params["_meta"] = meta(json!({}));
    let response = app
        .http
        .post(app.url("/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "subscriptions/listen")
        .json(&json!({"jsonrpc": "2.0", "id": 41, "method": "subscriptions/listen", "params": params}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut frames = Frames { response, buffer: String::new() };
    let ack = frames.next(Duration::from_secs(5)).await.expect("an acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 41, "{ack}");
    (frames, ack)
}

#[tokio::test]
async fn a_listener_hears_of_changes_to_notes_it_may_read_and_of_nothing_else() {
    let app = TestApp::spawn_with(|c| c.acl.push(crate::harness::read_acl(Some("acme"), "Notes", &["Open/**"]))).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let notes = [("Open/My Plan.md", Some(NOTE)), ("Open/Other.md", Some(NOTE)), ("Hidden/Secret.md", Some(NOTE))];
    app.seed(&token, "Notes", &notes).await;
    // Written by hand, as a person might: heard of as written.
    let plan = "obsidian-tc://Notes/Open/My Plan.md";
    let secret = "obsidian-tc://Notes/Hidden/Secret.md";

    // A handshake-era client is not offered what it could not receive.
    let init = crate::mcp::rpc(
        &app,
        "/mcp",
        &token,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}),
    )
    .await;
    assert!(init["capabilities"]["resources"].get("subscribe").is_none(), "{init}");
    let (_, discover) = modern(&app, &token, "server/discover", json!({}), json!({})).await;
    let resources = &discover["result"]["capabilities"]["resources"];
    assert_eq!((resources["subscribe"].as_bool(), resources["listChanged"].as_bool()), (Some(true), Some(true)));

    let filter = json!({"resourcesListChanged": true, "resourceSubscriptions": [plan, secret, "https://elsewhere/x"]});
    let (mut frames, ack) = listen(&app, &token, filter).await;
    let accepted = &ack["params"]["notifications"];
    assert_eq!(accepted["resourceSubscriptions"], json!([plan, secret]), "only note URIs: {ack}");

    // Changes it may not read, and a readable note it did not subscribe to changing in place:
    // nothing.
    app.seed(&token, "Notes", &[("Hidden/Secret.md", Some("changed\n")), ("Hidden/New.md", Some("new\n"))]).await;
    app.seed(&token, "Notes", &[("Open/Other.md", Some("changed\n"))]).await;
    assert_eq!(frames.next(Duration::from_millis(2500)).await, None);

    // Its note changes; a readable note appears.
    app.seed(&token, "Notes", &[("Open/My Plan.md", Some("# Plan\n\nShipped.\n")), ("Open/Fresh.md", Some(NOTE))])
        .await;
    let mut heard = Vec::new();
    while heard.len() < 2
        && let Some(frame) = frames.next(Duration::from_secs(5)).await
    {
        assert_eq!(frame["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 41, "{frame}");
        assert!(!frame.to_string().contains("Hidden"), "{frame}");
        heard.push(match frame["method"].as_str().unwrap() {
            "notifications/resources/updated" => format!("updated {}", frame["params"]["uri"].as_str().unwrap()),
            other => other.to_string(),
        });
    }
    assert_eq!(heard, [format!("updated {plan}"), "notifications/resources/list_changed".to_string()]);

    // A gateway shutting down ends the stream with its final result instead of holding the
    // drain for its shutdown grace.
    let started = std::time::Instant::now();
    let stopping = tokio::spawn(app.stop());
    let end = frames.next(Duration::from_secs(10)).await.expect("the final result");
    assert_eq!(end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 41, "{end}");
    tokio::time::timeout(Duration::from_secs(10), stopping).await.expect("stopped").unwrap();
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_listen_stream_ends_with_its_result_after_its_time() {
    let app = TestApp::spawn_with(|c| c.mcp.listen_max_secs = 2).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    for filter in [json!({"resourcesListChanged": true}), json!({"toolsListChanged": true})] {
        let started = std::time::Instant::now();
        let (mut frames, _) = listen(&app, &token, filter.clone()).await;
        let end = frames.next(Duration::from_secs(10)).await.expect("the final result");
        assert_eq!(end["id"], 41, "{end}");
        assert_eq!(end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 41, "{filter}: {end}");
        assert!(started.elapsed() >= Duration::from_secs(2), "{filter}");
    }
    // At most four at once per principal on a gateway; the fifth is refused.
    let mut open = Vec::new();
    for _ in 0..4 {
        open.push(listen(&app, &token, json!({"resourcesListChanged": true})).await.0);
    }
    let (mut fifth, _) = listen(&app, &token, json!({"resourcesListChanged": true})).await;
    let refused = fifth.next(Duration::from_secs(5)).await.expect("an answer");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    drop(open);
    app.stop().await;
}

/// With the deployment's switch off (the default), a tenant admin lets named OAuth clients have
/// their own person confirm (`PUT /v1/policies`, `admin:confirm`); other clients, and API
/// tokens, keep the token route.
#[tokio::test]
async fn a_tenant_lets_only_the_oauth_clients_it_names_confirm_in_the_client() {
    use crate::sso::{redirect_uri, register, set_acme_scopes, sign_in, world};
    let w = world(|c| c.tools.confirm_destructive = true).await;
    set_acme_scopes(&w, &["read:*", "delete:*"]).await;
    let (admin, _) = w.acme.token(&w.app.store, "*", false, None).await;
    w.app.seed(&admin, "Notes", &[("Plan.md", Some(NOTE))]).await;
    let redirect = redirect_uri();
    let named = register(&w.app, &redirect, json!({"client_name": "Named"})).await;
    let other = register(&w.app, &redirect, json!({"client_name": "Other"})).await;
    let resource = w.app.url("/mcp");
    let login = ("alice", "pw-a");
    let named_token =
        sign_in(&w, &named, &redirect, "read:notes delete:notes", &resource, "alice@acme.test", login).await;
    let other_token =
        sign_in(&w, &other, &redirect, "read:notes delete:notes", &resource, "alice@acme.test", login).await;
    let (named_token, other_token) = (
        named_token["access_token"].as_str().unwrap().to_string(),
        other_token["access_token"].as_str().unwrap().to_string(),
    );
    let refused = |token: String| {
        let app = &w.app;
        async move {
            let (_, answer) = modern(app, &token, "tools/call", delete_args(), json!({"elicitation": {}})).await;
            crate::mcp::error_of(&answer["result"])["code"].as_str().unwrap().to_string()
        }
    };
    assert_eq!(refused(named_token.clone()).await, "elicit_required");

    // The policy: admin:confirm, never from a credential bound to one vault.
    let put =
        |token: &str, body: Value| w.app.http.put(w.app.url("/v1/policies")).bearer_auth(token).json(&body).send();
    let (bound, _) = w.acme.token(&w.app.store, "*", true, None).await;
    assert_eq!(put(&bound, json!({"confirm_in_client_clients": [named]})).await.unwrap().status(), 403);
    let (reader, _) = w.acme.token(&w.app.store, "read:notes", false, None).await;
    assert_eq!(put(&reader, json!({"confirm_in_client_clients": [named]})).await.unwrap().status(), 403);
    let set = put(&admin, json!({"confirm_in_client_clients": [named]})).await.unwrap();
    assert_eq!(set.status(), 200);
    let shown: Value =
        w.app.http.get(w.app.url("/v1/policies")).bearer_auth(&admin).send().await.unwrap().json().await.unwrap();
    assert_eq!(shown["confirm_in_client_clients"], json!([named]), "{shown}");

    // The named client is asked, at once; the other client and an API token are not.
    let state = asked(&w.app, &named_token).await;
    assert!(!state.is_empty());
    assert_eq!(refused(other_token).await, "elicit_required");
    assert_eq!(refused(admin.clone()).await, "elicit_required");
    // Taken back: the named client too gets the token route again.
    assert_eq!(put(&admin, json!({"confirm_in_client_clients": []})).await.unwrap().status(), 200);
    assert_eq!(refused(named_token).await, "elicit_required");
}
