"""Upstream MCP server whose tools ask their caller something: official Python SDK `mcp` 2.x.

Usage: .venv/bin/python tests/peers/upstreams/py_ask.py [--port N] [--stateless] [--json]

The app is dual-era, as py_upstream.py. Once listening it prints `READY http://127.0.0.1:PORT/mcp`.
Tools:
  confirm {}  -> ctx.elicit("Proceed?") and returns "action=<accept|decline|cancel>"
  where {}    -> ctx.session.list_roots() and returns the roots' URIs
  plain {}    -> returns "plain" (asks nothing)
"""

import argparse
import warnings

from _serve import serve
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--port", type=int, default=0)
p.add_argument("--stateless", action="store_true")
p.add_argument("--json", action="store_true")
args = p.parse_args()

# list_roots is deprecated as of 2026-07-28; the test is about what a proxy does with it anyway
warnings.simplefilter("ignore")

mcp = MCPServer(name="ask-py", version="0.1.0", instructions="Tools that ask their caller something.")


class Confirm(BaseModel):
    ok: bool


@mcp.tool()
async def confirm(ctx: Context) -> str:
    """Ask the user to confirm before going on."""
    r = await ctx.elicit("Proceed?", Confirm)
    return f"action={r.action}"


@mcp.tool()
async def where(ctx: Context) -> str:
    """List the client's workspace roots."""
    r = await ctx.session.list_roots()
    return " ".join(str(root.uri) for root in r.roots)


@mcp.tool()
def plain() -> str:
    """Return a fixed text, asking nothing."""
    return "plain"


serve(mcp, args.port, "ask-py", json_response=args.json, stateless=args.stateless)
