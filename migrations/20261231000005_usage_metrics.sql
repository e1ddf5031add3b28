-- Today's usage of every tenant that used anything today, for the Prometheus gauges the
-- workers' metrics loop reads (one query per interval; the gauges name the busiest tenants and
-- sum the rest). Counts only, by tenant slug: calls by class and result, uploads, embedding
-- and model tokens, model cost, and what the tenant stores. Callable with no tenant set only.
CREATE INDEX tenant_usage_daily_day ON tenant_usage_daily (day);
CREATE INDEX embedding_usage_day ON embedding_usage (day);
CREATE INDEX llm_usage_day ON llm_usage (day);

CREATE FUNCTION otc_usage_today(today date)
    RETURNS TABLE (tenant text, metric text, key text, value double precision)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
        WITH active AS (
            SELECT tenant_id, metric, key, value::float8 AS value FROM tenant_usage_daily WHERE day = today
            UNION ALL
            SELECT tenant_id, 'embedding_tokens', '', sum(tokens)::float8 FROM embedding_usage WHERE day = today
             GROUP BY tenant_id
            UNION ALL
            SELECT tenant_id, 'embedding_texts', '', sum(embedded)::float8 FROM embedding_usage WHERE day = today
             GROUP BY tenant_id
            UNION ALL
            SELECT tenant_id, 'model_tokens', '', sum(prompt_tokens + completion_tokens)::float8
              FROM llm_usage WHERE day = today GROUP BY tenant_id
            UNION ALL
            SELECT tenant_id, 'model_cost_usd', '', sum(cost_usd)::float8 FROM llm_usage WHERE day = today
             GROUP BY tenant_id
        )
        SELECT t.slug, u.metric, u.key, u.value
          FROM active u JOIN tenants t ON t.id = u.tenant_id
         WHERE coalesce(current_setting('app.tenant_id', true), '') = ''
        UNION ALL
        SELECT t.slug, 'storage_bytes', '', s.storage_bytes::float8
          FROM tenant_usage s JOIN tenants t ON t.id = s.tenant_id
         WHERE s.tenant_id IN (SELECT tenant_id FROM active)
           AND coalesce(current_setting('app.tenant_id', true), '') = ''
    $$;
REVOKE ALL ON FUNCTION otc_usage_today(date) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION otc_usage_today(date) TO otc_app;
