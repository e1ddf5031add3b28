use std::io::Write;

use super::*;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn file(text: &str) -> tempfile_path::TempFile {
    tempfile_path::TempFile::with(text)
}

/// A tiny temporary file helper, so the config crate needs no test dependency.
mod tempfile_path {
    use super::*;
    pub struct TempFile(pub PathBuf);
    impl TempFile {
        pub fn with(text: &str) -> Self {
            let path = std::env::temp_dir().join(format!(
                "otc-config-test-{}-{}.toml",
                std::process::id(),
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
            ));
            std::fs::File::create(&path).unwrap().write_all(text.as_bytes()).unwrap();
            TempFile(path)
        }
    }
    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

#[test]
fn defaults_load_and_validate() {
    let loaded = Sources::new(None, env(&[])).load().unwrap();
    assert_eq!(loaded.config.server.listen.port(), 8080);
    assert!(loaded.unknown_keys.is_empty());
    loaded.validate().unwrap();
}

#[test]
fn layers_override_in_order_file_env_flag() {
    let f = file("[server]\nlisten = \"127.0.0.1:1000\"\nshutdown_grace_secs = 7\n[redis]\nkey_prefix = \"file:\"\n");
    let sources = Sources::new(
        Some(f.0.clone()),
        env(&[("OTC__SERVER__LISTEN", "127.0.0.1:2000"), ("OTC__REDIS__KEY_PREFIX", "env:"), ("HOME", "/x")]),
    );
    let loaded = sources.clone().load().unwrap();
    assert_eq!(loaded.config.server.listen.port(), 2000);
    assert_eq!(loaded.config.server.shutdown_grace_secs, 7);
    assert_eq!(loaded.config.redis.key_prefix, "env:");
    let loaded = sources.flag("server.listen", "127.0.0.1:3000", "--listen").load().unwrap();
    assert_eq!(loaded.config.server.listen.port(), 3000);
    assert_eq!(loaded.origin("server.listen"), Some(Origin::Flag { flag: "--listen".into() }));
}

#[test]
fn env_values_take_the_type_the_field_wants() {
    let loaded = Sources::new(
        None,
        env(&[
            ("OTC__DATABASE__MAX_CONNECTIONS", "7"),
            ("OTC__OBJECT_STORE__ALLOW_HTTP", "true"),
            // Looks like a number, but the field is text: kept as text.
            ("OTC__REDIS__KEY_PREFIX", "12345"),
            ("OTC__OBJECT_STORE__SECRET_ACCESS_KEY", "999"),
            ("OTC__OBJECT_STORE__KIND", "s3"),
        ]),
    )
    .load()
    .unwrap();
    assert_eq!(loaded.config.database.max_connections, 7);
    assert!(loaded.config.object_store.allow_http);
    assert_eq!(loaded.config.redis.key_prefix, "12345");
    assert_eq!(loaded.config.object_store.secret_access_key.unwrap().expose(), "999");
    assert_eq!(loaded.config.object_store.kind, ObjectStoreKind::S3);
}

#[test]
fn a_malformed_env_value_names_the_variable() {
    let err = Sources::new(None, env(&[("OTC__SERVER__LISTEN", "not-an-address")])).load().unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("OTC__SERVER__LISTEN"), "{text}");
    assert!(text.contains("socket address"), "{text}");

    let err = Sources::new(None, env(&[("OTC__DATABASE__MAX_CONNECTIONS", "many")])).load().unwrap_err();
    assert!(err.to_string().starts_with("OTC__DATABASE__MAX_CONNECTIONS"), "{err}");

    let err = Sources::new(None, env(&[("OTC__OBJECT_STORE__KIND", "ftp")])).load().unwrap_err();
    assert!(err.to_string().starts_with("OTC__OBJECT_STORE__KIND"), "{err}");
    assert!(err.to_string().contains("local"), "lists the accepted values: {err}");
}

#[test]
fn a_malformed_file_value_names_the_file_and_key() {
    let f = file("[worker]\nlease_ttl_secs = \"soon\"\n");
    let err = Sources::new(Some(f.0.clone()), env(&[])).load().unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("worker.lease_ttl_secs (config file"), "{text}");
}

