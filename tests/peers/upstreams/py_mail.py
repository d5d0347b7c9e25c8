"""A mail-like upstream MCP server (official Python SDK `mcp` 2.x `MCPServer`, stateful, SSE).

Usage: .venv/bin/python tests/peers/upstreams/py_mail.py [--port N]   (0, the default, picks a port)

The second upstream behind LiteLLM in tests/litellm.rs (next to py_upstream.py), so that the
aggregator has two servers and prefixes tools as `mail-send_message`, `mail-list_threads`. Prints
`READY http://127.0.0.1:PORT/mcp` on stdout once listening.
"""

import argparse

from _serve import serve
from mcp.server.mcpserver import MCPServer

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--port", type=int, default=0)
args = p.parse_args()

mcp = MCPServer(
    name="mail",
    version="0.1.0",
    instructions="Mail test upstream: send_message sends an e-mail, list_threads searches threads.",
)
SENT: list[dict[str, str]] = []


@mcp.tool()
def send_message(to: str, subject: str, body: str) -> str:
    """Send an e-mail message to a recipient."""
    SENT.append({"to": to, "subject": subject, "body": body})
    return f"sent message #{len(SENT)} to {to} with subject {subject!r}"


@mcp.tool()
def list_threads(query: str) -> list[dict[str, str]]:
    """List the mail threads whose subject matches a query."""
    threads = [{"id": "t1", "subject": "Quarterly report"}, {"id": "t2", "subject": "Lunch on Friday"}]
    threads += [{"id": f"s{i + 1}", "subject": m["subject"]} for i, m in enumerate(SENT)]
    return [t for t in threads if query.lower() in t["subject"].lower()]


if __name__ == "__main__":
    serve(mcp, args.port, "py_mail (stateful-sse)")
