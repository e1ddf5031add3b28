//! The scopes the gateway's own HTTP surfaces check (the tools declare theirs in their specs),
//! in one place so the protected-resource metadata lists them without depending on the
//! surfaces themselves.

/// SCIM 2.0 at `/scim/v2`.
pub const SCIM: &str = "admin:scim";
/// `/v1/oauth/grants`.
pub const GRANTS: &str = "admin:grants";
/// `/v1/idp`.
pub const SSO: &str = "admin:sso";
/// `/v1/elicit` and `/v1/policies`: confirming destructive calls and who may.
pub const CONFIRM: &str = "admin:confirm";
/// `/v1/audit`.
pub const AUDIT: &str = "admin:audit";
/// `/v1/admin/vaults`.
pub const VAULTS: &str = "admin:vaults";
/// `/v1/admin/tokens`.
pub const TOKENS: &str = "admin:tokens";
/// `/v1/admin/usage`.
pub const USAGE: &str = "admin:usage";
/// `/v1/admin/vaults/{vault}/export`.
pub const EXPORT: &str = "admin:export";
/// `/v1/admin/domains`.
pub const DOMAINS: &str = "admin:domains";

/// `/v1/admin/chat`.
pub const CHAT: &str = "admin:chat";

/// `/v1/admin/members`.
pub const MEMBERS: &str = "admin:members";

/// Every scope the surfaces above check, for `scopes_supported`.
pub const CHECKED: [&str; 12] =
    [SCIM, GRANTS, SSO, CONFIRM, AUDIT, VAULTS, TOKENS, USAGE, EXPORT, DOMAINS, CHAT, MEMBERS];
