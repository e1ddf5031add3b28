//! The test harness: each test gets a freshly migrated database, its own Redis key prefix and
//! object-store prefix, and the app on port 0 — in-process ([`TestApp`]) or as a child process
//! of the real binary ([`Cli`], [`Child`]).
//!
//! The services come from `scripts/services up`; the tests read the same `OTC__` variables
//! `scripts/services env` prints (`scripts/test` sets them up).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use obsidian_tc::app::{self, Deps, Running};
use otc_config::{Config, Sources};
use otc_store::{Action, Change, Expect, NewToken, PrincipalKind, Provenance, Store};
use uuid::Uuid;

/// The service variables from `scripts/services env`.
pub fn service_env() -> Vec<(String, String)> {
    let vars: Vec<(String, String)> = std::env::vars().filter(|(k, _)| k.starts_with("OTC__")).collect();
    assert!(
        vars.iter().any(|(k, _)| k == "OTC__DATABASE__URL"),
        "OTC__DATABASE__URL is not set: run the tests with scripts/test (it starts the services and sets the environment)"
    );
    vars
}

/// Per-test isolation: a database, a Redis key prefix, an object-store prefix.
#[derive(Clone, Debug)]
pub struct Isolation {
    pub database_url: String,
    pub redis_prefix: String,
    pub object_prefix: String,
}

impl Isolation {
    pub async fn new() -> Self {
        let admin = service_env().into_iter().find(|(k, _)| k == "OTC__DATABASE__URL").unwrap().1;
        let database_url = otc_store::testing::fresh_database(&admin).await.expect("fresh test database");
        let id = Uuid::new_v4().simple().to_string();
        // A short object prefix: the test S3 server (s3s-fs) names a multipart upload's metadata
        // file after the whole key, base64-encoded, and a blob's key is already 104 characters,
        // so a long prefix passes the file system's 255-byte name limit.
        Self { database_url, redis_prefix: format!("test:{id}:"), object_prefix: format!("t{}", &id[..12]) }
    }

    /// The environment a child process gets: the services, pointed at this test's slices.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = service_env()
            .into_iter()
            .filter(|(k, _)| {
                k != "OTC__DATABASE__URL" && k != "OTC__REDIS__KEY_PREFIX" && k != "OTC__OBJECT_STORE__PREFIX"
            })
            .collect();
        env.push(("OTC__DATABASE__URL".into(), self.database_url.clone()));
        env.push(("OTC__REDIS__KEY_PREFIX".into(), self.redis_prefix.clone()));
        env.push(("OTC__OBJECT_STORE__PREFIX".into(), self.object_prefix.clone()));
        env.push(("OTC__SERVER__LISTEN".into(), "127.0.0.1:0".into()));
        // Tests read what they wrote: on a busy test machine inline indexing may take longer
        // than the production deadline (tests of the deadline set their own).
        env.push(("OTC__INDEX__INLINE_DEADLINE_MS".into(), "60000".into()));
        // Every call still spends from a budget in Redis, but one no test exhausts by accident
        // (the rate-limit tests set their own).
        for class in otc_config::RateTiers::CLASSES {
            let class = class.to_ascii_uppercase();
            env.push((format!("OTC__RATE_LIMITS__TIERS__{class}__PER_MINUTE"), "1000000".into()));
            env.push((format!("OTC__RATE_LIMITS__TIERS__{class}__BURST"), "1000000".into()));
        }
        env
    }

    pub fn config(&self) -> Config {
        Sources::new(None, self.env()).load().expect("test configuration").config
    }

    pub fn store(&self) -> Store {
        otc_store::testing::store(&self.database_url).expect("store")
    }
}

/// The gateway running in this process on port 0.
pub struct TestApp {
    pub iso: Isolation,
    pub addr: SocketAddr,
    pub store: Store,
    pub http: reqwest::Client,
    /// The clients the gateway was built with (store, Redis, object store, indexer).
    pub deps: Deps,
    running: Option<Running>,
}

