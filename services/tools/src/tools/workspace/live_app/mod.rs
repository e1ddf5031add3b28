//! Tools that need a live Obsidian app: the active file, the command palette, QuickAdd, Make.md,
//! Remotely Save, Omnisearch, Datacore, Metadata Menu, Obsidian Git's staging. A hosted vault has
//! no running app, so each answers plugin_unavailable with a hint naming the tool that does the
//! job on the files. They carry the `plugin-bridge` tag and are hidden from listings unless
//! `tool_visibility.show_live_app_tools` is set; a call by name still gets the typed answer.
//!
//! Each tool's input takes the catalogue's parameter names without refusing any, so a prompt or
//! script written for the public implementation reaches this answer instead of a validation error.

use otc_errors::{ErrorCode, Hint, ToolError};
use schemars::JsonSchema;
use serde::Serialize;

use otc_kernel::CallContext;
use otc_kernel::reading::View;

/// What a live-app tool would need: the companion plugin or app feature, for the message.
pub struct Needs {
    pub tool: &'static str,
    /// What is missing, as a person names it ("the active file", "the QuickAdd plugin").
    pub what: &'static str,
    /// Best first; the last names no tool.
    pub hints: &'static [Hint],
}

/// A live-app tool never succeeds here, so its output has no fields (and is not advertised).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Never {}

/// plugin_unavailable for `needs`, once the caller is known to reach `vault` (an unreachable
/// vault answers vault_not_found as every other tool does).
pub async fn unavailable(ctx: &CallContext<'_>, needs: &Needs, vault: &str) -> ToolError {
    if let Err(err) = View::open(ctx, vault).await {
        return err;
    }
    ToolError::with_message(
        ErrorCode::PluginUnavailable,
        format!("{} needs {} in a running Obsidian; this vault is served from its files", needs.tool, needs.what),
    )
    .detail("needs", needs.what)
    .with_hints(needs.hints)
}

/// Why a live-app tool takes no response_format.
pub const FIXED: &str = "never answers with a result here: it needs a live Obsidian app";

/// Declares one live-app tool in its own file: its type, catalogue facts and hints. The input
/// takes `vault` and ignores the catalogue's other parameters; the handler answers
/// [`unavailable`].
macro_rules! live_app_tool {
    ($ty:ident {
        name: $name:literal,
        title: $title:literal,
        description: $description:literal,
        domain: $domain:ident,
        scopes: [$($scope:literal),+],
        class: $class:ident,
        needs: $what:literal,
        hints: [$(($text:literal, [$($tool:literal),*])),+ $(,)?] $(,)?
    }) => {
        pub struct $ty;

        // The catalogue's other parameters are accepted and not used.
        #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
        pub struct Input {
            pub vault: String,
        }

        const NEEDS: $crate::tools::workspace::live_app::Needs = $crate::tools::workspace::live_app::Needs {
            tool: $name,
            what: $what,
            hints: &[$(otc_errors::Hint { text: $text, tools: &[$($tool),*] }),+],
        };

        impl ::otc_kernel::Tool for $ty {
            type Input = Input;
            type Output = $crate::tools::workspace::live_app::Never;
            const ADVERTISE_OUTPUT: bool = false;
            const SPEC: otc_catalog::ToolSpec = otc_catalog::ToolSpec {
                scopes: &[$($scope),+],
                scope_class: otc_catalog::ScopeClass::$class,
                declared_tags: &["plugin-bridge"],
                response_format: otc_catalog::ResponseFormat::Fixed { why: $crate::tools::workspace::live_app::FIXED },
                core: false,
                ..otc_catalog::ToolSpec::base($name, $title, $description, otc_catalog::Domain::$domain)
            };

            async fn call(
                ctx: &::otc_kernel::CallContext<'_>,
                input: Input,
            ) -> Result<$crate::tools::workspace::live_app::Never, otc_errors::ToolError> {
                Err($crate::tools::workspace::live_app::unavailable(ctx, &NEEDS, &input.vault).await)
            }
        }
    };
}
pub(crate) use live_app_tool;
