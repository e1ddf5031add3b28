//! Loading configuration, connecting the dependencies, and running the long-lived roles.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use otc_blobs::Blobs;
use otc_config::{Config, EmbeddingProvider, Loaded, Sources};
use otc_embed::Embeddings;
use otc_gateway::auth_cache::AuthCache;
use otc_gateway::{AppState, HttpLimits};
use otc_indexer::embedding::{EmbedSettings, Embedding};
use otc_indexer::{Indexer, IndexerSettings};
use otc_kernel::{Dispatcher, Services};
use otc_kv::Kv;
use otc_store::{Store, StoreOptions};
use otc_worker::{Worker, WorkerSettings};
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Configuration that cannot be used; each line names the key and its source. Exit code 2.
#[derive(Debug)]
pub struct ConfigProblems(pub Vec<String>);

impl std::fmt::Display for ConfigProblems {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join("; "))
    }
}

impl std::error::Error for ConfigProblems {}

/// The configuration layers: the file (explicit, or ./obsidian-tc.toml when present), the
/// `OTC__` environment, and `--set KEY=VALUE` flags.
pub fn sources(file: Option<PathBuf>, set: &[String]) -> anyhow::Result<Sources> {
    let file = file.or_else(|| {
        let default = PathBuf::from("obsidian-tc.toml");
        default.exists().then_some(default)
    });
    let env = std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
    let mut sources = Sources::new(file, env);
    for pair in set {
        let (key, value) =
            pair.split_once('=').ok_or_else(|| ConfigProblems(vec![format!("--set {pair}: expected KEY=VALUE")]))?;
        let key = key.trim();
        sources = sources.flag(key, value, &format!("--set {key}"));
    }
    Ok(sources)
}

/// Loads and validates; any problem is a [`ConfigProblems`].
pub fn load(sources: &Sources) -> anyhow::Result<Loaded> {
    let loaded = sources.load().map_err(|e| ConfigProblems(vec![e.to_string()]))?;
    loaded.validate().map_err(|problems| ConfigProblems(problems.iter().map(ToString::to_string).collect()))?;
    Ok(loaded)
}

/// The three services every role talks to, and the indexer over them.
#[derive(Clone)]
pub struct Deps {
    pub store: Store,
    pub kv: Arc<Kv>,
    pub blobs: Blobs,
    pub indexer: Indexer,
    /// The configured embedding provider (none, the local model, an OpenAI-compatible API).
    pub embeddings: Arc<Embeddings>,
    /// The workers' embedding passes over the outbox's embed jobs.
    pub embedding: Embedding,
}

/// The tool dispatcher over every registered tool, for this configuration.
pub fn dispatcher(config: &Config, deps: &Deps) -> anyhow::Result<Arc<Dispatcher>> {
    dispatcher_with(config, deps, otc_tools::toolset::all())
}

/// The dispatcher over `tools` (tests add their own probes to the real set).
pub fn dispatcher_with(
    config: &Config,
    deps: &Deps,
    tools: Vec<otc_kernel::ToolEntry>,
) -> anyhow::Result<Arc<Dispatcher>> {
    let caches = config.caches.resolve();
    let services = Services {
        store: deps.store.clone(),
        kv: deps.kv.clone(),
        blobs: deps.blobs.clone(),
        indexer: deps.indexer.clone(),
        embeddings: deps.embeddings.clone(),
        acls: Arc::new(otc_kernel::reading::compile_acls(config).map_err(|e| anyhow::anyhow!("acl: {e}"))?),
        vault_cache: otc_kernel::vault_cache(caches.vaults),
        files: otc_kernel::file_cache::FileCache::new(Duration::from_millis(config.tools.file_cache_ms), caches.files),
        segments: otc_kernel::searching::SegmentCache::new(caches.segments, caches.masks),
        graphs: otc_kernel::graphing::GraphCache::new(config.tools.file_cache_ms > 0, caches.graphs),
        config: Arc::new(config.clone()),
        started: std::time::Instant::now(),
        check_timeout: Duration::from_millis(config.server.readiness_timeout_ms),
        limiter: otc_kernel::rate_limits::RateLimiter::new(deps.kv.clone(), config.rate_limits.clone()),
        fair_share: otc_kernel::fair_share::FairShare::new(config.fair_share.clone()),
        confirmation_keys: otc_kernel::confirmation::Keys::new(caches.vaults),
        audit: otc_kernel::audit_writer::Audit::new(deps.store.clone(), config.audit.enabled),
        features: otc_tools::features(config)?,
        sealer: config
            .oauth
            .secret_key
            .as_ref()
            .map(|key| otc_auth::seal::Sealer::from_base64(key.expose()))
            .transpose()
            .map_err(|e| ConfigProblems(vec![format!("oauth.secret_key: {e}")]))?
            .map(Arc::new),
        chat: otc_kernel::chat::client(config),
        read_only: otc_kernel::read_only::Holds::new(&config.read_only, caches.vaults),
    };
    let dispatcher =
        Dispatcher::new(services, otc_tools::toolset::with_catalogue(tools)).context("registering tools")?;
    Ok(Arc::new(dispatcher))
}

