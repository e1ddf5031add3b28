//! Layered configuration: a TOML file, then environment variables `OTC__SECTION__KEY`, then
//! command-line flags, each layer overriding the one before.
//!
//! Loading never fails on an unknown key: it is collected in [`Loaded::unknown_keys`] so that
//! `doctor` can report it and `serve` can warn. A value of the wrong type fails with an error
//! naming where it came from (the environment variable, the file key or the flag). Secrets are
//! held in [`Secret`], whose `Debug` and `Display` never show the value.

mod secret;
mod sources;

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Deserialize;

pub use secret::{Secret, redact_url};
pub use sources::{ConfigError, ENV_PREFIX, Loaded, Origin, Sources, UnknownKey};

/// The whole configuration of the binary, every role included.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct Config {
    pub server: ServerConfig,
    pub database: DatabaseConfig,
    pub redis: RedisConfig,
    pub object_store: ObjectStoreConfig,
    pub telemetry: TelemetryConfig,
    pub worker: WorkerConfig,
    pub index: IndexConfig,
    pub mcp: McpConfig,
    pub tool_facade: ToolFacadeConfig,
    pub tool_visibility: ToolVisibilityConfig,
    pub governor: GovernorConfig,
    pub tools: ToolsConfig,
    pub resources: ResourcesConfig,
    pub sync: SyncConfig,
    pub rate_limits: RateLimitsConfig,
    pub audit: AuditConfig,
    pub oauth: OAuthConfig,
    pub quotas: QuotasConfig,
    pub lifecycle: LifecycleConfig,
    pub domains: DomainsConfig,
    pub signup: SignupConfig,
    pub egress: EgressConfig,
    pub read_only: ReadOnlyConfig,
    pub console: ConsoleConfig,
    pub embeddings: EmbeddingsConfig,
    pub wiki: WikiConfig,
    pub maintenance: MaintenanceConfig,
    pub ocr: OcrConfig,
    pub memory: MemoryConfig,
    pub knowledge: KnowledgeConfig,
    pub caches: CachesConfig,
    pub fair_share: FairShareConfig,
    /// Per-vault folder ACLs (`[[acl]]`): what the tools may read, write and delete.
    pub acl: Vec<AclEntry>,
}

/// How each gateway shares heavy work (scans, graph walks, bulk changes, index rebuilds, model
/// calls, large reads) between tenants: per kind of work, at most so many calls of one tenant,
/// and of one principal, run at once; the rest wait their turn behind their own tenant's.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FairShareConfig {
    /// Heavy calls of one kind one tenant runs at once on a gateway (0: no limit).
    pub per_tenant: u32,
    /// Heavy calls of one kind one principal runs at once on a gateway (0: no limit).
    pub per_principal: u32,
    /// The longest a heavy call waits for its turn; past it the call answers throttled with
    /// retry_after.
    pub max_wait_ms: u64,
    /// The most pooled Postgres connections one call holds at once.
    pub connections_per_call: u32,
    /// Heavy calls of every kind and tenant a gateway runs at once, handed to waiting tenants
    /// in turn (0: the process's cores less one, at least one, so light calls keep a core).
    pub per_gateway: u32,
}

impl Default for FairShareConfig {
    fn default() -> Self {
        Self { per_tenant: 4, per_principal: 2, max_wait_ms: 10_000, connections_per_call: 4, per_gateway: 0 }
    }
}

impl FairShareConfig {
    /// [`FairShareConfig::per_gateway`], with 0 resolved against the process's cores.
    pub fn gateway_places(&self) -> usize {
        match self.per_gateway {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1).max(1)),
            n => n as usize,
        }
    }
}

/// The in-process caches' bounds (bytes). Each left at 0 is a share of the process's memory
/// limit, so that together they stay within [`CachesConfig::SHARE`] of it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CachesConfig {
    /// The memory this process may use (0: the cgroup's `memory.max` when one is set, else
    /// the machine's memory).
    pub memory_limit_bytes: u64,
    /// Decoded full-text index segments (0: 26% of the limit; real use runs up to 1.5x this
    /// estimate).
    pub segments_bytes: u64,
    /// Which of a segment's notes a caller may read (0: 2%).
    pub masks_bytes: u64,
    /// Vaults' link graphs (0: 8%).
    pub graphs_bytes: u64,
    /// Small notes' bytes as read from the object store (0: 4%).
    pub blobs_bytes: u64,
    /// Notes' manifest rows (0: 4%).
    pub files_bytes: u64,
    /// Authenticated credentials (0: 1%).
    pub auth_bytes: u64,
    /// Vaults looked up by name (0: 0.5%).
    pub vaults_bytes: u64,
    /// Vaults' Excluded-files filters, for the indexer (0: 0.5%).
    pub excluded_bytes: u64,
}

/// Each cache's bound in bytes, as [`CachesConfig::resolve`] settles them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheBounds {
    pub memory_limit: u64,
    pub segments: u64,
    pub masks: u64,
    pub graphs: u64,
    pub blobs: u64,
    pub files: u64,
    pub auth: u64,
    pub vaults: u64,
    pub excluded: u64,
}

impl CacheBounds {
    pub fn sum(&self) -> u64 {
        self.segments + self.masks + self.graphs + self.blobs + self.files + self.auth + self.vaults + self.excluded
    }
}

impl CachesConfig {
    /// The most of the memory limit the caches may hold together, in percent.
    pub const SHARE: u64 = 60;

    /// The bounds, each share taken of `memory_limit_bytes` or, when that is 0, of
    /// [`process_memory_limit`].
    pub fn resolve(&self) -> CacheBounds {
        let limit = if self.memory_limit_bytes > 0 { self.memory_limit_bytes } else { process_memory_limit() };
        // Shares in thousandths of the limit.
        let or_share = |set: u64, per_mille: u64| if set > 0 { set } else { limit / 1000 * per_mille };
        CacheBounds {
            memory_limit: limit,
            segments: or_share(self.segments_bytes, 260),
            masks: or_share(self.masks_bytes, 20),
            graphs: or_share(self.graphs_bytes, 80),
            blobs: or_share(self.blobs_bytes, 40),
            files: or_share(self.files_bytes, 40),
            auth: or_share(self.auth_bytes, 10),
            vaults: or_share(self.vaults_bytes, 5),
            excluded: or_share(self.excluded_bytes, 5),
        }
    }
}

/// The memory this process may use: its cgroup v2 `memory.max` when that is a number, else
/// the machine's memory (`MemTotal`), else 4 GiB. Read once: every cache's bound is a share of it.
pub fn process_memory_limit() -> u64 {
    static LIMIT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(read_memory_limit)
}

fn read_memory_limit() -> u64 {
    let cgroup = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|text| text.lines().find_map(|l| l.strip_prefix("0::").map(str::to_string)));
    let candidates = cgroup
        .iter()
        .map(|path| format!("/sys/fs/cgroup{}/memory.max", path.trim_end_matches('/')))
        .chain(std::iter::once("/sys/fs/cgroup/memory.max".to_string()));
    for file in candidates {
        if let Some(limit) = std::fs::read_to_string(file).ok().and_then(|t| t.trim().parse::<u64>().ok()) {
            return limit;
        }
    }
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kib| kib * 1024)
        })
        .unwrap_or(4 << 30)
}

