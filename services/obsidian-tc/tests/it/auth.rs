//! Bearer tokens on every non-health route.

use chrono::{Duration, Utc};
use reqwest::StatusCode;
use serde_json::Value;

use obsidian_tc::app;
use otc_gateway::auth_cache::revoked;

use crate::harness::{Tenant, TestApp};

async fn get(app: &TestApp, path: &str, token: Option<&str>) -> reqwest::Response {
    let mut request = app.http.get(app.url(path));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

async fn assert_unauthorized(response: reqwest::Response, invalid_token: bool) {
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let challenge = response.headers().get("www-authenticate").expect("WWW-Authenticate").to_str().unwrap().to_string();
    assert!(challenge.starts_with("Bearer realm=\"obsidian-tc\""), "{challenge}");
    assert_eq!(challenge.contains("error=\"invalid_token\""), invalid_token, "{challenge}");
    let body: Value = response.json().await.expect("a JSON body, never a stack trace");
    assert_eq!(body["error"]["code"], "unauthorized");
    assert!(body["error"]["recovery"].as_str().is_some_and(|r| !r.is_empty()));
}

#[tokio::test]
async fn missing_malformed_unknown_revoked_and_expired_tokens_get_401() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (live, _) = tenant.token(&app.store, "read:notes", false, None).await;
    let (revoked, revoked_id) = tenant.token(&app.store, "read:notes", false, None).await;
    let (expired, _) = tenant.token(&app.store, "read:notes", false, Some(Utc::now() - Duration::seconds(1))).await;
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    tx.revoke_token(revoked_id).await.unwrap();
    tx.commit().await.unwrap();

    assert_unauthorized(get(&app, "/v1/whoami", None).await, false).await;
    // A scheme other than Bearer is no credential at all.
    let basic = app.http.get(app.url("/v1/whoami")).header("authorization", "Basic dXNlcjpwYXNz").send().await.unwrap();
    assert_unauthorized(basic, false).await;
    for bad in ["nonsense", "otc_", &live[..live.len() - 1], &format!("{live}x")] {
        assert_unauthorized(get(&app, "/v1/whoami", Some(bad)).await, true).await;
    }
    // Well-formed but never issued: a fresh secret for this tenant.
    let unknown = otc_auth::mint(tenant.id).plaintext;
    assert_unauthorized(get(&app, "/v1/whoami", Some(&unknown)).await, true).await;
    // A tenant id that does not exist.
    let nowhere = otc_auth::mint(uuid::Uuid::new_v4()).plaintext;
    assert_unauthorized(get(&app, "/v1/whoami", Some(&nowhere)).await, true).await;
    assert_unauthorized(get(&app, "/v1/whoami", Some(&revoked)).await, true).await;
    assert_unauthorized(get(&app, "/v1/whoami", Some(&expired)).await, true).await;

    // Unknown routes are behind authentication too.
    assert_unauthorized(get(&app, "/v1/nothing-here", None).await, false).await;
    assert_unauthorized(get(&app, "/mcp", None).await, false).await;
    let missing = get(&app, "/v1/nothing-here", Some(&live)).await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert_eq!(missing.json::<Value>().await.unwrap()["error"]["code"], "not_found");

    let ok = get(&app, "/v1/whoami", Some(&live)).await;
    assert_eq!(ok.status(), StatusCode::OK);
    app.stop().await;
}

