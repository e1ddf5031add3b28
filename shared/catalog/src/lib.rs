//! The tool catalogue's machinery, with no I/O: what a tool declares ([`def`]), the tags
//! derived from it ([`tags`]), registration and its checks ([`registry`]), schema lowering and
//! validation ([`schema`]), catalogue search ([`bm25`]), who sees which tool ([`visibility`]),
//! and what each surface advertises ([`facade`]).

pub mod bm25;
pub mod def;
pub mod facade;
pub mod registry;
pub mod schema;
pub mod tags;
pub mod visibility;

pub use def::{Domain, Heavy, Icon, ResponseFormat, ScopeClass, Sometimes, ToolSpec};
pub use facade::{AdvertisedTool, FacadeMode, FacadeSettings, Listing, Subset, Surface};
pub use registry::{Declaration, IDEMPOTENCY_KEY, IDEMPOTENCY_KEY_MAX_CHARS, Registered, RegistrationError, Registry};
pub use visibility::{Profile, Reason, Verdict, Visibility, VisibilityRules};
