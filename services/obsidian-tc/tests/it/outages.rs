//! An outage is answered for what it is: a Postgres that went away (a restart's or an
//! administrator's termination, SQLSTATE 57P01) is `service_unavailable`, retryable, naming
//! the dependency, never a generic internal error.

use crate::harness::{Relay, Tenant, TestApp, host_port};

#[tokio::test]
async fn a_terminated_database_connection_is_named_as_postgres_being_unavailable() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    otc_store::testing::terminate_backend_of(&app.store, &mut tx).await.unwrap();
    let err = tx.list_vaults().await.expect_err("the connection is gone");
    assert!(err.is_unavailable(), "{}", otc_gateway::error_chain(&err));
    let answer = otc_errors::ToolError::from(err);
    assert_eq!(answer.code, otc_errors::ErrorCode::ServiceUnavailable);
    assert!(answer.code.retryable());
    assert_eq!(answer.details["dependency"], "postgres");
    // The pool carries on with a new connection.
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    assert!(tx.list_vaults().await.is_ok());
}

/// With Redis unreachable, a keyed write is refused before it runs, naming Redis, and a keyless
/// one still runs (the limiter lets calls through by default); with the object store
/// unreachable, a write answers service_unavailable naming it, retryable, and nothing lands.
#[tokio::test]
async fn a_redis_or_object_store_outage_names_the_dependency_and_writes_nothing() {
    use crate::harness::closed_port;
    use crate::mcp::{call, error_of};
    use serde_json::json;

    let dead = format!("redis://127.0.0.1:{}/", closed_port());
    let app = TestApp::spawn_with(move |c| c.redis.url = otc_config::Secret::new(&dead)).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let keyed = json!({"vault": "Notes", "path": "Keyed.md", "content": "x\n", "idempotency_key": "k-1"});
    let refused = call(&app, "/mcp", &token, "write_note", keyed).await;
    let err = error_of(&refused);
    assert_eq!((err["code"].as_str(), err["retryable"].as_bool()), (Some("service_unavailable"), Some(true)), "{err}");
    assert_eq!(err["details"]["dependency"], "redis");
    let exists = call(&app, "/mcp", &token, "note_exists", json!({"vault": "Notes", "path": "Keyed.md"})).await;
    assert_eq!(exists["structuredContent"]["exists"], false, "{exists}");
    let keyless =
        call(&app, "/mcp", &token, "write_note", json!({"vault": "Notes", "path": "Plain.md", "content": "x\n"})).await;
    assert_eq!(keyless["isError"], false, "{keyless}");
    app.stop().await;

    let port = closed_port();
    let app = TestApp::spawn_with(move |c| c.object_store.endpoint = Some(format!("http://127.0.0.1:{port}"))).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let refused =
        call(&app, "/mcp", &token, "write_note", json!({"vault": "Notes", "path": "A.md", "content": "x\n"})).await;
    let err = error_of(&refused);
    assert_eq!((err["code"].as_str(), err["retryable"].as_bool()), (Some("service_unavailable"), Some(true)), "{err}");
    assert_eq!(err["details"]["dependency"], "object_store");
    let exists = call(&app, "/mcp", &token, "note_exists", json!({"vault": "Notes", "path": "A.md"})).await;
    assert_eq!(exists["structuredContent"]["exists"], false, "{exists}");
    app.stop().await;
}

