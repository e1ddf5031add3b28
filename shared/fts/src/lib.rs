//! Full-text search with no I/O: the tokeniser (one for documents and queries), immutable
//! segments (an inverted index with positions, as bytes), their merge, the query language,
//! BM25 ranking and text search.
//!
//! Postgres keeps the segments (`fts_segments`) and which segment holds each note's current
//! chunks; the gateways cache decoded segments (they never change) and search them in memory.

pub mod query;
pub mod search;
pub mod segment;
pub mod tokenize;

pub use query::{Query, QueryError};
pub use segment::{Corrupt, Doc, DocSource, Segment, SegmentBuilder, merge};
