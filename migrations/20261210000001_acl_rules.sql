-- Folder ACLs as tenant data. A principal belongs to named groups (set by an admin today, by
-- the identity provider's claims or SCIM once SSO lands). A rule grants, in one vault, read,
-- write and delete path globs (a list left NULL is unrestricted) to one principal, to one group
-- or to everyone, optionally read-only. The most specific subject decides: a principal's own
-- rule, else its groups' rules together, else the rule for everyone, else only the deployment's
-- `[[acl]]` floor. Rules are read with the caller's token, so a gateway's token cache carries
-- them; a change moves the tenant's token generation.
CREATE TABLE principal_groups (
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    principal_id  uuid NOT NULL,
    group_name    text NOT NULL CHECK (group_name ~ '^[A-Za-z0-9][A-Za-z0-9 ._@:-]{0,99}$'),
    PRIMARY KEY (tenant_id, principal_id, group_name),
    FOREIGN KEY (tenant_id, principal_id) REFERENCES principals (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX principal_groups_by_group ON principal_groups (tenant_id, group_name);

CREATE TABLE acl_rules (
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id            uuid NOT NULL,
    vault_id      uuid NOT NULL,
    subject_kind  text NOT NULL CHECK (subject_kind IN ('principal', 'group', 'everyone')),
    principal_id  uuid,
    group_name    text CHECK (group_name ~ '^[A-Za-z0-9][A-Za-z0-9 ._@:-]{0,99}$'),
    read_paths    text[] CHECK (cardinality(read_paths) <= 100),
    write_paths   text[] CHECK (cardinality(write_paths) <= 100),
    delete_paths  text[] CHECK (cardinality(delete_paths) <= 100),
    read_only     boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CHECK ((subject_kind = 'principal') = (principal_id IS NOT NULL)),
    CHECK ((subject_kind = 'group') = (group_name IS NOT NULL)),
    UNIQUE NULLS NOT DISTINCT (tenant_id, vault_id, subject_kind, principal_id, group_name),
    FOREIGN KEY (tenant_id, vault_id) REFERENCES vaults (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, principal_id) REFERENCES principals (tenant_id, id) ON DELETE CASCADE
);

ALTER TABLE principal_groups ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON principal_groups
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
ALTER TABLE acl_rules ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON acl_rules
    USING (tenant_id = otc_current_tenant()) WITH CHECK (tenant_id = otc_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON principal_groups, acl_rules TO otc_app;
