//! Vault rules with no I/O: what a vault path may be, which local files sync leaves alone, how a
//! link resolves to a file (Obsidian's rule), and which files Obsidian's Excluded files covers.

pub mod acl;
pub mod egress;
pub mod excluded;
pub mod ignore;
pub mod links;
pub mod path;
pub mod periodic;
pub mod templates;

pub use path::{check_new_name, check_path, clash_key, invisible_characters, windows_problem};
