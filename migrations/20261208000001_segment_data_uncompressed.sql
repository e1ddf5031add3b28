-- A full-text segment is already packed (varints, delta-coded postings): compressing it again
-- on every write costs more CPU than it saves bytes. Store it out of line as it is.
ALTER TABLE fts_segments ALTER COLUMN data SET STORAGE EXTERNAL;
