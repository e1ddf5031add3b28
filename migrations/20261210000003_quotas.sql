-- Quotas per tenant: storage (bytes of the tenant's stored contents, snapshots and trash
-- included), notes (Markdown files across its vaults, outside the .trash/ folder), and uploads in flight (counted in Redis).
-- A NULL column takes the deployment's default (quotas.*). What is used is kept as the changes
-- happen: tenant_usage.storage_bytes by the blob inventory's inserts and deletions, and
-- vault_heads.notes by each commit, under the vault's head lock.
CREATE TABLE tenant_quotas (
    tenant_id               uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    storage_bytes           bigint CHECK (storage_bytes > 0),
    notes                   bigint CHECK (notes > 0),
    concurrent_uploads      bigint CHECK (concurrent_uploads > 0),
    upload_bytes_in_flight  bigint CHECK (upload_bytes_in_flight > 0)
);

CREATE TABLE tenant_usage (
    tenant_id      uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    storage_bytes  bigint NOT NULL DEFAULT 0
);
INSERT INTO tenant_usage (tenant_id, storage_bytes)
    SELECT t.id, coalesce((SELECT sum(b.size) FROM blobs b WHERE b.tenant_id = t.id), 0) FROM tenants t;

ALTER TABLE vault_heads ADD COLUMN notes bigint NOT NULL DEFAULT 0;
UPDATE vault_heads h SET notes = (SELECT count(*) FROM vault_files f
                                   WHERE f.tenant_id = h.tenant_id AND f.vault_id = h.vault_id AND f.kind = 'note'
                                     AND f.path NOT LIKE '.trash/%');

ALTER TABLE tenant_quotas ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenant_quotas
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
ALTER TABLE tenant_usage ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenant_usage
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON tenant_quotas, tenant_usage TO otc_app;
