#!/usr/bin/env python3
"""Client-under-test for `conformance client --command`: the proxy as an MCP client.

The suite starts a mock MCP server per scenario and runs `client_wrapper.py <server-url>`.
This wrapper starts mcp-search-proxy with that URL as its only upstream, then drives the
proxy through its own MCP endpoint the way a model would: mcp_refresh, mcp_search, then
mcp_call of the scenario's tool(s). The mock server sees the proxy's upstream traffic, so
the scenarios test the proxy's client half. Standard library only.

Environment: MCP_SEARCH_PROXY_BIN (default: target/debug/mcp-search-proxy beside this repo),
MCP_CONFORMANCE_CONTEXT (JSON; `toolCalls` = [{name, arguments}] when the scenario gives them).
"""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rpc(url, method, params, rid):
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
    req = urllib.request.Request(url, data=body, headers={
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    })
    with urllib.request.urlopen(req, timeout=60) as r:
        text = r.read().decode()
    if text.lstrip().startswith("{"):
        return json.loads(text)
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            msg = json.loads(line[5:])
            if msg.get("id") == rid:
                return msg
    raise RuntimeError(f"no response to {method}: {text[:300]}")


def call_tool(url, name, args, rid):
    r = rpc(url, "tools/call", {"name": name, "arguments": args}, rid)
    if "error" in r:
        raise RuntimeError(f"{name}: {r['error']}")
    return r["result"]


def sample(schema):
    """A minimal value for a JSON Schema, as a model would fill in a required parameter."""
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "string")
    return {"integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}.get(t, "x")


def listed_names(url):
    """Tool names from the `instructions` listing of initialize (one `- name: …` line each)."""
    init = rpc(url, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                   "clientInfo": {"name": "conformance-wrapper", "version": "1"}}, 3)
    text = init.get("result", {}).get("instructions", "")
    return [line[2:].split(":", 1)[0].strip() for line in text.splitlines() if line.startswith("- ")]


def auto_calls(url, report):
    """Without scenario context: call every tool the catalog lists, with arguments built from
    its described schema (add_numbers gets 2 + 3; json_schema_echo gets the other tool's
    inputSchema as mcp_describe returned it, which proves the schema went through verbatim)."""
    names = report.get("added") or listed_names(url)
    described = call_tool(url, "mcp_describe", {"names": names[:10]}, 2).get("structuredContent", {}) if names else {}
    calls = []
    tools = described.get("tools", [])
    for tool in tools:
        schema = tool.get("inputSchema") or {}
        if tool["name"] == "add_numbers":
            args = {"a": 2, "b": 3}
        elif tool["name"] == "json_schema_echo":
            # Echo the other tool's schema as the proxy described it: proves it is verbatim.
            focal = next((t for t in tools if t["name"] != "json_schema_echo"), tool)
            args = {"schema": focal.get("inputSchema") or {}}
        else:
            props = schema.get("properties") or {}
            args = {k: sample(props.get(k) or {}) for k in schema.get("required") or []}
        calls.append({"name": tool["name"], "arguments": args})
    return calls


def main():
    upstream = sys.argv[-1]
    binary = os.environ.get("MCP_SEARCH_PROXY_BIN") or os.path.join(ROOT, "target", "debug", "mcp-search-proxy")
    port = free_port()
    env = dict(os.environ, UPSTREAMS=f"conformance={upstream}", PORT=str(port), BIND_ADDR="127.0.0.1",
               CATALOG_TTL_SEC="0", LOG_LEVEL=os.environ.get("LOG_LEVEL", "warn"), LOG_FORMAT="text",
               # lexical unless asked: the suite checks the protocol, not the search
               EMBED_MODEL=os.environ.get("EMBED_MODEL", ""))
    env.pop("MANIFEST_PATH", None)
    proxy = subprocess.Popen([binary], env=env, stdout=sys.stderr, stderr=sys.stderr)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.time() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                    break
            except (urllib.error.URLError, ConnectionError):
                if time.time() > deadline or proxy.poll() is not None:
                    raise RuntimeError("the proxy did not start")
                time.sleep(0.05)
        refresh = call_tool(url, "mcp_refresh", {}, 1)
        print("refresh:", json.dumps(refresh.get("structuredContent"))[:500], file=sys.stderr)
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
        calls = context.get("toolCalls") or auto_calls(url, refresh.get("structuredContent") or {})
        rid = 10
        for c in calls:
            rid += 1
            found = call_tool(url, "mcp_search", {"query": c["name"]}, rid)
            print("search:", json.dumps(found.get("structuredContent"))[:300], file=sys.stderr)
            rid += 1
            result = call_tool(url, "mcp_call", {"name": c["name"], "arguments": c.get("arguments") or {}}, rid)
            print("call:", json.dumps(result)[:500], file=sys.stderr)
        return 0
    finally:
        proxy.terminate()
        try:
            proxy.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proxy.kill()


if __name__ == "__main__":
    sys.exit(main())
