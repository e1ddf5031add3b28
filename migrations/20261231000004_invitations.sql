-- Invitations: an operator (or a sign-up flow) makes a tenant with an invitation for its first
-- admin, who accepts it without any operator's hands and gets an admin token to configure the
-- identity provider, prove the organisation's domains and make vaults. Single use (accepted_at
-- set once, atomically), expiring; only the code's hash is kept.
CREATE TABLE invitations (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id          uuid NOT NULL,
    email       text NOT NULL CHECK (length(email) BETWEEN 3 AND 320),
    code_hash   bytea NOT NULL UNIQUE,
    scopes      text[] NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    accepted_at timestamptz,
    PRIMARY KEY (tenant_id, id)
);
ALTER TABLE invitations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON invitations
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON invitations TO otc_app;
