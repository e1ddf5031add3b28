//! The simulated rollout: the Helm chart rendered with `helm template`, then its migration Job
//! and its gateway and worker Deployments run as local processes with exactly their
//! container's command, args and environment (Secret references filled from a simulated
//! Secret, the ConfigMap mounted as a file), two gateways behind a round-robin proxy, and the
//! scenarios a horizontally scaled deployment must pass: a write read at once on the other
//! gateway, a task started on one and read and cancelled on the other, one rate-limit budget,
//! leadership handed over when the leader is killed, and no acknowledged write lost when a
//! gateway is killed mid-traffic. And the chart's optional PgBouncer, run from its rendered
//! pod with Debian's pgbouncer, pooling a gateway's and a worker's connections.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use yaml_rust2::{Yaml, YamlLoader};

use crate::harness::{Child, Isolation, Tenant, cli_with_env, stderr, stdout};
use crate::mcp::call_at;
use crate::mcp::error_of;
use crate::sync::temp_dir;

fn helm() -> String {
    std::env::var("OTC_TEST_HELM")
        .expect("OTC_TEST_HELM is not set: run the tests with scripts/test (scripts/ops install)")
}

fn chart() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../helm/obsidian-tc")
}

fn to_json(y: &Yaml) -> Value {
    match y {
        Yaml::Real(r) => r.parse::<f64>().map_or(Value::Null, |f| json!(f)),
        Yaml::Integer(i) => json!(i),
        Yaml::String(s) => json!(s),
        Yaml::Boolean(b) => json!(b),
        Yaml::Array(a) => Value::Array(a.iter().map(to_json).collect()),
        Yaml::Hash(h) => Value::Object(
            h.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Yaml::String(s) => s.clone(),
                        other => format!("{other:?}"),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
        _ => Value::Null,
    }
}

/// Every manifest `helm template` renders for these `--set`s over the default values.
fn render(sets: &[&str]) -> Vec<Value> {
    let mut command = std::process::Command::new(helm());
    command.arg("template").arg("otc").arg(chart()).arg("-f").arg(chart().join("ci/default.yaml"));
    for set in sets {
        command.arg("--set").arg(set);
    }
    let out = command.output().expect("run helm");
    assert!(out.status.success(), "helm template failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    YamlLoader::load_from_str(&text).expect("rendered YAML").iter().map(to_json).filter(|d| !d.is_null()).collect()
}

fn find<'a>(docs: &'a [Value], kind: &str, component: Option<&str>) -> &'a Value {
    docs.iter()
        .find(|d| {
            d["kind"] == kind && component.is_none_or(|c| d["metadata"]["labels"]["app.kubernetes.io/component"] == c)
        })
        .unwrap_or_else(|| panic!("no {kind} {component:?} rendered"))
}

/// A pod's one container as a local process.
#[derive(Debug, Clone)]
struct Pod {
    args: Vec<String>,
    env: Vec<(String, String)>,
}

