//! The attachments domain's tools (`Domain::Attachments`), one file each.

pub mod delete_attachment;
pub mod get_attachment;
pub mod list_attachments;
pub mod move_attachment;
pub mod ocr;
pub mod write_attachment;
