//! The wiki's upkeep off the request path: index.md and log.md written by a worker after
//! commits (a person's sync included), sealed, never overwritten once edited by hand, log.md
//! closed to callers without read:provenance; the scheduled lint as each tenant's upkeep item;
//! the judge, behind a fake chat endpoint (the only fake: a paid API at its HTTP boundary).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use obsidian_tc::app;
use otc_config::Config;
use serde_json::{Value, json};

use crate::harness::{Child, Isolation, Tenant, TestApp};
use crate::mcp::{call, error_of};
use crate::write::ok as tool;

const V: &str = "Notes";
const SCHEMA: &str = "---\ntypes:\n  concept:\n    required: [type]\n  person:\n    required: [type]\n---\n";

fn wiki(c: &mut Config) {
    c.wiki.folder = Some("wiki".into());
    c.tools.confirm_destructive = false;
}

/// [`wiki`], with wiki/secret/ unreadable to everyone (the deployment's floor).
fn wiki_with_secret(c: &mut Config) {
    wiki(c);
    c.acl.push(crate::harness::read_acl(
        Some("acme"),
        V,
        &["wiki/*.md", "wiki/concepts/**", "wiki/people/**", "wiki/drafts/**", "Notes/**", ".obsidian/**"],
    ));
}

/// Waits until the tenant's vault has no generated-page work queued (20 s at most).
async fn settled(app: &TestApp, tenant: &Tenant) {
    for _ in 0..200 {
        let mut tx = app.store.begin(tenant.id).await.unwrap();
        let due = tx.due_job_vaults(otc_tools::tools::knowledge::wiki::pages::JOB, 10).await.unwrap();
        tx.commit().await.unwrap();
        if due.is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the wiki pages' jobs never finished");
}

/// A worker in this process, writing generated pages, until the sender is dropped or fired.
async fn start_worker(
    app: &TestApp,
    tweak: impl Fn(&mut Config),
) -> (tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let mut config = app.iso.config();
    tweak(&mut config);
    let tools = app::dispatcher(&config, &app.deps).expect("tools");
    let worker = otc_worker::Worker::new(
        app.deps.store.clone(),
        app.deps.kv.clone(),
        app.deps.blobs.clone(),
        app::worker_settings(&config),
    )
    .with_wiki(tools);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(worker.run(async {
        let _ = stopped.await;
    }));
    (stop, task)
}

/// The note's content once `ready` holds for it, waiting up to 20 s.
async fn wait_for(app: &TestApp, token: &str, path: &str, ready: impl Fn(&str) -> bool) -> String {
    let mut last = String::new();
    for _ in 0..200 {
        if let Some(content) = crate::write::text(app, token, path).await {
            if ready(&content) {
                return content;
            }
            last = content;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{path} never got ready; last:\n{last}");
}

async fn commit_page(app: &TestApp, token: &str, path: &str, kind: &str) -> Value {
    let content = format!("---\ntype: {kind}\n---\n# A page\nSee [[Ada]].\n");
    tool(app, token, "commit_wiki_page", json!({"vault": V, "page": {"path": path, "content": content}})).await
}

fn lint_generated(out: &Value) -> Vec<String> {
    out["proposals"].as_array().unwrap().iter().map(|p| p["subject"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn a_worker_writes_index_and_log_after_commits_and_leaves_a_hand_edited_page_alone() {
    let app = TestApp::spawn_with(wiki_with_secret).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let (plain, _) = tenant.token(&app.store, "read:notes,write:notes,admin:acl", false, None).await;
    app.seed(
        &token,
        V,
        &[
            ("wiki/SCHEMA.md", Some(SCHEMA)),
            ("wiki/people/Ada.md", Some("---\ntype: person\n---\nAda.\n")),
            ("wiki/Loose.md", Some("No type.\n")),
            ("wiki/secret/Hidden.md", Some("---\ntype: concept\n---\nNot for everyone.\n")),
            ("wiki/drafts/Draft.md", Some("Excluded in Obsidian.\n")),
            (".obsidian/app.json", Some(r#"{"userIgnoreFilters": ["wiki/drafts/"]}"#)),
            ("Notes/Elsewhere.md", Some("Not in the wiki.\n")),
        ],
    )
    .await;
    let (stop, worker) = start_worker(&app, wiki_with_secret).await;

    // A commit queues the pages; the worker writes both, sealed, listing what is there.
    commit_page(&app, &token, "wiki/concepts/Interleaving.md", "concept").await;
    let index = wait_for(&app, &token, "wiki/index.md", |t| t.contains("Interleaving")).await;
    assert!(index.starts_with("---\nseal: hmac-sha256:") && index.contains("generated_by: obsidian-tc"), "{index}");
    let concept = index.find("## concept").expect("concept section");
    let person = index.find("## person").expect("person section");
    let untyped = index.find("## (no type)").expect("untyped section");
    assert!(concept < person && person < untyped, "the schema's order, then pages with no type: {index}");
    for listed in ["[[wiki/concepts/Interleaving|Interleaving]]", "[[wiki/people/Ada|Ada]]", "[[wiki/Loose|Loose]]"] {
        assert!(index.contains(listed), "{listed}: {index}");
    }
    for never in ["SCHEMA", "Elsewhere", "wiki/log", "wiki/index", "Hidden", "Draft"] {
        assert!(!index.contains(never), "{never}: {index}");
    }
    let log = wait_for(&app, &token, "wiki/log.md", |t| t.contains("Interleaving")).await;
    let line = log.lines().find(|l| l.contains("wiki/concepts/Interleaving.md")).expect("the commit's line");
    assert!(
        line.contains("| create | wiki/concepts/Interleaving.md | alice |") && line.contains("commit_wiki_page#"),
        "{line}"
    );
    assert!(log.lines().any(|l| l.contains("| create | wiki/people/Ada.md |")), "the seed's records too: {log}");
    assert!(!log.contains("| wiki/index.md |"), "the generated pages' own changes are not projected: {log}");
    assert!(!log.contains("Hidden") && !log.contains("Draft"), "nor unreadable or Excluded pages: {log}");

    // log.md is provenance: a caller without read:provenance cannot read, list, find or
    // change it; index.md is for everyone.
    let r = call(&app, "/mcp", &plain, "read_note", json!({"vault": V, "path": "wiki/log.md"})).await;
    assert_eq!(error_of(&r)["code"], "note_not_found", "{r}");
    let listed = tool(&app, &plain, "list_notes", json!({"vault": V, "folder": "wiki"})).await;
    assert!(!listed.to_string().contains("log.md") && listed.to_string().contains("index.md"), "{listed}");
    let found = tool(&app, &plain, "search_text", json!({"vault": V, "query": "commit_wiki_page"})).await;
    assert!(!found.to_string().contains("log.md"), "{found}");
    let r = call(
        &app,
        "/mcp",
        &plain,
        "write_note",
        json!({"vault": V, "path": "wiki/log.md", "content": "x", "mode": "overwrite"}),
    )
    .await;
    assert_eq!(error_of(&r)["code"], "acl_denied", "{r}");
    assert_eq!(error_of(&r)["details"]["scope"], "read:provenance", "{r}");
    let acl = tool(&app, &plain, "inspect_acl", json!({"vault": V, "path": "wiki/log.md", "op": "read"})).await;
    assert_eq!(acl["decided_by"], "scope_required", "{acl}");

    // The next commit appends: earlier lines stay, last_seq moves on.
    commit_page(&app, &token, "wiki/people/Grace.md", "person").await;
    let log2 = wait_for(&app, &token, "wiki/log.md", |t| t.contains("Grace")).await;
    let body = |t: &str| t.split_once("tool#seq\n\n").unwrap().1.to_string();
    assert!(body(&log2).starts_with(&body(&log)), "append-only:\n{log}\n---\n{log2}");
    let seq = |t: &str| t.lines().find_map(|l| l.strip_prefix("last_seq: ")).unwrap().parse::<i64>().unwrap();
    assert!(seq(&log2) > seq(&log));
    wait_for(&app, &token, "wiki/index.md", |t| t.contains("[[wiki/people/Grace|Grace]]")).await;

    // Edited by hand: left as it is, reported by lint_wiki; the index still moves on.
    let edited = log2.replace("| alice |", "| mallory |");
    tool(
        &app,
        &token,
        "write_note",
        json!({"vault": V, "path": "wiki/log.md", "content": edited, "mode": "overwrite"}),
    )
    .await;
    commit_page(&app, &token, "wiki/concepts/Spacing.md", "concept").await;
    wait_for(&app, &token, "wiki/index.md", |t| t.contains("Spacing")).await;
    settled(&app, &tenant).await;
    let kept = wait_for(&app, &token, "wiki/log.md", |_| true).await;
    assert_eq!(kept, edited, "a hand-edited log.md is never overwritten");
    let lint = tool(
        &app,
        &token,
        "lint_wiki",
        json!({"vault": V, "checks": ["generated_pages"], "response_format": "detailed"}),
    )
    .await;
    assert_eq!(lint_generated(&lint), ["wiki/log.md"], "{lint}");
    assert_eq!(lint["proposals"][0]["tool"], "delete_note", "{lint}");

    // Deleted, it comes back whole from the change log, sealed again.
    tool(&app, &token, "delete_note", json!({"vault": V, "path": "wiki/log.md"})).await;
    commit_page(&app, &token, "wiki/concepts/Recall.md", "concept").await;
    let fresh = wait_for(&app, &token, "wiki/log.md", |t| t.contains("Recall.md")).await;
    assert!(fresh.contains("wiki/concepts/Interleaving.md") && !fresh.contains("mallory"), "{fresh}");
    let lint = tool(&app, &token, "lint_wiki", json!({"vault": V, "checks": ["generated_pages"]})).await;
    assert!(lint_generated(&lint).is_empty(), "{lint}");

    // A move never rewrites the sealed index's links: the move queues a fresh index instead.
    let before_move = wait_for(&app, &token, "wiki/index.md", |_| true).await;
    let moved =
        tool(&app, &token, "move_note", json!({"vault": V, "from": "wiki/Loose.md", "to": "wiki/people/Loose.md"}))
            .await;
    assert!(!moved.to_string().contains("wiki/index.md"), "{moved}");
    let after_move = wait_for(&app, &token, "wiki/index.md", |t| t.contains("[[wiki/people/Loose|Loose]]")).await;
    assert_ne!(before_move, after_move);
    let lint = tool(&app, &token, "lint_wiki", json!({"vault": V, "checks": ["generated_pages", "orphan"]})).await;
    let subjects = lint_generated(&lint);
    assert!(!subjects.iter().any(|s| s.starts_with("wiki/index") || s.starts_with("wiki/log")), "{lint}");
    assert!(subjects.contains(&"wiki/people/Grace.md".to_string()), "the index's links make no page linked: {lint}");
    // A person's sync client adding a page queues the index too.
    let hash = crate::sync::upload(&app, &token, V, b"---\ntype: person\n---\nSynced from a laptop.\n").await;
    let change = json!([{"path": "wiki/people/Synced.md", "expect": "absent", "put": {"hash": hash}}]);
    let (status, body) = crate::sync::api(
        &app,
        &token,
        reqwest::Method::POST,
        "/v1/vaults/Notes/commit",
        Some(json!({"changes": change})),
    )
    .await;
    assert!(status.is_success(), "{body}");
    wait_for(&app, &token, "wiki/index.md", |t| t.contains("[[wiki/people/Synced|Synced]]")).await;
    let audit = tool(&app, &token, "audit_provenance", json!({"vault": V, "response_format": "detailed"})).await;
    let audit = audit.to_string();
    assert!(audit.contains("wiki/people/Grace.md") && !audit.contains("wiki/index.md"), "{audit}");
    let orphans = tool(&app, &token, "find_orphans", json!({"vault": V, "folder": "wiki"})).await;
    let orphans = orphans.to_string();
    assert!(orphans.contains("wiki/people/Grace.md") && !orphans.contains("wiki/index.md"), "{orphans}");
    // Stopped, a worker drops a pass it is in (its jobs stay queued): let it finish them first.
    settled(&app, &tenant).await;
    let _ = stop.send(());
    worker.await.unwrap();

    // A pass with nothing new changes nothing; a vault without a wiki has no pages.
    let tools = app::dispatcher(
        &{
            let mut c = app.iso.config();
            wiki_with_secret(&mut c);
            c
        },
        &app.deps,
    )
    .unwrap();
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let vault = tx.vault(tenant.vault_id).await.unwrap().unwrap();
    tx.commit().await.unwrap();
    let again =
        otc_tools::tools::knowledge::wiki::pages::regenerate(&tools, tenant.id, vault.clone()).await.unwrap().unwrap();
    use otc_tools::tools::knowledge::wiki::pages::Outcome;
    assert_eq!((again.index, again.log), (Outcome::Unchanged, Outcome::Unchanged));
    let bare = app::dispatcher(&app.iso.config(), &app.deps).unwrap();
    assert_eq!(otc_tools::tools::knowledge::wiki::pages::regenerate(&bare, tenant.id, vault).await.unwrap(), None);
    app.stop().await;
}

/// The scheduled lint is each tenant's upkeep item: whichever of two workers claims it runs it,
/// once per interval, and when one worker stops the other goes on with every tenant's.
#[tokio::test]
async fn the_scheduled_lint_runs_per_tenant_on_whichever_worker_claims_it() {
    use otc_store::upkeep::WIKI_LINT;
    let iso = Isolation::new().await;
    let store = iso.store();
    let tenants = [Tenant::create(&store, "acme").await, Tenant::create(&store, "beta").await];
    let mut env = iso.env();
    for (k, v) in [
        ("OTC__WIKI__FOLDER", "wiki"),
        ("OTC__WORKER__LEASE_TTL_SECS", "3"),
        ("OTC__MAINTENANCE__ENABLED", "true"),
        ("OTC__MAINTENANCE__WIKI_LINT__ENABLED", "true"),
        ("OTC__MAINTENANCE__WIKI_LINT__INTERVAL_HOURS", "0.0003"),
        ("OTC__MAINTENANCE__WIKI_LINT__MAX_NOTES", "50"),
    ] {
        env.push((k.into(), v.into()));
    }
    let runs = || {
        let store = store.clone();
        let ids: Vec<uuid::Uuid> = tenants.iter().map(|t| t.id).collect();
        async move {
            let mut runs = Vec::new();
            for id in ids {
                let mut tx = store.begin(id).await.unwrap();
                runs.push(tx.upkeep_item(WIKI_LINT).await.unwrap().map_or(0, |(_, runs)| runs));
                tx.commit().await.unwrap();
            }
            runs
        }
    };
    let until = |target: Vec<i64>| {
        let runs = runs.clone();
        async move {
            for _ in 0..300 {
                let now = runs().await;
                if now.iter().zip(&target).all(|(n, t)| n >= t) {
                    return now;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            runs().await
        }
    };
    let mut one = Child::start(env.clone(), &["worker"], false);
    let mut two = Child::start(env, &["worker"], false);
    let reached = until(vec![2, 2]).await;
    assert!(reached.iter().all(|&r| r >= 2), "each tenant linted every interval: {reached:?}");
    let log = format!("{}{}", one.log_text(), two.log_text());
    for tenant in &tenants {
        let summary = log.lines().find(|l| {
            l.contains("scheduled wiki lint") && !l.contains("lint done") && l.contains(&tenant.id.to_string())
        });
        let summary = summary.unwrap_or_else(|| panic!("one summary line per vault; log:\n{log}"));
        assert!(summary.contains("Notes"), "{summary}");
    }

    // One worker stops: the other goes on with both tenants' lint.
    one.signal("TERM");
    assert_eq!(one.wait(Duration::from_secs(20)).code(), Some(0));
    let before = runs().await;
    let after = until(before.iter().map(|r| r + 2).collect()).await;
    assert!(after.iter().zip(&before).all(|(a, b)| a >= &(b + 2)), "{before:?} -> {after:?}; log:\n{}", two.log_text());
    two.signal("TERM");
    two.wait(Duration::from_secs(20));
}

/// The fake chat endpoint: every request it got, and an answer by what the pages say (SAME,
/// DIFF, FAIL for a 500, anything else overlapping).
#[derive(Default)]
struct Fake {
    requests: Mutex<Vec<(Option<String>, Value)>>,
}

async fn fake_judge() -> (Arc<Fake>, String) {
    async fn chat(
        axum::extract::State(fake): axum::extract::State<Arc<Fake>>,
        headers: axum::http::HeaderMap,
        axum::Json(body): axum::Json<Value>,
    ) -> axum::response::Response {
        use axum::response::IntoResponse;
        let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string);
        let text = body["messages"][1]["content"].as_str().unwrap_or("").to_string();
        fake.requests.lock().unwrap().push((auth, body));
        let second = text.split("Second (").nth(1).unwrap_or("");
        if second.contains("FAIL") {
            return axum::http::StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
        let verdict = if second.contains("SAME") {
            "same_topic"
        } else if second.contains("DIFF") {
            "different"
        } else {
            "overlapping"
        };
        let content = format!("```json\n{{\"verdict\": \"{verdict}\", \"rationale\": \"Because.\"}}\n```");
        axum::Json(json!({"choices": [{"message": {"role": "assistant", "content": content}}]})).into_response()
    }
    let fake = Arc::new(Fake::default());
    let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(chat)).with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (fake, format!("http://{addr}/v1"))
}

#[tokio::test]
async fn the_judge_decides_only_soft_verdicts_within_its_daily_cap() {
    let (fake, url) = fake_judge().await;
    let app = TestApp::spawn_with(|c| {
        wiki(c);
        c.wiki.judge.base_url = Some(url.clone());
        c.wiki.judge.model = "judge-1".into();
        c.wiki.judge.api_key = Some(otc_config::Secret::new("sk-test"));
        c.wiki.judge.max_calls_per_day = 3;
        c.wiki.judge.max_note_chars = 40;
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let long_tail = "x".repeat(200);
    app.seed(
        &token,
        V,
        &[
            ("wiki/Active recall.md", Some(format!("SAME testing yourself {long_tail}TAIL\n").as_str())),
            ("wiki/Interleaving.md", Some("DIFF mixing problems\n")),
            ("wiki/Broken.md", Some("FAIL\n")),
            ("wiki/Vague.md", Some("about something\n")),
            ("Notes/Study.md", Some("[[Active recall|retrieval practice]], [[Interleaving|mixed practice]].\n")),
            ("Notes/More.md", Some("[[Broken|shaky topic]] and [[Vague|hazy topic]].\n")),
        ],
    )
    .await;
    let count = || fake.requests.lock().unwrap().len();
    let find = |topic: &'static str, judge: Option<bool>| {
        let (app, token) = (&app, &token);
        let mut args = json!({"vault": V, "topic": topic});
        if let Some(j) = judge {
            args["judge"] = json!(j);
        }
        async move { tool(app, token, "find_existing_page", args).await }
    };

    // Off by default: soft evidence stays ambiguous and nothing is sent.
    assert_eq!(find("retrieval practice", None).await["verdict"], "ambiguous");
    assert_eq!(count(), 0);
    // Asked: one same_topic makes exists, with who decided it.
    let same = find("retrieval practice", Some(true)).await;
    assert_eq!(same["verdict"], "exists", "{same}");
    assert_eq!(same["judged_by"]["paths"][0], "wiki/Active recall.md", "{same}");
    assert_eq!(same["judged_by"]["model"], "judge-1");
    assert_eq!(same["candidates"][0]["judged"]["verdict"], "same_topic", "{same}");
    {
        let requests = fake.requests.lock().unwrap();
        let (auth, body) = &requests[0];
        assert_eq!(auth.as_deref(), Some("Bearer sk-test"));
        assert_eq!(body["model"], "judge-1");
        assert!(body.get("temperature").is_none() && body.get("max_tokens").is_none(), "{body}");
        let text = body["messages"][1]["content"].as_str().unwrap();
        assert!(text.contains("retrieval practice") && !text.contains("TAIL"), "each side is cut: {text}");
    }
    // The same question again costs nothing.
    assert_eq!(find("retrieval practice", Some(true)).await["verdict"], "exists");
    assert_eq!(count(), 1);
    // Every candidate different: new.
    let diff = find("mixed practice", Some(true)).await;
    assert_eq!(diff["verdict"], "new", "{diff}");
    assert_eq!(diff["judged_by"]["verdict"], "different");
    // An identity match is final and never sent.
    assert_eq!(find("Interleaving", Some(true)).await["verdict"], "exists");
    assert_eq!(count(), 2);
    // A failing endpoint leaves the verdict as the evidence made it, and the call counts.
    let failed = find("shaky topic", Some(true)).await;
    assert_eq!(failed["verdict"], "ambiguous", "{failed}");
    assert!(failed["skipped"].to_string().contains("the judge failed"), "{failed}");
    assert_eq!(count(), 3);
    // The day's three calls are spent: nothing more is sent.
    let capped = find("hazy topic", Some(true)).await;
    assert_eq!(capped["verdict"], "ambiguous", "{capped}");
    assert!(capped["skipped"].to_string().contains("spent"), "{capped}");
    assert_eq!(count(), 3);
    app.stop().await;
}

#[tokio::test]
async fn lint_wiki_asks_the_judge_about_near_duplicates_but_never_with_a_page_excluded_from_egress() {
    let (fake, url) = fake_judge().await;
    let app = TestApp::spawn_with(|c| {
        wiki(c);
        crate::embeddings::local(c);
        c.wiki.judge.base_url = Some(url.clone());
        c.wiki.judge.model = "judge-1".into();
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let text = "Spaced repetition schedules each review of a card at growing intervals, so that forgetting is \
                interrupted just before it happens.";
    app.seed(
        &token,
        V,
        &[
            // The same heading and text under two titles: 0.97 alike, clear of the floor
            // (0.909). With headings of their own the pair sat on it (0.915 under the packaged
            // model file, 0.893 under the quantized one).
            ("wiki/Spacing.md", Some(format!("# Spaced repetition\n{text} SAME\n").as_str())),
            ("wiki/Spaced repetition.md", Some(format!("# Spaced repetition\n{text} SAME\n").as_str())),
            ("wiki/Other.md", Some("# Gardening\nTomatoes need water and sun.\n")),
        ],
    )
    .await;
    app.deps.embedding.drain(tenant.id, tenant.vault_id).await.unwrap();
    let lint = tool(&app, &token, "lint_wiki", json!({"vault": V, "checks": ["near_duplicate"]})).await;
    let near = &lint["proposals"][0];
    assert_eq!(near["kind"], "near_duplicate", "{lint}");
    assert_eq!(near["judge_verdict"]["verdict"], "same_topic", "on by default with a judge: {lint}");
    assert_eq!(lint["judge_verdicts"], json!({"same_topic": 1}), "{lint}");
    assert_eq!(fake.requests.lock().unwrap().len(), 1);
    let off = tool(&app, &token, "lint_wiki", json!({"vault": V, "checks": ["near_duplicate"], "judge": false})).await;
    assert!(off["proposals"][0].get("judge_verdict").is_none(), "{off}");
    // A page excluded from egress is never sent to the judge: the pair stays unjudged, and says so.
    let set = app
        .http
        .put(app.url("/v1/policies"))
        .bearer_auth(&token)
        .json(&json!({"egress_exclude_paths": ["wiki/Spacing.md"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(set.status(), 200);
    let kept = tool(&app, &token, "lint_wiki", json!({"vault": V, "checks": ["near_duplicate"]})).await;
    assert!(kept["proposals"][0].get("judge_verdict").is_none(), "{kept}");
    assert!(kept.to_string().contains("excluded from egress"), "{kept}");
    assert_eq!(fake.requests.lock().unwrap().len(), 1, "the judge was not asked again");
    app.stop().await;
}

/// index.md and log.md are one text for every reader, so they name only pages every reader
/// may read: a page the tenant's rules hide from one principal (or group) is left out, though
/// a reader with no rule of its own could read it.
#[tokio::test]
async fn the_generated_pages_never_name_a_page_some_reader_cannot_read() {
    let app = TestApp::spawn_with(wiki).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let bob = tenant.token_as(&app.store, "bob", "read:notes").await;
    app.seed(
        &token,
        V,
        &[
            ("wiki/SCHEMA.md", Some(SCHEMA)),
            ("wiki/people/Ada.md", Some("---\ntype: person\n---\nAda.\n")),
            ("wiki/private/Salaries.md", Some("---\ntype: concept\n---\nNot for bob.\n")),
        ],
    )
    .await;
    // bob's own rule: the wiki but its private folder.
    let rule =
        json!({"vault": V, "principal": "bob", "read_paths": ["wiki/*.md", "wiki/people/**", "wiki/concepts/**"]});
    let (status, answer) = crate::sync::api(&app, &token, reqwest::Method::PUT, "/v1/acl", Some(rule)).await;
    assert_eq!(status, 200, "{answer}");
    let (stop, worker) = start_worker(&app, wiki).await;
    commit_page(&app, &token, "wiki/concepts/Budget.md", "concept").await;
    let index = wait_for(&app, &token, "wiki/index.md", |t| t.contains("Budget")).await;
    assert!(index.contains("[[wiki/people/Ada|Ada]]"), "{index}");
    assert!(!index.contains("Salaries"), "a page hidden from bob is named to nobody: {index}");
    let log = wait_for(&app, &token, "wiki/log.md", |t| t.contains("Budget")).await;
    assert!(!log.contains("Salaries"), "{log}");
    // bob reads the index, and finds nothing of the hidden page in it.
    let read = tool(&app, &bob, "read_note", json!({"vault": V, "path": "wiki/index.md"})).await;
    assert!(!read.to_string().contains("Salaries"), "{read}");
    let _ = stop.send(());
    worker.await.unwrap();
}
