"""Upstream MCP server whose tools talk back to their caller: official Python SDK `mcp` 2.x.

Usage: .venv/bin/python tests/peers/upstreams/py_talk.py [--port N] [--stateless] [--json]
                                                         [--legacy-only] [--trace]
  --stateless, --json, --port   as py_upstream.py
  --legacy-only  a 2025-era-only server: any request whose `MCP-Protocol-Version` header (or
                 `_meta["io.modelcontextprotocol/protocolVersion"]`) names a version other than
                 2024-11-05..2025-11-25 gets the answer of a 2025-only Python SDK (mcp 1.x): HTTP 400
                 {"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,"message":
                 "Bad Request: Unsupported protocol version: 2026-07-28. Supported versions: ..."}},
                 so a probing client falls back to `initialize` (2025-11-25)
  --trace        log every POST to stderr: `TRACE <MCP-Protocol-Version header> <body>`

Without --legacy-only the app is dual-era, as py_upstream.py. Once listening it prints
`READY http://127.0.0.1:PORT/mcp`. The questions are asked through the SDK's resolvers
(`Resolve(...)` + `Elicit`/`Sample`/`ListRoots`), which work in both eras: at 2025-11-25 the SDK
sends elicitation/create, sampling/createMessage and roots/list mid-call on the tools/call SSE
stream; at 2026-07-28 it answers `input_required` and resumes when the client retries.
Tools:
  confirm {}          elicits "Proceed?" {ok: bool}      -> "action=<accept|decline|cancel> ok=<true|false|none>"
  summarize {text}    samples one user message = text, maxTokens 50 -> "summary=<sampled text>"
  where {}            roots/list                         -> "roots=<uri> <uri> ..."
  chatty {}           logs info "step 1", "step 2" related to the call -> "logged"
                      (2026: only when the request opts in with _meta logLevel)
  two_questions {}    elicits "Name?" {name: str}, then (after that answer) "Sure?" {ok: bool}
                                                         -> "name=<name|action> ok=<true|false|none>"
  plain {}            asks nothing                       -> "plain"
A client error while asking (the client answered with a JSON-RPC error, a timeout, no back
channel) becomes an isError result "error=<message> (code N)" instead of a JSON-RPC error. Kept
as the SDK raises it: at 2026-07-28, a question the client declared no capability for is
JSON-RPC error -32021 (MissingRequiredClientCapability), as the spec requires.
"""

import argparse
import json
import sys
import warnings
from typing import Annotated

from _serve import serve
from mcp.server.mcpserver import AcceptedElicitation, Context, Elicit, ElicitationResult, ListRoots, MCPServer, Resolve, Sample
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, CreateMessageResult, ListRootsResult, SamplingMessage, TextContent
from mcp_types import MISSING_REQUIRED_CLIENT_CAPABILITY
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import BaseModel

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--port", type=int, default=0)
p.add_argument("--stateless", action="store_true")
p.add_argument("--json", action="store_true")
p.add_argument("--legacy-only", action="store_true")
p.add_argument("--trace", action="store_true")
args = p.parse_args()

# sampling, roots and logging are deprecated as of 2026-07-28; the test is about what a proxy does with them
warnings.simplefilter("ignore")


class TalkServer(MCPServer):
    async def call_tool(self, name, arguments, context=None):
        try:
            return await super().call_tool(name, arguments, context)
        except MCPError as e:
            modern = context is not None and context.protocol_version not in (None, *HANDSHAKE_PROTOCOL_VERSIONS)
            if modern and e.code == MISSING_REQUIRED_CLIENT_CAPABILITY:
                raise
            return CallToolResult(content=[TextContent(type="text", text=f"error={e.message} (code {e.code})")], is_error=True)


mcp = TalkServer(name="talk-py", version="0.1.0", instructions="Tools that ask their caller something (elicitation, sampling, roots, logs).")


class Ok(BaseModel):
    ok: bool


class Name(BaseModel):
    name: str


def fmt(v):
    return "none" if v is None else str(v).lower() if isinstance(v, bool) else str(v)


def ok_of(r):
    return r.data.ok if isinstance(r, AcceptedElicitation) and r.data is not None else None


