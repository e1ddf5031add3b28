//! Every listener holds a connection to limits: a client that sends its headers slowly, or
//! nothing on a kept-alive connection, is cut off; a body refused for its size ends the
//! connection with the answer instead of leaving its bytes to be read as the next request.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::harness::{Tenant, TestApp};

/// Reads what the server sends until it closes the connection: the bytes, or None when the
/// connection is still open after `wait`.
async fn read_until_closed(stream: &mut TcpStream, wait: Duration) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let read = async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(wait, read).await.ok().map(|()| got)
}

#[tokio::test]
async fn half_sent_headers_and_idle_connections_are_closed() {
    let app = TestApp::spawn_with(|c| c.server.header_timeout_ms = 500).await;

    // Half a head, then nothing: closed once the header timeout has passed.
    let started = Instant::now();
    let mut slow = TcpStream::connect(app.addr).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n").await.unwrap();
    assert!(read_until_closed(&mut slow, Duration::from_secs(20)).await.is_some(), "a half-sent head is cut off");
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(400), "not before the timeout: {took:?}");

    // A whole request is answered; the connection kept alive after it is closed once idle.
    let mut idle = TcpStream::connect(app.addr).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n").await.unwrap();
    let answered = read_until_closed(&mut idle, Duration::from_secs(20)).await.expect("an idle connection is closed");
    assert!(answered.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answered));

    // The same limit holds on the operators' listener.
    let mut config = app.iso.config();
    config.server.header_timeout_ms = 500;
    config.server.admin_listen = Some("127.0.0.1:0".parse().unwrap());
    let admin = obsidian_tc::app::start_admin(&config, &app.deps, std::future::pending())
        .await
        .unwrap()
        .expect("the admin listener runs");
    let mut slow = TcpStream::connect(admin.addr).await.unwrap();
    slow.write_all(b"GET /metrics HTTP/1.1\r\n").await.unwrap();
    assert!(read_until_closed(&mut slow, Duration::from_secs(20)).await.is_some(), "cut off there too");
    admin.stop().await.unwrap();
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_and_ends_the_connection() {
    let app = TestApp::spawn_with(|c| c.server.body_limit_bytes = 1024).await;
    let tenant = Tenant::create(&app.store, "acme").await;
    let (token, _) = tenant.token(&app.store, "*", false, None).await;
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    // The body is declared larger than the limit and never sent.
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let answer = read_until_closed(&mut stream, Duration::from_secs(20)).await.expect("the connection ends");
    let answer = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 413"), "{answer}");
    assert!(answer.contains("connection: close") && answer.contains("\"overflow\""), "{answer}");
}
