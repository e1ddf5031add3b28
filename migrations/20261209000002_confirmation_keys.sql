-- Each tenant's key for confirmation tokens (HMAC-SHA256): made on first use, read by every
-- gateway and by `obsidian-tc elicit`, so a token minted anywhere verifies everywhere.
CREATE TABLE tenant_keys (
    tenant_id         uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    confirmation_key  bytea NOT NULL CHECK (length(confirmation_key) = 32),
    created_at        timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE tenant_keys ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenant_keys
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
GRANT SELECT, INSERT ON tenant_keys TO otc_app;