/// A Redis restart loses the running leases, not what finished calls answered: a retry with the
/// same key replays the first result from Postgres (the note is written once), other arguments
/// under the key are still refused, and an indeterminate key stays so.
#[tokio::test]
async fn a_redis_restart_keeps_what_keyed_calls_answered() {
    use crate::mcp::{call, error_of};
    use serde_json::json;

    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let caller = tenant.caller(&app.store, &token).await;
    // What a restart does to a key: its Redis record is gone.
    let forget = async |key: &str| {
        let name = otc_kernel::idempotency::record_name(&caller, key);
        let held = app.deps.kv.get_record(&name).await.unwrap().expect("the key is in Redis");
        assert!(app.deps.kv.delete_record_if(&name, &held).await.unwrap());
    };

    let append = json!({"vault": "Notes", "path": "Log.md", "content": "once\n", "create_if_missing": true, "idempotency_key": "k-1"});
    let first = call(&app, "/mcp", &token, "append_note", append.clone()).await;
    assert_eq!(first["isError"], false, "{first}");
    forget("k-1").await;
    let again = call(&app, "/mcp", &token, "append_note", append.clone()).await;
    assert_eq!(again["structuredContent"], first["structuredContent"], "the first result, replayed");
    assert_eq!(crate::write::text(&app, &token, "Log.md").await.as_deref(), Some("once\n"), "written once");
    // Put back, a record lives out what is left of its day in Redis, not a fresh one.
    let name = otc_kernel::idempotency::record_name(&caller, "k-1");
    let kept = app.deps.kv.get_record(&name).await.unwrap().unwrap();
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    tx.put_idempotency_record(&name, &kept, chrono::Utc::now() + chrono::Duration::hours(1)).await.unwrap();
    tx.commit().await.unwrap();
    forget("k-1").await;
    let again = call(&app, "/mcp", &token, "append_note", append.clone()).await;
    assert_eq!(again["structuredContent"], first["structuredContent"]);
    let left = app.deps.kv.record_remaining(&name).await.unwrap().unwrap();
    assert!(left <= std::time::Duration::from_secs(3600), "{left:?}");
    forget("k-1").await;
    let mut other = append.clone();
    other["content"] = json!("twice\n");
    let mismatch = call(&app, "/mcp", &token, "append_note", other).await;
    assert_eq!(error_of(&mismatch)["code"], "idempotency_key_mismatch");

    // A key whose call ended with its outcome unknown (after it sent a commit) stays
    // indeterminate across the restart.
    let effects = otc_store::CallEffects::new();
    let claim = otc_kernel::idempotency::claim(&app.deps.kv, &app.store, &caller, "k-2", "fp", &effects);
    let otc_kernel::idempotency::Claim::Run(guard) = claim.await.unwrap() else { panic!("a fresh key runs") };
    effects.track(crate::harness::commit_a_write(&app.store, tenant.id)).await;
    guard.finish(&Err(otc_errors::ToolError::new(otc_errors::ErrorCode::InternalError))).await;
    forget("k-2").await;
    let fresh = otc_store::CallEffects::new();
    let claim = otc_kernel::idempotency::claim(&app.deps.kv, &app.store, &caller, "k-2", "fp", &fresh);
    let err = claim.await.err().unwrap();
    assert_eq!(err.code, otc_errors::ErrorCode::IndeterminateOutcome);
}

