//! Ranked search (search_vault) and text search (search_text) over the full-text segments:
//! ranking, the query language, paging, the folder ACL, Excluded files, tenants, search after
//! write, move and delete, segment merges, and malformed input.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp};
use crate::index::commit;
use crate::write::{err, ok};

const V: &str = "Notes";

const NOTES: &[(&str, &str)] = &[
    (
        "Recipes/Pancakes.md",
        "---\ntags: [food]\naliases: [Crêpes]\n---\n# Pancakes\nMix flour, eggs and milk. Fry the batter in butter.\n\n## Serving\nServe with maple syrup.\n",
    ),
    ("Recipes/Bread.md", "# Bread\nFlour, water, salt and yeast. Knead the dough and let it rise overnight.\n"),
    (
        "Work/Project plan.md",
        "---\nstatus: draft\ntags: [work/planning]\n---\n# Project plan\nThe project plan lists milestones. The plan is reviewed weekly.\n",
    ),
    (
        "Work/Meeting notes.md",
        "# Meeting notes\nWe discussed the project timeline and the plan for the launch meeting.\nMeetings happen on Mondays.\n",
    ),
    ("Journal/2024-01-05.md", "Went to the café. Ate a croissant; 東京タワーへ行く plan.\n"),
];

async fn setup() -> (TestApp, String, Tenant) {
    let app = TestApp::spawn_with(|c| c.tools.confirm_destructive = false).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let changes: Vec<(&str, Option<&str>)> = NOTES.iter().map(|(p, t)| (*p, Some(*t))).collect();
    commit(&app, &token, V, &changes).await;
    (app, token, tenant)
}

fn paths(out: &Value) -> Vec<String> {
    out["hits"].as_array().unwrap().iter().map(|h| h["path"].as_str().unwrap().to_string()).collect()
}

async fn vault_search(app: &TestApp, token: &str, query: &str) -> Vec<String> {
    paths(&ok(app, token, "search_vault", json!({"vault": V, "query": query})).await)
}

#[tokio::test]
async fn search_vault_ranks_with_bm25_and_takes_the_query_language() {
    let (app, token, _) = setup().await;
    // Title, heading and text all say "project plan": that note first.
    let out =
        ok(&app, &token, "search_vault", json!({"vault": V, "query": "project plan", "response_format": "detailed"}))
            .await;
    let found = paths(&out);
    assert_eq!(found[0], "Work/Project plan.md", "{out}");
    assert!(found.contains(&"Work/Meeting notes.md".to_string()));
    assert_eq!(out["total_count"], found.len());
    assert_eq!(out["mode"], "text");
    let top = &out["hits"][0];
    assert!(top["snippet"].as_str().unwrap().contains("**project** **plan**"), "{top}");
    assert_eq!(top["section"], "Project plan");
    assert_eq!(top["line"], 5);
    assert!(top.get("explain").is_none());

    // A phrase must occur in order; -word leaves notes out.
    assert_eq!(vault_search(&app, &token, "\"plan for the launch\"").await, ["Work/Meeting notes.md"]);
    let mut found = vault_search(&app, &token, "plan -milestones").await;
    found.sort();
    assert_eq!(found, ["Journal/2024-01-05.md", "Work/Meeting notes.md"]);
    assert!(!vault_search(&app, &token, "plan -\"project plan\"").await.contains(&"Work/Project plan.md".to_string()));
    // path: and tag: filters (nested tags included), root.
    assert_eq!(vault_search(&app, &token, "flour path:recipes/").await.len(), 2);
    assert_eq!(vault_search(&app, &token, "flour path:bread").await, ["Recipes/Bread.md"]);
    assert_eq!(vault_search(&app, &token, "plan tag:work").await, ["Work/Project plan.md"]);
    let out = ok(&app, &token, "search_vault", json!({"vault": V, "query": "plan", "root": "Journal"})).await;
    assert_eq!(paths(&out), ["Journal/2024-01-05.md"]);
    // Aliases, tags and frontmatter are searched; case and accents do not matter; CJK by
    // character.
    assert_eq!(vault_search(&app, &token, "crepes").await, ["Recipes/Pancakes.md"]);
    assert_eq!(vault_search(&app, &token, "DRAFT").await, ["Work/Project plan.md"]);
    assert_eq!(vault_search(&app, &token, "cafe").await, ["Journal/2024-01-05.md"]);
    assert_eq!(vault_search(&app, &token, "\"東京\"").await, ["Journal/2024-01-05.md"]);
    assert!(vault_search(&app, &token, "zeppelin").await.is_empty());

    // explain: the BM25 parts add up to the score.
    let out = ok(&app, &token, "search_vault", json!({"vault": V, "query": "yeast dough", "explain": true})).await;
    let hit = &out["hits"][0];
    assert_eq!(hit["path"], "Recipes/Bread.md");
    let e = &hit["explain"];
    let sum: f64 = e["terms"].as_array().unwrap().iter().map(|t| t["score"].as_f64().unwrap()).sum();
    assert!((sum - hit["score"].as_f64().unwrap()).abs() < 1e-3, "{hit}");
    assert_eq!(e["terms"][0]["df"], 1);
    assert!(e["chunks"].as_u64().unwrap() >= 5);

    // Concise leaves out line, section and explain.
    let out =
        ok(&app, &token, "search_vault", json!({"vault": V, "query": "bread", "response_format": "concise"})).await;
    let keys: HashSet<&str> = out["hits"][0].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, HashSet::from(["path", "score", "snippet"]));
}

