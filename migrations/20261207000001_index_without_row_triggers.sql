-- The index tables keep no foreign keys among themselves. Their checks and cascades ran as
-- per-row triggers whose plans Postgres caches for a connection's life: planned while a
-- vault's tables were small (a first import, a rebuild after the index was emptied), they
-- looked notes up through notes_fts_segment or a child's *_key index on (tenant_id,
-- vault_id) alone, so every inserted or deleted row scanned the whole vault. A 10k-note
-- rebuild then took 20-26 s instead of 3.5 s until autovacuum's next ANALYZE re-planned
-- them, which is also why the same benchmark measured 741 and 400 notes/s on different runs.
-- The store deletes a note's rows itself, one statement per table for a whole batch
-- (TenantTx::replace_notes, drop_index_files). Nothing deletes a vault or a tenant yet; what
-- comes to do it deletes their index rows by (tenant_id, vault_id) as well.
ALTER TABLE notes DROP CONSTRAINT notes_tenant_id_vault_id_path_fkey;
ALTER TABLE links DROP CONSTRAINT links_tenant_id_vault_id_source_path_fkey;
ALTER TABLE note_tags DROP CONSTRAINT note_tags_tenant_id_vault_id_path_fkey;
ALTER TABLE note_properties DROP CONSTRAINT note_properties_tenant_id_vault_id_path_fkey;
ALTER TABLE note_tasks DROP CONSTRAINT note_tasks_tenant_id_vault_id_path_fkey;
ALTER TABLE chunks DROP CONSTRAINT chunks_tenant_id_vault_id_path_fkey;

-- Chunks keep their place in the note (the embedding work's unit); their text lives in the
-- note itself and in the full-text segments, so it is no longer written a second time here.
ALTER TABLE chunks DROP COLUMN text;

-- The same stale plans chose a secondary index on (tenant_id, vault_id, key) for lookups by
-- path, since with no statistics a range of (tenant_id, vault_id) looks like one row and 500
-- probes of the primary key look dear. Secondary indexes now lead with their own key (the
-- tenant and vault follow, still used to position the scan), so a lookup by path can only use
-- the primary key. Tag keys compare bytewise, so a nested-tag lookup is an index range.
DROP INDEX notes_fts_segment;
CREATE INDEX notes_fts_segment ON notes (fts_segment, tenant_id, vault_id);
DROP INDEX links_resolved;
CREATE INDEX links_resolved ON links (resolved_path, tenant_id, vault_id);
DROP INDEX links_name;
CREATE INDEX links_name ON links (name_key, tenant_id, vault_id);
DROP INDEX note_tags_key;
ALTER TABLE note_tags ALTER COLUMN tag_key TYPE text COLLATE "C";
CREATE INDEX note_tags_key ON note_tags (tag_key, tenant_id, vault_id);
DROP INDEX note_properties_key;
CREATE INDEX note_properties_key ON note_properties (key, tenant_id, vault_id);
DROP INDEX index_files_name;
CREATE INDEX index_files_name ON index_files (name_key, tenant_id, vault_id);
