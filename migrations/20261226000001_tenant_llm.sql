-- Each tenant's own OpenAI-compatible chat endpoint for the model-backed tools (reflect,
-- knowledge_challenge, the contradiction detector), its key sealed under the deployment's secret
-- key, and what the calls cost per day and purpose. A call is counted before it is sent (a
-- failed one too), so the daily cap holds across gateways and workers.
CREATE TABLE tenant_llm (
    tenant_id                 uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    base_url                  text NOT NULL,
    model                     text NOT NULL,
    sealed_api_key            bytea,
    daily_cap                 integer NOT NULL CHECK (daily_cap >= 0),
    -- US dollars per million tokens.
    prompt_cost_per_mtok      double precision NOT NULL DEFAULT 0,
    completion_cost_per_mtok  double precision NOT NULL DEFAULT 0,
    updated_at                timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE llm_usage (
    tenant_id          uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    day                date NOT NULL,
    purpose            text NOT NULL,
    calls              integer NOT NULL DEFAULT 0,
    failed             integer NOT NULL DEFAULT 0,
    prompt_tokens      bigint NOT NULL DEFAULT 0,
    completion_tokens  bigint NOT NULL DEFAULT 0,
    cost_usd           double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, day, purpose)
);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['tenant_llm', 'llm_usage'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant())',
            t);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO otc_app', t);
    END LOOP;
END $$;
