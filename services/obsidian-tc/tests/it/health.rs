//! /healthz and /readyz.

use reqwest::StatusCode;
use serde_json::Value;

use crate::harness::{TestApp, closed_port};

#[tokio::test]
async fn healthz_and_readyz_answer_without_a_token() {
    let app = TestApp::spawn().await;
    let live = app.http.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(live.status(), StatusCode::OK);
    let ready = app.http.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
    let body: Value = ready.json().await.unwrap();
    assert_eq!(body["status"], "ready");
    for dependency in ["postgres", "redis", "object_store"] {
        assert_eq!(body["checks"][dependency], "ok", "{body}");
    }
    app.stop().await;
}

async fn assert_unready(app: TestApp, down: &str) {
    let ready = app.http.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = ready.json().await.unwrap();
    assert_eq!(body["failed"], serde_json::json!([down]), "{body}");
    assert_ne!(body["checks"][down], "ok");
    for up in ["postgres", "redis", "object_store"].into_iter().filter(|d| *d != down) {
        assert_eq!(body["checks"][up], "ok", "{body}");
    }
    // Liveness does not depend on the others.
    assert_eq!(app.http.get(app.url("/healthz")).send().await.unwrap().status(), StatusCode::OK);
    app.stop().await;
}

#[tokio::test]
async fn readyz_names_postgres_when_it_is_down() {
    let port = closed_port();
    let app = TestApp::spawn_with(|c| {
        c.database.url = otc_config::Secret::new(format!("postgres://postgres:x@127.0.0.1:{port}/nothing"));
        c.database.connect_timeout_secs = 1;
    })
    .await;
    assert_unready(app, "postgres").await;
}

#[tokio::test]
async fn readyz_names_redis_when_it_is_down() {
    let port = closed_port();
    let app =
        TestApp::spawn_with(|c| c.redis.url = otc_config::Secret::new(format!("redis://127.0.0.1:{port}/"))).await;
    assert_unready(app, "redis").await;
}

#[tokio::test]
async fn readyz_names_the_object_store_when_it_is_down() {
    let port = closed_port();
    let app = TestApp::spawn_with(|c| {
        c.object_store.endpoint = Some(format!("http://127.0.0.1:{port}"));
    })
    .await;
    assert_unready(app, "object_store").await;
}

#[tokio::test]
async fn readyz_names_the_object_store_when_credentials_are_wrong() {
    let app = TestApp::spawn_with(|c| {
        c.object_store.secret_access_key = Some(otc_config::Secret::new("wrong-secret"));
    })
    .await;
    assert_unready(app, "object_store").await;
}
