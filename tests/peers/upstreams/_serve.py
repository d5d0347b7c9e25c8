"""Shared runner of the Python matrix upstreams (py_upstream.py, py_mail.py).

serve() does what `MCPServer.run_streamable_http_async(host="127.0.0.1", ...)` does (the SDK's
Starlette app under uvicorn), except that it binds the socket itself, so that `--port 0` picks a
free port, and prints `READY http://127.0.0.1:PORT/mcp` on stdout once uvicorn accepts
connections (the line the Rust tests and scripts/litellm-stack.sh wait for). `wrap`, if given, is
applied to the Starlette app (an ASGI middleware, e.g. py_talk.py's era filter and request trace).
"""

import asyncio
import os
import signal
import socket
import sys

import uvicorn

STARTUP_TIMEOUT_SEC = 20


def serve(mcp, port, what, *, json_response=False, stateless=False, wrap=None):
    async def main():
        app = mcp.streamable_http_app(
            streamable_http_path="/mcp",
            json_response=json_response,
            stateless_http=stateless,
            host="127.0.0.1",  # the SDK's DNS-rebinding protection: loopback Host headers only
        )
        if wrap is not None:
            app = wrap(app)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # A restart on the same port must not wait for the old connections' TIME_WAIT.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        bound = sock.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        for _ in range(STARTUP_TIMEOUT_SEC * 100):
            if server.started or serving.done():
                break
            await asyncio.sleep(0.01)
        if not server.started:
            if serving.done():
                serving.result()  # re-raises the startup error
            sys.exit(f"{what}: uvicorn did not start within {STARTUP_TIMEOUT_SEC} s")
        url = f"http://127.0.0.1:{bound}/mcp"
        print(f"READY {url}", flush=True)
        print(f"{what} on {url}", file=sys.stderr, flush=True)
        await serving

    # SIGTERM ends the process at once (uvicorn's graceful shutdown would wait for open SSE streams).
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    asyncio.run(main())