impl TestApp {
    pub async fn spawn() -> Self {
        Self::spawn_with(|_| {}).await
    }

    /// Spawns with the configuration adjusted by `tweak` (e.g. a dependency pointed elsewhere).
    pub async fn spawn_with(tweak: impl FnOnce(&mut Config)) -> Self {
        Self::spawn_with_tools(tweak, Vec::new()).await
    }

    /// Spawns with `extra` tools registered beside the real ones.
    pub async fn spawn_with_tools(tweak: impl FnOnce(&mut Config), extra: Vec<otc_kernel::ToolEntry>) -> Self {
        let iso = Isolation::new().await;
        let mut config = iso.config();
        tweak(&mut config);
        let deps = Deps::new(&config).expect("deps");
        let mut tools = otc_tools::toolset::all();
        tools.extend(extra);
        let dispatcher = app::dispatcher_with(&config, &deps, tools).expect("tools register");
        let running =
            app::start_gateway_with(&config, &deps, dispatcher, std::future::pending()).await.expect("gateway starts");
        Self {
            addr: running.addr,
            store: iso.store(),
            iso,
            http: reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap(),
            deps,
            running: Some(running),
        }
    }

    /// Writes (`Some(text)`) and deletes (`None`) in one commit of the vault named `vault` in
    /// `token`'s tenant, straight through the store (the one commit path, indexed before it
    /// returns) rather than the API: content an operator put there, which the token's own
    /// requests may not be allowed to write (a path its ACL hides, `.trash/`).
    pub async fn seed(&self, token: &str, vault: &str, changes: &[(&str, Option<&str>)]) {
        self.seed_at(token, vault, changes, chrono::Utc::now()).await
    }

    /// [`TestApp::seed`] with every written file's modification time set to `mtime`.
    pub async fn seed_at(
        &self,
        token: &str,
        vault: &str,
        changes: &[(&str, Option<&str>)],
        mtime: chrono::DateTime<chrono::Utc>,
    ) {
        let tenant = token.parse::<otc_auth::PresentedToken>().expect("a token").tenant;
        let mut tx = self.deps.store.begin(tenant).await.unwrap();
        let vault = tx.vault_by_name(vault).await.unwrap().expect("the vault");
        let mut list = Vec::new();
        for (path, content) in changes {
            let action = match content {
                Some(text) => {
                    let hash = otc_blobs::Blobs::hash_of(text.as_bytes());
                    let size = text.len() as i64;
                    tx.record_blob(&hash, size).await.unwrap();
                    self.deps.blobs.put_blob(tenant, &hash, text.to_string().into_bytes().into()).await.unwrap();
                    Action::Put { hash, size, mtime }
                }
                None => Action::Delete,
            };
            list.push(Change { path: path.to_string(), expect: Expect::Any, action });
        }
        let who = Provenance { tool: Some("seed".into()), ..Provenance::default() };
        let done = otc_indexer::commit::commit_and_announce(
            &self.deps.indexer,
            &self.deps.kv,
            tx,
            vault.id,
            &list,
            &who,
            None,
        )
        .await
        .unwrap()
        .expect("a seed expects nothing");
        assert!(done.indexed, "the seed was indexed");
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Another gateway on the same database, Redis and object store (a second pod), with
    /// `tweak` applied to its configuration.
    pub async fn another_gateway(&self, tweak: impl FnOnce(&mut Config)) -> Running {
        let mut config = self.iso.config();
        tweak(&mut config);
        let deps = Deps::new(&config).expect("deps");
        app::start_gateway(&config, &deps, std::future::pending()).await.expect("gateway starts")
    }

    pub async fn stop(mut self) {
        if let Some(running) = self.running.take() {
            running.stop().await.expect("clean stop");
        }
    }
}

/// A tenant with one vault and a helper to mint tokens in it.
pub struct Tenant {
    pub id: Uuid,
    pub slug: String,
    pub vault_id: Uuid,
}

impl Tenant {
    pub async fn create(store: &Store, slug: &str) -> Self {
        let tenant = store.create_tenant(slug, &format!("{slug} inc.")).await.expect("tenant");
        let mut tx = store.begin(tenant.id).await.unwrap();
        let vault = tx.create_vault("Notes").await.unwrap();
        tx.commit().await.unwrap();
        Self { id: tenant.id, slug: slug.to_string(), vault_id: vault.id }
    }

