//! Access and fairness: which vault a call reaches when it names none or names it by id, rate
//! limits shared by every gateway, idempotency keys, confirmation tokens and the OAuth
//! resource-server surface.

use otc_config::FailPolicy;
use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp, cli, closed_port, stderr, stdout};
use crate::index::commit;
use crate::mcp::{call, call_on, error_of};
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
    let bob = tenant.token_as(&app.store, "bob", "*").await;
    let bobs = json!({"vault": "Notes", "path": "Bob.md", "content": "b", "idempotency_key": "k-1"});
    assert_eq!(ok(&app, &bob, "write_note", bobs).await["created"], true);

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
    let caller = tenant.caller(&app.store, &token).await;
    let args = json!({"vault": "Notes", "path": "Slow.md", "content": "s"});
    let fingerprint = otc_kernel::writing::args_hash("write_note", &args);
    let keyed = |key: &str| {
        let mut a = args.clone();
        a["idempotency_key"] = json!(key);
        a
    };

    // A call that has sent a commit of a write (whether it landed is what the key cannot tell).
    let sent_a_commit = async |effects: &otc_store::CallEffects| {
        effects.track(crate::harness::commit_a_write(&app.store, tenant.id)).await;
    };
    let claim = async |key: &str, effects: &otc_store::CallEffects| {
        let claim = otc_kernel::idempotency::claim(&app.deps.kv, &app.store, &caller, key, &fingerprint, effects);
        match claim.await.unwrap() {
            otc_kernel::idempotency::Claim::Run(guard) => guard,
            otc_kernel::idempotency::Claim::Replay(_) => panic!("a fresh key runs"),
        }
    };
    let internal = Err(otc_errors::ToolError::new(otc_errors::ErrorCode::InternalError));

    // Another gateway holds the key mid-call.
    let effects = otc_store::CallEffects::new();
    let guard = claim("busy", &effects).await;
    let e = err(&app, &token, "write_note", keyed("busy")).await;
    assert_eq!((e["code"].clone(), e["retryable"].clone()), (json!("idempotency_in_flight"), json!(true)), "{e}");
    // It ends, after a commit, in a way that leaves the effect unknown: never run again under
    // the key.
    sent_a_commit(&effects).await;
    guard.finish(&internal).await;
    let e = err(&app, &token, "write_note", keyed("busy")).await;
    assert_eq!(e["code"], "indeterminate_outcome", "{e}");
    // Its caller hung up mid-call, after a commit: the same.
    let effects = otc_store::CallEffects::new();
    let guard = claim("dropped", &effects).await;
    sent_a_commit(&effects).await;
    drop(guard);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(err(&app, &token, "write_note", keyed("dropped")).await["code"], "indeterminate_outcome");
    // The same two before any commit: nothing can have landed, so each key is given back.
    let guard = claim("failed early", &otc_store::CallEffects::new()).await;
    guard.finish(&internal).await;
    drop(claim("hung up early", &otc_store::CallEffects::new()).await);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    for key in ["failed early", "hung up early"] {
        let name = otc_kernel::idempotency::record_name(&caller, key);
        assert_eq!(app.deps.kv.get_record(&name).await.unwrap(), None, "{key} is free again");
    }
    // Its gateway died mid-call (the lease it renewed lapsed).
    let name = otc_kernel::idempotency::record_name(&caller, "died");
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