#[test]
fn unknown_keys_are_collected_with_their_origin() {
    let f = file("[server]\nlisten = \"127.0.0.1:1\"\nlisen = 1\n[nonsense]\nx = 1\n");
    let loaded = Sources::new(Some(f.0.clone()), env(&[("OTC__REDIS__URLL", "redis://x")])).load().unwrap();
    let mut keys: Vec<String> = loaded.unknown_keys.iter().map(|u| u.key.clone()).collect();
    keys.sort();
    assert_eq!(keys, ["nonsense", "redis.urll", "server.lisen"]);
    let env_one = loaded.unknown_keys.iter().find(|u| u.key == "redis.urll").unwrap();
    assert!(env_one.to_string().contains("OTC__REDIS__URLL"), "{env_one}");
}

#[test]
fn validation_names_the_source() {
    let loaded = Sources::new(None, env(&[("OTC__DATABASE__URL", "mysql://x")])).load().unwrap();
    let problems = loaded.validate().unwrap_err();
    assert_eq!(problems.len(), 1);
    assert!(problems[0].to_string().starts_with("OTC__DATABASE__URL"), "{}", problems[0]);
}

#[test]
fn secrets_never_print() {
    let loaded = Sources::new(
        None,
        env(&[
            ("OTC__DATABASE__URL", "postgres://app:hunter2@db:5432/otc"),
            ("OTC__OBJECT_STORE__SECRET_ACCESS_KEY", "s3cr3t"),
        ]),
    )
    .load()
    .unwrap();
    let debug = format!("{:?}", loaded.config);
    assert!(!debug.contains("hunter2") && !debug.contains("s3cr3t"), "{debug}");
    assert_eq!(redact_url(&loaded.config.database.url), "postgres://app:***@db:5432/otc");
}

#[test]
fn bad_toml_is_a_syntax_error_naming_the_file() {
    let f = file("[server\n");
    let err = Sources::new(Some(f.0.clone()), env(&[])).load().unwrap_err();
    assert!(matches!(err, ConfigError::Syntax { .. }), "{err}");
}

#[test]
fn auto_clients_keep_the_order_they_were_written_in() {
    let f = file(
        "[tool_facade]\nmode = \"auto\"\n[tool_facade.auto_clients]\nzed = \"flat\"\nclaude = \"domain\"\nabc = \"triad\"\n",
    );
    let loaded = Sources::new(Some(f.0.clone()), env(&[])).load().unwrap();
    let keys: Vec<&str> = loaded.config.tool_facade.auto_clients.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["zed", "claude", "abc"]);
    assert_eq!(loaded.config.tool_facade.auto_clients[1].1, FacadeModeSetting::Domain);
    assert_eq!(loaded.config.deprecations().len(), 2, "auto and auto_clients are deprecated");
    let plain = Sources::new(None, env(&[("OTC__TOOL_FACADE__EXPLAIN_AUTO_MODE", "true")])).load().unwrap();
    assert_eq!(plain.config.deprecations().len(), 1, "explain_auto_mode without auto is reported");
}

#[test]
fn the_index_section_bounds_what_is_indexed_and_how_long_a_write_waits() {
    let loaded = Sources::new(None, env(&[])).load().unwrap();
    assert_eq!(loaded.config.index.max_indexed_bytes, 4 * 1024 * 1024);
    assert_eq!(loaded.config.index.inline_deadline_ms, 2_000);
    let f = file("[index]\nmax_indexed_bytes = 1048576\n");
    let loaded = Sources::new(Some(f.0.clone()), env(&[("OTC__INDEX__INLINE_DEADLINE_MS", "0")])).load().unwrap();
    assert_eq!((loaded.config.index.max_indexed_bytes, loaded.config.index.inline_deadline_ms), (1 << 20, 0));
    assert!(loaded.unknown_keys.is_empty());
    loaded.validate().unwrap();
    let loaded = Sources::new(None, env(&[("OTC__INDEX__MAX_INDEXED_BYTES", "10")])).load().unwrap();
    let problems = loaded.validate().unwrap_err();
    assert!(problems[0].to_string().starts_with("OTC__INDEX__MAX_INDEXED_BYTES"), "{}", problems[0]);
}

