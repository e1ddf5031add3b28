-- Agents' work sessions and goals, per tenant and vault under row-level security. A session is
-- one caller's (the principal that started it); its traces are that principal's audit records
-- between its start and end. Goals stay open until closed, done or abandoned.
CREATE TABLE work_sessions (
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    vault_id      uuid NOT NULL,
    id            uuid NOT NULL,
    principal_id  uuid NOT NULL,
    -- The client or agent as it names itself.
    caller        text NOT NULL,
    metadata      jsonb NOT NULL DEFAULT '{}',
    started_at    timestamptz NOT NULL DEFAULT now(),
    ended_at      timestamptz,
    end_metadata  jsonb,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, vault_id) REFERENCES vaults (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX work_sessions_recent ON work_sessions (tenant_id, vault_id, started_at DESC);

CREATE TABLE goals (
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    vault_id     uuid NOT NULL,
    id           uuid NOT NULL,
    text         text NOT NULL,
    target_date  date,
    status       text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'done', 'abandoned')),
    created_by   uuid,
    created_at   timestamptz NOT NULL DEFAULT now(),
    closed_at    timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, vault_id) REFERENCES vaults (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX goals_listing ON goals (tenant_id, vault_id, status, created_at DESC);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['work_sessions', 'goals'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant())',
            t);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO otc_app', t);
    END LOOP;
END $$;
