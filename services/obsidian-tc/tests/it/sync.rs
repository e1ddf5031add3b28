//! Vault storage and sync: the HTTP API, the CLI's import and two-way sync, atomic commits
//! under concurrency and crashes, and tenant isolation on every endpoint.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::harness::{Child, Isolation, Tenant, TestApp, cli_with_env, stderr, stdout};

/// A vault of the test corpus, committed in `corpus/` at the repository root.
pub(crate) fn corpus(name: &str) -> PathBuf {
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../corpus")).join(name);
    assert!(path.is_dir(), "the corpus vault is expected at {}", path.display());
    path
}

pub(crate) fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("otc-{tag}-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every file under `root` (but sync's own state) with its SHA-256.
fn tree(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            if rel.starts_with(".otc-sync") {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            } else {
                out.insert(rel, obsidian_tc::sync_client::sha256_hex(&std::fs::read(&path).unwrap()));
            }
        }
    }
    out
}

/// The environment for the CLI's sync commands against `app`.
pub(crate) fn remote_env(app: &TestApp, token: &str) -> Vec<(String, String)> {
    let mut env = app.iso.env();
    env.push(("OTC_URL".into(), format!("http://{}", app.addr)));
    env.push(("OTC_TOKEN".into(), token.into()));
    env
}

pub(crate) fn run_ok(env: &[(String, String)], args: &[&str]) -> String {
    let out = cli_with_env(env.to_vec(), args);
    assert!(out.status.success(), "{args:?} failed:\n{}\n{}", stdout(&out), stderr(&out));
    stdout(&out)
}

#[tokio::test]
async fn importing_a_corpus_and_syncing_it_back_gives_a_byte_identical_tree() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "read:notes,write:notes,delete:notes", false, None).await;
    let env = remote_env(&app, &token);
    let source = corpus("obsidian-tasks-docs");
    let env2 = env.clone();
    let src = source.display().to_string();
    let (first, again) = tokio::task::spawn_blocking(move || {
        let first = run_ok(&env2, &["vault", "import", &src, "--vault", "Notes", "--quiet"]);
        let again = run_ok(&env2, &["vault", "import", &src, "--vault", "Notes", "--quiet"]);
        (first, again)
    })
    .await
    .unwrap();
    assert!(first.starts_with("imported 251 files"), "{first}");
    assert!(again.starts_with("imported 0 files") && again.contains("251 already there"), "a rerun resumes: {again}");

    let back = temp_dir("back");
    let b = back.display().to_string();
    let env3 = env.clone();
    let synced = tokio::task::spawn_blocking(move || run_ok(&env3, &["sync", &b, "--vault", "Notes"])).await.unwrap();
    assert!(synced.starts_with("pulled 251"), "{synced}");
    assert_eq!(tree(&source), tree(&back), "same file list and hashes");

    // The change log chains and names who wrote.
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    assert_eq!(tx.verify_chain(tenant.vault_id).await.unwrap(), None);
    let first_change = &tx.changes_since(tenant.vault_id, 0, 1).await.unwrap()[0];
    // The server records what it knows (the API, the token); the client's own label apart.
    assert_eq!(first_change.tool.as_deref(), Some("v1_commit"));
    assert_eq!(first_change.client_tool.as_deref(), Some("sync"));
    assert_eq!(first_change.client_name.as_deref(), Some("obsidian-tc sync"));
    tx.commit().await.unwrap();
    let _ = std::fs::remove_dir_all(back);
    app.stop().await;
}

