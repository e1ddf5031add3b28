-- Knowledge upkeep. knowledge_gaps: the gap detector's findings, one row per vault, principal
-- and normalised query, refreshed by every retrieval tool call that runs the query (a gap: no
-- chunk answered it directly, or only weakly by meaning). A query is its asker's: others see it
-- only with admin:workspace. contradictions: statements of two notes
-- that a model judged contradictory, open until a later check of the changed notes resolves them.
CREATE TABLE knowledge_gaps (
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    vault_id     uuid NOT NULL,
    id           uuid NOT NULL,
    principal_id uuid NOT NULL,
    query_norm   text NOT NULL,
    query        text NOT NULL,
    top_score    double precision,
    gap          boolean NOT NULL,
    -- The best hits' paths (results) and, for a gap, the nearest weak ones.
    results      jsonb NOT NULL DEFAULT '[]',
    nearest      jsonb NOT NULL DEFAULT '[]',
    runs         integer NOT NULL DEFAULT 1,
    first_at     timestamptz NOT NULL DEFAULT now(),
    last_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, vault_id, principal_id, query_norm),
    FOREIGN KEY (tenant_id, vault_id) REFERENCES vaults (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX knowledge_gaps_recent ON knowledge_gaps (tenant_id, vault_id, last_at DESC);

CREATE TABLE contradictions (
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    vault_id      uuid NOT NULL,
    id            uuid NOT NULL,
    path_a        text NOT NULL,
    path_b        text NOT NULL,
    -- The notes' content when the finding was made.
    hash_a        text NOT NULL,
    hash_b        text NOT NULL,
    statement_a   text NOT NULL,
    statement_b   text NOT NULL,
    rationale     text NOT NULL,
    model         text NOT NULL,
    status        text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')),
    detected_at   timestamptz NOT NULL DEFAULT now(),
    resolved_at   timestamptz,
    resolution    text,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, vault_id) REFERENCES vaults (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX contradictions_paths ON contradictions (tenant_id, vault_id, status, path_a, path_b);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['knowledge_gaps', 'contradictions'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant())',
            t);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO otc_app', t);
    END LOOP;
END $$;
