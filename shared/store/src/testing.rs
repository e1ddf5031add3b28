//! Test support: every test gets its own freshly migrated database, cloned from a template
//! that is migrated once per migration set (safe across concurrent test processes).

use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};
use sqlx::{Connection, Executor, PgConnection};

use crate::{MIGRATOR, Result, Store, StoreOptions, TenantTx};

/// Test databases older than this are dropped by later runs (leftovers of killed runs).
const STALE_AFTER_SECS: u64 = 3 * 3600;

/// Creates a new database migrated to the current schema on the server of `admin_url` (a URL
/// of any database there, connecting as a role that may create databases) and returns its URL.
pub async fn fresh_database(admin_url: &str) -> Result<String> {
    let mut admin = PgConnection::connect(admin_url).await?;
    let template = template_name();
    // One process migrates the template; the others wait on the lock and find it made.
    admin.execute("SELECT pg_advisory_lock(7405182901)").await?;
    let made = ensure_template(&mut admin, admin_url, &template).await;
    admin.execute("SELECT pg_advisory_unlock(7405182901)").await?;
    made?;
    drop_stale(&mut admin).await?;

    let now = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock after 1970").as_secs();
    let name = format!("otc_t_{now}_{}", uuid::Uuid::new_v4().simple());
    // CREATE DATABASE ... TEMPLATE fails while another session is connected to the template;
    // nobody connects to it after it is made, but retry briefly to be safe.
    let mut attempts = 0;
    loop {
        match admin.execute(format!("CREATE DATABASE \"{name}\" TEMPLATE \"{template}\"").as_str()).await {
            Ok(_) => break,
            Err(e) if attempts < 50 => {
                attempts += 1;
                tracing::debug!(error = %e, "template busy, retrying");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(with_database(admin_url, &name))
}

/// Rows of `table` visible to `tx` through a query with no WHERE clause: what row-level
/// security alone lets through.
pub async fn count_unfiltered(tx: &mut TenantTx, table: Table) -> Result<i64> {
    let sql = format!("SELECT count(*) FROM {}", table.name());
    Ok(sqlx::query_scalar(&sql).fetch_one(&mut *tx.tx).await?)
}

/// The tenant-owned tables.
#[derive(Debug, Clone, Copy)]
pub enum Table {
    Tenants,
    Vaults,
    Principals,
    ApiTokens,
    VaultHeads,
    VaultFiles,
    ChangeLog,
    Snapshots,
    Trash,
    Blobs,
    BlobUploads,
    Jobs,
    ReconcileState,
    IndexState,
    IndexFiles,
    Notes,
    Links,
    NoteTags,
    NoteProperties,
    NoteTasks,
    Chunks,
    AclRules,
    PrincipalGroups,
    AuditLog,
    TenantQuotas,
    TenantUsage,
    TenantIdps,
    IdpDomains,
    OauthGrants,
    OauthCodes,
    OauthRefreshTokens,
    OauthAssertionJtis,
    DirectoryGroups,
    DirectoryGroupMembers,
    ChunkVectors,
    EmbeddingCache,
    VaultEmbeddings,
    EmbeddingUsage,
    MemoryEntities,
    MemoryObservations,
    MemoryRelations,
    CaptureQueue,
    WorkSessions,
    Goals,
    AgentEpisodes,
    EpisodeRetrievals,
    KnowledgeGaps,
    Contradictions,
    TenantLlm,
    LlmUsage,
    TenantPolicies,
    TenantDomains,
    IdempotencyRecords,
    UpkeepItems,
    TenantUsageDaily,
    DomainClaims,
    Invitations,
}

impl Table {
    /// The index's tables: rows derived from the vault's files, rebuilt by index_vault.
    pub const INDEX: [Table; 7] = [
        Table::IndexFiles,
        Table::Notes,
        Table::Links,
        Table::NoteTags,
        Table::NoteProperties,
        Table::NoteTasks,
        Table::Chunks,
    ];

    pub const ALL: [Table; 57] = [
        Table::Tenants,
        Table::Vaults,
        Table::Principals,
        Table::ApiTokens,
        Table::VaultHeads,
        Table::VaultFiles,
        Table::ChangeLog,
        Table::Snapshots,
        Table::Trash,
        Table::Blobs,
        Table::BlobUploads,
        Table::Jobs,
        Table::ReconcileState,
        Table::IndexState,
        Table::IndexFiles,
        Table::Notes,
        Table::Links,
        Table::NoteTags,
        Table::NoteProperties,
        Table::NoteTasks,
        Table::Chunks,
        Table::AclRules,
        Table::PrincipalGroups,
        Table::AuditLog,
        Table::TenantQuotas,
        Table::TenantUsage,
        Table::TenantIdps,
        Table::IdpDomains,
        Table::OauthGrants,
        Table::OauthCodes,
        Table::OauthRefreshTokens,
        Table::OauthAssertionJtis,
        Table::DirectoryGroups,
        Table::DirectoryGroupMembers,
        Table::ChunkVectors,
        Table::EmbeddingCache,
        Table::VaultEmbeddings,
        Table::EmbeddingUsage,
        Table::MemoryEntities,
        Table::MemoryObservations,
        Table::MemoryRelations,
        Table::CaptureQueue,
        Table::WorkSessions,
        Table::Goals,
        Table::AgentEpisodes,
        Table::EpisodeRetrievals,
        Table::KnowledgeGaps,
        Table::Contradictions,
        Table::TenantLlm,
        Table::LlmUsage,
        Table::TenantPolicies,
        Table::TenantDomains,
        Table::IdempotencyRecords,
        Table::UpkeepItems,
        Table::TenantUsageDaily,
        Table::DomainClaims,
        Table::Invitations,
    ];

    fn name(self) -> &'static str {
        match self {
            Table::Tenants => "tenants",
            Table::Vaults => "vaults",
            Table::Principals => "principals",
            Table::ApiTokens => "api_tokens",
            Table::VaultHeads => "vault_heads",
            Table::VaultFiles => "vault_files",
            Table::ChangeLog => "change_log",
            Table::Snapshots => "snapshots",
            Table::Trash => "trash",
            Table::Blobs => "blobs",
            Table::BlobUploads => "blob_uploads",
            Table::Jobs => "jobs",
            Table::ReconcileState => "reconcile_state",
            Table::IndexState => "index_state",
            Table::IndexFiles => "index_files",
            Table::Notes => "notes",
            Table::Links => "links",
            Table::NoteTags => "note_tags",
            Table::NoteProperties => "note_properties",
            Table::NoteTasks => "note_tasks",
            Table::Chunks => "chunks",
            Table::AclRules => "acl_rules",
            Table::PrincipalGroups => "principal_groups",
            Table::AuditLog => "audit_log",
            Table::TenantQuotas => "tenant_quotas",
            Table::TenantUsage => "tenant_usage",
            Table::TenantIdps => "tenant_idps",
            Table::IdpDomains => "idp_domains",
            Table::OauthGrants => "oauth_grants",
            Table::OauthCodes => "oauth_codes",
            Table::OauthRefreshTokens => "oauth_refresh_tokens",
            Table::OauthAssertionJtis => "oauth_assertion_jtis",
            Table::DirectoryGroups => "directory_groups",
            Table::DirectoryGroupMembers => "directory_group_members",
            Table::ChunkVectors => "chunk_vectors",
            Table::EmbeddingCache => "embedding_cache",
            Table::VaultEmbeddings => "vault_embeddings",
            Table::EmbeddingUsage => "embedding_usage",
            Table::MemoryEntities => "memory_entities",
            Table::MemoryObservations => "memory_observations",
            Table::MemoryRelations => "memory_relations",
            Table::CaptureQueue => "capture_queue",
            Table::WorkSessions => "work_sessions",
            Table::Goals => "goals",
            Table::AgentEpisodes => "agent_episodes",
            Table::EpisodeRetrievals => "episode_retrievals",
            Table::KnowledgeGaps => "knowledge_gaps",
            Table::Contradictions => "contradictions",
            Table::TenantLlm => "tenant_llm",
            Table::LlmUsage => "llm_usage",
            Table::TenantPolicies => "tenant_policies",
            Table::TenantDomains => "tenant_domains",
            Table::IdempotencyRecords => "idempotency_records",
            Table::UpkeepItems => "upkeep_items",
            Table::TenantUsageDaily => "tenant_usage_daily",
            Table::DomainClaims => "domain_claims",
            Table::Invitations => "invitations",
        }
    }
}

/// Whether each tenant-owned table has row-level security enabled (name, enabled).
pub async fn rls_status(store: &Store) -> Result<Vec<(String, bool)>> {
    // Every table with a tenant_id column (so a new table cannot be missed), and tenants.
    Ok(sqlx::query_as(
        r#"SELECT c.relname::text, c.relrowsecurity FROM pg_class c
            WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace
              AND (c.relname = 'tenants' OR EXISTS (SELECT 1 FROM pg_attribute a
                   WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped))
            ORDER BY c.relname"#,
    )
    .fetch_all(&store.pool)
    .await?)
}

/// For every table of the schema (from the catalog, so a new table cannot be missed), how many
/// of its rows mention one of `needles` anywhere in their text (`row_to_json`), read past
/// row-level security; only the tables with such rows, by name.
pub async fn rows_mentioning(store: &Store, needles: &[String]) -> Result<Vec<(String, i64)>> {
    let tables: Vec<String> = sqlx::query_scalar(
        r#"SELECT c.relname::text FROM pg_class c
            WHERE c.relkind IN ('r', 'p') AND c.relnamespace = 'public'::regnamespace
              AND c.relname <> '_sqlx_migrations' ORDER BY 1"#,
    )
    .fetch_all(&store.pool)
    .await?;
    let patterns: Vec<String> = needles.iter().map(|n| format!("%{n}%")).collect();
    let mut found = Vec::new();
    for table in tables {
        let sql = format!("SELECT count(*) FROM {table} x WHERE row_to_json(x)::text LIKE ANY ($1)");
        let n: i64 = sqlx::query_scalar(&sql).bind(&patterns).fetch_one(&store.pool).await?;
        if n > 0 {
            found.push((table, n));
        }
    }
    Ok(found)
}

/// The functions that run as their owner (`SECURITY DEFINER`), so past row-level security: the
/// schema's cross-tenant lookups, by name.
pub async fn security_definer_functions(store: &Store) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar(
        r#"SELECT p.proname::text FROM pg_proc p
            WHERE p.prosecdef AND p.pronamespace = 'public'::regnamespace ORDER BY 1"#,
    )
    .fetch_all(&store.pool)
    .await?)
}

