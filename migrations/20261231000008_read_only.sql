-- Read-only modes (spec codes read_only and read_only_mode): for maintenance and legal holds,
-- writes are refused while a hold is on, reads are unaffected. Three levels: the whole
-- deployment (the operator's, one row at most, no tenant's data), a tenant and a vault. A hold
-- is on while its `since` is set; its reason is what a refused caller is told. A tenant's or a
-- vault's hold says who put it on: one the operator put on (a legal hold, say) is lifted only by
-- the operator, never by the tenant's own admins.
CREATE TABLE server_read_only (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    reason     text CHECK (length(reason) <= 500),
    since      timestamptz NOT NULL DEFAULT now()
);
GRANT SELECT, INSERT, UPDATE, DELETE ON server_read_only TO otc_app;

ALTER TABLE tenant_policies
    ADD COLUMN read_only_since  timestamptz,
    ADD COLUMN read_only_reason text CHECK (length(read_only_reason) <= 500),
    ADD COLUMN read_only_by     text CHECK (read_only_by IN ('operator', 'tenant')),
    ADD CONSTRAINT tenant_policies_read_only_by CHECK ((read_only_since IS NULL) = (read_only_by IS NULL));

ALTER TABLE vaults
    ADD COLUMN read_only_since  timestamptz,
    ADD COLUMN read_only_reason text CHECK (length(read_only_reason) <= 500),
    ADD COLUMN read_only_by     text CHECK (read_only_by IN ('operator', 'tenant')),
    ADD CONSTRAINT vaults_read_only_by CHECK ((read_only_since IS NULL) = (read_only_by IS NULL));

-- A gateway reads its tenants' held vaults once a second at most, from this index alone.
CREATE INDEX vaults_read_only ON vaults (tenant_id) WHERE read_only_since IS NOT NULL AND deleted_at IS NULL;
