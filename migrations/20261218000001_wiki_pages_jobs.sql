-- The wikis' generated pages are outbox work too (`wiki_pages` jobs, left by commit_wiki_page):
-- the operators' numbers count them beside the index and embed jobs.
CREATE OR REPLACE FUNCTION otc_outbox_stats()
    RETURNS TABLE (tenant text, kind text, queued bigint, dead bigint, oldest_queued timestamptz)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
        SELECT t.slug, k.kind,
               count(j.id) FILTER (WHERE j.state = 'queued'),
               count(j.id) FILTER (WHERE j.state = 'dead'),
               min(j.created_at) FILTER (WHERE j.state = 'queued')
          FROM tenants t
         CROSS JOIN (VALUES ('index'), ('embed'), ('wiki_pages')) AS k (kind)
          LEFT JOIN jobs j ON j.tenant_id = t.id AND j.kind = k.kind AND j.state IN ('queued', 'dead')
         WHERE coalesce(current_setting('app.tenant_id', true), '') = ''
         GROUP BY t.slug, k.kind
    $$;
REVOKE ALL ON FUNCTION otc_outbox_stats() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION otc_outbox_stats() TO otc_app;
