//! The vault domain's tools (`Domain::Vault`), one file each.

pub mod admin;
pub mod get_vault;
pub mod index_vault;
pub mod list_vaults;
pub mod restore;
