//! Embeddings and semantic search: the local model (all-MiniLM-L6-v2 through ONNX Runtime, from
//! `scripts/models`) end to end, and an OpenAI-compatible provider faked at its HTTP boundary
//! (the one fake allowed: a paid API) for a model change, a failing provider and its recovery.
//! Vectors are made by the embedding work (`Embedding::drain` here, the workers in
//! production), never by the write that changed the note.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use axum::Json;
use axum::extract::State;
use otc_config::{Config, EmbeddingProvider};
use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp};
use crate::mcp::{call_on, error_of};
use crate::write::{err, ok};

const V: &str = "Notes";

pub(crate) fn local(c: &mut Config) {
    let var = |name: &str| {
        Some(std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: scripts/test runs scripts/models")))
    };
    c.embeddings.provider = EmbeddingProvider::Local;
    c.embeddings.local_library = var("OTC_TEST_EMBEDDING_LIBRARY");
    c.embeddings.local_model = var("OTC_TEST_EMBEDDING_MODEL");
    c.embeddings.local_tokenizer = var("OTC_TEST_EMBEDDING_TOKENIZER");
    c.tools.confirm_destructive = false;
}

const NOTES: &[(&str, &str)] = &[
    (
        "Garden/Tomatoes.md",
        "# Growing tomatoes\nWater the plants every morning and stake the vines so the fruit stays off the soil. \
         Links: [[Budget]].\n",
    ),
    (
        "Finance/Budget.md",
        "# Quarterly budget\nSpending on cloud servers rose; we will cut hosting costs next quarter.\n",
    ),
    ("Pets/Dog.md", "# Walking the dog\nTake the puppy out twice a day on a leash, and bring treats.\n"),
    (
        "Travel/Japan.md",
        "# Trip to Tokyo\nFlights, hotels and a rail pass for two weeks in Japan. Costs: [[Budget]].\n",
    ),
    ("Private/Salaries.md", "# Salaries\nCompensation and payroll for the engineering team this year.\n"),
];

fn paths(hits: &Value) -> Vec<String> {
    hits.as_array().unwrap().iter().map(|h| h["path"].as_str().unwrap().to_string()).collect()
}

/// The vault's vector count per model, straight from the store.
async fn vectors(app: &TestApp, tenant: &Tenant) -> Vec<(String, i64, bool)> {
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let status = tx.embedding_status(tenant.vault_id).await.unwrap();
    tx.commit().await.unwrap();
    status.models.iter().zip(&status.vectors).map(|(m, n)| (m.model.clone(), *n, m.complete)).collect()
}

async fn drain(app: &TestApp, tenant: &Tenant) -> otc_indexer::embedding::EmbedReport {
    app.deps.embedding.drain(tenant.id, tenant.vault_id).await.expect("the embedding work runs")
}

#[tokio::test]
async fn the_local_model_embeds_off_the_request_path_and_search_finds_by_meaning() {
    let app = TestApp::spawn_with(|c| {
        local(c);
        // This tenant's people do not see Private/.
        c.acl.push(otc_config::AclEntry {
            tenant: Some("acme".into()),
            vault: V.into(),
            read_paths: Some(vec![
                "Garden/**".into(),
                "Finance/**".into(),
                "Pets/**".into(),
                "Travel/**".into(),
                "Animals/**".into(),
            ]),
            write_paths: None,
            delete_paths: None,
        });
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let changes: Vec<(&str, Option<&str>)> = NOTES.iter().map(|(p, t)| (*p, Some(*t))).collect();
    app.seed(&token, V, &changes).await;

    // The write answered (and was indexed) without a vector being made: that is the workers'.
    assert!(vectors(&app, &tenant).await.iter().all(|(_, n, _)| *n == 0));
    let status = ok(&app, &token, "get_index_status", json!({})).await;
    let e = &status["vaults"][0]["embeddings"];
    assert_eq!(status["vaults"][0]["vec_enabled"], true, "{status}");
    assert_eq!(e["state"], "embedding", "{status}");
    assert!(e["queued_jobs"].as_i64().unwrap() >= 1, "{status}");

    let report = drain(&app, &tenant).await;
    assert!(report.embedded >= NOTES.len(), "{report:?}");
    let sets = vectors(&app, &tenant).await;
    assert_eq!(sets.len(), 1, "{sets:?}");
    assert_eq!(sets[0].0, otc_embed::local::MINILM_MODEL);
    assert!(sets[0].1 >= NOTES.len() as i64 && sets[0].2, "{sets:?}");
    let status = ok(&app, &token, "get_index_status", json!({})).await;
    let e = &status["vaults"][0]["embeddings"];
    assert_eq!(e["state"], "ready", "{status}");
    assert_eq!(e["sets"][0]["state"], "complete");
    assert_eq!(e["sets"][0]["missing"], 0);
    assert_eq!(e["sets"][0]["dims"], 384);

    // By meaning, in other words than the notes use.
    for (query, expected) in [
        ("caring for vegetable plants in the garden", "Garden/Tomatoes.md"),
        ("how much we pay for infrastructure", "Finance/Budget.md"),
        ("holiday in Asia", "Travel/Japan.md"),
        ("taking a pet for a stroll", "Pets/Dog.md"),
    ] {
        let out = ok(&app, &token, "search_semantic", json!({"vault": V, "query": query, "k": 3})).await;
        assert_eq!(paths(&out["hits"])[0], expected, "{query}: {out}");
        assert_eq!(out["model"], otc_embed::local::MINILM_MODEL);
        assert!(out.get("partial").is_none(), "{out}");
    }
    // Content, root, min_score, detailed.
    let out = ok(
        &app,
        &token,
        "search_semantic",
        json!({"vault": V, "query": "tomato plants", "k": 5, "return_content": true, "response_format": "detailed"}),
    )
    .await;
    let first = &out["hits"][0];
    assert_eq!(first["path"], "Garden/Tomatoes.md");
    assert!(first["content"].as_str().unwrap().contains("stake the vines"), "{out}");
    assert_eq!(first["section"], "Growing tomatoes");
    assert_eq!(first["line"], 1);
    assert_eq!(first["chunk_id"], 0);
    let out = ok(&app, &token, "search_semantic", json!({"vault": V, "query": "tomato plants", "root": "Pets"})).await;
    assert_eq!(paths(&out["hits"]), ["Pets/Dog.md"], "{out}");
    let out =
        ok(&app, &token, "search_semantic", json!({"vault": V, "query": "tomato plants", "min_score": 0.99})).await;
    assert!(out["hits"].as_array().unwrap().is_empty(), "{out}");

    // The hidden note never surfaces, whatever the query says.
    for (tool, args) in [
        ("search_semantic", json!({"vault": V, "query": "payroll and compensation of engineers", "k": 100})),
        (
            "search_vault",
            json!({"vault": V, "query": "payroll compensation salaries", "mode": "semantic", "limit": 100}),
        ),
        ("search_vault", json!({"vault": V, "query": "payroll compensation salaries", "mode": "hybrid", "limit": 100})),
    ] {
        let out = ok(&app, &token, tool, args.clone()).await;
        let found = paths(&out["hits"]);
        assert!(!found.is_empty() && !found.iter().any(|p| p.starts_with("Private/")), "{tool} {args}: {out}");
    }
    let out =
        ok(&app, &token, "search_and_read", json!({"vault": V, "query": "payroll", "mode": "semantic", "k": 20})).await;
    assert!(out["results"].as_array().unwrap().iter().all(|r| !r["path"].as_str().unwrap().starts_with("Private/")));

    // search_vault: semantic and hybrid (keywords and meaning fused).
    let out =
        ok(&app, &token, "search_vault", json!({"vault": V, "query": "vegetable gardening", "mode": "semantic"})).await;
    assert_eq!(out["mode"], "semantic");
    assert_eq!(paths(&out["hits"])[0], "Garden/Tomatoes.md", "{out}");
    assert!(out["hits"][0]["snippet"].as_str().unwrap().contains("tomatoes"), "{out}");
    let out =
        ok(&app, &token, "search_vault", json!({"vault": V, "query": "leash puppy", "mode": "hybrid", "limit": 2}))
            .await;
    assert_eq!(out["mode"], "hybrid");
    assert_eq!(paths(&out["hits"])[0], "Pets/Dog.md", "{out}");
    assert!(out["hits"][0]["snippet"].as_str().unwrap().contains("**leash**"), "the BM25 chunk's snippet: {out}");
    // The query language's filters hold in both halves; the operators are not embedded.
    let out =
        ok(&app, &token, "search_vault", json!({"vault": V, "query": "money costs path:travel", "mode": "hybrid"}))
            .await;
    assert_eq!(paths(&out["hits"]), ["Travel/Japan.md"], "{out}");
    let out =
        ok(&app, &token, "search_vault", json!({"vault": V, "query": "money tag:nowhere", "mode": "semantic"})).await;
    assert!(out["hits"].as_array().unwrap().is_empty(), "{out}");
    let e = err(&app, &token, "search_vault", json!({"vault": V, "query": "tag:x -y", "mode": "semantic"})).await;
    assert_eq!(e["code"], "invalid_input", "{e}");
    // Paging through the fused ranking covers every note once.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"vault": V, "query": "costs", "mode": "hybrid", "limit": 1});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let out = ok(&app, &token, "search_vault", args).await;
        seen.extend(paths(&out["hits"]));
        match out.get("next_cursor").and_then(|c| c.as_str()) {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), seen.len(), "no note twice: {seen:?}");
    assert_eq!(seen.len(), 4, "every readable note once: {seen:?}");

    // search_and_read's semantic mode returns whole notes ranked by meaning.
    let out = ok(
        &app,
        &token,
        "search_and_read",
        json!({"vault": V, "query": "vacation abroad", "mode": "semantic", "k": 1, "response_format": "detailed"}),
    )
    .await;
    assert_eq!(out["results"][0]["path"], "Travel/Japan.md", "{out}");
    assert!(out["results"][0]["body"].as_str().unwrap().contains("rail pass"));
    assert_eq!(out["results"][0]["section"], "Trip to Tokyo");
    assert!(out.get("next_cursor").is_some());

    // suggest_links: Japan links to Budget; Tomatoes links there too (a shared target), and
    // Budget is already linked, so it is not suggested. Private/ never is.
    let out = ok(
        &app,
        &token,
        "suggest_links",
        json!({"vault": V, "path": "Travel/Japan.md", "response_format": "detailed"}),
    )
    .await;
    let suggested = paths(&out["suggestions"]);
    assert!(suggested.contains(&"Garden/Tomatoes.md".to_string()), "{out}");
    assert!(
        !suggested.iter().any(|p| p == "Finance/Budget.md" || p == "Travel/Japan.md" || p.starts_with("Private/")),
        "{out}"
    );
    let tomatoes = out["suggestions"].as_array().unwrap().iter().find(|s| s["path"] == "Garden/Tomatoes.md").unwrap();
    assert_eq!(tomatoes["shared_targets"], 1, "{out}");
    assert!(tomatoes["similarity"].is_number(), "{out}");
    assert!(out.get("links_only").is_none());
    // A note the caller cannot read is missing, as everywhere.
    let e = err(&app, &token, "suggest_links", json!({"vault": V, "path": "Private/Salaries.md"})).await;
    assert_eq!(e["code"], "note_not_found", "{e}");

    // A move: the old path's vectors go with the move; the new path's come from the cache (the
    // title, heading and text are the same), no model call.
    ok(&app, &token, "move_note", json!({"vault": V, "from": "Pets/Dog.md", "to": "Animals/Dog.md"})).await;
    let report = drain(&app, &tenant).await;
    assert_eq!(report.embedded, 0, "a rename costs no embedding: {report:?}");
    assert!(report.cached >= 1, "{report:?}");
    let out =
        ok(&app, &token, "search_semantic", json!({"vault": V, "query": "taking a pet for a stroll", "k": 1})).await;
    assert_eq!(paths(&out["hits"]), ["Animals/Dog.md"], "{out}");

    // An edit: the note's old vectors go with the write; the new text is embedded after.
    ok(
        &app,
        &token,
        "write_note",
        json!({"vault": V, "path": "Garden/Tomatoes.md", "mode": "overwrite",
               "content": "# Sourdough\nFeed the starter, knead the dough and bake the loaf in a hot oven.\n"}),
    )
    .await;
    let status = ok(&app, &token, "get_index_status", json!({})).await;
    assert_eq!(status["vaults"][0]["embeddings"]["state"], "embedding", "{status}");
    assert!(status["vaults"][0]["embeddings"]["sets"][0]["missing"].as_i64().unwrap() >= 1, "{status}");
    drain(&app, &tenant).await;
    let out = ok(&app, &token, "search_semantic", json!({"vault": V, "query": "baking bread at home", "k": 1})).await;
    assert_eq!(paths(&out["hits"]), ["Garden/Tomatoes.md"], "{out}");

    // A delete takes its vectors at once.
    ok(&app, &token, "delete_note", json!({"vault": V, "path": "Finance/Budget.md"})).await;
    let out = ok(
        &app,
        &token,
        "search_semantic",
        json!({"vault": V, "query": "how much we pay for infrastructure", "k": 10}),
    )
    .await;
    assert!(!paths(&out["hits"]).contains(&"Finance/Budget.md".to_string()), "{out}");
    let status = ok(&app, &token, "get_index_status", json!({})).await;
    assert_eq!(status["vaults"][0]["embeddings"]["sets"][0]["missing"], 0, "{status}");
}

#[tokio::test]
async fn vectors_never_cross_tenants() {
    let app = TestApp::spawn_with(local).await;
    let a = Tenant::create(&app.store, "tenant-a").await;
    let b = Tenant::create(&app.store, "tenant-b").await;
    let (ta, _) = a.token(&app.store, "*", false, None).await;
    let (tb, _) = b.token(&app.store, "*", false, None).await;
    app.seed(&ta, V, &[("Secret plan.md", Some("# Acquisition\nWe will buy the competitor in March."))]).await;
    app.seed(&tb, V, &[("Groceries.md", Some("# Shopping\nMilk, eggs and bread."))]).await;
    drain(&app, &a).await;
    drain(&app, &b).await;
    // The same text in both tenants is embedded in each (the cache is per tenant too).
    app.seed(&tb, V, &[("Copy.md", Some("# Acquisition\nWe will buy the competitor in March."))]).await;
    let report = drain(&app, &b).await;
    assert!(report.embedded >= 1 && report.cached == 0, "B's cache does not hold A's texts: {report:?}");
    let out = ok(&app, &tb, "search_semantic", json!({"vault": V, "query": "buying a rival company", "k": 100})).await;
    assert_eq!(paths(&out["hits"])[0], "Copy.md", "{out}");
    assert!(!paths(&out["hits"]).contains(&"Secret plan.md".to_string()));
    let out = ok(&app, &ta, "search_semantic", json!({"vault": V, "query": "milk and eggs", "k": 100})).await;
    assert_eq!(paths(&out["hits"]), ["Secret plan.md"], "{out}");
    let out = ok(&app, &ta, "suggest_links", json!({"vault": V, "path": "Secret plan.md"})).await;
    assert!(out["suggestions"].as_array().unwrap().is_empty(), "{out}");
}

/// A fake OpenAI-compatible provider: a bag-of-words vector (each word hashed to one of the
/// model's dimensions), so texts sharing words are near; the dimension depends on the model.
#[derive(Default)]
struct Fake {
    failing: AtomicBool,
    calls: AtomicUsize,
    models: std::sync::Mutex<Vec<String>>,
    /// Every text sent.
    texts: std::sync::Mutex<Vec<String>>,
}

fn dims_of(model: &str) -> usize {
    if model == "fake-b" { 24 } else { 16 }
}

async fn embeddings(State(fake): State<Arc<Fake>>, Json(body): Json<Value>) -> axum::response::Response {
    use axum::response::IntoResponse;
    fake.calls.fetch_add(1, Ordering::SeqCst);
    let model = body["model"].as_str().unwrap().to_string();
    fake.models.lock().unwrap().push(model.clone());
    fake.texts
        .lock()
        .unwrap()
        .extend(body["input"].as_array().into_iter().flatten().filter_map(|t| t.as_str().map(String::from)));
    if fake.failing.load(Ordering::SeqCst) {
        return (axum::http::StatusCode::SERVICE_UNAVAILABLE, Json(json!({"error": {"message": "overloaded"}})))
            .into_response();
    }
    let dims = dims_of(&model);
    let data: Vec<Value> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let mut v = vec![0.01f32; dims];
            for word in text.as_str().unwrap().split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 2) {
                let h = word.to_lowercase().bytes().fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32));
                v[h as usize % dims] += 1.0;
            }
            json!({"index": i, "embedding": v})
        })
        .collect();
    Json(json!({"data": data, "usage": {"prompt_tokens": 5, "total_tokens": 5}})).into_response()
}

