-- Full text moves out of Postgres' tsvector into segments of our own (otc-fts): an inverted
-- index with positions, tokenised in Rust, written as one row per indexing batch and merged in
-- the background. The generated tsvector, its GIN index and the trigram index cost more than
-- everything else the indexer writes together (a 10k-note rebuild ran at ~1,500 notes/s with
-- them and ~4,800 without), and ts_rank is not BM25.
DROP INDEX chunks_tsv;
DROP INDEX chunks_trgm;
ALTER TABLE chunks DROP COLUMN tsv;

-- A segment never changes once written (gateways cache it by id); `dead` lists the paths it
-- holds that a later segment replaced (or that were deleted), `live` how many it still holds.
CREATE TABLE fts_segments (
    tenant_id   uuid NOT NULL,
    vault_id    uuid NOT NULL,
    id          bigint GENERATED ALWAYS AS IDENTITY,
    data        bytea NOT NULL,
    notes       int NOT NULL,
    live        int NOT NULL,
    dead        text[] COLLATE "C" NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, vault_id, id),
    FOREIGN KEY (tenant_id, vault_id) REFERENCES vaults (tenant_id, id) ON DELETE CASCADE
);
-- Varint postings do not compress; skip pglz on write and read.
ALTER TABLE fts_segments ALTER COLUMN data SET STORAGE EXTERNAL;
ALTER TABLE fts_segments ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON fts_segments
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON fts_segments TO otc_app;

-- Which segment holds the note's current chunks.
ALTER TABLE notes ADD COLUMN fts_segment bigint;
CREATE INDEX notes_fts_segment ON notes (tenant_id, vault_id, fts_segment);

-- Search leaves Excluded files out: find them without reading every file row.
CREATE INDEX index_files_excluded ON index_files (tenant_id, vault_id) WHERE excluded;
