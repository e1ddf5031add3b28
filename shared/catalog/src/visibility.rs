//! Who sees which tool: the deployment's profile, the operator's visibility rules, and the
//! caller's scopes, in one verdict per tool. Precedence: disabled > disabled by profile >
//! hidden > scope denied > listed.
//!
//! - disabled (by name or tag): as if never registered; the call is refused as not found.
//! - disabled by profile (`core` omits the tool): not callable, and every door says so by name
//!   and names the setting (never a bare "not found").
//! - hidden (by name, tag, the read-only requirement, an allowlist, or as a tool that needs a
//!   live Obsidian app while `show_live_app_tools` is off): not advertised, still callable by
//!   name.
//! - scope denied: the caller could not dispatch it, so it is not advertised either.

use otc_auth::Scope;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::registry::Registered;
use crate::tags::is_mutating_scope;

/// Which tools exist at all for this deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    #[default]
    Full,
    Core,
}

impl Profile {
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Full => "full",
            Profile::Core => "core",
        }
    }
}

/// The operator's visibility rules (`tool_visibility`).
#[derive(Debug, Clone, Default)]
pub struct VisibilityRules {
    pub hidden: Vec<String>,
    pub disabled: Vec<String>,
    pub hidden_tags: Vec<String>,
    pub disabled_tags: Vec<String>,
    /// When set, only these tools are advertised.
    pub allowed: Option<Vec<String>>,
    /// Advertise no tool that can change the vault.
    pub require_read_only: bool,
    /// Advertise the tools that need a live Obsidian app (tag `plugin-bridge`). They answer
    /// plugin_unavailable on a hosted vault, so they are hidden unless an operator wants them
    /// listed.
    pub show_live_app_tools: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    Listed,
    Hidden,
    Disabled,
    ScopeDenied,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    Listed,
    DisabledName,
    DisabledTag,
    DisabledByProfile,
    HiddenName,
    HiddenTag,
    HiddenRequireReadOnly,
    HiddenNotAllowlisted,
    HiddenLiveApp,
    ScopeDeniedMissingScope,
}

/// The verdict for one tool and the rule that decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub visibility: Visibility,
    pub reason: Reason,
    pub matched_tag: Option<String>,
    pub missing_scopes: Vec<String>,
}

impl Verdict {
    fn of(visibility: Visibility, reason: Reason) -> Self {
        Self { visibility, reason, matched_tag: None, missing_scopes: Vec::new() }
    }

    pub fn is_listed(&self) -> bool {
        self.visibility == Visibility::Listed
    }

    /// Whether a call by name may go ahead to the scope check and the handler.
    pub fn is_callable(&self) -> bool {
        self.visibility != Visibility::Disabled
    }
}

/// What the caller holds, for the scope dimension.
pub trait Grants {
    fn grants(&self, required: &str) -> bool;
}

impl Grants for [Scope] {
    fn grants(&self, required: &str) -> bool {
        self.iter().any(|s| s.grants(required))
    }
}

impl Grants for Vec<Scope> {
    fn grants(&self, required: &str) -> bool {
        self.as_slice().grants(required)
    }
}

/// The verdict for `tool`. `caller`: the caller's scopes, or `None` to judge the static rules
/// alone (a full grant).
pub fn verdict(tool: &Registered, profile: Profile, rules: &VisibilityRules, caller: Option<&dyn Grants>) -> Verdict {
    let name = tool.name();
    let matching = |set: &[String]| tool.tags.iter().find(|t| set.contains(t)).cloned();
    if rules.disabled.iter().any(|n| n == name) {
        return Verdict::of(Visibility::Disabled, Reason::DisabledName);
    }
    if let Some(tag) = matching(&rules.disabled_tags) {
        return Verdict { matched_tag: Some(tag), ..Verdict::of(Visibility::Disabled, Reason::DisabledTag) };
    }
    if profile == Profile::Core && !tool.spec.core {
        return Verdict::of(Visibility::Disabled, Reason::DisabledByProfile);
    }
    if rules.hidden.iter().any(|n| n == name) {
        return Verdict::of(Visibility::Hidden, Reason::HiddenName);
    }
    if let Some(tag) = matching(&rules.hidden_tags) {
        return Verdict { matched_tag: Some(tag), ..Verdict::of(Visibility::Hidden, Reason::HiddenTag) };
    }
    if rules.require_read_only && tool.spec.scopes.iter().any(|s| is_mutating_scope(s)) {
        return Verdict::of(Visibility::Hidden, Reason::HiddenRequireReadOnly);
    }
    if !rules.show_live_app_tools && tool.is_plugin_bridge() {
        return Verdict::of(Visibility::Hidden, Reason::HiddenLiveApp);
    }
    if let Some(allowed) = &rules.allowed
        && !allowed.iter().any(|n| n == name)
    {
        return Verdict::of(Visibility::Hidden, Reason::HiddenNotAllowlisted);
    }
    if let Some(grants) = caller {
        let missing: Vec<String> =
            tool.spec.scopes.iter().filter(|s| !grants.grants(s)).map(|s| s.to_string()).collect();
        if !missing.is_empty() {
            return Verdict {
                missing_scopes: missing,
                ..Verdict::of(Visibility::ScopeDenied, Reason::ScopeDeniedMissingScope)
            };
        }
    }
    Verdict::of(Visibility::Listed, Reason::Listed)
}
