//! Access and fairness: which vault a call reaches when it names none or names it by id, rate
//! limits shared by every gateway, idempotency keys, confirmation tokens and the OAuth
//! resource-server surface.

use otc_config::FailPolicy;
use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp, cli, closed_port, stderr, stdout};
use crate::index::commit;
use crate::mcp::{call, error_of};
use crate::write::{err, ok};

#[tokio::test]
async fn a_caller_with_one_vault_may_leave_it_out_and_any_caller_may_name_it_by_id() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    commit(&app, &token, "Notes", &[("Plan.md", Some("# Plan\n"))]).await;

    // One vault: `vault` is filled in, for reads and writes alike.
    let read = ok(&app, &token, "read_note", json!({"path": "Plan.md", "format": "content"})).await;
    assert_eq!(read["content"], "# Plan\n");
    ok(&app, &token, "write_note", json!({"path": "Idea.md", "content": "x"})).await;
    let id = tenant.vault_id.to_string();
    let by_id = ok(&app, &token, "read_note", json!({"vault": id, "path": "Idea.md", "format": "content"})).await;
    assert_eq!(by_id["content"], "x");

    // Two vaults: leaving it out names both; a bound token still has one.
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    tx.create_vault("Other").await.unwrap();
    tx.commit().await.unwrap();
    let e = err(&app, &token, "read_note", json!({"path": "Plan.md"})).await;
    assert_eq!(e["code"], "validation_error", "{e}");
    assert_eq!(e["details"]["field"], "vault");
    assert_eq!(e["details"]["vaults"], json!(["Notes", "Other"]));
    let (bound, _) = tenant.token(&app.store, "*", true, None).await;
    let read = ok(&app, &bound, "read_note", json!({"path": "Plan.md", "format": "content"})).await;
    assert_eq!(read["content"], "# Plan\n");

    // Another tenant's vault id is no vault at all; a huge name is not echoed back whole.
    let other = Tenant::create(&app.store, "globex").await;
    let e = err(&app, &token, "read_note", json!({"vault": other.vault_id.to_string(), "path": "Plan.md"})).await;
    assert_eq!(e["code"], "vault_not_found");
    let huge = "v".repeat(3 << 20);
    let e = err(&app, &token, "read_note", json!({"vault": huge, "path": "Plan.md"})).await;
    assert_eq!(e["code"], "vault_not_found");
    assert!(e.to_string().len() < 4096, "the error repeats the input: {} bytes", e.to_string().len());
}

