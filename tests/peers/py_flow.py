"""End-to-end flow of the official Python MCP SDK (`mcp` 2.x) against mcp-search-proxy.

Usage: .venv/bin/python tests/peers/py_flow.py URL MODE
  URL   the proxy endpoint, e.g. http://127.0.0.1:18092/mcp (in front of the demo upstream)
  MODE  'legacy' (initialize handshake) or 'auto' (probe server/discover, fall back to initialize)

Prints a JSON summary on stdout and exits 0 when every check passed. On the first failed check
it prints "FAIL: <what>" and the last exchange to stderr and exits 1; an SDK error (transport,
protocol, validation) exits 2 with its traceback. Driven by tests/real_peers.rs.
"""

import asyncio
import base64
import json
import re
import sys
import traceback

from mcp import Client

try:
    BaseExceptionGroup
except NameError:  # Python 3.10: the backport that anyio depends on
    from exceptiongroup import BaseExceptionGroup

EXPECTED_TOOLS = ["mcp_search", "mcp_describe", "mcp_call", "mcp_refresh"]
TIMEOUT_SEC = 45  # the whole flow; tests/real_peers.rs kills the process at 60 s


class CheckFailed(Exception):
    pass


def check(cond, what, got=None):
    if not cond:
        raise CheckFailed(what if got is None else f"{what}; got: {got!r}")


def dump(result):
    """A CallToolResult as the wire shape (camelCase), for messages and the summary."""
    return result.model_dump(by_alias=True, exclude_none=True, mode="json")


def texts(result):
    return [c.text for c in result.content if getattr(c, "type", None) == "text"]


async def call(client, name, arguments=None):
    """One `mcp_call` of an upstream tool, through the proxy."""
    params = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return await client.call_tool("mcp_call", params)


