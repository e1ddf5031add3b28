//! Surfaces that speak another server's interface on top of the catalogue, so that its users
//! switch by changing one URL. Each compat tool takes that server's parameter names, calls
//! catalogue tools through the dispatcher (the same scopes, ACL, rate limits, provenance and
//! audit as any call) and answers with that server's output fields.

pub mod obsidian;