/// The index tables' foreign keys to one another (constraint names), and their secondary
/// indexes that are neither partial nor the primary key, with each one's leading column.
pub async fn index_table_shapes(store: &Store) -> Result<(Vec<String>, Vec<(String, String)>)> {
    let tables = Table::INDEX.map(Table::name);
    let keys: Vec<String> = sqlx::query_scalar(
        r#"SELECT conname::text FROM pg_constraint
            WHERE contype = 'f' AND conrelid::regclass::text = ANY($1) AND confrelid::regclass::text = ANY($1)"#,
    )
    .bind(tables)
    .fetch_all(&store.pool)
    .await?;
    let indexes: Vec<(String, String)> = sqlx::query_as(
        r#"SELECT i.indexrelid::regclass::text, a.attname::text FROM pg_index i
            JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
            WHERE i.indrelid::regclass::text = ANY($1) AND NOT i.indisprimary AND i.indpred IS NULL
            ORDER BY 1"#,
    )
    .bind(tables)
    .fetch_all(&store.pool)
    .await?;
    Ok((keys, indexes))
}

/// Runs the one-trip file read ([`Store::file`]'s function) on one connection, then reads that
/// connection's role and tenant setting: (rows found, role, tenant setting). Shows that the
/// settings the read takes end with its statement.
pub async fn one_trip_read_then_settings(
    store: &Store,
    tenant: uuid::Uuid,
    vault: uuid::Uuid,
    path: &str,
) -> Result<(i64, String, String)> {
    let mut conn = store.pool.acquire().await?;
    let found: i64 = sqlx::query_scalar("SELECT count(*) FROM otc_read_file($1, $2, $3)")
        .bind(tenant)
        .bind(vault)
        .bind(path)
        .fetch_one(&mut *conn)
        .await?;
    let (role, setting): (String, String) =
        sqlx::query_as("SELECT current_user::text, coalesce(current_setting('app.tenant_id', true), '')")
            .fetch_one(&mut *conn)
            .await?;
    Ok((found, role, setting))
}

