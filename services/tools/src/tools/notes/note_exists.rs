use otc_catalog::{Domain, ResponseFormat as Format, ToolSpec};
use otc_errors::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use otc_kernel::{CallContext, Tool};

pub struct NoteExists;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub vault: String,
    pub path: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    pub vault: String,
    pub path: String,
    pub exists: bool,
    /// file or folder (absent when nothing is there).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(rename = "type")]
    pub kind: Option<String>,
}

impl Tool for NoteExists {
    type Input = Input;
    type Output = Output;
    const SPEC: ToolSpec = ToolSpec {
        scopes: &["read:notes"],
        response_format: Format::Fixed { why: "one boolean and a type" },
        ..ToolSpec::base(
            "note_exists",
            "Does a note exist",
            "Says whether a path holds a note, attachment or folder you can read, without reading it; one you \
             cannot read answers exists: false.",
            Domain::Notes,
        )
    };

    async fn call(ctx: &CallContext<'_>, input: Input) -> Result<Output, ToolError> {
        let view = ctx.view(&input.vault).await?;
        let path = input.path.trim_end_matches('/').to_string();
        otc_vault::check_path(&path).map_err(|e| e.detail("field", "path"))?;
        let mut kind = None;
        let mut tx = ctx.begin().await?;
        if view.can_read(&path) && tx.file(view.vault.id, &path).await?.is_some() {
            kind = Some("file");
        } else {
            // A folder exists for the caller when a file they can read is under it (the folder
            // name itself need not match their read globs).
            let under = tx.list_files(view.vault.id, &format!("{path}/"), true, None, view.readable(), None, 1).await?;
            if !under.is_empty() {
                kind = Some("folder");
            }
        }
        tx.commit().await?;
        Ok(Output { vault: view.vault.name.clone(), path, exists: kind.is_some(), kind: kind.map(str::to_string) })
    }
}
