//! Obsidian's structured file formats, read and edited with no I/O: JSON Canvas (`.canvas`),
//! the Tasks plugin's task lines and query language, Excalidraw drawings (`.excalidraw.md`),
//! Bases (`.base`) and a Dataview query (DQL) subset. Every function takes the file's text (or
//! rows the caller read from the index) and returns values or the new text (or a refusal as a
//! `ToolError` from the one error table); none of them reads or writes a vault.
//!
//! The three query languages are folders split along their seams, each re-exporting its public
//! API from its `mod.rs`: `dql/` (lexer, parser, values, dates, inline fields, sources,
//! evaluation, built-in functions, running), `bases/` (YAML loading, typed sections, validation,
//! merge patches, writing, the expression lexer and parser, values, dates, evaluation, functions,
//! running) and `tasks/` (the task model, task lines, toggling and recurrence, and the query
//! model, reading and running). `tests/tidy.rs` keeps every function in `src/` within 150 lines.

pub mod bases;
pub mod canvas;
pub mod dql;
pub mod excalidraw;
pub mod tasks;
