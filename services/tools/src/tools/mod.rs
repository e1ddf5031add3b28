//! One file per tool (its input, output, declaration and handler together), in a folder per
//! catalogue domain (`Domain`), as find_capability and the domain meta-tools group them: the
//! write_note tool is `tools::notes::write_note`. A test in `toolset.rs` holds each tool to the
//! folder of its domain.

pub mod admin;
pub mod attachments;
pub mod automation;
pub mod docs;
pub mod git;
pub mod knowledge;
pub mod links;
pub mod metadata;
pub mod notes;
pub mod search;
pub mod structured;
pub mod vault;
pub mod workspace;