#[tokio::test]
async fn malformed_searches_answer_typed_errors() {
    let (app, token, _) = setup().await;
    for (tool, args, code) in [
        ("search_vault", json!({"vault": V, "query": "  "}), "invalid_input"),
        ("search_vault", json!({"vault": V, "query": "-only"}), "invalid_input"),
        ("search_vault", json!({"vault": V, "query": "\"open"}), "invalid_input"),
        ("search_vault", json!({"vault": V, "query": "x", "limit": 0}), "invalid_input"),
        ("search_vault", json!({"vault": V, "query": "x", "cursor": "nope"}), "invalid_input"),
        ("search_vault", json!({"vault": V, "query": "x", "mode": "semantic"}), "embedding_provider_error"),
        ("search_vault", json!({"vault": V, "query": "x", "mode": "hybrid"}), "embedding_provider_error"),
        ("search_vault", json!({"vault": V, "query": "x", "root": "../up"}), "path_invalid"),
        ("search_vault", json!({"vault": "Nope", "query": "x"}), "vault_not_found"),
        ("search_text", json!({"vault": V, "query": "!!"}), "invalid_input"),
        ("search_text", json!({"vault": V, "query": "x", "context_length": 9999}), "invalid_input"),
        ("search_text", json!({"vault": V, "query": "x", "max_matches_per_hit": 0}), "invalid_input"),
        ("search_text", json!({"vault": V, "query": "x", "limit": 101}), "invalid_input"),
    ] {
        let e = err(&app, &token, tool, args.clone()).await;
        assert_eq!(e["code"], code, "{tool} {args}: {e}");
    }
    // A cursor from one tool is refused by the other.
    let many: Vec<(String, String)> = (0..30).map(|i| (format!("P/{i:02}.md"), "plan plan".to_string())).collect();
    let changes: Vec<(&str, Option<&str>)> = many.iter().map(|(p, t)| (p.as_str(), Some(t.as_str()))).collect();
    commit(&app, &token, V, &changes).await;
    let page = ok(&app, &token, "search_vault", json!({"vault": V, "query": "plan"})).await;
    let cursor = page["next_cursor"].as_str().unwrap();
    let e = err(&app, &token, "search_text", json!({"vault": V, "query": "plan", "cursor": cursor})).await;
    assert_eq!(e["code"], "invalid_input");
}

