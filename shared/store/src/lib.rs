//! Postgres: the only crate with SQL.
//!
//! Every query runs inside a [`TenantTx`]: a transaction that has switched to the role
//! `otc_app` (to which row-level security always applies) and set `app.tenant_id`, so the
//! database itself confines it to one tenant. The cross-tenant lookups are
//! [`Store::tenant_id_by_slug`], [`Store::tenant_ids`] (operators), the workers' claims
//! ([`Store::claim_upkeep`], [`Store::due_job_vaults`], [`Store::tenants_lacking_model`]) and the sign-in
//! routes ([`Store::tenant_by_email_domain`], [`Store::tenants_by_idp_issuer`]), all
//! `SECURITY DEFINER` functions that return ids and nothing else. The authorization server's
//! deployment data (registered clients, signing keys; no tenant's rows) is read with no tenant set.

mod acl_rules;
mod audit_log;
mod call_effects;
mod capture;
pub mod console;
mod directory;
mod embeddings;
mod entity_memory;
pub mod erasure;
mod error;
pub mod export;
mod files;
mod fulltext;
mod graph;
mod history;
mod idempotency;
mod index;
pub mod invitations;
mod keys;
mod knowledge;
mod llm;
pub mod members;
mod oauth;
mod pages;
mod policies;
mod principals;
mod quotas;
mod rate_limits;
pub mod read_only;
mod reads;
mod sessions;
mod tenants;
mod tokens;
pub mod upkeep;
mod usage;
mod vaults;
mod visible;
mod work;

#[cfg(feature = "testing")]
pub mod testing;

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Postgres, Transaction};
use uuid::Uuid;

pub use acl_rules::{Access, AclRuleRow, NewAclRule, Subject, VaultRule};
pub use audit_log::{ActionMetrics, AuditFilter, AuditRecord};
pub use call_effects::CallEffects;
pub use capture::{Capture, NewCapture};
pub use console::VaultHealth;
pub use directory::{DirectoryFilter, DirectoryGroup, DirectoryUser};
pub use embeddings::{
    ChunkSpan, ChunkToEmbed, ChunkVector, EMBED_JOB, EmbeddingStatus, EmbeddingUsage, LinkNeighbour, VaultModel,
    VectorFilter, VectorHit,
};
pub use entity_memory::{Entity, NewObservation, Observation, Relation};
pub use erasure::{DeletedVault, ErasureDue, TenantDeletion};
pub use error::StoreError;
pub use files::{
    Action, Change, ChangeRecord, Committed, Expect, FileEntry, FileKind, Hash, NameClash, NewJob,
    PROVENANCE_FIELD_CHARS, Provenance, ReconcileEntry, Stale, record_hash,
};
pub use fulltext::SegmentRef;
pub use graph::{LinkCounts, LinkEdges, NoteFacts};
pub use history::{LogLine, PastFile, Snapshot};
pub use index::{
    ChunkRecord, ClaimedJob, INDEX_JOB, IndexFile, IndexStatus, LinkRecord, NoteRecord, StoredLink, TagRecord,
    TaskRecord,
};
pub use knowledge::{Contradiction, Gap, MEMORY_TABLES, NewContradiction};
pub use llm::{LlmUsage, TenantLlm};
pub use members::Member;
pub use oauth::{
    CodeBinding, FederatedPrincipal, Grant, IdpConfig, NewAccessToken, NewGrant, OAuthClient, Redemption, SigningKeyRow,
};
pub use pages::{LinkTextMatch, NameMatch};
pub use policies::TenantDomain;
pub use principals::{Principal, PrincipalKind};
pub use quotas::{QuotaExceeded, Quotas, Usage};
pub use rate_limits::RateTier;
pub use reads::{Listed, NoteMeta, ScanCandidate, ScanFilter, TaskLine};
pub use sessions::{Goal, WorkSession};
pub use tenants::{Backlog, OutboxStats, Tenant, UsageToday};
pub use tokens::{Authenticated, IssuedToken, NewToken, TokenRecord};
pub use usage::{UsageDay, UsageReport};
pub use vaults::{MAX_VAULT_NAME_BYTES, Vault};
pub use visible::Visible;
pub use work::{
    Episode, EpisodeBucket, EpisodeFacts, EpisodeFilter, EpisodeGroup, RecordedCall, ReplayFacts, RetrievalFact,
    SessionRetrieval, Stamped,
};

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Migrations compiled into the binary from the workspace's `migrations/` folder.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