/// One vault's folder ACL. Each list holds globs over vault paths (`*`, `**`, `?`); a list
/// left out leaves that action unrestricted. A path the ACL does not let a caller read answers
/// exactly like a missing one.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AclEntry {
    /// Tenant slug or id; left out, the entry applies to the vault of that name in every tenant.
    #[serde(default)]
    pub tenant: Option<String>,
    /// Vault name.
    pub vault: String,
    #[serde(default)]
    pub read_paths: Option<Vec<String>>,
    #[serde(default)]
    pub write_paths: Option<Vec<String>>,
    #[serde(default)]
    pub delete_paths: Option<Vec<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct ServerConfig {
    /// Address the HTTP listener binds.
    pub listen: SocketAddr,
    /// Largest request body accepted, in bytes.
    pub body_limit_bytes: usize,
    /// How long a SIGTERM waits for in-flight requests before the process exits anyway.
    pub shutdown_grace_secs: u64,
    /// How long `/readyz` waits for each dependency before calling it down.
    pub readiness_timeout_ms: u64,
    /// How long a gateway keeps a token it has checked without asking Postgres again (0: ask
    /// every time). Revocations reach every gateway at once over Redis; while a gateway is cut
    /// off from Redis it keeps nothing.
    pub auth_cache_ttl_ms: u64,
    /// The operators' listener: `/healthz`, `/readyz` and `/metrics` (Prometheus text), apart
    /// from the public one so metrics never leave the cluster through the Ingress. The worker
    /// serves its probes here. Off when unset.
    pub admin_listen: Option<SocketAddr>,
    /// How long a client may take to send a request's headers, and how long a kept-alive
    /// connection may wait for its next request, on every listener; past it the connection is
    /// closed.
    pub header_timeout_ms: u64,
    /// The longest pause allowed in a request body; past it the request fails (an upload gives
    /// its slot back) and the connection is closed.
    pub body_idle_timeout_ms: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            body_limit_bytes: 4 * 1024 * 1024,
            shutdown_grace_secs: 30,
            readiness_timeout_ms: 2000,
            auth_cache_ttl_ms: 10_000,
            admin_listen: None,
            header_timeout_ms: 10_000,
            body_idle_timeout_ms: 30_000,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct DatabaseConfig {
    /// `postgres://user:password@host:port/db`; a secret because it usually holds a password.
    pub url: Secret,
    pub max_connections: u32,
    pub connect_timeout_secs: u64,
    /// Apply pending migrations when `serve` or `worker` starts (`dev` always does).
    pub migrate_on_start: bool,
    /// `url` reaches Postgres through a pooler in transaction mode (PgBouncer `pool_mode =
    /// transaction`): a server connection is ours only inside a transaction, so nothing is
    /// prepared across transactions and every statement runs in one.
    pub transaction_pooler: bool,
    /// Where migrations run when `url` goes through a transaction pooler (they hold a session
    /// lock): Postgres itself. Unset: `url`.
    pub migrate_url: Option<Secret>,
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        Self {
            url: Secret::new("postgres://postgres@127.0.0.1:5432/obsidian_tc"),
            max_connections: 32,
            connect_timeout_secs: 5,
            migrate_on_start: false,
            transaction_pooler: false,
            migrate_url: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct RedisConfig {
    /// `redis://[:password@]host:port/[db]`; a secret because it may hold a password.
    pub url: Secret,
    /// Prepended to every key, so several deployments (or tests) can share one Redis.
    pub key_prefix: String,
    pub connect_timeout_secs: u64,
}

impl Default for RedisConfig {
    fn default() -> Self {
        Self { url: Secret::new("redis://127.0.0.1:6379/"), key_prefix: "otc:".into(), connect_timeout_secs: 5 }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ObjectStoreKind {
    /// A directory on the local disk (the embedded default).
    Local,
    /// Any S3-compatible service.
    S3,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct ObjectStoreConfig {
    pub kind: ObjectStoreKind,
    /// Root directory for `kind = "local"`.
    pub path: PathBuf,
    pub bucket: String,
    /// Endpoint URL for S3-compatible services other than AWS.
    pub endpoint: Option<String>,
    pub region: String,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<Secret>,
    /// Every object key starts with this prefix (tests give each run its own).
    pub prefix: String,
    /// Permit a plain-HTTP endpoint (loopback development only).
    pub allow_http: bool,
}

impl Default for ObjectStoreConfig {
    fn default() -> Self {
        Self {
            kind: ObjectStoreKind::Local,
            path: PathBuf::from(".otc/objects"),
            bucket: "otc".into(),
            endpoint: None,
            region: "us-east-1".into(),
            access_key_id: None,
            secret_access_key: None,
            prefix: String::new(),
            allow_http: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct TelemetryConfig {
    /// `tracing` filter directives, e.g. `info,otc_gateway=debug`. `RUST_LOG` wins when set.
    pub log_filter: String,
    pub log_format: LogFormat,
    /// OTLP/HTTP endpoint (e.g. `http://collector:4318`); traces and metrics are exported only
    /// when set.
    pub otlp_endpoint: Option<String>,
    pub service_name: String,
    /// How often metrics are pushed to the OTLP endpoint (when one is set).
    pub otlp_metrics_interval_ms: u64,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            // The MCP library logs every stateless request's session at info.
            log_filter: "info,sqlx=warn,rmcp=warn".into(),
            log_format: LogFormat::Text,
            otlp_endpoint: None,
            service_name: "obsidian-tc".into(),
            otlp_metrics_interval_ms: 60_000,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct WorkerConfig {
    /// How often each tenant is swept (its upkeep item comes due), and how often the leader
    /// purges unused OAuth clients and reconciles.
    pub sweep_interval_secs: u64,
    /// How long the leader lease, and a worker's claim on an upkeep item, last; each is renewed
    /// at a third of this.
    pub lease_ttl_secs: u64,
    /// Expired or revoked tokens are deleted this many days after they stopped working.
    pub token_retention_days: u32,
    /// How often an idle indexer looks for index jobs.
    pub index_poll_ms: u64,
    /// Index jobs claimed per batch.
    pub index_batch_jobs: i64,
    /// Failed attempts before an index job is dead-lettered.
    pub index_max_attempts: i32,
    /// The longest back-off between attempts (it doubles from 1 s).
    pub index_max_backoff_secs: u64,
    /// Notes per transaction when index_vault rebuilds a vault (progress and cancellation are
    /// checked between batches).
    pub index_rebuild_batch: usize,
    /// Rebuild batches in flight at once (one parses while another writes).
    pub index_rebuild_concurrency: usize,
    /// After SIGTERM, how long the worker's running work gets to stop: what is still running
    /// then is dropped (its transactions roll back; its jobs and upkeep items stay due).
    pub shutdown_grace_secs: u64,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            sweep_interval_secs: 3600,
            lease_ttl_secs: 30,
            token_retention_days: 30,
            index_poll_ms: 500,
            index_batch_jobs: 64,
            index_max_attempts: 6,
            index_max_backoff_secs: 300,
            index_rebuild_batch: 500,
            index_rebuild_concurrency: 3,
            shutdown_grace_secs: 15,
        }
    }
}

/// What the indexer reads of a note, and how long a commit waits for it.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct IndexConfig {
    /// How much of each note is parsed and indexed, in bytes. A larger note is still stored and
    /// served in full; its first this many bytes (cut at a line break, else a character) are
    /// indexed, and its index row's warnings say so.
    pub max_indexed_bytes: usize,
    /// How long a write's answer waits for its note to be indexed (read-your-writes), in
    /// milliseconds. Past it the write answers anyway and the workers index it (0: never wait).
    pub inline_deadline_ms: u64,
    /// How long a move waits for the vault's index to cover every commit before it plans its
    /// link rewrites (a lagging index would hide linking notes), in milliseconds. Past it the
    /// move answers service_unavailable with nothing moved; the workers go on indexing.
    pub rewrite_wait_ms: u64,
}

impl Default for IndexConfig {
    fn default() -> Self {
        Self { max_indexed_bytes: 4 * 1024 * 1024, inline_deadline_ms: 2_000, rewrite_wait_ms: 30_000 }
    }
}

/// Which model embeds the notes' chunks for semantic search, where it runs, and how hybrid
/// search weighs it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbeddingProvider {
    /// No embeddings: semantic and hybrid search answer embedding_provider_error.
    #[default]
    None,
    /// all-MiniLM-L6-v2 in-process (ONNX Runtime): `local_library`, `local_model`, `local_tokenizer`.
    Local,
    /// An OpenAI-compatible `/v1/embeddings` endpoint: `base_url`, `api_key`, `model`, `dims`.
    Openai,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct EmbeddingsConfig {
    pub provider: EmbeddingProvider,
    /// The provider's model id (openai), stored with every vector it makes. Changing it
    /// re-embeds every vault in the background; search keeps the old vectors until then.
    pub model: String,
    /// The model's vector length (openai).
    pub dims: usize,
    /// Send `dimensions` with each request (for models that shorten their vectors on request).
    pub send_dimensions: bool,
    /// The API base, before `/embeddings` (openai).
    pub base_url: String,
    pub api_key: Option<Secret>,
    /// Texts per provider request.
    pub batch: usize,
    /// Provider requests one tenant may have in flight (per worker).
    pub tenant_concurrency: usize,
    /// Attempts per provider request before the batch fails (and its jobs back off).
    pub max_attempts: u32,
    /// One provider request's time limit, in milliseconds.
    pub timeout_ms: u64,
    /// ONNX Runtime's shared library (local).
    pub local_library: Option<String>,
    /// The model file, .onnx (local).
    pub local_model: Option<String>,
    /// The model's tokenizer.json (local).
    pub local_tokenizer: Option<String>,
    /// Texts the local model runs at once, one thread each (0: one per core).
    pub local_threads: usize,
    /// Chunks one embedding pass takes at most.
    pub batch_chunks: usize,
    /// How hybrid search fuses the BM25 and vector rankings: `relative` (each ranking's scores
    /// min-max normalised over its candidates, weighted and summed) or `rrf` (reciprocal rank
    /// fusion with `rrf_k`). Relative fusion keeps how far ahead a clear keyword match is, which
    /// ranks fusion discard: on the judged query set with the local model (tests/it/quality.rs)
    /// it gives MRR@10 0.906 against 0.885 for RRF and for BM25 alone.
    pub fusion: Fusion,
    /// Reciprocal rank fusion's k (`fusion = "rrf"`); 10 did best there, the textbook 60 let
    /// the vector ranking outvote exact keyword matches on heading queries.
    pub rrf_k: f32,
    /// Each ranking's weight in either fusion (1.0 and 0.5 did best with both).
    pub text_weight: f32,
    pub semantic_weight: f32,
    /// Cached vectors unused for this many days are swept.
    pub cache_retention_days: i64,
}

/// How hybrid search fuses its two rankings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fusion {
    /// Min-max normalised scores, weighted and summed.
    Relative,
    /// Reciprocal rank fusion.
    Rrf,
}

/// The wiki workflow: where a vault's wiki pages live and where its raw sources do (spec:
/// "Wiki workflow", "Ingesting a raw source"). `folder` and `raw_folder` are every vault's
/// unless a `[[wiki.vaults]]` entry for it says otherwise.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WikiConfig {
    /// The wiki folder (e.g. "wiki"); unset: no vault has a wiki.
    pub folder: Option<String>,
    /// The raw sources' folder, which no tool may change; unset: `raw` beside the wiki folder
    /// (wiki gives raw, notes/wiki gives notes/raw).
    pub raw_folder: Option<String>,
    pub vaults: Vec<WikiVault>,
    pub judge: WikiJudgeConfig,
}

/// The optional judge (spec: "The LLM judge"): an OpenAI-compatible chat endpoint that reads a
/// topic and candidate pages and says whether they are one topic. Unset `base_url`: no judge.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WikiJudgeConfig {
    /// The API base, before `/chat/completions` (e.g. https://api.openai.com/v1).
    pub base_url: Option<String>,
    pub model: String,
    pub api_key: Option<Secret>,
    /// find_existing_page asks the judge about ambiguous verdicts without being told to
    /// (a call's `judge` wins either way).
    pub enabled: bool,
    /// lint_wiki judges its near duplicates (a call's `judge` wins either way).
    pub lint_enabled: bool,
    /// Judge calls per tenant per UTC day (0: none); a failed call counts.
    pub max_calls_per_day: u32,
    /// Candidates find_existing_page sends at most, 1 to 3.
    pub max_calls_per_request: u32,
    /// One call's deadline, in milliseconds.
    pub timeout_ms: u64,
    /// Characters of each page a call sends at most.
    pub max_note_chars: usize,
    /// Hosts `base_url` may reach over plain http besides loopback (a gateway on the
    /// deployment's private network).
    pub plain_http_hosts: Vec<String>,
}

impl Default for WikiJudgeConfig {
    fn default() -> Self {
        Self {
            base_url: None,
            model: String::new(),
            api_key: None,
            enabled: false,
            lint_enabled: true,
            max_calls_per_day: 200,
            max_calls_per_request: 3,
            timeout_ms: 15_000,
            max_note_chars: 2_400,
            plain_http_hosts: Vec::new(),
        }
    }
}

/// Text recognition in images for ocr_attachment and ocr_bulk: a local Tesseract (Debian's
/// `tesseract-ocr`), run once per image content and cached.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OcrConfig {
    /// The tesseract program ("" turns OCR off: the tools answer plugin_unavailable).
    pub command: String,
    /// Tesseract's language codes, joined with + (eng, deu+eng ...); each needs its traineddata.
    pub languages: String,
    /// How long one image may take.
    pub timeout_ms: u64,
    /// The largest image read.
    pub max_bytes: u64,
    /// How long a recognized text is kept per image content.
    pub cache_secs: u64,
}

impl Default for OcrConfig {
    fn default() -> Self {
        Self {
            command: "tesseract".into(),
            languages: "eng".into(),
            timeout_ms: 30_000,
            max_bytes: 20 * 1024 * 1024,
            cache_secs: 30 * 24 * 3600,
        }
    }
}

/// Entity memory (the knowledge tools' create_entity, add_observation ...).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// Where an entity created with `materialize` is mirrored as a note:
    /// `<entity_folder>/<type>/<name>.md`, kept in step with the entity by every memory write.
    pub entity_folder: String,
    pub plur: PlurConfig,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self { entity_folder: "Memory".into(), plur: PlurConfig::default() }
    }
}

/// Knowledge and context (`[knowledge]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KnowledgeConfig {
    /// The folder of each vault that holds its external documentation corpus (imported docs,
    /// runbooks): what knowledge_search and knowledge_get_critical read.
    pub docs_folder: String,
    /// One call's deadline to a tenant's chat endpoint (`obsidian-tc tenant llm`), in ms.
    pub llm_timeout_ms: u64,
}

