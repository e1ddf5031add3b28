//! Retrieval and context through the MCP surface: graph-expanded search, the packed context
//! and its budget, the diagnosis of a retrieval, the gap detector, the chain behind an answer,
//! contradiction findings and the docs corpus; all under the folder ACL.

use serde_json::{Value, json};

use crate::acl::token_for;
use crate::harness::{Tenant, TestApp};
use crate::write::{err, ok};

const V: &str = "Notes";

fn paths(hits: &Value) -> Vec<String> {
    hits.as_array().unwrap().iter().map(|h| h["path"].as_str().unwrap().to_string()).collect()
}

/// A vault with a linked pair (Ops/Deploy links Ops/Regions, which never says "canary"), a
/// lesson, a wiki synthesis, a docs corpus, and a hidden Secret/ folder that links and is linked.
async fn app() -> (TestApp, Tenant, String) {
    let app = TestApp::spawn_with(|c| {
        c.tools.confirm_destructive = false;
        c.wiki.folder = Some("wiki".into());
        let visible = Some(["Ops/**", "Lessons/**", "wiki/**", "Docs/**"].map(String::from).to_vec());
        c.acl.push(otc_config::AclEntry {
            tenant: Some("acme".into()),
            vault: V.into(),
            read_paths: visible,
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
            ("Ops/Deploy.md", Some("# Deploy\n\nRun the canary first, then roll out by region. See [[Regions]].\n")),
            ("Ops/Regions.md", Some("# Regions\n\nEurope goes first, then the Americas, then Asia.\n")),
            ("Ops/Rollback.md", Some("# Rollback\n\nRevert the release tag. [[Secret Plan]]\n")),
            ("Lessons/Canary.md", Some("---\ntags: [lesson]\n---\n# Lesson\n\nA canary that skipped metrics hid an outage.\n")),
            ("wiki/Deployments.md", Some("# Deployments\n\nThe canary rollout process, summarised from Ops.\n")),
            ("Secret/Secret Plan.md", Some("# Plan\n\nThe canary budget is CLASSIFIED-9931. [[Deploy]]\n")),
            (
                "Docs/Runbook.md",
                Some("---\nseverity: critical\ntitle: Incident runbook\ncategory: ops\nsource: confluence\n---\n# Runbook\n\nPage the canary owner first.\n"),
            ),
            ("Docs/Style.md", Some("---\nseverity: low\n---\n# Style\n\nWrite short canary notes.\n")),
            ("Docs/Paging.md", Some("---\nseverity: critical\nsource: pagerduty\n---\n# Paging\n\nEscalate after ten minutes.\n")),
        ],
    )
    .await;
    (app, tenant, token)
}

#[tokio::test]
async fn graph_search_expands_along_links_and_context_packs_within_its_budget() {
    let (app, tenant, token) = app().await;

    let found =
        ok(&app, &token, "vault_graph_search", json!({"vault": V, "query": "canary", "response_format": "detailed"}))
            .await;
    let hits = found["hits"].as_array().unwrap();
    let text = found.to_string();
    assert!(!text.contains("CLASSIFIED") && !text.contains("Secret"), "the hidden folder never shows: {found}");
    assert_eq!(found["mode_used"], "keyword", "no embedding provider here");
    let deploy = hits.iter().find(|h| h["path"] == "Ops/Deploy.md").expect("a direct hit");
    assert_eq!((deploy["hop"].clone(), deploy["arm"].clone()), (json!(0), json!("keyword")));
    assert!(deploy["chunk_id"].as_str().unwrap().starts_with("Ops/Deploy.md#"), "{deploy}");
    let regions = hits.iter().find(|h| h["path"] == "Ops/Regions.md").expect("reached through the link: {found}");
    assert_eq!(
        (regions["hop"].clone(), regions["edge"].clone(), regions["seed"].clone()),
        (json!(1), json!("links_to"), json!("Ops/Deploy.md"))
    );
    assert!(regions["content"].as_str().unwrap().contains("Europe"), "{regions}");
    assert!(hits[0]["rerank_score"] == 1.0 && hits.iter().all(|h| h["changed_since_d"].as_f64().unwrap() < 1.0));
    let concise = ok(
        &app,
        &token,
        "vault_graph_search",
        json!({"vault": V, "query": "canary", "vaults": ["Elsewhere"], "final_top_k": 2, "response_format": "concise"}),
    )
    .await;
    assert_eq!(concise["hits"].as_array().unwrap().len(), 2);
    assert!(concise["hits"][0].get("arm").is_none() && concise.get("route").is_none(), "{concise}");
    assert_eq!(concise["failed_vaults"], json!([{"vault": "Elsewhere", "reason": "vault_not_found"}]));
    let future =
        ok(&app, &token, "vault_graph_search", json!({"vault": V, "query": "canary", "since": "2999-01-01"})).await;
    assert!(future["hits"].as_array().unwrap().is_empty(), "{future}");
    let e = err(&app, &token, "vault_graph_search", json!({"vault": V, "query": "  "})).await;
    assert_eq!(e["code"], "invalid_input");
    let e = err(
        &app,
        &token,
        "vault_graph_search",
        json!({"vault": V, "query": "a", "queries": ["b", "c", "d", "e", "f"]}),
    )
    .await;
    assert_eq!(e["details"]["field"], "queries");

    // The packed context: safety signals first, within the budget; what did not fit is named.
    let deploy_hash =
        ok(&app, &token, "read_note", json!({"vault": V, "path": "Ops/Deploy.md"})).await["content_hash"].clone();
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let vault = tx.vault_by_name(V).await.unwrap().unwrap();
    let finding = |b: &'static str| otc_store::NewContradiction {
        path_a: "Ops/Deploy.md",
        path_b: b,
        hash_a: "h1",
        hash_b: "h2",
        statement_a: "Run the canary first",
        statement_b: "Skip the canary",
        rationale: "One requires the canary, the other skips it.",
        model: "test",
    };
    assert!(tx.add_contradiction(vault.id, &finding("Ops/Rollback.md")).await.unwrap());
    assert!(tx.add_contradiction(vault.id, &finding("Secret/Secret Plan.md")).await.unwrap());
    tx.commit().await.unwrap();
    assert!(deploy_hash.is_string());
    let packed = ok(
        &app,
        &token,
        "vault_context",
        json!({"vault": V, "query": "canary", "token_budget": 32000, "response_format": "detailed"}),
    )
    .await;
    let text = packed.to_string();
    assert!(!text.contains("CLASSIFIED") && !text.contains("Secret"), "{packed}");
    assert_eq!(
        packed["contradictions"].as_array().unwrap().len(),
        1,
        "a finding with a hidden side is left out: {packed}"
    );
    assert_eq!(packed["lessons"][0]["path"], "Lessons/Canary.md", "{packed}");
    assert_eq!(packed["syntheses"][0]["path"], "wiki/Deployments.md", "{packed}");
    let packed_paths: Vec<&str> =
        packed["notes"].as_array().unwrap().iter().map(|n| n["path"].as_str().unwrap()).collect();
    assert!(packed_paths.contains(&"Ops/Deploy.md"), "{packed}");
    let budget = &packed["budget"];
    assert!(budget["tokens_used"].as_u64().unwrap() <= budget["token_budget"].as_u64().unwrap());
    let small = ok(
        &app,
        &token,
        "vault_context",
        json!({"vault": V, "query": "canary", "token_budget": 100, "response_format": "detailed"}),
    )
    .await;
    let used = small["budget"]["tokens_used"].as_u64().unwrap();
    assert!(used <= 100, "{small}");
    assert!(!small["prefetch"]["chunk_ids"].as_array().unwrap().is_empty(), "what did not fit is named: {small}");
    let concise =
        ok(&app, &token, "vault_context", json!({"vault": V, "query": "canary", "response_format": "concise"})).await;
    assert!(concise.get("budget").is_none() && concise["notes"][0]["chunks"][0].get("source").is_none(), "{concise}");
    assert_eq!(concise["contradictions"].as_array().unwrap().len(), 1, "concise keeps the safety signal");
    let recent = ok(
        &app,
        &token,
        "vault_context",
        json!({"vault": V, "k": 3, "since": "2020-01-01", "response_format": "detailed"}),
    )
    .await;
    assert_eq!(recent["query_source"], "recent_changes");
    assert!(!recent["notes"].as_array().unwrap().is_empty() && !recent.to_string().contains("CLASSIFIED"), "{recent}");
    assert!(
        recent["diff_since"].as_array().unwrap().iter().all(|c| !c["path"].as_str().unwrap().starts_with("Secret/"))
    );

    // Work episodes join the context once a verdict made them eligible.
    ok(&app, &token, "start_session", json!({"vault": V, "caller": "agent"})).await;
    ok(&app, &token, "read_note", json!({"vault": V, "path": "Ops/Regions.md"})).await;
    ok(&app, &token, "work_result", json!({"result": 1})).await;
    let with_work = ok(&app, &token, "vault_context", json!({"vault": V, "query": "Regions"})).await;
    assert_eq!(with_work["episodes"][0]["tool"], "read_note", "{with_work}");
    let without = ok(
        &app,
        &token,
        "vault_context",
        json!({"vault": V, "query": "Regions", "include_work": false, "include_lessons": false}),
    )
    .await;
    assert!(without["episodes"].as_array().unwrap().is_empty() && without["lessons"].as_array().unwrap().is_empty());
    app.stop().await;
}

#[tokio::test]
async fn diagnosis_gaps_explanations_contradictions_and_the_docs_corpus() {
    let (app, tenant, token) = app().await;

    // Why a note was or was not retrieved.
    let returned = ok(
        &app,
        &token,
        "diagnose_retrieval",
        json!({"vault": V, "query": "canary", "path": "Ops/Deploy.md", "response_format": "detailed"}),
    )
    .await;
    assert_eq!(
        (returned["returned"].clone(), returned["stages"]["keyword_rank"].is_u64()),
        (json!(true), true),
        "{returned}"
    );
    let missed =
        ok(&app, &token, "diagnose_retrieval", json!({"vault": V, "query": "canary", "path": "Docs/Paging.md"})).await;
    assert_eq!(
        (missed["returned"].clone(), missed["dropped_at"].clone()),
        (json!(false), json!("no_match")),
        "{missed}"
    );
    let cut = ok(
        &app,
        &token,
        "diagnose_retrieval",
        json!({"vault": V, "query": "canary", "path": "Docs/Style.md", "final_top_k": 1}),
    )
    .await;
    assert_eq!(cut["dropped_at"], "final_top_k", "{cut}");
    for hidden in ["Secret/Secret Plan.md", "Ops/Nope.md"] {
        let e = err(&app, &token, "diagnose_retrieval", json!({"vault": V, "query": "canary", "path": hidden})).await;
        assert_eq!(e["code"], "note_not_found", "hidden and missing answer alike");
    }

    // The gap detector: what each caller asked and whether the vault answered it.
    ok(&app, &token, "vault_graph_search", json!({"vault": V, "query": "zebra migration"})).await;
    ok(&app, &token, "vault_graph_search", json!({"vault": V, "query": "canary"})).await;
    ok(&app, &token, "vault_graph_search", json!({"vault": V, "query": "Canary"})).await;
    let report = ok(&app, &token, "gap_report", json!({"vault": V, "response_format": "detailed"})).await;
    assert_eq!(
        (report["total_queries"].clone(), report["total_gaps"].clone(), report["scope"].clone()),
        (json!(2), json!(1), json!("vault"))
    );
    let canary = report["queries"].as_array().unwrap().iter().find(|q| q["query"] == "Canary").unwrap().clone();
    assert_eq!((canary["gap"].clone(), canary["runs"].clone()), (json!(false), json!(2)), "{canary}");
    assert_eq!(canary["results"][0], "Lessons/Canary.md", "the best three notes: {canary}");
    let gaps =
        ok(&app, &token, "gap_report", json!({"vault": V, "gaps_only": true, "response_format": "concise"})).await;
    assert_eq!(gaps["queries"].as_array().unwrap().len(), 1);
    assert_eq!(gaps["queries"][0]["query"], "zebra migration");
    assert!(gaps["queries"][0].get("nearest").is_none(), "concise keeps id, query, top_score, gap");
    let bob = token_for(&app, &tenant, "bob", "read:notes,read:workspace,write:workspace").await;
    let own = ok(&app, &bob, "gap_report", json!({"vault": V})).await;
    assert_eq!(
        (own["total_queries"].clone(), own["scope"].clone()),
        (json!(0), json!("own")),
        "another's queries are theirs"
    );

    // The chain behind an answer: retrievals, citations and the task's verdict.
    let none = ok(&app, &bob, "explain_answer", json!({"vault": V})).await;
    assert!(none["links"].as_array().unwrap().is_empty() && none["caveat"].is_string());
    let session = ok(&app, &bob, "start_session", json!({"vault": V, "caller": "agent"})).await;
    let searched = ok(&app, &bob, "vault_graph_search", json!({"vault": V, "query": "canary", "final_top_k": 3})).await;
    let chunk = searched["hits"][0]["chunk_id"].as_str().unwrap().to_string();
    let marked = ok(&app, &bob, "record_retrieval_feedback", json!({"chunk_id": chunk, "feedback": "useful"})).await;
    assert_eq!(marked["updated"], 1, "{marked}");
    ok(&app, &bob, "work_result", json!({"result": 1})).await;
    let chain = ok(
        &app,
        &bob,
        "explain_answer",
        json!({"vault": V, "session_id": session["session_id"], "response_format": "detailed"}),
    )
    .await;
    let links = chain["links"].as_array().unwrap();
    assert_eq!(links.len(), 3, "the hits vault_graph_search answered, not its arms' candidates: {chain}");
    let cited = links.iter().find(|l| l["chunk_id"] == json!(chunk)).unwrap();
    assert_eq!(
        (cited["citation"].clone(), cited["correlation"].clone(), cited["resolves"].clone()),
        (json!("useful"), json!(1), json!(true))
    );
    assert_eq!(cited["retrieval"]["tool"], "vault_graph_search");
    assert_eq!(chain["citation_pass"], true);
    assert!(chain["caveat"].as_str().unwrap().contains("2 of 3"), "{chain}");
    let concise = ok(&app, &bob, "explain_answer", json!({"vault": V, "response_format": "concise"})).await;
    assert!(concise["links"][0].get("retrieval").is_none() && concise.get("summary").is_none());

    // Contradiction findings, both sides readable.
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let vault = tx.vault_by_name(V).await.unwrap().unwrap();
    for b in ["Ops/Rollback.md", "Secret/Secret Plan.md"] {
        let finding = otc_store::NewContradiction {
            path_a: "Ops/Deploy.md",
            path_b: b,
            hash_a: "h1",
            hash_b: "h2",
            statement_a: "Run the canary first",
            statement_b: "Skip the canary",
            rationale: "They disagree on the canary.",
            model: "test",
        };
        assert!(tx.add_contradiction(vault.id, &finding).await.unwrap());
        assert!(!tx.add_contradiction(vault.id, &finding).await.unwrap(), "one open finding per pair of contents");
    }
    let open = tx.contradictions(vault.id, &["Ops/Rollback.md".into()], false, 10).await.unwrap();
    assert!(tx.resolve_contradiction(vault.id, open[0].id, "Rollback now runs the canary too").await.unwrap());
    tx.commit().await.unwrap();
    let listed = ok(&app, &token, "list_contradictions", json!({"vault": V, "paths": ["Ops/Deploy.md"]})).await;
    assert!(
        listed["contradictions"].as_array().unwrap().is_empty(),
        "resolved, and the other side is hidden: {listed}"
    );
    let all = ok(
        &app,
        &token,
        "list_contradictions",
        json!({"vault": V, "paths": ["Ops/Deploy.md"], "include_resolved": true}),
    )
    .await;
    let found = &all["contradictions"][0];
    assert_eq!((found["status"].clone(), found["path_b"].clone()), (json!("resolved"), json!("Ops/Rollback.md")));
    assert!(!all.to_string().contains("Secret"), "{all}");
    let e = err(&app, &token, "list_contradictions", json!({"vault": V, "paths": ["Secret/Secret Plan.md"]})).await;
    assert_eq!(e["code"], "note_not_found");

    // The docs corpus.
    let docs =
        ok(&app, &token, "knowledge_search", json!({"vault": V, "query": "canary", "response_format": "detailed"}))
            .await;
    assert_eq!(docs["corpus"], "Docs");
    let found = paths(&docs["hits"]);
    assert!(!found.is_empty() && found.iter().all(|p| p.starts_with("Docs/")), "{docs}");
    let critical = ok(&app, &token, "knowledge_get_critical", json!({"vault": V, "response_format": "concise"})).await;
    assert_eq!(
        critical["documents"],
        json!([
            {"path": "Docs/Paging.md", "title": "Paging", "source": "pagerduty"},
            {"path": "Docs/Runbook.md", "title": "Incident runbook", "category": "ops", "source": "confluence"},
        ]),
        "{critical}"
    );
    let narrowed = ok(
        &app,
        &token,
        "knowledge_get_critical",
        json!({"vault": V, "source": "confluence", "response_format": "detailed"}),
    )
    .await;
    assert_eq!(paths(&narrowed["documents"]), ["Docs/Runbook.md"]);
    assert_eq!(narrowed["documents"][0]["properties"]["severity"], "critical");
    let reader = token_for(&app, &tenant, "carol", "read:notes").await;
    let e = err(&app, &reader, "knowledge_search", json!({"vault": V, "query": "canary"})).await;
    assert_eq!((e["code"].clone(), e["details"]["required"].clone()), (json!("forbidden"), json!(["read:docs"])));
    app.stop().await;
}
