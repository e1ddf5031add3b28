//! The knowledge domain's tools (`Domain::Knowledge`), one file each.

pub mod audit_provenance;
