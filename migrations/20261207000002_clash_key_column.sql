-- Under row-level security Postgres never evaluates a non-leakproof function of a column
-- before the policy, so `casefold(normalize(path, NFC) ...) = $key` could not use the
-- expression index and scanned every file of the vault (300 ms for a new note's name check
-- at 100k files, and 700 ms for its folder check). The clash key is a stored column now, and
-- the comparisons on it (texteq, text_ge, text_lt) are leakproof.
DROP INDEX vault_files_clash_key;
ALTER TABLE vault_files ADD COLUMN clash_key text COLLATE pg_c_utf8
    GENERATED ALWAYS AS (casefold(normalize(path, NFC) COLLATE pg_c_utf8)) STORED;
CREATE INDEX vault_files_clash_key ON vault_files (tenant_id, vault_id, clash_key);
