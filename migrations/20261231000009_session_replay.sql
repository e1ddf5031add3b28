-- What session_rerun replays (issue 47): for each call a work session made, its arguments as
-- sent and a digest of its answer with what differs between runs left out (ids, times,
-- sequences, the vault's name); the answer itself too when it is small, to say where a replay
-- differs. Bounded by the writer (16 KiB each); forgetting an episode clears them.
ALTER TABLE agent_episodes
    ADD COLUMN replay_args    jsonb CHECK (octet_length(replay_args::text) <= 65536),
    ADD COLUMN result_digest  text CHECK (result_digest ~ '^[0-9a-f]{64}$'),
    ADD COLUMN result_excerpt jsonb CHECK (octet_length(result_excerpt::text) <= 65536);