/// The container of a workload, with Secret references filled from `secret`, ConfigMap
/// volumes written under `root` and their mount paths rewritten to there.
fn pod_of(docs: &[Value], workload: &Value, secret: &[(String, String)], root: &Path) -> Pod {
    let spec = &workload["spec"]["template"]["spec"];
    let container = &spec["containers"][0];
    let command: Vec<String> = container["command"]
        .as_array()
        .expect("an explicit command")
        .iter()
        .map(|v| v.as_str().unwrap().into())
        .collect();
    assert_eq!(command, ["/usr/local/bin/obsidian-tc"], "the image's one binary");
    // Mounted ConfigMaps become folders under `root`.
    let mut mounts: Vec<(String, PathBuf)> = Vec::new();
    for mount in container["volumeMounts"].as_array().into_iter().flatten() {
        let name = mount["name"].as_str().unwrap();
        let volume = spec["volumes"].as_array().unwrap().iter().find(|v| v["name"] == name).unwrap();
        let Some(map_name) = volume["configMap"]["name"].as_str() else { continue };
        let map = docs.iter().find(|d| d["kind"] == "ConfigMap" && d["metadata"]["name"] == map_name).unwrap();
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for (file, text) in map["data"].as_object().unwrap() {
            std::fs::write(dir.join(file), text.as_str().unwrap()).unwrap();
        }
        mounts.push((mount["mountPath"].as_str().unwrap().to_string(), dir));
    }
    let local = |value: &str| {
        mounts.iter().fold(value.to_string(), |v, (mount, dir)| v.replace(mount.as_str(), dir.to_str().unwrap()))
    };
    let mut env: Vec<(String, String)> = Vec::new();
    for from in container["envFrom"].as_array().into_iter().flatten() {
        assert!(from["secretRef"].is_object(), "envFrom is Secrets only: {from}");
        env.extend(secret.iter().cloned());
    }
    for var in container["env"].as_array().into_iter().flatten() {
        let name = var["name"].as_str().unwrap().to_string();
        let value = if let Some(v) = var["value"].as_str() {
            local(v)
        } else if let Some(key) = var["valueFrom"]["secretKeyRef"]["key"].as_str() {
            let found = secret.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
            match found {
                Some(v) => v,
                None if var["valueFrom"]["secretKeyRef"]["optional"] == true => continue,
                None => panic!("the simulated Secret has no key {key} for {name}"),
            }
        } else if var["valueFrom"]["fieldRef"].is_object() {
            format!("pod-{}", uuid::Uuid::new_v4().simple())
        } else if let Some(resource) = var["valueFrom"]["resourceFieldRef"]["resource"].as_str() {
            // As the kubelet fills it: the container's own quantity, in bytes.
            let (kind, field) = resource.split_once('.').unwrap();
            let quantity = container["resources"][kind][field].as_str().unwrap();
            let (number, unit) =
                quantity.split_at(quantity.find(|c: char| c.is_alphabetic()).unwrap_or(quantity.len()));
            let scale: u64 = match unit {
                "" => 1,
                "Ki" => 1 << 10,
                "Mi" => 1 << 20,
                "Gi" => 1 << 30,
                other => panic!("a quantity unit this simulation cannot read: {other}"),
            };
            (number.parse::<u64>().unwrap() * scale).to_string()
        } else {
            panic!("an env var this simulation cannot fill: {var}");
        };
        env.push((name, value));
    }
    let args = container["args"].as_array().unwrap().iter().map(|v| local(v.as_str().unwrap())).collect();
    Pod { args, env }
}

impl Pod {
    fn start(&self, listens: bool) -> Child {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        Child::start(self.env.clone(), &args, listens)
    }
}

fn pid_of(child: &Child) -> String {
    child.child.id().to_string()
}