/// A keyed call that failed before it sent any commit provably changed nothing, so its key is
/// given back: the retry its service_unavailable invites runs, once, rather than answering
/// indeterminate_outcome for a day. Here the object store goes away between the call's reads
/// and its write, then Postgres goes away entirely.
#[tokio::test]
async fn a_keyed_call_that_failed_before_committing_runs_when_retried() {
    use crate::mcp::{call, error_of};
    use serde_json::json;

    let s3_url = std::env::var("OTC__OBJECT_STORE__ENDPOINT").unwrap();
    let s3 = Relay::start(host_port(&s3_url)).await;
    let pg = Relay::start(host_port(&std::env::var("OTC__DATABASE__URL").unwrap())).await;
    let s3_endpoint = format!("http://{}", s3.addr);
    let app = TestApp::spawn_with(|c| {
        c.object_store.endpoint = Some(s3_endpoint);
        c.database.url = otc_config::Secret::new(pg.in_front_of(c.database.url.expose()));
        c.database.connect_timeout_secs = 2;
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let append = |key: &str| json!({"vault": "Notes", "path": "Log.md", "content": "once\n", "create_if_missing": true, "idempotency_key": key});
    let text = async || crate::write::text(&app, &token, "Log.md").await;

    s3.cut();
    let refused = call(&app, "/mcp", &token, "append_note", append("k-s3")).await;
    let err = error_of(&refused);
    assert_eq!(
        (err["code"].as_str(), err["details"]["dependency"].as_str()),
        (Some("service_unavailable"), Some("object_store")),
        "{err}"
    );
    s3.mend().await;
    let ran = call(&app, "/mcp", &token, "append_note", append("k-s3")).await;
    assert_eq!(ran["isError"], false, "the retry runs: {ran}");
    let replayed = call(&app, "/mcp", &token, "append_note", append("k-s3")).await;
    assert_eq!(replayed["structuredContent"], ran["structuredContent"], "and is answered once");
    assert_eq!(text().await.as_deref(), Some("once\n"));

    pg.cut();
    let refused = call(&app, "/mcp", &token, "append_note", append("k-pg")).await;
    let err = error_of(&refused);
    assert_eq!(
        (err["code"].as_str(), err["details"]["dependency"].as_str()),
        (Some("service_unavailable"), Some("postgres")),
        "{err}"
    );
    pg.mend().await;
    // The pool's connections from before the outage fail once each as they come up: the retry
    // that meets one is refused as unavailable again, and frees the key again.
    let mut ran = call(&app, "/mcp", &token, "append_note", append("k-pg")).await;
    for _ in 0..40 {
        if ran["structuredContent"]["code"] != "service_unavailable" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        ran = call(&app, "/mcp", &token, "append_note", append("k-pg")).await;
    }
    assert_eq!(ran["isError"], false, "the retry runs: {ran}");
    assert_eq!(text().await.as_deref(), Some("once\nonce\n"), "once for each key");
    app.stop().await;
}

/// A Postgres that goes away and comes back (every connection closed, new ones refused for a
/// while, as a restart does) loses no audit record: those of calls answered just before it
/// went, and those of calls made while it was away, are written once it is back.
#[tokio::test]
async fn audit_records_wait_out_a_postgres_outage() {
    use crate::mcp::{call, error_of};
    use serde_json::json;

    let pg = Relay::start(host_port(&std::env::var("OTC__DATABASE__URL").unwrap())).await;
    let app = TestApp::spawn_with(|c| {
        c.database.url = otc_config::Secret::new(pg.in_front_of(c.database.url.expose()));
        c.database.connect_timeout_secs = 2;
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let mut answered = Vec::new();
    for i in 0..5 {
        let path = format!("Before {i}.md");
        let out =
            call(&app, "/mcp", &token, "write_note", json!({"vault": "Notes", "path": path, "content": "x"})).await;
        assert_eq!(out["isError"], false, "{out}");
        answered.push(path);
    }
    pg.cut();
    // A call made while Postgres is away is answered so, and recorded so.
    let during =
        call(&app, "/mcp", &token, "write_note", json!({"vault": "Notes", "path": "During.md", "content": "x"})).await;
    assert_eq!(error_of(&during)["code"], "service_unavailable", "{during}");
    // The writer retries each second: let it fail a few times.
    tokio::time::sleep(std::time::Duration::from_millis(3500)).await;
    pg.mend().await;

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let trail = loop {
        let mut tx = app.store.begin(tenant.id).await.unwrap();
        let trail = tx.audit(&otc_store::AuditFilter { limit: 100, ..Default::default() }).await.unwrap();
        tx.commit().await.unwrap();
        if trail.len() >= answered.len() + 1 || std::time::Instant::now() > deadline {
            break trail;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    for path in &answered {
        let kept = trail.iter().filter(|r| r.action == "write_note" && r.outcome == "ok" && r.paths == [path.clone()]);
        assert_eq!(kept.count(), 1, "{path}'s record, once: {trail:?}");
    }
    let during = trail.iter().filter(|r| r.paths == ["During.md"] && r.outcome == "service_unavailable");
    assert_eq!(during.count(), 1, "{trail:?}");
    app.stop().await;
}
