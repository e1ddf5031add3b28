//! Integration tests: one binary, against real Postgres (pgvector), Redis and an S3 server
//! started by `scripts/services up`. Each test gets its own database and prefixes.

mod harness;

mod access;
mod acl;
mod audit;
mod auth;
mod big_note;
mod bookmarks;
mod bulk;
mod chart;
mod cli;
mod conformance;
mod embeddings;
mod fulltext;
mod fuzz;
mod graph;
mod health;
mod index;
mod isolation;
mod live_app;
mod mcp;
mod modern;
mod move_faults;
mod moves;
mod names;
mod periodic;
mod quality;
mod quotas;
mod read;
mod resources;
mod restore;
mod rls;
mod rollout;
mod search;
mod shutdown;
mod sso;
mod structured;
mod sync;
mod sync_acl;
mod telemetry;
mod tidy;
mod wiki;
mod wiki_pages;
mod worker;
mod write;
