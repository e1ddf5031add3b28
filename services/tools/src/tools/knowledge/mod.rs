//! The knowledge domain's tools (`Domain::Knowledge`), one file each.

pub mod audit_provenance;
pub mod find_existing_page;
pub mod note_quality_report;
