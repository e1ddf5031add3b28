//! Link rewrites, proven by parsing the result again (see the crate docs).
