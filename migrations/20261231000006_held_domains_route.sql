-- Home-realm discovery routes a person's email domain to a tenant only while the tenant holds
-- the domain (proven by DNS, or listed by the operator): a domain given up, or one an admin kept
-- on its provider after losing it, routes no one.
CREATE OR REPLACE FUNCTION otc_tenant_id_by_email_domain(p_domain text) RETURNS uuid
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
        SELECT i.tenant_id FROM idp_domains i
         WHERE i.domain = lower(p_domain)
           AND EXISTS (SELECT 1 FROM tenant_domains t WHERE t.tenant_id = i.tenant_id AND t.domain = i.domain)
    $$;
-- Domains operators listed on providers before this rule are theirs.
INSERT INTO tenant_domains (tenant_id, domain, via)
SELECT i.tenant_id, i.domain, 'operator' FROM idp_domains i
 WHERE i.domain ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$'
ON CONFLICT DO NOTHING;
