-- Background upkeep as claimable units: one row per tenant and kind of periodic work (today the
-- sweep: dead tokens and secrets, the audit trail past its retention, snapshots past the limit,
-- forgotten uploads, unreferenced blobs), due at `due_at`. Any worker claims the due ones
-- through the (kind, due_at) index, SKIP LOCKED, oldest first; holds its claim by moving
-- `claimed_until` on while it works; and hands the item back with its next due time. A claim
-- whose worker died lapses and another worker takes the item. Nothing visits a tenant between
-- its due times.
CREATE TABLE upkeep_items (
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    kind          text NOT NULL,
    due_at        timestamptz NOT NULL DEFAULT now(),
    -- The claim that holds the item (a fresh id each time it is claimed) and until when.
    claim         uuid,
    claimed_until timestamptz,
    runs          bigint NOT NULL DEFAULT 0,
    last_error    text,
    PRIMARY KEY (tenant_id, kind)
);
CREATE INDEX upkeep_items_due ON upkeep_items (kind, due_at);

ALTER TABLE upkeep_items ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON upkeep_items
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON upkeep_items TO otc_app;

-- Every tenant has its sweep, due at once; a new tenant gets one as it is made.
INSERT INTO upkeep_items (tenant_id, kind) SELECT id, 'sweep' FROM tenants;
CREATE FUNCTION otc_tenant_upkeep() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
    AS $$ BEGIN
        INSERT INTO upkeep_items (tenant_id, kind) VALUES (NEW.id, 'sweep') ON CONFLICT DO NOTHING;
        RETURN NEW;
    END $$;
REVOKE ALL ON FUNCTION otc_tenant_upkeep() FROM PUBLIC;
CREATE TRIGGER tenants_upkeep AFTER INSERT ON tenants FOR EACH ROW EXECUTE FUNCTION otc_tenant_upkeep();

-- Claims up to `p_limit` due items of `p_kind` across tenants for `p_hold`, under the claim id
-- `p_claim`: the tenants' ids. The one upkeep query that spans tenants, through the index.
CREATE FUNCTION otc_claim_upkeep(p_kind text, p_claim uuid, p_limit int, p_hold interval) RETURNS SETOF uuid
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$
        UPDATE upkeep_items u SET claim = p_claim, claimed_until = now() + p_hold
          FROM (SELECT tenant_id FROM upkeep_items
                 WHERE kind = p_kind AND due_at <= now()
                   AND (claimed_until IS NULL OR claimed_until < now())
                 ORDER BY due_at
                 LIMIT p_limit
                 FOR UPDATE SKIP LOCKED) due
         WHERE u.tenant_id = due.tenant_id AND u.kind = p_kind
        RETURNING u.tenant_id
    $$;
REVOKE ALL ON FUNCTION otc_claim_upkeep(text, uuid, int, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION otc_claim_upkeep(text, uuid, int, interval) TO otc_app;

-- The garbage collector's question, "which of this tenant's blobs does nothing name?", asked
-- of each table that names blobs by their hash within the tenant.
CREATE INDEX vault_files_by_tenant_hash ON vault_files (tenant_id, blob_hash);
CREATE INDEX snapshots_by_hash ON snapshots (tenant_id, blob_hash);
CREATE INDEX trash_by_hash ON trash (tenant_id, blob_hash);
CREATE INDEX blobs_by_age ON blobs (tenant_id, uploaded_at);
