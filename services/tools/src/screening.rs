//! What written text is screened for before a wiki commit stores it: instructions aimed at an
//! AI reader (prompt injection) and secrets. An explicit attempt to take over a reader's
//! instructions refuses the write (content_rejected); a weaker sign is a problem to look at;
//! a secret is replaced by a marker before anything is stored.
//!
//! The screen itself lives in `otc-screen` (normalised views, decoders, languages, bounds and the
//! labelled set it is measured on).

pub use otc_screen::{Screened, screen};