    /// A live token with these scopes, optionally bound to the vault; returns (token, id).
    pub async fn token(
        &self,
        store: &Store,
        scopes: &str,
        bound: bool,
        expires_at: Option<chrono::DateTime<chrono::Utc>>,
    ) -> (String, Uuid) {
        self.token_of(store, "alice", scopes, bound, expires_at).await
    }

    /// The caller `token` speaks for, as the gateway authenticates it.
    pub async fn caller(&self, store: &Store, token: &str) -> otc_store::Authenticated {
        let mut tx = store.begin(self.id).await.unwrap();
        let presented: otc_auth::PresentedToken = token.parse().unwrap();
        let caller = tx.authenticate(&presented.hash).await.unwrap().unwrap();
        tx.commit().await.unwrap();
        caller
    }

    /// A live token with these scopes for the user `principal` (alice is [`Tenant::token`]'s).
    pub async fn token_as(&self, store: &Store, principal: &str, scopes: &str) -> String {
        self.token_of(store, principal, scopes, false, None).await.0
    }

    async fn token_of(
        &self,
        store: &Store,
        principal: &str,
        scopes: &str,
        bound: bool,
        expires_at: Option<chrono::DateTime<chrono::Utc>>,
    ) -> (String, Uuid) {
        let mut tx = store.begin(self.id).await.unwrap();
        let principal = tx.ensure_principal(PrincipalKind::User, principal).await.unwrap();
        let issued = tx
            .issue_token(NewToken {
                principal_id: principal.id,
                name: "test".into(),
                scopes: otc_auth::parse_scopes(scopes).unwrap(),
                vault_id: bound.then_some(self.vault_id),
                expires_at,
            })
            .await
            .unwrap();
        tx.commit().await.unwrap();
        (issued.plaintext, issued.id)
    }
}

/// Runs the real binary with this test's environment.
pub fn cli(iso: &Isolation, args: &[&str]) -> Output {
    cli_with_env(iso.env(), args)
}

pub fn cli_with_env(env: Vec<(String, String)>, args: &[&str]) -> Output {
    command(env!("CARGO_BIN_EXE_obsidian-tc"), env, args).output().expect("run obsidian-tc")
}

/// `bin args` with exactly `env` (and PATH), in the temp folder, with no standard input.
fn command(bin: &str, env: Vec<(String, String)>, args: &[&str]) -> Command {
    let mut command = Command::new(bin);
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env)
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::null());
    command
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A long-running child process of the binary (serve, worker, dev), killed on drop.
pub struct Child {
    pub child: std::process::Child,
    pub addr: Option<SocketAddr>,
    /// The admin listener (`server.admin_listen`), once it logged its address.
    pub admin: std::sync::Arc<std::sync::Mutex<Option<SocketAddr>>>,
    /// Every stderr line so far (the log).
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Child {
    /// Starts `args` and, when `expect_listen`, waits for the "listening on" log line.
    pub fn start(env: Vec<(String, String)>, args: &[&str], expect_listen: bool) -> Self {
        Self::spawn(env!("CARGO_BIN_EXE_obsidian-tc"), env, args, expect_listen)
    }

    /// Starts another binary of the package that logs "listening on", and waits for it.
    pub fn start_bin(bin: &str, env: Vec<(String, String)>, args: &[&str]) -> Self {
        Self::spawn(bin, env, args, true)
    }

    fn spawn(bin: &str, env: Vec<(String, String)>, args: &[&str], expect_listen: bool) -> Self {
        let mut child =
            command(bin, env, args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn obsidian-tc");
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        let admin = std::sync::Arc::new(std::sync::Mutex::new(None));
        let admin_sink = admin.clone();
        std::thread::spawn(move || {
            // Text or JSON log lines: the address is what follows the marker, up to the first
            // character an address cannot have.
            let after = |line: &str, marker: &str| {
                line.find(marker).map(|at| {
                    let rest = &line[at + marker.len()..];
                    let end =
                        rest.find(|c: char| !(c.is_ascii_alphanumeric() || ".:[]".contains(c))).unwrap_or(rest.len());
                    rest[..end].to_string()
                })
            };
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(addr) = after(&line, "listening on http://") {
                    let _ = tx.send(addr);
                }
                if let Some(addr) = after(&line, "admin listener (health, metrics) on http://") {
                    *admin_sink.lock().unwrap() = addr.parse().ok();
                }
                sink.lock().unwrap().push(line);
            }
        });
        let addr = expect_listen.then(|| {
            let addr = rx
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no 'listening on' line; log so far:\n{}", log.lock().unwrap().join("\n")));
            addr.parse().expect("address in log")
        });
        Self { child, addr, admin, log }
    }

    /// The admin listener's URL for `path`, waiting up to 30 s for its address in the log.
    pub fn admin_url(&self, path: &str) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(addr) = *self.admin.lock().unwrap() {
                return format!("http://{addr}{path}");
            }
            assert!(std::time::Instant::now() < deadline, "no admin listener in the log:\n{}", self.log_text());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr.expect("a listening child"))
    }

    pub fn signal(&self, name: &str) {
        let status = Command::new("kill").arg(format!("-{name}")).arg(self.child.id().to_string()).status().unwrap();
        assert!(status.success());
    }

    /// Waits for exit, up to `limit`.
    pub fn wait(&mut self, limit: Duration) -> std::process::ExitStatus {
        let deadline = std::time::Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "process still running after {limit:?}; log:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port on loopback with nothing listening: a dependency that is down.
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A TCP relay on loopback in front of a real dependency (Postgres, the S3 server): cut, it
/// closes every connection it carries and stops listening, so new ones are refused, as a
/// restart does to the app; mended, it listens on the same port and forwards again.
pub struct Relay {
    pub addr: SocketAddr,
    upstream: String,
    carried: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
    accept: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Relay {
    /// A relay to `upstream` (host:port).
    pub async fn start(upstream: String) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let relay = Self {
            addr: listener.local_addr().unwrap(),
            upstream,
            carried: Default::default(),
            accept: Default::default(),
        };
        relay.listen(listener);
        relay
    }

    fn listen(&self, listener: tokio::net::TcpListener) {
        let (upstream, carried) = (self.upstream.clone(), self.carried.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let upstream = upstream.clone();
                let task = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(&upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                let mut carried = carried.lock().unwrap();
                carried.retain(|t| !t.is_finished());
                carried.push(task.abort_handle());
            }
        });
        *self.accept.lock().unwrap() = Some(accept);
    }

    /// `url` with its host and port replaced by the relay's.
    pub fn in_front_of(&self, url: &str) -> String {
        let mut url = url::Url::parse(url).unwrap();
        url.set_host(Some("127.0.0.1")).unwrap();
        url.set_port(Some(self.addr.port())).unwrap();
        url.to_string()
    }

    /// The dependency goes away: every connection through the relay is closed and new ones
    /// are refused.
    pub fn cut(&self) {
        if let Some(accept) = self.accept.lock().unwrap().take() {
            accept.abort(); // dropping the listener with it
        }
        for task in self.carried.lock().unwrap().drain(..) {
            task.abort();
        }
    }

    /// The dependency is back, on the same port.
    pub async fn mend(&self) {
        let listener = tokio::net::TcpListener::bind(self.addr).await.unwrap();
        self.listen(listener);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.cut();
    }
}