/// The authorization server, when `oauth.secret_key` is set (None otherwise: the gateway then
/// accepts API tokens only and serves no OAuth endpoints but the resource metadata).
pub fn identity(config: &Config, store: &Store, kv: &Arc<Kv>) -> anyhow::Result<Option<Arc<otc_identity::Identity>>> {
    let Some(key) = &config.oauth.secret_key else { return Ok(None) };
    let sealer = otc_auth::seal::Sealer::from_base64(key.expose())
        .map_err(|e| ConfigProblems(vec![format!("oauth.secret_key: {e}")]))?;
    let days = |d: u64| Duration::from_secs(d.max(1) * 24 * 3600);
    let settings = otc_identity::IdentitySettings {
        access_token_ttl: Duration::from_secs(config.oauth.access_token_ttl_secs.clamp(60, 24 * 3600)),
        refresh_token_ttl: days(config.oauth.refresh_token_ttl_days),
        key_rotation: days(config.oauth.key_rotation_days),
        private_hosts: config.oauth.private_hosts.clone(),
        max_grant_age: (config.oauth.max_grant_age_days > 0).then(|| days(config.oauth.max_grant_age_days)),
        redirect_schemes: config.oauth.redirect_schemes.iter().map(|s| s.to_ascii_lowercase()).collect(),
        ..Default::default()
    };
    Ok(Some(Arc::new(otc_identity::Identity::new(store.clone(), kv.clone(), sealer, settings))))
}

impl Deps {
    /// Builds the clients. Nothing is contacted yet, so a role can start while a dependency is
    /// down and report it (`/readyz`, `doctor`).
    pub fn new(config: &Config) -> anyhow::Result<Self> {
        let store = connect_store(config)?;
        let kv = connect_kv(config)?;
        let blobs = Blobs::from_config(&config.object_store, Duration::from_secs(5))
            .context("object store")?
            .with_cache_bytes(config.caches.resolve().blobs);
        let indexer = Indexer::new(store.clone(), blobs.clone(), indexer_settings(config));
        let embeddings = embeddings(config)?;
        let embedding = Embedding::new(store.clone(), blobs.clone(), embeddings.clone(), embed_settings(config));
        Ok(Self { store, kv: Arc::new(kv), blobs, indexer, embeddings, embedding })
    }
}

/// Resolves on SIGTERM or Ctrl-C (SIGINT).
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    // The handlers are installed now, not when the future is first polled: a role that is
    // busy starting (taking a lease, binding) must not die of a SIGTERM's default action.
    #[cfg(unix)]
    let (mut term, mut interrupt) = {
        use tokio::signal::unix::{SignalKind, signal};
        (signal(SignalKind::terminate()).ok(), signal(SignalKind::interrupt()).ok())
    };
    async move {
        #[cfg(unix)]
        {
            let term = async {
                match term.as_mut() {
                    Some(signal) => signal.recv().await,
                    None => std::future::pending().await,
                }
            };
            let interrupt = async {
                match interrupt.as_mut() {
                    Some(signal) => signal.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = interrupt => tracing::info!("received Ctrl-C"),
                _ = term => tracing::info!("received SIGTERM"),
            }
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_ok() {
                tracing::info!("received Ctrl-C");
            } else {
                std::future::pending::<()>().await;
            }
        }
    }
}

/// A gateway (or admin listener) running in this process.
pub struct Running {
    pub addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    /// This gateway's pool and caches in the metrics, while it runs.
    _probe: Option<otc_telemetry::metrics::Probe>,
}

/// The Postgres pool's gauges in a metrics sample.
pub fn sample_pool(store: &Store, sample: &mut otc_telemetry::metrics::Sample) {
    let (open, idle, max) = store.pool_stats();
    let idle = idle as i64;
    sample.pool = Some((idle, (i64::from(open) - idle).max(0), i64::from(max)));
}