/// A tool call on the gateway at `base` (one of several of the same deployment): its result.
async fn call_on(app: &TestApp, base: &str, token: &str, tool: &str, args: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}});
    let response = app
        .http
        .post(format!("{base}/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    response.json::<Value>().await.unwrap()["result"].clone()
}

fn is_ok(result: &Value) -> bool {
    result["isError"] == false
}

#[tokio::test]
async fn two_gateways_spend_one_budget_and_a_tier_change_reaches_both_before_the_command_returns() {
    let app = TestApp::spawn().await;
    let second = app.another_gateway(|_| {}).await;
    let (a, b) = (app.url(""), format!("http://{}", second.addr));
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let exists = json!({"vault": "Notes", "path": "Plan.md"});
    // Both gateways have checked the token (and keep it, with the tenant's tiers of that moment).
    for base in [&a, &b] {
        assert!(is_ok(&call_on(&app, base, &token, "note_exists", exists.clone()).await));
    }

    let out = cli(&app.iso, &["tenant", "limits", "acme", "--set", "read=60/3"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("read          60/min  burst 3      (tenant)"), "{}", stdout(&out));
    assert!(stdout(&out).contains("write    1000000/min  burst 1000000 (default)"), "{}", stdout(&out));

    // Three reads at once (the burst), whichever gateway takes them; the fourth waits a second.
    for base in [&a, &b, &a] {
        let result = call_on(&app, base, &token, "note_exists", exists.clone()).await;
        assert!(is_ok(&result), "{result}");
    }
    let refused = call_on(&app, &b, &token, "note_exists", exists.clone()).await;
    let e = error_of(&refused);
    assert_eq!(e["code"], "throttled", "{e}");
    assert_eq!(e["retryable"], true);
    let wait = e["details"]["retry_after"].as_f64().unwrap();
    assert!(wait > 0.0 && wait <= 1.0, "{e}");
    assert_eq!((e["details"]["class"].clone(), e["details"]["per_minute"].clone()), (json!("read"), json!(60)));
    // Other classes keep their own budgets.
    let wrote =
        call_on(&app, &a, &token, "write_note", json!({"vault": "Notes", "path": "W.md", "content": "w"})).await;
    assert!(is_ok(&wrote), "{wrote}");
    // Past the wait, one more read.
    tokio::time::sleep(std::time::Duration::from_secs_f64(wait + 0.05)).await;
    assert!(is_ok(&call_on(&app, &b, &token, "note_exists", exists.clone()).await));
    assert_eq!(error_of(&call_on(&app, &a, &token, "note_exists", exists.clone()).await)["code"], "throttled");

    // server_health (a read too, so after a second) shows the tier; a reset gives the default
    // back on both gateways at once.
    tokio::time::sleep(std::time::Duration::from_millis(1050)).await;
    let health = ok(&app, &token, "server_health", json!({})).await;
    assert_eq!(health["rate_limits"]["tiers"]["read"], json!({"per_minute": 60, "burst": 3}));
    assert_eq!(
        (health["rate_limits"]["counting"].clone(), health["rate_limits"]["when_redis_down"].clone()),
        (json!(true), json!("open"))
    );
    let out = cli(&app.iso, &["tenant", "limits", "acme", "--reset", "read"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for base in [&a, &b, &a, &b] {
        assert!(is_ok(&call_on(&app, base, &token, "note_exists", exists.clone()).await));
    }
    // Bad tiers are refused before anything changes.
    for bad in [["--set", "read=0/3"], ["--set", "reads=60/3"], ["--set", "read=60"], ["--reset", "nope"]] {
        let out = cli(&app.iso, &["tenant", "limits", "acme", bad[0], bad[1]]);
        assert!(!out.status.success(), "{bad:?} accepted");
    }
    second.stop().await.unwrap();
}

#[tokio::test]
async fn the_sync_api_answers_with_ratelimit_headers_and_429_when_its_budget_is_spent() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    tx.set_rate_tier(&otc_store::RateTier { class: "sync".into(), per_minute: 30, burst: 2 }).await.unwrap();
    tx.commit().await.unwrap();
    let get = || app.http.get(app.url("/v1/vaults")).bearer_auth(&token).send();
    let first = get().await.unwrap();
    assert_eq!(first.status(), 200);
    let header = |r: &reqwest::Response, name: &str| r.headers()[name].to_str().unwrap().to_string();
    assert_eq!(header(&first, "ratelimit-limit"), "2");
    assert_eq!(header(&first, "ratelimit-remaining"), "1");
    assert_eq!(header(&first, "ratelimit-policy"), "\"sync\";q=30;w=60");
    assert!(matches!(header(&first, "ratelimit-reset").as_str(), "2" | "1"), "{:?}", first.headers());
    assert_eq!(header(&get().await.unwrap(), "ratelimit-remaining"), "0");
    let refused = get().await.unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(header(&refused, "retry-after"), "2");
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "throttled", "{body}");
    assert_eq!(body["error"]["retryable"], true);
    // MCP tool calls spend from their own classes, not the sync API's.
    ok(&app, &token, "list_vaults", json!({})).await;
}

#[tokio::test]
async fn without_redis_the_limiter_lets_calls_through_or_refuses_them_as_configured() {
    let dead = format!("redis://127.0.0.1:{}/", closed_port());
    for (policy, passes) in [(FailPolicy::Open, true), (FailPolicy::Closed, false)] {
        let dead = dead.clone();
        let app = TestApp::spawn_with(move |c| {
            c.redis.url = otc_config::Secret::new(&dead);
            c.rate_limits.when_redis_down = policy;
        })
        .await;
        let tenant = Tenant::create(&app.store, "acme").await;
        let (token, _) = tenant.token(&app.store, "*", false, None).await;
        let result = call(&app, "/mcp", &token, "note_exists", json!({"vault": "Notes", "path": "Plan.md"})).await;
        if passes {
            assert!(is_ok(&result), "{result}");
            let health = ok(&app, &token, "server_health", json!({})).await;
            assert_eq!(health["rate_limits"]["counting"], false, "{health}");
            assert_eq!(health["rate_limits"]["when_redis_down"], "open");
        } else {
            let e = error_of(&result);
            assert_eq!(e["code"], "throttled", "{e}");
            assert!(e["details"]["reason"].as_str().unwrap().contains("unavailable"), "{e}");
        }
        app.stop().await;
    }
}

#[tokio::test]
async fn the_open_routes_are_limited_per_client_address() {
    let app = TestApp::spawn_with(|c| {
        c.rate_limits.per_ip_per_minute = 60;
        c.rate_limits.per_ip_burst = 5;
    })
    .await;
    let mut statuses = Vec::new();
    for _ in 0..6 {
        statuses.push(app.http.get(app.url("/healthz")).send().await.unwrap());
    }
    assert!(statuses[..5].iter().all(|r| r.status() == 200));
    let refused = statuses.pop().unwrap();
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().contains_key("retry-after"));
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "throttled");
    // An authenticated route is not counted there.
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    assert_eq!(app.http.get(app.url("/v1/whoami")).bearer_auth(&token).send().await.unwrap().status(), 200);
}

