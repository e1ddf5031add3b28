//! The vault index: every corpus vault against an independent count, Obsidian's rule for
//! ambiguous names, incremental upkeep (new notes resolve dangling links, deletes unresolve
//! them, Excluded files), read-your-writes, retries and dead letters, and index_vault as a task.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use otc_indexer::{Indexer, IndexerSettings};
use otc_store::testing::{Table, count_unfiltered, index_table_shapes};
use reqwest::Method;
use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp};
use crate::mcp::{call, error_of};
use crate::sync::{api, corpus, remote_env, run_ok, upload};

/// Writes (`Some(text)`) and deletes (`None`) in one commit through the sync API.
pub(crate) async fn commit(app: &TestApp, token: &str, vault: &str, changes: &[(&str, Option<&str>)]) -> Value {
    let body = try_commit(app, token, vault, changes).await.unwrap_or_else(|refused| panic!("{refused}"));
    assert_eq!(body["indexed"], true, "the commit was indexed before the response: {body}");
    body
}

/// [`commit`], with a refusal returned rather than a failed test.
async fn try_commit(app: &TestApp, token: &str, vault: &str, changes: &[(&str, Option<&str>)]) -> Result<Value, Value> {
    let mut list = Vec::new();
    for (path, content) in changes {
        list.push(match content {
            Some(text) => {
                let hash = upload(app, token, vault, text.as_bytes()).await;
                json!({"path": path, "expect": "any", "put": {"hash": hash}})
            }
            None => json!({"path": path, "expect": "any", "delete": true}),
        });
    }
    let (status, body) =
        api(app, token, Method::POST, &format!("/v1/vaults/{vault}/commit"), Some(json!({"changes": list}))).await;
    if status.is_success() { Ok(body) } else { Err(body) }
}

/// (kind, target, resolved path) of every link of `vault`, per source note, in file order.
pub(crate) async fn links_by_note(
    app: &TestApp,
    tenant: uuid::Uuid,
    vault: uuid::Uuid,
) -> BTreeMap<String, Vec<(String, String, Option<String>)>> {
    let mut tx = app.store.begin(tenant).await.unwrap();
    let mut out: BTreeMap<String, Vec<_>> = BTreeMap::new();
    let mut after: Option<(String, i32)> = None;
    loop {
        let page = tx.vault_links(vault, after.as_ref().map(|(p, o)| (p.as_str(), *o)), 500).await.unwrap();
        let Some((last, _)) = page.last() else { break };
        let last = last.clone();
        for (source, link) in page {
            out.entry(source).or_default().push((link.kind, link.target, link.resolved_path));
        }
        after = Some((last.clone(), out[&last].len() as i32 - 1));
    }
    tx.commit().await.unwrap();
    out
}

fn status_of<'a>(status: &'a Value, vault: &str) -> &'a Value {
    status["structuredContent"]["vaults"].as_array().unwrap().iter().find(|v| v["vault"] == vault).unwrap()
}