async def flow(url, mode, summary):
    async with Client(url, mode=mode, read_timeout_seconds=20) as client:
        summary["protocol_version"] = client.protocol_version
        info = client.server_info
        summary["server_info"] = info.model_dump(mode="json", exclude_none=True) if info else None

        # --- instructions (initialize result, or server/discover in the 2026 era)
        instructions = client.instructions
        check(instructions, "the server sent no instructions")
        check("mcp_search" in instructions, "instructions do not mention mcp_search", instructions)
        # One line per source naming its tool count, e.g. "quillmail: <description> (10 tools)"
        # or "quillmail (10 tools): ..."; tests/real_peers.rs compares the counts with the catalog.
        sources = {
            src: int(n) for src, n in re.findall(r"^([a-z0-9][a-z0-9_.-]*)\b[^\n]*?\((\d+) tools?\)", instructions, re.M)
        }
        check(sources.get("quillmail", 0) > 0, "instructions lack a source line 'quillmail ... (N tools)'", instructions)
        summary["instructions_sources"] = sources

        # --- tools/list: exactly the four proxy tools, on one page
        listing = await client.list_tools()
        names = [t.name for t in listing.tools]
        check(sorted(names) == sorted(EXPECTED_TOOLS), f"tools/list must be exactly {EXPECTED_TOOLS}", names)
        check(listing.next_cursor is None, "tools/list has a next page", listing.next_cursor)
        for t in listing.tools:
            check(t.description, f"{t.name} has no description")
            check(t.input_schema.get("type") == "object", f"{t.name}.inputSchema is not an object", t.input_schema)
        summary["tools"] = names

        # --- mcp_search
        r = await client.call_tool("mcp_search", {"query": "send email"})
        check(not r.is_error, "mcp_search failed", dump(r))
        sc = r.structured_content
        check(isinstance(sc, dict) and isinstance(sc.get("results"), list), "mcp_search: no structuredContent.results", dump(r))
        hits = sc["results"]
        check(hits, "mcp_search 'send email' found nothing", sc)
        top = hits[0].get("name", "")
        check(top.startswith("quillmail-") and "send" in top, "mcp_search 'send email': top hit is not a quillmail send tool", top)
        for h in hits:
            for key in ("name", "source", "description", "params"):
                check(key in h, f"mcp_search hit lacks '{key}'", h)
            check(isinstance(h["params"], str), "mcp_search hit: 'params' is not a string", h)
        check(texts(r), "mcp_search: no text content block (for clients without structuredContent)", dump(r))
        summary["search_top"] = [h["name"] for h in hits[:3]]

        # --- mcp_describe
        r = await client.call_tool("mcp_describe", {"names": ["demo-add", "nope"]})
        check(not r.is_error, "mcp_describe failed", dump(r))
        sc = r.structured_content or {}
        tools = sc.get("tools") or []
        check(tools and tools[0].get("name") == "demo-add", "mcp_describe: tools[0] is not demo-add", sc)
        props = tools[0].get("inputSchema", {}).get("properties", {})
        check({"a", "b"} <= set(props), "mcp_describe demo-add: inputSchema.properties lacks a/b", tools[0])
        check(sc.get("not_found") == ["nope"], "mcp_describe: not_found must be ['nope']", sc.get("not_found"))
        summary["describe"] = {"tools": [t.get("name") for t in tools], "not_found": sc.get("not_found")}

        # --- mcp_call demo-add: the upstream result relayed unchanged
        r = await call(client, "demo-add", {"a": 2, "b": 3})
        check(r.is_error is False, "mcp_call demo-add: isError must be false", dump(r))
        check(texts(r) == ["5"], "mcp_call demo-add: text must be '5'", dump(r))
        check(r.structured_content == {"result": 5}, "mcp_call demo-add: structuredContent must be {'result': 5}", dump(r))
        summary["add"] = dump(r)

        # --- mcp_call demo-echo: arbitrary text (non-ASCII, quotes, newline) survives the relay
        sample = 'héllo "wörld" ✓\nline 2'
        r = await call(client, "demo-echo", {"text": sample})
        check(not r.is_error and texts(r) == [sample], "mcp_call demo-echo: text not relayed unchanged", dump(r))

        # --- mcp_call demo-counter twice: same upstream session, so n then n+1
        counts = []
        for _ in range(2):
            r = await call(client, "demo-counter", {})
            check(not r.is_error, "mcp_call demo-counter failed", dump(r))
            t = texts(r)
            check(len(t) == 1 and t[0].isdigit(), "mcp_call demo-counter: text is not a number", dump(r))
            n = int(t[0])
            if r.structured_content is not None:
                check(r.structured_content == {"count": n}, "mcp_call demo-counter: structuredContent != text", dump(r))
            counts.append(n)
        check(counts[0] >= 1 and counts[1] == counts[0] + 1, "demo-counter: second value must be first+1 (sticky upstream session)", counts)
        summary["counter"] = counts

        # --- mcp_call with a missing required argument
        r = await call(client, "demo-add", {"a": 1})
        check(r.is_error is True, "mcp_call demo-add without b: isError must be true", dump(r))
        msg = " ".join(texts(r))
        check(re.search(r"missing", msg, re.I) and re.search(r"\bb\b", msg), "mcp_call demo-add without b: message must name the missing 'b'", msg)
        summary["missing_arg_error"] = msg[:200]

        # --- mcp_call of an unknown tool
        r = await call(client, "no-such-tool")
        check(r.is_error is True, "mcp_call no-such-tool: isError must be true", dump(r))
        check(texts(r), "mcp_call no-such-tool: no error text", dump(r))
        summary["unknown_tool_error"] = " ".join(texts(r))[:200]

        # --- mcp_call demo-image: an image block relayed
        r = await call(client, "demo-image")
        check(not r.is_error, "mcp_call demo-image failed", dump(r))
        images = [c for c in r.content if getattr(c, "type", None) == "image"]
        check(len(images) == 1, "mcp_call demo-image: expected one image content block", dump(r))
        img = images[0]
        check(img.mime_type == "image/png", "mcp_call demo-image: mimeType must be image/png", img.mime_type)
        raw = base64.b64decode(img.data, validate=True)
        check(raw.startswith(b"\x89PNG\r\n\x1a\n"), "mcp_call demo-image: data is not a base64 PNG", img.data[:40])
        summary["image"] = {"mimeType": img.mime_type, "bytes": len(raw)}


def leaf_exceptions(e):
    """The exceptions inside (nested) exception groups, or `e` itself."""
    if isinstance(e, BaseExceptionGroup):
        for inner in e.exceptions:
            yield from leaf_exceptions(inner)
    else:
        yield e


async def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("legacy", "auto"):
        print(__doc__, file=sys.stderr)
        return 64
    url, mode = sys.argv[1], sys.argv[2]
    summary = {"client": "python mcp 2.x", "mode": mode, "url": url}
    try:
        await asyncio.wait_for(flow(url, mode, summary), TIMEOUT_SEC)
    except BaseException as e:  # a failed check, or SDK/transport errors and timeouts
        # The SDK's task groups wrap what the flow raised in (nested) exception groups.
        leaves = list(leaf_exceptions(e))
        failed = next((x for x in leaves if isinstance(x, CheckFailed)), None)
        summary["ok"] = False
        if failed is not None:
            summary["failure"] = str(failed)
            print(json.dumps(summary, indent=2, ensure_ascii=False))
            print(f"FAIL: {failed}", file=sys.stderr)
            return 1
        summary["failure"] = "; ".join(f"{type(x).__name__}: {x}" for x in leaves)
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        print(f"FAIL: the SDK raised {summary['failure']}", file=sys.stderr)
        traceback.print_exception(e)
        return 2
    summary["ok"] = True
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
