-- A tenant's claim on an email domain before it is proven: the challenge its DNS must publish
-- (a TXT record `_obsidian-tc-challenge.<domain>` holding `obsidian-tc-verify=<token>`). Once
-- proven the domain joins tenant_domains (via 'dns'), where one tenant at most holds it, and
-- only then serves home-realm discovery and SCIM.
CREATE TABLE domain_claims (
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    domain     text NOT NULL CHECK (domain ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$'),
    token      text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, domain)
);
ALTER TABLE domain_claims ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON domain_claims
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON domain_claims TO otc_app;
