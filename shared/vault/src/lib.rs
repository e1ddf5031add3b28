//! Vault rules with no I/O: what a vault path may be, and which local files sync leaves alone.

pub mod ignore;
pub mod path;

pub use path::{check_new_name, check_path};
