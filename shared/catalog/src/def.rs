//! What a tool declares about itself. Everything else (tags, annotations, the rate-limit class
//! check, advertised schemas) is derived from this at registration.

use std::fmt;

/// The facade domains: each tool belongs to exactly one, and domain mode advertises one
/// meta-tool per domain that has a visible member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Domain {
    Notes,
    Metadata,
    Links,
    Search,
    Vault,
    Attachments,
    Structured,
    Workspace,
    Automation,
    Git,
    Knowledge,
    Docs,
    Admin,
}

impl Domain {
    /// Every domain, in the order domain mode lists them.
    pub const ALL: [Domain; 13] = [
        Domain::Notes,
        Domain::Metadata,
        Domain::Links,
        Domain::Search,
        Domain::Vault,
        Domain::Attachments,
        Domain::Structured,
        Domain::Workspace,
        Domain::Automation,
        Domain::Git,
        Domain::Knowledge,
        Domain::Docs,
        Domain::Admin,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Domain::Notes => "notes",
            Domain::Metadata => "metadata",
            Domain::Links => "links",
            Domain::Search => "search",
            Domain::Vault => "vault",
            Domain::Attachments => "attachments",
            Domain::Structured => "structured",
            Domain::Workspace => "workspace",
            Domain::Automation => "automation",
            Domain::Git => "git",
            Domain::Knowledge => "knowledge",
            Domain::Docs => "docs",
            Domain::Admin => "admin",
        }
    }

    /// Title and one-line purpose, used by the domain meta-tools and the instructions. Each
    /// purpose says only what registered tools do (the catalogue tests hold it to that), and a
    /// caller whose tools in the domain only read gets [`Domain::read_blurb`] instead.
    pub fn blurb(self) -> (&'static str, &'static str) {
        match self {
            Domain::Notes => ("Notes", "Read, write, move, copy and delete notes; restore earlier versions."),
            Domain::Metadata => ("Metadata", "Frontmatter, properties and tags."),
            Domain::Links => ("Links", "Backlinks, outgoing links, orphans and link upkeep."),
            Domain::Search => ("Search", "Ranked, text, regex, JSONLogic and Dataview search over notes."),
            Domain::Vault => ("Vault", "The vaults you can reach and their search index."),
            Domain::Attachments => ("Attachments", "Images, PDFs and other files in the vault."),
            Domain::Structured => {
                ("Structured documents", "Bases, canvases, drawings, Kanban boards and Markdown tables.")
            }
            Domain::Workspace => ("Workspace", "Bookmarks, workspaces and periodic notes."),
            Domain::Automation => ("Automation", "Templates, Dataview queries, tasks, bundles and obsidian:// links."),
            Domain::Git => ("Git", "The vault's history: every write is a commit."),
            Domain::Knowledge => (
                "Knowledge",
                "Provenance, the wiki's pages, and memory: entities and the facts about them over time, and the \
                 episodes of agents' past work.",
            ),
            Domain::Docs => ("External docs", "Search the external documentation corpus."),
            Domain::Admin => ("Admin", "Server health, configuration, visibility and tasks."),
        }
    }

    /// The purpose for a caller whose tools in this domain only read.
    pub fn read_blurb(self) -> &'static str {
        match self {
            Domain::Notes => "Read and list notes and their earlier versions.",
            Domain::Links => "Backlinks, outgoing links, orphans and unresolved links.",
            Domain::Attachments => "Read and list images, PDFs and other files in the vault.",
            other => other.blurb().1,
        }
    }

    pub fn parse(name: &str) -> Option<Domain> {
        Domain::ALL.into_iter().find(|d| d.as_str() == name)
    }
}

impl fmt::Display for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The rate-limit tier a call is charged to, lowest first. A tool's class is the highest
/// action among its scopes (read when it needs none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ScopeClass {
    Read,
    Write,
    Delete,
    Admin,
    Execute,
    Bulk,
}

