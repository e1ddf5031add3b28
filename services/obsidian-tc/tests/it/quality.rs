//! Search quality, measured: the judged queries of `tests/quality/judged.json` (written from the
//! corpus vaults' note titles, headings and paraphrases, each with the notes that answer it) run
//! through search_vault over the imported corpus vaults, in each mode (text, semantic with the
//! local model, hybrid), scored as MRR@10 and recall@10 overall,
//! per kind and per vault, with every query whose first relevant note is not the first hit
//! listed. Only what the harness guarantees is asserted (every query parses, every judged note
//! is in its vault) and a low floor; the figures themselves are printed (`--no-capture`), not
//! asserted, so ranking can change and be compared.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp};
use crate::mcp::call;
use crate::sync::{corpus, remote_env, run_ok};
use crate::write::ok;

/// Hits looked at per query.
const K: usize = 10;
/// Overall MRR@10 below this fails the test: a regression floor, far under what is measured.
const MRR_FLOOR: f64 = 0.3;

const JUDGED: &str = include_str!("../quality/judged.json");

#[derive(Deserialize)]
struct Judged {
    queries: Vec<Judgement>,
}

#[derive(Deserialize)]
struct Judgement {
    vault: String,
    kind: String,
    query: String,
    relevant: Vec<String>,
}

/// One query's outcome.
struct Outcome<'a> {
    j: &'a Judgement,
    /// 1-based rank of the first relevant hit within the top K.
    first: Option<usize>,
    recall: f64,
    top: Option<String>,
}

impl Outcome<'_> {
    fn rr(&self) -> f64 {
        self.first.map_or(0.0, |r| 1.0 / r as f64)
    }
}

#[derive(Default)]
struct Sum {
    n: usize,
    rr: f64,
    recall: f64,
}

impl Sum {
    fn add(&mut self, o: &Outcome<'_>) {
        self.n += 1;
        self.rr += o.rr();
        self.recall += o.recall;
    }
    fn mrr(&self) -> f64 {
        self.rr / self.n.max(1) as f64
    }
    fn line(&self, label: &str) -> String {
        format!("{label:<34} {:>7} {:>8.3} {:>10.3}", self.n, self.mrr(), self.recall / self.n.max(1) as f64)
    }
}