#[tokio::test]
async fn two_way_sync_moves_edits_both_ways_and_keeps_both_sides_of_a_conflict() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "read:notes,write:notes,delete:notes", false, None).await;
    let env = remote_env(&app, &token);
    let (a, b) = (temp_dir("a"), temp_dir("b"));
    std::fs::create_dir_all(a.join("Folder")).unwrap();
    std::fs::create_dir_all(a.join(".obsidian")).unwrap();
    std::fs::write(a.join("Shared.md"), "base\n").unwrap();
    std::fs::write(a.join("Folder/Gone.md"), "to delete\n").unwrap();
    std::fs::write(a.join(".obsidian/app.json"), "{}").unwrap();
    std::fs::write(a.join(".obsidian/workspace.json"), "{\"per-device\": true}").unwrap();
    std::fs::write(a.join("scratch.tmp"), "local only").unwrap();
    std::fs::write(a.join(".otcignore"), "*.tmp\n").unwrap();
    let (sa, sb) = (a.display().to_string(), b.display().to_string());
    let sync = move |env: Vec<(String, String)>, dir: String| run_ok(&env, &["sync", &dir, "--vault", "Notes"]);

    let e = env.clone();
    let (x, y) = (sa.clone(), sb.clone());
    tokio::task::spawn_blocking(move || {
        sync(e.clone(), x.clone());
        sync(e.clone(), y.clone());
    })
    .await
    .unwrap();
    let pulled = tree(&b);
    assert!(pulled.contains_key("Shared.md") && pulled.contains_key(".obsidian/app.json"));
    assert!(!pulled.contains_key(".obsidian/workspace.json"), "per-device workspace state stays local");
    assert!(!pulled.contains_key("scratch.tmp"), ".otcignore is honoured");

    // A edits one file and deletes another; B edits the shared file too: a conflict.
    std::fs::write(a.join("Shared.md"), "edited in A\n").unwrap();
    std::fs::remove_file(a.join("Folder/Gone.md")).unwrap();
    std::fs::write(a.join("New.md"), "new in A\n").unwrap();
    std::fs::write(b.join("Shared.md"), "edited in B\n").unwrap();
    let e = env.clone();
    let (x, y) = (sa.clone(), sb.clone());
    let second_b = tokio::task::spawn_blocking(move || {
        sync(e.clone(), x.clone());
        let out = sync(e.clone(), y.clone());
        sync(e.clone(), x.clone());
        out
    })
    .await
    .unwrap();
    assert!(second_b.contains("1 conflict(s)"), "{second_b}");
    let (ta, tb) = (tree(&a), tree(&b));
    assert_eq!(
        std::fs::read_to_string(b.join("Shared.md")).unwrap(),
        "edited in A\n",
        "the server's version keeps the name"
    );
    let copy =
        tb.keys().find(|k| k.starts_with("Shared (conflict ")).expect("B's version kept as a conflict copy").clone();
    assert_eq!(std::fs::read_to_string(b.join(&copy)).unwrap(), "edited in B\n");
    assert!(ta.contains_key(&copy), "the conflict copy reaches A as well");
    assert!(!tb.contains_key("Folder/Gone.md"), "the deletion reached B");
    assert_eq!(std::fs::read_to_string(b.join("New.md")).unwrap(), "new in A\n");
    // Deleted files stay recoverable: the trash holds Gone.md.
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    let log = tx.changes_since(tenant.vault_id, 0, 100).await.unwrap();
    assert!(log.iter().any(|r| r.path == "Folder/Gone.md" && r.op == "delete"));
    tx.commit().await.unwrap();
    for dir in [a, b] {
        let _ = std::fs::remove_dir_all(dir);
    }
    app.stop().await;
}