/// The `host:port` of a service URL.
pub fn host_port(url: &str) -> String {
    let url = url::Url::parse(url).unwrap();
    format!("{}:{}", url.host_str().unwrap(), url.port_or_known_default().unwrap())
}

/// Commits a transaction of `tenant` that wrote (it sets the audit retention it read back): a
/// call's effect, as [`otc_store::CallEffects`] counts them.
pub async fn commit_a_write(store: &Store, tenant: Uuid) {
    let mut tx = store.begin(tenant).await.unwrap();
    let days = tx.audit_retention().await.unwrap();
    tx.set_audit_retention(days).await.unwrap();
    tx.commit().await.unwrap();
}

/// Where `scripts/mcp-clients` installed the real MCP clients.
/// A deployment `[[acl]]` entry that lets callers read only `read_paths` of `vault` (in the
/// tenant with slug `tenant`, or every tenant's vault of that name).
pub fn read_acl(tenant: Option<&str>, vault: &str, read_paths: &[&str]) -> otc_config::AclEntry {
    otc_config::AclEntry {
        tenant: tenant.map(str::to_string),
        vault: vault.to_string(),
        read_paths: Some(read_paths.iter().map(|p| p.to_string()).collect()),
        write_paths: None,
        delete_paths: None,
    }
}

