-- Reads on the hottest path (read_note and its kin) in one round trip instead of three
-- (BEGIN with the tenant settings, the query, COMMIT). The function takes the same role and
-- tenant setting a tenant transaction does, then queries under row-level security like any
-- other tenant query. Called outside an explicit transaction, the statement is its own
-- transaction, so both settings end with it.
--
-- SECURITY INVOKER on purpose: it runs as the caller, and the row-level security policies,
-- not the function, decide what is visible.
CREATE FUNCTION otc_read_file(p_tenant uuid, p_vault uuid, p_path text)
RETURNS TABLE (path text, blob_hash bytea, size bigint, mtime timestamptz, kind text, seq bigint)
LANGUAGE plpgsql SECURITY INVOKER AS $$
BEGIN
    PERFORM set_config('role', 'otc_app', true), set_config('app.tenant_id', p_tenant::text, true);
    RETURN QUERY
        SELECT f.path::text, f.blob_hash, f.size, f.mtime, f.kind, f.seq
          FROM vault_files f
         WHERE f.tenant_id = p_tenant AND f.vault_id = p_vault AND f.path = p_path;
END $$;

REVOKE ALL ON FUNCTION otc_read_file(uuid, uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION otc_read_file(uuid, uuid, text) TO otc_app;
