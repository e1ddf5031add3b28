-- Entity memory: facts about people, projects and things an agent keeps across sessions, per
-- tenant and vault under row-level security like every tenant table. An observation holds
-- while valid_from <= t < valid_to (valid_to NULL: still holds); a changed fact closes the old
-- observation (valid_to, superseded_by) instead of overwriting it, so "as of" questions keep
-- their answer. Keys compared case-insensitively are stored lower-cased (type_key, name_key):
-- a computed key is never an index condition under row-level security (see
-- 20261207000002_clash_key_column.sql).
CREATE TABLE memory_entities (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    vault_id    uuid NOT NULL,
    id          uuid NOT NULL,
    type        text NOT NULL,
    name        text NOT NULL,
    type_key    text COLLATE "C" NOT NULL,
    name_key    text COLLATE "C" NOT NULL,
    -- active, archived (kept, out of the way), deleted (soft-deleted: answered as missing).
    status      text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived', 'deleted')),
    -- The note the entity is mirrored to, when it is.
    note_path   text COLLATE "C",
    created_by  uuid,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, vault_id) REFERENCES vaults (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX memory_entities_name ON memory_entities (tenant_id, vault_id, type_key, name_key)
    WHERE status <> 'deleted';

CREATE TABLE memory_observations (
    tenant_id      uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    vault_id       uuid NOT NULL,
    id             uuid NOT NULL,
    entity_id      uuid NOT NULL,
    -- Observations with a key are one fact over time: a new one closes the current one.
    key            text,
    text           text NOT NULL,
    valid_from     timestamptz NOT NULL,
    valid_to       timestamptz,
    superseded_by  uuid,
    -- Retired by hand (no successor).
    retired        boolean NOT NULL DEFAULT false,
    created_by     uuid,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, entity_id) REFERENCES memory_entities (tenant_id, id) ON DELETE CASCADE,
    CHECK (valid_to IS NULL OR valid_to >= valid_from)
);
CREATE INDEX memory_observations_entity ON memory_observations (tenant_id, entity_id, valid_from);

CREATE TABLE memory_relations (
    tenant_id      uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    vault_id       uuid NOT NULL,
    source_id      uuid NOT NULL,
    target_id      uuid NOT NULL,
    relation_type  text NOT NULL,
    created_by     uuid,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, source_id, relation_type, target_id),
    FOREIGN KEY (tenant_id, source_id) REFERENCES memory_entities (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, target_id) REFERENCES memory_entities (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX memory_relations_target ON memory_relations (tenant_id, target_id);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memory_entities', 'memory_observations', 'memory_relations'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant())',
            t);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO otc_app', t);
    END LOOP;
END $$;