impl Default for KnowledgeConfig {
    fn default() -> Self {
        Self { docs_folder: "Docs".into(), llm_timeout_ms: 30_000 }
    }
}

/// The contradiction detector (`[maintenance.contradictions]`): every `interval_hours`, for each
/// tenant with a chat endpoint,
/// the notes changed since its last pass are compared with the notes they link (and that link
/// them), at most `max_pairs` pairs a tenant; open findings whose notes changed are checked again.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContradictionSchedule {
    pub enabled: bool,
    pub interval_hours: f64,
    pub max_pairs: u32,
}

impl Default for ContradictionSchedule {
    fn default() -> Self {
        Self { enabled: false, interval_hours: 6.0, max_pairs: 50 }
    }
}

/// The external PLUR engram store the plur_* tools forward to (`[memory.plur]`). Unset
/// `base_url`: the tools answer plugin_unavailable.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlurConfig {
    /// The service's base URL (e.g. https://plur.internal:7410).
    pub base_url: Option<String>,
    /// Sent as a bearer token.
    pub api_key: Option<Secret>,
    /// One call's deadline, in milliseconds.
    pub timeout_ms: u64,
}

impl Default for PlurConfig {
    fn default() -> Self {
        Self { base_url: None, api_key: None, timeout_ms: 5000 }
    }
}

