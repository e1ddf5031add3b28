//! Writes docs/error-codes.md from the error table.
fn main() -> std::io::Result<()> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/error-codes.md");
    std::fs::create_dir_all(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs"))?;
    std::fs::write(path, otc_errors::markdown())?;
    println!("wrote docs/error-codes.md");
    Ok(())
}
