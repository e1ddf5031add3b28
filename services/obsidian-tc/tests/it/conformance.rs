//! The official conformance suite, server scenarios for 2025-11-25, against the test build
//! `otc-conformance-server` (the real MCP handler, transport and pipeline plus the suite's
//! fixtures). Scenarios that cannot pass on the stateless transport are listed, with the reason,
//! in tests/conformance/expected-failures.yml; the suite fails on any other failure and on a
//! listed scenario that starts passing.

use std::time::Duration;

use crate::harness::{Child, Isolation, client_env};

#[tokio::test]
async fn the_conformance_suite_passes_with_only_the_justified_expected_failures() {
    let iso = Isolation::new().await;
    let server =
        Child::start_bin(env!("CARGO_BIN_EXE_otc-conformance-server"), iso.env(), &["--listen", "127.0.0.1:0"]);
    let url = server.url("/mcp");
    let baseline = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/expected-failures.yml");
    let out_dir = std::env::temp_dir().join(format!("otc-conformance-{}", uuid::Uuid::new_v4().simple()));
    let node_bin = client_env("OTC_TEST_NODE_BIN");
    let run = tokio::process::Command::new(format!("{}/conformance", client_env("OTC_TEST_NPM_BIN")))
        .args(["server", "--url", &url, "--spec-version", "2025-11-25", "--expected-failures", baseline, "-o"])
        .arg(&out_dir)
        .env("PATH", format!("{node_bin}:{}", std::env::var("PATH").unwrap_or_default()))
        .env("HOME", client_env("OTC_TEST_CLIENT_HOME"))
        .current_dir(std::env::temp_dir())
        .output();
    let out =
        tokio::time::timeout(Duration::from_secs(240), run).await.expect("suite finished").expect("run the suite");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let _ = std::fs::remove_dir_all(&out_dir);
    assert!(
        out.status.success(),
        "conformance failed:\n{stdout}\n{}\nserver log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.log_text()
    );
    let total = stdout.lines().find(|l| l.starts_with("Total:")).expect("a summary line");
    let passed: usize = total.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(passed >= 26, "{total}\n{stdout}");
}
