//! Obsidian's structured file formats, read and edited with no I/O: JSON Canvas (`.canvas`),
//! the Tasks plugin's task lines and query language, and Excalidraw drawings
//! (`.excalidraw.md`). Every function takes the file's text and returns values or the new text
//! (or a refusal as a `ToolError` from the one error table); none of them reads or writes a
//! vault.

pub mod canvas;
pub mod excalidraw;
pub mod tasks;