async fn fake_provider() -> (Arc<Fake>, String) {
    let fake = Arc::new(Fake::default());
    let app = axum::Router::new().route("/v1/embeddings", axum::routing::post(embeddings)).with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (fake, url)
}

fn openai(url: &str, model: &str) -> impl FnOnce(&mut Config) {
    let (url, model) = (url.to_string(), model.to_string());
    move |c: &mut Config| {
        c.embeddings.provider = EmbeddingProvider::Openai;
        c.embeddings.base_url = url;
        c.embeddings.dims = dims_of(&model);
        c.embeddings.model = model;
        c.embeddings.api_key = Some(otc_config::Secret::new("sk-test"));
        c.embeddings.max_attempts = 1;
        c.worker.index_max_attempts = 2;
        c.worker.index_max_backoff_secs = 0;
    }
}

#[tokio::test]
async fn a_model_change_re_embeds_in_the_background_and_a_failing_provider_recovers() {
    let (fake, url) = fake_provider().await;
    let app = TestApp::spawn_with(openai(&url, "fake-a")).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    app.seed(
        &token,
        V,
        &[
            ("Birds.md", Some("# Birds\nSparrows and robins nest in the hedge.")),
            ("Boats.md", Some("# Boats\nSailing dinghies race on the lake.")),
        ],
    )
    .await;
    drain(&app, &tenant).await;
    let out = ok(&app, &token, "search_semantic", json!({"vault": V, "query": "robins nest", "k": 1})).await;
    assert_eq!(
        (paths(&out["hits"]), out["model"].clone()),
        (vec!["Birds.md".to_string()], json!("fake-a@16")),
        "{out}"
    );

    // The configuration moves to fake-b (another dimension): a second deployment of the same
    // data, as after a rolling update.
    let mut config = app.iso.config();
    openai(&url, "fake-b")(&mut config);
    let deps = obsidian_tc::app::Deps::new(&config).unwrap();
    let upkeep = deps.embedding.maintain().await.unwrap();
    assert_eq!(upkeep.sets_started, 1, "{upkeep:?}");
    let gateway = obsidian_tc::app::start_gateway(&config, &deps, std::future::pending()).await.unwrap();
    let base = format!("http://{}", gateway.addr);
    // Until fake-b's set is complete, search keeps using fake-a's vectors (and embeds the query
    // with fake-a).
    fake.models.lock().unwrap().clear();
    let out =
        call_on(&app, &base, &token, "search_semantic", json!({"vault": V, "query": "sailing race", "k": 1})).await;
    assert_eq!(out["structuredContent"]["model"], "fake-a@16", "{out}");
    assert_eq!(paths(&out["structuredContent"]["hits"]), ["Boats.md"], "{out}");
    assert_eq!(*fake.models.lock().unwrap(), ["fake-a"]);
    let report = deps.embedding.drain(tenant.id, tenant.vault_id).await.unwrap();
    assert!(report.embedded >= 2, "{report:?}");
    let sets = vectors(&app, &tenant).await;
    assert_eq!(sets, [("fake-b@24".to_string(), 2, true)], "fake-a's set is retired once fake-b's is complete");
    let out =
        call_on(&app, &base, &token, "search_semantic", json!({"vault": V, "query": "sailing race", "k": 1})).await;
    assert_eq!(out["structuredContent"]["model"], "fake-b@24", "{out}");
    assert_eq!(paths(&out["structuredContent"]["hits"]), ["Boats.md"]);

    // The provider fails: the jobs back off, then go to the dead letters with the error, and
    // keyword search still answers while semantic search says what is wrong.
    fake.failing.store(true, Ordering::SeqCst);
    app.seed(&token, V, &[("Trains.md", Some("# Trains\nThe night train leaves at ten."))]).await;
    for _ in 0..2 {
        assert!(deps.embedding.vault_pass(tenant.id, tenant.vault_id).await.is_err());
    }
    let status = call_on(&app, &base, &token, "get_index_status", json!({})).await;
    let e = &status["structuredContent"]["vaults"][0]["embeddings"];
    assert_eq!(e["state"], "degraded", "{status}");
    assert_eq!(e["dead_jobs"], 1, "{status}");
    assert!(e["last_error"].as_str().unwrap().starts_with("embedding_provider"), "{status}");
    let out = call_on(&app, &base, &token, "search_semantic", json!({"vault": V, "query": "night train"})).await;
    let error = error_of(&out);
    assert_eq!(error["code"], "embedding_provider_error", "{out}");
    assert_eq!(error["details"]["reason"], "provider_failed");
    assert!(!error.to_string().contains("overloaded"), "the provider's own words stay in the log: {error}");
    let out = call_on(&app, &base, &token, "search_vault", json!({"vault": V, "query": "night train"})).await;
    assert_eq!(paths(&out["structuredContent"]["hits"]), ["Trains.md"], "{out}");

    // It recovers: upkeep gives dead jobs another round, and they succeed.
    fake.failing.store(false, Ordering::SeqCst);
    let recovering = otc_indexer::embedding::Embedding::new(
        deps.store.clone(),
        deps.blobs.clone(),
        deps.embeddings.clone(),
        otc_indexer::embedding::EmbedSettings { revive_after: std::time::Duration::ZERO, ..Default::default() },
    );
    assert_eq!(recovering.maintain().await.unwrap().jobs_revived, 1);
    recovering.drain(tenant.id, tenant.vault_id).await.unwrap();
    let out =
        call_on(&app, &base, &token, "search_semantic", json!({"vault": V, "query": "night train", "k": 1})).await;
    assert_eq!(paths(&out["structuredContent"]["hits"]), ["Trains.md"], "{out}");
    let status = call_on(&app, &base, &token, "get_index_status", json!({})).await;
    assert_eq!(status["structuredContent"]["vaults"][0]["embeddings"]["state"], "ready", "{status}");

    // The tenant's usage is counted per model.
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let usage = tx.embedding_usage(chrono::Utc::now().date_naive() - chrono::Duration::days(1)).await.unwrap();
    tx.commit().await.unwrap();
    let b = usage.iter().find(|u| u.model == "fake-b@24").expect("fake-b's usage");
    assert!(b.requests >= 2 && b.tokens >= 10 && b.embedded >= 3, "{usage:?}");
    gateway.stop().await.unwrap();
}

