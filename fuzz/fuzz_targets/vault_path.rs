//! Path validation never panics, and what it accepts stays inside the vault.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|path: &str| {
    let ok = otc_vault::check_path(path).is_ok();
    if ok {
        assert!(!path.is_empty() && !path.starts_with('/'));
        assert!(path.split('/').all(|s| !s.is_empty() && s != "." && s != ".."));
        assert!(!path.chars().any(|c| c.is_control()));
    }
    if otc_vault::check_new_name(path).is_ok() {
        assert!(ok, "a valid new name is a valid path");
        assert!(!path.contains("[[") && !path.contains('#') && !path.contains('|'));
    }
});
