"""Calls tools that ask their caller (py_talk.py, ts2_ask.mjs) with the official Python SDK `mcp.Client`.

Usage: .venv/bin/python tests/peers/clients/py_talk_client.py URL --era legacy|modern --scenario S
                          [--direct] [--prefix P | --source LABEL] [--timeout SEC] [--late SEC]
                          [--log-level L|none]
  URL        the proxy endpoint (or, with --direct, py_talk.py's own endpoint)
  --era      legacy: the initialize handshake at 2025-11-25 (mcp.Client(mode="legacy"));
             modern: mode="auto", the SDK probes server/discover and uses 2026-07-28 when offered
  --direct   call the upstream tools by name; otherwise through the proxy tool `mcp_call`
             {"name": <real name>, "arguments": {...}}, the real name being --prefix + tool, or
             (without --prefix) the `mcp_search` hit (query = tool name) whose name ends with it
             (among the hits whose source is --source, when given)
  --timeout  `never` only: how long the call may take (default 30 s): the SDK's read timeout,
             and the wait is cut at --timeout + 2 s (a callback that hangs is beyond the SDK's
             timeout). In direct mode nothing but these timeouts ends the call.
  --late     `never` only: the elicitation callback answers accept {ok: true} after SEC seconds
             instead of never (default: 5 s with --era modern, never with --era legacy); pick it
             longer than the proxy's ELICITATION_TIMEOUT_SEC
  --log-level the 2026-07-28 logLevel opt-in stamped on every request (default info; none = omit)

Callbacks (declared as client capabilities unless the scenario says otherwise): elicitation
accepts "Proceed?"/"Sure?" with {ok: true}, "Name?" with {name: "ada"}, "Deploy to ..." with
{confirm: true}; sampling answers the assistant text "sampled:<first user message text>"; roots
are file:///work/a and file:///work/b; logging records each message's data.
Scenarios:
  all         confirm -> "action=accept ok=true", summarize {text: "hello"} -> "summary=sampled:hello",
              where -> "roots=file:///work/a file:///work/b", chatty -> "logged" with the logs
              "step 1", "step 2" seen in that order, two_questions -> "name=ada ok=true", plain -> "plain"
  nocaps      no callbacks at all: confirm must come back within 10 s as a result that is isError
              or names decline/cancel/error (direct mode also accepts a JSON-RPC error, which is
              what the SDK server sends at 2026-07-28: -32021)
  never       the elicitation callback never returns: the question must reach it, and confirm must
              end within --timeout with an error result or a JSON-RPC error (the proxy under test
              times the question out); in direct mode the end is expected to be a timeout (the
              SDK's, or --timeout + 2 s).
              With --late (the default at --era modern: there the proxy returns the question as
              `input_required`, and only the client's retry can end the call) the callback answers
              late. Modern: the SDK's retry must get an isError result, structuredContent.error.side
              "client", its message saying "no longer held"/"expired". Legacy: the proxy's timeout
              ends the call with an error result as above; the SDK drops the answer to a question
              the server cancelled, so the client POSTs it itself at --late (HTTP status < 500).
              Then plain -> "plain" on the same session. Direct mode reports, judges only the time.
  concurrent  two sessions call confirm at once; both callbacks wait 0.5 s, A accepts {ok: true},
              B declines: A must get "action=accept ok=true", B "action=decline ok=none"
  deploy      for ts2_ask.mjs (TS SDK 2.x, 2026-07-28, an `input_required` tool): deploy
              {env: "prod"} -> "deployed to prod", the callback having seen "Deploy to prod?"
Prints one line on stdout: a JSON object {"ok": true, ...} (exit 0) or `FAIL: <why> <JSON>`
(exit 1); 2 on bad usage (argparse). The whole run is bounded by 60 s.
"""

import argparse
import asyncio
import json
import os
import re
import sys
import threading
import time
import warnings

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CreateMessageResult, ElicitResult, ListRootsResult, Root, TextContent

try:
    BaseExceptionGroup
except NameError:  # Python 3.10
    from exceptiongroup import BaseExceptionGroup

TOTAL_TIMEOUT_SEC = 60
REQUEST_TIMEOUT_SEC = 30
ROOTS = ["file:///work/a", "file:///work/b"]
ANSWERS = {"Proceed?": {"ok": True}, "Sure?": {"ok": True}, "Name?": {"name": "ada"}}
DEPLOY_ANSWER = {"confirm": True}  # for any message starting with "Deploy to"
NO_LONGER_HELD = re.compile(r"no longer held|expired", re.I)


def answer_for(message):
    return DEPLOY_ANSWER if message.startswith("Deploy to") else ANSWERS.get(message, {})