#[tokio::test]
async fn every_corpus_vault_matches_an_independent_count() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let env = remote_env(&app, &token);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/count_vault.py");
    for name in ["jsoncanvas", "kepano-obsidian", "obsidian-tasks-demo", "obsidian-tasks-docs", "starter-vault"] {
        let dir = corpus(name).display().to_string();
        let mut tx = app.store.begin(tenant.id).await.unwrap();
        tx.create_vault(name).await.unwrap();
        tx.commit().await.unwrap();
        let (env2, dir2, vault) = (env.clone(), dir.clone(), name.to_string());
        tokio::task::spawn_blocking(move || run_ok(&env2, &["vault", "import", &dir2, "--vault", &vault, "--quiet"]))
            .await
            .unwrap();
        let out = std::process::Command::new("python3").arg(script).arg(&dir).output().expect("python3 runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let expected: Value = serde_json::from_slice(&out.stdout).unwrap();

        // The totals, as get_index_status reports them.
        let status = call(&app, "/mcp", &token, "get_index_status", json!({})).await;
        let got = status_of(&status, name);
        assert_eq!(got["state"], "ready", "{name}: {got}");
        assert_eq!(got["lag"], 0, "{name}: {got}");
        for (ours, theirs) in [
            ("notes", "notes"),
            ("links", "body_links"),
            ("embeds", "embeds"),
            ("property_links", "property_links"),
            ("tags", "tags"),
            ("unresolved_links", "unresolved"),
        ] {
            assert_eq!(got[ours], expected[theirs], "{name}: {ours} (index) vs {theirs} (independent count)");
        }

        // Note by note: what each link resolved to, or that it did not.
        let mut tx = app.store.begin(tenant.id).await.unwrap();
        let vault_id = tx.vault_by_name(name).await.unwrap().unwrap().id;
        tx.commit().await.unwrap();
        let links = links_by_note(&app, tenant.id, vault_id).await;
        for (note, pairs) in expected["resolved"].as_object().unwrap() {
            let theirs: BTreeSet<(String, String)> = pairs
                .as_array()
                .unwrap()
                .iter()
                .map(|p| (p[0].as_str().unwrap().to_string(), p[1].as_str().unwrap().to_string()))
                .collect();
            let ours: BTreeSet<(String, String)> = links
                .get(note)
                .into_iter()
                .flatten()
                .filter_map(|(_, target, resolved)| Some((target.clone(), resolved.clone()?)))
                .filter(|(target, _)| !target.is_empty())
                .collect();
            let theirs: BTreeSet<(String, String)> = theirs.into_iter().filter(|(t, _)| !t.is_empty()).collect();
            assert_eq!(ours, theirs, "{name}/{note}: resolved links");
        }
        for (note, targets) in expected["unresolved_targets"].as_object().unwrap() {
            let mut theirs: Vec<String> =
                targets.as_array().unwrap().iter().map(|t| t.as_str().unwrap().into()).collect();
            let mut ours: Vec<String> = links
                .get(note)
                .into_iter()
                .flatten()
                .filter(|(_, _, resolved)| resolved.is_none())
                .map(|(_, target, _)| target.clone())
                .collect();
            theirs.sort();
            ours.sort();
            assert_eq!(ours, theirs, "{name}/{note}: unresolved links");
        }
    }

    // The corpus's one ambiguous name: starter-vault has two Tasks.md and no file called that at
    // the root, so a bare [[Tasks]] takes the source's folder first, then the shortest path.
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let vault_id = tx.vault_by_name("starter-vault").await.unwrap().unwrap().id;
    let candidates = tx.paths_named(vault_id, &["tasks.md".to_string()]).await.unwrap();
    tx.commit().await.unwrap();
    let resolver = otc_vault::links::Resolver::new(candidates);
    assert_eq!(resolver.resolve("Tasks", "Home.md"), Some("_data_/pinned/Tasks.md"));
    assert_eq!(
        resolver.resolve("Tasks", "Projects/Top Secret Project/Plan.md"),
        Some("Projects/Top Secret Project/Tasks.md")
    );
    app.stop().await;
}

#[tokio::test]
async fn ambiguous_names_resolve_by_obsidians_rule() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    commit(
        &app,
        &token,
        "Notes",
        &[
            ("Sub/Page.md", Some("short")),
            ("Sub/Deep/Page.md", Some("deeper")),
            ("Other/Page.md", Some("elsewhere")),
            ("Root.md", Some("[[Page]] [[Deep/Page]] [[/Other/Page]] [[/Page]] [[./Sub/Page]]")),
            ("Sub/Deep/From.md", Some("[[Page]] [[../Page]] [[page.md]]")),
            ("Other/From.md", Some("[[Page]]")),
            ("Away/From.md", Some("[[Page]] ![[pic.png]]")),
            ("Away/pic.png", Some("not really a png")),
        ],
    )
    .await;
    let links = links_by_note(&app, tenant.id, tenant.vault_id).await;
    let resolved = |note: &str| -> Vec<Option<String>> { links[note].iter().map(|(_, _, r)| r.clone()).collect() };
    let s = |p: &str| Some(p.to_string());
    // From the root every candidate is "in the source folder": the shortest path wins.
    assert_eq!(
        resolved("Root.md"),
        [s("Sub/Page.md"), s("Sub/Deep/Page.md"), s("Other/Page.md"), None, s("Sub/Page.md")]
    );
    assert_eq!(resolved("Sub/Deep/From.md"), [s("Sub/Deep/Page.md"), s("Sub/Page.md"), s("Sub/Deep/Page.md")]);
    assert_eq!(resolved("Other/From.md"), [s("Other/Page.md")]);
    // From a folder with no candidate: the shortest path.
    assert_eq!(resolved("Away/From.md"), [s("Sub/Page.md"), s("Away/pic.png")]);

    // A root file of the name wins from anywhere once it exists: the create re-resolves them.
    commit(&app, &token, "Notes", &[("Page.md", Some("root"))]).await;
    let links = links_by_note(&app, tenant.id, tenant.vault_id).await;
    for note in ["Sub/Deep/From.md", "Other/From.md", "Away/From.md"] {
        assert_eq!(links[note][0].2.as_deref(), Some("Page.md"), "{note}");
    }
    assert_eq!(links["Root.md"][3].2.as_deref(), Some("Page.md"), "[[/Page]] now resolves");
    app.stop().await;
}

