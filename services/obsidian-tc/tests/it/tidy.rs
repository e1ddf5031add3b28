//! The architecture invariants that a scan of the source can check (ARCHITECTURE.md): SQL only in
//! the store, rmcp only at the edge, one commit path, models and embedding providers only in the
//! embed crate.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Every Rust source file under services/ and shared/, with its path relative to the root.
fn sources() -> Vec<(String, String)> {
    let root = root();
    let mut out = Vec::new();
    let mut stack = vec![root.join("services"), root.join("shared")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                // A build's output (shared/fuzz/target when the fuzzers were built) is not source.
                if !path.ends_with("target") {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
                out.push((rel, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    assert!(out.len() > 100, "found the sources");
    out
}

fn offenders(allowed: &[&str], needle: &str) -> Vec<String> {
    sources()
        .into_iter()
        .filter(|(path, _)| !allowed.iter().any(|a| path.starts_with(a)))
        .filter(|(path, _)| !path.contains("/tests/"))
        .filter(|(_, text)| text.contains(needle))
        .map(|(path, _)| path)
        .collect()
}

#[test]
fn only_the_store_has_sql() {
    for needle in ["sqlx::", "SELECT ", "INSERT INTO", "DELETE FROM"] {
        let found = offenders(&["shared/store/"], needle);
        assert!(found.is_empty(), "{needle:?} outside shared/store: {found:?}");
    }
}

#[test]
fn only_the_gateway_knows_rmcp() {
    let found = offenders(&["services/gateway/", "services/obsidian-tc/src/bin/otc-conformance-server.rs"], "rmcp::");
    assert!(found.is_empty(), "rmcp outside the gateway: {found:?}");
}

#[test]
fn every_commit_goes_through_the_one_commit_path() {
    let found = offenders(
        &["shared/store/", "services/indexer/src/commit.rs", "services/worker/src/lib.rs"],
        ".commit_changes",
    );
    assert!(found.is_empty(), "commits outside otc_indexer::commit: {found:?}");
}

#[test]
fn only_the_identity_crate_talks_to_identity_providers_and_picks_outbound_addresses() {
    let found = offenders(&["services/identity/"], "openidconnect::");
    assert!(found.is_empty(), "openidconnect outside services/identity: {found:?}");
    // The guarded resolver (otc-egress) is the one way to reach an address someone else chose.
    let found = offenders(&["shared/egress/"], ".dns_resolver(");
    assert!(found.is_empty(), "another resolver: {found:?}");
}

#[test]
fn the_codes_said_never_to_be_raised_are_not_and_every_other_code_is() {
    let text: String = sources()
        .into_iter()
        .filter(|(path, _)| !path.starts_with("shared/errors/") && !path.contains("/tests/"))
        .map(|(_, text)| text)
        .collect();
    let constructed = |code: otc_errors::ErrorCode| {
        let variant = format!("{code:?}");
        text.match_indices(&format!("ErrorCode::{variant}"))
            .any(|(i, m)| !text[i + m.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_'))
    };
    for (code, _) in otc_errors::NOT_RAISED {
        assert!(!constructed(*code), "{code} is listed as never raised, but the code constructs it");
    }
    for row in otc_errors::TABLE {
        let listed = otc_errors::NOT_RAISED.iter().any(|(c, _)| *c == row.code);
        assert!(listed || constructed(row.code), "{} is never raised: raise it or list it in NOT_RAISED", row.code);
    }
}

#[test]
fn only_the_embed_crate_runs_models_and_calls_embedding_providers() {
    for needle in [" ort::", "(ort::", "/embeddings\""] {
        let found = offenders(&["shared/embed/"], needle);
        assert!(found.is_empty(), "{needle:?} outside shared/embed: {found:?}");
    }
}

#[test]
fn only_the_telemetry_crate_knows_opentelemetry() {
    for needle in ["opentelemetry::", "opentelemetry_sdk::", "opentelemetry_otlp::", "tracing_opentelemetry::"] {
        let found = offenders(&["shared/telemetry/"], needle);
        assert!(found.is_empty(), "{needle:?} outside shared/telemetry: {found:?}");
    }
}
