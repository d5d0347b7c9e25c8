//! The catalog as data: what upstreams listed, admitted, merged and indexed.
//!
//! - [`ingest`]: admission of upstream tool definitions (name charset and text sizes, hidden
//!   characters removed).
//! - [`snapshot`]: the immutable merged catalog (tools, routing, index, fingerprint, sources,
//!   policy applied) and the pure merge that builds it.
//! - [`resolve`]: which tool a client's name means (only spellings that cannot name another).
//! - [`manifest`]: the last good catalog on disk, written atomically.
//! - [`index_file`]: the search index persisted beside it (a cache keyed on the build and the
//!   tools; a start from the manifest loads it instead of building it).
//! - [`report`]: what a refresh reports, per upstream (last error, next attempt).

pub mod index_file;
pub mod ingest;
pub mod manifest;
pub mod report;
pub mod resolve;
pub mod snapshot;

pub use snapshot::{Collision, PinnedNames, Snapshot, UpstreamState};