#[tokio::test]
async fn a_confirmation_minted_for_one_call_works_once_on_any_gateway() {
    let app = TestApp::spawn_with(|c| c.tools.confirm_destructive = true).await;
    let second = app.another_gateway(|c| c.tools.confirm_destructive = true).await;
    let (a, b) = (app.url(""), format!("http://{}", second.addr));
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    commit(&app, &token, "Notes", &[("D.md", Some("doomed")), ("E.md", Some("kept"))]).await;
    let delete = json!({"vault": "Notes", "path": "D.md"});

    // Asked on one gateway; a person mints the token with the command the details give.
    let asked = call_on(&app, &a, &token, "delete_note", delete.clone()).await;
    let details = error_of(&asked)["details"].clone();
    assert_eq!(error_of(&asked)["code"], "elicit_required");
    let hash = details["args_hash"].as_str().unwrap().to_string();
    let command = details["command"].as_str().unwrap().to_string();
    let args: Vec<&str> = command.strip_prefix("obsidian-tc ").unwrap().split(' ').collect();
    let out = cli(&app.iso, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let confirmation = stdout(&out).trim().to_string();
    assert!(confirmation.starts_with("otce_"), "{confirmation}");

    // Resent with it on the other gateway: it runs, once.
    let mut confirmed = delete.clone();
    confirmed["elicit_token"] = json!(confirmation);
    let done = call_on(&app, &b, &token, "delete_note", confirmed.clone()).await;
    assert!(is_ok(&done), "{done}");
    assert_eq!(crate::write::text(&app, &token, "D.md").await, None);
    commit(&app, &token, "Notes", &[("D.md", Some("doomed again"))]).await;
    let reused = error_of(&call_on(&app, &a, &token, "delete_note", confirmed).await).clone();
    assert_eq!(reused["code"], "elicit_invalid", "{reused}");
    assert!(reused["message"].as_str().unwrap().contains("already been used"), "{reused}");
    assert_eq!(crate::write::text(&app, &token, "D.md").await.as_deref(), Some("doomed again"));

    // Minted by an admin over HTTP; refused for other arguments, when tampered with, for
    // another principal, and once expired.
    let mint = |body: Value| app.http.post(app.url("/v1/elicit")).bearer_auth(&token).json(&body).send();
    let minted: Value = mint(json!({"tool": "delete_note", "args_hash": hash})).await.unwrap().json().await.unwrap();
    let fresh = minted["token"].as_str().unwrap().to_string();
    let other = json!({"vault": "Notes", "path": "E.md", "elicit_token": fresh});
    let e = error_of(&call_on(&app, &a, &token, "delete_note", other).await).clone();
    assert_eq!(e["code"], "elicit_invalid", "{e}");
    let mut tampered = fresh.clone();
    tampered.replace_range(10..11, if &fresh[10..11] == "A" { "B" } else { "A" });
    let e = error_of(
        &call_on(&app, &a, &token, "delete_note", json!({"vault": "Notes", "path": "D.md", "elicit_token": tampered}))
            .await,
    )
    .clone();
    assert_eq!(e["code"], "elicit_invalid", "{e}");
    let someone_else = json!({"tool": "delete_note", "args_hash": hash, "principal": uuid::Uuid::new_v4()});
    let theirs: Value = mint(someone_else).await.unwrap().json().await.unwrap();
    let e = error_of(
        &call_on(
            &app,
            &a,
            &token,
            "delete_note",
            json!({"vault": "Notes", "path": "D.md", "elicit_token": theirs["token"]}),
        )
        .await,
    )
    .clone();
    assert!(e["message"].as_str().unwrap().contains("another principal"), "{e}");
    let brief: Value =
        mint(json!({"tool": "delete_note", "args_hash": hash, "ttl_secs": 1})).await.unwrap().json().await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let e = error_of(
        &call_on(
            &app,
            &b,
            &token,
            "delete_note",
            json!({"vault": "Notes", "path": "D.md", "elicit_token": brief["token"]}),
        )
        .await,
    )
    .clone();
    assert!(e["message"].as_str().unwrap().contains("expired"), "{e}");
    // The unused fresh token still works for the call it names.
    let ran =
        call_on(&app, &b, &token, "delete_note", json!({"vault": "Notes", "path": "D.md", "elicit_token": fresh}))
            .await;
    assert!(is_ok(&ran), "{ran}");

    // Minting needs admin:confirm.
    let (reader, _) = tenant.token(&app.store, "read:notes,write:notes,delete:notes", false, None).await;
    let refused = app
        .http
        .post(app.url("/v1/elicit"))
        .bearer_auth(&reader)
        .json(&json!({"tool": "delete_note", "args_hash": hash}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);

    // Minting is held to what the admin itself administers: a credential bound to Notes
    // confirms calls on Notes only, and must say so; a token naming a vault confirms the call
    // on that vault and no other.
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    tx.create_vault("Other").await.unwrap();
    tx.commit().await.unwrap();
    let (bound, _) = tenant.token(&app.store, "*", true, None).await;
    let mint_as = |token: &str, body: Value| app.http.post(app.url("/v1/elicit")).bearer_auth(token).json(&body).send();
    commit(&app, &token, "Notes", &[("F.md", Some("doomed"))]).await;
    let asked = call_on(&app, &a, &token, "delete_note", json!({"vault": "Notes", "path": "F.md"})).await;
    let details = error_of(&asked)["details"].clone();
    assert_eq!(details["vault"], "Notes", "{details}");
    assert!(details["command"].as_str().unwrap().ends_with("--vault Notes"), "{details}");
    let f_hash = details["args_hash"].as_str().unwrap().to_string();
    let unnamed = mint_as(&bound, json!({"tool": "delete_note", "args_hash": f_hash})).await.unwrap();
    assert_eq!(unnamed.status(), 403);
    let elsewhere =
        mint_as(&bound, json!({"tool": "delete_note", "args_hash": f_hash, "vault": "Other"})).await.unwrap();
    assert_eq!(elsewhere.status(), 403);
    let missing = mint_as(&token, json!({"tool": "delete_note", "args_hash": f_hash, "vault": "Nope"})).await.unwrap();
    assert_eq!(missing.status(), 404);
    let for_other: Value = mint_as(&token, json!({"tool": "delete_note", "args_hash": f_hash, "vault": "Other"}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let e = error_of(
        &call_on(
            &app,
            &a,
            &token,
            "delete_note",
            json!({"vault": "Notes", "path": "F.md", "elicit_token": for_other["token"]}),
        )
        .await,
    )
    .clone();
    assert!(e["message"].as_str().unwrap().contains("another vault"), "{e}");
    let own: Value = mint_as(&bound, json!({"tool": "delete_note", "args_hash": f_hash, "vault": "Notes"}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(own["vault"], "Notes", "{own}");
    let ran = call_on(
        &app,
        &b,
        &token,
        "delete_note",
        json!({"vault": "Notes", "path": "F.md", "elicit_token": own["token"]}),
    )
    .await;
    assert!(is_ok(&ran), "{ran}");
    second.stop().await.unwrap();
}

#[tokio::test]
async fn the_oauth_metadata_describes_each_resource_and_every_challenge_points_at_it() {
    let app = TestApp::spawn().await;
    let base = app.url("");
    let get = |path: &str| app.http.get(app.url(path)).send();
    let root: Value = get("/.well-known/oauth-protected-resource").await.unwrap().json().await.unwrap();
    assert_eq!(root["resource"], base);
    assert_eq!(root["bearer_methods_supported"], json!(["header"]));
    let scopes: Vec<&str> = root["scopes_supported"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert!(scopes.contains(&"read:notes") && scopes.contains(&"write:notes") && scopes.contains(&"admin:confirm"));
    let triad: Value = get("/.well-known/oauth-protected-resource/mcp/triad").await.unwrap().json().await.unwrap();
    assert_eq!(triad["resource"], format!("{base}/mcp/triad"));
    assert_eq!(get("/.well-known/oauth-protected-resource/mcp/nope").await.unwrap().status(), 404);

    let challenge = |r: &reqwest::Response| r.headers()["www-authenticate"].to_str().unwrap().to_string();
    let anonymous = app.http.post(app.url("/mcp")).json(&json!({})).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    assert!(
        challenge(&anonymous)
            .contains(&format!("resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"")),
        "{}",
        challenge(&anonymous)
    );
    let bad = app.http.get(app.url("/v1/vaults")).bearer_auth("otc_nope").send().await.unwrap();
    assert_eq!(bad.status(), 401);
    let text = challenge(&bad);
    assert!(
        text.contains("error=\"invalid_token\"")
            && text.contains(&format!("resource_metadata=\"{base}/.well-known/oauth-protected-resource\"")),
        "{text}"
    );

    // A token without the scope: 403 naming it.
    let tenant = Tenant::create(&app.store, "acme").await;
    let (reader, _) = tenant.token(&app.store, "read:notes", false, None).await;
    let body = json!({"changes": [{"path": "a.md", "expect": "any", "delete": true}]});
    let refused =
        app.http.post(app.url("/v1/vaults/Notes/commit")).bearer_auth(&reader).json(&body).send().await.unwrap();
    assert_eq!(refused.status(), 403);
    let text = challenge(&refused);
    assert!(text.contains("error=\"insufficient_scope\"") && text.contains("scope=\"write:notes\""), "{text}");
    assert!(text.contains("resource_metadata="), "{text}");

    // Behind a proxy the configured public URL is the resource.
    let proxied = TestApp::spawn_with(|c| c.mcp.public_url = Some("https://mcp.example.com/".into())).await;
    let meta: Value = proxied
        .http
        .get(proxied.url("/.well-known/oauth-protected-resource/mcp"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(meta["resource"], "https://mcp.example.com/mcp");
}

#[tokio::test]
async fn the_sync_api_checks_host_and_origin_like_mcp_and_refuses_two_hosts() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let whoami = |header: &'static str, value: &'static str| {
        app.http.get(app.url("/v1/whoami")).bearer_auth(&token).header(header, value).send()
    };
    assert_eq!(whoami("origin", "http://localhost:5173").await.unwrap().status(), 200);
    for (header, value) in [("origin", "https://evil.example"), ("host", "evil.example")] {
        let refused = whoami(header, value).await.unwrap();
        assert_eq!(refused.status(), 403, "{header}: {value}");
        let body: Value = refused.json().await.unwrap();
        assert_eq!(body["error"]["code"], "forbidden", "{body}");
    }
    // Two Host headers (one allowed, one not) are refused outright.
    let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let request = format!(
        "GET /v1/whoami HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("one Host header"), "{answer}");
}

#[tokio::test]
async fn a_reader_sees_no_write_tool_anywhere_and_is_refused_each_by_name() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (reader, _) = tenant.token(&app.store, "read:notes", false, None).await;
    let mutating: Vec<&'static str> = otc_tools::toolset::all()
        .iter()
        .filter(|t| t.declaration.spec.scope_class != otc_catalog::ScopeClass::Read)
        .map(|t| t.declaration.spec.name)
        .collect();
    assert!(mutating.len() >= 20, "{mutating:?}");
    let listed = |result: &Value| result.to_string();
    for surface in ["/mcp", "/mcp/full", "/mcp/domain", "/mcp/essentials", "/mcp/core"] {
        let tools = crate::mcp::rpc(&app, surface, &reader, "tools/list", json!({})).await;
        // Names and domain meta-tools' action lists alike.
        let text = listed(&tools);
        for name in &mutating {
            assert!(!text.contains(&format!("\"{name}\"")), "{surface} shows {name}");
        }
    }
    for query in ["write a note", "move rename a note", "delete a note", "create notes in bulk", "restore a vault"] {
        let found = call(&app, "/mcp", &reader, "find_capability", json!({"query": query, "limit": 50})).await;
        let text = listed(&found["structuredContent"]);
        for name in &mutating {
            assert!(!text.contains(&format!("\"{name}\"")), "find_capability({query}) shows {name}");
        }
    }
    for name in &mutating {
        let e = error_of(&call(&app, "/mcp", &reader, name, json!({})).await).clone();
        assert_eq!(e["code"], "forbidden", "{name}: {e}");
        let domain = otc_tools::toolset::all()
            .into_iter()
            .find(|t| t.declaration.spec.name == *name)
            .unwrap()
            .declaration
            .spec
            .domain;
        let routed = call(&app, "/mcp/domain", &reader, domain.as_str(), json!({"action": name, "args": {}})).await;
        assert_eq!(error_of(&routed)["code"], "forbidden", "{name} through {domain}");
    }
}

#[tokio::test]
async fn over_stdio_a_client_with_elicitation_is_asked_to_confirm_instead() {
    use crate::harness::{Transport, python_session};
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    commit(&app, &token, "Notes", &[("D.md", Some("doomed"))]).await;
    let steps = json!([{"op": "call", "name": "delete_note", "args": {"vault": "Notes", "path": "D.md"}}]);
    let session = |answer: &str| {
        let mut env = app.iso.env();
        env.push(("OTC_TOKEN".into(), token.clone()));
        env.push(("OTC_TEST_ELICIT".into(), answer.into()));
        env.push(("OTC__MCP__CONFIRM_IN_CLIENT".into(), "true".into()));
        python_session(Transport::Stdio { args: vec!["stdio".into()], env }, steps.clone())
    };
    // Declined: refused, nothing deleted.
    let out = session("decline").await;
    let e = error_of(&out["results"][0]);
    assert_eq!((e["code"].clone(), e["details"]["declined"].clone()), (json!("elicit_required"), json!(true)), "{out}");
    let asked = out["elicitations"][0].as_str().unwrap();
    assert!(asked.contains("delete_note") && asked.contains("D.md"), "{asked}");
    assert_eq!(crate::write::text(&app, &token, "D.md").await.as_deref(), Some("doomed"));
    // Accepted: it runs.
    let out = session("accept").await;
    assert_eq!(out["results"][0]["isError"], false, "{out}");
    assert_eq!(out["elicitations"].as_array().unwrap().len(), 1);
    assert_eq!(crate::write::text(&app, &token, "D.md").await, None);
}

#[tokio::test]
async fn a_large_budget_spent_locally_on_two_gateways_still_stops_near_its_limit() {
    // 60 a minute, burst 40: far from the limit each gateway decides alone and tells Redis
    // every 50 ms; near it, each call asks Redis. In all, no more than the burst plus half a
    // burst per gateway gets through at once.
    let app = TestApp::spawn().await;
    let second = app.another_gateway(|_| {}).await;
    let (a, b) = (app.url(""), format!("http://{}", second.addr));
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    tx.set_rate_tier(&otc_store::RateTier { class: "read".into(), per_minute: 60, burst: 40 }).await.unwrap();
    tx.commit().await.unwrap();
    let exists = json!({"vault": "Notes", "path": "Plan.md"});
    let mut allowed = 0;
    for i in 0..120 {
        let base = if i % 2 == 0 { &a } else { &b };
        if is_ok(&call_on(&app, base, &token, "note_exists", exists.clone()).await) {
            allowed += 1;
        }
    }
    // The calls take a few seconds, so a few more seconds' worth (one a second) may pass.
    assert!((40..=40 + 2 * 20 + 10).contains(&allowed), "{allowed} of 120 allowed");
    // Once the locally allowed calls have reached Redis, the budget reads spent everywhere.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let e = error_of(&call_on(&app, &a, &token, "note_exists", exists.clone()).await).clone();
    assert_eq!(e["code"], "throttled", "{e}");
    second.stop().await.unwrap();
}

/// A tool that panics (a bug), to show the caller still gets an answer.
struct PanicProbe;

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct PanicInput {}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct PanicOutput {
    ok: bool,
}

impl otc_kernel::Tool for PanicProbe {
    type Input = PanicInput;
    type Output = PanicOutput;
    const SPEC: otc_catalog::ToolSpec = otc_catalog::ToolSpec {
        scopes: &["read:notes"],
        response_format: otc_catalog::ResponseFormat::Fixed { why: "test probe" },
        ..otc_catalog::ToolSpec::base("panic_probe", "Panic probe", "Panics.", otc_catalog::Domain::Admin)
    };

    async fn call(
        _ctx: &otc_kernel::CallContext<'_>,
        _input: PanicInput,
    ) -> Result<PanicOutput, otc_errors::ToolError> {
        panic!("a bug in a tool");
    }
}

#[tokio::test]
async fn a_tool_that_panics_answers_internal_error_and_the_server_carries_on() {
    let app = TestApp::spawn_with_tools(|_| {}, vec![otc_kernel::entry::<PanicProbe>()]).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    for _ in 0..2 {
        let e = error_of(&call(&app, "/mcp", &token, "panic_probe", json!({})).await).clone();
        assert_eq!(e["code"], "internal_error", "{e}");
    }
    ok(&app, &token, "list_vaults", json!({})).await;
}

/// A refusal holds until its retry_after has passed (a refused call spends nothing), so the
/// gateway repeats it without asking Redis again: even with the budget gone from Redis, the
/// next call in that window is refused, and the first after it is allowed.
#[tokio::test]
async fn a_refusal_is_repeated_locally_until_its_wait_has_passed() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let caller = tenant.caller(&app.store, &token).await;
    let mut config = otc_config::RateLimitsConfig::default();
    config.tiers.read = otc_config::RateTier { per_minute: 60, burst: 1 };
    let limiter = otc_kernel::rate_limits::RateLimiter::new(app.deps.kv.clone(), config);
    assert!(limiter.spend(&caller, "read").await.is_ok());
    let refused = limiter.spend(&caller, "read").await.expect_err("the burst is spent");
    let wait = refused.details["retry_after"].as_f64().unwrap();
    // Redis forgets the budget: it would allow the next call at once.
    let name = format!("rl:{}:{}:read", caller.tenant_id, caller.principal_id);
    let budget = app.deps.kv.get_record(&name).await.unwrap().expect("the budget is in Redis");
    assert!(app.deps.kv.delete_record_if(&name, &budget).await.unwrap());
    let again = limiter.spend(&caller, "read").await.expect_err("refused here, without asking Redis");
    assert_eq!(again.code, otc_errors::ErrorCode::Throttled);
    tokio::time::sleep(std::time::Duration::from_secs_f64(wait + 0.05)).await;
    assert!(limiter.spend(&caller, "read").await.is_ok(), "past the wait, Redis decides again");
}
