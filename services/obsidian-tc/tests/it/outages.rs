//! An outage is answered for what it is: a Postgres that went away (a restart's or an
//! administrator's termination, SQLSTATE 57P01) is `service_unavailable`, retryable, naming
//! the dependency, never a generic internal error.

use crate::harness::{Tenant, TestApp};

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
    forget("k-1").await;
    let mut other = append.clone();
    other["content"] = json!("twice\n");
    let mismatch = call(&app, "/mcp", &token, "append_note", other).await;
    assert_eq!(error_of(&mismatch)["code"], "idempotency_key_mismatch");

    // A key whose call ended with its outcome unknown stays indeterminate across the restart.
    let claim = otc_kernel::idempotency::claim(&app.deps.kv, &app.store, &caller, "k-2", "fp").await.unwrap();
    let otc_kernel::idempotency::Claim::Run(guard) = claim else { panic!("a fresh key runs") };
    guard.finish(&Err(otc_errors::ToolError::new(otc_errors::ErrorCode::InternalError))).await;
    forget("k-2").await;
    let err = otc_kernel::idempotency::claim(&app.deps.kv, &app.store, &caller, "k-2", "fp").await.err().unwrap();
    assert_eq!(err.code, otc_errors::ErrorCode::IndeterminateOutcome);
}
