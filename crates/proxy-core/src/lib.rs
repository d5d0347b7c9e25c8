//! proxy-core: what the proxy does, as pure functions over a catalog snapshot.
//!
//! # Layout
//!
//! - [`tools`]: the four tools the proxy exposes (`mcp_search`, `mcp_describe`, `mcp_call`,
//!   `mcp_refresh`): their fixed definitions, argument parsing, search (lexical, or hybrid with
//!   the semantic arm's vectors passed in) and describe rendering, call preparation (resolve →
//!   repair → validate) and result shapes.
//! - [`catalog`]: admission of upstream tools, the snapshot (merge, policy, index, routing),
//!   name resolution and the manifest.
//! - [`args`]: argument repair and JSON Schema validation.
//! - [`policy`]: `TOOLS_ALLOW` / `TOOLS_DENY` / `READ_ONLY` / `PINNED_TOOLS`.
//! - [`redact`]: URLs as logs, reports and the manifest show them.
//!
//! No actix and no network: the HTTP layer and the actors call into this crate, and every rule
//! here is unit-tested on plain values.

#![forbid(unsafe_code)]

pub mod args;
pub mod catalog;
pub mod policy;
pub mod redact;
pub mod tools;
