//! What `tools/list` advertises: the facade mode (triad, domain, flat; `auto` is deprecated
//! and resolves to triad), the advertised subsets (essentials, core, full) and the URL
//! surfaces that pick one. Advertising never changes what is callable: every tool stays
//! callable by name on every surface, through the same pipeline.

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::def::{Domain, Icon};
use crate::registry::{Annotations, Registered, Registry, summary};
use crate::visibility::{Grants, Profile, VisibilityRules, verdict};

/// The discovery meta-tools of the triad facade.
pub const TRIAD_TOOLS: [&str; 3] = ["find_capability", "describe_capability", "call_capability"];
/// The knowledge-connector pair advertised beside the triad when registered.
pub const CONNECTOR_TOOLS: [&str; 2] = ["search", "fetch"];
/// Listed beside the triad when `triad_hot_path` is on (those that are registered).
pub const HOT_PATH_TOOLS: [&str; 4] = ["read_note", "search_vault", "write_note", "list_notes"];
/// The most tools the essentials surface may hold.
pub const ESSENTIALS_MAX: usize = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FacadeMode {
    Triad,
    Domain,
    Flat,
    /// Deprecated: resolves to triad (or an operator's `auto_clients` entry).
    Auto,
}

impl FacadeMode {
    pub fn as_str(self) -> &'static str {
        match self {
            FacadeMode::Triad => "triad",
            FacadeMode::Domain => "domain",
            FacadeMode::Flat => "flat",
            FacadeMode::Auto => "auto",
        }
    }
}

/// A flat, curated subset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Subset {
    Essentials,
    Core,
    Full,
}

impl Subset {
    pub fn as_str(self) -> &'static str {
        match self {
            Subset::Essentials => "essentials",
            Subset::Core => "core",
            Subset::Full => "full",
        }
    }

    fn includes(self, tool: &Registered) -> bool {
        match self {
            Subset::Essentials => tool.spec.essentials || CONNECTOR_TOOLS.contains(&tool.name()),
            Subset::Core => tool.spec.core,
            Subset::Full => true,
        }
    }
}

/// Which URL the client came in through (stdio has none: `Default`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// `/mcp` (and stdio): what the configuration says.
    Default,
    Triad,
    Domain,
    Subset(Subset),
    /// `/mcp/compat/obsidian`: the 14-tool server's `obsidian_*` tools, from a registry of
    /// their own, for its users to switch by changing one URL.
    CompatObsidian,
}

impl Surface {
    /// The surface for `/mcp/<name>`; `None` for an unknown name (a 404).
    pub fn from_path(name: &str) -> Option<Surface> {
        Some(match name {
            "triad" => Surface::Triad,
            "domain" => Surface::Domain,
            "essentials" => Surface::Subset(Subset::Essentials),
            "core" => Surface::Subset(Subset::Core),
            "full" => Surface::Subset(Subset::Full),
            "compat/obsidian" => Surface::CompatObsidian,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Surface::Default => "default",
            Surface::Triad => "triad",
            Surface::Domain => "domain",
            Surface::Subset(s) => s.as_str(),
            Surface::CompatObsidian => "compat/obsidian",
        }
    }
}

/// The facade settings (`tool_facade` and `tool_visibility`).
#[derive(Debug, Clone)]
pub struct FacadeSettings {
    pub mode: FacadeMode,
    pub triad_hot_path: bool,
    pub profile: Profile,
    /// `None` is "all": the mode decides.
    pub advertise: Option<Subset>,
    /// Under `auto`: case-insensitive substrings of the client's name mapped to a mode, checked
    /// in the configuration's own order.
    pub auto_clients: Vec<(String, FacadeMode)>,
    pub explain_auto_mode: bool,
    pub rules: VisibilityRules,
    /// `anthropic/maxResultSizeChars` on whole-note readers: the response ceiling, capped.
    pub max_result_size_chars: u64,
    /// Put each tool's output schema in tools/list, for a client that validates results against
    /// them. Off: `describe_capability` answers it, and a listing costs about half as much.
    pub list_output_schemas: bool,
}

impl Default for FacadeSettings {
    fn default() -> Self {
        Self {
            mode: FacadeMode::Triad,
            triad_hot_path: false,
            profile: Profile::Full,
            advertise: None,
            auto_clients: Vec::new(),
            explain_auto_mode: false,
            rules: VisibilityRules::default(),
            max_result_size_chars: 500_000,
            list_output_schemas: false,
        }
    }
}

impl FacadeSettings {
    /// `tool_facade.advertise` as configured: a subset's name, or "all".
    pub fn advertise_name(&self) -> &'static str {
        self.advertise.map(Subset::as_str).unwrap_or("all")
    }
}

