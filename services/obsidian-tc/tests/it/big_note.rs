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