#[tokio::test]
async fn creates_and_deletes_re_resolve_other_notes_and_reads_see_writes() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    commit(
        &app,
        &token,
        "Notes",
        &[
            ("A.md", Some("---\nup: \"[[Later]]\"\n---\nSee [[Later#Part|later]] and #topic\n- [ ] todo\n")),
            ("B.md", Some("[[A]]")),
        ],
    )
    .await;
    // The response came after indexing: the index already has both notes.
    let links = links_by_note(&app, tenant.id, tenant.vault_id).await;
    assert_eq!(links["A.md"], [("property".into(), "Later".into(), None), ("body".into(), "Later".into(), None),]);
    assert_eq!(links["B.md"][0].2.as_deref(), Some("A.md"));

    // A new note resolves the dangling links of another note, property link included.
    commit(&app, &token, "Notes", &[("Folder/Later.md", Some("# Part\n"))]).await;
    let links = links_by_note(&app, tenant.id, tenant.vault_id).await;
    assert!(links["A.md"].iter().all(|(_, _, r)| r.as_deref() == Some("Folder/Later.md")), "{:?}", links["A.md"]);

    // Deleting it unresolves them again; deleting A removes A's rows and unresolves B's link.
    commit(&app, &token, "Notes", &[("Folder/Later.md", None), ("A.md", None)]).await;
    let links = links_by_note(&app, tenant.id, tenant.vault_id).await;
    assert!(!links.contains_key("A.md"));
    assert_eq!(links["B.md"][0].2, None);
    let status = call(&app, "/mcp", &token, "get_index_status", json!({})).await;
    let got = status_of(&status, "Notes");
    assert_eq!(
        (got["notes"].as_i64(), got["unresolved_links"].as_i64(), got["tags"].as_i64()),
        (Some(1), Some(1), Some(0))
    );
    assert_eq!(got["head_seq"], got["indexed_seq"]);
    // Nothing of A or Later is left behind in any index table: B's note, link and chunk remain.
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let mut rows = Vec::new();
    for table in Table::INDEX {
        rows.push(count_unfiltered(&mut tx, table).await.unwrap());
    }
    tx.commit().await.unwrap();
    assert_eq!(rows, [1, 1, 1, 0, 0, 0, 1], "index_files, notes, links, tags, properties, tasks, chunks");

    // Excluded files: a change to .obsidian/app.json re-marks every file; excluded notes stay
    // link targets.
    commit(&app, &token, "Notes", &[("Archive/Old.md", Some("old")), ("Keep.md", Some("[[Old]]"))]).await;
    commit(&app, &token, "Notes", &[(".obsidian/app.json", Some(r#"{"userIgnoreFilters": ["Archive/"]}"#))]).await;
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    assert_eq!(tx.is_excluded(tenant.vault_id, "Archive/Old.md").await.unwrap(), Some(true));
    assert_eq!(tx.is_excluded(tenant.vault_id, "Keep.md").await.unwrap(), Some(false));
    tx.commit().await.unwrap();
    let links = links_by_note(&app, tenant.id, tenant.vault_id).await;
    assert_eq!(links["Keep.md"][0].2.as_deref(), Some("Archive/Old.md"));
    commit(&app, &token, "Notes", &[(".obsidian/app.json", Some(r#"{"userIgnoreFilters": []}"#))]).await;
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    assert_eq!(tx.is_excluded(tenant.vault_id, "Archive/Old.md").await.unwrap(), Some(false));
    tx.commit().await.unwrap();
    app.stop().await;
}

/// The index tables have no foreign keys among them, and no secondary index of theirs leads
/// with tenant_id: per-row checks and cascades, and lookups by path through an index on
/// (tenant_id, vault_id, key), ran on plans made while a vault's tables were small and scanned
/// the whole vault per row (migration 20261207000001).
#[tokio::test]
async fn index_tables_keep_no_per_row_triggers_and_no_index_a_path_lookup_could_pick() {
    let app = TestApp::spawn().await;
    let (keys, indexes) = index_table_shapes(&app.store).await.unwrap();
    assert!(keys.is_empty(), "foreign keys among the index tables: {keys:?}");
    assert!(indexes.len() >= 6, "{indexes:?}");
    for (index, first) in &indexes {
        assert_ne!(first, "tenant_id", "{index} leads with tenant_id");
    }
    app.stop().await;
}

#[tokio::test]
async fn failing_jobs_back_off_run_alone_and_are_dead_lettered_with_their_error() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    commit(&app, &token, "Notes", &[("Good.md", Some("[[Bad]]")), ("Bad.md", Some("lost content"))]).await;

    // Bad.md's content disappears from the object store; both notes are queued again.
    let config = app.iso.config();
    let blobs = otc_blobs::Blobs::from_config(&config.object_store, Duration::from_secs(5)).unwrap();
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let bad = tx.file(tenant.vault_id, "Bad.md").await.unwrap().unwrap();
    blobs.delete_blob(tenant.id, &bad.hash).await.unwrap();
    tx.queue_index_job(tenant.vault_id, &json!({"paths": ["Good.md", "Bad.md"]})).await.unwrap();
    tx.queue_index_job(tenant.vault_id, &json!({"paths": ["Good.md"]})).await.unwrap();
    tx.commit().await.unwrap();

    let settings =
        IndexerSettings { max_attempts: 3, max_backoff: Duration::ZERO, batch_jobs: 10, ..IndexerSettings::default() };
    let indexer = Indexer::new(app.store.clone(), blobs, settings);
    // The batch of both jobs fails and both back off; from then on each runs alone: the bad
    // one fails twice more and is dead-lettered after its third attempt, the good one lands.
    for _ in 0..6 {
        indexer.run_once().await.unwrap();
    }
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let status = tx.index_status(tenant.vault_id).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(status.queued_jobs, 0);
    assert_eq!(status.dead_jobs, 1);
    let error = status.last_error.unwrap();
    assert!(error.contains("reading Bad.md from the object store"), "{error}");
    let reported = call(&app, "/mcp", &token, "get_index_status", json!({})).await;
    assert_eq!(status_of(&reported, "Notes")["state"], "degraded");
    assert_eq!(status_of(&reported, "Notes")["dead_jobs"], 1);
    assert_eq!(status_of(&reported, "Notes")["last_error"], "object_store: a file could not be read", "no path in it");
    app.stop().await;
}

#[tokio::test]
async fn index_vault_answers_inline_or_as_a_task_and_can_be_cancelled() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let env = remote_env(&app, &token);
    let dir = corpus("starter-vault").display().to_string();
    tokio::task::spawn_blocking(move || run_ok(&env, &["vault", "import", &dir, "--vault", "Notes", "--quiet"]))
        .await
        .unwrap();

    // Inside the budget: the result itself, concise then detailed.
    let done = call(&app, "/mcp", &token, "index_vault", json!({"vault": "Notes", "response_format": "concise"})).await;
    let result = &done["structuredContent"];
    assert_eq!(result["status"], "completed", "{done}");
    assert_eq!(result["notes"], 100);
    assert!(result.get("links").is_none(), "concise drops the bookkeeping: {result}");
    let detailed = call(&app, "/mcp", &token, "index_vault", json!({"vault": "Notes", "folder": "Projects"})).await;
    assert!(detailed["structuredContent"]["notes"].as_u64().unwrap() < 100);
    assert!(detailed["structuredContent"]["links"].as_u64().is_some());

    let err = call(&app, "/mcp", &token, "index_vault", json!({"vault": "Nope"})).await;
    assert_eq!(error_of(&err)["code"], "vault_not_found");
    let (reader, _) = tenant.token(&app.store, "read:notes", false, None).await;
    let err = call(&app, "/mcp", &reader, "index_vault", json!({"vault": "Notes"})).await;
    assert_eq!(error_of(&err)["code"], "forbidden");
    app.stop().await;

    // A zero budget: every call answers with a handle to poll.
    let app = TestApp::spawn_with(|c| {
        c.tools.task_budget_ms = 0;
        c.worker.index_rebuild_batch = 2;
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let env = remote_env(&app, &token);
    let dir = corpus("starter-vault").display().to_string();
    tokio::task::spawn_blocking(move || run_ok(&env, &["vault", "import", &dir, "--vault", "Notes", "--quiet"]))
        .await
        .unwrap();
    let handle = call(&app, "/mcp", &token, "index_vault", json!({"vault": "Notes"})).await;
    let h = &handle["structuredContent"];
    assert_eq!(h["status"], "working", "{handle}");
    assert_eq!(h["poll_tool"], "get_task_status");
    assert_eq!(h["tool"], "index_vault");
    let task_id = h["task_id"].as_str().unwrap().to_string();
    assert!(handle["content"][0]["text"].as_str().unwrap().contains(&task_id));
    // One rebuild per vault at a time.
    let second = call(&app, "/mcp", &token, "index_vault", json!({"vault": "Notes"})).await;
    let refused = error_of(&second);
    assert_eq!(
        (refused["code"].as_str(), refused["details"]["reason"].as_str()),
        (Some("conflict"), Some("rebuild_running"))
    );
    // Any gateway answers for the task: poll it through a second one.
    let other_pod = app.another_gateway(|_| {}).await;
    let status = app
        .http
        .post(format!("http://{}/mcp", other_pod.addr))
        .bearer_auth(&token)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "get_task_status", "arguments": {"task_id": task_id}}}))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(status["result"]["structuredContent"]["tool"], "index_vault", "{status}");
    other_pod.stop().await.unwrap();
    let finished = poll(&app, &token, &task_id).await;
    assert_eq!(finished["status"], "completed", "{finished}");
    assert_eq!(finished["result"]["notes"], 100);
    assert_eq!(finished["progress"]["done"], 100);

    // Someone else's token, and an id that was never issued, both read as not found.
    let other = tenant.token_as(&app.store, "bob", "*").await;
    for (who, id) in [(other.as_str(), task_id.as_str()), (token.as_str(), "00000000-0000-0000-0000-000000000000")] {
        let err = call(&app, "/mcp", who, "get_task_status", json!({"task_id": id})).await;
        assert_eq!(error_of(&err)["code"], "not_found");
        let err = call(&app, "/mcp", who, "cancel_task", json!({"task_id": id})).await;
        assert_eq!(error_of(&err)["code"], "not_found");
    }

    // Cancel: the answer right after may still be working; it then ends cancelled.
    let handle = call(&app, "/mcp", &token, "index_vault", json!({"vault": "Notes"})).await;
    let task_id = handle["structuredContent"]["task_id"].as_str().unwrap().to_string();
    let cancelled = call(&app, "/mcp", &token, "cancel_task", json!({"task_id": task_id})).await;
    assert_eq!(cancelled["isError"], false, "{cancelled}");
    let end = poll(&app, &token, &task_id).await;
    assert_eq!(end["status"], "cancelled", "{end}");
    assert!(end["progress"]["done"].as_u64().unwrap() < 100);
    // A finished task is returned unchanged.
    let again = call(&app, "/mcp", &token, "cancel_task", json!({"task_id": task_id})).await;
    assert_eq!(again["structuredContent"]["status"], "cancelled");
    app.stop().await;
}

/// Polls get_task_status until the task leaves `working`.
pub(crate) async fn poll(app: &TestApp, token: &str, task_id: &str) -> Value {
    for _ in 0..600 {
        let status = call(app, "/mcp", token, "get_task_status", json!({"task_id": task_id})).await;
        let s = status["structuredContent"].clone();
        if s["status"] != "working" {
            return s;
        }
        assert_eq!(s["retry_after_seconds"], 2);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {task_id} never finished");
}

#[tokio::test]
async fn another_tenants_index_is_unreachable() {
    let app = TestApp::spawn().await;
    let a = Tenant::create(&app.store, "tenant-a").await;
    let b = Tenant::create(&app.store, "tenant-b").await;
    let (ta, _) = a.token(&app.store, "*", false, None).await;
    let (tb, _) = b.token(&app.store, "*", false, None).await;
    commit(&app, &ta, "Notes", &[("Secret.md", Some("[[Plan]] #classified")), ("Plan.md", Some("x"))]).await;
    // B's vault of the same name stays empty, whatever B asks.
    let status = call(&app, "/mcp", &tb, "get_index_status", json!({})).await;
    let got = status_of(&status, "Notes");
    assert_eq!((got["notes"].as_i64(), got["links"].as_i64(), got["tags"].as_i64()), (Some(0), Some(0), Some(0)));
    let mut tx = app.store.begin(b.id).await.unwrap();
    assert!(tx.vault_links(a.vault_id, None, 100).await.unwrap().is_empty(), "B reads A's links by A's vault id");
    assert!(tx.paths_named(a.vault_id, &["plan.md".into()]).await.unwrap().is_empty());
    assert_eq!(tx.index_status(a.vault_id).await.unwrap().notes, 0);
    tx.commit().await.unwrap();
    // B's rebuild of its own vault leaves A's rows alone.
    let done = call(&app, "/mcp", &tb, "index_vault", json!({"vault": "Notes"})).await;
    assert_eq!(done["structuredContent"]["notes"], 0);
    let status = call(&app, "/mcp", &ta, "get_index_status", json!({})).await;
    assert_eq!(status_of(&status, "Notes")["notes"], 2);
    app.stop().await;
}

#[tokio::test]
async fn incremental_indexing_under_concurrent_writers_equals_a_full_rebuild() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    // A worker's indexer runs beside the gateways' inline indexing and competes for the jobs.
    let config = app.iso.config();
    let blobs = otc_blobs::Blobs::from_config(&config.object_store, Duration::from_secs(5)).unwrap();
    let settings = IndexerSettings { poll_interval: Duration::from_millis(5), ..IndexerSettings::default() };
    let worker = Indexer::new(app.store.clone(), blobs.clone(), settings.clone());
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let running = tokio::spawn(async move {
        let mut stopped = stopped;
        worker.run(async move { stopped.wait_for(|s| *s).await.map(|_| ()).unwrap_or(()) }).await
    });

    // Four writers create, rewrite and delete notes that link to each other (and to names
    // that come and go), in folders so that ties between same-named files happen too.
    let app = std::sync::Arc::new(app);
    let mut writers = Vec::new();
    let (tenant_id, vault_id) = (tenant.id, tenant.vault_id);
    for w in 0..4u64 {
        let (app, token) = (app.clone(), token.clone());
        writers.push(tokio::spawn(async move {
            let mut seed = w * 7919 + 13;
            let mut next = move |n: u64| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (seed >> 33) % n
            };
            for _ in 0..25 {
                let path = format!("{}/n{}.md", ["a", "b", "a/c"][next(3) as usize], next(8));
                if next(4) == 0 {
                    // Deleting a path that is not there is refused as not found; that is fine here.
                    if let Err(refused) = try_commit(&app, &token, "Notes", &[(&path, None)]).await {
                        assert_eq!(refused["error"]["code"], "not_found", "{refused}");
                    }
                } else {
                    let body = format!("[[n{}]] ![[n{}]] #t{}\n", next(8), next(8), next(3));
                    let done = commit(&app, &token, "Notes", &[(&path, Some(&body))]).await;
                    // Read-your-writes, whether this call indexed or another writer's pass
                    // covered its commit: the index has reached it by the answer.
                    let mut tx = app.store.begin(tenant_id).await.unwrap();
                    let status = tx.index_status(vault_id).await.unwrap();
                    tx.commit().await.unwrap();
                    assert!(status.indexed_seq >= done["seq"].as_i64().unwrap(), "{done} answered before {status:?}");
                }
            }
        }));
    }
    for w in writers {
        w.await.unwrap();
    }
    let _ = stop.send(true);
    running.await.unwrap();
    let app = std::sync::Arc::try_unwrap(app).ok().unwrap();

    let incremental = links_by_note(&app, tenant.id, tenant.vault_id).await;
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let before = tx.index_status(tenant.vault_id).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(before.queued_jobs, 0);
    assert_eq!(before.indexed_seq, before.head_seq);
    Indexer::new(app.store.clone(), blobs, settings)
        .rebuild(tenant.id, tenant.vault_id, None, &otc_indexer::Quiet)
        .await
        .unwrap();
    let rebuilt = links_by_note(&app, tenant.id, tenant.vault_id).await;
    assert_eq!(incremental, rebuilt, "incremental upkeep and a full rebuild agree");
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let after = tx.index_status(tenant.vault_id).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        (before.notes, before.links, before.unresolved, before.tags),
        (after.notes, after.links, after.unresolved, after.tags)
    );
    app.stop().await;
}

#[tokio::test]
async fn index_vault_reports_progress_to_a_caller_that_asks() {
    let app = TestApp::spawn_with(|c| c.worker.index_rebuild_batch = 10).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let env = remote_env(&app, &token);
    let dir = corpus("starter-vault").display().to_string();
    tokio::task::spawn_blocking(move || run_ok(&env, &["vault", "import", &dir, "--vault", "Notes", "--quiet"]))
        .await
        .unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "index_vault", "arguments": {"vault": "Notes"}, "_meta": {"progressToken": "p-1"}}});
    let response = app
        .http
        .post(app.url("/mcp"))
        .bearer_auth(&token)
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    // The notifications come first on the stream, in order, then the result.
    let messages: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect();
    let progress: Vec<u64> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], "p-1");
            assert_eq!(m["params"]["total"].as_f64(), Some(100.0));
            m["params"]["progress"].as_f64().unwrap() as u64
        })
        .collect();
    assert!(progress.len() >= 2, "{text}");
    assert!(progress.windows(2).all(|w| w[0] < w[1]), "progress only grows: {progress:?}");
    assert_eq!(progress.last(), Some(&100));
    let result = messages.iter().find(|m| m["id"] == 7).expect("the result");
    assert_eq!(result["result"]["structuredContent"]["notes"], 100);
    app.stop().await;
}

