//! The docs domain's tools (`Domain::Docs`): each vault's external documentation corpus, the
//! folder `[knowledge] docs_folder` names.

pub mod knowledge_get_critical;
pub mod knowledge_search;

use otc_errors::ToolError;

use otc_kernel::CallContext;
use otc_kernel::reading::View;

/// The docs folder of `view` (no slashes at either end), checked readable as a folder.
pub fn docs_folder(ctx: &CallContext<'_>, view: &View) -> Result<String, ToolError> {
    let folder = ctx.services().config.knowledge.docs_folder.trim_matches('/').to_string();
    view.folder_prefix(Some(&folder))?;
    Ok(folder)
}