impl ScopeClass {
    pub fn as_str(self) -> &'static str {
        match self {
            ScopeClass::Read => "read",
            ScopeClass::Write => "write",
            ScopeClass::Delete => "delete",
            ScopeClass::Admin => "admin",
            ScopeClass::Execute => "execute",
            ScopeClass::Bulk => "bulk",
        }
    }

    pub fn of_action(action: &str) -> Option<ScopeClass> {
        Some(match action {
            "read" => ScopeClass::Read,
            "write" => ScopeClass::Write,
            "delete" => ScopeClass::Delete,
            "admin" => ScopeClass::Admin,
            "execute" => ScopeClass::Execute,
            "bulk" => ScopeClass::Bulk,
            _ => return None,
        })
    }
}

/// Whether a tool can destroy data, or needs a human confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sometimes {
    Never,
    /// On some calls (an overwrite flag, a boundary crossed).
    OnSomeCalls,
    Always,
}

/// Whether a tool takes `response_format` (concise/detailed), or why it does not. Every tool is
/// in exactly one of the two groups, so the decision cannot be skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseFormat {
    Takes,
    Fixed { why: &'static str },
}

/// An icon for clients that show one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Icon {
    pub src: &'static str,
    pub mime_type: &'static str,
}

/// A tool's own declaration: the one place each fact about it is written.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    /// snake_case, unique across the catalogue.
    pub name: &'static str,
    pub title: &'static str,
    /// The first sentence is the summary `find_capability` shows.
    pub description: &'static str,
    pub domain: Domain,
    /// Every scope the caller must hold; empty means any authenticated caller.
    pub scopes: &'static [&'static str],
    pub scope_class: ScopeClass,
    /// Tags no other field can derive (see `tags::DECLARABLE`).
    pub declared_tags: &'static [&'static str],
    pub destructive: Sometimes,
    pub hitl: Sometimes,
    pub response_format: ResponseFormat,
    /// In the `core` profile (every tool is in `full`).
    pub core: bool,
    /// In the curated essentials surface.
    pub essentials: bool,
    /// Returns whole notes: paged by the byte budget and advertised with
    /// `anthropic/maxResultSizeChars`.
    pub whole_note_reader: bool,
    /// Whether tools/list carries the output schema. Off for the tools listed beside the triad
    /// on every connection (the meta-tools and fetch), whose listing must stay small; their
    /// outputs are still checked against the schema in debug builds.
    pub advertise_output_schema: bool,
    pub icons: &'static [Icon],
    /// The heavy work the tool does, if any: each gateway runs only so many such calls of one
    /// tenant (and of one principal) at once, so one tenant's heavy calls queue behind its own.
    pub heavy: Option<Heavy>,
}

/// Kinds of heavy work, each shared out per tenant on every gateway (`fair_share`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Heavy {
    /// Reads many notes' text (regex, JSONLogic, Dataview, Bases, whole-vault link checks).
    Scan,
    /// Walks a vault's link graph.
    Graph,
    /// Changes or packs many notes in one call.
    Bulk,
    /// Rebuilds a vault's index.
    Index,
    /// Calls a model: embeddings, chat, OCR.
    Model,
    /// Returns many notes or a whole attachment.
    LargeRead,
}

impl Heavy {
    pub const ALL: [Heavy; 6] = [Heavy::Scan, Heavy::Graph, Heavy::Bulk, Heavy::Index, Heavy::Model, Heavy::LargeRead];

    pub fn as_str(self) -> &'static str {
        match self {
            Heavy::Scan => "scan",
            Heavy::Graph => "graph",
            Heavy::Bulk => "bulk",
            Heavy::Index => "index",
            Heavy::Model => "model",
            Heavy::LargeRead => "large_read",
        }
    }
}

impl ToolSpec {
    /// A read-only admin-style default to build a spec from with struct update syntax.
    pub const fn base(name: &'static str, title: &'static str, description: &'static str, domain: Domain) -> Self {
        Self {
            name,
            title,
            description,
            domain,
            scopes: &[],
            scope_class: ScopeClass::Read,
            declared_tags: &[],
            destructive: Sometimes::Never,
            hitl: Sometimes::Never,
            response_format: ResponseFormat::Fixed { why: "" },
            core: true,
            essentials: false,
            whole_note_reader: false,
            advertise_output_schema: true,
            icons: &[],
            heavy: None,
        }
    }
}
