//! Path validation never panics, and what it accepts stays inside the vault.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|path: &str| {
    let ok = otc_vault::check_path(path).is_ok();
    if ok {
        assert!(!path.is_empty() && !path.starts_with('/'));
        assert!(path.split('/').all(|s| !s.is_empty() && s != "." && s != ".."));
        assert!(path.split(['/', '\\']).all(|s| s != "." && s != ".."), "no traversal between backslashes either");
        assert!(!path.chars().any(|c| c.is_control()));
    }
    if otc_vault::check_new_name(path).is_ok() {
        assert!(ok, "a valid new name is a valid path");
        assert!(!path.contains("[[") && !path.contains('#') && !path.contains('|'));
        assert!(otc_vault::windows_problem(path).is_none(), "a new name is storable on Windows");
        assert!(otc_vault::invisible_characters(path).is_empty(), "a new name reads as what it is");
    }
    if ok {
        // Every path has a clash key, and it is the same for the path's NFC spelling.
        assert_eq!(otc_vault::clash_key(path), otc_vault::clash_key(&otc_vault::path::nfc(path)));
    }
});