/// A store on `url` with test-sized settings.
pub fn store(url: &str) -> Result<Store> {
    Store::connect_lazy(&StoreOptions {
        url: url.to_string(),
        max_connections: 8,
        connect_timeout: std::time::Duration::from_secs(10),
        quotas: crate::Quotas::default(),
        transaction_pooler: false,
        migrate_url: None,
    })
}

fn template_name() -> String {
    let mut hash = Sha256::new();
    for m in MIGRATOR.iter() {
        hash.update(m.version.to_le_bytes());
        hash.update(&m.checksum);
    }
    format!("otc_template_{}", &hex::encode(hash.finalize())[..16])
}

async fn ensure_template(admin: &mut PgConnection, admin_url: &str, template: &str) -> Result<()> {
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate)")
            .bind(template)
            .fetch_one(&mut *admin)
            .await?;
    if exists {
        return Ok(());
    }
    admin.execute(format!("DROP DATABASE IF EXISTS \"{template}\"").as_str()).await?;
    admin.execute(format!("CREATE DATABASE \"{template}\"").as_str()).await?;
    {
        let mut conn = PgConnection::connect(&with_database(admin_url, template)).await?;
        MIGRATOR.run(&mut conn).await?;
        conn.close().await?;
    }
    admin.execute(format!("ALTER DATABASE \"{template}\" WITH is_template true").as_str()).await?;
    Ok(())
}