/// The shape a surface advertises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "subset", rename_all = "lowercase")]
pub enum Listing {
    Triad,
    Domain,
    Flat(Subset),
}

/// How `auto` was resolved, for `explain_auto_mode` and server_health.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct AutoExplanation {
    pub client_name: Option<String>,
    pub configured_keys: Vec<String>,
    pub built_in_keys: Vec<String>,
    /// no-client-name, configured-override, built-in-table or no-match.
    pub rule: String,
    pub matched_key: Option<String>,
    pub fallback: String,
    pub mode: String,
}

/// The listing for a surface, and how `auto` was resolved when it was.
pub fn resolve(
    settings: &FacadeSettings,
    surface: Surface,
    client_name: Option<&str>,
) -> (Listing, Option<AutoExplanation>) {
    let by_mode = |mode: FacadeMode| match mode {
        FacadeMode::Domain => Listing::Domain,
        FacadeMode::Flat => Listing::Flat(Subset::Full),
        FacadeMode::Triad | FacadeMode::Auto => Listing::Triad,
    };
    match surface {
        Surface::Triad => (Listing::Triad, None),
        Surface::Domain => (Listing::Domain, None),
        Surface::Subset(subset) => (Listing::Flat(subset), None),
        // Its registry holds only its own tools: all of them, flat.
        Surface::CompatObsidian => (Listing::Flat(Subset::Full), None),
        Surface::Default => {
            if let Some(subset) = settings.advertise {
                return (Listing::Flat(subset), None);
            }
            if settings.mode != FacadeMode::Auto {
                return (by_mode(settings.mode), None);
            }
            let explanation = explain_auto(settings, client_name);
            let listing = match FacadeMode::parse(&explanation.mode) {
                Some(mode) => by_mode(mode),
                None => Listing::Triad,
            };
            (listing, Some(explanation))
        }
    }
}

impl FacadeMode {
    pub fn parse(text: &str) -> Option<FacadeMode> {
        Some(match text {
            "triad" => FacadeMode::Triad,
            "domain" => FacadeMode::Domain,
            "flat" => FacadeMode::Flat,
            "auto" => FacadeMode::Auto,
            _ => return None,
        })
    }
}

fn explain_auto(settings: &FacadeSettings, client_name: Option<&str>) -> AutoExplanation {
    let configured_keys: Vec<String> = settings.auto_clients.iter().map(|(k, _)| k.clone()).collect();
    // The name as the client gave it: bounded, control characters stripped.
    let client: Option<String> = client_name
        .map(|n| n.chars().filter(|c| !c.is_control()).take(128).collect::<String>())
        .filter(|n| !n.is_empty());
    let base = AutoExplanation {
        client_name: client.clone(),
        configured_keys,
        built_in_keys: Vec::new(),
        rule: "no-client-name".into(),
        matched_key: None,
        fallback: "triad".into(),
        mode: "triad".into(),
    };
    let Some(client) = client else { return base };
    let lower = client.to_lowercase();
    for (key, mode) in &settings.auto_clients {
        if lower.contains(&key.to_lowercase()) {
            let mode = if *mode == FacadeMode::Auto { FacadeMode::Triad } else { *mode };
            return AutoExplanation {
                rule: "configured-override".into(),
                matched_key: Some(key.clone()),
                mode: mode.as_str().into(),
                ..base
            };
        }
    }
    AutoExplanation { rule: "no-match".into(), ..base }
}

/// A tool definition as advertised, independent of the wire protocol.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AdvertisedTool {
    pub name: String,
    pub title: String,
    pub description: String,
    pub input_schema: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Map<String, Value>>,
    pub annotations: Annotations,
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub meta: Map<String, Value>,
    #[serde(skip)]
    pub icons: Vec<Icon>,
}

