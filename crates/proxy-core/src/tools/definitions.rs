//! The four tools as a client sees them in `tools/list`: their names, fixed definitions
//! (byte-stable, so clients may cache them) and the bounds their arguments must keep.

use serde_json::{json, Value};

use crate::catalog::Snapshot;

pub const SEARCH: &str = "mcp_search";
pub const DESCRIBE: &str = "mcp_describe";
pub const CALL: &str = "mcp_call";
pub const REFRESH: &str = "mcp_refresh";

pub const DEFAULT_LIMIT: usize = 5;
pub const MAX_LIMIT: usize = 25;
pub const MAX_QUERIES: usize = 7;
pub const MAX_DESCRIBE: usize = 10;
/// Descriptions in search hits are clipped to this many characters.
pub const HIT_DESCRIPTION_CHARS: usize = 500;
/// Longest query, in characters: the search analyses no more (`search::MAX_QUERY_CHARS`), so
/// a longer one is refused here rather than cut silently; the model learns to send the need,
/// not the document.
pub use tool_search::MAX_QUERY_CHARS;

/// The `tools` array of `tools/list`, as JSON text (fixed, byte-stable).
pub fn definitions() -> Value {
    json!([
        {
            "name": SEARCH,
            "description": "Find tools across all connected MCP servers. Workflow: mcp_search -> mcp_describe (full schema) -> mcp_call. Hits list each tool's name, source, description and required parameters; if those suffice, call it directly. An empty result means no such tool exists: rephrase or pick another source.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {
                        "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "maxItems": MAX_QUERIES}],
                        "description": "What you want to do, in keywords or words (e.g. \"send email\"); or a list of up to 7 queries, each answered separately."
                    },
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT}
                },
                "required": ["query"]
            },
            "annotations": {"readOnlyHint": true}
        },
        {
            "name": DESCRIBE,
            "description": "Get the full definitions (inputSchema, outputSchema, annotations) of up to 10 tools by exact name, before calling them.",
            "inputSchema": {
                "type": "object",
                "properties": {"names": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_DESCRIBE}},
                "required": ["names"]
            },
            "annotations": {"readOnlyHint": true}
        },
        {
            "name": CALL,
            "description": "Call a tool by its exact name with arguments that match its inputSchema. Use a name from mcp_search; when unsure of the arguments, mcp_describe it first. A tool may ask the user or the model something while it runs (a confirmation, a choice, a completion, the workspace roots): the question reaches the client as the tool's own request, and the client's answer is passed back to the tool.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "arguments": {"type": "object", "description": "The tool's arguments."}
                },
                "required": ["name"]
            }
        },
        {
            "name": REFRESH,
            "description": "Re-list the tools of all upstream servers and rebuild the search index. Only needed when tools were added upstream since the last refresh.",
            "inputSchema": {"type": "object", "properties": {}}
        }
    ])
}

/// Whether `name` is a pinned upstream tool, called natively by its name.
pub fn is_pinned(snap: &Snapshot, name: &str) -> bool {
    snap.pinned.iter().any(|&i| snap.tools[i].tool.name == name)
}
