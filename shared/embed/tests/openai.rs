//! The OpenAI-compatible client against a fake provider at its HTTP boundary (the one fake the
//! project allows: a paid external API): batching, retries on 429 and 5xx with Retry-After,
//! immediate failure on a refusal, a bad answer, and the per-tenant limit.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use otc_embed::Embedder;
use otc_embed::http::{OpenAi, OpenAiSettings};
use serde_json::{Value, json};
use uuid::Uuid;

#[derive(Default)]
struct Fake {
    calls: AtomicUsize,
    /// Answer this status to the first `failures` calls.
    failures: AtomicUsize,
    status: AtomicUsize,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
    batches: std::sync::Mutex<Vec<usize>>,
}

async fn embeddings(State(fake): State<Arc<Fake>>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    fake.calls.fetch_add(1, Ordering::SeqCst);
    assert_eq!(headers.get("authorization").unwrap(), "Bearer sk-test");
    if fake.failures.load(Ordering::SeqCst) > 0 {
        fake.failures.fetch_sub(1, Ordering::SeqCst);
        let status = StatusCode::from_u16(fake.status.load(Ordering::SeqCst) as u16).unwrap();
        let mut response = (status, Json(json!({"error": {"message": "slow down"}}))).into_response();
        response.headers_mut().insert("retry-after", "0.05".parse().unwrap());
        return response;
    }
    let now = fake.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    fake.most_in_flight.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(20)).await;
    fake.in_flight.fetch_sub(1, Ordering::SeqCst);
    let inputs = body["input"].as_array().unwrap();
    fake.batches.lock().unwrap().push(inputs.len());
    assert_eq!(body["model"], "fake-embed");
    assert!(body["dimensions"] == 3 || body["dimensions"] == 4);
    // Answered out of order, as the API allows.
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .rev()
        .map(|(i, text)| json!({"index": i, "embedding": [text.as_str().unwrap().len() as f32, 1.0, 0.0]}))
        .collect();
    Json(json!({"data": data, "usage": {"prompt_tokens": inputs.len() * 2, "total_tokens": inputs.len() * 2}}))
        .into_response()
}

async fn start() -> (Arc<Fake>, String) {
    let fake = Arc::new(Fake::default());
    let app = axum::Router::new().route("/v1/embeddings", axum::routing::post(embeddings)).with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (fake, url)
}

fn client(url: &str) -> OpenAi {
    OpenAi::new(OpenAiSettings { batch: 4, ..settings(url) }).unwrap()
}

fn texts(n: usize) -> Vec<String> {
    (0..n).map(|i| "x".repeat(i + 1)).collect()
}

#[tokio::test]
async fn batches_orders_normalises_and_counts() {
    let (fake, url) = start().await;
    let got = client(&url).embed(Uuid::new_v4(), &texts(10)).await.unwrap();
    assert_eq!(*fake.batches.lock().unwrap(), vec![4, 4, 2]);
    assert_eq!(got.vectors.len(), 10);
    for (i, v) in got.vectors.iter().enumerate() {
        let len = (i + 1) as f32;
        let norm = (len * len + 1.0).sqrt();
        assert!((v[0] - len / norm).abs() < 1e-6 && (v[1] - 1.0 / norm).abs() < 1e-6, "vector {i}: {v:?}");
    }
    assert_eq!(got.usage.requests, 3);
    assert_eq!(got.usage.tokens, 20);
}

#[tokio::test]
async fn retries_throttling_and_server_errors_then_gives_up() {
    let (fake, url) = start().await;
    let c = client(&url);
    for status in [429, 503] {
        fake.status.store(status, Ordering::SeqCst);
        fake.failures.store(2, Ordering::SeqCst);
        let calls = fake.calls.load(Ordering::SeqCst);
        let got = c.embed(Uuid::new_v4(), &texts(2)).await.expect("the third attempt answers");
        assert_eq!(got.usage.requests, 3, "{status}: two failures and the answer");
        assert_eq!(fake.calls.load(Ordering::SeqCst) - calls, 3);
    }
    fake.failures.store(5, Ordering::SeqCst);
    let err = c.embed(Uuid::new_v4(), &texts(2)).await.unwrap_err();
    assert!(
        matches!(&err, otc_embed::EmbedError::Unavailable { attempts: 3, message } if message.contains("slow down")),
        "{err}"
    );
}

#[tokio::test]
async fn a_refusal_is_not_retried() {
    let (fake, url) = start().await;
    fake.status.store(401, Ordering::SeqCst);
    fake.failures.store(1, Ordering::SeqCst);
    let err = client(&url).embed(Uuid::new_v4(), &texts(1)).await.unwrap_err();
    assert!(matches!(&err, otc_embed::EmbedError::Refused { status: 401, .. }), "{err}");
    assert_eq!(fake.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_wrong_dimension_is_a_bad_answer_and_a_wrong_route_a_refusal() {
    let (_fake, url) = start().await;
    let err = OpenAi::new(OpenAiSettings { dims: 4, ..settings(&url) })
        .unwrap()
        .embed(Uuid::new_v4(), &texts(1))
        .await
        .unwrap_err();
    assert!(matches!(&err, otc_embed::EmbedError::BadAnswer(m) if m.contains("dimension is 4")), "{err}");
    let err = OpenAi::new(OpenAiSettings { base_url: format!("{url}/nowhere"), ..settings(&url) })
        .unwrap()
        .embed(Uuid::new_v4(), &texts(1))
        .await
        .unwrap_err();
    assert!(matches!(err, otc_embed::EmbedError::Refused { status: 404, .. }), "{err}");
}

fn settings(url: &str) -> OpenAiSettings {
    OpenAiSettings {
        base_url: url.to_string(),
        api_key: Some("sk-test".into()),
        model: "fake-embed".into(),
        dims: 3,
        send_dimensions: true,
        batch: 1,
        tenant_concurrency: 2,
        max_attempts: 3,
        timeout: Duration::from_secs(5),
        backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(200),
    }
}

#[tokio::test]
async fn each_tenant_has_its_own_limit() {
    let (fake, url) = start().await;
    let c = Arc::new(OpenAi::new(settings(&url)).unwrap());
    let tenant = Uuid::new_v4();
    let calls: Vec<_> = (0..6)
        .map(|_| {
            let c = c.clone();
            tokio::spawn(async move { c.embed(tenant, &texts(1)).await.unwrap() })
        })
        .collect();
    for call in calls {
        call.await.unwrap();
    }
    assert_eq!(fake.most_in_flight.load(Ordering::SeqCst), 2, "one tenant holds at most two requests");
    fake.most_in_flight.store(0, Ordering::SeqCst);
    let calls: Vec<_> = (0..4)
        .map(|_| {
            let c = c.clone();
            tokio::spawn(async move { c.embed(Uuid::new_v4(), &texts(1)).await.unwrap() })
        })
        .collect();
    for call in calls {
        call.await.unwrap();
    }
    assert!(fake.most_in_flight.load(Ordering::SeqCst) > 2, "other tenants are not held back by it");
}