pub(crate) async fn api(
    app: &TestApp,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = app.http.request(method, app.url(path)).bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// PUTs `body` as blob `hash` of `vault` on the server at `base` (`http://host:port`).
async fn put_blob(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    vault: &str,
    hash: &str,
    body: impl Into<reqwest::Body>,
) -> reqwest::Response {
    http.put(format!("{base}/v1/vaults/{vault}/blobs/{hash}")).bearer_auth(token).body(body).send().await.unwrap()
}

/// Uploads `bytes` under their own hash, which it returns.
async fn upload_at(http: &reqwest::Client, base: &str, token: &str, vault: &str, bytes: &[u8]) -> String {
    let hash = obsidian_tc::sync_client::sha256_hex(bytes);
    let response = put_blob(http, base, token, vault, &hash, bytes.to_vec()).await;
    assert_eq!(response.status(), StatusCode::CREATED, "{}", response.text().await.unwrap());
    hash
}

pub(crate) async fn upload(app: &TestApp, token: &str, vault: &str, bytes: &[u8]) -> String {
    upload_at(&app.http, &app.url(""), token, vault, bytes).await
}

#[tokio::test]
async fn the_commit_api_is_atomic_and_names_every_stale_path() {
    let app = TestApp::spawn_with(|c| c.sync.max_blob_bytes = 1024).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "read:notes,write:notes", false, None).await;
    let h1 = upload(&app, &token, "Notes", b"one").await;
    let h2 = upload(&app, &token, "Notes", b"two").await;
    let commit = |changes: Value| {
        api(&app, &token, reqwest::Method::POST, "/v1/vaults/Notes/commit", Some(json!({"changes": changes})))
    };
    let (status, body) = commit(json!([
        {"path": "a.md", "expect": "absent", "put": {"hash": h1}},
        {"path": "b.md", "expect": "absent", "put": {"hash": h1}}
    ]))
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["changed"], 2);

    // One stale path refuses the whole batch, naming each stale path.
    let (status, body) = commit(json!([
        {"path": "a.md", "expect": h1, "put": {"hash": h2}},
        {"path": "b.md", "expect": h2, "put": {"hash": h2}},
        {"path": "c.md", "expect": h1, "put": {"hash": h2}}
    ]))
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "concurrent_modification");
    assert_eq!(body["error"]["details"]["stale"], json!(["b.md", "c.md"]));
    let (_, files) = api(&app, &token, reqwest::Method::GET, "/v1/vaults/Notes/files", None).await;
    assert!(
        files["files"].as_array().unwrap().iter().all(|f| f["hash"] == h1.as_str()),
        "nothing was applied: {files}"
    );

    // Bad input: each refused with a catalogue code, nothing written.
    let (status, body) = commit(json!([{"path": "../escape.md", "expect": "absent", "put": {"hash": h1}}])).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("path_invalid")));
    // A control character makes no path; names only a tool may not create (link syntax, ':')
    // sync carries as they are (names.rs).
    let (status, body) = commit(json!([{"path": "C# notes\u{7}.md", "expect": "absent", "put": {"hash": h1}}])).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("path_invalid")));
    assert!(!body["error"]["message"].as_str().unwrap().contains("C# notes"), "the name is never echoed: {body}");
    let missing = "0".repeat(64);
    let (status, body) = commit(json!([{"path": "x.md", "expect": "absent", "put": {"hash": missing}}])).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_input")), "{body}");
    let (status, body) = commit(json!([{"path": "a.md", "expect": "any", "delete": true}])).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("forbidden")),
        "delete needs delete:notes"
    );
    assert_eq!(body["error"]["details"]["required"], json!(["delete:notes"]));
    let (status, body) = commit(json!([{"path": "a.md", "expekt": "any"}])).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("validation_error")), "{body}");

    // Uploads: the hash must match, and the size limit answers clearly.
    let wrong = put_blob(&app.http, &app.url(""), &token, "Notes", &h1, "not one").await;
    assert_eq!(wrong.status(), StatusCode::BAD_REQUEST);
    let big = vec![b'x'; 4096];
    let big_hash = obsidian_tc::sync_client::sha256_hex(&big);
    let response = put_blob(&app.http, &app.url(""), &token, "Notes", &big_hash, big).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "overflow");
    assert_eq!(body["error"]["details"]["limit"], 1024);

    // Downloads by path and by hash; the change feed pages.
    let file = app.http.get(app.url("/v1/vaults/Notes/file?path=a.md")).bearer_auth(&token).send().await.unwrap();
    assert_eq!(file.headers()["etag"], format!("\"{h1}\"").as_str());
    assert_eq!(file.bytes().await.unwrap().as_ref(), b"one");
    let (status, _) = api(&app, &token, reqwest::Method::GET, "/v1/vaults/Notes/file?path=nope.md", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, feed) = api(&app, &token, reqwest::Method::GET, "/v1/vaults/Notes/changes?since=0&limit=1", None).await;
    assert_eq!((feed["head"].as_i64(), feed["more"].as_bool()), (Some(2), Some(true)));
    assert_eq!(feed["changes"][0]["path"], "a.md");
    let (_, rest) = api(&app, &token, reqwest::Method::GET, "/v1/vaults/Notes/changes?since=1", None).await;
    assert_eq!(rest["changes"][0]["seq"], 2);
    assert_eq!(rest["more"], false);
    app.stop().await;
}