async fn drop_stale(admin: &mut PgConnection) -> Result<()> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock after 1970").as_secs();
    let names: Vec<String> =
        sqlx::query_scalar("SELECT datname::text FROM pg_database WHERE datname LIKE 'otc\\_t\\_%'")
            .fetch_all(&mut *admin)
            .await?;
    for name in names {
        let born = name.split('_').nth(2).and_then(|s| s.parse::<u64>().ok()).unwrap_or(now);
        if now.saturating_sub(born) > STALE_AFTER_SECS {
            let _ = admin.execute(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)").as_str()).await;
        }
    }
    Ok(())
}

fn with_database(url: &str, database: &str) -> String {
    let mut parsed = url::Url::parse(url).expect("a valid database URL");
    parsed.set_path(&format!("/{database}"));
    parsed.to_string()
}

/// Tries to write a vault row owned by `owner` from inside `tx` (a different tenant's
/// transaction); row-level security must refuse it.
pub async fn insert_vault_owned_by(tx: &mut TenantTx, owner: uuid::Uuid, name: &str) -> Result<()> {
    sqlx::query("INSERT INTO vaults (tenant_id, id, name) VALUES ($1, $2, $3)")
        .bind(owner)
        .bind(uuid::Uuid::now_v7())
        .bind(name)
        .execute(&mut *tx.tx)
        .await?;
    Ok(())
}