/// The vault's latest change (list_vaults' head_seq).
async fn head(app: &TestApp, token: &str) -> i64 {
    ok(app, token, "list_vaults", json!({})).await["vaults"][0]["head_seq"].as_i64().unwrap()
}

#[tokio::test]
async fn a_keyed_write_runs_once_and_its_key_answers_the_first_result() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let args = json!({"vault": "Notes", "path": "Once.md", "content": "one", "idempotency_key": "k-1"});
    let first = ok(&app, &token, "write_note", args.clone()).await;
    assert_eq!(first["created"], true);
    let seq = head(&app, &token).await;
    // The same call again: the first result, nothing written (a plain repeat would be note_exists).
    assert_eq!(ok(&app, &token, "write_note", args.clone()).await, first);
    assert_eq!(head(&app, &token).await, seq);
    // The same key with other arguments.
    let other = json!({"vault": "Notes", "path": "Once.md", "content": "two", "idempotency_key": "k-1"});
    let e = err(&app, &token, "write_note", other).await;
    assert_eq!(e["code"], "idempotency_key_mismatch", "{e}");
    assert_eq!(head(&app, &token).await, seq);
    // Another principal's key of the same name is another key.
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let bob = tx.ensure_principal(otc_store::PrincipalKind::User, "bob").await.unwrap();
    let issued = tx
        .issue_token(otc_store::NewToken {
            principal_id: bob.id,
            name: "bob".into(),
            scopes: otc_auth::parse_scopes("*").unwrap(),
            vault_id: None,
            expires_at: None,
        })
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let bobs = json!({"vault": "Notes", "path": "Bob.md", "content": "b", "idempotency_key": "k-1"});
    assert_eq!(ok(&app, &issued.plaintext, "write_note", bobs).await["created"], true);

    // A refusal writes nothing and frees the key: the next call under it runs.
    let refused = json!({"vault": "Notes", "path": "Once.md", "content": "x", "idempotency_key": "k-2"});
    assert_eq!(err(&app, &token, "write_note", refused).await["code"], "note_exists");
    let fresh = json!({"vault": "Notes", "path": "Twice.md", "content": "x", "idempotency_key": "k-2"});
    assert_eq!(ok(&app, &token, "write_note", fresh).await["created"], true);
    // Through call_capability and a domain meta-tool the key means the same.
    let routed = json!({"name": "write_note", "args": {"vault": "Notes", "path": "Routed.md", "content": "r", "idempotency_key": "k-3"}});
    let once = ok(&app, &token, "call_capability", routed.clone()).await;
    assert_eq!(ok(&app, &token, "call_capability", routed).await, once);
    // Reads take no key; a bad key is a validation error.
    let e = err(&app, &token, "read_note", json!({"vault": "Notes", "path": "Once.md", "idempotency_key": "k"})).await;
    assert_eq!(e["code"], "validation_error", "{e}");
    let e = err(
        &app,
        &token,
        "write_note",
        json!({"vault": "Notes", "path": "B.md", "content": "x", "idempotency_key": ""}),
    )
    .await;
    assert_eq!(e["code"], "validation_error", "{e}");
}

