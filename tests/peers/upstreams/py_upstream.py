"""Upstream MCP server for the transport matrix: official Python SDK `mcp` 2.x (`MCPServer`).

Usage: .venv/bin/python tests/peers/upstreams/py_upstream.py [--port N] [--stateless] [--json]
  (default)    stateful: mints an Mcp-Session-Id, answers POSTs with SSE
  --stateless  no session id is minted (every request stands alone)
  --json       application/json replies instead of SSE
  --port N     listen on 127.0.0.1:N; 0 (the default) picks a free port

The app is dual-era (2025 `initialize` handshake and 2026-07-28 `server/discover` on one
endpoint). Once listening it prints one line `READY http://127.0.0.1:PORT/mcp` on stdout; logs go
to stderr. Tools (the same set as ts1_upstream.mjs and ts2_upstream.mjs):
  echo {text}   -> text block = text, structuredContent {"text": text}
  add {a, b}    -> text "a+b", structuredContent {"result": a+b} (integers)
  counter {}    -> per-session counter (global when there is no session): text "n", {"count": n}
  fail {}       -> raises, so the result has isError: true
  image {}      -> one image block (a 1x1 PNG, image/png)
"""

import argparse
import base64
from typing import Annotated

from _serve import serve
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import BaseModel

# A 1x1 PNG; the same bytes in every matrix upstream and in tests/transport_matrix.rs.
PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
NO_SESSION = "<no-session>"

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--port", type=int, default=0)
p.add_argument("--stateless", action="store_true")
p.add_argument("--json", action="store_true")
args = p.parse_args()

flavour = ("stateless" if args.stateless else "stateful") + ("-json" if args.json else "-sse")
mcp = MCPServer(
    name="matrix-py",
    version="0.1.0",
    instructions=f"Matrix test upstream (Python SDK, {flavour}): echo, add, counter, fail, image.",
)

# counter state: session id (or NO_SESSION) -> count
COUNTS: dict[str, int] = {}


class EchoOut(BaseModel):
    text: str


class CountOut(BaseModel):
    count: int


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def echo(text: str) -> Annotated[CallToolResult, EchoOut]:
    """Echo the given text back unchanged (text block and structuredContent.text)."""
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content={"text": text})


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def add(a: int, b: int) -> int:
    """Add two integer numbers and return the sum (structuredContent {"result": sum})."""
    return a + b


@mcp.tool()
def counter(ctx: Context) -> Annotated[CallToolResult, CountOut]:
    """Increment and return a counter kept per MCP session (one global counter without a session)."""
    key = (ctx.headers or {}).get("mcp-session-id") or NO_SESSION
    COUNTS[key] = COUNTS.get(key, 0) + 1
    n = COUNTS[key]
    return CallToolResult(content=[TextContent(type="text", text=str(n))], structured_content={"count": n})


@mcp.tool()
def fail() -> CallToolResult:
    """Always fails: the result has isError true and says why."""
    # A ToolError's message reaches the caller; other exceptions become a generic message.
    raise ToolError("this tool always fails")


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def image() -> ImageContent:
    """Return a tiny PNG picture as an image content block."""
    return ImageContent(type="image", data=PNG_B64, mime_type="image/png")


if __name__ == "__main__":
    base64.b64decode(PNG_B64, validate=True)
    serve(mcp, args.port, f"py_upstream {flavour}", json_response=args.json, stateless=args.stateless)
