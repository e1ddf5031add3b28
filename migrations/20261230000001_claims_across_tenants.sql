-- Job claiming independent of the tenant count: one query finds the vaults with due outbox jobs
-- of a kind across tenants, each vault once however many jobs it holds, the longest-waiting
-- first (a vault with 10,000 queued jobs gets one batch a pass, as does one with 1). It replaces
-- the list of tenants with due jobs that each worker then asked, tenant by tenant, every poll.
CREATE INDEX jobs_due_by_kind ON jobs (kind, run_after, tenant_id, vault_id)
    WHERE state = 'queued' AND vault_id IS NOT NULL;
CREATE FUNCTION otc_due_job_vaults(p_kind text, p_limit int)
    RETURNS TABLE (tenant_id uuid, vault_id uuid)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
        SELECT j.tenant_id, j.vault_id FROM jobs j
         WHERE j.kind = p_kind AND j.state = 'queued' AND j.run_after <= now() AND j.vault_id IS NOT NULL
         GROUP BY j.tenant_id, j.vault_id
         ORDER BY min(j.run_after)
         LIMIT p_limit
    $$;
REVOKE ALL ON FUNCTION otc_due_job_vaults(text, int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION otc_due_job_vaults(text, int) TO otc_app;
DROP FUNCTION otc_tenants_with_due_jobs();

-- Upkeep of several kinds, some periodic (the sweep), some asked for by an event (a vault whose
-- full-text segments need merging): a worker claims the due items of the kinds it runs, oldest
-- due first, through the (kind, due_at) index. `claimed_at` is when the claim was taken: an
-- item asked for again while it ran (due_at moved past claimed_at) stays due when handed back.
-- An event's item that has nothing more to do is due at 'infinity'.
ALTER TABLE upkeep_items ADD COLUMN claimed_at timestamptz;
CREATE FUNCTION otc_claim_upkeep_of(p_kinds text[], p_claim uuid, p_limit int, p_hold interval)
    RETURNS TABLE (tenant_id uuid, kind text)
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
        UPDATE upkeep_items u SET claim = p_claim, claimed_until = now() + p_hold, claimed_at = now()
          FROM (SELECT i.tenant_id, i.kind FROM upkeep_items i
                 WHERE i.due_at <= now() AND i.kind = ANY (p_kinds)
                   AND (i.claimed_until IS NULL OR i.claimed_until < now())
                 ORDER BY i.due_at
                 LIMIT p_limit
                 FOR UPDATE SKIP LOCKED) due
         WHERE u.tenant_id = due.tenant_id AND u.kind = due.kind
        RETURNING u.tenant_id, u.kind
    $$;
REVOKE ALL ON FUNCTION otc_claim_upkeep_of(text[], uuid, int, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION otc_claim_upkeep_of(text[], uuid, int, interval) TO otc_app;
DROP FUNCTION otc_claim_upkeep(text, uuid, int, interval);

-- Every tenant has its embedding upkeep and its scheduled wiki upkeep (lint, generated pages,
-- the contradiction detector) too, each claimed only by workers configured to run it.
INSERT INTO upkeep_items (tenant_id, kind)
    SELECT id, k FROM tenants, unnest(ARRAY['embedding', 'wiki_lint', 'wiki_pages', 'contradictions']) AS k;
CREATE OR REPLACE FUNCTION otc_tenant_upkeep() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
    AS $$ BEGIN
        INSERT INTO upkeep_items (tenant_id, kind)
            SELECT NEW.id, k FROM unnest(ARRAY['sweep', 'embedding', 'wiki_lint', 'wiki_pages', 'contradictions']) AS k
            ON CONFLICT DO NOTHING;
        RETURN NEW;
    END $$;

-- The tenants with a vault that has no embedding set for `p_model`: asked once, when a worker
-- starts with that model (a provider just configured, a model changed), so their embedding
-- upkeep runs at once rather than at its next due time.
CREATE FUNCTION otc_tenants_lacking_model(p_model text) RETURNS SETOF uuid
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
        SELECT DISTINCT v.tenant_id FROM vaults v
         WHERE NOT EXISTS (SELECT 1 FROM vault_embeddings m
                            WHERE m.tenant_id = v.tenant_id AND m.vault_id = v.id AND m.model = p_model)
    $$;
REVOKE ALL ON FUNCTION otc_tenants_lacking_model(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION otc_tenants_lacking_model(text) TO otc_app;
