//! proxy-core: what the proxy does, as pure functions over a catalog snapshot.
//!
//! # Layout
//!
//! - [`tools`]: the four tools the proxy exposes (`mcp_search`, `mcp_describe`, `mcp_call`,
//!   `mcp_refresh`): their fixed definitions, a call parsed once into a typed request
//!   ([`tools::ToolRequest`]), search (lexical, or hybrid with the semantic arm's vectors
//!   passed in), describe, call preparation (resolve → repair → validate), and the typed
//!   outcome of each ([`tools::ToolOutcome`]), rendered as JSON only at the edge.
//! - [`catalog`]: admission of upstream tools, the snapshot (merge, policy, index, routing),
//!   name resolution, the manifest and the refresh reports.
//! - [`args`]: argument repair and JSON Schema validation.
//! - [`policy`]: `TOOLS_ALLOW` / `TOOLS_DENY` / `READ_ONLY` / `PINNED_TOOLS`.
//! - [`redact`]: URLs as logs, reports and the manifest show them.
//! - [`asking`]: the questions a tool asks its caller: one [`asking::Question`] and how it
//!   ends, the era-pair translations, the bounds and the one owner of the question timeout.
//! - [`request_state`]: the sealed `requestState` of a 2026-07-28 `mcp_call` that needs input.
//!
//! No actix and no network: the application service (`src/app.rs`), the HTTP layer and the
//! actors call into this crate, and every rule here is unit-tested on plain values.

#![forbid(unsafe_code)]

pub mod args;
pub mod asking;
pub mod catalog;
pub mod policy;
pub mod redact;
pub mod request_state;
pub mod tools;