/// Rows of `table` that `tx` can update or delete without a WHERE clause: what row-level
/// security lets a write reach. The changes are made and then undone by a savepoint.
pub async fn count_writable(tx: &mut TenantTx, table: Table) -> Result<u64> {
    sqlx::query("SAVEPOINT probe").execute(&mut *tx.tx).await?;
    let sql = match table {
        Table::Tenants => "UPDATE tenants SET name = name",
        Table::Vaults => "UPDATE vaults SET name = name",
        Table::Principals => "UPDATE principals SET name = name",
        Table::ApiTokens => "DELETE FROM api_tokens",
        Table::VaultHeads => "UPDATE vault_heads SET seq = seq",
        Table::VaultFiles => "UPDATE vault_files SET size = size",
        Table::ChangeLog => "UPDATE change_log SET tool = tool",
        Table::Snapshots => "UPDATE snapshots SET size = size",
        Table::Trash => "UPDATE trash SET size = size",
        Table::Blobs => "UPDATE blobs SET size = size",
        Table::BlobUploads => "UPDATE blob_uploads SET uploaded_at = uploaded_at",
        Table::Jobs => "UPDATE jobs SET attempts = attempts",
        Table::ReconcileState => "UPDATE reconcile_state SET size = size",
        Table::IndexState => "UPDATE index_state SET indexed_seq = indexed_seq",
        Table::IndexFiles => "UPDATE index_files SET size = size",
        Table::Notes => "UPDATE notes SET size = size",
        Table::Links => "UPDATE links SET line = line",
        Table::NoteTags => "UPDATE note_tags SET tag = tag",
        Table::NoteProperties => "UPDATE note_properties SET value = value",
        Table::NoteTasks => "UPDATE note_tasks SET line = line",
        Table::Chunks => "UPDATE chunks SET line = line",
        Table::AclRules => "UPDATE acl_rules SET read_only = read_only",
        Table::PrincipalGroups => "UPDATE principal_groups SET group_name = group_name",
        Table::AuditLog => "DELETE FROM audit_log",
        Table::TenantQuotas => "UPDATE tenant_quotas SET notes = notes",
        Table::TenantUsage => "UPDATE tenant_usage SET storage_bytes = storage_bytes",
        Table::TenantIdps => "UPDATE tenant_idps SET issuer = issuer",
        Table::IdpDomains => "UPDATE idp_domains SET domain = domain",
        Table::OauthGrants => "UPDATE oauth_grants SET scopes = scopes",
        Table::OauthCodes => "UPDATE oauth_codes SET used_at = used_at",
        Table::OauthRefreshTokens => "UPDATE oauth_refresh_tokens SET rotated_at = rotated_at",
        Table::OauthAssertionJtis => "DELETE FROM oauth_assertion_jtis",
        Table::DirectoryGroups => "UPDATE directory_groups SET display_name = display_name",
        Table::DirectoryGroupMembers => "DELETE FROM directory_group_members",
        Table::ChunkVectors => "UPDATE chunk_vectors SET ord = ord",
        Table::EmbeddingCache => "UPDATE embedding_cache SET used_at = used_at",
        Table::VaultEmbeddings => "UPDATE vault_embeddings SET state = state",
        Table::EmbeddingUsage => "UPDATE embedding_usage SET tokens = tokens",
        Table::MemoryEntities => "UPDATE memory_entities SET name = name",
        Table::MemoryObservations => "UPDATE memory_observations SET text = text",
        Table::MemoryRelations => "UPDATE memory_relations SET relation_type = relation_type",
        Table::CaptureQueue => "UPDATE capture_queue SET content = content",
        Table::WorkSessions => "UPDATE work_sessions SET caller = caller",
        Table::Goals => "UPDATE goals SET text = text",
        Table::AgentEpisodes => "UPDATE agent_episodes SET summary = summary",
        Table::EpisodeRetrievals => "UPDATE episode_retrievals SET path = path",
        Table::KnowledgeGaps => "UPDATE knowledge_gaps SET query = query",
        Table::Contradictions => "UPDATE contradictions SET rationale = rationale",
        Table::TenantLlm => "UPDATE tenant_llm SET model = model",
        Table::LlmUsage => "UPDATE llm_usage SET calls = calls",
        Table::TenantPolicies => "UPDATE tenant_policies SET updated_at = updated_at",
        Table::TenantDomains => "UPDATE tenant_domains SET via = via",
        Table::IdempotencyRecords => "UPDATE idempotency_records SET record = record",
        Table::UpkeepItems => "UPDATE upkeep_items SET runs = runs",
        Table::TenantUsageDaily => "UPDATE tenant_usage_daily SET value = value",
        Table::DomainClaims => "UPDATE domain_claims SET token = token",
        Table::Invitations => "UPDATE invitations SET email = email",
    };
    let done = sqlx::query(sql).execute(&mut *tx.tx).await?;
    sqlx::query("ROLLBACK TO SAVEPOINT probe").execute(&mut *tx.tx).await?;
    Ok(done.rows_affected())
}

/// Creates an empty (unmigrated) database named `name` on the server of `url`.
pub async fn create_empty_database(url: &str, name: &str) -> Result<()> {
    let mut admin = PgConnection::connect(url).await?;
    admin.execute(format!("CREATE DATABASE \"{name}\"").as_str()).await?;
    Ok(())
}

