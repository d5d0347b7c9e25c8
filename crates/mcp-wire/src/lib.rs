//! mcp-wire: the MCP protocol as data, with no runtime and no actix.
//!
//! # Layout
//!
//! - [`jsonrpc`]: JSON-RPC 2.0 envelopes; [`jsonrpc::Incoming::parse`] classifies a body into
//!   request, notification or response and says precisely what is wrong with a bad one.
//! - [`types`]: tool definitions as upstreams list them (name, title and description parsed,
//!   every other member kept as compact, packed JSON text).
//! - [`raw`]: a JSON object read one level deep ([`raw::RawObject`]): how a relayed tool result
//!   passes through without being parsed into a tree.
//! - [`sse`]: the Server-Sent Events decoder and encoder (bounded, chunking-independent).
//! - [`version`]: the 2025-era protocol versions and negotiation, and [`Era`].
//! - [`modern`]: the 2026-07-28 revision: `_meta` keys, `Mcp-Method`/`Mcp-Name`/`Mcp-Param-*`
//!   header rules, refusals and their codes.
//! - [`asks`]: the questions a server asks its client during a call (elicitation, sampling,
//!   roots): what a client can answer, and their 2026-07-28 `inputRequests` form.
//! - [`call`]: a client's `tools/call` params read once ([`call::ToolCall`]): name, arguments,
//!   `_meta`, and a 2026-07-28 retry's `inputResponses` and `requestState`.
//! - [`trace`]: W3C Trace Context (`traceparent`, `tracestate`): parsing, the proxy's own span
//!   for a relayed call, what goes upstream.
//!
//! Everything here is pure and unit-tested without a runtime; the proxy's HTTP layer and its
//! upstream client both read and write the wire through it.

#![forbid(unsafe_code)]

pub mod asks;
pub mod call;
pub mod jsonrpc;
pub mod modern;
pub mod raw;
pub mod sse;
pub mod trace;
pub mod types;
pub mod version;

pub use version::Era;
