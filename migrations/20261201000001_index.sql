-- The vault index: what the indexer derives from the manifest's notes (parsed by otc-parser),
-- kept per tenant and vault like everything else. Rows are derived data: a full rebuild
-- (index_vault) writes them all again from the manifest.

-- The commit that wrote a job: its vault sequence, so the index knows how far it has got.
ALTER TABLE jobs ADD COLUMN seq bigint;
CREATE INDEX jobs_vault_queued ON jobs (tenant_id, vault_id, id) WHERE state = 'queued';

-- Per vault: how far the index has got, and when it was last rebuilt in full. Indexing takes
-- this row's lock, so one indexer at a time works on a vault (link resolution needs the
-- whole vault's names to hold still).
CREATE TABLE index_state (
    tenant_id     uuid NOT NULL,
    vault_id      uuid NOT NULL,
    indexed_seq   bigint NOT NULL DEFAULT 0,
    rebuilt_at    timestamptz,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, vault_id),
    FOREIGN KEY (tenant_id, vault_id) REFERENCES vaults (tenant_id, id) ON DELETE CASCADE
);

-- Every file of the vault as the index last saw it (notes and attachments: both are link
-- targets). name_key is the lower-cased file name, the key Obsidian looks link targets up by.
CREATE TABLE index_files (
    tenant_id   uuid NOT NULL,
    vault_id    uuid NOT NULL,
    path        text COLLATE "C" NOT NULL,
    name_key    text NOT NULL,
    kind        text NOT NULL,
    blob_hash   bytea NOT NULL,
    size        bigint NOT NULL,
    mtime       timestamptz NOT NULL,
    -- In Obsidian's Excluded files (.obsidian/app.json userIgnoreFilters): still a link
    -- target, kept out of search.
    excluded    boolean NOT NULL DEFAULT false,
    PRIMARY KEY (tenant_id, vault_id, path),
    FOREIGN KEY (tenant_id, vault_id) REFERENCES vaults (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX index_files_name ON index_files (tenant_id, vault_id, name_key);

-- One row per markdown note.
CREATE TABLE notes (
    tenant_id          uuid NOT NULL,
    vault_id           uuid NOT NULL,
    path               text COLLATE "C" NOT NULL,
    title              text NOT NULL,
    aliases            text[] NOT NULL DEFAULT '{}',
    frontmatter        jsonb,
    frontmatter_error  text,
    tags               text[] NOT NULL DEFAULT '{}',
    headings           jsonb NOT NULL DEFAULT '[]',
    blocks             jsonb NOT NULL DEFAULT '[]',
    -- The 0-based line where the body starts (after the frontmatter): body links count lines
    -- from there.
    body_line          int NOT NULL DEFAULT 0,
    size               bigint NOT NULL,
    mtime              timestamptz NOT NULL,
    -- The manifest's hash for the path, and the hash of the text these rows were parsed from.
    content_hash       bytea NOT NULL,
    indexed_hash       bytea NOT NULL,
    indexed_at         timestamptz NOT NULL DEFAULT now(),
    warnings           text[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (tenant_id, vault_id, path),
    FOREIGN KEY (tenant_id, vault_id, path) REFERENCES index_files (tenant_id, vault_id, path) ON DELETE CASCADE
);

-- Links, embeds and property links, in file order per note. resolved_path is NULL for an
-- unresolved link; a link into the same note ([[#Heading]]) resolves to its own note.
CREATE TABLE links (
    tenant_id      uuid NOT NULL,
    vault_id       uuid NOT NULL,
    source_path    text COLLATE "C" NOT NULL,
    ord            int NOT NULL,
    kind           text NOT NULL CHECK (kind IN ('body', 'embed', 'property')),
    wiki           boolean NOT NULL,
    raw            text NOT NULL,
    target         text NOT NULL,
    -- The lower-cased file name the target is looked up by ('' for a same-note link).
    name_key       text NOT NULL,
    resolved_path  text COLLATE "C",
    subpath_kind   text CHECK (subpath_kind IN ('heading', 'block')),
    subpath        text,
    alias          text,
    property       text,
    start_offset   int NOT NULL,
    end_offset     int NOT NULL,
    line           int NOT NULL,
    col            int NOT NULL,
    PRIMARY KEY (tenant_id, vault_id, source_path, ord),
    FOREIGN KEY (tenant_id, vault_id, source_path) REFERENCES notes (tenant_id, vault_id, path) ON DELETE CASCADE
);
CREATE INDEX links_resolved ON links (tenant_id, vault_id, resolved_path);
CREATE INDEX links_name ON links (tenant_id, vault_id, name_key);

-- Tags, inline and from frontmatter, per occurrence. tag_key is lower-cased (Obsidian's tags
-- are case-insensitive).
CREATE TABLE note_tags (
    tenant_id     uuid NOT NULL,
    vault_id      uuid NOT NULL,
    path          text COLLATE "C" NOT NULL,
    ord           int NOT NULL,
    tag           text NOT NULL,
    tag_key       text NOT NULL,
    source        text NOT NULL CHECK (source IN ('inline', 'frontmatter')),
    start_offset  int,
    line          int,
    PRIMARY KEY (tenant_id, vault_id, path, ord),
    FOREIGN KEY (tenant_id, vault_id, path) REFERENCES notes (tenant_id, vault_id, path) ON DELETE CASCADE
);
CREATE INDEX note_tags_key ON note_tags (tenant_id, vault_id, tag_key);

-- Top-level frontmatter properties.
CREATE TABLE note_properties (
    tenant_id   uuid NOT NULL,
    vault_id    uuid NOT NULL,
    path        text COLLATE "C" NOT NULL,
    key         text NOT NULL,
    value       jsonb NOT NULL,
    PRIMARY KEY (tenant_id, vault_id, path, key),
    FOREIGN KEY (tenant_id, vault_id, path) REFERENCES notes (tenant_id, vault_id, path) ON DELETE CASCADE
);
CREATE INDEX note_properties_key ON note_properties (tenant_id, vault_id, key);

-- Checkbox list items.
CREATE TABLE note_tasks (
    tenant_id     uuid NOT NULL,
    vault_id      uuid NOT NULL,
    path          text COLLATE "C" NOT NULL,
    ord           int NOT NULL,
    status        text NOT NULL,
    done          boolean NOT NULL,
    text          text NOT NULL,
    line          int NOT NULL,
    start_offset  int NOT NULL,
    end_offset    int NOT NULL,
    PRIMARY KEY (tenant_id, vault_id, path, ord),
    FOREIGN KEY (tenant_id, vault_id, path) REFERENCES notes (tenant_id, vault_id, path) ON DELETE CASCADE
);

-- Heading-aware chunks of each note's body, for full-text, trigram and (later) semantic
-- search. The embedding column is filled by the embedding work; its dimension is the model's.
CREATE TABLE chunks (
    tenant_id     uuid NOT NULL,
    vault_id      uuid NOT NULL,
    path          text COLLATE "C" NOT NULL,
    ord           int NOT NULL,
    heading_path  text NOT NULL,
    start_offset  int NOT NULL,
    end_offset    int NOT NULL,
    line          int NOT NULL,
    text          text NOT NULL,
    tsv           tsvector GENERATED ALWAYS AS (to_tsvector('simple', heading_path || ' ' || text)) STORED,
    embedding     vector,
    PRIMARY KEY (tenant_id, vault_id, path, ord),
    FOREIGN KEY (tenant_id, vault_id, path) REFERENCES notes (tenant_id, vault_id, path) ON DELETE CASCADE
);
CREATE INDEX chunks_tsv ON chunks USING gin (tsv);
CREATE INDEX chunks_trgm ON chunks USING gin (text gin_trgm_ops);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['index_state', 'index_files', 'notes', 'links', 'note_tags', 'note_properties',
                             'note_tasks', 'chunks'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant())',
            t);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO otc_app', t);
    END LOOP;
END
$$;

-- The tenants with outbox work due: ids only, for the indexer's poll (which then works inside
-- each tenant's row-level security like every other query).
CREATE FUNCTION otc_tenants_with_due_jobs() RETURNS SETOF uuid
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$ SELECT DISTINCT tenant_id FROM jobs WHERE state = 'queued' AND run_after <= now() $$;
REVOKE ALL ON FUNCTION otc_tenants_with_due_jobs() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION otc_tenants_with_due_jobs() TO otc_app;