#[tokio::test]
async fn the_rendered_release_runs_as_two_gateways_and_two_workers_behind_a_proxy() {
    let iso = Isolation::new().await;
    let lease_secs = 3u64;
    let docs = render(&[
        // Loopback ports: two pods of a Deployment share this machine's addresses.
        "config.server.listen=127.0.0.1:0",
        "config.server.admin_listen=127.0.0.1:0",
        "config.telemetry.log_format=text",
        &format!("config.worker.lease_ttl_secs={lease_secs}"),
        // Tasks: every index_vault call answers with a handle; a rebuild goes two notes a batch.
        "config.tools.task_budget_ms=0",
        "config.worker.index_rebuild_batch=2",
        // One small budget to share: delete calls, 6 in a burst. Room for the writes and reads.
        "config.rate_limits.tiers.delete.per_minute=6",
        "config.rate_limits.tiers.delete.burst=6",
        "config.rate_limits.tiers.write.per_minute=100000",
        "config.rate_limits.tiers.write.burst=100000",
        "config.rate_limits.tiers.read.per_minute=100000",
        "config.rate_limits.tiers.read.burst=100000",
    ]);
    // The Secret the release expects: the connection settings of this test's slices (the
    // simulated cluster's Postgres, Redis and bucket). Rate tiers and the listen address come
    // from the chart, not from here.
    let secret: Vec<(String, String)> = iso
        .env()
        .into_iter()
        .filter(|(k, _)| !k.starts_with("OTC__RATE_LIMITS__") && k != "OTC__SERVER__LISTEN")
        .collect();
    let root = temp_dir("rollout");

    // The pre-install hook first.
    let job = find(&docs, "Job", None);
    assert_eq!(job["metadata"]["annotations"]["helm.sh/hook"].as_str().map(|h| h.contains("pre-install")), Some(true));
    let migrate = pod_of(&docs, job, &secret, &root.join("job"));
    let args: Vec<&str> = migrate.args.iter().map(String::as_str).collect();
    let out = cli_with_env(migrate.env.clone(), &args);
    assert!(out.status.success(), "the migration Job failed: {}{}", stdout(&out), stderr(&out));

    let gateway = pod_of(&docs, find(&docs, "Deployment", Some("gateway")), &secret, &root.join("gateway"));
    let worker = pod_of(&docs, find(&docs, "Deployment", Some("worker")), &secret, &root.join("worker"));
    assert_eq!(gateway.args, ["serve"]);
    assert_eq!(worker.args, ["worker"]);
    let mut gateways = [gateway.start(true), gateway.start(true)];
    let mut workers = [worker.start(false), worker.start(false)];
    for pod in gateways.iter().chain(&workers) {
        let ready = reqwest::get(pod.admin_url("/readyz")).await.unwrap();
        assert!(ready.status().is_success(), "{}", pod.log_text());
    }
    let upstreams = gateways.iter().map(|g| g.addr.unwrap()).collect();
    let proxy = otc_loadtests::proxy::Proxy::start("127.0.0.1:0".parse().unwrap(), upstreams).await.unwrap();
    let lb = format!("http://{}", proxy.addr);
    let (a, b) = (gateways[0].url(""), gateways[1].url(""));

    let store = iso.store();
    let tenant = Tenant::create(&store, "acme").await;
    let (token, _) = tenant.token(&store, "*", false, None).await;
    let http = reqwest::Client::new();
    let ok = |v: &Value| v["result"]["isError"] == false;

    // A write on one gateway is read on the other at once; through the proxy, each call goes
    // to the next gateway.
    let wrote =
        call_at(&http, &a, &token, "write_note", json!({"vault": "Notes", "path": "x.md", "content": "from a"})).await;
    assert!(ok(&wrote), "{wrote}");
    let read = call_at(&http, &b, &token, "read_note", json!({"vault": "Notes", "path": "x.md"})).await;
    assert_eq!(read["result"]["structuredContent"]["content"], "from a", "{read}");
    for i in 0..6 {
        let (path, content) = (format!("x{i}.md"), format!("version {i}"));
        let wrote =
            call_at(&http, &lb, &token, "write_note", json!({"vault": "Notes", "path": path, "content": content}))
                .await;
        assert!(ok(&wrote), "{wrote}");
        let read = call_at(&http, &lb, &token, "read_note", json!({"vault": "Notes", "path": path})).await;
        assert_eq!(read["result"]["structuredContent"]["content"], content.as_str(), "{read}");
    }
    let answered = proxy.answered();
    assert!(answered.iter().all(|n| *n >= 6), "both gateways answered: {answered:?}");

    // One budget across gateways: 6 delete calls in a burst, wherever they land.
    let mut allowed = 0;
    for _ in 0..14 {
        let out =
            call_at(&http, &lb, &token, "delete_note", json!({"vault": "Notes", "path": "nothing-here.md"})).await;
        let code = error_of(&out["result"])["code"].as_str().unwrap().to_string();
        if code != "throttled" {
            allowed += 1;
        }
    }
    assert!((6..=7).contains(&allowed), "{allowed} delete calls passed a shared burst of 6");

    // A task started through one gateway is read and cancelled through the other.
    for i in 0..120 {
        let note = json!({"vault": "Notes", "path": format!("bulk/n{i}.md"), "content": format!("# {i}\n[[n{}]]", (i + 1) % 120)});
        let wrote = call_at(&http, &lb, &token, "write_note", note).await;
        assert!(ok(&wrote), "{wrote}");
    }
    let handle = call_at(&http, &a, &token, "index_vault", json!({"vault": "Notes"})).await;
    let task_id =
        handle["result"]["structuredContent"]["task_id"].as_str().unwrap_or_else(|| panic!("{handle}")).to_string();
    let status = call_at(&http, &b, &token, "get_task_status", json!({"task_id": task_id})).await;
    assert_eq!(status["result"]["structuredContent"]["tool"], "index_vault", "{status}");
    let cancelled = call_at(&http, &b, &token, "cancel_task", json!({"task_id": task_id})).await;
    assert!(ok(&cancelled), "{cancelled}");
    let end = poll_task(&http, &a, &token, &task_id).await;
    assert_eq!(end["status"], "cancelled", "{end}");

    // Leadership: kill the lease holder; the other worker takes the lease within a period.
    let kv = otc_kv::Kv::new(
        &crate::harness::service_env().into_iter().find(|(k, _)| k == "OTC__REDIS__URL").unwrap().1,
        &iso.redis_prefix,
        Duration::from_secs(5),
    )
    .unwrap();
    let holder = poll_holder(&kv, |_| true).await;
    let leader = workers.iter().position(|w| holder.starts_with(&format!("{}:", pid_of(w)))).expect("a worker leads");
    let left = kv.lease_remaining(otc_worker::SWEEP_LEASE).await.unwrap().expect("a live lease");
    let killed_at = Instant::now();
    workers[leader].signal("KILL");
    let survivor = pid_of(&workers[1 - leader]);
    let next = poll_holder(&kv, |h| h.starts_with(&format!("{survivor}:"))).await;
    let handover = killed_at.elapsed();
    eprintln!("rollout: leadership moved from {holder} to {next} in {} ms", handover.as_millis());
    // The lease lapses when its time is up (at most one period after the kill), and the
    // standby asks every tenth of a period; two seconds of slack for a loaded test machine.
    assert!(left <= Duration::from_secs(lease_secs));
    let limit = left + Duration::from_millis(lease_secs * 100) + Duration::from_secs(2);
    assert!(handover <= limit, "leadership took {handover:?} to move (limit {limit:?})");

    // Kill a gateway mid-traffic: every acknowledged write is there afterwards, and the other
    // gateway keeps serving (the proxy leaves the dead one out).
    let acknowledged = Arc::new(std::sync::Mutex::new(Vec::<(String, String)>::new()));
    let failed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let mut writers = Vec::new();
    for w in 0..6 {
        let (http, lb, token, acknowledged, failed) =
            (http.clone(), lb.clone(), token.clone(), acknowledged.clone(), failed.clone());
        writers.push(tokio::spawn(async move {
            let mut i = 0;
            while started.elapsed() < Duration::from_secs(4) {
                let (path, content) = (format!("storm/w{w}-{i}.md"), format!("writer {w} note {i}"));
                let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                  "params": {"name": "write_note", "arguments": {"vault": "Notes", "path": path, "content": content}}});
                let answer = http
                    .post(format!("{lb}/mcp"))
                    .bearer_auth(&token)
                    .header("accept", "application/json, text/event-stream")
                    .json(&body)
                    .send()
                    .await;
                match answer {
                    Ok(r) if r.status().is_success() => {
                        let v: Value = r.json().await.unwrap_or(Value::Null);
                        if v["result"]["isError"] == false {
                            acknowledged.lock().unwrap().push((path, content));
                        } else {
                            failed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        }
                    }
                    _ => {
                        failed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                }
                i += 1;
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    gateways[0].signal("KILL");
    let acknowledged_at_kill = acknowledged.lock().unwrap().len();
    for writer in writers {
        writer.await.unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    let failed = failed.load(std::sync::atomic::Ordering::SeqCst);
    eprintln!(
        "rollout: {} writes acknowledged ({} after the kill), {failed} failed while a gateway was killed",
        acknowledged.len(),
        acknowledged.len() - acknowledged_at_kill
    );
    assert!(acknowledged.len() > acknowledged_at_kill, "the surviving gateway kept acknowledging writes");
    for (path, content) in &acknowledged {
        let read = call_at(&http, &b, &token, "read_note", json!({"vault": "Notes", "path": path})).await;
        assert_eq!(
            read["result"]["structuredContent"]["content"],
            content.as_str(),
            "acknowledged {path} lost: {read}"
        );
    }

    // The rest stop cleanly.
    for pod in gateways.iter_mut().skip(1).chain(workers.iter_mut().filter(|w| pid_of(w) == survivor)) {
        pod.signal("TERM");
        assert!(pod.wait(Duration::from_secs(30)).success(), "{}", pod.log_text());
    }
    let _ = std::fs::remove_dir_all(&root);
}

async fn poll_task(http: &reqwest::Client, base: &str, token: &str, task_id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = call_at(http, base, token, "get_task_status", json!({"task_id": task_id})).await;
        let s = status["result"]["structuredContent"].clone();
        if s["status"] != "working" {
            return s;
        }
        assert!(Instant::now() < deadline, "task still working: {s}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn poll_holder(kv: &otc_kv::Kv, wanted: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(holder) = kv.lease_holder(otc_worker::SWEEP_LEASE).await.unwrap()
            && wanted(&holder)
        {
            return holder;
        }
        assert!(Instant::now() < deadline, "no such lease holder");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The chart's PgBouncer (`pgbouncer.enabled`), run from its rendered Deployment and ConfigMap
/// with Debian's pgbouncer as the image's: the migration Job migrates through
/// `OTC__DATABASE__MIGRATE_URL` (Postgres itself), a gateway and a worker reach Postgres only
/// through PgBouncer, sixteen concurrent writers all land, and PgBouncer holds no more server
/// connections than its pool size.
#[tokio::test]
async fn the_rendered_pgbouncer_pools_the_releases_connections() {
    let iso = Isolation::new().await;
    let direct = url::Url::parse(&iso.database_url).unwrap();
    let database = direct.path().trim_start_matches('/').to_string();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let pool_size = 2;
    let docs = render(&[
        "config.server.listen=127.0.0.1:0",
        "config.server.admin_listen=127.0.0.1:0",
        "config.telemetry.log_format=text",
        "config.database.transaction_pooler=true",
        "pgbouncer.enabled=true",
        &format!("pgbouncer.port={port}"),
        &format!("pgbouncer.upstream.host={}", direct.host_str().unwrap()),
        &format!("pgbouncer.upstream.port={}", direct.port().unwrap()),
        "pgbouncer.upstream.sslmode=disable",
        "pgbouncer.authSecret.name=otc-pgbouncer",
        "pgbouncer.authSecret.key=userlist.txt",
        &format!("pgbouncer.poolSize={pool_size}"),
        "pgbouncer.reservePoolSize=0",
        // Only for this test's look at PgBouncer's own SHOW SERVERS.
        &format!("pgbouncer.extraSettings.stats_users={}", direct.username()),
    ]);
    let root = temp_dir("rollout-pgbouncer");
    let userlist = format!("\"{}\" \"{}\"\n", direct.username(), direct.password().unwrap());
    let bouncer = find(&docs, "Deployment", Some("pgbouncer"));
    let _pgbouncer =
        PgBouncerPod::start(&docs, bouncer, &[("otc-pgbouncer", "userlist.txt", &userlist)], &root.join("pgb"));

    let mut through = direct.clone();
    through.set_port(Some(port)).unwrap();
    let secret: Vec<(String, String)> = iso
        .env()
        .into_iter()
        .filter(|(k, _)| k != "OTC__SERVER__LISTEN" && k != "OTC__DATABASE__URL")
        .chain([
            ("OTC__DATABASE__URL".to_string(), through.to_string()),
            ("OTC__DATABASE__MIGRATE_URL".to_string(), direct.to_string()),
        ])
        .collect();

    let job = find(&docs, "Job", None);
    let migrate = pod_of(&docs, job, &secret, &root.join("job"));
    let args: Vec<&str> = migrate.args.iter().map(String::as_str).collect();
    let out = cli_with_env(migrate.env.clone(), &args);
    assert!(out.status.success(), "the migration Job failed: {}{}\n{}", stdout(&out), stderr(&out), _pgbouncer.log());

    let gateway = pod_of(&docs, find(&docs, "Deployment", Some("gateway")), &secret, &root.join("gateway")).start(true);
    let worker = pod_of(&docs, find(&docs, "Deployment", Some("worker")), &secret, &root.join("worker")).start(false);
    for pod in [&gateway, &worker] {
        let ready = reqwest::get(pod.admin_url("/readyz")).await.unwrap();
        assert!(ready.status().is_success(), "{}", pod.log_text());
    }

    let store = iso.store();
    let tenant = Tenant::create(&store, "acme").await;
    let (token, _) = tenant.token(&store, "*", false, None).await;
    let http = reqwest::Client::new();
    let base = gateway.url("");
    let writers: Vec<_> = (0..16)
        .map(|w| {
            let (http, base, token) = (http.clone(), base.clone(), token.clone());
            tokio::spawn(async move {
                for i in 0..4 {
                    let note =
                        json!({"vault": "Notes", "path": format!("w{w}/{i}.md"), "content": format!("kayak {w} {i}")});
                    let wrote = call_at(&http, &base, &token, "write_note", note).await;
                    assert_eq!(wrote["result"]["isError"], false, "{wrote}");
                }
            })
        })
        .collect();
    let mut most = 0;
    let admin = format!("postgres://{}:{}@127.0.0.1:{port}/pgbouncer", direct.username(), direct.password().unwrap());
    let mut console = <sqlx::PgConnection as sqlx::Connection>::connect(&admin).await.expect("PgBouncer's console");
    while writers.iter().any(|w| !w.is_finished()) {
        most = most.max(servers_of(&mut console, &database).await);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for w in writers {
        w.await.unwrap();
    }
    let found =
        call_at(&http, &base, &token, "search_vault", json!({"vault": "Notes", "query": "kayak", "limit": 100})).await;
    assert_eq!(found["result"]["structuredContent"]["total_count"], 64, "{found}");
    most = most.max(servers_of(&mut console, &database).await);
    eprintln!("rollout: 64 writes by 16 writers through PgBouncer, at most {most} server connections");
    assert!((1..=pool_size).contains(&most), "{most} server connections for a pool of {pool_size}");

    for mut pod in [gateway, worker] {
        pod.signal("TERM");
        assert!(pod.wait(Duration::from_secs(30)).success(), "{}", pod.log_text());
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// PgBouncer's server connections to `database` (its console's SHOW SERVERS).
async fn servers_of(console: &mut sqlx::PgConnection, database: &str) -> usize {
    use sqlx::Row;
    let rows = sqlx::raw_sql("SHOW SERVERS").fetch_all(&mut *console).await.expect("SHOW SERVERS");
    rows.iter().filter(|r| r.try_get::<String, _>("database").is_ok_and(|d| d == database)).count()
}

/// A PgBouncer pod as a local process: its container's command and args, its ConfigMap and
/// Secret volumes written under a folder and their mount paths rewritten to there. Killed on
/// drop.
struct PgBouncerPod(std::process::Child, PathBuf);

impl PgBouncerPod {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.1).unwrap_or_default()
    }

    fn start(docs: &[Value], deployment: &Value, secrets: &[(&str, &str, &str)], root: &Path) -> Self {
        let spec = &deployment["spec"]["template"]["spec"];
        let container = &spec["containers"][0];
        let mut mounts: Vec<(String, PathBuf)> = Vec::new();
        for mount in container["volumeMounts"].as_array().unwrap() {
            let name = mount["name"].as_str().unwrap();
            let volume = spec["volumes"].as_array().unwrap().iter().find(|v| v["name"] == name).unwrap();
            if volume["emptyDir"].is_object() {
                continue; // a scratch folder nothing names
            }
            let dir = root.join(name);
            std::fs::create_dir_all(&dir).unwrap();
            if let Some(map) = volume["configMap"]["name"].as_str() {
                let map = docs.iter().find(|d| d["kind"] == "ConfigMap" && d["metadata"]["name"] == map).unwrap();
                for (file, text) in map["data"].as_object().unwrap() {
                    std::fs::write(dir.join(file), text.as_str().unwrap()).unwrap();
                }
            } else if let Some(secret) = volume["secret"]["secretName"].as_str() {
                for item in volume["secret"]["items"].as_array().unwrap() {
                    let key = item["key"].as_str().unwrap();
                    let (_, _, text) = secrets
                        .iter()
                        .find(|(s, k, _)| *s == secret && *k == key)
                        .unwrap_or_else(|| panic!("the simulated Secret {secret} has no key {key}"));
                    std::fs::write(dir.join(item["path"].as_str().unwrap()), text).unwrap();
                }
            }
            mounts.push((mount["mountPath"].as_str().unwrap().to_string(), dir));
        }
        // The longest first: /etc/pgbouncer is a prefix of /etc/pgbouncer-auth.
        mounts.sort_by_key(|(mount, _)| std::cmp::Reverse(mount.len()));
        let local = |value: &str| {
            mounts.iter().fold(value.to_string(), |v, (mount, dir)| v.replace(mount.as_str(), dir.to_str().unwrap()))
        };
        // The files name each other by their mount paths (auth_file in pgbouncer.ini).
        for (_, dir) in &mounts {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                let text = std::fs::read_to_string(&path).unwrap();
                std::fs::write(&path, local(&text)).unwrap();
            }
        }
        let command: Vec<String> =
            container["command"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
        let args: Vec<String> =
            container["args"].as_array().unwrap().iter().map(|v| local(v.as_str().unwrap())).collect();
        assert_eq!(command, ["pgbouncer"], "the chart's default command");
        // PgBouncer refuses to run as root: as root, run it as the user scripts/services runs
        // Postgres and its own PgBouncer as.
        let root_user = std::process::Command::new("id").arg("-u").output().unwrap().stdout == b"0\n";
        let mut cmd = if root_user {
            let mut c = std::process::Command::new("setpriv");
            c.args(["--reuid=otc-pg", "--regid=otc-pg", "--clear-groups", "--"]).args(&command);
            c
        } else {
            std::process::Command::new(&command[0])
        };
        let log = std::fs::File::create(root.join("pgbouncer.log")).unwrap();
        let child = cmd
            .args(&args)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("run pgbouncer (scripts/services installs Debian's)");
        let port = container["ports"][0]["containerPort"].as_u64().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port as u16)).is_err() {
            assert!(
                Instant::now() < deadline,
                "PgBouncer did not listen: {}",
                std::fs::read_to_string(root.join("pgbouncer.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self(child, root.join("pgbouncer.log"))
    }
}

impl Drop for PgBouncerPod {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
