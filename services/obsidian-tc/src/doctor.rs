//! `obsidian-tc doctor`: checks the configuration and every dependency. Prints one line per
//! check, `ok:` or `problem:` with how to fix it, and exits non-zero when any check fails.

use std::process::ExitCode;
use std::time::Duration;

use otc_config::{Config, Sources, redact_url};

use crate::app::Deps;

/// One finding. Problems carry the fix; warnings do not fail the check.
enum Line {
    Ok(String),
    Warning(String),
    Problem(String),
}

pub async fn run(sources: Sources) -> anyhow::Result<ExitCode> {
    let lines = check(&sources).await;
    let mut failed = false;
    for line in &lines {
        match line {
            Line::Ok(text) => println!("ok: {text}"),
            Line::Warning(text) => println!("warning: {text}"),
            Line::Problem(text) => {
                failed = true;
                println!("problem: {text}");
            }
        }
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

async fn check(sources: &Sources) -> Vec<Line> {
    let mut lines = Vec::new();
    let loaded = match sources.load() {
        Ok(loaded) => loaded,
        Err(e) => {
            lines.push(Line::Problem(format!("configuration: {e} (fix the value, or unset it to use the default)")));
            return lines;
        }
    };
    match &loaded.file {
        Some(path) => lines.push(Line::Ok(format!("configuration file {}", path.display()))),
        None => lines.push(Line::Ok("configuration from defaults and the environment (no file)".into())),
    }
    for unknown in &loaded.unknown_keys {
        lines.push(Line::Problem(format!("{unknown}: no setting has this name; check its spelling, or remove it")));
    }
    if let Err(problems) = loaded.validate() {
        for problem in problems {
            lines.push(Line::Problem(format!("configuration: {problem}")));
        }
        return lines;
    }
    let config = &loaded.config;
    for note in config.deprecations() {
        lines.push(Line::Warning(note));
    }
    lines.extend(check_tool_settings(config));
    let deps = match Deps::new(config) {
        Ok(deps) => deps,
        Err(e) => {
            lines.push(Line::Problem(format!("{} (fix the setting)", crate::chain(&e))));
            return lines;
        }
    };
    let limit = Duration::from_secs(config.database.connect_timeout_secs.max(1) + 1);
    let (pg, redis, objects) = tokio::join!(
        check_postgres(config, &deps, limit),
        check_redis(config, &deps, limit),
        check_objects(&deps, limit),
    );
    lines.extend(pg);
    lines.push(redis);
    lines.push(objects);
    if let Some(endpoint) = &config.telemetry.otlp_endpoint {
        lines.push(Line::Ok(format!("traces exported over OTLP/HTTP to {}", otc_telemetry::traces_url(endpoint))));
    }
    lines.push(oauth_line(config));
    lines.push(embeddings_line(config, &deps));
    lines.push(wiki_line(config));
    lines
}

/// The wiki's judge and scheduled upkeep, as configured (the judge is not called: every call
/// costs).
fn wiki_line(config: &Config) -> Line {
    let j = &config.wiki.judge;
    let judge = match &j.base_url {
        None => "no judge".to_string(),
        Some(url) => format!(
            "judge {} at {} ({} calls per tenant per day; find_existing_page {}, lint {}; not called by doctor)",
            j.model,
            otc_config::redact_url(&otc_config::Secret::new(url.clone())),
            j.max_calls_per_day,
            if j.enabled { "on" } else { "when asked" },
            if j.lint_enabled { "on" } else { "off" },
        ),
    };
    let m = &config.maintenance;
    let every = |on: bool, hours: f64| if m.enabled && on { format!("every {hours} h") } else { "off".into() };
    Line::Ok(format!(
        "wiki: {judge}; scheduled lint {}, generated pages {} (and after each change to the wiki through the tools)",
        every(m.wiki_lint.enabled, m.wiki_lint.interval_hours),
        every(m.wiki_pages.enabled, m.wiki_pages.interval_hours),
    ))
}

/// Which embedder semantic search uses (the local model is loaded by now; a provider over HTTP
/// is not called, since every call costs).
fn embeddings_line(config: &Config, deps: &Deps) -> Line {
    match deps.embeddings.active() {
        None => Line::Ok("semantic search off: embeddings.provider is none (keyword search works)".into()),
        Some(e) if config.embeddings.provider == otc_config::EmbeddingProvider::Local => {
            Line::Ok(format!("embeddings: local model {} loaded ({} dimensions)", e.model(), e.dims()))
        }
        Some(e) => Line::Ok(format!(
            "embeddings: {} ({} dimensions) at {} (not called by doctor)",
            e.model(),
            e.dims(),
            otc_config::redact_url(&otc_config::Secret::new(config.embeddings.base_url.clone()))
        )),
    }
}

/// Whether clients can sign in (OAuth), and from where they are told to.
fn oauth_line(config: &Config) -> Line {
    match (&config.oauth.secret_key, &config.mcp.public_url) {
        (None, _) => Line::Ok("sign-in (OAuth) off: oauth.secret_key is not set; clients use API tokens".into()),
        (Some(_), Some(url)) if url.starts_with("https://") => {
            Line::Ok(format!("sign-in (OAuth) on: issuer {}", url.trim_end_matches('/')))
        }
        (Some(_), Some(url)) => Line::Warning(format!(
            "sign-in (OAuth) on, but mcp.public_url {url} is not https: hosted clients refuse it"
        )),
        (Some(_), None) => Line::Warning(
            "sign-in (OAuth) on with no mcp.public_url: the issuer is read from each request's Host (http); set it"
                .into(),
        ),
    }
}

/// Tool names and tags in the visibility settings must exist, or the rule silently does nothing.
fn check_tool_settings(config: &Config) -> Vec<Line> {
    let registry = match otc_catalog::Registry::new(otc_tools::toolset::all().into_iter().map(|e| e.declaration)) {
        Ok(registry) => registry,
        Err(e) => return vec![Line::Problem(format!("the tool catalogue does not register: {e}"))],
    };
    let v = &config.tool_visibility;
    let mut lines = Vec::new();
    let names = [("hidden", &v.hidden), ("disabled", &v.disabled)]
        .into_iter()
        .chain(v.allowed.as_ref().map(|a| ("allowed", a)));
    for (key, list) in names {
        for name in list.iter().filter(|n| registry.get(n).is_none()) {
            lines.push(Line::Problem(format!(
                "tool_visibility.{key} names {name:?}, which is not a tool: check the spelling (find_capability lists tools)"
            )));
        }
    }
    for (key, list) in [("hidden_tags", &v.hidden_tags), ("disabled_tags", &v.disabled_tags)] {
        for tag in list.iter().filter(|t| !otc_catalog::tags::is_known(t)) {
            lines.push(Line::Problem(format!(
                "tool_visibility.{key} names {tag:?}, which is not a tag: see the tag vocabulary"
            )));
        }
    }
    lines
}

async fn check_postgres(config: &Config, deps: &Deps, limit: Duration) -> Vec<Line> {
    let url = redact_url(&config.database.url);
    let fix = "start it (`scripts/services up` locally) or fix database.url / OTC__DATABASE__URL";
    match tokio::time::timeout(limit, deps.store.connect_once()).await {
        Err(_) => {
            return vec![Line::Problem(format!("postgres at {url} did not answer within {}s: {fix}", limit.as_secs()))];
        }
        Ok(Err(e)) => {
            return vec![Line::Problem(format!("postgres at {url} is unreachable ({}): {fix}", root_cause(&e)))];
        }
        Ok(Ok(())) => {}
    }
    let mut lines = vec![Line::Ok(format!("postgres at {url}"))];
    match deps.store.missing_extensions().await {
        Ok(missing) if missing.is_empty() => {}
        Ok(missing) => lines.push(Line::Problem(format!(
            "postgres lacks the extension(s) {}: install pgvector and pg_trgm on the server",
            missing.join(", ")
        ))),
        Err(e) => lines.push(Line::Problem(format!("postgres: cannot list extensions ({})", root_cause(&e)))),
    }
    match deps.store.pending_migrations().await {
        Ok(pending) if pending.is_empty() => lines.push(Line::Ok("database schema is current".into())),
        Ok(pending) => lines.push(Line::Problem(format!(
            "database schema is behind by {} migration(s): run `obsidian-tc migrate`",
            pending.len()
        ))),
        Err(e) => lines.push(Line::Problem(format!("postgres: cannot read the migration state ({})", root_cause(&e)))),
    }
    lines
}

async fn check_redis(config: &Config, deps: &Deps, limit: Duration) -> Line {
    let url = redact_url(&config.redis.url);
    let fix = "start it (`scripts/services up` locally) or fix redis.url / OTC__REDIS__URL";
    match tokio::time::timeout(limit, deps.kv.ping()).await {
        Ok(Ok(())) => Line::Ok(format!("redis at {url}")),
        Ok(Err(e)) => Line::Problem(format!("redis at {url} is unreachable ({}): {fix}", root_cause(&e))),
        Err(_) => Line::Problem(format!("redis at {url} did not answer within {}s: {fix}", limit.as_secs())),
    }
}

async fn check_objects(deps: &Deps, limit: Duration) -> Line {
    let what = deps.blobs.describe().to_string();
    let fix =
        "start it (`scripts/services up` locally) or fix the object_store.* settings (bucket, endpoint, credentials)";
    match tokio::time::timeout(limit * 3, deps.blobs.round_trip()).await {
        Ok(Ok(())) => Line::Ok(format!("object store: {what} (write, read and delete work)")),
        Ok(Err(e)) => {
            Line::Problem(format!("object store {what} failed a write/read/delete ({}): {fix}", root_cause(&e)))
        }
        Err(_) => Line::Problem(format!("object store {what} did not answer within {}s: {fix}", (limit * 3).as_secs())),
    }
}

/// The innermost cause, which is usually the informative one (`Connection refused`).
fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = err;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}