/// The server's clash key of each of `paths` (the expression `vault_files_clash_key` indexes),
/// to compare with `otc_vault::clash_key`, and whether the server's Unicode tables know every
/// character of the path (Postgres and Rust may be at different Unicode versions).
pub async fn clash_keys(store: &Store, paths: &[String]) -> Result<Vec<(String, bool)>> {
    Ok(sqlx::query_as(
        "SELECT casefold(normalize(p, NFC) COLLATE pg_c_utf8), unicode_assigned(p)
         FROM unnest($1::text[]) WITH ORDINALITY AS t(p, n) ORDER BY n",
    )
    .bind(paths)
    .fetch_all(&store.pool)
    .await?)
}

/// The warnings of a note's index row (`None`: no row).
pub async fn note_warnings(tx: &mut TenantTx, vault: uuid::Uuid, path: &str) -> Result<Option<Vec<String>>> {
    Ok(sqlx::query_scalar("SELECT warnings FROM notes WHERE tenant_id = $1 AND vault_id = $2 AND path = $3")
        .bind(tx.tenant)
        .bind(vault)
        .bind(path)
        .fetch_optional(&mut *tx.tx)
        .await?)
}

/// Makes every grant of `tx`'s tenant `days` older, as if signed in that long ago.
pub async fn age_grants(tx: &mut TenantTx, days: i32) -> Result<u64> {
    let done = sqlx::query("UPDATE oauth_grants SET created_at = created_at - make_interval(days => $1)")
        .bind(days)
        .execute(&mut *tx.tx)
        .await?;
    Ok(done.rows_affected())
}

/// Ends the server process behind `tx`'s connection from another one, as an administrator's
/// `pg_terminate_backend` or a restart would: the next statement in `tx` fails (SQLSTATE 57P01,
/// or the connection closed under it).
pub async fn terminate_backend_of(store: &Store, tx: &mut TenantTx) -> Result<()> {
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()").fetch_one(&mut *tx.tx).await?;
    sqlx::query("SELECT pg_terminate_backend($1)").bind(pid).execute(store.pool()).await?;
    Ok(())
}

/// The generic plan (`EXPLAIN (GENERIC_PLAN)`, parameters left as `$n`) of `sql` as `tx` would
/// run it, under its tenant's row-level security, with sequential scans priced out: a plan that
/// still scans a table whole has no index it could use.
pub async fn plan_without_seq_scans(tx: &mut TenantTx, sql: &str) -> Result<String> {
    sqlx::query("SAVEPOINT plan").execute(&mut *tx.tx).await?;
    sqlx::query("SET LOCAL enable_seqscan = off").execute(&mut *tx.tx).await?;
    // The simple protocol: a prepared statement would want its `$n` bound.
    let explain = format!("EXPLAIN (GENERIC_PLAN) {sql}");
    let rows = sqlx::raw_sql(&explain).fetch_all(&mut *tx.tx).await?;
    let lines: Vec<String> = rows.iter().map(|row| sqlx::Row::get(row, 0)).collect();
    sqlx::query("ROLLBACK TO SAVEPOINT plan").execute(&mut *tx.tx).await?;
    Ok(lines.join("\n"))
}

/// The SQL text of every query macro in the body of `pub async fn {function}` in `source` (a
/// file of this crate), in order: for tests that look at the statements a function runs.
pub fn statements_of(source: &str, function: &str) -> Vec<String> {
    let start = source.find(&format!("fn {function}(")).unwrap_or_else(|| panic!("no fn {function}"));
    let rest = &source[start..];
    let end = rest[1..].find("\n    pub ").or_else(|| rest[1..].find("\n}")).map_or(rest.len(), |e| e + 1);
    let body = &rest[..end];
    let mut out = Vec::new();
    for piece in body.split("query").skip(1) {
        let Some(open) = piece.find('!') else { continue };
        let after = &piece[open..];
        let (text, close) = match (after.find("r#\""), after.find('"')) {
            (Some(raw), Some(plain)) if raw < plain => (&after[raw + 3..], "\"#"),
            (_, Some(plain)) => (&after[plain + 1..], "\""),
            _ => continue,
        };
        if let Some(end) = text.find(close) {
            out.push(text[..end].replace("\\\n", " "));
        }
    }
    out
}
