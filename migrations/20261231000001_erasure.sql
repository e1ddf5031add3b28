-- Deleting a vault or a tenant: it is marked deleted at once (no tool, token or job reaches it)
-- and erased after a grace period (`purge_after`) during which an admin can undo it. The
-- tenant's `erase` upkeep item is due at the earliest purge_after of what it has deleted; the
-- worker that claims it erases every row of what is due (every table of this schema with a
-- vault_id or tenant_id column, found in the catalog, so a new table cannot be forgotten), the
-- objects and the Redis keys, in bounded batches.
ALTER TABLE vaults ADD COLUMN deleted_at timestamptz, ADD COLUMN purge_after timestamptz,
    ADD CONSTRAINT vaults_deleted_purge CHECK ((deleted_at IS NULL) = (purge_after IS NULL));
ALTER TABLE tenants ADD COLUMN deleted_at timestamptz, ADD COLUMN purge_after timestamptz,
    ADD CONSTRAINT tenants_deleted_purge CHECK ((deleted_at IS NULL) = (purge_after IS NULL));

-- Up to about p_limit rows of the current tenant (p_vault NULL), or of its vault p_vault, from
-- the tables that hold them (all but tenants and vaults themselves, and upkeep_items, whose erase
-- item the erasure runs under: those go last, with the tenant's row); the rows deleted (cascades
-- not counted). Runs as the caller: row-level security keeps it to the transaction's tenant.
CREATE FUNCTION otc_erase_rows(p_vault uuid, p_limit int) RETURNS bigint
    LANGUAGE plpgsql VOLATILE SET search_path = public, pg_temp
    AS $$
    DECLARE
        t record;
        n bigint;
        total bigint := 0;
    BEGIN
        FOR t IN
            SELECT c.relname FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
             WHERE s.nspname = 'public' AND c.relkind IN ('r', 'p') AND c.relname NOT IN ('tenants', 'vaults', 'upkeep_items')
               AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND NOT a.attisdropped
                              AND a.attname = 'tenant_id')
               AND (p_vault IS NULL OR EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid
                              AND NOT a.attisdropped AND a.attname = 'vault_id'))
             ORDER BY c.relname
        LOOP
            IF p_vault IS NULL THEN
                EXECUTE format('DELETE FROM %I WHERE ctid = ANY (ARRAY(SELECT ctid FROM %I WHERE tenant_id = otc_current_tenant() LIMIT %s))',
                               t.relname, t.relname, p_limit - total);
            ELSE
                EXECUTE format('DELETE FROM %I WHERE ctid = ANY (ARRAY(SELECT ctid FROM %I WHERE tenant_id = otc_current_tenant() AND vault_id = $1 LIMIT %s))',
                               t.relname, t.relname, p_limit - total) USING p_vault;
            END IF;
            GET DIAGNOSTICS n = ROW_COUNT;
            total := total + n;
            IF total >= p_limit THEN
                RETURN total;
            END IF;
        END LOOP;
        RETURN total;
    END $$;
REVOKE ALL ON FUNCTION otc_erase_rows(uuid, int) FROM PUBLIC;
-- A tenant's sealed keys go with it (nothing else deletes them; row-level security keeps it to
-- the transaction's tenant).
GRANT DELETE ON tenant_keys TO otc_app;
GRANT EXECUTE ON FUNCTION otc_erase_rows(uuid, int) TO otc_app;

-- The job queue skips deleted vaults and the vaults of deleted tenants (their jobs wait, for an
-- undo, or go with the erasure).
CREATE OR REPLACE FUNCTION otc_due_job_vaults(p_kind text, p_limit int)
    RETURNS TABLE (tenant_id uuid, vault_id uuid)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
        SELECT j.tenant_id, j.vault_id FROM jobs j
          JOIN vaults v ON v.tenant_id = j.tenant_id AND v.id = j.vault_id AND v.deleted_at IS NULL
          JOIN tenants t ON t.id = j.tenant_id AND t.deleted_at IS NULL
         WHERE j.kind = p_kind AND j.state = 'queued' AND j.run_after <= now() AND j.vault_id IS NOT NULL
         GROUP BY j.tenant_id, j.vault_id
         ORDER BY min(j.run_after)
         LIMIT p_limit
    $$;
