//! SIGTERM: stop accepting, drain in-flight requests, exit 0. Secrets stay out of the log.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::harness::{Child, Isolation};

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
    let mut server = Child::start(env, &["serve"], true);
    let client = reqwest::Client::new();
    assert!(client.get(server.url("/readyz")).send().await.unwrap().status().is_success());
    server.signal("TERM");
    assert_eq!(server.wait(Duration::from_secs(20)).code(), Some(0));
    let log = server.log_text();
    assert!(!log.is_empty());
    assert!(!log.contains(&password), "database password in the log");
    assert!(!log.contains(&s3_secret), "S3 secret in the log");
}

fn url_password(url: &str) -> String {
    let userinfo = url.split("://").nth(1).unwrap().split('@').next().unwrap();
    userinfo.split(':').nth(1).expect("the test database URL has a password").to_string()
}