#[tokio::test]
async fn another_tenants_token_reaches_nothing_on_any_endpoint() {
    let app = TestApp::spawn().await;
    let a = Tenant::create(&app.store, "acme").await;
    let b = Tenant::create(&app.store, "globex").await;
    let (a_token, _) = a.token(&app.store, "*", false, None).await;
    let (b_token, _) = b.token(&app.store, "*", false, None).await;
    let hash = upload(&app, &a_token, "Notes", b"secret of A").await;
    let (status, _) = api(
        &app,
        &a_token,
        reqwest::Method::POST,
        "/v1/vaults/Notes/commit",
        Some(json!({"changes": [{"path": "secret.md", "expect": "absent", "put": {"hash": hash}}]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    // B names A's vault by id (B's own vault is also called Notes, so names prove nothing).
    let id = a.vault_id.to_string();
    let (_, listed) = api(&app, &b_token, reqwest::Method::GET, "/v1/vaults", None).await;
    assert!(listed["vaults"].as_array().unwrap().iter().all(|v| v["id"] != id.as_str()), "{listed}");
    for path in [
        format!("/v1/vaults/{id}/files"),
        format!("/v1/vaults/{id}/changes"),
        format!("/v1/vaults/{id}/file?path=secret.md"),
        format!("/v1/vaults/{id}/blobs/{hash}"),
    ] {
        let (status, body) = api(&app, &b_token, reqwest::Method::GET, &path, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        assert_eq!(body["error"]["code"], "vault_not_found", "{path}");
    }
    let (status, _) = api(
        &app,
        &b_token,
        reqwest::Method::POST,
        &format!("/v1/vaults/{id}/commit"),
        Some(json!({"changes": [{"path": "x.md", "expect": "absent", "put": {"hash": hash}}]})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let upload_b = put_blob(&app.http, &app.url(""), &b_token, &id, &hash, "secret of A").await;
    assert_eq!(upload_b.status(), StatusCode::NOT_FOUND);
    // Through its own vault, B cannot reach A's content by hash either, nor commit it.
    let (status, _) = api(&app, &b_token, reqwest::Method::GET, &format!("/v1/vaults/Notes/blobs/{hash}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = api(
        &app,
        &b_token,
        reqwest::Method::POST,
        "/v1/vaults/Notes/commit",
        Some(json!({"changes": [{"path": "stolen.md", "expect": "absent", "put": {"hash": hash}}]})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "A's blob is not in B's inventory: {body}");

    // A token bound to one vault reaches no other vault of its own tenant.
    let mut tx = app.store.begin(a.id).await.unwrap();
    tx.create_vault("Other").await.unwrap();
    tx.commit().await.unwrap();
    let (bound, _) = a.token(&app.store, "*", true, None).await;
    let (_, listed) = api(&app, &bound, reqwest::Method::GET, "/v1/vaults", None).await;
    assert_eq!(listed["vaults"].as_array().unwrap().len(), 1);
    let (status, _) = api(&app, &bound, reqwest::Method::GET, "/v1/vaults/Other/files", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    app.stop().await;
}

/// Two server processes, one note, many writers: every commit lands or is refused as stale,
/// and the final note holds exactly the lines of the commits that landed.
#[tokio::test]
async fn racing_commits_through_two_servers_lose_no_update() {
    let iso = Isolation::new().await;
    let store = iso.store();
    let tenant = Tenant::create(&store, "acme").await;
    let (token, _) = tenant.token(&store, "read:notes,write:notes", false, None).await;
    let servers = [Child::start(iso.env(), &["serve"], true), Child::start(iso.env(), &["serve"], true)];
    let urls: Vec<String> = servers.iter().map(|s| s.url("")).collect();
    let http = reqwest::Client::new();
    let attempts_per_writer = 260;
    let writers = 4;
    let mut tasks = Vec::new();
    for w in 0..writers {
        let (http, token, base) = (http.clone(), token.clone(), urls[w % 2].clone());
        tasks.push(tokio::spawn(async move {
            let (mut landed, mut stale) = (Vec::new(), 0usize);
            for i in 0..attempts_per_writer {
                let current = http
                    .get(format!("{base}/v1/vaults/Notes/file?path=race.md"))
                    .bearer_auth(&token)
                    .send()
                    .await
                    .unwrap();
                let (expect, mut text) = if current.status() == StatusCode::NOT_FOUND {
                    ("absent".to_string(), String::new())
                } else {
                    let bytes = current.bytes().await.unwrap();
                    (obsidian_tc::sync_client::sha256_hex(&bytes), String::from_utf8(bytes.to_vec()).unwrap())
                };
                let line = format!("w{w}-{i}\n");
                text.push_str(&line);
                let hash = upload_at(&http, &base, &token, "Notes", text.as_bytes()).await;
                let body = json!({"changes": [{"path": "race.md", "expect": expect, "put": {"hash": hash}}]});
                let response = http
                    .post(format!("{base}/v1/vaults/Notes/commit"))
                    .bearer_auth(&token)
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                match response.status() {
                    StatusCode::OK => landed.push(line),
                    StatusCode::CONFLICT => stale += 1,
                    other => panic!("unexpected {other}: {}", response.text().await.unwrap()),
                }
            }
            (landed, stale)
        }));
    }
    let mut landed = Vec::new();
    let mut stale = 0;
    for task in tasks {
        let (l, s) = task.await.unwrap();
        landed.extend(l);
        stale += s;
    }
    assert_eq!(landed.len() + stale, writers * attempts_per_writer, "every commit landed or was refused");
    assert!(landed.len() + stale >= 1000);
    let final_text = http
        .get(format!("{}/v1/vaults/Notes/file?path=race.md", urls[0]))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let mut lines: Vec<String> = final_text.lines().map(|l| format!("{l}\n")).collect();
    let mut expected = landed.clone();
    lines.sort();
    expected.sort();
    assert_eq!(lines, expected, "the note holds exactly the landed commits: no update was lost");
    let mut tx = store.begin(tenant.id).await.unwrap();
    assert_eq!(tx.head_seq(tenant.vault_id).await.unwrap() as usize, landed.len());
    assert_eq!(tx.verify_chain(tenant.vault_id).await.unwrap(), None);
    tx.commit().await.unwrap();
    drop(servers);
}

/// SIGKILL in the middle of a 500-file commit leaves the vault exactly as before or after.
#[tokio::test]
async fn a_server_killed_mid_batch_leaves_the_vault_before_or_after() {
    let iso = Isolation::new().await;
    let store = iso.store();
    let tenant = Tenant::create(&store, "acme").await;
    let (token, _) = tenant.token(&store, "read:notes,write:notes", false, None).await;
    let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    let trials = 20;
    let (mut before, mut after) = (0, 0);
    for trial in 0..trials {
        let mut server = Child::start(iso.env(), &["serve"], true);
        let base = server.url("");
        // 500 new files per trial, uploaded first.
        let mut changes = Vec::new();
        for i in 0..500 {
            let text = format!("trial {trial} file {i}\n");
            let hash = upload_at(&http, &base, &token, "Notes", text.as_bytes()).await;
            changes.push(json!({"path": format!("t{trial}/f{i}.md"), "expect": "absent", "put": {"hash": hash}}));
        }
        let mut tx = store.begin(tenant.id).await.unwrap();
        let seq_before = tx.head_seq(tenant.vault_id).await.unwrap();
        tx.commit().await.unwrap();
        let commit = http
            .post(format!("{base}/v1/vaults/Notes/commit"))
            .bearer_auth(&token)
            .json(&json!({"changes": changes}))
            .send();
        let request = tokio::spawn(commit);
        // Kill at a different point each trial, across the commit's lifetime.
        tokio::time::sleep(Duration::from_millis(2 + (trial as u64 * 7) % 60)).await;
        server.signal("KILL");
        let _ = request.await.unwrap();
        let _ = server.wait(Duration::from_secs(10));
        let mut tx = store.begin(tenant.id).await.unwrap();
        let seq = tx.head_seq(tenant.vault_id).await.unwrap();
        let files = tx.files(tenant.vault_id, Some(&format!("t{trial}/")), 1000).await.unwrap();
        let in_trial = files.iter().filter(|f| f.path.starts_with(&format!("t{trial}/"))).count();
        assert_eq!(tx.verify_chain(tenant.vault_id).await.unwrap(), None, "trial {trial}: chain intact");
        tx.commit().await.unwrap();
        match (seq - seq_before, in_trial) {
            (0, 0) => before += 1,
            (500, 500) => after += 1,
            other => panic!("trial {trial}: half-applied batch {other:?}"),
        }
    }
    assert_eq!(before + after, trials);
    eprintln!("SIGKILL trials: {before} left the vault as before, {after} as after");
}

/// `dev --vault DIR` imports the folder on start and mirrors writes both ways while it runs.
#[tokio::test]
async fn dev_imports_the_folder_and_mirrors_writes_both_ways() {
    let iso = Isolation::new().await;
    let root = temp_dir("dev");
    let vault = root.join("My Vault");
    crate::harness::copy_dir(&corpus("starter-vault"), &vault);
    let mut env = iso.env();
    env.push(("OTC__OBJECT_STORE__KIND".into(), "local".into()));
    let data = root.join("state");
    let dev = Child::start(
        env,
        &["dev", "--vault", &vault.display().to_string(), "--data-dir", &data.display().to_string()],
        true,
    );
    let token = std::fs::read_to_string(data.join("dev-token")).unwrap();
    let base = dev.url("/v1/vaults/My%20Vault");
    let http = reqwest::Client::new();
    // What sync carries: everything but the ignored files (per-device workspace state ...).
    let local = obsidian_tc::sync_client::scan(&vault).unwrap();
    assert!(tree(&vault).len() > local.len(), "the starter vault has ignored files");
    for _ in 0..200 {
        if dev.log_text().contains("vault folder imported") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let listed = http.get(format!("{base}/files")).bearer_auth(&token).send().await;
    let listed: Value = listed.unwrap_or_else(|e| panic!("{e}: {}", dev.log_text())).json().await.unwrap();
    assert_eq!(listed["files"].as_array().unwrap().len(), local.len(), "the folder was imported on start");

    // A server-side write (as an agent's tool would make) appears in the folder.
    let text = "written by the server\n";
    let hash = upload_at(&http, &dev.url(""), &token, "My%20Vault", text.as_bytes()).await;
    let body = json!({"changes": [{"path": "From Agent.md", "expect": "absent", "put": {"hash": hash}}]});
    let committed = http.post(format!("{base}/commit")).bearer_auth(&token).json(&body).send().await.unwrap();
    assert_eq!(committed.status(), StatusCode::OK);
    let mut arrived = false;
    for _ in 0..100 {
        if std::fs::read_to_string(vault.join("From Agent.md")).ok().as_deref() == Some(text) {
            arrived = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(arrived, "the server's write reached the folder; log:\n{}", dev.log_text());

    // An edit made in the folder (as in Obsidian) reaches the vault.
    std::fs::write(vault.join("Edited Locally.md"), "from Obsidian\n").unwrap();
    let mut reached = false;
    for _ in 0..100 {
        let response =
            http.get(format!("{base}/file?path=Edited%20Locally.md")).bearer_auth(&token).send().await.unwrap();
        if response.status() == StatusCode::OK && response.text().await.unwrap() == "from Obsidian\n" {
            reached = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(reached, "the local edit reached the vault; log:\n{}", dev.log_text());
    drop(dev);
    let _ = std::fs::remove_dir_all(root);
}

/// A delete of a path that holds nothing is not found (not a conflict), and the provenance a
/// client reports about itself is bounded before it is stored and served back.
#[tokio::test]
async fn deleting_nothing_is_not_found_and_client_provenance_is_bounded() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "read:notes,write:notes,delete:notes", false, None).await;
    let commit = |body: Value| api(&app, &token, reqwest::Method::POST, "/v1/vaults/Notes/commit", Some(body));
    let (status, body) = commit(json!({"changes": [{"path": "ghost.md", "expect": "any", "delete": true}]})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["error"]["code"], "not_found");
    assert_eq!(body["error"]["details"]["missing"], json!(["ghost.md"]));

    let hash = upload(&app, &token, "Notes", b"x").await;
    let huge = "n".repeat(1_000_000);
    let (status, body) = commit(json!({
        "changes": [{"path": "a.md", "expect": "absent", "put": {"hash": hash}}],
        "client_name": format!("  {huge}"), "client_model": "model\u{0007}\nname", "tool": "restore_vault"
    }))
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, feed) = api(&app, &token, reqwest::Method::GET, "/v1/vaults/Notes/changes?since=0", None).await;
    let record = &feed["changes"][0];
    // A commit cannot name its own tool: the body's word is kept as client_tool only.
    assert_eq!((record["tool"].as_str(), record["client_tool"].as_str()), (Some("v1_commit"), Some("restore_vault")));
    assert_eq!(record["client_name"].as_str().unwrap(), "n".repeat(otc_store::PROVENANCE_FIELD_CHARS));
    assert_eq!(record["client_model"], "modelname", "control characters are dropped");
}
