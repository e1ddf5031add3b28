-- Indexes for read tools that pick a few rows out of a large vault.
--
-- find_unresolved_links lists the notes whose frontmatter does not parse on its first page.
-- Without this index that walked every note of the vault (100k notes: ~25 ms a call) to find
-- what is usually none; with it, only the failures are read.
CREATE INDEX notes_frontmatter_failures ON notes (tenant_id, vault_id, path) WHERE frontmatter_error IS NOT NULL;

-- list_attachments walks the files that are not notes, in path order; in a large vault they are
-- a small share of every path.
CREATE INDEX vault_files_non_notes ON vault_files (tenant_id, vault_id, path) WHERE kind <> 'note';
