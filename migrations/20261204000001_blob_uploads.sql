-- Who uploaded which content to which vault through the sync API. A commit may put content
-- its caller uploaded to that vault, or content the caller can already read there; a bare hash
-- of content held elsewhere in the tenant copies nothing and reveals nothing. Records go when
-- their blob is collected, and in the sweep once older than the blobs' grace period.
CREATE TABLE blob_uploads (
    tenant_id     uuid NOT NULL,
    vault_id      uuid NOT NULL,
    principal_id  uuid NOT NULL,
    hash          bytea NOT NULL,
    uploaded_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, vault_id, principal_id, hash),
    FOREIGN KEY (tenant_id, vault_id) REFERENCES vaults (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, principal_id) REFERENCES principals (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, hash) REFERENCES blobs (tenant_id, hash) ON DELETE CASCADE
);
CREATE INDEX blob_uploads_age ON blob_uploads (tenant_id, uploaded_at);

ALTER TABLE blob_uploads ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON blob_uploads
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON blob_uploads TO otc_app;