pub fn client_env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: run the tests with scripts/test (it installs the MCP clients and sets the environment)"
        )
    })
}

/// A transport for the Python SDK client.
pub enum Transport<'a> {
    Http {
        url: String,
        token: &'a str,
    },
    /// The binary's arguments, with `env` added to this test's environment.
    Stdio {
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
}

/// Runs `steps` through the official Python MCP SDK (tests/clients/mcp_session.py).
pub async fn python_session(transport: Transport<'_>, steps: serde_json::Value) -> serde_json::Value {
    python_session_with(transport, steps, &[]).await
}

/// [`python_session`] with `env` added to the client's environment (OTC_TEST_ELICIT,
/// OTC_TEST_MCP_MODE).
pub async fn python_session_with(
    transport: Transport<'_>,
    steps: serde_json::Value,
    env: &[(&str, &str)],
) -> serde_json::Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/mcp_session.py");
    let mut command = tokio::process::Command::new(client_env("OTC_TEST_PYTHON"));
    command.arg(script).envs(env.iter().copied());
    match transport {
        Transport::Http { url, token } => {
            command.args(["http", &url, token]);
        }
        Transport::Stdio { args, env } => {
            command.arg("stdio").arg(env!("CARGO_BIN_EXE_obsidian-tc")).args(args).envs(env);
        }
    }
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).current_dir(std::env::temp_dir());
    let mut child = command.spawn().expect("python client");
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(steps.to_string().as_bytes()).await.unwrap();
    }
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("client finished")
        .unwrap();
    assert!(
        out.status.success(),
        "python client failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("client output is JSON")
}

/// Runs the MCP Inspector CLI with `args`.
pub async fn inspector(args: &[&str]) -> Output {
    let node_bin = client_env("OTC_TEST_NODE_BIN");
    let path = format!("{node_bin}:{}", std::env::var("PATH").unwrap_or_default());
    let cli = format!("{}/mcp-inspector", client_env("OTC_TEST_NPM_BIN"));
    let run = tokio::process::Command::new(cli)
        .arg("--cli")
        .args(args)
        .env("PATH", path)
        .env("HOME", client_env("OTC_TEST_CLIENT_HOME"))
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::null())
        .output();
    tokio::time::timeout(Duration::from_secs(90), run).await.expect("inspector finished").expect("run inspector")
}

/// Copies a folder tree (tests work on copies, never on the repository's own files).
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A grant of `read:notes` on an MCP endpoint from a person a provider vouched for (`subject`),
/// made straight in the store: for tests of the rows that hang off grants.
pub async fn stored_grant(tx: &mut otc_store::TenantTx, subject: &str) -> otc_store::Grant {
    let person = tx.federated_principal(subject, &format!("{subject}@example.test"), None, None).await.unwrap();
    tx.create_grant(otc_store::NewGrant {
        principal_id: person.id,
        client_id: "client",
        client_name: None,
        scopes: &["read:notes".to_string()],
        resource: "https://x.example/mcp",
        via: "authorization_code",
    })
    .await
    .unwrap()
}