#[tokio::test]
async fn quality_of_search_vault_on_the_judged_corpus_queries() {
    let judged: Judged = serde_json::from_str(JUDGED).expect("tests/quality/judged.json parses");
    assert!(!judged.queries.is_empty());
    for j in &judged.queries {
        assert!(["title", "heading", "paraphrase"].contains(&j.kind.as_str()), "{}: kind {}", j.query, j.kind);
        assert!((1..=3).contains(&j.relevant.len()), "{}: 1 to 3 relevant notes", j.query);
    }
    let vaults: BTreeSet<&str> = judged.queries.iter().map(|j| j.vault.as_str()).collect();

    let app = TestApp::spawn_with(crate::embeddings::local).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let env = remote_env(&app, &token);
    // Each vault imported as it is in the repository, and its paths, to check the judgements
    // against.
    let mut paths: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for &name in &vaults {
        let mut tx = app.store.begin(tenant.id).await.unwrap();
        let vault = tx.create_vault(name).await.unwrap();
        tx.commit().await.unwrap();
        let (env2, dir, vname) = (env.clone(), corpus(name).display().to_string(), name.to_string());
        tokio::task::spawn_blocking(move || run_ok(&env2, &["vault", "import", &dir, "--vault", &vname, "--quiet"]))
            .await
            .unwrap();
        let mut tx = app.store.begin(tenant.id).await.unwrap();
        let files = tx.files(vault.id, None, 100_000).await.unwrap();
        tx.commit().await.unwrap();
        paths.insert(name, files.into_iter().map(|f| f.path).collect());
    }
    for j in &judged.queries {
        for p in &j.relevant {
            assert!(
                paths[j.vault.as_str()].contains(p),
                "{} ({}): judged note {p} is not in the vault",
                j.query,
                j.vault
            );
        }
    }

    // Every chunk embedded (the workers' job in production) before semantic and hybrid run.
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let ids: Vec<uuid::Uuid> = tx.list_vaults().await.unwrap().into_iter().map(|v| v.id).collect();
    tx.commit().await.unwrap();
    app.deps.embedding.maintain().await.unwrap();
    for id in ids {
        app.deps.embedding.drain(tenant.id, id).await.unwrap();
    }
    let mut by_mode = Vec::new();
    for mode in ["text", "semantic", "hybrid"] {
        by_mode.push((mode, outcomes_of(&app, &token, &judged, mode).await));
    }
    let outcomes = &by_mode[0].1;

    let mut overall = Sum::default();
    let mut by_kind: BTreeMap<&str, Sum> = BTreeMap::new();
    let mut by_vault: BTreeMap<&str, Sum> = BTreeMap::new();
    for o in outcomes {
        overall.add(o);
        by_kind.entry(o.j.kind.as_str()).or_default().add(o);
        by_vault.entry(o.j.vault.as_str()).or_default().add(o);
    }
    let mut report = String::new();
    report.push_str(&format!(
        "\nsearch_vault by mode on {} judged queries (local model {})\n",
        outcomes.len(),
        otc_embed::local::MINILM_MODEL
    ));
    report.push_str(&format!("{:<34} {:>7} {:>8} {:>10}\n", "", "queries", "MRR@10", "recall@10"));
    // Each mode's overall sum, for the floor below.
    let mut modes = Vec::new();
    for (mode, outs) in &by_mode {
        let mut sum = Sum::default();
        outs.iter().for_each(|o| sum.add(o));
        report.push_str(&sum.line(&format!("mode {mode}")));
        report.push('\n');
        for kind in ["title", "heading", "paraphrase"] {
            let mut k = Sum::default();
            outs.iter().filter(|o| o.j.kind == kind).for_each(|o| k.add(o));
            report.push_str(&k.line(&format!("  kind {kind}")));
            report.push('\n');
        }
        modes.push((mode, sum));
    }
    report.push_str(&format!(
        "\nsearch_vault (text) on {} judged queries (tests/quality/judged.json), top {K}\n",
        outcomes.len()
    ));
    report.push_str(&format!("{:<34} {:>7} {:>8} {:>10}\n", "", "queries", "MRR@10", "recall@10"));
    report.push_str(&overall.line("overall"));
    report.push('\n');
    for kind in ["title", "heading", "paraphrase"] {
        if let Some(s) = by_kind.get(kind) {
            report.push_str(&s.line(&format!("kind {kind}")));
            report.push('\n');
        }
    }
    for (vault, s) in &by_vault {
        report.push_str(&s.line(&format!("vault {vault}")));
        report.push('\n');
    }
    let misses: Vec<&Outcome<'_>> = outcomes.iter().filter(|o| o.first != Some(1)).collect();
    report.push_str(&format!("\nfirst relevant hit not at rank 1 ({}):\n", misses.len()));
    for o in misses {
        let rank = o.first.map_or(format!(">{K}"), |r| r.to_string());
        report.push_str(&format!(
            "  [{} / {}] \"{}\": rank {rank}; expected {}; first: {}\n",
            o.j.vault,
            o.j.kind,
            o.j.query,
            o.j.relevant.join(" | "),
            o.top.as_deref().unwrap_or("(no hits)"),
        ));
        // Why: the first hit's and each relevant note's best chunk, as explain gives them
        // (deeper than the top K, to tell a note ranked low from one not matched at all).
        let args = json!({"vault": o.j.vault, "query": o.j.query, "limit": 100, "explain": true,
            "response_format": "detailed"});
        let deep = ok(&app, &token, "search_vault", args).await;
        let hits = deep["hits"].as_array().unwrap();
        if let Some(top) = hits.first() {
            report.push_str(&format!("      first      {}\n", why(top)));
        }
        for p in &o.j.relevant {
            match hits.iter().position(|h| h["path"] == p.as_str()) {
                Some(i) => report.push_str(&format!("      rank {:<5} {}\n", i + 1, why(&hits[i]))),
                None => report.push_str(&format!("      unmatched {p} (not among {} hits)\n", hits.len())),
            }
        }
    }
    println!("{report}");

    for (mode, sum) in &modes {
        assert!(sum.mrr() >= MRR_FLOOR, "{mode}: overall MRR@{K} {:.3} is under the floor {MRR_FLOOR}", sum.mrr());
    }
}

/// Every judged query through search_vault in `mode`: where its first relevant note ranked.
async fn outcomes_of<'a>(app: &TestApp, token: &str, judged: &'a Judged, mode: &str) -> Vec<Outcome<'a>> {
    let mut outcomes = Vec::new();
    for j in &judged.queries {
        let args = json!({"vault": j.vault, "query": j.query, "limit": K, "mode": mode});
        let result = call(app, "/mcp", token, "search_vault", args).await;
        assert_eq!(result["isError"], false, "{} ({}, {mode}): {result}", j.query, j.vault);
        let hits: Vec<String> = result["structuredContent"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["path"].as_str().unwrap().to_string())
            .collect();
        assert!(hits.len() <= K);
        let first = hits.iter().position(|p| j.relevant.contains(p)).map(|i| i + 1);
        let found = j.relevant.iter().filter(|p| hits.contains(p)).count();
        outcomes.push(Outcome { j, first, recall: found as f64 / j.relevant.len() as f64, top: hits.first().cloned() });
    }
    outcomes
}

/// A detailed hit with its explain, in one line: score, the best chunk's section and length,
/// and each matched term as tf/df.
fn why(hit: &Value) -> String {
    let e = &hit["explain"];
    let terms: Vec<String> = e["terms"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .map(|t| {
                    format!(
                        "{} {}/{} ({:.2})",
                        t["term"].as_str().unwrap_or(""),
                        t["tf"],
                        t["df"],
                        t["score"].as_f64().unwrap_or(0.0)
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    format!(
        "{} score {:.2}, chunk \"{}\" {} tokens (avg {:.0}); {}",
        hit["path"].as_str().unwrap_or(""),
        hit["score"].as_f64().unwrap_or(0.0),
        hit["section"].as_str().unwrap_or(""),
        e["chunk_tokens"],
        e["average_tokens"].as_f64().unwrap_or(0.0),
        terms.join(", "),
    )
}
