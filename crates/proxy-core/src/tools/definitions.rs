//! The four tools as a client sees them in `tools/list`: their names, fixed definitions
//! (byte-stable, so clients may cache them) and the bounds their arguments must keep.

use serde_json::{json, Value};

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

/// The workflow the server's `instructions` open with. Clients often show the four tools under
/// a prefix (`searchproxy_mcp_search`), so the text names each by its role first: a model that
/// copied a bare name from here would call a tool its client does not know.
pub const WORKFLOW: &str = "This server gives access to the tools of other MCP servers through four tools \
(your client may show their names with a prefix, e.g. x_mcp_search). Workflow: find a tool with the search \
tool (mcp_search), read its full schema with the describe tool (mcp_describe) when its parameters are unclear, \
and run it with the call tool (mcp_call). Run it at once when you already know the exact tool name and \
arguments.";

/// The `tools` array of `tools/list`, as JSON text (fixed, byte-stable).
pub fn definitions() -> Value {
    json!([
        {
            "name": SEARCH,
            "description": "Find tools across all connected MCP servers. A hit gives a tool's name, source, description and parameters (`x?` is optional). If they suffice, run it with the call tool (mcp_call); else first get its full schema with the describe tool (mcp_describe): for object parameters, or a list ending in `…`. No hit means no such tool: rephrase or try a source.",
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
            "description": "Get the full definitions (inputSchema, outputSchema, annotations) of up to 10 tools by exact name.",
            "inputSchema": {
                "type": "object",
                "properties": {"names": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_DESCRIBE}},
                "required": ["names"]
            },
            "annotations": {"readOnlyHint": true}
        },
        {
            "name": CALL,
            "description": "Run a tool by its exact name, as the search tool (mcp_search) gives it, with arguments matching its inputSchema. The tool may ask the user or the model something while it runs (a confirmation, a choice, a completion, the roots): the client's answer is passed back to it.",
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