/// Periodic upkeep of each tenant, as upkeep items any worker claims (spec: maintenance.wikiLint,
/// maintenance.wikiPages);
/// nothing runs unless `enabled` and the job's own `enabled` are both on.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MaintenanceConfig {
    pub enabled: bool,
    pub wiki_lint: WikiLintSchedule,
    pub wiki_pages: WikiPagesSchedule,
    pub contradictions: ContradictionSchedule,
}

/// The scheduled lint: lint_wiki over every vault (its wiki folder, else the whole vault), one
/// summary log line per vault, nothing written.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WikiLintSchedule {
    pub enabled: bool,
    pub interval_hours: f64,
    /// Pages the pairwise checks read at most, per vault.
    pub max_notes: u32,
    /// Judge the near duplicates (with a judge configured and its lint use on).
    pub judge: bool,
    /// Judge calls per tenant per run.
    pub judge_max_calls: u32,
}

impl Default for WikiLintSchedule {
    fn default() -> Self {
        Self { enabled: false, interval_hours: 24.0, max_notes: 1500, judge: true, judge_max_calls: 20 }
    }
}

/// The scheduled regeneration of the wiki's index.md and log.md (besides the one every tool's
/// change to the wiki folder queues).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WikiPagesSchedule {
    pub enabled: bool,
    pub interval_hours: f64,
}

impl Default for WikiPagesSchedule {
    fn default() -> Self {
        Self { enabled: false, interval_hours: 6.0 }
    }
}

/// One vault's wiki folders, over `[wiki]`'s.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WikiVault {
    /// Tenant slug or id; left out, every tenant's vault of that name.
    #[serde(default)]
    pub tenant: Option<String>,
    pub vault: String,
    #[serde(default)]
    pub folder: Option<String>,
    #[serde(default)]
    pub raw_folder: Option<String>,
}

/// A vault's wiki folders, as configured and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WikiFolders {
    /// "wiki" (no slashes at either end).
    pub folder: String,
    /// None when the default would be the wiki folder itself.
    pub raw: Option<String>,
}

impl WikiConfig {
    /// The wiki folders of `vault` in the tenant `tenant_id` (slug `slug`): its own entry's,
    /// else the deployment's; None without a wiki folder.
    pub fn folders(&self, tenant_id: &str, slug: Option<&str>, vault: &str) -> Option<WikiFolders> {
        let own = self
            .vaults
            .iter()
            .find(|v| v.vault == vault && v.tenant.as_deref().is_none_or(|t| t == tenant_id || Some(t) == slug));
        let folder = own.and_then(|v| v.folder.clone()).or_else(|| self.folder.clone())?;
        let raw = own.and_then(|v| v.raw_folder.clone()).or_else(|| self.raw_folder.clone());
        WikiFolders::new(&folder, raw.as_deref()).ok()
    }
}

impl WikiFolders {
    /// Checks the folders (spec: a plain relative path; never `.`, `/`, empty, absolute or
    /// `..`; no segment ending in a space or dot, which Windows strips; the raw folder never
    /// the wiki folder, inside it or around it) and fills in the default raw folder.
    pub fn new(folder: &str, raw: Option<&str>) -> Result<WikiFolders, String> {
        let folder = plain_folder(folder).map_err(|e| format!("folder {e}"))?;
        let raw = match raw {
            Some(r) => Some(plain_folder(r).map_err(|e| format!("raw_folder {e}"))?),
            None => {
                let default = match folder.rsplit_once('/') {
                    Some((parent, _)) => format!("{parent}/raw"),
                    None => "raw".to_string(),
                };
                (default != folder).then_some(default)
            }
        };
        if let Some(r) = &raw {
            // Case-blind, as the ACL compares them.
            let inside = |a: &str, b: &str| a.to_lowercase().starts_with(&format!("{}/", b.to_lowercase()));
            if r.eq_ignore_ascii_case(&folder) || inside(r, &folder) || inside(&folder, r) {
                return Err("raw_folder must not be the wiki folder, inside it or contain it".into());
            }
        }
        Ok(WikiFolders { folder, raw })
    }
}

fn plain_folder(path: &str) -> Result<String, String> {
    let p = path.trim_end_matches('/');
    if p.is_empty() || p == "." || p.starts_with('/') || p.contains('\\') || p.contains(':') {
        return Err(format!("{path:?} must be a plain relative folder"));
    }
    for segment in p.split('/') {
        if segment.is_empty() || segment == "." || segment == ".." {
            return Err(format!("{path:?} must be a plain relative folder"));
        }
        if segment.ends_with(' ') || segment.ends_with('.') {
            return Err(format!("{path:?} has a segment ending in a space or dot"));
        }
    }
    Ok(p.to_string())
}