def ask_proceed() -> Elicit[Ok]:
    return Elicit("Proceed?", Ok)


def ask_name() -> Elicit[Name]:
    return Elicit("Name?", Name)


def ask_sure(name: Annotated[ElicitationResult[Name], Resolve(ask_name)]) -> Elicit[Ok] | None:
    # Depends on the first answer, so it is asked only after it (the next round, at 2026-07-28).
    return Elicit("Sure?", Ok) if isinstance(name, AcceptedElicitation) else None


def sample_text(text: str) -> Sample:
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text=text))], max_tokens=50)


def list_roots() -> ListRoots:
    return ListRoots()


@mcp.tool()
async def confirm(answer: Annotated[ElicitationResult[Ok], Resolve(ask_proceed)]) -> str:
    """Ask the user to confirm ("Proceed?") before going on."""
    return f"action={answer.action} ok={fmt(ok_of(answer))}"


@mcp.tool()
async def summarize(text: str, sampled: Annotated[CreateMessageResult, Resolve(sample_text)]) -> str:
    """Summarize a text with the caller's LLM (sampling)."""
    c = sampled.content
    return f"summary={c.text if isinstance(c, TextContent) else c}"


@mcp.tool()
async def where(roots: Annotated[ListRootsResult, Resolve(list_roots)]) -> str:
    """List the caller's workspace roots."""
    return "roots=" + " ".join(str(r.uri) for r in roots.roots)


@mcp.tool()
async def chatty(ctx: Context) -> str:
    """Send two log messages (info "step 1", "step 2") about this call, then return."""
    await ctx.info("step 1")
    await ctx.info("step 2")
    return "logged"


@mcp.tool()
async def two_questions(
    name: Annotated[ElicitationResult[Name], Resolve(ask_name)],
    sure: Annotated[ElicitationResult[Ok], Resolve(ask_sure)],
) -> str:
    """Ask the user's name, then whether they are sure."""
    who = name.data.name if isinstance(name, AcceptedElicitation) else name.action
    return f"name={who} ok={fmt(ok_of(sure))}"


@mcp.tool()
def plain() -> str:
    """Return a fixed text, asking nothing."""
    return "plain"


def legacy_refusal(version):
    """What the 2025-only Python SDK (mcp 1.x) answers a protocol version it does not know."""
    supported = ", ".join(HANDSHAKE_PROTOCOL_VERSIONS)
    message = f"Bad Request: Unsupported protocol version: {version}. Supported versions: {supported}"
    return {"jsonrpc": "2.0", "id": "server-error", "error": {"code": -32600, "message": message}}


def middleware(app):
    """--trace logs each POST; --legacy-only refuses requests that claim a post-2025 version."""

    async def wrapped(scope, receive, send):
        if scope["type"] != "http" or not (args.trace or args.legacy_only):
            return await app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        pv = headers.get("mcp-protocol-version")
        body, more = b"", scope["method"] == "POST"
        while more:
            msg = await receive()
            body += msg.get("body", b"")
            more = msg.get("more_body", False)
        if args.trace and scope["method"] == "POST":
            print(f"TRACE {pv} {body.decode('utf-8', 'replace')}", file=sys.stderr, flush=True)
        if args.legacy_only:
            try:
                claim = (json.loads(body).get("params") or {}).get("_meta", {}).get("io.modelcontextprotocol/protocolVersion")
            except (ValueError, AttributeError):
                claim = None
            v = next((x for x in (pv, claim) if x and x not in HANDSHAKE_PROTOCOL_VERSIONS), None)
            if v is not None:
                payload = json.dumps(legacy_refusal(v), separators=(",", ":")).encode()
                await send({"type": "http.response.start", "status": 400, "headers": [(b"content-type", b"application/json")]})
                return await send({"type": "http.response.body", "body": payload})
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await app(scope, replay, send)

    return wrapped


flavour = ("stateless" if args.stateless else "stateful") + ("-json" if args.json else "-sse") + ("-legacy-only" if args.legacy_only else "")
serve(mcp, args.port, f"talk-py {flavour}", json_response=args.json, stateless=args.stateless, wrap=middleware)