/// Extensions the schema needs from the server.
pub const REQUIRED_EXTENSIONS: [&str; 2] = ["vector", "pg_trgm"];

/// Connection settings, independent of how the configuration is laid out.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub url: String,
    pub max_connections: u32,
    pub connect_timeout: Duration,
    /// The quotas of a tenant that set none of its own.
    pub quotas: Quotas,
    /// `url` goes through a pooler in transaction mode (PgBouncer): see [`Store::begin`].
    pub transaction_pooler: bool,
    /// Where migrations run, when not `url` (a transaction pooler cannot hold their session
    /// lock).
    pub migrate_url: Option<String>,
}

/// A pool of connections to the product database.
#[derive(Clone, Debug)]
pub struct Store {
    pool: PgPool,
    defaults: Quotas,
    /// Behind a transaction pooler: every transaction first drops the server connection's
    /// prepared statements (another client's, named like ours), statements are not cached
    /// across transactions, and nothing runs outside a transaction.
    pooled: bool,
    migrate_url: Option<String>,
}

impl Store {
    /// Creates the pool without connecting, so a process can start (and report unreadiness)
    /// while Postgres is down; connections are made on first use.
    pub fn connect_lazy(options: &StoreOptions) -> Result<Self> {
        let connect: PgConnectOptions =
            options.url.parse().map_err(|e| StoreError::Config(format!("database.url: {e}")))?;
        let mut connect = connect.application_name("obsidian-tc");
        if options.transaction_pooler {
            connect = connect.statement_cache_capacity(0);
        }
        // No ping before handing out a connection: it was a second round trip on every query.
        // A connection that died while idle (a Postgres restart, a failover) fails the next
        // query made on it and is dropped; idle ones are closed after two minutes, before
        // common proxy and load-balancer idle cut-offs (four minutes and up).
        let pool = PgPoolOptions::new()
            .test_before_acquire(false)
            .idle_timeout(Duration::from_secs(120))
            .max_lifetime(Duration::from_secs(1800))
            .max_connections(options.max_connections)
            .acquire_timeout(options.connect_timeout)
            .connect_lazy_with(connect);
        Ok(Self {
            pool,
            defaults: options.quotas,
            pooled: options.transaction_pooler,
            migrate_url: options.migrate_url.clone(),
        })
    }

    /// Applies every pending migration. Safe to run from several processes at once: sqlx
    /// serialises them with an advisory lock, held by the session, so behind a transaction
    /// pooler they run on `migrate_url`'s direct connection.
    pub async fn migrate(&self) -> Result<()> {
        use sqlx::Connection;
        match (&self.migrate_url, self.pooled) {
            (Some(url), _) => {
                let options: PgConnectOptions =
                    url.parse().map_err(|e| StoreError::Config(format!("database.migrate_url: {e}")))?;
                let mut conn = sqlx::PgConnection::connect_with(&options).await?;
                MIGRATOR.run(&mut conn).await?;
                conn.close().await?;
            }
            (None, true) => {
                return Err(StoreError::Config(
                    "database.transaction_pooler is on: migrations hold a session lock a transaction pooler \
                     cannot keep; set database.migrate_url to Postgres itself"
                        .into(),
                ));
            }
            (None, false) => MIGRATOR.run(&self.pool).await?,
        }
        Ok(())
    }