impl Default for EmbeddingsConfig {
    fn default() -> Self {
        Self {
            provider: EmbeddingProvider::None,
            model: "text-embedding-3-small".into(),
            dims: 1536,
            send_dimensions: false,
            base_url: "https://api.openai.com/v1".into(),
            api_key: None,
            batch: 128,
            tenant_concurrency: 2,
            max_attempts: 4,
            timeout_ms: 30_000,
            local_library: None,
            local_model: None,
            local_tokenizer: None,
            local_threads: 0,
            batch_chunks: 256,
            fusion: Fusion::Relative,
            rrf_k: 10.0,
            text_weight: 1.0,
            semantic_weight: 0.5,
            cache_retention_days: 30,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct McpConfig {
    /// Host names (optionally `host:port`) the MCP endpoint answers to; others get 403. Protects
    /// against DNS rebinding. Add your public host name in production.
    pub allowed_hosts: Vec<String>,
    /// The server's public base URL (`https://mcp.example.com`), which OAuth clients are told
    /// the resource is. Left out, it is read from each request's Host header (http://).
    pub public_url: Option<String>,
    /// OAuth authorization servers whose access tokens this server accepts, advertised in the
    /// protected-resource metadata (RFC 9728).
    pub authorization_servers: Vec<String>,
    /// Origins (`scheme://host[:port]`, port `*` for any) a browser-borne request may come from;
    /// a request with another Origin gets 403. Requests without an Origin are not affected.
    pub allowed_origins: Vec<String>,
    /// Whether a client's own person may confirm a destructive call: over stdio through MCP
    /// elicitation, and for 2026-07-28 clients through an input-required result. This trusts
    /// the client software to show the question and report the answer; `false` leaves only the
    /// confirmation tokens an operator or admin mints (`obsidian-tc elicit`, `POST /v1/elicit`).
    /// Off by default in a hosted service (any client declaring elicitation could answer its own
    /// confirmation); a tenant admin may let named OAuth clients do it (`obsidian-tc tenant
    /// policy T --confirm-in-client CLIENT_ID`, `PUT /v1/policies`).
    pub confirm_in_client: bool,
    /// How long a 2026-07-28 client may take to answer an input-required result (a person's
    /// confirmation) before its request state expires (1 s to an hour).
    pub request_state_ttl_secs: u64,
    /// How long a 2026-07-28 client may reuse a tools or resources listing (`ttlMs`; private to
    /// the caller's credentials). 0 asks it to list again every time.
    pub list_ttl_ms: u64,
    /// How long one `subscriptions/listen` stream lasts before the server ends it (the client
    /// listens again); bounds how long a revoked token or a changed ACL goes unnoticed there.
    pub listen_max_secs: u64,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            public_url: None,
            authorization_servers: Vec::new(),
            allowed_origins: vec!["http://localhost:*".into(), "http://127.0.0.1:*".into()],
            confirm_in_client: false,
            request_state_ttl_secs: 600,
            list_ttl_ms: 60_000,
            listen_max_secs: 300,
        }
    }
}

/// The sync API and the storage it writes.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct SyncConfig {
    /// Largest file a client may upload, in bytes; a larger one is refused with 413.
    pub max_blob_bytes: usize,
    /// Most paths in one commit.
    pub max_commit_changes: usize,
    /// Snapshots kept per path (older ones are pruned by the worker).
    pub snapshots_per_path: i64,
    /// An uploaded blob that nothing references is collected after this many hours.
    pub gc_grace_hours: i64,
    /// Reconcile mode: vaults whose files an outside tool writes as plain objects.
    pub reconcile: Vec<ReconcileTarget>,
}

impl Default for SyncConfig {
    fn default() -> Self {
        Self {
            max_blob_bytes: 256 * 1024 * 1024,
            max_commit_changes: 5000,
            snapshots_per_path: 10,
            gc_grace_hours: 24,
            reconcile: Vec::new(),
        }
    }
}