warnings.simplefilter("ignore")  # roots/sampling/logging are deprecated at 2026-07-28


def leaves(e):
    if isinstance(e, BaseExceptionGroup):
        for inner in e.exceptions:
            yield from leaves(inner)
    else:
        yield e


def describe(e):
    parts = []
    for x in leaves(e):
        code = f" (code {x.code})" if isinstance(x, MCPError) else ""
        parts.append(f"{type(x).__name__}: {x.message if isinstance(x, MCPError) else x}{code}")
    return "; ".join(parts)[:1000]


def elicitor(action="accept", delay=0.0, seen=None, never=False):
    async def cb(ctx, params):
        q = {"message": params.message, "start": time.monotonic(), "request_id": ctx.request_id}
        if seen is not None:
            seen.append(q)
        try:
            if never:
                await anyio.sleep_forever()
            await anyio.sleep(delay)
        except anyio.get_cancelled_exc_class():
            q["cancelled"] = time.monotonic()  # e.g. the server's notifications/cancelled
            raise
        q["end"] = time.monotonic()
        if action != "accept":
            return ElicitResult(action=action)
        return ElicitResult(action="accept", content=answer_for(params.message))

    return cb


async def sampler(_ctx, params):
    first = next((m for m in params.messages if m.role == "user"), None)
    content = getattr(first, "content", None)
    text = content.text if isinstance(content, TextContent) else str(content)
    return CreateMessageResult(role="assistant", content=TextContent(type="text", text=f"sampled:{text}"), model="talk-client", stop_reason="endTurn")


async def roots(_ctx):
    return ListRootsResult(roots=[Root(uri=u) for u in ROOTS])


class Talk:
    """One client session and how it calls an upstream tool (directly or through mcp_call)."""

    def __init__(self, args, http_client=None, **callbacks):
        level = None if args.log_level == "none" else args.log_level
        self.args, self.names = args, {}
        server = args.url if http_client is None else streamable_http_client(args.url, http_client=http_client)
        self.client = Client(server, mode="legacy" if args.era == "legacy" else "auto", read_timeout_seconds=REQUEST_TIMEOUT_SEC, log_level=level, **callbacks)

    async def __aenter__(self):
        await self.client.__aenter__()
        return self

    async def __aexit__(self, *exc):
        await self.client.__aexit__(*exc)

    async def real_name(self, tool):
        if self.args.prefix is not None:
            return self.args.prefix + tool
        if tool not in self.names:
            r = await self.client.call_tool("mcp_search", {"query": tool})
            results = (r.structured_content or {}).get("results", [])
            hits = [h.get("name", "") for h in results if self.args.source in (None, h.get("source"))]
            found = [h for h in hits if h == tool or re.search(rf"[-_.]{re.escape(tool)}$", h)]
            if not found:
                raise LookupError(f"mcp_search {tool!r} has no hit ending with it: {hits}")
            self.names[tool] = found[0]
        return self.names[tool]

    async def call(self, tool, arguments=None, timeout=None):
        """The outcome of one call: {"text", "is_error"} or {"error"}, plus "ms"."""
        t0 = time.monotonic()
        try:
            if self.args.direct:
                r = await self.client.call_tool(tool, arguments or {}, read_timeout_seconds=timeout)
            else:
                params = {"name": await self.real_name(tool), "arguments": arguments or {}}
                r = await self.client.call_tool("mcp_call", params, read_timeout_seconds=timeout)
            out = {"text": " ".join(c.text for c in r.content if getattr(c, "type", None) == "text"), "is_error": bool(r.is_error)}
            if r.is_error and r.structured_content is not None:
                out["structured"] = r.structured_content
        except Exception as e:  # noqa: BLE001 - every SDK/transport error is an outcome to report
            out = {"error": describe(e), "error_type": type(next(leaves(e))).__name__}
        out["ms"] = round((time.monotonic() - t0) * 1000)
        return out


async def scenario_all(args, report):
    logs = []

    async def on_log(params):
        logs.append(params.data)

    expected = [
        ("confirm", None, "action=accept ok=true"),
        ("summarize", {"text": "hello"}, "summary=sampled:hello"),
        ("where", None, "roots=" + " ".join(ROOTS)),
        ("chatty", None, "logged"),
        ("two_questions", None, "name=ada ok=true"),
        ("plain", None, "plain"),
    ]
    problems = []
    async with Talk(args, elicitation_callback=elicitor(), sampling_callback=sampler, list_roots_callback=roots, logging_callback=on_log) as t:
        report["protocol_version"] = t.client.protocol_version
        for tool, arguments, want in expected:
            before = len(logs)
            out = report[tool] = await t.call(tool, arguments)
            if out.get("text") != want or out.get("is_error"):
                problems.append(f"{tool}: expected {want!r}")
            if tool == "chatty":
                out["logs"] = logs[before:]
                if [x for x in logs[before:] if x in ("step 1", "step 2")] != ["step 1", "step 2"]:
                    problems.append("chatty: the logging callback did not see 'step 1' then 'step 2'")
        report["names"] = t.names  # the upstream names found by mcp_search (through the proxy)
    return problems


