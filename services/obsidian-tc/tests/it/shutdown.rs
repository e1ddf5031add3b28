//! SIGTERM: stop accepting, drain in-flight requests, exit 0 (every role, dev mid-import too).
//! Secrets and note content stay out of the log.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::json;

use crate::harness::{Child, Isolation, Tenant};
use crate::mcp::call_at;
use crate::sync::temp_dir;

#[tokio::test]
async fn sigterm_drains_the_request_in_flight_then_exits_zero() {
    let iso = Isolation::new().await;
    let mut server = Child::start(iso.env(), &["serve"], true);
    let addr = server.addr.unwrap();

    // A request in flight: its head is half sent when the signal arrives.
    let mut in_flight = TcpStream::connect(addr).unwrap();
    in_flight.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    in_flight.write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    server.signal("TERM");

    // No new connections are taken once shutdown has begun (allowing a loaded machine a few
    // seconds to deliver the signal).
    let mut refused = false;
    for _ in 0..50 {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_err() {
            refused = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(refused, "still accepting after SIGTERM");

    // The request in flight completes.
    in_flight.write_all(b"Connection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    in_flight.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.ends_with("ok\n"), "{response}");

    let status = server.wait(Duration::from_secs(20));
    assert_eq!(status.code(), Some(0), "log:\n{}", server.log_text());
    assert!(server.log_text().contains("received SIGTERM"));
}

#[tokio::test]
async fn the_log_never_contains_secrets() {
    let iso = Isolation::new().await;
    let mut env = iso.env();
    env.push(("RUST_LOG".into(), "trace".into()));
    let password = url_password(&iso.database_url);
    let s3_secret = env.iter().find(|(k, _)| k == "OTC__OBJECT_STORE__SECRET_ACCESS_KEY").unwrap().1.clone();
    let store = iso.store();
    let tenant = Tenant::create(&store, "acme").await;
    let (token, _) = tenant.token(&store, "*", false, None).await;
    let mut server = Child::start(env, &["serve"], true);
    let client = reqwest::Client::new();
    assert!(client.get(server.url("/readyz")).send().await.unwrap().status().is_success());
    // A full run: a write, reads, a search, a failed call, a refused token.
    let base = server.url("");
    let content = "quarterly figures: 4711 widgets";
    let wrote =
        call_at(&client, &base, &token, "write_note", json!({"vault": "Notes", "path": "q.md", "content": content}))
            .await;
    assert_eq!(wrote["result"]["isError"], false, "{wrote}");
    call_at(&client, &base, &token, "read_note", json!({"vault": "Notes", "path": "q.md"})).await;
    call_at(&client, &base, &token, "search_vault", json!({"vault": "Notes", "query": "widgets"})).await;
    call_at(&client, &base, &token, "read_note", json!({"vault": "Notes", "path": "missing.md"})).await;
    let refused = client.get(server.url("/v1/whoami")).bearer_auth(format!("{token}x")).send().await.unwrap();
    assert_eq!(refused.status(), 401);
    server.signal("TERM");
    assert_eq!(server.wait(Duration::from_secs(20)).code(), Some(0));
    let log = server.log_text();
    assert!(!log.is_empty());
    assert!(!log.contains(&password), "database password in the log");
    assert!(!log.contains(&s3_secret), "S3 secret in the log");
    let secret = token.rsplit_once('_').unwrap().1;
    assert!(!log.contains(secret), "a token in the log");
    let leaks: Vec<&str> = log.lines().filter(|l| l.contains("4711 widgets")).collect();
    assert!(leaks.is_empty(), "note content in the log: {leaks:#?}");
}

fn url_password(url: &str) -> String {
    let userinfo = url.split("://").nth(1).unwrap().split('@').next().unwrap();
    userinfo.split(':').nth(1).expect("the test database URL has a password").to_string()
}

/// `dev` stopped by SIGTERM in the middle of its first import of a big folder: it cancels the
/// import, drains and leaves with status 0; the next start carries the import on.
#[tokio::test]
async fn dev_stopped_during_its_first_import_exits_zero() {
    let iso = Isolation::new().await;
    let dir = temp_dir("dev-import");
    let vault = dir.join("vault");
    std::fs::create_dir_all(&vault).unwrap();
    for i in 0..3000 {
        std::fs::write(vault.join(format!("note {i}.md")), format!("# Note {i}\n\n[[note {}]]\n", (i + 1) % 3000))
            .unwrap();
    }
    let mut env = iso.env();
    env.push(("OTC__OBJECT_STORE__KIND".into(), "local".into()));
    env.push(("OTC__OBJECT_STORE__PATH".into(), dir.join("objects").display().to_string()));
    let data = dir.join("data");
    let args =
        ["dev", "--vault", vault.to_str().unwrap(), "--data-dir", data.to_str().unwrap(), "--listen", "127.0.0.1:0"];
    let mut dev = Child::start(env.clone(), &args, true);
    // Stop it once the import is under way: its first contents are in the object store.
    let objects = dir.join("objects");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while walk_count(&objects) == 0 {
        assert!(std::time::Instant::now() < deadline, "the import never began:\n{}", dev.log_text());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    dev.signal("TERM");
    let status = dev.wait(Duration::from_secs(60));
    let log = dev.log_text();
    assert!(status.success(), "exit {status:?}:\n{log}");
    assert!(!log.contains("vault folder imported"), "the import had already finished; make the folder bigger:\n{log}");

    // The next start carries the import on to the end.
    let mut dev = Child::start(env, &args, true);
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !dev.log_text().contains("vault folder imported") {
        assert!(std::time::Instant::now() < deadline, "the second import did not finish:\n{}", dev.log_text());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let store = iso.store();
    let tenant = store.tenant_id_by_slug("local").await.unwrap().expect("the dev tenant");
    let mut tx = store.begin(tenant).await.unwrap();
    assert_eq!(tx.usage().await.unwrap().notes, 3000);
    tx.commit().await.unwrap();
    dev.signal("TERM");
    assert!(dev.wait(Duration::from_secs(60)).success(), "{}", dev.log_text());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Files under `dir`, at any depth (0 when it does not exist).
fn walk_count(dir: &std::path::Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries.flatten().map(|e| if e.file_type().is_ok_and(|t| t.is_dir()) { walk_count(&e.path()) } else { 1 }).sum()
}

/// A worker stopped while its embedding provider has not answered a request (and would not for
/// minutes) leaves within its grace with status 0: the pass is dropped, its jobs stay queued.
#[tokio::test]
async fn a_worker_waiting_on_a_silent_provider_stops_within_its_grace() {
    // The provider accepts connections and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", silent.local_addr().unwrap());
    let (asked, mut heard) = tokio::sync::mpsc::unbounded_channel::<()>();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
            let _ = asked.send(());
        }
    });
    let provider = move |c: &mut otc_config::Config| {
        c.embeddings.provider = otc_config::EmbeddingProvider::Openai;
        c.embeddings.base_url = url.clone();
        c.embeddings.model = "silent".into();
        c.embeddings.dims = 8;
        c.embeddings.api_key = Some(otc_config::Secret::new("sk-test"));
        c.embeddings.timeout_ms = 300_000;
    };
    let app = crate::harness::TestApp::spawn_with(provider.clone()).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    app.seed(&token, "Notes", &[("A.md", Some("# A\nSome words to embed.\n"))]).await;

    let mut config = app.iso.config();
    provider(&mut config);
    let mut env = app.iso.env();
    for (k, v) in [
        ("OTC__EMBEDDINGS__PROVIDER", "openai".to_string()),
        ("OTC__EMBEDDINGS__BASE_URL", config.embeddings.base_url.clone()),
        ("OTC__EMBEDDINGS__MODEL", "silent".to_string()),
        ("OTC__EMBEDDINGS__DIMS", "8".to_string()),
        ("OTC__EMBEDDINGS__API_KEY", "sk-test".to_string()),
        ("OTC__EMBEDDINGS__TIMEOUT_MS", "300000".to_string()),
        ("OTC__WORKER__SHUTDOWN_GRACE_SECS", "3".to_string()),
    ] {
        env.push((k.into(), v));
    }
    let mut worker = Child::start(env, &["worker"], false);
    tokio::time::timeout(Duration::from_secs(60), heard.recv())
        .await
        .unwrap_or_else(|_| panic!("the worker never called the provider:\n{}", worker.log_text()));
    let asked_at = std::time::Instant::now();
    worker.signal("TERM");
    let status = worker.wait(Duration::from_secs(30));
    let took = asked_at.elapsed();
    assert_eq!(status.code(), Some(0), "log:\n{}", worker.log_text());
    assert!(took < Duration::from_secs(10), "stopped after {took:?}:\n{}", worker.log_text());
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let status = tx.embedding_status(tenant.vault_id).await.unwrap();
    tx.commit().await.unwrap();
    // Every embed job waits for the next worker, none dead-lettered. (The worker's start-up
    // embedding upkeep may have queued a second job for the same chunks when it made the
    // model's set, depending on which ran first; seen 1 in 4 full runs.)
    assert!(status.queued_jobs >= 1 && status.dead_jobs == 0, "the job waits for the next worker: {status:?}");
}