/// A vault fed by plain objects under `prefix` in the object store (an S3 sync plugin, rclone):
/// the worker imports what appears, changes or disappears there.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconcileTarget {
    /// Tenant slug or id.
    pub tenant: String,
    /// Vault name.
    pub vault: String,
    /// Object-store prefix (inside object_store.prefix) holding the vault's files.
    pub prefix: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum FacadeModeSetting {
    #[default]
    Triad,
    Domain,
    Flat,
    /// Deprecated; resolves to triad.
    Auto,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ProfileSetting {
    #[default]
    Full,
    Core,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AdvertiseSetting {
    /// The mode decides.
    #[default]
    All,
    Essentials,
    Core,
    Full,
}

/// `toolFacade` in the spec: what tools/list advertises and which tools exist at all.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct ToolFacadeConfig {
    pub mode: FacadeModeSetting,
    /// List read_note, search_vault, write_note and list_notes beside the triad.
    pub triad_hot_path: bool,
    pub profile: ProfileSetting,
    pub advertise: AdvertiseSetting,
    /// Under `auto` (deprecated): a case-insensitive substring of the client's name mapped to a
    /// mode, checked in this table's order.
    #[serde(deserialize_with = "ordered_pairs")]
    pub auto_clients: Vec<(String, FacadeModeSetting)>,
    /// Under `auto`: log each resolution as one JSON line on stderr.
    pub explain_auto_mode: bool,
}

/// `toolVisibility` in the spec.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct ToolVisibilityConfig {
    /// Not advertised, still callable by name.
    pub hidden: Vec<String>,
    /// Refused as if never registered.
    pub disabled: Vec<String>,
    pub hidden_tags: Vec<String>,
    pub disabled_tags: Vec<String>,
    /// When set, only these tools are advertised.
    pub allowed: Option<Vec<String>>,
    /// Advertise no tool that can change a vault.
    pub require_read_only: bool,
    /// Advertise the tools that need a live Obsidian app (the active file, the command
    /// palette, QuickAdd ...). They answer plugin_unavailable here, so they are hidden by
    /// default; still callable by name.
    pub show_live_app_tools: bool,
    /// Put each tool's output schema in tools/list too. Off (the default), describe_capability
    /// answers it and a listing costs about half as much.
    pub list_output_schemas: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct GovernorConfig {
    /// The hard ceiling on one tool result, in bytes; a larger one is refused with `overflow`.
    pub max_response_bytes: u64,
}

impl Default for GovernorConfig {
    fn default() -> Self {
        Self { max_response_bytes: 1_048_576 }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ResponseFormatSetting {
    Concise,
    #[default]
    Detailed,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct ToolsConfig {
    pub defaults: ToolDefaults,
    /// How long a long-running tool (index_vault) holds the call open before it answers with a
    /// task handle to poll (the spec's 40 s budget).
    pub task_budget_ms: u64,
    /// The longest a gateway serves a note's manifest row from memory (0: never). Rows are
    /// served only while the vault's write generation in Redis is unchanged, so this bounds
    /// staleness only when a commit could not reach Redis.
    pub file_cache_ms: u64,
    /// Whether destructive calls (delete_note, an overwrite, a bulk change ...) need a human's
    /// confirmation: they answer elicit_required with `details.args_hash` until confirmed.
    pub confirm_destructive: bool,
    /// How long a confirmation token (`obsidian-tc elicit`, `POST /v1/elicit`) stays valid.
    pub confirmation_ttl_secs: u64,
    /// The most note text one search_regex or search_jsonlogic call reads (bytes); a scan that
    /// needs more answers compute_budget_exceeded.
    pub search_scan_bytes: u64,
    /// How long one search_regex or search_jsonlogic call may scan before it answers
    /// compute_budget_exceeded.
    pub search_deadline_ms: u64,
    /// The largest note a tool reads whole to parse or edit (bytes). A larger note is read in
    /// pages (read_note's cursor); an edit of it, or a projection that needs it parsed, answers
    /// compute_budget_exceeded naming this limit.
    pub max_parse_bytes: u64,
    /// The most note text one page of read_note carries (bytes, cut at a line end when one is
    /// near).
    pub read_page_bytes: u64,
    /// The most memory one call may allocate beyond what it started with (bytes; 0: no
    /// budget). A call past it stops at its next checkpoint (a parsing step, its commit, its
    /// answer) and answers compute_budget_exceeded, with nothing written.
    pub call_memory_bytes: u64,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            defaults: ToolDefaults::default(),
            task_budget_ms: 40_000,
            file_cache_ms: 2_000,
            confirm_destructive: true,
            confirmation_ttl_secs: 300,
            search_scan_bytes: 256 << 20,
            search_deadline_ms: 5_000,
            max_parse_bytes: 4 << 20,
            read_page_bytes: 256 << 10,
            call_memory_bytes: 512 << 20,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct ToolDefaults {
    /// The response_format a call gets when it names none.
    pub response_format: ResponseFormatSetting,
}

/// What one tenant may keep and upload at once, unless it has quotas of its own
/// (`obsidian-tc tenant quotas`). 0 is no limit.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QuotasConfig {
    /// Bytes of stored content (every version kept: notes, attachments, snapshots, trash).
    pub storage_bytes: u64,
    /// Markdown notes across the tenant's vaults.
    pub notes: u64,
    /// Uploads (`PUT /v1/vaults/{vault}/blobs/{hash}`) in flight at once, every gateway counted.
    pub concurrent_uploads: u64,
    /// Bytes those uploads declare, together.
    pub upload_bytes_in_flight: u64,
}

impl Default for QuotasConfig {
    fn default() -> Self {
        Self {
            storage_bytes: 10 * 1024 * 1024 * 1024,
            notes: 1_000_000,
            concurrent_uploads: 8,
            upload_bytes_in_flight: 1024 * 1024 * 1024,
        }
    }
}

/// Deleting vaults and tenants (`obsidian-tc vault delete`, `tenant delete`): what is deleted
/// answers nowhere at once and is erased (every row, object and Redis key) once the grace
/// period is over; until then an admin can undo it.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LifecycleConfig {
    /// Hours between a deletion and its erasure.
    pub deletion_grace_hours: u64,
}

impl Default for LifecycleConfig {
    fn default() -> Self {
        Self { deletion_grace_hours: 30 * 24 }
    }
}

impl LifecycleConfig {
    pub fn deletion_grace(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.deletion_grace_hours.saturating_mul(3600))
    }
}

/// Egress exclusion: notes whose text never leaves for a model (an embedding provider, the wiki
/// judge, a tenant's chat endpoint), for every tenant; each tenant adds its own
/// (`/v1/policies`). Globs as in the ACLs (`*` within a folder, `**` across); a glob without a
/// wildcard also covers what is under it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EgressConfig {
    pub exclude_paths: Vec<String>,
}

/// The web console at `/console` (tenant admins and members sign in there through their
/// organisation's identity provider, or with an invitation).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConsoleConfig {
    /// How long a console session lasts before the person signs in again (1 to 720).
    pub session_hours: u64,
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        Self { session_hours: 8 }
    }
}

/// Read-only modes: `server` makes the whole deployment read-only from its start (the operator's
/// `obsidian-tc read-only on` does the same at run time, and tenants and vaults have their own);
/// each gateway reads the run-time holds at most once per `refresh_ms`, so a switch reaches
/// every gateway within that long.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReadOnlyConfig {
    pub server: bool,
    pub refresh_ms: u64,
}

impl Default for ReadOnlyConfig {
    fn default() -> Self {
        Self { server: false, refresh_ms: 1000 }
    }
}

/// Self-service sign-up (`POST /v1/signup`): off unless the operator turns it on. A sign-up
/// makes a tenant and an invitation for its first admin, limited per address as client
/// registration is.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SignupConfig {
    pub enabled: bool,
    /// Only people with an email in one of these domains may sign up (empty: anyone).
    pub email_domains: Vec<String>,
    /// When set, a sign-up must carry this code (one the operator hands out, e.g. for a beta).
    pub access_code: Option<Secret>,
}

/// Email domains a tenant proves it holds (`/v1/admin/domains`): the TXT record its DNS must
/// publish is read through this resolver.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DomainsConfig {
    /// host:port of the DNS resolver (UDP); empty: the first nameserver of /etc/resolv.conf.
    pub resolver: String,
    /// How long a lookup may take.
    pub timeout_ms: u64,
}

impl Default for DomainsConfig {
    fn default() -> Self {
        Self { resolver: String::new(), timeout_ms: 3000 }
    }
}

/// obsidian-tc as the OAuth 2.1 authorization server of its MCP endpoints, signing people in
/// through each tenant's identity provider (`obsidian-tc idp set`). Off until `secret_key` is set.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct OAuthConfig {
    /// 32 random bytes, base64 (`openssl rand -base64 32`): seals the token-signing keys and the
    /// identity providers' client secrets at rest. Every gateway and admin command of a
    /// deployment needs the same one; losing it loses those secrets.
    pub secret_key: Option<Secret>,
    /// Access tokens' lifetime. Short, so a client comes back for a new one often.
    pub access_token_ttl_secs: u64,
    pub refresh_token_ttl_days: u64,
    /// How long each token-signing key signs before the next takes over.
    pub key_rotation_days: u64,
    /// `host:port` pairs the server may call although they are not public addresses (an
    /// identity provider or a client metadata document on the deployment's own network;
    /// `host:*` for any port). Everything else private (loopback, RFC 1918, link-local, ...) is refused.
    pub private_hosts: Vec<String>,
    /// How long a grant lives, refreshed or not: past it the person signs in again. 0 is no limit.
    pub max_grant_age_days: u64,
    /// Custom URI schemes a registered client may redirect to besides reverse-domain ones
    /// (`com.example.app:/cb`, RFC 8252 §7.1): the claimed schemes of known native clients.
    pub redirect_schemes: Vec<String>,
    /// Client registrations (`/oauth/register`) one address may make per hour (a burst of a tenth
    /// of it, at least one, may come at once).
    pub registrations_per_hour: u32,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        Self {
            secret_key: None,
            access_token_ttl_secs: 900,
            refresh_token_ttl_days: 30,
            key_rotation_days: 30,
            private_hosts: Vec::new(),
            max_grant_age_days: 90,
            redirect_schemes: ["cursor", "vscode", "vscode-insiders", "windsurf", "claude"].map(String::from).to_vec(),
            registrations_per_hour: 60,
        }
    }
}

