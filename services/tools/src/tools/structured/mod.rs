//! The structured-documents domain's tools (`Domain::Structured`), one file each.

pub mod add_kanban_card;
pub mod canvas;
pub mod create_base;
pub mod create_excalidraw;
pub mod list_kanban_boards;
pub mod move_kanban_card;
pub mod query_base;
pub mod read_base;
pub mod read_excalidraw;
pub mod read_kanban_board;
pub mod tables;
pub mod update_base;
pub mod update_excalidraw;