/// The operators' listener (`server.admin_listen`: `/healthz`, `/readyz`, `/metrics`), when
/// configured.
pub async fn start_admin(
    config: &Config,
    deps: &Deps,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<Option<Running>> {
    let Some(listen) = config.server.admin_listen else { return Ok(None) };
    let listener =
        TcpListener::bind(listen).await.with_context(|| format!("cannot listen on {listen} (server.admin_listen)"))?;
    let addr = listener.local_addr()?;
    let router = otc_gateway::admin_router(otc_gateway::AdminState {
        store: deps.store.clone(),
        kv: deps.kv.clone(),
        blobs: deps.blobs.clone(),
        check_timeout: Duration::from_millis(config.server.readiness_timeout_ms),
    });
    let (stop, until) = stoppable(shutdown);
    // Probes and scrapes are short: a second is grace enough.
    let task = tokio::spawn(otc_gateway::serve(
        listener,
        router,
        until,
        Duration::from_secs(1),
        otc_gateway::ConnectionLimits::from_config(&config.server),
    ));
    tracing::info!(%addr, "admin listener (health, metrics) on http://{addr}");
    Ok(Some(Running { addr, stop, task, _probe: None }))
}

impl Running {
    /// Stops accepting, drains, and waits for the server to finish.
    pub async fn stop(self) -> std::io::Result<()> {
        let _ = self.stop.send(true);
        self.task.await.map_err(std::io::Error::other)?
    }

    /// Waits until the server ends (after a stop, or an error).
    pub async fn wait(self) -> std::io::Result<()> {
        self.task.await.map_err(std::io::Error::other)?
    }
}

/// How long a stopping role waits for its audit records to be written.
pub const AUDIT_FLUSH_LIMIT: Duration = Duration::from_secs(5);

/// Binds `config.server.listen` and serves the gateway on it until `shutdown` resolves or
/// [`Running::stop`] is called.
pub async fn start_gateway(
    config: &Config,
    deps: &Deps,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<Running> {
    start_gateway_with(config, deps, dispatcher(config, deps)?, shutdown).await
}

/// [`start_gateway`] with a given dispatcher.
pub async fn start_gateway_with(
    config: &Config,
    deps: &Deps,
    dispatcher: Arc<Dispatcher>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<Running> {
    let listener = TcpListener::bind(config.server.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.server.listen))?;
    let addr = listener.local_addr()?;
    let audit = dispatcher.services.audit.clone();
    let auth_bytes = config.caches.resolve().auth;
    let auth_cache = Arc::new(AuthCache::new(Duration::from_millis(config.server.auth_cache_ttl_ms), auth_bytes));
    let probe = {
        let (auth_cache, dispatcher, store) = (auth_cache.clone(), dispatcher.clone(), deps.store.clone());
        otc_telemetry::metrics().probe(move |sample| {
            sample_pool(&store, sample);
            let services = &dispatcher.services;
            sample.caches.push(auth_cache.figures());
            sample.caches.push(services.files.figures());
            sample.caches.extend(services.segments.figures());
            sample.caches.push(services.graphs.figures());
            sample.caches.push(services.blobs.cache_figures());
            sample.caches.push(services.vault_cache.figures());
            sample.caches.push(services.read_only.figures());
            sample.caches.push(services.confirmation_keys.figures());
            sample.caches.push(services.indexer.excluded_figures());
        })
    };
    let mcp_shutdown = otc_gateway::mcp::Shutdown::default();
    let state = AppState::new(otc_gateway::AppParts {
        store: deps.store.clone(),
        kv: deps.kv.clone(),
        blobs: deps.blobs.clone(),
        check_timeout: Duration::from_millis(config.server.readiness_timeout_ms),
        dispatcher,
        auth_cache,
        mcp: otc_gateway::mcp::McpHttpSettings {
            allowed_hosts: config.mcp.allowed_hosts.clone(),
            allowed_origins: config.mcp.allowed_origins.clone(),
            body_limit_bytes: config.server.body_limit_bytes,
            shutdown: mcp_shutdown.clone(),
        },
        oauth: otc_gateway::oauth::OAuthSettings {
            public_url: config.mcp.public_url.clone(),
            authorization_servers: config.mcp.authorization_servers.clone(),
        },
        identity: identity(config, &deps.store, &deps.kv)?,
        sync: otc_gateway::SyncSettings {
            max_blob_bytes: config.sync.max_blob_bytes,
            max_commit_changes: config.sync.max_commit_changes,
        },
        console: otc_gateway::console::ConsoleSettings {
            session: Duration::from_secs(config.console.session_hours * 3600),
        },
    });
    let router = otc_gateway::router(
        state,
        HttpLimits {
            body_limit_bytes: config.server.body_limit_bytes,
            per_ip_per_minute: config.rate_limits.per_ip_per_minute,
            per_ip_burst: config.rate_limits.per_ip_burst,
            registrations_per_hour: config.oauth.registrations_per_hour,
        },
    );
    let (stop, until) = stoppable(shutdown);
    let until = async move {
        until.await;
        mcp_shutdown.cancel();
    };
    let grace = Duration::from_secs(config.server.shutdown_grace_secs);
    let limits = otc_gateway::ConnectionLimits::from_config(&config.server);
    let task = tokio::spawn(async move {
        let served = otc_gateway::serve(listener, router, until, grace, limits).await;
        // The records of the last requests, before the process goes.
        if !audit.flush(AUDIT_FLUSH_LIMIT).await {
            tracing::error!("audit records still unwritten at shutdown");
        }
        served
    });
    tracing::info!(%addr, "listening on http://{addr}");
    Ok(Running { addr, stop, task, _probe: Some(probe) })
}

pub fn indexer_settings(config: &Config) -> IndexerSettings {
    IndexerSettings {
        batch_jobs: config.worker.index_batch_jobs,
        max_attempts: config.worker.index_max_attempts,
        max_backoff: Duration::from_secs(config.worker.index_max_backoff_secs),
        poll_interval: Duration::from_millis(config.worker.index_poll_ms.max(10)),
        rebuild_batch: config.worker.index_rebuild_batch.max(1),
        rebuild_concurrency: config.worker.index_rebuild_concurrency.max(1),
        max_indexed_bytes: config.index.max_indexed_bytes.max(1),
        inline_deadline: Duration::from_millis(config.index.inline_deadline_ms),
        embed: config.embeddings.provider != EmbeddingProvider::None,
        excluded_cache_bytes: config.caches.resolve().excluded,
        ..IndexerSettings::default()
    }
}

pub fn embed_settings(config: &Config) -> EmbedSettings {
    EmbedSettings {
        batch_chunks: config.embeddings.batch_chunks.max(1),
        max_attempts: config.worker.index_max_attempts,
        max_backoff: Duration::from_secs(config.worker.index_max_backoff_secs),
        poll_interval: Duration::from_millis(config.worker.index_poll_ms.max(10)),
        cache_retention: Duration::from_secs(config.embeddings.cache_retention_days.max(1) as u64 * 24 * 3600),
        egress_exclude_paths: config.egress.exclude_paths.clone(),
        ..EmbedSettings::default()
    }
}

/// The configured embedder. The local model loads now (a missing or broken model file stops
/// the role with the file named); a provider over HTTP is not contacted until used.
pub fn embeddings(config: &Config) -> anyhow::Result<Arc<Embeddings>> {
    let e = &config.embeddings;
    Ok(Arc::new(match e.provider {
        EmbeddingProvider::None => Embeddings::none(),
        EmbeddingProvider::Local => {
            let path = |v: &Option<String>| std::path::PathBuf::from(v.clone().unwrap_or_default());
            let files = otc_embed::local::LocalFiles {
                library: path(&e.local_library),
                model: path(&e.local_model),
                tokenizer: path(&e.local_tokenizer),
            };
            let threads = match e.local_threads {
                0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
                n => n,
            };
            let local = otc_embed::local::Local::load(&files, threads).context("embeddings.provider = \"local\"")?;
            Embeddings::new(Arc::new(otc_embed::local::LocalEmbedder(Arc::new(local))), None)
        }
        EmbeddingProvider::Openai => {
            let settings = otc_embed::http::OpenAiSettings {
                base_url: e.base_url.clone(),
                api_key: e.api_key.as_ref().map(|k| k.expose().to_string()),
                model: e.model.clone(),
                dims: e.dims,
                send_dimensions: e.send_dimensions,
                batch: e.batch,
                tenant_concurrency: e.tenant_concurrency,
                max_attempts: e.max_attempts,
                timeout: Duration::from_millis(e.timeout_ms.max(1)),
                backoff: Duration::from_millis(500),
                max_backoff: Duration::from_secs(30),
            };
            let active = otc_embed::http::OpenAi::new(settings.clone()).context("embeddings")?;
            let make: otc_embed::MakeEmbedder = Box::new(move |model, dims| {
                let model = otc_embed::http::model_name(model).to_string();
                let s = otc_embed::http::OpenAiSettings { model, dims, ..settings.clone() };
                Ok(Arc::new(otc_embed::http::OpenAi::new(s)?) as otc_embed::SharedEmbedder)
            });
            Embeddings::new(Arc::new(active), Some(make))
        }
    }))
}

pub fn worker_settings(config: &Config) -> WorkerSettings {
    WorkerSettings {
        sweep_interval: Duration::from_secs(config.worker.sweep_interval_secs.max(1)),
        lease_ttl: Duration::from_secs(config.worker.lease_ttl_secs),
        token_retention: chrono::Duration::days(i64::from(config.worker.token_retention_days)),
        audit_retention_days: config.audit.retention_days as i32,
        gc_grace: chrono::Duration::hours(config.sync.gc_grace_hours),
        snapshots_per_path: config.sync.snapshots_per_path,
        reconcile: config.sync.reconcile.clone(),
        oauth_client_retention: chrono::Duration::days(config.oauth.refresh_token_ttl_days.max(1) as i64),
        maintenance: config.maintenance.clone(),
        shutdown_grace: Duration::from_secs(config.worker.shutdown_grace_secs),
    }
}

fn warn_unknown(loaded: &Loaded) {
    for unknown in &loaded.unknown_keys {
        tracing::warn!("{unknown} (ignored; `obsidian-tc doctor` lists these)");
    }
}

/// What a long-lived role starts from: the configuration, logging and the clients (and the
/// migrations, when configured to apply them at start).
async fn start_role(sources: &Sources) -> anyhow::Result<(Loaded, otc_telemetry::Telemetry, Deps)> {
    let loaded = load(sources)?;
    let telemetry = otc_telemetry::init(&loaded.config.telemetry)?;
    warn_unknown(&loaded);
    let deps = Deps::new(&loaded.config)?;
    if loaded.config.database.migrate_on_start {
        deps.store.migrate().await.context("applying migrations")?;
    }
    Ok((loaded, telemetry, deps))
}

/// `obsidian-tc serve`
pub async fn serve(sources: Sources) -> anyhow::Result<ExitCode> {
    let signal = shutdown_signal();
    let (loaded, telemetry, deps) = start_role(&sources).await?;
    let config = &loaded.config;
    otc_telemetry::metrics().started("gateway");
    let running = start_gateway(config, &deps, signal).await?;
    let admin = start_admin(config, &deps, std::future::pending()).await?;
    running.wait().await.context("gateway")?;
    if let Some(admin) = admin {
        admin.stop().await.context("admin listener")?;
    }
    // Parsing still running on the blocking pool would hold the runtime's shutdown.
    deps.indexer.shutdown();
    deps.store.close().await;
    tracing::info!("stopped");
    telemetry.shutdown();
    Ok(ExitCode::SUCCESS)
}

/// `obsidian-tc worker`
pub async fn worker(sources: Sources) -> anyhow::Result<ExitCode> {
    let signal = shutdown_signal();
    let (loaded, telemetry, deps) = start_role(&sources).await?;
    let config = &loaded.config;
    otc_telemetry::metrics().started("worker");
    let store = deps.store.clone();
    let _pool = otc_telemetry::metrics().probe(move |sample| sample_pool(&store, sample));
    let admin = start_admin(config, &deps, std::future::pending()).await?;
    let (stop, stopped) = watch::channel(false);
    let outbox =
        tokio::spawn(otc_worker::outbox_metrics::run(deps.store.clone(), OUTBOX_METRICS_EVERY, until(stopped)));
    Worker::new(deps.store.clone(), deps.kv.clone(), deps.blobs.clone(), worker_settings(config))
        .with_indexer(deps.indexer.clone())
        .with_embedding(deps.embedding.clone())
        .with_wiki(dispatcher(config, &deps)?)
        .run(signal)
        .await;
    let _ = stop.send(true);
    let _ = outbox.await;
    if let Some(admin) = admin {
        admin.stop().await.context("admin listener")?;
    }
    deps.indexer.shutdown();
    deps.store.close().await;
    telemetry.shutdown();
    Ok(ExitCode::SUCCESS)
}

/// How often a worker reads the outbox into the metrics.
pub const OUTBOX_METRICS_EVERY: Duration = Duration::from_secs(15);

/// Resolves once `stopped` says true (or its sender is gone).
pub async fn until(mut stopped: watch::Receiver<bool>) {
    let _ = stopped.wait_for(|s| *s).await;
}

/// `shutdown`, or a stop sent on the returned sender ([`Running::stop`]), whichever comes first.
fn stoppable(
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> (watch::Sender<bool>, impl Future<Output = ()> + Send + 'static) {
    let (stop, stopped) = watch::channel(false);
    let either = async move {
        tokio::select! {
            () = shutdown => {}
            () = until(stopped) => {}
        }
    };
    (stop, either)
}

/// The caller a token speaks for, or an error saying the token is not live.
pub async fn authenticate(store: &Store, token: &str) -> anyhow::Result<otc_kernel::Caller> {
    let presented: otc_auth::PresentedToken =
        token.trim().parse().map_err(|_| anyhow::anyhow!("the token is malformed (expected otc_<tenant>_<secret>)"))?;
    let mut tx = store.begin(presented.tenant).await.context("looking up the token")?;
    let caller = tx.authenticate(&presented.hash).await.context("looking up the token")?;
    tx.commit().await?;
    caller.ok_or_else(|| anyhow::anyhow!("the token is unknown, expired or revoked"))
}

/// Serves MCP over stdin/stdout for `caller` until the client closes stdin.
pub async fn serve_stdio(dispatcher: Arc<Dispatcher>, caller: otc_kernel::Caller) -> anyhow::Result<()> {
    let audit = dispatcher.services.audit.clone();
    let served = otc_gateway::mcp::serve_stdio(dispatcher, caller).await;
    // The records of the session's last calls, before the process goes.
    audit.flush(AUDIT_FLUSH_LIMIT).await;
    served.map_err(|e| anyhow::anyhow!("MCP over stdio: {e}"))
}

/// `obsidian-tc stdio`
pub async fn stdio(sources: Sources, token: &str) -> anyhow::Result<ExitCode> {
    let (loaded, telemetry, deps) = start_role(&sources).await?;
    let config = &loaded.config;
    let caller = authenticate(&deps.store, token).await?;
    serve_stdio(dispatcher(config, &deps)?, caller).await?;
    deps.store.close().await;
    telemetry.shutdown();
    Ok(ExitCode::SUCCESS)
}

/// `obsidian-tc migrate`
pub async fn migrate(sources: Sources) -> anyhow::Result<ExitCode> {
    let loaded = load(&sources)?;
    let deps = Deps::new(&loaded.config)?;
    let pending = deps.store.pending_migrations().await.context("reading the migration state")?;
    deps.store.migrate().await.context("applying migrations")?;
    if pending.is_empty() {
        println!("database schema is current");
    } else {
        for version in pending {
            println!("applied migration {version}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The deployment's quotas (0: no limit).
pub fn quotas(config: &otc_config::QuotasConfig) -> otc_store::Quotas {
    let limit = |v: u64| (v > 0).then(|| v.min(i64::MAX as u64) as i64);
    otc_store::Quotas {
        storage_bytes: limit(config.storage_bytes),
        notes: limit(config.notes),
        concurrent_uploads: limit(config.concurrent_uploads),
        upload_bytes_in_flight: limit(config.upload_bytes_in_flight),
    }
}

fn connect_store(config: &Config) -> anyhow::Result<Store> {
    Store::connect_lazy(&StoreOptions {
        url: config.database.url.expose().to_string(),
        max_connections: config.database.max_connections,
        connect_timeout: Duration::from_secs(config.database.connect_timeout_secs),
        quotas: quotas(&config.quotas),
        transaction_pooler: config.database.transaction_pooler,
        migrate_url: config.database.migrate_url.as_ref().map(|u| u.expose().to_string()),
    })
    .context("database")
}

fn connect_kv(config: &Config) -> anyhow::Result<Kv> {
    Kv::new(config.redis.url.expose(), &config.redis.key_prefix, Duration::from_secs(config.redis.connect_timeout_secs))
        .context("redis")
}

/// The store alone, for the admin commands.
pub fn store_only(sources: &Sources) -> anyhow::Result<Store> {
    connect_store(&load(sources)?.config)
}

/// The store and Redis, for admin commands that must tell the gateways what they did (a token
/// revocation), and the configuration they were made from.
pub fn store_and_kv(sources: &Sources) -> anyhow::Result<(Store, Kv, Config)> {
    let config = load(sources)?.config;
    Ok((connect_store(&config)?, connect_kv(&config)?, config))
}