#[test]
fn the_oauth_secret_key_must_be_32_bytes_of_base64() {
    let check = |key: &str| {
        Sources::new(None, env(&[("OTC__OAUTH__SECRET_KEY", key)]))
            .load()
            .unwrap()
            .validate()
            .map_err(|p| p[0].to_string())
    };
    assert!(check("BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=").is_ok());
    for bad in ["short", "c2hvcnQ=", "not base64 at all!"] {
        let problem = check(bad).unwrap_err();
        assert!(problem.starts_with("OTC__OAUTH__SECRET_KEY") && !problem.contains(bad), "{problem}");
    }
}

#[test]
fn the_judge_reaches_plain_http_only_on_loopback_or_a_named_host_and_upkeep_is_bounded() {
    let check = |vars: &[(&str, &str)]| {
        let mut all = vec![("OTC__WIKI__JUDGE__MODEL", "m")];
        all.extend_from_slice(vars);
        Sources::new(None, env(&all))
            .load()
            .unwrap()
            .validate()
            .map_err(|p| p.iter().map(|e| e.to_string()).collect::<Vec<_>>())
    };
    for ok in ["https://judge.example/v1", "http://127.0.0.1:9/v1", "http://localhost/v1", "http://[::1]:8/v1"] {
        assert!(check(&[("OTC__WIKI__JUDGE__BASE_URL", ok)]).is_ok(), "{ok}");
    }
    let plain = check(&[("OTC__WIKI__JUDGE__BASE_URL", "http://gateway.internal/v1")]).unwrap_err();
    assert!(plain[0].contains("plain_http_hosts"), "{plain:?}");
    let listed = Sources::new(
        None,
        env(&[("OTC__WIKI__JUDGE__MODEL", "m"), ("OTC__WIKI__JUDGE__BASE_URL", "http://gateway.internal/v1")]),
    )
    .load()
    .unwrap();
    let mut config = listed.config;
    config.wiki.judge.plain_http_hosts = vec!["Gateway.Internal".into()];
    assert!(config.validate().is_ok());
    let no_model = Sources::new(None, env(&[("OTC__WIKI__JUDGE__BASE_URL", "https://j/v1")])).load().unwrap();
    assert!(no_model.config.validate().is_err());
    for (key, value) in [
        ("OTC__MAINTENANCE__WIKI_LINT__INTERVAL_HOURS", "0"),
        ("OTC__MAINTENANCE__WIKI_LINT__MAX_NOTES", "0"),
        ("OTC__MAINTENANCE__WIKI_LINT__JUDGE_MAX_CALLS", "101"),
        ("OTC__MAINTENANCE__WIKI_PAGES__INTERVAL_HOURS", "-1"),
        ("OTC__WIKI__JUDGE__MAX_CALLS_PER_REQUEST", "4"),
    ] {
        assert!(check(&[(key, value)]).is_err(), "{key}={value}");
    }
}

#[test]
fn the_caches_take_shares_of_the_memory_limit_unless_set_and_must_fit_in_sixty_percent() {
    let f = file("[caches]\nmemory_limit_bytes = 1073741824\ngraphs_bytes = 1000000\n");
    let loaded = Sources::new(Some(f.0.clone()), env(&[])).load().unwrap();
    let bounds = loaded.config.caches.resolve();
    let share = (1u64 << 30) / 1000;
    assert_eq!(bounds.segments, 260 * share);
    assert_eq!(
        (bounds.masks, bounds.blobs, bounds.files, bounds.auth),
        (20 * share, 40 * share, 40 * share, 10 * share)
    );
    assert_eq!((bounds.vaults, bounds.excluded), (5 * share, 5 * share));
    assert_eq!(bounds.graphs, 1_000_000, "a set bound is kept");
    assert!(bounds.sum() <= 600 * share);
    loaded.validate().unwrap();

    let loaded = Sources::new(Some(f.0.clone()), env(&[("OTC__CACHES__SEGMENTS_BYTES", "900000000")])).load().unwrap();
    let problems = loaded.validate().unwrap_err();
    assert!(problems[0].to_string().contains("more than 60% of the memory limit"), "{}", problems[0]);

    // Left at 0, the limit is this process's: its cgroup's, else the machine's memory.
    assert!(process_memory_limit() > 64 << 20);
}
