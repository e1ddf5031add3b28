-- Work memory: one episode per tool call a principal makes while one of its work sessions is
-- open, written with the call's audit record (same id) by the audit writer. Episodes start
-- quarantined (eligibility pending) and become eligible for work_search only through a non-negative
-- task verdict (work_result); a failed call or a -1 verdict holds them, a summary that reads as
-- prompt injection blocks them. work_forget tombstones one: its content goes, the row (who forgot
-- it and when) stays. Retrievals are the chunks a call in a session returned, with the caller's
-- feedback on them.
CREATE TABLE agent_episodes (
    tenant_id           uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id                  uuid NOT NULL,
    ts                  timestamptz NOT NULL,
    principal_id        uuid NOT NULL,
    session_id          uuid NOT NULL,
    -- The vault as the call named it (name or id), when it named one.
    vault               text,
    client              text,
    -- The MCP surface the call came through.
    channel             text NOT NULL,
    -- tool_call (work a verdict judges) or verdict (the calls that judge or forget).
    episode_type        text NOT NULL CHECK (episode_type IN ('tool_call', 'verdict')),
    tool                text NOT NULL,
    status              text NOT NULL CHECK (status IN ('ok', 'error')),
    error_code          text,
    summary             text NOT NULL,
    -- The paths the call named (its audit record's), for a reader's folder ACL.
    paths               jsonb NOT NULL DEFAULT '[]',
    duration_us         bigint NOT NULL,
    blocked             boolean NOT NULL DEFAULT false,
    -- The prompt-injection patterns the summary matched.
    suspects            text[] NOT NULL DEFAULT '{}',
    trust               real NOT NULL,
    eligibility         text NOT NULL CHECK (eligibility IN ('pending', 'eligible', 'held', 'blocked')),
    eligibility_reason  text,
    task_result         smallint CHECK (task_result BETWEEN -1 AND 1),
    verdict_at          timestamptz,
    -- The earlier failed call of the same tool on the same targets this one retried.
    amends              uuid,
    forgotten_at        timestamptz,
    forgotten_by        uuid,
    PRIMARY KEY (tenant_id, id)
);
-- The session a call belongs to, looked up for every audit record written.
CREATE INDEX work_sessions_principal ON work_sessions (tenant_id, principal_id, started_at DESC);
-- A caller's episodes newest first (ids are time-ordered), and its eligible ones alone: what
-- work_search and vault_context read, a small part of a busy caller's log.
CREATE INDEX agent_episodes_principal ON agent_episodes (tenant_id, principal_id, id DESC);
CREATE INDEX agent_episodes_eligible ON agent_episodes (tenant_id, principal_id, id DESC)
    WHERE eligibility = 'eligible' AND forgotten_at IS NULL;
CREATE INDEX agent_episodes_session ON agent_episodes (tenant_id, session_id, ts);
CREATE INDEX agent_episodes_amends ON agent_episodes (tenant_id, amends) WHERE amends IS NOT NULL;
-- The failed calls a later call of the same session may retry (each episode written looks once).
CREATE INDEX agent_episodes_failed ON agent_episodes (tenant_id, session_id, tool, summary, ts DESC)
    WHERE status = 'error';

CREATE TABLE episode_retrievals (
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    episode_id    uuid NOT NULL,
    principal_id  uuid NOT NULL,
    session_id    uuid NOT NULL,
    vault         text NOT NULL,
    path          text NOT NULL,
    ord           int NOT NULL,
    rank          int NOT NULL,
    score         double precision,
    ts            timestamptz NOT NULL,
    -- 1 useful, -1 not useful.
    feedback      smallint CHECK (feedback IN (-1, 1)),
    feedback_at   timestamptz,
    PRIMARY KEY (tenant_id, episode_id, rank),
    FOREIGN KEY (tenant_id, episode_id) REFERENCES agent_episodes (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX episode_retrievals_chunk ON episode_retrievals (tenant_id, session_id, path, ord, ts DESC);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['agent_episodes', 'episode_retrievals'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant())',
            t);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO otc_app', t);
    END LOOP;
END $$;
