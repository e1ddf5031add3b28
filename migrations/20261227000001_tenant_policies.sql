-- What a tenant's admin and the deployment's operator decide for one tenant, beside the
-- deployment's configuration.
--
-- tenant_policies: the OAuth clients (client_id: a registered id or a metadata document URL)
-- whose own person may confirm a destructive call in the client (MCP elicitation). The
-- deployment lets none by default (mcp.confirm_in_client = false): a client that answers its
-- own confirmation is trusted to have shown the question to a person.
CREATE TABLE tenant_policies (
    tenant_id                  uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    confirm_in_client_clients  text[] NOT NULL DEFAULT '{}'
                               CHECK (cardinality(confirm_in_client_clients) <= 50),
    updated_at                 timestamptz NOT NULL DEFAULT now()
);

-- tenant_domains: the email domains a tenant's people may have, listed by an operator (or, once
-- the tenant lifecycle lands, proven by the tenant). A directory (SCIM) provisions only users
-- whose email is in one of them; a domain belongs to one tenant at most.
CREATE TABLE tenant_domains (
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    domain     text NOT NULL CHECK (domain ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$'),
    via        text NOT NULL CHECK (via IN ('operator', 'dns')),
    added_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, domain)
);
CREATE UNIQUE INDEX tenant_domains_one_tenant ON tenant_domains (domain);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['tenant_policies', 'tenant_domains'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant())',
            t);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO otc_app', t);
    END LOOP;
END $$;
