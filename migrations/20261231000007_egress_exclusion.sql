-- Egress exclusion: the tenant's own globs of notes whose text never leaves for a model (an
-- embedding provider, a judge, a chat endpoint), beside the deployment's egress.exclude_paths.
ALTER TABLE tenant_policies
    ADD COLUMN egress_exclude_paths text[] NOT NULL DEFAULT '{}'
        CHECK (cardinality(egress_exclude_paths) <= 100);