/// The audit trail: a record per tool call and /v1 request in Postgres.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct AuditConfig {
    pub enabled: bool,
    /// Days a record is kept, unless the tenant set its own (`obsidian-tc audit retention`).
    pub retention_days: u32,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self { enabled: true, retention_days: 90 }
    }
}

/// Rate limits: a GCRA budget in Redis per principal and class of call (a tool's scope class,
/// or `sync` for every /v1 request), shared by every gateway.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct RateLimitsConfig {
    pub enabled: bool,
    /// What a call gets when Redis cannot decide: `open` lets it through (and warns), `closed`
    /// answers throttled. server_health reports which.
    pub when_redis_down: FailPolicy,
    /// The default tier of each class; a tenant's own (`obsidian-tc tenant limits`) replace them.
    pub tiers: RateTiers,
    /// Requests per minute (and burst) one client address may make to the routes that need no
    /// credential (health, readiness, OAuth metadata), counted in each gateway's memory.
    pub per_ip_per_minute: u32,
    pub per_ip_burst: u32,
}

impl Default for RateLimitsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            when_redis_down: FailPolicy::Open,
            tiers: RateTiers::default(),
            per_ip_per_minute: 600,
            per_ip_burst: 100,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum FailPolicy {
    #[default]
    Open,
    Closed,
}

/// Calls per minute and burst (how many may come at once after a quiet spell).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateTier {
    pub per_minute: u32,
    pub burst: u32,
}

/// The default tier of each class (the public implementation's defaults).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateTiers {
    pub read: RateTier,
    pub write: RateTier,
    pub delete: RateTier,
    pub admin: RateTier,
    pub execute: RateTier,
    pub bulk: RateTier,
    /// The sync API (/v1): one file per upload or download, so a tier of its own.
    pub sync: RateTier,
}

impl Default for RateTiers {
    fn default() -> Self {
        let tier = |per_minute, burst| RateTier { per_minute, burst };
        Self {
            read: tier(600, 100),
            write: tier(60, 20),
            delete: tier(60, 20),
            admin: tier(5, 1),
            execute: tier(5, 1),
            bulk: tier(10, 3),
            sync: tier(6000, 1000),
        }
    }
}

impl RateTiers {
    /// The classes, most costly first (the sync API's last: it is not a tool's).
    pub const CLASSES: [&str; 7] = ["bulk", "execute", "admin", "delete", "write", "read", "sync"];

    /// The tier of a class by name.
    pub fn get(&self, class: &str) -> Option<RateTier> {
        Some(match class {
            "read" => self.read,
            "write" => self.write,
            "delete" => self.delete,
            "admin" => self.admin,
            "execute" => self.execute,
            "bulk" => self.bulk,
            "sync" => self.sync,
            _ => return None,
        })
    }
}

/// MCP note resources (`obsidian-tc://<vault>/<path>`: resources/list, resources/read and the
/// read_resources tool).
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct ResourcesConfig {
    /// Keep note resources on the caller's default vault: the vault its token is bound to, or
    /// the tenant's only vault. A caller with several vaults and no binding then reaches none.
    /// (A vault-bound token stays on its own vault either way.)
    pub bound_vault_only: bool,
}

/// A table read as (key, value) pairs in the order written.
fn ordered_pairs<'de, D, V>(deserializer: D) -> Result<Vec<(String, V)>, D::Error>
where
    D: serde::Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct Pairs<V>(std::marker::PhantomData<V>);
    impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for Pairs<V> {
        type Value = Vec<(String, V)>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a table of client-name substrings to modes")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some((k, v)) = map.next_entry()? {
                out.push((k, v));
            }
            Ok(out)
        }
    }
    deserializer.deserialize_map(Pairs(std::marker::PhantomData))
}

impl Config {
    /// Settings that still work but are on their way out, for `doctor` and server_health.
    pub fn deprecations(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.tool_facade.mode == FacadeModeSetting::Auto {
            notes.push(
                "tool_facade.mode = \"auto\" is deprecated: it resolves to triad; set an explicit mode (triad, domain or flat)"
                    .to_string(),
            );
            if !self.tool_facade.auto_clients.is_empty() {
                notes.push("tool_facade.auto_clients is deprecated with mode \"auto\"".to_string());
            }
        } else {
            if !self.tool_facade.auto_clients.is_empty() {
                notes.push("tool_facade.auto_clients has no effect unless tool_facade.mode = \"auto\"".to_string());
            }
            if self.tool_facade.explain_auto_mode {
                notes
                    .push("tool_facade.explain_auto_mode has no effect unless tool_facade.mode = \"auto\"".to_string());
            }
        }
        notes
    }

