-- The audit trail: one record per tool call and per /v1 request, written by the gateways in
-- batches. Kept per tenant for tenants.audit_retention_days (NULL: the deployment's
-- audit.retention_days); the worker's sweep deletes older records. A record keeps the
-- principal's id and name as they were, with no foreign key, so it outlives the principal.
CREATE TABLE audit_log (
    tenant_id       uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id              uuid NOT NULL,
    at              timestamptz NOT NULL,
    principal_id    uuid,
    principal_name  text,
    client_name     text,
    -- mcp (with the surface: mcp, mcp/triad, …) or v1.
    surface         text NOT NULL,
    -- The tool's name, or the /v1 method and route ("PUT /v1/acl").
    action          text NOT NULL,
    vault           text,
    -- The paths the call named (at most 20, each cut to 512 bytes).
    paths           jsonb NOT NULL DEFAULT '[]',
    -- ok, or the error code it answered.
    outcome         text NOT NULL,
    duration_us     bigint NOT NULL CHECK (duration_us >= 0),
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX audit_log_by_time ON audit_log (tenant_id, at);

ALTER TABLE tenants ADD COLUMN audit_retention_days integer
    CHECK (audit_retention_days BETWEEN 1 AND 3650);

ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON audit_log
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
GRANT SELECT, INSERT, DELETE ON audit_log TO otc_app;
