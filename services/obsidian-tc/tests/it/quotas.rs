//! Quotas per tenant (notes, storage, uploads in flight) and streamed uploads: a refusal is
//! typed and carries the figures, nothing is half-applied, and an upload never lands bytes that
//! do not hash to its name.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::harness::{Tenant, TestApp, cli, stderr, stdout};
use crate::write::{err, ok};

fn quotas(app: &TestApp, args: &[&str]) -> String {
    let mut all = vec!["tenant", "quotas", "acme"];
    all.extend_from_slice(args);
    let out = cli(&app.iso, &all);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

fn hex(bytes: &[u8]) -> String {
    obsidian_tc::sync_client::sha256_hex(bytes)
}

async fn put(app: &TestApp, token: &str, hash: &str, body: impl Into<reqwest::Body>) -> (StatusCode, Value) {
    let response = app
        .http
        .put(app.url(&format!("/v1/vaults/Notes/blobs/{hash}")))
        .bearer_auth(token)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

type Chunks = tokio::sync::mpsc::Sender<Result<bytes::Bytes, std::io::Error>>;

/// An upload of `body` into Notes whose bytes go only as the test sends them through the
/// returned sender: the request in flight, and that sender.
fn held_upload(
    app: &TestApp,
    token: &str,
    body: &[u8],
) -> (tokio::task::JoinHandle<reqwest::Result<reqwest::Response>>, Chunks) {
    let (send, receive) = tokio::sync::mpsc::channel(2);
    let url = app.url(&format!("/v1/vaults/Notes/blobs/{}", hex(body)));
    let request =
        app.http.put(url).bearer_auth(token).header("content-length", body.len()).body(reqwest::Body::wrap_stream(
            futures::stream::unfold(receive, |mut r| async move { r.recv().await.map(|item| (item, r)) }),
        ));
    (tokio::spawn(request.send()), send)
}

#[tokio::test]
async fn note_and_storage_quotas_refuse_with_the_figures_and_apply_nothing() {
    let app = TestApp::spawn_with(|c| c.tools.confirm_destructive = false).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let shown = quotas(&app, &["--set", "notes=3"]);
    assert!(shown.contains("notes                                 3 (tenant)  (0 used)"), "{shown}");
    for name in ["A.md", "B.md", "C.md"] {
        ok(&app, &token, "write_note", json!({"vault": "Notes", "path": name, "content": name})).await;
    }
    let refused = err(&app, &token, "write_note", json!({"vault": "Notes", "path": "D.md", "content": "d"})).await;
    assert_eq!(refused["code"], "overflow", "{refused}");
    assert_eq!(refused["details"], json!({"quota": "notes", "limit": 3, "used": 3, "requested": 1}));
    // What keeps the count: overwriting, moving, a non-note file.
    ok(&app, &token, "write_note", json!({"vault": "Notes", "path": "B.md", "content": "b2", "mode": "overwrite"}))
        .await;
    ok(&app, &token, "move_note", json!({"vault": "Notes", "from": "A.md", "to": "A2.md"})).await;
    ok(&app, &token, "write_attachment", json!({"vault": "Notes", "path": "pic.png", "content": "iVBORw0KGgo="})).await;
    // A batch past the quota applies nothing.
    ok(&app, &token, "delete_note", json!({"vault": "Notes", "path": "C.md"})).await;
    let batch =
        json!({"vault": "Notes", "items": [{"path": "X.md", "content": "x"}, {"path": "Y.md", "content": "y"}]});
    let refused = err(&app, &token, "bulk_create_notes", batch).await;
    assert_eq!((refused["code"].clone(), refused["details"]["requested"].clone()), (json!("overflow"), json!(2)));
    assert_eq!(
        err(&app, &token, "read_note", json!({"vault": "Notes", "path": "X.md"})).await["code"],
        "note_not_found"
    );
    // The sync API's commits count alike.
    let hash = crate::sync::upload(&app, &token, "Notes", b"e").await;
    let change = |path: &str| {
        json!({"changes": [
            {"path": path, "expect": "absent", "put": {"hash": hash, "mtime": "2026-01-01T00:00:00Z"}},
            {"path": "Z.md", "expect": "absent", "put": {"hash": hash, "mtime": "2026-01-01T00:00:00Z"}}
        ]})
    };
    let (status, answer) =
        crate::sync::api(&app, &token, reqwest::Method::POST, "/v1/vaults/Notes/commit", Some(change("E.md"))).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{answer}");
    assert_eq!(answer["error"]["details"]["quota"], "notes");
    ok(&app, &token, "write_note", json!({"vault": "Notes", "path": "D.md", "content": "d"})).await;
    assert!(quotas(&app, &[]).contains("(3 used)"));

    // Storage: new content past the quota is refused, by the tools and by an upload before a
    // byte is read; content the tenant already holds costs nothing.
    let used: i64 = quotas(&app, &["--reset", "notes"])
        .lines()
        .find(|l| l.starts_with("storage_bytes"))
        .and_then(|l| l.split('(').nth(2))
        .and_then(|u| u.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    quotas(&app, &["--set", &format!("storage_bytes={}", used + 100)]);
    let big = "x".repeat(200);
    let refused = err(&app, &token, "write_note", json!({"vault": "Notes", "path": "Big.md", "content": big})).await;
    assert_eq!(
        refused["details"],
        json!({"quota": "storage_bytes", "limit": used + 100, "used": used, "requested": 200}),
        "{refused}"
    );
    let (status, answer) = put(&app, &token, &hex(big.as_bytes()), big.clone()).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{answer}");
    assert_eq!(answer["error"]["details"]["quota"], "storage_bytes");
    ok(&app, &token, "write_note", json!({"vault": "Notes", "path": "Again.md", "content": "d"})).await;
    crate::sync::upload(&app, &token, "Notes", &[7u8; 50]).await;

    // Bad quotas are refused before anything changes.
    for bad in [["--set", "notes=0"], ["--set", "nope=1"], ["--set", "notes"], ["--reset", "nope"]] {
        let out = cli(&app.iso, &["tenant", "quotas", "acme", bad[0], bad[1]]);
        assert!(!out.status.success(), "{bad:?} accepted");
    }
}

#[tokio::test]
async fn uploads_stream_in_parts_land_only_when_the_hash_holds_and_share_one_budget_in_flight() {
    let app = TestApp::spawn_with(|c| c.sync.max_blob_bytes = 64 * 1024 * 1024).await;
    let second = app.another_gateway(|c| c.sync.max_blob_bytes = 64 * 1024 * 1024).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    // 20 MiB: three parts.
    let big: Vec<u8> = (0..20 * 1024 * 1024u32).map(|i| (i.wrapping_mul(2654435761) >> 24) as u8).collect();
    let hash = crate::sync::upload(&app, &token, "Notes", &big).await;
    let mut raw = [0u8; 32];
    ::hex::decode_to_slice(&hash, &mut raw).unwrap();
    assert!(app.deps.blobs.get_blob(tenant.id, &raw).await.unwrap() == big);

    // Bytes that do not hash to the URL's hash never land, however large.
    let mut other = big.clone();
    other[12_345_678] ^= 1;
    let wrong = hex(&other[..1000]);
    let (status, answer) = put(&app, &token, &wrong, other.clone()).await;
    assert_eq!((status, answer["error"]["details"]["field"].clone()), (StatusCode::BAD_REQUEST, json!("hash")));
    let mut raw = [0u8; 32];
    ::hex::decode_to_slice(&wrong, &mut raw).unwrap();
    assert!(matches!(app.deps.blobs.get_blob(tenant.id, &raw).await, Err(otc_blobs::BlobError::NotFound)));
    // A size must be declared.
    let chunks = futures::stream::iter(vec![Ok::<_, std::io::Error>(bytes::Bytes::from_static(b"abc"))]);
    let (status, answer) = put(&app, &token, &hex(b"abc"), reqwest::Body::wrap_stream(chunks)).await;
    assert_eq!((status, answer["error"]["code"].clone()), (StatusCode::LENGTH_REQUIRED, json!("invalid_input")));

    // One upload at a time for this tenant, counted across both gateways: while one is in
    // flight (its body held back), the other gateway refuses the next with the figures.
    quotas(&app, &["--set", "concurrent_uploads=1"]);
    let slow = b"slow upload body".to_vec();
    let (in_flight, send) = held_upload(&app, &token, &slow);
    send.send(Ok(bytes::Bytes::copy_from_slice(&slow[..4]))).await.unwrap();
    let mut refused = None;
    for _ in 0..50 {
        let response = app
            .http
            .put(format!("http://{}/v1/vaults/Notes/blobs/{}", second.addr, hex(b"next")))
            .bearer_auth(&token)
            .body(b"next".to_vec())
            .send()
            .await
            .unwrap();
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            refused = Some(response.json::<Value>().await.unwrap());
            break;
        }
        // The slow upload had not taken its slot yet.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let refused = refused.expect("the second upload is refused while the first is in flight");
    assert_eq!(refused["error"]["code"], "throttled");
    assert_eq!(
        refused["error"]["details"],
        json!({"quota": "concurrent_uploads", "limit": 1, "used": 1, "requested": 1, "retry_after": 1})
    );
    // The refusal reads the small body it refused, so the connection carries the next request
    // (the client's retry) rather than being closed under a client still sending.
    let host = second.addr;
    let refused_put = format!(
        "PUT /v1/vaults/Notes/blobs/{} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nContent-Length: 4\r\n\r\nnext",
        hex(b"next")
    );
    let health = format!("GET /healthz HTTP/1.1\r\nHost: {host}\r\n\r\n");
    let answers = exchange(second.addr, &[refused_put.as_str(), health.as_str()]).await;
    assert!(answers[0].starts_with("HTTP/1.1 429"), "{}", answers[0]);
    assert!(!answers[0].to_ascii_lowercase().contains("connection: close"), "{}", answers[0]);
    assert!(answers[1].starts_with("HTTP/1.1 200"), "the same connection answers the next request: {answers:?}");
    send.send(Ok(bytes::Bytes::copy_from_slice(&slow[4..]))).await.unwrap();
    drop(send);
    assert_eq!(in_flight.await.unwrap().unwrap().status(), StatusCode::CREATED);
    crate::sync::upload(&app, &token, "Notes", b"next").await;

    // Bytes in flight: an upload declaring more than the budget is refused before it is read.
    quotas(&app, &["--reset", "concurrent_uploads", "--set", "upload_bytes_in_flight=1000"]);
    let (status, answer) = put(&app, &token, &hex(&[1u8; 2000]), vec![1u8; 2000]).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{answer}");
    assert_eq!(answer["error"]["details"]["quota"], "upload_bytes_in_flight");
    crate::sync::upload(&app, &token, "Notes", &[1u8; 900]).await;
    second.stop().await.unwrap();
}

#[tokio::test]
async fn a_streamed_blob_round_trips_in_parts_and_a_wrong_one_leaves_nothing() {
    let app = TestApp::spawn().await;
    let tenant = uuid::Uuid::now_v7();
    let big: Vec<u8> = (0..20 * 1024 * 1024u32).map(|i| (i.wrapping_mul(2654435761) >> 24) as u8).collect();
    let hash = otc_blobs::Blobs::hash_of(&big);
    let chunks: Vec<Result<bytes::Bytes, std::io::Error>> =
        big.chunks(64 * 1024).map(|c| Ok(bytes::Bytes::copy_from_slice(c))).collect();
    let stored = app.deps.blobs.put_blob_stream(tenant, &hash, futures::stream::iter(chunks), 64 << 20).await;
    assert_eq!(stored.map_err(|e| otc_gateway::error_chain(&e)).unwrap(), big.len() as u64);
    assert!(app.deps.blobs.get_blob(tenant, &hash).await.unwrap() == big);
}

#[tokio::test]
async fn a_stalled_upload_fails_and_gives_its_slot_back() {
    let app = TestApp::spawn_with(|c| c.server.body_idle_timeout_ms = 500).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    quotas(&app, &["--set", "concurrent_uploads=1"]);
    // An upload that sends four bytes of sixteen, then nothing (its sender kept open).
    let slow = b"slow upload body".to_vec();
    let (in_flight, send) = held_upload(&app, &token, &slow);
    send.send(Ok(bytes::Bytes::copy_from_slice(&slow[..4]))).await.unwrap();
    // The stall fails the upload with a typed answer, well before the client would give up.
    let answer = tokio::time::timeout(std::time::Duration::from_secs(20), in_flight)
        .await
        .expect("the stalled upload is answered")
        .unwrap()
        .unwrap();
    assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    let answer: Value = answer.json().await.unwrap();
    assert_eq!(answer["error"]["details"]["field"], "content-length", "{answer}");
    // Its slot is free again: the tenant's next upload goes through at once.
    let (status, answer) = put(&app, &token, &hex(b"next"), b"next".to_vec()).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    // The sender was held open to the end: the stall, not a closed body, ended the upload.
    drop(send);
}

/// Sends `requests` one after another on one connection to `addr`, each after the previous
/// answer was read whole (headers and a Content-Length body): the answers, as text.
async fn exchange(addr: std::net::SocketAddr, requests: &[&str]) -> Vec<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut answers = Vec::new();
    for request in requests {
        socket.write_all(request.as_bytes()).await.unwrap();
        let mut got = Vec::new();
        let mut chunk = [0u8; 4096];
        let answer = loop {
            let n = tokio::time::timeout(std::time::Duration::from_secs(10), socket.read(&mut chunk))
                .await
                .unwrap()
                .unwrap();
            assert!(n > 0, "the connection closed before an answer: {}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&got).into_owned();
            let Some(end) = text.find("\r\n\r\n") else { continue };
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0);
            if got.len() >= end + 4 + length {
                break text;
            }
        };
        answers.push(answer);
    }
    answers
}
