-- The write tools.

-- Why a snapshot was kept: the content a change replaced ('update') or removed ('delete'), or a
-- copy someone asked for ('manual', snapshot_note).
ALTER TABLE snapshots ADD COLUMN op text NOT NULL DEFAULT 'update' CHECK (op IN ('update', 'delete', 'manual'));

-- Who stands behind a write's content, as the writer declared it (write_note's provenance:
-- authored or agent_synthesis). Not part of the record hash: it is the writer's claim.
ALTER TABLE change_log ADD COLUMN origin text;
