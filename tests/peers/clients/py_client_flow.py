"""The transport-matrix client flow with the official Python SDK (`mcp` 2.x `mcp.Client`).

Usage: .venv/bin/python tests/peers/clients/py_client_flow.py URL MODE [PREFIX]
  URL     the proxy endpoint (http://127.0.0.1:PORT/mcp)
  MODE    legacy | 2026-07-28 | auto   (mcp.Client(mode=...))
  PREFIX  prepended to the upstream tool names (e.g. "matrix-" behind LiteLLM); default ""

Runs the shared flow of tests/peers/clients/ (the same steps as ts_client_flow.mjs): connect,
tools/list, mcp_search "add two numbers", mcp_describe add, mcp_call add/echo/fail/image and
counter twice. Each step is recorded, never asserted: the summary (JSON on stdout) carries what
came back (content blocks, structuredContent, isError as on the wire, or the SDK's error) and
tests/transport_matrix.rs applies the shared assertions. Exit 0 whenever a summary was printed,
even when steps failed; 64 on bad usage.
"""

import asyncio
import json
import sys
import time

from mcp import Client

try:
    BaseExceptionGroup
except NameError:  # Python 3.10: the backport that anyio depends on
    from exceptiongroup import BaseExceptionGroup

# The text the echo step sends; tests/transport_matrix.rs has the same constant.
ECHO_SAMPLE = 'héllo "wörld" ✓ 🦀 back\\slash tab\tend\nline 2'
TOTAL_TIMEOUT_SEC = 45  # the Rust side kills the process at 60 s
REQUEST_TIMEOUT_SEC = 20


def leaves(e):
    """The exceptions inside (nested) exception groups, or `e` itself."""
    if isinstance(e, BaseExceptionGroup):
        for inner in e.exceptions:
            yield from leaves(inner)
    else:
        yield e


def describe_error(e):
    return "; ".join(f"{type(x).__name__}: {x}" for x in leaves(e))[:2000]


def wire(result):
    """A CallToolResult as the wire members the proxy must relay unchanged."""
    d = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    return {k: d[k] for k in ("content", "structuredContent", "isError") if k in d}


async def record(summary, name, fn):
    """Runs one step; stores {"ok": true, "value": ...} or {"ok": false, "error": ...}."""
    t0 = time.monotonic()
    try:
        value = await fn()
        summary["steps"][name] = {"ok": True, "value": value}
    except Exception as e:  # noqa: BLE001 - every SDK/transport error is a recorded outcome
        summary["steps"][name] = {"ok": False, "error": describe_error(e)}
    summary["steps"][name]["ms"] = round((time.monotonic() - t0) * 1000)


async def flow(url, mode, prefix, summary):
    t0 = time.monotonic()
    try:
        client_cm = Client(url, mode=mode, read_timeout_seconds=REQUEST_TIMEOUT_SEC)
        client = await client_cm.__aenter__()
    except BaseException as e:  # noqa: BLE001
        summary["steps"]["connect"] = {"ok": False, "error": describe_error(e)}
        return
    summary["steps"]["connect"] = {
        "ok": True,
        "value": {
            "protocol_version": client.protocol_version,
            "instructions": (client.instructions or "")[:500],
        },
        "ms": round((time.monotonic() - t0) * 1000),
    }
    try:

        async def tools_list():
            r = await client.list_tools()
            return [t.name for t in r.tools]

        async def call(tool, args):
            return wire(await client.call_tool(tool, args))

        async def mcp_call(name, args):
            return await call("mcp_call", {"name": prefix + name, "arguments": args})

        async def search():
            r = await call("mcp_search", {"query": "add two numbers"})
            hits = (r.get("structuredContent") or {}).get("results") or []
            return {"isError": r.get("isError", False), "hits": [h.get("name") for h in hits]}

        async def describe():
            r = await call("mcp_describe", {"names": [prefix + "add"]})
            sc = r.get("structuredContent") or {}
            return {"isError": r.get("isError", False), "tools": sc.get("tools"), "not_found": sc.get("not_found")}

        async def counter_twice():
            return [await mcp_call("counter", {}) for _ in range(2)]

        await record(summary, "tools_list", tools_list)
        await record(summary, "search", search)
        await record(summary, "describe", describe)
        await record(summary, "add", lambda: mcp_call("add", {"a": 2, "b": 3}))
        await record(summary, "echo", lambda: mcp_call("echo", {"text": ECHO_SAMPLE}))
        await record(summary, "fail", lambda: mcp_call("fail", {}))
        await record(summary, "image", lambda: mcp_call("image", {}))
        await record(summary, "counter", counter_twice)
    finally:
        try:
            await client_cm.__aexit__(None, None, None)
        except BaseException as e:  # noqa: BLE001
            summary["close_error"] = describe_error(e)


async def main():
    if len(sys.argv) not in (3, 4) or sys.argv[2] not in ("legacy", "2026-07-28", "auto"):
        print(__doc__, file=sys.stderr)
        return 64
    url, mode = sys.argv[1], sys.argv[2]
    prefix = sys.argv[3] if len(sys.argv) == 4 else ""
    summary = {"client": "python mcp 2.x", "mode": mode, "echo_sent": ECHO_SAMPLE, "steps": {}}
    try:
        await asyncio.wait_for(flow(url, mode, prefix, summary), TOTAL_TIMEOUT_SEC)
    except BaseException as e:  # noqa: BLE001 - the overall timeout, or an SDK error outside a step
        summary["aborted"] = describe_error(e) or type(e).__name__
    print(json.dumps(summary, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
