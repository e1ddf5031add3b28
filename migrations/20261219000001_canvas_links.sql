-- Canvases' file nodes and the links in their text nodes are links of the index from now on
-- (the indexer writes them with the notes of each batch). A canvas committed before has none
-- yet: each vault holding canvases gets one index job naming them, which the workers run.
INSERT INTO jobs (tenant_id, vault_id, kind, payload, seq)
SELECT f.tenant_id, f.vault_id, 'index', jsonb_build_object('paths', jsonb_agg(f.path ORDER BY f.path)), h.seq
  FROM vault_files f
  JOIN vault_heads h ON h.tenant_id = f.tenant_id AND h.vault_id = f.vault_id
 WHERE f.kind = 'canvas'
 GROUP BY f.tenant_id, f.vault_id, h.seq;