#[tokio::test]
async fn without_a_provider_semantic_modes_say_so_and_links_still_suggest() {
    let app = TestApp::spawn_with(|c| {
        c.acl.push(otc_config::AclEntry {
            tenant: Some("acme".into()),
            vault: V.into(),
            read_paths: Some(vec!["*.md".into()]),
            write_paths: None,
            delete_paths: None,
        });
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    app.seed(
        &token,
        V,
        &[
            ("A.md", Some("links [[C]] and [[H]]")),
            ("B.md", Some("also [[C]] and [[A]]")),
            ("C.md", Some("target")),
            // D shares only a hidden target with A: suggesting it would say the hidden note exists.
            ("D.md", Some("only [[H]]")),
            ("Hidden/H.md", Some("hidden")),
        ],
    )
    .await;
    let e = err(&app, &token, "search_semantic", json!({"vault": V, "query": "x"})).await;
    assert_eq!(
        (e["code"].clone(), e["details"]["reason"].clone()),
        (json!("embedding_provider_error"), json!("not_configured"))
    );
    let e = err(&app, &token, "search_and_read", json!({"vault": V, "query": "x", "mode": "semantic"})).await;
    assert_eq!(e["code"], "embedding_provider_error");
    // B links to A and shares C with it: suggested from the link graph alone.
    let out =
        ok(&app, &token, "suggest_links", json!({"vault": V, "path": "A.md", "response_format": "detailed"})).await;
    assert_eq!(paths(&out["suggestions"]), ["B.md"], "{out}");
    assert_eq!(out["links_only"], true);
    assert_eq!(out["suggestions"][0]["links_here"], true);
    assert_eq!(out["suggestions"][0]["shared_targets"], 1);
    let status = ok(&app, &token, "get_index_status", json!({})).await;
    assert_eq!(status["vaults"][0]["vec_enabled"], false);
    assert!(status["vaults"][0].get("embeddings").is_none());
    // Nothing queues embed jobs without a provider.
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    assert_eq!(tx.embedding_status(tenant.vault_id).await.unwrap().queued_jobs, 0);
    tx.commit().await.unwrap();
}

/// A provider that cannot be reached ends the pass and is left alone for a while: the next
/// pass sends it nothing, and the other tenants' jobs wait with no attempt spent. Once it
/// answers again (after the wait) every tenant's notes are embedded.
#[tokio::test]
async fn a_provider_that_cannot_be_reached_is_left_alone_without_spending_other_tenants_attempts() {
    let (fake, url) = fake_provider().await;
    let app = TestApp::spawn_with(openai(&url, "fake-a")).await;
    let mut tenants = Vec::new();
    for name in ["one", "two", "three"] {
        let tenant = Tenant::create(&app.store, name).await;
        let (token, _) = tenant.token(&app.store, "*", false, None).await;
        app.seed(&token, V, &[("Note.md", Some(&format!("# {name}\nWords about {name} and the sea.")))]).await;
        tenants.push(tenant);
    }
    fake.failing.store(true, Ordering::SeqCst);
    let before = fake.calls.load(Ordering::SeqCst);
    let report = app.deps.embedding.run_once().await.unwrap();
    assert_eq!(report.embedded, 0);
    assert_eq!(fake.calls.load(Ordering::SeqCst) - before, 1, "the pass ended at the first failure");
    app.deps.embedding.run_once().await.unwrap();
    assert_eq!(fake.calls.load(Ordering::SeqCst) - before, 1, "the next pass leaves the provider alone");
    let mut untouched = 0;
    for tenant in &tenants {
        let mut tx = app.store.begin(tenant.id).await.unwrap();
        let status = tx.embedding_status(tenant.vault_id).await.unwrap();
        tx.commit().await.unwrap();
        untouched += usize::from(status.last_error.is_none());
    }
    assert_eq!(untouched, 2, "only the vault that met the failure has it on its jobs");

    fake.failing.store(false, Ordering::SeqCst);
    tokio::time::sleep(std::time::Duration::from_millis(5_200)).await;
    for _ in 0..20 {
        let report = app.deps.embedding.run_once().await.unwrap();
        if report.jobs_done == 0 && report.chunks == 0 {
            break;
        }
    }
    for tenant in &tenants {
        let sets = vectors(&app, tenant).await;
        assert!(sets.iter().any(|(model, n, _)| model == "fake-a@16" && *n > 0), "{}: {sets:?}", tenant.slug);
    }
}

#[tokio::test]
async fn notes_excluded_from_egress_never_reach_the_embedding_provider() {
    let (fake, url) = fake_provider().await;
    let app = TestApp::spawn_with(|c| {
        openai(&url, "fake-a")(c);
        c.egress.exclude_paths = vec!["Legal/**".into()];
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    // The tenant's own exclusion, beside the deployment's.
    let set = app
        .http
        .put(app.url("/v1/policies"))
        .bearer_auth(&token)
        .json(&json!({"egress_exclude_paths": ["HR"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(set.status(), 200);
    let set: Value = set.json().await.unwrap();
    assert_eq!(
        (set["egress_exclude_paths"].clone(), set["deployment_egress_exclude_paths"].clone()),
        (json!(["HR"]), json!(["Legal/**"]))
    );
    app.seed(
        &token,
        V,
        &[
            ("Birds.md", Some("# Birds\nSparrows and robins nest in the hedge.")),
            ("HR/Pay.md", Some("# Pay\nSALARY-SECRET-9931 robins")),
            ("Legal/Case.md", Some("# Case\nLITIGATION-SECRET-4417 robins")),
        ],
    )
    .await;
    drain(&app, &tenant).await;
    let sent = fake.texts.lock().unwrap().join("\n");
    assert!(sent.contains("Sparrows"), "what is not excluded is embedded: {sent}");
    assert!(!sent.contains("SALARY-SECRET") && !sent.contains("LITIGATION-SECRET"), "{sent}");
    // Semantic search finds what was embedded; the excluded notes stay findable by text.
    let out = ok(&app, &token, "search_semantic", json!({"vault": V, "query": "robins nest", "k": 3})).await;
    assert_eq!(paths(&out["hits"]), ["Birds.md"], "{out}");
    let out = ok(&app, &token, "search_text", json!({"vault": V, "query": "SALARY-SECRET-9931"})).await;
    assert!(out.to_string().contains("HR/Pay.md"), "{out}");
}

/// reset_vault_cache with embeddings: the vault's vectors go, the configured model's set starts
/// again, and the workers embed every chunk anew; another tenant's vectors stay.
#[tokio::test]
async fn resetting_a_vaults_embeddings_drops_its_vectors_and_the_workers_make_them_again() {
    let (_fake, url) = fake_provider().await;
    let app = TestApp::spawn_with(|c| {
        openai(&url, "fake-a")(c);
        c.tools.confirm_destructive = false;
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let other = Tenant::create(&app.store, "globex").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let (theirs, _) = other.token(&app.store, "*", false, None).await;
    let notes = [("Birds.md", Some("# Birds\nSparrows nest.")), ("Boats.md", Some("# Boats\nDinghies race."))];
    app.seed(&token, V, &notes).await;
    app.seed(&theirs, V, &notes).await;
    drain(&app, &tenant).await;
    drain(&app, &other).await;
    assert_eq!(vectors(&app, &tenant).await, [("fake-a@16".to_string(), 2, true)]);

    let out = ok(&app, &token, "reset_vault_cache", json!({"vault": V, "include": ["embeddings"]})).await;
    assert_eq!((out["vectors_dropped"].clone(), out["embedding_model"].clone()), (json!(2), json!("fake-a@16")));
    assert!(out.get("index").is_none(), "{out}");
    assert_eq!(vectors(&app, &tenant).await, [("fake-a@16".to_string(), 0, false)]);
    assert_eq!(vectors(&app, &other).await, [("fake-a@16".to_string(), 2, true)], "the other tenant's stay");
    // Unchanged text comes from the tenant's embedding cache rather than the provider again.
    let report = drain(&app, &tenant).await;
    assert_eq!(report.embedded + report.cached, 2, "{report:?}");
    assert_eq!(vectors(&app, &tenant).await, [("fake-a@16".to_string(), 2, true)]);
    app.stop().await;
}
