-- The capture inbox: material an agent captured, waiting for review before it becomes a note.
-- Secrets are redacted before a row is written; text that tries to take over a reader's
-- instructions is kept quarantined (poison_assessment 'poisoned') and can never be committed.
-- status moves queued -> committing (one committer wins) -> committed, or back to queued when
-- the write fails; a committed capture may be removed from the queue.
CREATE TABLE capture_queue (
    tenant_id          uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    vault_id           uuid NOT NULL,
    id                 uuid NOT NULL,
    content            text NOT NULL,
    title              text,
    tags               text[] NOT NULL DEFAULT '{}',
    source             text,
    target_path_hint   text,
    status             text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'committing', 'committed')),
    -- none, suspect (signs worth a look) or poisoned (quarantined: never committed).
    poison_assessment  text NOT NULL CHECK (poison_assessment IN ('none', 'suspect', 'poisoned')),
    poison_signals     text[] NOT NULL DEFAULT '{}',
    redactions         text[] NOT NULL DEFAULT '{}',
    -- SHA-256 of the stored content: what a commit compares against.
    content_hash       text NOT NULL,
    committed_path     text,
    committed_at       timestamptz,
    created_by         uuid,
    created_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, vault_id) REFERENCES vaults (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX capture_queue_listing ON capture_queue (tenant_id, vault_id, created_at DESC);

ALTER TABLE capture_queue ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON capture_queue
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON capture_queue TO otc_app;
