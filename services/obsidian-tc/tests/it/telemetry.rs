//! OpenTelemetry: traces go to the configured OTLP/HTTP endpoint, and nowhere when none is set.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::routing::post;

use crate::harness::{Child, Isolation};

/// A collector on loopback that counts OTLP trace exports (protobuf bodies).
async fn collector() -> (String, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let exports = Arc::new(AtomicUsize::new(0));
    let bytes = Arc::new(AtomicUsize::new(0));
    let (e, b) = (exports.clone(), bytes.clone());
    let app = Router::new().route(
        "/v1/traces",
        post(move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
            let (e, b) = (e.clone(), b.clone());
            async move {
                assert_eq!(headers.get("content-type").unwrap(), "application/x-protobuf");
                e.fetch_add(1, Ordering::SeqCst);
                b.fetch_add(body.len(), Ordering::SeqCst);
                ""
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), exports, bytes)
}

#[tokio::test]
async fn traces_are_exported_over_otlp_when_an_endpoint_is_set() {
    let (endpoint, exports, bytes) = collector().await;
    let iso = Isolation::new().await;
    let mut env = iso.env();
    env.push(("OTC__TELEMETRY__OTLP_ENDPOINT".into(), endpoint));
    let mut server = Child::start(env, &["serve"], true);
    let client = reqwest::Client::new();
    for _ in 0..3 {
        assert!(client.get(server.url("/readyz")).send().await.unwrap().status().is_success());
    }
    server.signal("TERM");
    let status = tokio::task::spawn_blocking(move || {
        let status = server.wait(Duration::from_secs(30));
        (status, server.log_text())
    })
    .await
    .unwrap();
    assert_eq!(status.0.code(), Some(0), "{}", status.1);
    // Shutdown flushes the batch.
    assert!(exports.load(Ordering::SeqCst) >= 1, "no export reached the collector; log:\n{}", status.1);
    assert!(bytes.load(Ordering::SeqCst) > 0);
}