#[tokio::test]
async fn whoami_reports_the_tokens_tenant_scopes_and_vault_binding() {
    let app = TestApp::spawn().await;
    let a = Tenant::create(&app.store, "acme").await;
    let b = Tenant::create(&app.store, "globex").await;
    let (a_token, a_id) = a.token(&app.store, "write:notes,read:*", true, None).await;
    let (b_token, _) = b.token(&app.store, "read:notes", false, None).await;

    let me: Value = get(&app, "/v1/whoami", Some(&a_token)).await.json().await.unwrap();
    assert_eq!(me["tenant"]["slug"], "acme");
    assert_eq!(me["tenant"]["id"], a.id.to_string());
    assert_eq!(me["principal"]["name"], "alice");
    assert_eq!(me["token_id"], a_id.to_string());
    assert_eq!(me["scopes"], serde_json::json!(["read:*", "write:notes"]));
    assert_eq!(me["vault"]["id"], a.vault_id.to_string());
    assert_eq!(me["vault"]["name"], "Notes");

    let other: Value = get(&app, "/v1/whoami", Some(&b_token)).await.json().await.unwrap();
    assert_eq!(other["tenant"]["slug"], "globex");
    assert!(other["vault"].is_null());

    // B's secret presented under A's tenant id finds nothing: lookups never leave the tenant.
    let b_secret = b_token.rsplit('_').next().unwrap();
    let forged = format!("otc_{}_{}", a.id.simple(), b_secret);
    assert_unauthorized(get(&app, "/v1/whoami", Some(&forged)).await, true).await;
    app.stop().await;
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_with_413() {
    let app = TestApp::spawn_with(|c| c.server.body_limit_bytes = 1024).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "read:notes", false, None).await;
    let response = app
        .http
        .post(app.url("/v1/whoami"))
        .bearer_auth(&token)
        .header("content-length", "4096")
        .body(vec![b'x'; 4096])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    app.stop().await;
}

#[tokio::test]
async fn a_revocation_holds_on_every_gateway_as_soon_as_it_is_announced() {
    let app = TestApp::spawn().await;
    let second = app.another_gateway(|_| {}).await;
    let kv = app::Deps::new(&app.iso.config()).unwrap().kv;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, token_id) = tenant.token(&app.store, "read:notes", false, None).await;
    let (other, _) = tenant.token(&app.store, "read:notes", false, None).await;
    let second_url = format!("http://{}/v1/whoami", second.addr);
    let on_second = |token: &str| app.http.get(&second_url).bearer_auth(token).send();
    // Twice: the tenant's first successful check makes its token generation, the next is kept.
    for _ in 0..2 {
        for t in [&token, &other] {
            assert_eq!(get(&app, "/v1/whoami", Some(t)).await.status(), StatusCode::OK);
            assert_eq!(on_second(t).await.unwrap().status(), StatusCode::OK);
        }
    }

    // Revoked in Postgres alone, the token is still trusted where it was checked: the gateways
    // keep checked tokens, and the announcement is what tells them.
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    tx.revoke_token(token_id).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(get(&app, "/v1/whoami", Some(&token)).await.status(), StatusCode::OK);
    assert_eq!(on_second(&token).await.unwrap().status(), StatusCode::OK);

    // Announced, it is refused on both gateways from the very next request; the tenant's other
    // token still works (and is checked again in Postgres, then kept again).
    revoked(&kv, tenant.id).await.unwrap();
    for _ in 0..3 {
        assert_unauthorized(get(&app, "/v1/whoami", Some(&token)).await, true).await;
        assert_unauthorized(on_second(&token).await.unwrap(), true).await;
        assert_eq!(get(&app, "/v1/whoami", Some(&other)).await.status(), StatusCode::OK);
        assert_eq!(on_second(&other).await.unwrap().status(), StatusCode::OK);
    }
    second.stop().await.unwrap();
    app.stop().await;
}

#[tokio::test]
async fn a_gateway_cut_off_from_redis_checks_every_token() {
    // Nothing listens on this port: the gateway cannot read generations, so it keeps nothing.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let app =
        TestApp::spawn_with(|c| c.redis.url = otc_config::Secret::new(format!("redis://127.0.0.1:{port}/"))).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, token_id) = tenant.token(&app.store, "read:notes", false, None).await;
    for _ in 0..3 {
        assert_eq!(get(&app, "/v1/whoami", Some(&token)).await.status(), StatusCode::OK);
    }
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    tx.revoke_token(token_id).await.unwrap();
    tx.commit().await.unwrap();
    assert_unauthorized(get(&app, "/v1/whoami", Some(&token)).await, true).await;
    app.stop().await;
}

