//! Pure MCP wire handling: JSON-RPC envelopes, tool types, SSE decoding, protocol versions.
//! No actix imports: unit-tested without a runtime.

pub mod jsonrpc;
pub mod modern;
pub mod sse;
pub mod types;
pub mod version;