/// The hints a listing says (`Annotations::read_only_hint`, `destructive_hint`), as the wire does.
impl Serialize for Annotations {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut hints = Map::new();
        if let Some(read_only) = self.read_only_hint() {
            hints.insert("readOnlyHint".into(), read_only.into());
        }
        if let Some(destructive) = self.destructive_hint() {
            hints.insert("destructiveHint".into(), destructive.into());
        }
        hints.insert("openWorldHint".into(), self.open_world.into());
        hints.serialize(s)
    }
}

/// Whether `name` is one of the facade's own tools (never listed flat, never a search hit).
pub fn is_facade_tool(name: &str) -> bool {
    TRIAD_TOOLS.contains(&name)
}

/// The tool's own advertised definition.
pub fn advertise_tool(tool: &Registered, settings: &FacadeSettings, always_load: bool) -> AdvertisedTool {
    let mut meta = Map::new();
    if always_load {
        meta.insert("anthropic/alwaysLoad".into(), Value::Bool(true));
    }
    if tool.spec.whole_note_reader {
        meta.insert("anthropic/maxResultSizeChars".into(), json!(settings.max_result_size_chars));
    }
    AdvertisedTool {
        name: tool.name().to_string(),
        title: tool.spec.title.to_string(),
        description: tool.spec.description.to_string(),
        input_schema: tool.advertised_input.clone(),
        output_schema: tool.advertised_output.clone().filter(|_| settings.list_output_schemas),
        annotations: tool.annotations,
        meta,
        icons: tool.spec.icons.to_vec(),
    }
}

/// The tools this caller may see listed, in name order (facade tools excluded).
pub fn listed<'r>(
    registry: &'r Registry,
    settings: &FacadeSettings,
    grants: Option<&dyn Grants>,
) -> Vec<&'r Registered> {
    registry
        .iter()
        .filter(|t| !is_facade_tool(t.name()))
        .filter(|t| verdict(t, settings.profile, &settings.rules, grants).is_listed())
        .collect()
}

/// What `tools/list` returns for this listing and caller.
pub fn advertise(
    registry: &Registry,
    settings: &FacadeSettings,
    listing: Listing,
    grants: Option<&dyn Grants>,
) -> Vec<AdvertisedTool> {
    let visible = listed(registry, settings, grants);
    match listing {
        Listing::Flat(subset) => {
            visible.into_iter().filter(|t| subset.includes(t)).map(|t| advertise_tool(t, settings, false)).collect()
        }
        Listing::Triad => {
            let mut out: Vec<AdvertisedTool> = TRIAD_TOOLS
                .iter()
                .filter_map(|name| registry.get(name))
                .filter(|t| verdict(t, settings.profile, &settings.rules, grants).is_listed())
                .map(|t| advertise_tool(t, settings, true))
                .collect();
            let beside =
                CONNECTOR_TOOLS.iter().chain(if settings.triad_hot_path { HOT_PATH_TOOLS.iter() } else { [].iter() });
            for name in beside {
                if let Some(tool) = visible.iter().find(|t| t.name() == *name) {
                    out.push(advertise_tool(tool, settings, true));
                }
            }
            out
        }
        Listing::Domain => domain_tools(&visible),
    }
}

/// One `{action, args}` meta-tool per domain with a visible member.
pub fn domain_tools(visible: &[&Registered]) -> Vec<AdvertisedTool> {
    Domain::ALL
        .into_iter()
        .filter_map(|domain| {
            let members: Vec<&&Registered> = visible.iter().filter(|t| t.spec.domain == domain).collect();
            if members.is_empty() {
                return None;
            }
            let title = domain.blurb().0;
            let blurb = blurb_for(domain, &members);
            let actions: Vec<&str> = members.iter().map(|t| t.name()).collect();
            // How to call a domain tool is said once, in the routing sentence of the instructions.
            let lines: Vec<String> =
                members.iter().map(|t| format!("- {}: {}", t.name(), action_summary(t.spec.description))).collect();
            let description = format!("{blurb} Actions:\n{}", lines.join("\n"));
            let input_schema = json!({
                "type": "object",
                "properties": {
                    "action": { "type": "string", "enum": actions },
                    "args": { "type": "object" }
                },
                "required": ["action"]
            });
            let Value::Object(input_schema) = input_schema else { unreachable!("a literal object") };
            Some(AdvertisedTool {
                name: domain.as_str().to_string(),
                title: title.to_string(),
                description,
                input_schema,
                output_schema: None,
                annotations: Annotations {
                    read_only: members.iter().all(|t| t.annotations.read_only),
                    destructive: members.iter().any(|t| t.annotations.destructive),
                    open_world: members.iter().any(|t| t.annotations.open_world),
                },
                meta: Map::new(),
                icons: Vec::new(),
            })
        })
        .collect()
}