#[tokio::test]
async fn a_revocation_that_never_reached_redis_is_outlived_by_the_ttl_at_most() {
    let app = TestApp::spawn_with(|c| c.server.auth_cache_ttl_ms = 1_500).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, token_id) = tenant.token(&app.store, "read:notes", false, None).await;
    for _ in 0..2 {
        assert_eq!(get(&app, "/v1/whoami", Some(&token)).await.status(), StatusCode::OK);
    }
    let mut tx = app.store.begin(tenant.id).await.unwrap();
    tx.revoke_token(token_id).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(get(&app, "/v1/whoami", Some(&token)).await.status(), StatusCode::OK, "kept, and not told");
    tokio::time::sleep(std::time::Duration::from_millis(1_600)).await;
    assert_unauthorized(get(&app, "/v1/whoami", Some(&token)).await, true).await;
    app.stop().await;
}

#[tokio::test]
async fn a_cached_token_still_expires_on_time() {
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let expires = Utc::now() + Duration::milliseconds(1500);
    let (token, _) = tenant.token(&app.store, "read:notes", false, Some(expires)).await;
    for _ in 0..2 {
        assert_eq!(get(&app, "/v1/whoami", Some(&token)).await.status(), StatusCode::OK);
    }
    // Well inside the cache's 10 s: only the token's own expiry can refuse it.
    tokio::time::sleep((expires - Utc::now() + Duration::milliseconds(100)).to_std().unwrap()).await;
    assert_unauthorized(get(&app, "/v1/whoami", Some(&token)).await, true).await;
    app.stop().await;
}

#[tokio::test]
async fn a_strangers_token_leaves_nothing_in_redis() {
    let app = TestApp::spawn().await;
    let kv = app::Deps::new(&app.iso.config()).unwrap().kv;
    let nowhere = uuid::Uuid::new_v4();
    for _ in 0..3 {
        let forged = otc_auth::mint(nowhere).plaintext;
        assert_unauthorized(get(&app, "/v1/whoami", Some(&forged)).await, true).await;
    }
    let tokens = otc_kv::Generation::Tokens(nowhere);
    assert_eq!(kv.existing_generation(tokens).await.unwrap(), None, "no key for a tenant nobody proved");
    app.stop().await;
}

/// One HTTP/1.1 answer read off a kept-alive connection: its head and body, by Content-Length.
async fn read_answer(tcp: &mut tokio::net::TcpStream) -> (String, String) {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = tcp.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the server hung up before answering: {}", String::from_utf8_lossy(&buf));
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().unwrap())
        .expect("a Content-Length");
    while buf.len() < head_end + length {
        let n = tcp.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the server hung up mid-answer");
        buf.extend_from_slice(&chunk[..n]);
    }
    (head, String::from_utf8_lossy(&buf[head_end..head_end + length]).into_owned())
}

/// An MCP client's first request has no token; it reads the 401's challenge and sends the next
/// request at once on the same connection. That works however the refused request's body
/// arrived (here a beat after its head), and a body too big to read first ends the connection
/// with `Connection: close` said, never a hang-up the client cannot tell from a crash.
#[tokio::test]
async fn a_refused_request_leaves_its_connection_usable_or_says_it_closes() {
    use tokio::io::AsyncWriteExt;
    let app = TestApp::spawn().await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "read:notes", false, None).await;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
    let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    for _ in 0..3 {
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        tcp.write_all(head.as_bytes()).await.unwrap();
        tcp.flush().await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
        tcp.write_all(body.as_bytes()).await.unwrap();
        let (head, answer) = read_answer(&mut tcp).await;
        assert!(head.starts_with("http/1.1 401"), "{head}");
        assert!(!head.contains("connection: close"), "{head}");
        assert!(answer.contains("unauthorized"), "{answer}");
    }
    // The same connection then carries the authenticated request.
    let request = format!("GET /v1/whoami HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\r\n");
    tcp.write_all(request.as_bytes()).await.unwrap();
    let (head, answer) = read_answer(&mut tcp).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(answer.contains("acme"), "{answer}");

    // A refused request whose body is more than the server reads first: the answer says the
    // connection ends.
    let mut tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let big = 200_000;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {big}\r\n\r\n"
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    let (head, _) = read_answer(&mut tcp).await;
    assert!(head.starts_with("http/1.1 401"), "{head}");
    assert!(head.contains("connection: close"), "{head}");
    app.stop().await;
}
