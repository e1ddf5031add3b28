-- Foundation: tenants, vaults, principals and API tokens, each guarded by row-level security.
--
-- The application does its work as the role otc_app (SET LOCAL ROLE at the start of every
-- transaction) with the tenant set per transaction in app.tenant_id. otc_app does not own the
-- tables, so row-level security always applies to it; a transaction with no tenant set sees
-- and writes nothing.

CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'otc_app') THEN
        CREATE ROLE otc_app NOLOGIN;
    END IF;
    -- The connecting role must be able to SET ROLE otc_app; superusers always can.
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE format('GRANT otc_app TO %I', current_user);
    END IF;
END
$$;

GRANT USAGE ON SCHEMA public TO otc_app;

-- The tenant of the current transaction, or NULL (which matches no row) when none is set.
CREATE FUNCTION otc_current_tenant() RETURNS uuid
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT nullif(current_setting('app.tenant_id', true), '')::uuid $$;

CREATE TABLE tenants (
    id          uuid PRIMARY KEY,
    slug        text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE vaults (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id          uuid NOT NULL,
    name        text NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9 ._-]{0,99}$'),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, name)
);

CREATE TABLE principals (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id          uuid NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('user', 'service')),
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, kind, name)
);

CREATE TABLE api_tokens (
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id            uuid NOT NULL,
    principal_id  uuid NOT NULL,
    name          text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    -- SHA-256 of the whole token; the token itself is never stored.
    token_hash    bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    -- Last four characters, to tell tokens apart in listings.
    hint          text NOT NULL,
    scopes        text[] NOT NULL CHECK (cardinality(scopes) > 0),
    -- When set, the token reaches this vault only.
    vault_id      uuid,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz,
    revoked_at    timestamptz,
    last_used_at  timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, principal_id) REFERENCES principals (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, vault_id) REFERENCES vaults (tenant_id, id) ON DELETE CASCADE
);

-- Row-level security: the tenant of the transaction, nothing else, for reading and writing.
ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenants
    USING (id = otc_current_tenant()) WITH CHECK (id = otc_current_tenant());

ALTER TABLE vaults ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON vaults
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());

ALTER TABLE principals ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON principals
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());

ALTER TABLE api_tokens ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON api_tokens
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());

GRANT SELECT, INSERT, UPDATE, DELETE ON tenants, vaults, principals, api_tokens TO otc_app;

-- The one cross-tenant lookup: a tenant's slug to its id (no other column), so an operator can
-- name a tenant on the command line. It runs as the migration owner, to whom RLS does not apply.
CREATE FUNCTION otc_tenant_id_by_slug(p_slug text) RETURNS uuid
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$ SELECT id FROM tenants WHERE slug = p_slug $$;
REVOKE ALL ON FUNCTION otc_tenant_id_by_slug(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION otc_tenant_id_by_slug(text) TO otc_app;

-- Every tenant's id, for the worker's periodic per-tenant sweep (ids only).
CREATE FUNCTION otc_tenant_ids() RETURNS SETOF uuid
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$ SELECT id FROM tenants ORDER BY id $$;
REVOKE ALL ON FUNCTION otc_tenant_ids() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION otc_tenant_ids() TO otc_app;
