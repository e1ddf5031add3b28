//! A huge note (issue 12): its write answers within `index.inline_deadline_ms`, other writes to
//! the vault are not held up behind its indexing, and the workers index its first
//! `index.max_indexed_bytes` with a warning on its index row. A commit that stops waiting
//! leaves its job queued as it was: no attempt counted, the vault's index lock released.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp};
use crate::sync::{api, upload};

const V: &str = "Notes";

/// Commits `path` with `bytes` through the sync API; returns the answer and how long the
/// commit took (the upload before it is not timed).
async fn put(app: &TestApp, token: &str, path: &str, bytes: &[u8]) -> (Value, Duration) {
    let hash = upload(app, token, V, bytes).await;
    let started = Instant::now();
    let (status, body) = api(
        app,
        token,
        reqwest::Method::POST,
        &format!("/v1/vaults/{V}/commit"),
        Some(json!({"changes": [{"path": path, "expect": "any", "put": {"hash": hash}}]})),
    )
    .await;
    let took = started.elapsed();
    assert_eq!(status, StatusCode::OK, "{body}");
    (body, took)
}

async fn status(app: &TestApp, tenant: &Tenant) -> otc_store::IndexStatus {
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    tx.index_status(tenant.vault_id).await.unwrap()
}

async fn warnings(app: &TestApp, tenant: &Tenant, path: &str) -> Option<Vec<String>> {
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    otc_store::testing::note_warnings(&mut tx, tenant.vault_id, path).await.unwrap()
}

#[tokio::test]
async fn a_commit_stops_waiting_for_its_indexing_at_the_deadline_and_leaves_the_job_queued() {
    let deadline = Duration::from_millis(300);
    let app = TestApp::spawn_with(|c| c.index.inline_deadline_ms = 300).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;

    // Another indexer holds the vault (as one indexing a huge note would).
    let mut held = app.store.begin(tenant.id).await.unwrap();
    held.lock_index(tenant.vault_id, true).await.unwrap();
    let (body, took) = put(&app, &token, "A.md", b"# A\n[[B]]\n").await;
    assert_eq!(body["indexed"], false, "{body}");
    assert!(took >= deadline && took < deadline + Duration::from_secs(3), "answered after {took:?}");
    let now = status(&app, &tenant).await;
    assert_eq!((now.queued_jobs, now.dead_jobs, now.last_error.clone()), (1, 0, None), "no attempt was counted");
    assert_eq!(now.notes, 0);

    // Once the other indexer is done, the job is indexed: the abandoned attempt holds nothing.
    held.commit().await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), app.deps.indexer.catch_up(tenant.id, tenant.vault_id))
        .await
        .expect("the index lock was released")
        .unwrap();
    let now = status(&app, &tenant).await;
    assert_eq!((now.queued_jobs, now.dead_jobs, now.notes, now.links), (0, 0, 1, 1));
    assert_eq!(warnings(&app, &tenant, "A.md").await, Some(vec![]));
}

/// About `len` bytes of prose with a link and a tag now and then.
fn big_note(len: usize) -> String {
    let line = "Some words of a long note, and then some more words to fill the line.\n";
    let mut text = String::with_capacity(len + 128);
    let mut i = 0;
    while text.len() < len {
        i += 1;
        if i % 100 == 0 {
            text.push_str(&format!("## Part {i}\nSee [[Note {i}]] #part\n"));
        }
        text.push_str(line);
    }
    text
}