#[tokio::test]
async fn search_text_finds_substrings_with_context_and_caps_matches() {
    let (app, token, _) = setup().await;
    // Inside words by default: "meet" is in "Meeting", "meeting" and "Meetings", not in the
    // title of a note whose text lacks it.
    let out =
        ok(&app, &token, "search_text", json!({"vault": V, "query": "meet", "response_format": "detailed"})).await;
    assert_eq!(paths(&out), ["Work/Meeting notes.md"]);
    let hit = &out["hits"][0];
    assert_eq!(hit["total_matches"], 3);
    assert_eq!(hit["matches"][0]["line"], 1);
    assert_eq!(hit["matches"][0]["column"], 3);
    assert!(hit["matches"][1]["context"].as_str().unwrap().contains("launch meeting"));
    assert!(hit["score"].as_f64().unwrap() > 0.0);
    // whole_word: only "meeting" as a word (twice: the heading and the text).
    let out = ok(&app, &token, "search_text", json!({"vault": V, "query": "meeting", "whole_word": true})).await;
    assert_eq!(out["hits"][0]["total_matches"], 2);
    // Spanning words, starting and ending inside them.
    let out = ok(&app, &token, "search_text", json!({"vault": V, "query": "ead the dou"})).await;
    assert_eq!(paths(&out), ["Recipes/Bread.md"]);
    let out = ok(&app, &token, "search_text", json!({"vault": V, "query": "rise overnight"})).await;
    assert_eq!(out["total_count"], 1);
    // Case and accents: folded by default, exact with case_sensitive.
    assert_eq!(ok(&app, &token, "search_text", json!({"vault": V, "query": "CAFE"})).await["total_count"], 1);
    let exact = json!({"vault": V, "query": "Project", "case_sensitive": true});
    let out = ok(&app, &token, "search_text", exact).await;
    assert_eq!(paths(&out), ["Work/Project plan.md"]);
    assert_eq!(out["hits"][0]["total_matches"], 1);
    let folded = ok(&app, &token, "search_text", json!({"vault": V, "query": "project"})).await;
    assert_eq!(folded["total_count"], 2);
    // Frontmatter is text too.
    assert_eq!(
        paths(&ok(&app, &token, "search_text", json!({"vault": V, "query": "status: draft"})).await),
        ["Work/Project plan.md"]
    );
    // The cap on matches per note, with the total kept; context length.
    let out = ok(
        &app,
        &token,
        "search_text",
        json!({"vault": V, "query": "plan", "root": "Work", "max_matches_per_hit": 1, "context_length": 5}),
    )
    .await;
    let hit = out["hits"].as_array().unwrap().iter().find(|h| h["path"] == "Work/Project plan.md").unwrap();
    assert_eq!(hit["matches"].as_array().unwrap().len(), 1);
    assert_eq!(hit["truncated"], true);
    // "planning" in the frontmatter, the heading, the text twice.
    assert_eq!(hit["total_matches"], 4);
    // The word holding the match, five characters each side.
    assert_eq!(hit["matches"][0]["context"], "…work/planning]\n---…");
}

