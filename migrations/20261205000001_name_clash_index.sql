-- Names that cannot live side by side on macOS or Windows: two paths that differ only by letter
-- case or Unicode normalization. A tool refuses to create a name that clashes with an existing
-- file (an import keeps both). The clash key is the NFC form, simple-case-folded: Postgres's
-- builtin C.UTF-8 collation folds by the Unicode tables (independent of the OS locale), and both
-- normalize() and casefold() are immutable, so the key can be indexed. otc_vault::clash_key is
-- the same rule in Rust; a test compares them over every character.
CREATE INDEX vault_files_clash_key
    ON vault_files (tenant_id, vault_id, casefold(normalize(path, NFC) COLLATE pg_c_utf8));
