-- Operators' numbers: each tenant's outbox work by kind (queued, dead, age of the oldest queued
-- job), counts only, for the workers' metrics. Every tenant has a row per kind, zeros included,
-- so an idle tenant reads 0 rather than nothing. No row content leaves the function, and it
-- answers nothing inside a tenant's transaction (only the workers' untenanted reads use it).
CREATE INDEX jobs_dead ON jobs (tenant_id, kind) WHERE state = 'dead';

CREATE FUNCTION otc_outbox_stats()
    RETURNS TABLE (tenant text, kind text, queued bigint, dead bigint, oldest_queued timestamptz)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
        SELECT t.slug, k.kind,
               count(j.id) FILTER (WHERE j.state = 'queued'),
               count(j.id) FILTER (WHERE j.state = 'dead'),
               min(j.created_at) FILTER (WHERE j.state = 'queued')
          FROM tenants t
         CROSS JOIN (VALUES ('index'), ('embed')) AS k (kind)
          LEFT JOIN jobs j ON j.tenant_id = t.id AND j.kind = k.kind AND j.state IN ('queued', 'dead')
         WHERE coalesce(current_setting('app.tenant_id', true), '') = ''
         GROUP BY t.slug, k.kind
    $$;
REVOKE ALL ON FUNCTION otc_outbox_stats() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION otc_outbox_stats() TO otc_app;
