//! What an operator sees: a real Prometheus scraping a gateway and a worker (with the alert
//! rules loaded), a call's trace arriving whole at an OTLP/HTTP receiver in the caller's trace,
//! metrics pushed over OTLP, and JSON logs with request and trace ids and nothing secret in
//! them.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::{Value, json};

use crate::harness::{Child, Isolation, Tenant, closed_port};
use crate::mcp::call_at;
use crate::sync::temp_dir;

/// What an OTLP/HTTP receiver on loopback was sent.
#[derive(Default)]
struct Received {
    spans: Mutex<Vec<Span>>,
    metric_names: Mutex<HashSet<String>>,
}

async fn otlp_receiver() -> (String, Arc<Received>) {
    use axum::body::Bytes;
    let received = Arc::new(Received::default());
    let (traces, metrics) = (received.clone(), received.clone());
    let app = axum::Router::new()
        .route(
            "/v1/traces",
            axum::routing::post(move |body: Bytes| async move {
                let request = ExportTraceServiceRequest::decode(body).expect("an OTLP trace export");
                let mut spans = traces.spans.lock().unwrap();
                for resource in request.resource_spans {
                    for scope in resource.scope_spans {
                        spans.extend(scope.spans);
                    }
                }
                ([("content-type", "application/x-protobuf")], Vec::<u8>::new())
            }),
        )
        .route(
            "/v1/metrics",
            axum::routing::post(move |body: Bytes| async move {
                let request = ExportMetricsServiceRequest::decode(body).expect("an OTLP metrics export");
                let mut names = metrics.metric_names.lock().unwrap();
                for resource in request.resource_metrics {
                    for scope in resource.scope_metrics {
                        names.extend(scope.metrics.into_iter().map(|m| m.name));
                    }
                }
                ([("content-type", "application/x-protobuf")], Vec::<u8>::new())
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), received)
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv| kv.key == key).and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
        AnyValue::StringValue(s) => Some(s.clone()),
        AnyValue::IntValue(i) => Some(i.to_string()),
        AnyValue::BoolValue(b) => Some(b.to_string()),
        other => Some(format!("{other:?}")),
    })
}