#[tokio::test]
async fn a_huge_note_holds_neither_its_write_nor_the_vault_and_its_first_bytes_are_indexed() {
    let deadline = Duration::from_millis(1_000);
    let slack = Duration::from_secs(4);
    let max = 1 << 20;
    let app = TestApp::spawn_with(|c| {
        c.index.inline_deadline_ms = 1_000;
        c.index.max_indexed_bytes = max;
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let big = big_note(48 << 20);

    let (_, took) = put(&app, &token, "Big.md", big.as_bytes()).await;
    assert!(took < deadline + slack, "the huge note's commit answered after {took:?}");
    // A small write to the same vault right after is not held behind it.
    let (_, took) = put(&app, &token, "Small.md", b"small [[Big]]\n").await;
    assert!(took < deadline + slack, "the next commit answered after {took:?}");
    let now = status(&app, &tenant).await;
    assert_eq!((now.dead_jobs, now.last_error.clone()), (0, None));

    // A worker (a later catch-up) indexes both: the huge note's first `max` bytes, cut at a line.
    tokio::time::timeout(Duration::from_secs(60), app.deps.indexer.catch_up(tenant.id, tenant.vault_id))
        .await
        .expect("indexed in time")
        .unwrap();
    let now = status(&app, &tenant).await;
    assert_eq!((now.queued_jobs, now.dead_jobs, now.notes), (0, 0, 2));
    let cut = big[..max].rfind('\n').unwrap() + 1;
    assert_eq!(
        warnings(&app, &tenant, "Big.md").await.unwrap(),
        [format!("indexed the first {cut} of {} bytes (index.max_indexed_bytes is {max})", big.len())]
    );
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let meta = tx.note_meta(tenant.vault_id, "Big.md", None).await.unwrap().unwrap();
    assert_eq!(meta.size, big.len() as i64, "the note is stored in full");
    let parts = big[..cut].matches("## Part").count();
    assert_eq!(meta.headings.as_array().unwrap().len(), parts, "headings of the indexed part only");
    assert_eq!(warnings(&app, &tenant, "Small.md").await, Some(vec![]));
}

#[tokio::test]
async fn a_stopped_indexer_leaves_jobs_queued_without_counting_an_attempt() {
    // 0: commits never wait for their indexing.
    let app = TestApp::spawn_with(|c| c.index.inline_deadline_ms = 0).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let (body, _) = put(&app, &token, "A.md", b"# A\n").await;
    assert_eq!(body["indexed"], false, "{body}");

    // Shut down (what SIGTERM does to a worker): its parsing stops, the batch rolls back.
    let stopped = otc_indexer::Indexer::new(app.store.clone(), app.deps.blobs.clone(), Default::default());
    stopped.shutdown();
    let refused = stopped.catch_up(tenant.id, tenant.vault_id).await;
    assert!(matches!(refused, Err(otc_indexer::IndexError::Cancelled)), "{refused:?}");
    let now = status(&app, &tenant).await;
    assert_eq!((now.queued_jobs, now.dead_jobs, now.last_error.clone(), now.notes), (1, 0, None, 0));

    // Another indexer takes the job as it was.
    let fresh = otc_indexer::Indexer::new(app.store.clone(), app.deps.blobs.clone(), Default::default());
    fresh.catch_up(tenant.id, tenant.vault_id).await.unwrap();
    let now = status(&app, &tenant).await;
    assert_eq!((now.queued_jobs, now.notes), (0, 1));
}

/// A note of `len` bytes or so: lines with two-byte characters, a heading every 20 lines.
fn paged_note(len: usize) -> String {
    let mut text = String::from("---\ntitle: Big\n---\n");
    let mut i = 0;
    while text.len() < len {
        i += 1;
        if i % 20 == 0 {
            text.push_str(&format!("## Part {i}\n"));
        }
        text.push_str(&format!("Line {i}: déjà vu, naïve café, and words enough to fill it out.\n"));
    }
    text
}

fn ok(result: &Value) -> &Value {
    assert_eq!(result["isError"], false, "{result}");
    &result["structuredContent"]
}

/// A note past `tools.max_parse_bytes` is read whole in pages (the cursor refused once the
/// note changes), its document map and a section come from the index, and an edit of it is
/// refused with the limit named, the note left as it was.
#[tokio::test]
async fn a_note_past_the_parse_limit_is_read_in_pages_and_refused_edits() {
    use crate::mcp::{call, error_of};
    let app = TestApp::spawn_with(|c| {
        c.tools.max_parse_bytes = 64 << 10;
        c.tools.read_page_bytes = 16 << 10;
    })
    .await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let text = paged_note(200_000);
    put(&app, &token, "Big.md", text.as_bytes()).await;
    app.deps.indexer.catch_up(tenant.id, tenant.vault_id).await.unwrap();

    // Page by page, each at most a page and ending at a line end, the whole note comes back.
    let mut read = String::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut args = json!({"vault": V, "path": "Big.md", "format": "content"});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let result = call(&app, "/mcp", &token, "read_note", args).await;
        let out = ok(&result);
        let content = out["content"].as_str().unwrap();
        assert!(content.len() <= 16 << 10 && content.ends_with('\n'), "page {pages}: {} bytes", content.len());
        let page = &out["page"];
        assert_eq!(page["start_byte"].as_u64().unwrap() as usize, read.len());
        assert_eq!(page["size"].as_u64().unwrap() as usize, text.len());
        let first_line = read.matches('\n').count() + 1;
        assert_eq!(page["start_line"].as_u64().unwrap() as usize, first_line);
        assert_eq!(page["end_line"].as_u64().unwrap() as usize, first_line + content.matches('\n').count() - 1);
        read.push_str(content);
        pages += 1;
        match out.get("next_cursor") {
            Some(next) => cursor = Some(next.as_str().unwrap().to_string()),
            None => break,
        }
    }
    assert_eq!(read, text);
    assert!(pages >= 13, "{pages} pages");

    // The concise default: the first page's body, after the frontmatter.
    let first =
        call(&app, "/mcp", &token, "read_note", json!({"vault": V, "path": "Big.md", "response_format": "concise"}))
            .await;
    assert!(ok(&first)["body"].as_str().unwrap().starts_with("Line 1: déjà vu"), "{first}");
    assert!(ok(&first)["next_cursor"].is_string());

    // The document map and a section, from the index.
    let map =
        call(&app, "/mcp", &token, "read_note", json!({"vault": V, "path": "Big.md", "format": "document-map"})).await;
    let headings = ok(&map)["headings"].as_array().unwrap().clone();
    let expected: Vec<usize> =
        text.lines().enumerate().filter(|(_, l)| l.starts_with("## Part")).map(|(n, _)| n + 1).collect();
    assert_eq!(headings.iter().map(|h| h["line"].as_u64().unwrap() as usize).collect::<Vec<_>>(), expected);
    assert_eq!(ok(&map)["frontmatter_fields"], json!(["title"]));
    let section = call(
        &app,
        "/mcp",
        &token,
        "read_note",
        json!({"vault": V, "path": "Big.md", "anchor": {"type": "heading", "heading": "Part 500"}}),
    )
    .await;
    let start = text.find("## Part 500\n").unwrap();
    let end = text.find("## Part 520\n").unwrap();
    assert_eq!(ok(&section)["section"]["text"], text[start..end], "{section}");
    assert_eq!(
        ok(&section)["section"]["start_line"].as_u64().unwrap() as usize,
        text[..start].matches('\n').count() + 1
    );

    // Edits that parse it are refused, naming the limit; the note is as it was.
    let hash = ok(&first)["content_hash"].clone();
    for (tool, args) in [
        (
            "append_note",
            json!({"vault": V, "path": "Big.md", "content": "more\n", "anchor": {"type": "heading", "heading": "Part 20"}}),
        ),
        (
            "patch_note",
            json!({"vault": V, "path": "Big.md", "operation": "append", "target_heading": "Part 20", "content": "x"}),
        ),
        ("read_note", json!({"vault": V, "path": "Big.md", "format": "full"})),
    ] {
        let result = call(&app, "/mcp", &token, tool, args).await;
        let err = error_of(&result);
        assert_eq!(err["code"], "compute_budget_exceeded", "{tool}: {err}");
        assert_eq!(err["details"]["limit"], "tools.max_parse_bytes", "{tool}: {err}");
        assert_eq!(err["details"]["size"].as_u64().unwrap() as usize, text.len());
    }
    let again =
        call(&app, "/mcp", &token, "read_note", json!({"vault": V, "path": "Big.md", "format": "content"})).await;
    assert_eq!(ok(&again)["content_hash"], hash);

    // A cursor into a version that is gone is refused.
    put(&app, &token, "Big.md", paged_note(150_000).as_bytes()).await;
    let stale =
        call(&app, "/mcp", &token, "read_note", json!({"vault": V, "path": "Big.md", "cursor": cursor_of(&first)}))
            .await;
    assert_eq!(error_of(&stale)["code"], "concurrent_modification");
    app.stop().await;
}

fn cursor_of(result: &Value) -> String {
    result["structuredContent"]["next_cursor"].as_str().unwrap().to_string()
}

/// A call that goes past its memory budget stops at its next checkpoint and writes nothing;
/// calls within it run as always.
#[tokio::test]
async fn a_call_past_its_memory_budget_answers_so_and_writes_nothing() {
    use crate::mcp::{call, error_of};
    let app = TestApp::spawn_with(|c| c.tools.call_memory_bytes = 8 << 20).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    // Half a megabyte of links parses into many times its size.
    let dense = format!("# Top\n{}", "[[Alpha]] #tag [[Beta|b]] x\n".repeat(20_000));
    put(&app, &token, "Dense.md", dense.as_bytes()).await;
    put(&app, &token, "Small.md", b"# Top\nsmall\n").await;

    let read = || call(&app, "/mcp", &token, "read_note", json!({"vault": V, "path": "Dense.md", "format": "content"}));
    let before = ok(&read().await)["content_hash"].clone();
    let edit = |path: &str| json!({"vault": V, "path": path, "content": "added\n", "anchor": {"type": "heading", "heading": "Top"}});
    let refused = call(&app, "/mcp", &token, "append_note", edit("Dense.md")).await;
    let err = error_of(&refused);
    assert_eq!(err["code"], "compute_budget_exceeded", "{err}");
    assert_eq!(err["details"]["limit"], "tools.call_memory_bytes");
    assert_eq!(ok(&read().await)["content_hash"], before, "nothing was written");
    let map =
        call(&app, "/mcp", &token, "read_note", json!({"vault": V, "path": "Dense.md", "format": "document-map"}))
            .await;
    assert_eq!(error_of(&map)["code"], "compute_budget_exceeded");

    let small = call(&app, "/mcp", &token, "append_note", edit("Small.md")).await;
    assert_eq!(small["isError"], false, "{small}");
    app.stop().await;
}
