//! `sqlx::migrate!` embeds the migrations at compile time; a new or changed migration must
//! rebuild this crate even when no Rust source changed (stable Rust cannot track the folder
//! from the macro).
fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