#[tokio::test]
async fn paging_walks_every_hit_once_and_totals_hold() {
    let (app, token, _) = setup().await;
    let many: Vec<(String, String)> =
        (0..57).map(|i| (format!("Bulk/{i:03}.md"), format!("alpha {}\n", "beta ".repeat(i % 7 + 1)))).collect();
    let changes: Vec<(&str, Option<&str>)> = many.iter().map(|(p, t)| (p.as_str(), Some(t.as_str()))).collect();
    commit(&app, &token, V, &changes).await;
    for tool in ["search_vault", "search_text"] {
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        let mut scores: Vec<f64> = Vec::new();
        loop {
            let mut args = json!({"vault": V, "query": "alpha beta", "limit": 8, "response_format": "detailed"});
            if tool == "search_text" {
                args["query"] = json!("alpha");
            }
            if let Some(c) = &cursor {
                args["cursor"] = json!(c);
            }
            let out = ok(&app, &token, tool, args).await;
            assert_eq!(out["total_count"], 57, "{tool}");
            for h in out["hits"].as_array().unwrap() {
                seen.push(h["path"].as_str().unwrap().to_string());
                scores.push(h["score"].as_f64().unwrap());
            }
            match out["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
        }
        let unique: HashSet<&String> = seen.iter().collect();
        assert_eq!(seen.len(), 57, "{tool}: no gap");
        assert_eq!(unique.len(), 57, "{tool}: no duplicate");
        assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{tool}: best first across pages");
    }
    // The default page is 25.
    let out = ok(&app, &token, "search_vault", json!({"vault": V, "query": "alpha"})).await;
    assert_eq!(out["hits"].as_array().unwrap().len(), 25);
}

#[tokio::test]
async fn hidden_and_excluded_notes_never_surface() {
    let app = TestApp::spawn_with(|c| {
        c.acl.push(otc_config::AclEntry {
            tenant: Some("acme".into()),
            vault: V.into(),
            read_paths: Some(vec!["Public/**".into(), ".obsidian/**".into()]),
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
            ("Public/a.md", Some("shared secretword here")),
            ("Public/b.md", Some("nothing")),
            ("Private/c.md", Some("secretword secretword secretword")),
            ("Public/Archive/d.md", Some("secretword archived")),
            (".obsidian/app.json", Some(r#"{"userIgnoreFilters": ["Public/Archive/"]}"#)),
        ],
    )
    .await;
    for tool in ["search_vault", "search_text"] {
        let out = ok(&app, &token, tool, json!({"vault": V, "query": "secretword", "limit": 1})).await;
        assert_eq!(paths(&out), ["Public/a.md"], "{tool}: {out}");
        assert_eq!(out["total_count"], 1, "{tool}: hidden notes are not counted");
        assert!(out.get("next_cursor").is_none(), "{tool}");
    }
    // The statistics count only what the caller sees: one chunk of two holds the word.
    let out = ok(&app, &token, "search_vault", json!({"vault": V, "query": "secretword", "explain": true})).await;
    assert_eq!(out["hits"][0]["explain"]["terms"][0]["df"], 1);
    assert_eq!(out["hits"][0]["explain"]["chunks"], 2);
}

#[tokio::test]
async fn another_tenants_notes_are_unreachable() {
    let (app, token, _) = setup().await;
    let other = Tenant::create(&app.store, "globex").await;
    let (other_token, _) = other.token(&app.store, "*", false, None).await;
    commit(&app, &other_token, V, &[("Theirs.md", Some("pancakes flour zanzibar"))]).await;
    assert!(vault_search(&app, &token, "zanzibar").await.is_empty());
    assert_eq!(ok(&app, &token, "search_text", json!({"vault": V, "query": "zanzibar"})).await["total_count"], 0);
    assert_eq!(vault_search(&app, &other_token, "flour").await, ["Theirs.md"]);
}

#[tokio::test]
async fn search_answers_the_new_state_after_write_move_and_delete() {
    let (app, token, _) = setup().await;
    ok(
        &app,
        &token,
        "write_note",
        json!({"vault": V, "path": "New/Kayak.md", "content": "Paddling the kayak upstream."}),
    )
    .await;
    assert_eq!(vault_search(&app, &token, "kayak").await, ["New/Kayak.md"]);
    ok(&app, &token, "append_note", json!({"vault": V, "path": "New/Kayak.md", "content": "\nCapsized twice."})).await;
    assert_eq!(ok(&app, &token, "search_text", json!({"vault": V, "query": "capsized"})).await["total_count"], 1);
    ok(&app, &token, "move_note", json!({"vault": V, "from": "New/Kayak.md", "to": "Trips/Kayak.md"})).await;
    assert_eq!(vault_search(&app, &token, "kayak").await, ["Trips/Kayak.md"]);
    ok(&app, &token, "delete_note", json!({"vault": V, "path": "Trips/Kayak.md"})).await;
    assert!(vault_search(&app, &token, "kayak").await.is_empty());
    assert_eq!(ok(&app, &token, "search_text", json!({"vault": V, "query": "paddling"})).await["total_count"], 0);
}

#[tokio::test]
async fn many_small_commits_are_merged_and_a_rebuild_leaves_one_segment() {
    let (app, token, tenant) = setup().await;
    for i in 0..20 {
        commit(&app, &token, V, &[(&format!("Log/{i}.md"), Some(&format!("entry number{i} quokka")))]).await;
    }
    let count = || async {
        let mut tx = app.store.begin(tenant.id).await.unwrap();
        let n = tx.fts_segments(tenant.vault_id).await.unwrap().len();
        tx.commit().await.unwrap();
        n
    };
    assert!(count().await <= 9, "small segments merged on the way: {}", count().await);
    let out = ok(&app, &token, "search_vault", json!({"vault": V, "query": "quokka", "limit": 100})).await;
    assert_eq!(out["total_count"], 20);
    assert_eq!(vault_search(&app, &token, "number7").await, ["Log/7.md"]);
    ok(&app, &token, "index_vault", json!({"vault": V})).await;
    assert_eq!(count().await, 1);
    assert_eq!(ok(&app, &token, "search_vault", json!({"vault": V, "query": "quokka"})).await["total_count"], 20);
    assert_eq!(vault_search(&app, &token, "project plan").await[0], "Work/Project plan.md");
}

#[tokio::test]
async fn search_and_read_returns_the_best_notes_whole_or_their_sections() {
    let (app, token, _) = setup().await;
    let out = ok(&app, &token, "search_and_read", json!({"vault": V, "query": "flour", "k": 1})).await;
    assert_eq!(out["total_count"], 2);
    let first = &out["results"][0];
    assert_eq!(first["rank"], 1);
    let body = first["body"].as_str().unwrap();
    // Note mode: the body without its frontmatter, whole.
    assert!(!body.contains("---") && body.starts_with('#'), "{first}");
    assert!(first.get("truncated").is_none() && first.get("size_bytes").is_none());
    assert_eq!(first["content_hash"].as_str().unwrap().len(), 64);
    // The next page continues the ranking.
    let cursor = out["next_cursor"].as_str().unwrap();
    let next =
        ok(&app, &token, "search_and_read", json!({"vault": V, "query": "flour", "k": 1, "cursor": cursor})).await;
    assert_eq!(next["results"][0]["rank"], 2);
    assert_ne!(next["results"][0]["path"], first["path"]);
    assert!(next.get("next_cursor").is_none());
    // Section mode: the best section; detailed names it.
    let out = ok(
        &app,
        &token,
        "search_and_read",
        json!({"vault": V, "query": "maple syrup", "mode": "section", "response_format": "detailed"}),
    )
    .await;
    let first = &out["results"][0];
    assert_eq!(first["path"], "Recipes/Pancakes.md");
    assert!(first["body"].as_str().unwrap().contains("maple syrup"));
    assert!(first["chunk_id"].is_u64());
    // Detailed note mode carries the frontmatter block.
    let out =
        ok(&app, &token, "search_and_read", json!({"vault": V, "query": "crepes", "response_format": "detailed"}))
            .await;
    assert!(out["results"][0]["frontmatter"].as_str().unwrap().starts_with("---\n"));
    // An item longer than its share is cut and says so.
    let out =
        ok(&app, &token, "search_and_read", json!({"vault": V, "query": "pancakes", "max_bytes_per_item": 20})).await;
    let first = &out["results"][0];
    assert_eq!(first["truncated"], true);
    assert!(first["body"].as_str().unwrap().len() <= 20);
    assert!(first["size_bytes"].as_u64().unwrap() > 20);
    for (args, code) in [
        (json!({"vault": V, "query": "x", "k": 0}), "invalid_input"),
        (json!({"vault": V, "query": "x", "max_bytes_per_item": 0}), "invalid_input"),
        (json!({"vault": V, "query": "x", "mode": "semantic"}), "embedding_provider_error"),
    ] {
        assert_eq!(err(&app, &token, "search_and_read", args.clone()).await["code"], code, "{args}");
    }
    let e = err(&app, &token, "search_semantic", json!({"vault": V, "query": "things to eat"})).await;
    assert_eq!(e["code"], "embedding_provider_error");
    assert!(e["message"].as_str().unwrap().contains("embeddings.provider"));
}
