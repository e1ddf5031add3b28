-- Usage metering per tenant and day (UTC): counters the audit writer adds to in the same
-- transaction as the records it writes (calls by rate-limit class and outcome, uploads), so
-- they agree with the trail. Kept apart from the trail: the trail's retention does not shorten
-- them. Embedding and model usage have their own per-day tables (embedding_usage, llm_usage).
CREATE TABLE tenant_usage_daily (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    day       date NOT NULL,
    metric    text NOT NULL,
    key       text NOT NULL,
    value     bigint NOT NULL,
    PRIMARY KEY (tenant_id, day, metric, key)
);
ALTER TABLE tenant_usage_daily ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenant_usage_daily
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON tenant_usage_daily TO otc_app;
