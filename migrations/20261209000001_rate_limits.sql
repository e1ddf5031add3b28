-- A tenant's own rate-limit tiers: calls per minute and burst for one class of call, in place
-- of the deployment's default for that class (rate_limits.tiers). Read with the caller's
-- token, so a gateway's token cache carries them; a change moves the tenant's token generation.
CREATE TABLE tenant_rate_limits (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    class       text NOT NULL CHECK (class IN ('bulk', 'execute', 'admin', 'delete', 'write', 'read', 'sync')),
    per_minute  integer NOT NULL CHECK (per_minute BETWEEN 1 AND 1000000),
    burst       integer NOT NULL CHECK (burst BETWEEN 1 AND 1000000),
    PRIMARY KEY (tenant_id, class)
);

ALTER TABLE tenant_rate_limits ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenant_rate_limits
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON tenant_rate_limits TO otc_app;
