//! [`UpstreamOptions`]: how a demo upstream behaves, fixed when it starts.

use serde_json::Value;

/// How a demo upstream behaves; everything a test may want to vary is here.
#[derive(Debug, Clone)]
pub struct UpstreamOptions {
    /// Tool definitions served by `tools/list`, verbatim.
    pub tools: Vec<Value>,
    /// Mint `Mcp-Session-Id` on `initialize` and require it afterwards (400 missing, 404
    /// unknown); when false no session header is ever sent and any received one is ignored.
    pub stateful: bool,
    /// Answer requests as `text/event-stream` (priming event, then the response) instead of
    /// `application/json`.
    pub sse: bool,
    /// Split `tools/list` into pages of this many tools, linked by `nextCursor`.
    pub page_size: Option<usize>,
    /// `instructions` of the `initialize` result.
    pub instructions: Option<String>,
    /// `serverInfo.name` of the `initialize` result.
    pub name: String,
    /// When set, every request must carry `Authorization: Bearer <token>` or gets 401.
    pub bearer_token: Option<String>,
    /// Advertise `tools.listChanged` and serve a GET stream that carries
    /// `notifications/tools/list_changed` whenever the tools are replaced (and opens with a
    /// `ping` request the client must answer, as Playwright MCP does).
    pub list_changed: bool,
}

impl Default for UpstreamOptions {
    /// No tools, stateful, JSON replies, one page, no auth: tests override what they exercise.
    fn default() -> Self {
        UpstreamOptions {
            tools: Vec::new(),
            stateful: true,
            sse: false,
            page_size: None,
            instructions: None,
            name: "demo-upstream".to_string(),
            bearer_token: None,
            list_changed: false,
        }
    }
}

impl UpstreamOptions {
    /// The embedded demo catalog, served the way LiteLLM serves it: stateful, SSE replies.
    pub fn demo() -> Self {
        UpstreamOptions {
            tools: crate::demo_tools(),
            stateful: true,
            sse: true,
            // Several pages, so the demo also exercises the proxy's pagination.
            page_size: Some(25),
            instructions: Some(
                "Demo upstream of mcp-search-proxy. Tools are named provider-tool_name. Only the \
                 demo-* tools do real work (echo, add, a per-session counter, a failing tool, an \
                 image); the other providers are invented SaaS services whose tools only report \
                 the arguments they received."
                    .to_string(),
            ),
            name: "mcp-search-proxy-demo".to_string(),
            bearer_token: None,
            list_changed: false,
        }
    }
}
