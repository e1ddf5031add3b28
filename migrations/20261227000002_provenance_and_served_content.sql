-- Provenance records what the server knows: the API or tool that made the change (`tool`) and
-- the credential it came with (`token_id`). What a client says about itself is kept apart:
-- `client_tool` is the tool name a /v1 commit's body claims (e.g. a sync client's own label),
-- never shown as the tool.
ALTER TABLE change_log ADD COLUMN client_tool text, ADD COLUMN token_id uuid;

-- Content is served (and copied) by hash only while the vault holds it at a path the caller may
-- read: found through the manifest by hash.
CREATE INDEX vault_files_by_hash ON vault_files (tenant_id, vault_id, blob_hash);
