//! Obsidian's structured file formats, read and edited with no I/O: JSON Canvas (`.canvas`),
//! the Tasks plugin's task lines and query language, Excalidraw drawings (`.excalidraw.md`),
//! Bases (`.base`) and a Dataview query (DQL) subset. Every function takes the file's text (or
//! rows the caller read from the index) and returns values or the new text (or a refusal as a
//! `ToolError` from the one error table); none of them reads or writes a vault.

pub mod bases;
pub mod canvas;
pub mod dql;
pub mod excalidraw;
pub mod tasks;
