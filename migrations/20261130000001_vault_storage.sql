-- Vault storage: the manifest (the vault itself), the hash-chained change log, snapshots, trash,
-- the blob inventory, and the job outbox. Every table is tenant-owned and row-level secured
-- like the foundation's.

-- Per vault: the last change-log sequence and the hash at the head of the chain. Commits lock
-- this row, which serialises them per vault.
CREATE TABLE vault_heads (
    tenant_id   uuid NOT NULL,
    vault_id    uuid NOT NULL,
    seq         bigint NOT NULL DEFAULT 0,
    head_hash   bytea NOT NULL DEFAULT '\x0000000000000000000000000000000000000000000000000000000000000000',
    PRIMARY KEY (tenant_id, vault_id),
    FOREIGN KEY (tenant_id, vault_id) REFERENCES vaults (tenant_id, id) ON DELETE CASCADE
);

-- The manifest: which blob is current at each path. Paths compare bytewise ("C"), so listing
-- order and cursors are the same on every server whatever its locale.
CREATE TABLE vault_files (
    tenant_id   uuid NOT NULL,
    vault_id    uuid NOT NULL,
    path        text COLLATE "C" NOT NULL,
    blob_hash   bytea NOT NULL CHECK (length(blob_hash) = 32),
    size        bigint NOT NULL CHECK (size >= 0),
    mtime       timestamptz NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('note', 'attachment', 'canvas', 'base', 'other')),
    seq         bigint NOT NULL,
    PRIMARY KEY (tenant_id, vault_id, path),
    FOREIGN KEY (tenant_id, vault_id) REFERENCES vaults (tenant_id, id) ON DELETE CASCADE
);

-- The change log: one record per changed path, numbered per vault, each carrying the hash of
-- the record before it, so any edit of history breaks the chain.
CREATE TABLE change_log (
    tenant_id     uuid NOT NULL,
    vault_id      uuid NOT NULL,
    seq           bigint NOT NULL,
    commit_id     uuid NOT NULL,
    path          text COLLATE "C" NOT NULL,
    op            text NOT NULL CHECK (op IN ('create', 'update', 'delete')),
    old_hash      bytea,
    new_hash      bytea,
    size          bigint,
    mtime         timestamptz,
    principal_id  uuid,
    tool          text,
    client_name   text,
    client_model  text,
    committed_at  timestamptz NOT NULL DEFAULT now(),
    prev_hash     bytea NOT NULL,
    record_hash   bytea NOT NULL,
    PRIMARY KEY (tenant_id, vault_id, seq),
    FOREIGN KEY (tenant_id, vault_id) REFERENCES vaults (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX change_log_path ON change_log (tenant_id, vault_id, path, seq);
-- Downloads by hash check the vault ever held the content.
CREATE INDEX change_log_new_hash ON change_log (tenant_id, vault_id, new_hash);

-- Pre-images kept for restore: the content a change replaced or removed.
CREATE TABLE snapshots (
    tenant_id   uuid NOT NULL,
    vault_id    uuid NOT NULL,
    id          uuid NOT NULL,
    path        text COLLATE "C" NOT NULL,
    blob_hash   bytea NOT NULL,
    size        bigint NOT NULL,
    seq         bigint NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, vault_id, id),
    FOREIGN KEY (tenant_id, vault_id) REFERENCES vaults (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX snapshots_path ON snapshots (tenant_id, vault_id, path, created_at DESC);

-- Deleted files stay recoverable, as in Obsidian's .trash.
CREATE TABLE trash (
    tenant_id      uuid NOT NULL,
    vault_id       uuid NOT NULL,
    id             uuid NOT NULL,
    original_path  text COLLATE "C" NOT NULL,
    blob_hash      bytea NOT NULL,
    size           bigint NOT NULL,
    seq            bigint NOT NULL,
    deleted_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, vault_id, id),
    FOREIGN KEY (tenant_id, vault_id) REFERENCES vaults (tenant_id, id) ON DELETE CASCADE
);

-- Every blob uploaded for a tenant: what garbage collection weighs against the references.
CREATE TABLE blobs (
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    hash         bytea NOT NULL CHECK (length(hash) = 32),
    size         bigint NOT NULL,
    uploaded_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, hash)
);

-- The transactional outbox: work that follows a commit, written in the commit's transaction.
CREATE TABLE jobs (
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id           bigint GENERATED ALWAYS AS IDENTITY,
    vault_id     uuid,
    kind         text NOT NULL,
    payload      jsonb NOT NULL DEFAULT '{}',
    state        text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'done', 'dead')),
    attempts     int NOT NULL DEFAULT 0,
    run_after    timestamptz NOT NULL DEFAULT now(),
    last_error   text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX jobs_ready ON jobs (state, run_after) WHERE state = 'queued';

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['vault_heads', 'vault_files', 'change_log', 'snapshots', 'trash', 'blobs', 'jobs'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant())',
            t);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO otc_app', t);
    END LOOP;
END
$$;

-- Reconcile mode: what was last imported from each plain object under a vault's configured
-- prefix, so unchanged objects are not read again.
CREATE TABLE reconcile_state (
    tenant_id   uuid NOT NULL,
    vault_id    uuid NOT NULL,
    path        text COLLATE "C" NOT NULL,
    size        bigint NOT NULL,
    modified    timestamptz NOT NULL,
    e_tag       text,
    blob_hash   bytea NOT NULL,
    PRIMARY KEY (tenant_id, vault_id, path),
    FOREIGN KEY (tenant_id, vault_id) REFERENCES vaults (tenant_id, id) ON DELETE CASCADE
);
ALTER TABLE reconcile_state ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON reconcile_state
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON reconcile_state TO otc_app;
