//! The git domain's tools (`Domain::Git`), one file each: the vault's history from its change
//! log, where every write is a commit.

pub mod git_commit;
pub mod git_diff;
pub mod git_log;
pub mod git_stage;
pub mod git_status;
