//! Integration tests: one binary, against real Postgres (pgvector), Redis and an S3 server
//! started by `scripts/services up`. Each test gets its own database and prefixes.

// The binary's allocator, so each call's memory budget holds here as it does in service.
#[global_allocator]
static ALLOCATOR: otc_kernel::memory::Metered<mimalloc::MiMalloc> = otc_kernel::memory::Metered(mimalloc::MiMalloc);

mod harness;

mod access;
mod acl;
mod admin_api;
mod audit;
mod auth;
mod big_note;
mod bookmarks;
mod bulk;
mod canvas_links;
mod chart;
mod cli;
mod compat;
mod conformance;
mod connections;
mod console;
mod console_browser;
mod dataview;
mod embeddings;
mod erasure;
mod export;
mod fair_share;
mod fulltext;
mod fuzz;
mod git;
mod graph;
mod health;
mod index;
mod isolation;
mod knowledge;
mod live_app;
mod mcp;
mod memory;
mod models;
mod modern;
mod move_faults;
mod moves;
mod names;
mod ocr;
mod outages;
mod periodic;
mod pgbouncer;
mod plur;
mod quality;
mod quotas;
mod read;
mod read_only;
mod resources;
mod restore;
mod rls;
mod rollout;
mod scenario;
mod search;
mod session_rerun;
mod shutdown;
mod sso;
mod structured;
mod sync;
mod sync_acl;
mod telemetry;
mod tidy;
mod vault_admin;
mod webdriver;
mod wiki;
mod wiki_pages;
mod work;
mod worker;
mod write;