    /// What every transaction opens with: BEGIN and, behind a transaction pooler, the drop of
    /// the server connection's prepared statements (another client's, named like ours).
    fn opening(&self) -> &'static str {
        if self.pooled { "BEGIN; DEALLOCATE ALL;" } else { "BEGIN;" }
    }

    /// A plain transaction (no role, no tenant) for the store's own checks.
    async fn begin_plain(&self) -> Result<Transaction<'static, Postgres>> {
        Ok(self.pool.begin_with(self.opening()).await?)
    }

    /// Versions of the compiled-in migrations that the database has not applied yet.
    pub async fn pending_migrations(&self) -> Result<Vec<i64>> {
        let mut tx = self.begin_plain().await?;
        let table_exists: bool =
            sqlx::query_scalar("SELECT to_regclass('public._sqlx_migrations') IS NOT NULL").fetch_one(&mut *tx).await?;
        let applied: Vec<i64> = if table_exists {
            sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success").fetch_all(&mut *tx).await?
        } else {
            Vec::new()
        };
        tx.commit().await?;
        Ok(MIGRATOR.iter().map(|m| m.version).filter(|v| !applied.contains(v)).collect())
    }

    /// Round trip to the server (the simple protocol: nothing prepared).
    pub async fn ping(&self) -> Result<()> {
        use sqlx::Executor;
        (&self.pool).execute("SELECT 1").await?;
        Ok(())
    }

    /// Opens one connection outside the pool, so a failure carries its real cause (refused,
    /// bad password, unknown database) rather than the pool's time-out.
    pub async fn connect_once(&self) -> Result<()> {
        use sqlx::Connection;
        let conn = sqlx::PgConnection::connect_with(&self.pool.connect_options()).await?;
        conn.close().await?;
        Ok(())
    }

    /// Of [`REQUIRED_EXTENSIONS`], those the server cannot provide.
    pub async fn missing_extensions(&self) -> Result<Vec<String>> {
        let mut tx = self.begin_plain().await?;
        let available: Vec<String> =
            sqlx::query_scalar("SELECT name FROM pg_available_extensions WHERE name = ANY($1)")
                .bind(&REQUIRED_EXTENSIONS[..])
                .fetch_all(&mut *tx)
                .await?;
        tx.commit().await?;
        Ok(REQUIRED_EXTENSIONS.iter().filter(|e| !available.iter().any(|a| a == *e)).map(|e| e.to_string()).collect())
    }

    /// Opens a transaction confined to `tenant` by row-level security.
    pub async fn begin(&self, tenant: Uuid) -> Result<TenantTx> {
        // BEGIN and both settings in one round trip (a simple-protocol batch; `role` is the
        // setting SET LOCAL ROLE changes). The tenant is a UUID, so its text is safe to inline.
        let begin = format!(
            "{} SELECT set_config('role', 'otc_app', true), set_config('app.tenant_id', '{}', true)",
            self.opening(),
            tenant.hyphenated()
        );
        // The transaction's span: a child of the tool call or request that opened it, open
        // until the transaction ends (committed, rolled back or dropped).
        let span = tracing::info_span!(
            "db.transaction",
            otel.kind = "client",
            db.system = "postgresql",
            tenant = %tenant,
        );
        let tx = self.pool.begin_with(begin).await?;
        Ok(TenantTx { tx, tenant, defaults: self.defaults, _span: span })
    }

    /// A transaction as `otc_app` with no tenant set: it sees no tenant's rows and can only
    /// call the id-returning lookup functions.
    async fn begin_untenanted(&self) -> Result<Transaction<'static, Postgres>> {
        Ok(self.pool.begin_with(format!("{} SET LOCAL ROLE otc_app", self.opening())).await?)
    }

    /// Whether `url` goes through a transaction pooler.
    pub(crate) fn pooled(&self) -> bool {
        self.pooled
    }

    pub(crate) fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The pool's connections: (open, idle, the most it opens).
    pub fn pool_stats(&self) -> (u32, usize, u32) {
        (self.pool.size(), self.pool.num_idle(), self.pool.options().get_max_connections())
    }

    /// Closes every connection; used on shutdown.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// A transaction that sees and writes one tenant's rows only.
pub struct TenantTx {
    tx: Transaction<'static, Postgres>,
    tenant: Uuid,
    /// The deployment's quotas, for a tenant that set none.
    defaults: Quotas,
    _span: tracing::Span,
}

impl TenantTx {
    pub fn tenant_id(&self) -> Uuid {
        self.tenant
    }

    pub async fn commit(self) -> Result<()> {
        call_effects::commit(self.tx).await?;
        Ok(())
    }

    /// Commits a transaction whose writes a rerun of the call repeats to the same end (the
    /// blob inventory's rows): it is not counted among the call's effects
    /// ([`CallEffects`]), so a failure after it still frees the call's idempotency key.
    pub async fn commit_repeatable(self) -> Result<()> {
        self.tx.commit().await?;
        Ok(())
    }
}
