"""FastMCP 4.2.3's proxy in front of an MCP upstream: the performance peer of benches/compare.sh.

`fastmcp.server.create_proxy(url, mode="auto")` (FastMCP 4.x has no `FastMCP.as_proxy`), served
over Streamable HTTP with FastMCP's own defaults (stateful sessions, SSE replies), on loopback.
The proxy exposes the upstream's tools under their own names, so a client calls them directly.

Usage: .venv/bin/python benches/fastmcp_proxy.py http://127.0.0.1:PORT/mcp --port 8004
"""

import argparse
import logging

from fastmcp.server import create_proxy


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("upstream", help="upstream MCP endpoint, e.g. http://127.0.0.1:8001/mcp")
    p.add_argument("--port", type=int, default=8004)
    p.add_argument("--mode", default="auto", help='backend protocol era (default "auto")')
    p.add_argument("--stateless", action="store_true", help="serve without sessions")
    args = p.parse_args()

    # Per-request access logs would cost the peer time the Rust proxy does not spend.
    logging.getLogger("uvicorn.access").disabled = True

    proxy = create_proxy(args.upstream, mode=args.mode, name="fastmcp-proxy")
    proxy.run(
        transport="http",
        host="127.0.0.1",
        port=args.port,
        path="/mcp",
        stateless_http=args.stateless,
        show_banner=False,
        host_origin_protection="auto",
        log_level="warning",
    )


if __name__ == "__main__":
    main()