#[tokio::test]
async fn a_key_whose_call_is_running_or_died_mid_call_never_runs_it_again() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let presented: otc_auth::PresentedToken = token.parse().unwrap();
    let caller = tx.authenticate(&presented.hash).await.unwrap().unwrap();
    tx.commit().await.unwrap();
    let args = json!({"vault": "Notes", "path": "Slow.md", "content": "s"});
    let fingerprint = otc_tools::writing::args_hash("write_note", &args);
    let keyed = |key: &str| {
        let mut a = args.clone();
        a["idempotency_key"] = json!(key);
        a
    };

    // Another gateway holds the key mid-call.
    let claim = otc_tools::idempotency::claim(&app.deps.kv, &caller, "busy", &fingerprint).await.unwrap();
    let otc_tools::idempotency::Claim::Run(guard) = claim else { panic!("a fresh key runs") };
    let e = err(&app, &token, "write_note", keyed("busy")).await;
    assert_eq!((e["code"].clone(), e["retryable"].clone()), (json!("idempotency_in_flight"), json!(true)), "{e}");
    // It ends in a way that leaves the effect unknown: never run again under the key.
    guard.finish(&Err(otc_errors::ToolError::new(otc_errors::ErrorCode::InternalError))).await;
    let e = err(&app, &token, "write_note", keyed("busy")).await;
    assert_eq!(e["code"], "indeterminate_outcome", "{e}");
    // Its caller hung up mid-call: the same.
    let claim = otc_tools::idempotency::claim(&app.deps.kv, &caller, "dropped", &fingerprint).await.unwrap();
    drop(claim);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(err(&app, &token, "write_note", keyed("dropped")).await["code"], "indeterminate_outcome");
    // Its gateway died mid-call (the lease it renewed lapsed).
    let name = otc_tools::idempotency::record_name(&caller, "died");
    let record = json!({"state": "running", "fingerprint": fingerprint, "lease_until_ms": 1, "run": "gone"});
    app.deps.kv.put_record(&name, &record.to_string(), std::time::Duration::from_secs(60)).await.unwrap();
    assert_eq!(err(&app, &token, "write_note", keyed("died")).await["code"], "indeterminate_outcome");
    assert_eq!(crate::write::text(&app, &token, "Slow.md").await, None, "none of them ran");
}

#[tokio::test]
async fn a_sync_commit_with_an_idempotency_key_commits_once() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let hash = crate::sync::upload(&app, &token, "Notes", b"body").await;
    let post = |key: &'static str, path: &'static str| {
        let body = json!({"changes": [{"path": path, "expect": "any", "put": {"hash": hash}}]});
        app.http
            .post(app.url("/v1/vaults/Notes/commit"))
            .bearer_auth(&token)
            .header("idempotency-key", key)
            .json(&body)
            .send()
    };
    let first: Value = post("c-1", "A.md").await.unwrap().json().await.unwrap();
    let again: Value = post("c-1", "A.md").await.unwrap().json().await.unwrap();
    assert_eq!(first, again);
    assert_eq!(head(&app, &token).await, first["seq"].as_i64().unwrap());
    let mismatch = post("c-1", "B.md").await.unwrap();
    assert_eq!(mismatch.status(), 422);
    let body: Value = mismatch.json().await.unwrap();
    assert_eq!(body["error"]["code"], "idempotency_key_mismatch");
}