/// A domain's purpose as these tools (the caller's, in that domain) can serve it.
fn blurb_for(domain: Domain, members: &[&&Registered]) -> &'static str {
    if members.iter().all(|t| t.annotations.read_only) { domain.read_blurb() } else { domain.blurb().1 }
}

/// The one routing sentence that opens the server instructions for a listing (well within
/// Codex's 512-character cut).
pub fn routing_sentence(listing: Listing) -> &'static str {
    match listing {
        Listing::Triad => {
            "Find tools with find_capability, read one's schema with describe_capability, then run it with call_capability (or call any tool by its name)."
        }
        Listing::Domain => {
            "Each tool is a domain (notes, search, admin ...): call it with {\"action\": <capability>, \"args\": {...}}; describe_capability gives an action's schema."
        }
        Listing::Flat(_) => {
            "Call the listed tools directly; tools not listed here stay callable by name, and find_capability searches the whole catalogue."
        }
    }
}

/// What the parameters many tools share mean, said once here rather than in every tool's
/// advertised schema (`registry::shared_parameters_said_once`).
pub const SHARED_PARAMETERS: &str = "Shared parameters: response_format concise returns only the fields you act on, detailed the full payload; idempotency_key (tools that change something): a retry with the same key and arguments returns the first result; cursor: an answer's next_cursor, for the next page (limit sets a page's size); prev_hash: the content_hash you read, refused if the note changed since; elicit_token: a destructive call answered elicit_required runs when resent with the token a person minted for it.";

/// Server instructions: the routing sentence first, then the parameters many tools share, then
/// the domains this caller can reach.
pub fn instructions(listing: Listing, visible: &[&Registered], profile_hidden: usize) -> String {
    let mut text = format!(
        "{} obsidian-tc serves Obsidian vaults; every call is checked against your scopes. {SHARED_PARAMETERS}",
        routing_sentence(listing)
    );
    if profile_hidden > 0 {
        text.push_str(&format!(
            " tool_facade.profile = \"core\": {profile_hidden} more tool(s) exist but are hidden; find_capability names them."
        ));
    }
    let mut lines = Vec::new();
    for domain in Domain::ALL {
        let members: Vec<&&Registered> = visible.iter().filter(|t| t.spec.domain == domain).collect();
        if !members.is_empty() {
            let names: Vec<&str> = members.iter().map(|t| t.name()).take(4).collect();
            let (title, blurb) = (domain.blurb().0, blurb_for(domain, &members));
            lines.push(format!("- {title}: {blurb} (e.g. {})", names.join(", ")));
        }
    }
    if !lines.is_empty() {
        text.push_str("\n\nCapabilities by domain:\n");
        text.push_str(&lines.join("\n"));
    }
    text
}

/// An action's line in a domain tool: the description's first clause (up to its first colon,
/// semicolon or parenthesis), at most 80 characters cut at a word. The action's full
/// description is describe_capability's.
pub fn action_summary(description: &str) -> String {
    let sentence = crate::registry::summary(description);
    let clause = sentence
        .find([':', ';', '('])
        .filter(|at| *at >= 12)
        .map_or(sentence.as_str(), |at| sentence[..at].trim_end_matches([' ', ',']));
    let clause = clause.trim_end_matches('.');
    if clause.chars().count() <= 80 {
        return clause.to_string();
    }
    let cut: String = clause.chars().take(80).collect();
    match cut.rfind(' ') {
        Some(at) => format!("{}...", cut[..at].trim_end_matches([',', ' '])),
        None => format!("{cut}..."),
    }
}

/// Summary rows for find_capability hits.
pub fn hit_summary(tool: &Registered) -> String {
    summary(tool.spec.description)
}