    /// Checks that need more than a type: reported by `doctor`, refused at start-up.
    pub fn validate(&self) -> Result<(), Vec<ConfigError>> {
        let mut problems = Vec::new();
        let mut bad = |key: &str, message: String| {
            problems.push(ConfigError::Invalid { key: key.into(), message });
        };
        if !self.database.url.expose().starts_with("postgres://")
            && !self.database.url.expose().starts_with("postgresql://")
        {
            bad("database.url", "must be a postgres:// URL".into());
        }
        if !self.redis.url.expose().starts_with("redis://") && !self.redis.url.expose().starts_with("rediss://") {
            bad("redis.url", "must be a redis:// or rediss:// URL".into());
        }
        if !(1..=720).contains(&self.console.session_hours) {
            bad("console.session_hours", "must be between 1 and 720".into());
        }
        if !(10..=60_000).contains(&self.read_only.refresh_ms) {
            bad("read_only.refresh_ms", "must be between 10 and 60000".into());
        }
        if self.database.max_connections == 0 {
            bad("database.max_connections", "must be at least 1".into());
        }
        if self.ocr.languages.is_empty()
            || !self
                .ocr
                .languages
                .split('+')
                .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        {
            bad("ocr.languages", "is tesseract language codes joined with + (e.g. eng or deu+eng)".into());
        }
        if self.ocr.timeout_ms == 0 {
            bad("ocr.timeout_ms", "must be at least 1".into());
        }
        if self.object_store.kind == ObjectStoreKind::S3 {
            if self.object_store.bucket.is_empty() {
                bad("object_store.bucket", "is required when object_store.kind = \"s3\"".into());
            }
            if let Some(endpoint) = &self.object_store.endpoint
                && url::Url::parse(endpoint).is_err()
            {
                bad("object_store.endpoint", "is not a valid URL".into());
            }
        }
        if let Some(endpoint) = &self.telemetry.otlp_endpoint
            && url::Url::parse(endpoint).is_err()
        {
            bad("telemetry.otlp_endpoint", "is not a valid URL".into());
        }
        let e = &self.embeddings;
        match e.provider {
            EmbeddingProvider::None => {}
            EmbeddingProvider::Local => {
                for (key, value) in [
                    ("embeddings.local_library", &e.local_library),
                    ("embeddings.local_model", &e.local_model),
                    ("embeddings.local_tokenizer", &e.local_tokenizer),
                ] {
                    if value.as_deref().is_none_or(str::is_empty) {
                        bad(
                            key,
                            "is required when embeddings.provider = \"local\" (scripts/models env prints them)".into(),
                        );
                    }
                }
            }
            EmbeddingProvider::Openai => {
                if url::Url::parse(&e.base_url).is_err() {
                    bad("embeddings.base_url", "is not a valid URL".into());
                }
                if e.model.trim().is_empty() {
                    bad("embeddings.model", "is required when embeddings.provider = \"openai\"".into());
                }
                if !(1..=16_000).contains(&e.dims) {
                    bad("embeddings.dims", "must be between 1 and 16000".into());
                }
            }
        }
        if e.batch == 0 || e.batch_chunks == 0 || e.tenant_concurrency == 0 || e.max_attempts == 0 {
            bad("embeddings", "batch, batch_chunks, tenant_concurrency and max_attempts must be at least 1".into());
        }
        if !(e.rrf_k > 0.0
            && e.text_weight >= 0.0
            && e.semantic_weight >= 0.0
            && e.text_weight + e.semantic_weight > 0.0)
        {
            bad("embeddings", "rrf_k must be above 0 and the weights at least 0, not both 0".into());
        }
        let j = &self.wiki.judge;
        if let Some(url) = &j.base_url {
            // The judge reads the tenant's pages and holds a key: plain http only to this
            // machine or a host the deployment names (a gateway on its own network).
            match url::Url::parse(url) {
                Ok(u) if u.scheme() == "https" => {}
                Ok(u) if u.scheme() == "http" => {
                    let host = u.host_str().unwrap_or("").trim_matches(['[', ']']);
                    let loopback =
                        host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
                    if !loopback && !j.plain_http_hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
                        bad(
                            "wiki.judge.base_url",
                            "must be https unless its host is loopback or listed in wiki.judge.plain_http_hosts".into(),
                        );
                    }
                }
                _ => bad("wiki.judge.base_url", "must be an absolute http(s) URL".into()),
            }
            if j.model.trim().is_empty() {
                bad("wiki.judge.model", "is required when wiki.judge.base_url is set".into());
            }
        }
        if !(1..=3).contains(&j.max_calls_per_request) {
            bad("wiki.judge.max_calls_per_request", "must be between 1 and 3".into());
        }
        if j.timeout_ms == 0 || j.max_note_chars == 0 {
            bad("wiki.judge", "timeout_ms and max_note_chars must be at least 1".into());
        }
        let m = &self.maintenance;
        for (key, hours) in [
            ("maintenance.wiki_lint.interval_hours", m.wiki_lint.interval_hours),
            ("maintenance.wiki_pages.interval_hours", m.wiki_pages.interval_hours),
            ("maintenance.contradictions.interval_hours", m.contradictions.interval_hours),
        ] {
            if !(hours > 0.0 && hours <= 24.0 * 365.0) {
                bad(key, "must be above 0 and at most a year".into());
            }
        }
        if !(1..=5000).contains(&m.wiki_lint.max_notes) {
            bad("maintenance.wiki_lint.max_notes", "must be between 1 and 5000".into());
        }
        if !(1..=100).contains(&m.wiki_lint.judge_max_calls) {
            bad("maintenance.wiki_lint.judge_max_calls", "must be between 1 and 100".into());
        }
        if let Some(key) = &self.oauth.secret_key {
            use base64::Engine;
            let text = key.expose().trim();
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(text)
                .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text));
            if decoded.map(|b| b.len()) != Ok(32) {
                bad("oauth.secret_key", "must be 32 random bytes, base64 (`openssl rand -base64 32`)".into());
            }
        }
        if let Some(url) = &self.mcp.public_url
            && !url::Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "https" | "http") && u.host().is_some())
        {
            bad("mcp.public_url", "must be an absolute http(s) URL".into());
        }
        if self.governor.max_response_bytes < 1024 {
            bad("governor.max_response_bytes", "must be at least 1024".into());
        }
        if !(1..=3600).contains(&self.mcp.request_state_ttl_secs) {
            bad("mcp.request_state_ttl_secs", "must be from 1 to 3600".into());
        }
        if !(1..=86_400).contains(&self.mcp.listen_max_secs) {
            bad("mcp.listen_max_secs", "must be from 1 to 86400".into());
        }
        if self.mcp.list_ttl_ms > 86_400_000 {
            bad("mcp.list_ttl_ms", "must be at most a day (86400000)".into());
        }
        for origin in &self.mcp.allowed_origins {
            if !origin.contains("://") {
                bad("mcp.allowed_origins", format!("{origin:?} needs a scheme, e.g. https://{origin}"));
            }
        }
        let wiki = &self.wiki;
        if let Some(folder) = &wiki.folder
            && let Err(e) = WikiFolders::new(folder, wiki.raw_folder.as_deref())
        {
            bad("wiki", e);
        }
        for v in &wiki.vaults {
            let folder = v.folder.as_ref().or(wiki.folder.as_ref());
            match folder {
                Some(folder) => {
                    if let Err(e) = WikiFolders::new(folder, v.raw_folder.as_deref().or(wiki.raw_folder.as_deref())) {
                        bad("wiki.vaults", format!("{}: {e}", v.vault));
                    }
                }
                None if v.raw_folder.is_some() => bad("wiki.vaults", format!("{}: raw_folder needs a folder", v.vault)),
                None => {}
            }
        }
        for (i, entry) in self.acl.iter().enumerate() {
            for (name, list) in [
                ("read_paths", &entry.read_paths),
                ("write_paths", &entry.write_paths),
                ("delete_paths", &entry.delete_paths),
            ] {
                for glob in list.iter().flatten() {
                    if glob.is_empty() || glob.starts_with('/') || glob.split('/').any(|s| s == "..") {
                        bad(&format!("acl[{i}].{name}"), format!("{glob:?} is not a vault-relative glob"));
                    }
                }
            }
        }
        if self.worker.index_batch_jobs < 1 {
            bad("worker.index_batch_jobs", "must be at least 1".into());
        }
        if self.worker.index_max_attempts < 1 {
            bad("worker.index_max_attempts", "must be at least 1".into());
        }
        let caches = self.caches.resolve();
        if caches.sum() > caches.memory_limit / 100 * CachesConfig::SHARE {
            bad(
                "caches",
                format!(
                    "the caches' bounds add up to {} bytes, more than {}% of the memory limit of {} bytes",
                    caches.sum(),
                    CachesConfig::SHARE,
                    caches.memory_limit
                ),
            );
        }
        if self.tools.max_parse_bytes < 1024 {
            bad("tools.max_parse_bytes", "must be at least 1024".into());
        }
        if self.tools.read_page_bytes < 1024 {
            bad("tools.read_page_bytes", "must be at least 1024".into());
        }
        if self.index.max_indexed_bytes < 1024 {
            bad("index.max_indexed_bytes", "must be at least 1024".into());
        }
        if self.worker.lease_ttl_secs < 3 {
            bad("worker.lease_ttl_secs", "must be at least 3".into());
        }
        if !(1..=3650).contains(&self.audit.retention_days) {
            bad("audit.retention_days", "must be from 1 to 3650".into());
        }
        if problems.is_empty() { Ok(()) } else { Err(problems) }
    }
}

#[cfg(test)]
mod tests;
