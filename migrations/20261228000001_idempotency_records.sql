-- How keyed calls ended, kept for their whole 24 h where a Redis restart cannot lose them.
-- Redis holds a key while its call runs (a lease renewed every few seconds); once the call has
-- a result (done, with the result to replay) or ended with its outcome unknown
-- (indeterminate), the record is also written here. `name` is the Redis record's name (the
-- principal and a digest of the key), `record` its JSON.
CREATE TABLE idempotency_records (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name        text NOT NULL,
    record      text NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, name)
);
CREATE INDEX idempotency_records_expiry ON idempotency_records (tenant_id, expires_at);

ALTER TABLE idempotency_records ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON idempotency_records
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON idempotency_records TO otc_app;
