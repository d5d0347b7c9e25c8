//! The wire constants every part of the server shares: protocol versions, header names, the
//! body limit and JSON-RPC error codes.

/// Protocol versions this server speaks, newest first (the first is the negotiation fallback).
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

pub(super) const SESSION_HEADER: &str = "mcp-session-id";
pub(super) const VERSION_HEADER: &str = "mcp-protocol-version";
/// Request bodies above this size get 413; far above any real `tools/call`.
pub(super) const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

pub(super) const PARSE_ERROR: i64 = -32700;
pub(super) const INVALID_REQUEST: i64 = -32600;
pub(super) const METHOD_NOT_FOUND: i64 = -32601;
pub(super) const INVALID_PARAMS: i64 = -32602;
/// Implementation-defined range, used by the SDKs for transport-level refusals.
pub(super) const SERVER_ERROR: i64 = -32000;
pub(super) const SESSION_NOT_FOUND: i64 = -32001;
