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