fn repo_file(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

/// The env for a role logging JSON, with the admin listener on an ephemeral port.
fn role_env(iso: &Isolation, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut env = iso.env();
    env.push(("OTC__SERVER__ADMIN_LISTEN".into(), "127.0.0.1:0".into()));
    env.push(("OTC__TELEMETRY__LOG_FORMAT".into(), "json".into()));
    env.push(("RUST_LOG".into(), "info,sqlx=warn".into()));
    for (k, v) in extra {
        env.push((k.to_string(), v.to_string()));
    }
    env
}

async fn poll<T>(what: &str, limit: Duration, mut probe: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(found) = probe().await {
            return found;
        }
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_call_arrives_as_one_whole_trace_in_the_callers_context_and_logs_carry_its_ids() {
    let iso = Isolation::new().await;
    let store = iso.store();
    let tenant = Tenant::create(&store, "acme").await;
    let (token, _) = tenant.token(&store, "*", false, None).await;
    let (endpoint, received) = otlp_receiver().await;
    let env = role_env(
        &iso,
        &[
            ("OTC__TELEMETRY__OTLP_ENDPOINT", endpoint.as_str()),
            ("OTC__TELEMETRY__OTLP_METRICS_INTERVAL_MS", "500"),
            ("OTEL_BSP_SCHEDULE_DELAY", "200"),
        ],
    );
    let mut gateway = Child::start(env, &["serve"], true);
    let http = reqwest::Client::new();
    let base = gateway.url("");
    let secret_text = "the launch code is 7-alpha-tango";
    let wrote = call_at(
        &http,
        &base,
        &token,
        "write_note",
        json!({"vault": "Notes", "path": "plan.md", "content": secret_text}),
    )
    .await;
    assert_eq!(wrote["result"]["isError"], false, "{wrote}");

    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent_id = "00f067aa0ba902b7";
    let traceparent = format!("00-{trace_id}-{parent_id}-01");
    // A write: its transactions are certain (a read may be answered from caches).
    let response = http
        .post(format!("{base}/mcp"))
        .bearer_auth(&token)
        .header("accept", "application/json, text/event-stream")
        .header("traceparent", &traceparent)
        .header("x-request-id", "req-observe-1")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "append_note", "arguments": {"vault": "Notes", "path": "plan.md", "content": "more"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], "req-observe-1");
    let appended: Value = response.json().await.unwrap();
    assert_eq!(appended["result"]["isError"], false, "{appended}");

    // The spans of that request: all in the caller's trace, each one's parent either another
    // span of it or the caller's own span (the trace is whole).
    let spans = poll("the append_note trace", Duration::from_secs(20), async || {
        let spans: Vec<Span> =
            received.spans.lock().unwrap().iter().filter(|s| hex::encode(&s.trace_id) == trace_id).cloned().collect();
        let has = |name: &str| spans.iter().any(|s| s.name.starts_with(name));
        // Every span of the request is in: the root and each parent named by a child.
        let ids: HashSet<Vec<u8>> = spans.iter().map(|s| s.span_id.clone()).collect();
        let whole =
            spans.iter().all(|s| hex::encode(&s.parent_span_id) == parent_id || ids.contains(&s.parent_span_id));
        (has("POST /mcp") && has("append_note") && has("db.transaction") && has("redis") && whole).then_some(spans)
    })
    .await;
    let ids: HashSet<String> = spans.iter().map(|s| hex::encode(&s.span_id)).collect();
    for span in &spans {
        let parent = hex::encode(&span.parent_span_id);
        assert!(parent == parent_id || ids.contains(&parent), "span {} has a parent outside the trace", span.name);
    }
    let by_id: HashMap<String, &Span> = spans.iter().map(|s| (hex::encode(&s.span_id), s)).collect();
    let root = spans.iter().find(|s| hex::encode(&s.parent_span_id) == parent_id).expect("the request span");
    assert_eq!(root.name, "POST /mcp");
    assert_eq!(attribute(root, "request_id").as_deref(), Some("req-observe-1"));
    let tool = spans.iter().find(|s| s.name == "append_note").unwrap();
    assert_eq!(attribute(tool, "tool").as_deref(), Some("append_note"));
    assert_eq!(attribute(tool, "tenant"), Some(tenant.id.to_string()));
    assert_eq!(attribute(tool, "vault").as_deref(), Some("Notes"));
    assert_eq!(attribute(tool, "outcome").as_deref(), Some("ok"));
    // The tool call descends from the request; a transaction descends from the tool call.
    let ancestors = |span: &Span| {
        let mut chain = Vec::new();
        let mut at = hex::encode(&span.parent_span_id);
        while let Some(parent) = by_id.get(&at) {
            chain.push(parent.name.clone());
            at = hex::encode(&parent.parent_span_id);
        }
        chain
    };
    assert!(ancestors(tool).contains(&"POST /mcp".to_string()), "{:?}", ancestors(tool));
    let transaction =
        spans.iter().find(|s| s.name == "db.transaction" && ancestors(s).contains(&tool.name)).unwrap_or_else(|| {
            let tree: Vec<(String, Vec<String>)> = spans.iter().map(|s| (s.name.clone(), ancestors(s))).collect();
            panic!("no transaction inside the tool call: {tree:?}")
        });
    assert_eq!(attribute(transaction, "db.system").as_deref(), Some("postgresql"));
    let redis = spans.iter().find(|s| s.name.starts_with("redis")).unwrap();
    assert_eq!(attribute(redis, "db.system").as_deref(), Some("redis"));

    // The same instruments went out over OTLP as metrics.
    poll("OTLP metrics", Duration::from_secs(20), async || {
        let names = received.metric_names.lock().unwrap();
        (names.contains("otc_tool_calls_total") && names.contains("otc_tool_call_duration_seconds")).then_some(())
    })
    .await;

    // SIGTERM: drained, flushed, status 0.
    gateway.signal("TERM");
    assert!(gateway.wait(Duration::from_secs(30)).success(), "{}", gateway.log_text());

    // Every line is one JSON object; the traced request's lines carry its ids; nothing secret
    // or from the note is in the log.
    let log = gateway.log_text();
    let mut with_ids = 0;
    for line in log.lines() {
        let value: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        let spans = value["spans"].as_array().cloned().unwrap_or_default();
        if spans.iter().any(|s| s["trace_id"] == trace_id && s["request_id"] == "req-observe-1") {
            with_ids += 1;
        }
    }
    assert!(with_ids >= 1, "no log line carries the request's ids:\n{log}");
    let database_password = iso.database_url.rsplit_once('@').unwrap().0.rsplit_once(':').map(|(_, p)| p.to_string());
    let secret = token.rsplit_once('_').unwrap().1;
    for forbidden in [Some(token.as_str()), Some(secret), Some(secret_text), database_password.as_deref()] {
        let forbidden = forbidden.unwrap();
        assert!(!log.contains(forbidden), "the log contains {forbidden:?}:\n{log}");
    }
}

/// The Prometheus server of `scripts/ops install` (Debian's 2.42).
fn prometheus_bin() -> String {
    std::env::var("OTC_TEST_PROMETHEUS")
        .expect("OTC_TEST_PROMETHEUS is not set: run the tests with scripts/test (it runs scripts/ops install)")
}

async fn prom_query(http: &reqwest::Client, prom: &str, query: &str) -> Vec<Value> {
    let answer: Value =
        http.get(format!("{prom}/api/v1/query")).query(&[("query", query)]).send().await.unwrap().json().await.unwrap();
    assert_eq!(answer["status"], "success", "{query}: {answer}");
    answer["data"]["result"].as_array().cloned().unwrap_or_default()
}

fn value_of(series: &Value) -> f64 {
    series["value"][1].as_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn prometheus_scrapes_a_gateway_and_a_worker_and_loads_the_alert_rules() {
    let iso = Isolation::new().await;
    let store = iso.store();
    let tenant = Tenant::create(&store, "acme").await;
    let (token, _) = tenant.token(&store, "*", false, None).await;
    let mut gateway = Child::start(role_env(&iso, &[]), &["serve"], true);
    let mut worker = Child::start(role_env(&iso, &[("OTC__WORKER__LEASE_TTL_SECS", "3")]), &["worker"], false);
    let (gateway_admin, worker_admin) = (gateway.admin_url(""), worker.admin_url(""));

    let dir = temp_dir("prometheus");
    let rules = repo_file("docs/alerts/obsidian-tc.rules.yml");
    let config = format!(
        "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n\
         rule_files: [{rules:?}]\n\
         scrape_configs:\n\
         - job_name: obsidian-tc-gateway\n  static_configs: [{{targets: [{g:?}]}}]\n\
         - job_name: obsidian-tc-worker\n  static_configs: [{{targets: [{w:?}]}}]\n",
        rules = rules.display().to_string(),
        g = gateway_admin.trim_start_matches("http://"),
        w = worker_admin.trim_start_matches("http://"),
    );
    std::fs::write(dir.join("prometheus.yml"), config).unwrap();
    let http = reqwest::Client::new();
    let prometheus = Prometheus::start(&http, &dir).await;
    let prom = prometheus.url.clone();

    // Traffic: calls that succeed and fail, and a refused token.
    let base = gateway.url("");
    let wrote =
        call_at(&http, &base, &token, "write_note", json!({"vault": "Notes", "path": "a.md", "content": "hello"}))
            .await;
    assert_eq!(wrote["result"]["isError"], false, "{wrote}");
    for _ in 0..3 {
        call_at(&http, &base, &token, "read_note", json!({"vault": "Notes", "path": "a.md"})).await;
    }
    let missing = call_at(&http, &base, &token, "read_note", json!({"vault": "Notes", "path": "nope.md"})).await;
    assert_eq!(missing["result"]["isError"], true, "{missing}");
    let refused = http.post(format!("{base}/mcp")).bearer_auth("otc_bogus").send().await.unwrap();
    assert_eq!(refused.status(), 401);

    // Both targets up, and the series back from Prometheus's own store.
    type Check = Box<dyn Fn(&[Value]) -> bool>;
    let expectations: Vec<(&str, Check)> = vec![
        (r#"up{job=~"obsidian-tc-.*"}"#, Box::new(|r| r.len() == 2 && r.iter().all(|s| value_of(s) == 1.0))),
        (
            r#"otc_tool_calls_total{job="obsidian-tc-gateway",tool="read_note",outcome="ok"}"#,
            Box::new(|r| r.first().is_some_and(|s| value_of(s) >= 3.0)),
        ),
        (
            r#"otc_tool_calls_total{job="obsidian-tc-gateway",tool="read_note",outcome!="ok"}"#,
            Box::new(|r| r.first().is_some_and(|s| value_of(s) >= 1.0)),
        ),
        (
            r#"histogram_quantile(0.99, sum by (le) (otc_tool_call_duration_seconds_bucket{tool="read_note"}))"#,
            Box::new(|r| r.first().is_some_and(|s| value_of(s) > 0.0)),
        ),
        (r#"otc_auth_decisions_total{method="token",outcome="ok"}"#, Box::new(|r| !r.is_empty())),
        (r#"otc_auth_decisions_total{method="token",outcome="refused"}"#, Box::new(|r| !r.is_empty())),
        (r#"otc_rate_limit_decisions_total{outcome="allowed"}"#, Box::new(|r| !r.is_empty())),
        (r#"otc_http_requests_total{status="4xx"}"#, Box::new(|r| !r.is_empty())),
        (r#"otc_db_pool_max_connections"#, Box::new(|r| r.len() == 2)),
        (r#"otc_cache_entries{cache="auth"}"#, Box::new(|r| !r.is_empty())),
        // Every cache reports its bound and what it did: the note read again came from memory.
        (
            r#"otc_cache_max_bytes{job="obsidian-tc-gateway",cache="search_segments"}"#,
            Box::new(|r| r.first().is_some_and(|s| value_of(s) > 0.0)),
        ),
        (
            r#"otc_cache_hits_total{job="obsidian-tc-gateway",cache="blobs"}"#,
            Box::new(|r| r.first().is_some_and(|s| value_of(s) >= 1.0)),
        ),
        (r#"otc_cache_evictions_total{job="obsidian-tc-gateway",cache="graphs"}"#, Box::new(|r| r.len() == 1)),
        (r#"otc_cache_bytes{job="obsidian-tc-gateway",cache="files"}"#, Box::new(|r| r.len() == 1)),
        (r#"otc_build_info{role="worker"}"#, Box::new(|r| r.len() == 1)),
        (r#"otc_worker_leader{job="obsidian-tc-worker"}"#, Box::new(|r| r.first().is_some_and(|s| value_of(s) == 1.0))),
        (r#"otc_outbox_depth{job="obsidian-tc-worker",tenant="acme",kind="index"}"#, Box::new(|r| r.len() == 1)),
        (r#"otc_index_lag_seconds{tenant="acme"}"#, Box::new(|r| r.len() == 1)),
        // Today's usage per tenant, as the audit trail counts it: three reads, one refused.
        (
            r#"otc_tenant_calls_today{job="obsidian-tc-worker",tenant="acme",class="read",result="ok"}"#,
            Box::new(|r| r.first().is_some_and(|s| value_of(s) == 3.0)),
        ),
        (
            r#"otc_tenant_calls_today{job="obsidian-tc-worker",tenant="acme",class="read",result="error"}"#,
            Box::new(|r| r.first().is_some_and(|s| value_of(s) == 1.0)),
        ),
        (
            r#"otc_tenant_calls_today{job="obsidian-tc-worker",tenant="acme",class="write",result="ok"}"#,
            Box::new(|r| r.first().is_some_and(|s| value_of(s) == 1.0)),
        ),
        (
            r#"otc_tenant_storage_bytes{job="obsidian-tc-worker",tenant="acme"}"#,
            Box::new(|r| r.first().is_some_and(|s| value_of(s) >= 5.0)),
        ),
    ];
    for (query, ok) in &expectations {
        poll(query, Duration::from_secs(40), async || {
            let result = prom_query(&http, &prom, query).await;
            ok(&result).then_some(())
        })
        .await;
    }
    // The alert rules loaded and evaluate without errors.
    let rules: Value = poll("rules evaluated", Duration::from_secs(20), async || {
        let rules: Value = http.get(format!("{prom}/api/v1/rules")).send().await.ok()?.json().await.ok()?;
        let groups = rules["data"]["groups"].as_array()?;
        let evaluated = groups
            .iter()
            .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
            .all(|r| r["lastEvaluation"].as_str().is_some_and(|t| !t.starts_with("0001")));
        (!groups.is_empty() && evaluated).then_some(rules)
    })
    .await;
    let all_rules: Vec<Value> = rules["data"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
        .collect();
    assert!(all_rules.len() >= 5, "{rules}");
    for rule in &all_rules {
        assert_eq!(rule["health"], "ok", "rule {} fails to evaluate: {rule}", rule["name"]);
        assert!(rule["annotations"]["runbook_url"].as_str().is_some_and(|u| u.contains("runbook")), "{rule}");
    }
    // With a live leader and nothing failing, no alert fires.
    let firing: Vec<&Value> = all_rules.iter().filter(|r| r["state"] == "firing").collect();
    assert!(firing.is_empty(), "alerts firing on a healthy deployment: {firing:?}");

    drop(prometheus);
    for child in [&mut gateway, &mut worker] {
        child.signal("TERM");
        assert!(child.wait(Duration::from_secs(30)).success(), "{}", child.log_text());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Prometheus server on loopback, killed when dropped; its log is in `dir`.
struct Prometheus {
    child: std::process::Child,
    url: String,
    log: PathBuf,
}

impl Prometheus {
    /// Starts on a free port (another, if a parallel test took the one picked first) with
    /// `dir/prometheus.yml`, and waits until it is ready.
    async fn start(http: &reqwest::Client, dir: &std::path::Path) -> Self {
        for attempt in 0..3 {
            let port = closed_port();
            let log = dir.join(format!("prometheus-{attempt}.log"));
            let child = std::process::Command::new(prometheus_bin())
                .arg(format!("--config.file={}", dir.join("prometheus.yml").display()))
                .arg(format!("--storage.tsdb.path={}", dir.join(format!("data-{attempt}")).display()))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .stdout(std::process::Stdio::null())
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .expect("start prometheus");
            let mut server = Self { child, url: format!("http://127.0.0.1:{port}"), log };
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if server.child.try_wait().unwrap().is_some() {
                    break;
                }
                if let Ok(ready) = http.get(format!("{}/-/ready", server.url)).send().await
                    && ready.status().is_success()
                {
                    return server;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            eprintln!("prometheus did not come up:\n{}", server.log_text());
            let _ = server.child.kill();
        }
        panic!("prometheus did not start in three tries");
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("prometheus log:\n{}", self.log_text());
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
