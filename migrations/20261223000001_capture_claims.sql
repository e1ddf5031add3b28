-- When a commit claimed a capture: a claim older than two minutes (its gateway died, its
-- request was dropped) may be taken again, so no capture stays in 'committing'.
ALTER TABLE capture_queue ADD COLUMN claimed_at timestamptz;