async def scenario_nocaps(args, report):
    async with Talk(args) as t:
        report["protocol_version"] = t.client.protocol_version
        out = report["confirm"] = await t.call("confirm", timeout=10)
    if "error" in out:
        if args.direct and "TimeoutError" not in out["error"] and out["ms"] < 10000:
            return []  # the SDK server's JSON-RPC error (-32021 at 2026-07-28)
        return ["confirm did not come back as a result within 10 s"]
    if out["ms"] >= 10000:
        return ["confirm took 10 s or more"]
    if not (out["is_error"] or re.search(r"decline|cancel|error", out["text"], re.I)):
        return ["confirm's result is neither isError nor names decline/cancel/error"]
    return []


async def scenario_never(args, report):
    late = args.late if args.late is not None else (5.0 if args.era == "modern" else None)
    if late is not None:
        return await scenario_never_late(args, report, late)
    asked = []
    async with Talk(args, elicitation_callback=elicitor(never=True, seen=asked)) as t:
        report["protocol_version"] = t.client.protocol_version
        # The SDK's read timeout is --timeout; 2 s more bound what it cannot (a callback that hangs).
        with anyio.move_on_after(args.timeout + 2) as scope:
            out = await t.call("confirm", timeout=args.timeout)
        if scope.cancelled_caught:
            out = {"error": "no end within --timeout + 2 s", "error_type": "Timeout", "ms": round((args.timeout + 2) * 1000)}
        report["confirm"] = out
        report["asked"] = [q["message"] for q in asked]
    # Whatever ends at --timeout is a timeout on this side (the SDK's is MCPError -32001).
    timed_out = out["ms"] >= args.timeout * 1000
    if not asked:
        return ["the question never reached the elicitation callback"]
    if args.direct:
        return [] if timed_out else ["direct: expected a timeout (the SDK's or --timeout + 2 s)"]
    if timed_out or out.get("error_type", "MCPError") != "MCPError":
        return [f"confirm did not end with an error result or a JSON-RPC error within {args.timeout} s"]
    if "text" in out and not (out["is_error"] or re.search(r"decline|cancel|error|timeout", out["text"], re.I)):
        return ["confirm ended with a result that is neither isError nor names an error"]
    return []


async def scenario_never_late(args, report, late):
    """`never` with an elicitation callback that answers accept {ok: true} after `late` seconds."""
    asked, session = [], {}

    async def keep_session_id(response):
        if "mcp-session-id" in response.headers:
            session["id"] = response.headers["mcp-session-id"]

    report["late_sec"] = late
    http = create_mcp_http_client()
    http.event_hooks["response"].append(keep_session_id)
    async with http, Talk(args, http_client=http, elicitation_callback=elicitor(delay=late, seen=asked)) as t:
        report["protocol_version"] = t.client.protocol_version
        with anyio.move_on_after(args.timeout + 2) as scope:
            out = await t.call("confirm", timeout=args.timeout)
        if scope.cancelled_caught:
            out = {"error": "no end within --timeout + 2 s", "error_type": "Timeout", "ms": round((args.timeout + 2) * 1000)}
        report["confirm"] = out
        q = asked[0] if asked else {}
        # Legacy: the proxy ends the call at its timeout, before the callback answers.
        with anyio.move_on_after(late + 2):
            while q and "end" not in q and "cancelled" not in q:
                await anyio.sleep(0.05)
        report["callback"] = "answered" if "end" in q else "cancelled" if "cancelled" in q else "pending"
        if "cancelled" in q and "end" not in q:
            # The SDK drops the answer of a request the server cancelled: send it ourselves, late,
            # as the JSON-RPC response to the question's id on the client's session.
            await anyio.sleep(max(0.0, q["start"] + late - time.monotonic()))
            headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": t.client.protocol_version}
            if "id" in session:
                headers["mcp-session-id"] = session["id"]
            body = {"jsonrpc": "2.0", "id": q["request_id"], "result": {"action": "accept", "content": {"ok": True}}}
            try:
                r = await http.post(args.url, json=body, headers=headers, timeout=10)
                report["late_answer_http"] = {"status": r.status_code, "body": r.text[:300]}
            except Exception as e:  # noqa: BLE001
                report["late_answer_http"] = {"error": describe(e)}
        after = report["plain_after"] = await t.call("plain", timeout=10)
        report["asked"] = [x["message"] for x in asked]
    problems = []
    if not asked:
        problems.append("the question never reached the elicitation callback")
    if out["ms"] >= args.timeout * 1000:
        problems.append(f"confirm did not end within {args.timeout} s")
    if args.direct:
        pass  # nothing under test holds the call: whatever the upstream answers is reported, not judged
    elif args.era == "modern":
        error = (out.get("structured") or {}).get("error") or {}
        if "text" not in out or not out["is_error"]:
            problems.append("the late retry did not get an isError result")
        elif error.get("side") != "client":
            problems.append("the late retry's structuredContent.error.side is not 'client'")
        elif not NO_LONGER_HELD.search(str(error.get("message", ""))):
            problems.append("the late retry's error message does not say 'no longer held'/'expired'")
        if report["callback"] != "answered":
            problems.append("the callback did not answer")
    else:
        if out.get("error_type", "MCPError") != "MCPError":
            problems.append("confirm did not end with an error result or a JSON-RPC error")
        elif "text" in out and not (out["is_error"] or re.search(r"decline|cancel|error|timeout", out["text"], re.I)):
            problems.append("confirm ended with a result that is neither isError nor names an error")
        status = report.get("late_answer_http", {}).get("status", 0)
        if "late_answer_http" in report and not 200 <= status < 500:
            problems.append("the late answer's POST got no HTTP status below 500")
    if after.get("text") != "plain" or after.get("is_error"):
        problems.append("plain after the late answer: expected 'plain'")
    return problems