/// Job claiming does not depend on the tenant count and is fair: one query finds the vaults
/// with due jobs across tenants, each once however many jobs it holds, and a pass takes one
/// batch from each, so a tenant with one job is not kept waiting behind one with hundreds.
#[tokio::test]
async fn one_pass_takes_a_batch_from_every_vault_with_due_jobs() {
    let app = TestApp::spawn_with(|c| c.index.inline_deadline_ms = 0).await;
    let busy = Tenant::create(&app.store, "busy").await;
    let quiet = Tenant::create(&app.store, "quiet").await;
    let (busy_token, _) = busy.token(&app.store, "*", false, None).await;
    let (quiet_token, _) = quiet.token(&app.store, "*", false, None).await;
    for i in 0..150 {
        let args = json!({"vault": "Notes", "path": format!("n{i}.md"), "content": format!("note {i}\n")});
        let out = call(&app, "/mcp", &busy_token, "write_note", args).await;
        assert_eq!(out["isError"], false, "{out}");
    }
    let out =
        call(&app, "/mcp", &quiet_token, "write_note", json!({"vault": "Notes", "path": "q.md", "content": "q\n"}))
            .await;
    assert_eq!(out["isError"], false, "{out}");

    let mut due = app.store.due_job_vaults(otc_store::INDEX_JOB, 10).await.unwrap();
    due.sort();
    let mut expected = vec![(busy.id, busy.vault_id), (quiet.id, quiet.vault_id)];
    expected.sort();
    assert_eq!(due, expected, "each vault once");

    let handled = app.deps.indexer.run_once().await.unwrap();
    assert_eq!(handled, IndexerSettings::default().batch_jobs as usize + 1, "a batch from each vault");
    let status = |tenant: &Tenant| {
        let (store, tenant, vault) = (app.store.clone(), tenant.id, tenant.vault_id);
        async move {
            let mut tx = store.begin(tenant).await.unwrap();
            tx.index_status(vault).await.unwrap()
        }
    };
    let (q, b) = (status(&quiet).await, status(&busy).await);
    assert_eq!((q.queued_jobs, q.indexed_seq), (0, q.head_seq), "the quiet tenant is indexed in the first pass");
    assert!(b.queued_jobs > 0, "the busy one still has jobs: {}", b.queued_jobs);
}
