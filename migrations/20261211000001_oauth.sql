-- obsidian-tc as the OAuth 2.1 authorization server of its MCP endpoints, federating sign-in to
-- each tenant's OpenID Connect identity provider.
--
-- Two tables are deployment data, not tenant data: the clients that registered (a client
-- registers before anyone has signed in, so before a tenant is known) and the keys that sign
-- access tokens (one issuer for the deployment). They hold no tenant's rows, so they carry no
-- tenant_id and no row-level security; otc_app reads and writes them in a transaction with no
-- tenant set. Everything that follows a sign-in (grants, codes, refresh tokens, identities) is
-- tenant data under row-level security like every other table.

CREATE TABLE oauth_clients (
    client_id                   text PRIMARY KEY CHECK (length(client_id) BETWEEN 1 AND 2048),
    -- 'dcr': registered here (RFC 7591); 'cimd': a Client ID Metadata Document, fetched from
    -- the URL that is its client_id and kept here as a cache.
    kind                        text NOT NULL CHECK (kind IN ('dcr', 'cimd')),
    client_name                 text CHECK (length(client_name) <= 200),
    redirect_uris               text[] NOT NULL CHECK (cardinality(redirect_uris) BETWEEN 1 AND 20),
    token_endpoint_auth_method  text NOT NULL CHECK (token_endpoint_auth_method IN ('none', 'client_secret_basic', 'client_secret_post')),
    -- SHA-256 of the client secret, for confidential clients.
    secret_hash                 bytea CHECK (length(secret_hash) = 32),
    -- The registration as the client sent it (or the document as fetched), for display.
    metadata                    jsonb NOT NULL,
    created_at                  timestamptz NOT NULL DEFAULT now(),
    fetched_at                  timestamptz,
    -- When a token request last named it: registration is open to anyone, so clients no token
    -- request named for a long while are deleted by the workers' sweep.
    last_used_at                timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE oauth_signing_keys (
    kid          text PRIMARY KEY,
    alg          text NOT NULL CHECK (alg = 'ES256'),
    -- The PKCS#8 private key, sealed with the deployment's secret key (AES-256-GCM).
    sealed_key   bytea NOT NULL,
    public_jwk   jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    -- Past this the key signs nothing new; it stays published until every token it signed expired.
    retire_at    timestamptz NOT NULL,
    drop_at      timestamptz NOT NULL
);

GRANT SELECT, INSERT, UPDATE, DELETE ON oauth_clients, oauth_signing_keys TO otc_app;

-- A tenant's identity provider (one per tenant).
CREATE TABLE tenant_idps (
    tenant_id        uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    issuer           text NOT NULL CHECK (length(issuer) BETWEEN 1 AND 2048),
    client_id        text NOT NULL CHECK (length(client_id) BETWEEN 1 AND 1024),
    -- The client secret, sealed with the deployment's secret key (AES-256-GCM); NULL for a
    -- public client.
    sealed_secret    bytea,
    -- Sign-in by email routes these domains here (lower case); a domain belongs to one tenant.
    email_domains    text[] NOT NULL DEFAULT '{}',
    groups_claim     text NOT NULL DEFAULT 'groups' CHECK (length(groups_claim) BETWEEN 1 AND 200),
    -- Scopes every user of the tenant may be granted, and more per IdP group: {"group": ["scope", ..]}.
    default_scopes   text[] NOT NULL DEFAULT '{}',
    group_scopes     jsonb NOT NULL DEFAULT '{}',
    -- IdP group to ACL groups: {"idp-group": ["acl-group", ..]}; an IdP group not named here
    -- becomes the ACL group of the same name when that name is valid.
    group_acl        jsonb NOT NULL DEFAULT '{}',
    -- Hosts whose Client ID Metadata Documents this tenant's users may authorize; empty = any
    -- public host.
    cimd_hosts       text[] NOT NULL DEFAULT '{}',
    updated_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE idp_domains (
    domain     text PRIMARY KEY CHECK (domain ~ '^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$'),
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE
);
CREATE INDEX idp_domains_by_tenant ON idp_domains (tenant_id);

-- A person as their identity provider knows them.
ALTER TABLE principals
    ADD COLUMN external_subject text CHECK (length(external_subject) <= 1024),
    ADD COLUMN email text CHECK (length(email) <= 320),
    -- The provider's groups for the person at the last sign-in (or directory update), which an
    -- identity assertion without a groups claim is judged by.
    ADD COLUMN idp_groups text[] NOT NULL DEFAULT '{}',
    -- Set when the tenant's directory deprovisioned the principal: every credential of it
    -- stops working.
    ADD COLUMN deactivated_at timestamptz;
CREATE UNIQUE INDEX principals_by_subject ON principals (tenant_id, external_subject) WHERE external_subject IS NOT NULL;

-- What one person allowed one client: the scopes and the resource. Codes, refresh tokens and
-- access tokens hang off it; revoking it ends them all.
CREATE TABLE oauth_grants (
    tenant_id       uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id              uuid NOT NULL,
    principal_id    uuid NOT NULL,
    client_id       text NOT NULL,
    client_name     text,
    scopes          text[] NOT NULL,
    resource        text NOT NULL,
    -- 'authorization_code' or 'jwt_bearer' (an ID-JAG from the tenant's IdP).
    via             text NOT NULL CHECK (via IN ('authorization_code', 'jwt_bearer')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    last_used_at    timestamptz NOT NULL DEFAULT now(),
    revoked_at      timestamptz,
    revoked_reason  text,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, principal_id) REFERENCES principals (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX oauth_grants_by_principal ON oauth_grants (tenant_id, principal_id);

CREATE TABLE oauth_codes (
    tenant_id       uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    code_hash       bytea NOT NULL CHECK (length(code_hash) = 32),
    grant_id        uuid NOT NULL,
    redirect_uri    text NOT NULL,
    code_challenge  text NOT NULL,
    expires_at      timestamptz NOT NULL,
    used_at         timestamptz,
    PRIMARY KEY (tenant_id, code_hash),
    FOREIGN KEY (tenant_id, grant_id) REFERENCES oauth_grants (tenant_id, id) ON DELETE CASCADE
);

CREATE TABLE oauth_refresh_tokens (
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    token_hash   bytea NOT NULL CHECK (length(token_hash) = 32),
    grant_id     uuid NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    -- Set when the token was exchanged for its successor: presenting it again is a replay.
    rotated_at   timestamptz,
    PRIMARY KEY (tenant_id, token_hash),
    FOREIGN KEY (tenant_id, grant_id) REFERENCES oauth_grants (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX oauth_refresh_tokens_by_grant ON oauth_refresh_tokens (tenant_id, grant_id);

-- Access tokens are rows of api_tokens, so every gateway checks and caches them exactly as it
-- does API tokens; these say which grant one came from and which resource it is for.
ALTER TABLE api_tokens
    ADD COLUMN grant_id uuid,
    ADD COLUMN audience text,
    ADD FOREIGN KEY (tenant_id, grant_id) REFERENCES oauth_grants (tenant_id, id) ON DELETE CASCADE;
CREATE INDEX api_tokens_by_grant ON api_tokens (tenant_id, grant_id) WHERE grant_id IS NOT NULL;

-- The jti of every identity assertion (ID-JAG) redeemed, until it expires: a second use is
-- refused.
CREATE TABLE oauth_assertion_jtis (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    jti         text NOT NULL CHECK (length(jti) BETWEEN 1 AND 512),
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, jti)
);

ALTER TABLE tenant_idps ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenant_idps
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
ALTER TABLE idp_domains ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON idp_domains
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
ALTER TABLE oauth_grants ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON oauth_grants
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
ALTER TABLE oauth_codes ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON oauth_codes
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
ALTER TABLE oauth_refresh_tokens ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON oauth_refresh_tokens
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
ALTER TABLE oauth_assertion_jtis ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON oauth_assertion_jtis
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE
    ON tenant_idps, idp_domains, oauth_grants, oauth_codes, oauth_refresh_tokens, oauth_assertion_jtis TO otc_app;

-- Home-realm discovery: the tenant whose identity provider signs in this email domain (its id
-- only), and the tenant whose identity provider is this issuer (for an ID-JAG, which names its
-- issuer before anything says the tenant). Like otc_tenant_id_by_slug, they run as the
-- migration owner, to whom row-level security does not apply.
CREATE FUNCTION otc_tenant_id_by_email_domain(p_domain text) RETURNS uuid
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$ SELECT tenant_id FROM idp_domains WHERE domain = lower(p_domain) $$;
CREATE FUNCTION otc_tenant_ids_by_idp_issuer(p_issuer text) RETURNS SETOF uuid
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
    AS $$ SELECT tenant_id FROM tenant_idps WHERE issuer = p_issuer $$;

-- SCIM 2.0: the tenant's directory (Okta, Entra ID) provisions people and groups. A provisioned
-- person is a user principal whose `directory` holds the SCIM attributes it was given (its SCIM id
-- is the principal's id); a directory group is an ACL group (its displayName) with members. A
-- person's ACL groups are those an admin or their sign-in set (principal_groups) and those their
-- directory groups name.
ALTER TABLE principals ADD COLUMN directory jsonb;

CREATE TABLE directory_groups (
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id            uuid NOT NULL,
    display_name  text NOT NULL CHECK (display_name ~ '^[A-Za-z0-9][A-Za-z0-9 ._@:-]{0,99}$'),
    external_id   text CHECK (length(external_id) <= 1024),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, display_name)
);

CREATE TABLE directory_group_members (
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    group_id      uuid NOT NULL,
    principal_id  uuid NOT NULL,
    PRIMARY KEY (tenant_id, group_id, principal_id),
    FOREIGN KEY (tenant_id, group_id) REFERENCES directory_groups (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, principal_id) REFERENCES principals (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX directory_group_members_by_principal ON directory_group_members (tenant_id, principal_id);

ALTER TABLE directory_groups ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON directory_groups
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
ALTER TABLE directory_group_members ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON directory_group_members
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON directory_groups, directory_group_members TO otc_app;

-- A person's ACL groups come from an admin (`obsidian-tc acl groups`, /v1/principals/P/groups)
-- and from their provider at sign-in; each replaces only its own.
ALTER TABLE principal_groups
    ADD COLUMN source text NOT NULL DEFAULT 'admin' CHECK (source IN ('admin', 'sign_in'));
ALTER TABLE principal_groups DROP CONSTRAINT principal_groups_pkey;
ALTER TABLE principal_groups ADD PRIMARY KEY (tenant_id, principal_id, source, group_name);