async def scenario_concurrent(args, report):
    seen = {"A": [], "B": []}
    plan = {"A": ("accept", "action=accept ok=true"), "B": ("decline", "action=decline ok=none")}

    async def one(who):
        action, _ = plan[who]
        async with Talk(args, elicitation_callback=elicitor(action, delay=0.5, seen=seen[who])) as t:
            report[f"protocol_version_{who}"] = t.client.protocol_version
            report[who] = await t.call("confirm")

    await asyncio.gather(one("A"), one("B"))
    a, b = (seen[w][0] if seen[w] and "end" in seen[w][0] else None for w in "AB")
    report["questions_overlapped"] = bool(a and b and a["start"] < b["end"] and b["start"] < a["end"])
    report["questions_seen"] = {w: [q["message"] for q in seen[w]] for w in "AB"}
    return [f"{w}: expected {plan[w][1]!r}" for w in "AB" if report[w].get("text") != plan[w][1]]


async def scenario_deploy(args, report):
    asked = []
    async with Talk(args, elicitation_callback=elicitor(seen=asked)) as t:
        report["protocol_version"] = t.client.protocol_version
        out = report["deploy"] = await t.call("deploy", {"env": "prod"})
        report["asked"] = [q["message"] for q in asked]
        report["names"] = t.names
    problems = []
    if out.get("text") != "deployed to prod" or out.get("is_error"):
        problems.append("deploy: expected 'deployed to prod'")
    if not any(m.startswith("Deploy to prod") for m in report["asked"]):
        problems.append("the callback never saw 'Deploy to prod?'")
    return problems


SCENARIOS = {"all": scenario_all, "nocaps": scenario_nocaps, "never": scenario_never, "concurrent": scenario_concurrent, "deploy": scenario_deploy}


async def main(args):
    report = {"scenario": args.scenario, "era": args.era, "direct": args.direct}
    t0 = time.monotonic()
    try:
        with anyio.fail_after(TOTAL_TIMEOUT_SEC):
            problems = await SCENARIOS[args.scenario](args, report)
    except Exception as e:  # noqa: BLE001 - connect errors, the overall timeout
        problems = [f"the scenario raised {describe(e)}"]
    report["ms"] = round((time.monotonic() - t0) * 1000)
    if problems:
        print(f"FAIL: {'; '.join(problems)} {json.dumps(report, ensure_ascii=False)}", flush=True)
        return 1
    print(json.dumps({"ok": True, **report}, ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("url")
    p.add_argument("--era", choices=["legacy", "modern"], required=True)
    p.add_argument("--scenario", choices=list(SCENARIOS), required=True)
    p.add_argument("--direct", action="store_true")
    p.add_argument("--prefix")
    p.add_argument("--source")
    p.add_argument("--timeout", type=float, default=30)
    p.add_argument("--late", type=float)
    p.add_argument("--log-level", default="info")
    a = p.parse_args()
    # A teardown stuck in the SDK must not outlive the bound either.
    threading.Timer(TOTAL_TIMEOUT_SEC + 5, lambda: (print("FAIL: stuck past the overall timeout", flush=True), os._exit(1))).start()
    code = asyncio.run(main(a))
    sys.stdout.flush()
    os._exit(code)
