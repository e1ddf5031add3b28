//! The PLUR proxies against a stand-in engram store at its HTTP boundary (the store is an
//! external service): what is forwarded (the query, k, scope, weights, the caller's tenant and
//! principal, the key), what comes back as it came, and each failure as a catalogue code.

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::acl::token_for;
use crate::harness::{Tenant, TestApp};
use crate::write::{err, ok};

/// What the stand-in store saw: each request's route, body and headers of note.
#[derive(Default)]
pub(crate) struct FakePlur {
    pub seen: Mutex<Vec<Value>>,
}

fn note(fake: &FakePlur, route: &str, headers: &HeaderMap, body: Value) {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    fake.seen.lock().unwrap().push(json!({
        "route": route,
        "body": body,
        "tenant": header("x-otc-tenant"),
        "principal": header("x-otc-principal"),
        "auth": header("authorization"),
    }));
}

async fn engram(State(fake): State<Arc<FakePlur>>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    note(&fake, &format!("/engrams/{id}"), &headers, Value::Null);
    match id.as_str() {
        "e-1" => Json(json!({"id": "e-1", "text": "Deploys go out on Tuesdays", "tags": ["ops"]})).into_response(),
        "boom" => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn recall(State(fake): State<Arc<FakePlur>>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    note(&fake, "recall", &headers, body.clone());
    Json(json!({"engrams": [{"id": "e-1", "score": 0.9}], "echo": body})).into_response()
}

pub(crate) async fn fake_plur() -> (Arc<FakePlur>, String) {
    let fake = Arc::new(FakePlur::default());
    let app = axum::Router::new()
        .route("/engrams/{id}", axum::routing::get(engram))
        .route("/recall", axum::routing::post(recall))
        .route("/recall/hybrid", axum::routing::post(recall))
        .route("/similarity", axum::routing::post(recall))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (fake, url)
}

#[tokio::test]
async fn plur_proxies_forward_to_the_configured_store_and_answer_plugin_unavailable_without_one() {
    // Without a store.
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    for (tool, args) in [
        ("plur_get", json!({"engram_id": "e-1"})),
        ("plur_recall", json!({"query": "deploys"})),
        ("plur_recall_hybrid", json!({"query": "deploys"})),
        ("plur_similarity_search", json!({"query": "deploys"})),
    ] {
        let e = err(&app, &token, tool, args).await;
        assert_eq!(
            (e["code"].clone(), e["details"]["reason"].clone()),
            (json!("plugin_unavailable"), json!("not_configured"))
        );
        assert!(e["hint"].as_str().unwrap().contains("query_entity_graph"), "{e}");
    }
    app.stop().await;

    // With one.
    let (fake, url) = fake_plur().await;
    let app = TestApp::spawn_with(|c| {
        c.memory.plur.base_url = Some(url.clone());
        c.memory.plur.api_key = Some(otc_config::Secret::new("plur-key"));
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let got = ok(&app, &token, "plur_get", json!({"engram_id": "e-1"})).await;
    assert_eq!(got["engram"]["text"], "Deploys go out on Tuesdays");
    assert_eq!(err(&app, &token, "plur_get", json!({"engram_id": "e-2"})).await["code"], "not_found");
    assert_eq!(err(&app, &token, "plur_get", json!({"engram_id": "../admin"})).await["code"], "invalid_input");
    let e = err(&app, &token, "plur_get", json!({"engram_id": "boom"})).await;
    assert_eq!((e["code"].clone(), e["retryable"].clone()), (json!("plugin_unreachable"), json!(true)));

    let recalled = ok(&app, &token, "plur_recall", json!({"query": " deploys ", "k": 3, "scope": "team"})).await;
    assert_eq!(recalled["results"]["echo"], json!({"query": "deploys", "k": 3, "scope": "team"}));
    let hybrid = ok(&app, &token, "plur_recall_hybrid", json!({"query": "deploys", "bm25_weight": 0.3})).await;
    assert_eq!(hybrid["results"]["echo"]["bm25_weight"], 0.3);
    let similar = ok(&app, &token, "plur_similarity_search", json!({"query": "deploys", "min_score": 0.5})).await;
    assert_eq!(similar["results"]["echo"]["min_score"], 0.5);
    assert_eq!(similar["results"]["echo"]["k"], 10);
    for (tool, args) in [
        ("plur_recall", json!({"query": "   "})),
        ("plur_recall_hybrid", json!({"query": "x", "bm25_weight": 1.5})),
        ("plur_similarity_search", json!({"query": "x", "min_score": -1})),
    ] {
        let e = err(&app, &token, tool, args).await;
        assert!(matches!(e["code"].as_str(), Some("invalid_input" | "validation_error")), "{tool}: {e}");
    }
    let seen = fake.seen.lock().unwrap().clone();
    assert!(
        seen.iter().all(|r| r["tenant"] == json!(tenant.id.to_string()) && r["auth"] == "Bearer plur-key"),
        "{seen:?}"
    );
    assert!(seen.iter().all(|r| r["principal"].as_str().is_some_and(|p| !p.is_empty())));
    let routes: Vec<&str> = seen.iter().map(|r| r["route"].as_str().unwrap()).collect();
    assert_eq!(routes, ["/engrams/e-1", "/engrams/e-2", "/engrams/boom", "recall", "recall", "recall"]);

    // The scope is read:plur.
    let reader = token_for(&app, &tenant, "bob", "read:notes").await;
    let e = err(&app, &reader, "plur_recall", json!({"query": "deploys"})).await;
    assert_eq!((e["code"].clone(), e["details"]["required"].clone()), (json!("forbidden"), json!(["read:plur"])));
    app.stop().await;
}
