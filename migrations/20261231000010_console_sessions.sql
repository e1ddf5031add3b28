-- The web console (issue 45): a person signed in to /console holds a console session, an API
-- token of theirs the console keeps in an HttpOnly cookie and sends on each of its calls to
-- the admin API, so a page does exactly what that API allows the person. It expires (the
-- console's session_hours) and is revoked at sign-out; "sign out everywhere" revokes every
-- live one of the person, which this marks apart from the tokens people make themselves.
ALTER TABLE api_tokens ADD COLUMN console_session boolean NOT NULL DEFAULT false;
CREATE INDEX api_tokens_console_sessions ON api_tokens (tenant_id, principal_id)
    WHERE console_session AND revoked_at IS NULL;
